"""The unit's moves from a cell, written for speed: the search loops of
:mod:`pathserver.core.dijkstra`, :mod:`pathserver.core.goals` and
:mod:`pathserver.core.steer` run through these.

The same moves as :func:`pathserver.core.astar.move_allowed` with ``STEP_X`` / ``STEP_Y``
(directions 0-3 straight, 4-7 diagonal, in that order), but the direction is picked by a
chain of branches instead of indexing a tuple, and 4-connected searches loop over 4
directions instead of skipping 4 of 8: a Dijkstra loop runs much faster so
(bench/queries.py, reachable and distance_field).
"""

import math

from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.status import (
    DIAGONAL_HEX,
    DIAGONAL_HEX_EVEN_R,
    DIAGONAL_HEX_ODD_Q,
    DIAGONAL_HEX_ODD_R,
    DIAGONAL_NEVER,
    DIAGONAL_NO_CORNER_CUTTING,
)

SQRT2 = math.sqrt(2.0)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def hex_diagonals(diagonal, x, y):
    """On a hex map (``diagonal >= DIAGONAL_HEX``), the bits (of directions 4-7) of the two
    diagonal moves that are neighbours of (x, y) in its layout: those toward the side its
    row (``-r``) or column (``-q``) is shoved to."""
    if diagonal == DIAGONAL_HEX_ODD_R:
        return 0x90 if y & 1 else 0x60
    if diagonal == DIAGONAL_HEX_EVEN_R:
        return 0x60 if y & 1 else 0x90
    if diagonal == DIAGONAL_HEX_ODD_Q:
        return 0x30 if x & 1 else 0xC0
    return 0xC0 if x & 1 else 0x30


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def hex_move(diagonal, x, y, d):
    """Whether direction ``d`` from (x, y) is a move under ``diagonal``'s hex layout: every
    straight one, and the two diagonals of :func:`hex_diagonals` (true on square maps)."""
    return d < 4 or diagonal < DIAGONAL_HEX or (hex_diagonals(diagonal, x, y) >> d) & 1 == 1


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def diagonal_direction(dx, dy):
    """The direction (4-7) of the diagonal move by (dx, dy), each +-1."""
    if dy > 0:
        return 4 if dx > 0 else 5
    return 6 if dx < 0 else 7


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def diagonal_step(diagonal):
    """The length of a diagonal move: sqrt(2) on a square map, 1 on a hex map."""
    return 1.0 if diagonal >= DIAGONAL_HEX else SQRT2


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def axial(layout, x, y):
    """Offset cell (x, y) in axial coordinates (q, r) of the hex layout ``layout`` (a
    DIAGONAL_HEX_* code): the six neighbours differ by (+-1, 0), (0, +-1), (1, -1), (-1, 1)."""
    if layout == DIAGONAL_HEX_ODD_R:
        return x - ((y - (y & 1)) >> 1), y
    if layout == DIAGONAL_HEX_EVEN_R:
        return x - ((y + (y & 1)) >> 1), y
    if layout == DIAGONAL_HEX_ODD_Q:
        return x, y - ((x - (x & 1)) >> 1)
    return x, y - ((x + (x & 1)) >> 1)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def offset(layout, q, r):
    """Axial (q, r) back to the offset cell (x, y) of ``layout`` (see :func:`axial`)."""
    if layout == DIAGONAL_HEX_ODD_R:
        return q + ((r - (r & 1)) >> 1), r
    if layout == DIAGONAL_HEX_EVEN_R:
        return q + ((r + (r & 1)) >> 1), r
    if layout == DIAGONAL_HEX_ODD_Q:
        return q, r + ((q - (q & 1)) >> 1)
    return q, r + ((q + (q & 1)) >> 1)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def line_kind(diagonal):
    """What the straight-line helpers of :mod:`pathserver.core.lines` take for a map
    searched under ``diagonal``: 1 for 4-connected, the hex code on a hex map, else 0."""
    if diagonal == DIAGONAL_NEVER:
        return 1
    return diagonal if diagonal >= DIAGONAL_HEX else 0


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def hex_distance(layout, x, y, gx, gy):
    """The number of hex moves from (x, y) to (gx, gy) in ``layout`` (a DIAGONAL_HEX_* code)."""
    q, r = axial(layout, x, y)
    gq, gr = axial(layout, gx, gy)
    dq = q - gq
    dr = r - gr
    return (abs(dq) + abs(dr) + abs(dq + dr)) >> 1


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def directions(diagonal):
    """How many directions to loop over: 4 when ``diagonal`` is DIAGONAL_NEVER, else 8."""
    return 4 if diagonal == DIAGONAL_NEVER else 8


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def step_to(x, y, d):
    """The cell one step from (x, y) in direction ``d``."""
    if d == 0:
        return x + 1, y
    if d == 1:
        return x, y + 1
    if d == 2:
        return x - 1, y
    if d == 3:
        return x, y - 1
    if d == 4:
        return x + 1, y + 1
    if d == 5:
        return x - 1, y + 1
    if d == 6:
        return x - 1, y - 1
    return x + 1, y - 1


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def move_bits(flat, width, height, node, x, y, diagonal):
    """The moves from cell ``node`` = (x, y) of the flat grid ``flat`` (nonzero:
    passable) as bits, bit d for direction d, heights aside: the map's edge tested once
    per cell rather than once per move."""
    on_east = x + 1 < width
    on_south = y + 1 < height
    on_west = x > 0
    on_north = y > 0
    east = on_east and flat[node + 1] != 0
    south = on_south and flat[node + width] != 0
    west = on_west and flat[node - 1] != 0
    north = on_north and flat[node - width] != 0
    moves = (1 if east else 0) | (2 if south else 0) | (4 if west else 0) | (8 if north else 0)
    if diagonal != DIAGONAL_NEVER:
        if diagonal == DIAGONAL_NO_CORNER_CUTTING:
            on_east = east
            on_south = south
            on_west = west
            on_north = north
        if on_east and on_south and flat[node + width + 1] != 0:
            moves |= 16
        if on_west and on_south and flat[node + width - 1] != 0:
            moves |= 32
        if on_west and on_north and flat[node - width - 1] != 0:
            moves |= 64
        if on_east and on_north and flat[node - width + 1] != 0:
            moves |= 128
        if diagonal >= DIAGONAL_HEX:
            moves &= 0x0F | hex_diagonals(diagonal, x, y)
    return moves


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def legal(cells, heights, use_heights, max_climb, diagonal, x, y, nx, ny, d):
    """Whether the unit may step from (x, y) to (nx, ny), direction ``d`` (maybe off the
    map): as :func:`pathserver.core.astar.move_allowed`, for ``d`` below
    :func:`directions`."""
    height, width = cells.shape
    if nx < 0 or ny < 0 or nx >= width or ny >= height:
        return False
    if cells[ny, nx] == 0:
        return False
    if d >= 4 and diagonal == DIAGONAL_NO_CORNER_CUTTING and (cells[y, nx] == 0 or cells[ny, x] == 0):
        return False
    if not hex_move(diagonal, x, y, d):
        return False
    if use_heights != 0 and abs(heights[ny, nx] - heights[y, x]) > max_climb:
        return False
    return True


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def entry_cost(cost_index, cost_table, uniform, x, y):
    """The terrain cost of entering (x, y): 1 on a uniform map."""
    if uniform != 0:
        return 1.0
    return cost_table[cost_index[y, x]]
