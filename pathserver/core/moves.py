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

from pathserver.core.status import DIAGONAL_NEVER, DIAGONAL_NO_CORNER_CUTTING

SQRT2 = math.sqrt(2.0)


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
    if use_heights != 0 and abs(heights[ny, nx] - heights[y, x]) > max_climb:
        return False
    return True


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def entry_cost(cost_index, cost_table, uniform, x, y):
    """The terrain cost of entering (x, y): 1 on a uniform map."""
    if uniform != 0:
        return 1.0
    return cost_table[cost_index[y, x]]
