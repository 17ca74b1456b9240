"""Steering on a distance field: for each unit, where to head next and the cost left.

The field holds each cell's cost to the nearest goal (see
:func:`pathserver.core.dijkstra.field`), so a cell's best move is the legal step
minimising the step's cost plus the field beyond it: that sum equals the cell's own value
(computed by the same float operations), so following it is an optimal path, each step
strictly downhill. With line-of-sight lookahead a unit heads instead for the farthest
turn of that descent, at most :data:`LOS_STEPS` steps on, that its footprint sees clearly
(the footprint-safe segment test of :func:`pathserver.core.lines.segment_clear`, never
across terrain dearer than the descent up to it).

Both answers depend on the cell alone, so they are kept per cell (``following``,
``sighted``: int32 (H * W,), :data:`UNKNOWN` until worked out) for as long as the field:
a unit on a cell some unit has stood on costs a lookup. The field's search fills
``following`` as it goes where it can (:func:`pathserver.core.dijkstra.field_whole`: the
neighbour a cell's value came through, a step of equal cost).

Grid arguments as in :func:`pathserver.core.astar.astar`.
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.lines import segment_clear
from pathserver.core.moves import diagonal_step, directions, hex_diagonals, entry_cost, step_to
from pathserver.core.status import DIAGONAL_HEX, DIAGONAL_NO_CORNER_CUTTING

#: How far along its descent the line-of-sight lookahead looks.
LOS_STEPS = 64
#: A cell whose answer is not worked out yet.
UNKNOWN = -2
#: A cell with no step: on a goal, or unable to reach one.
NOWHERE = -1
LOOKAHEAD_CELL = 0
LOOKAHEAD_LOS = 1


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def downhill(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, field, x, y):
    """The node id of the best step from (x, y) (the legal move minimising its cost plus
    the field beyond it; the first of equals in direction order, straight moves first),
    or NOWHERE at a goal or where no neighbour reaches one. (x, y) itself need not be
    standable in ``cells``: a unit may leave an avoided cell."""
    height, width = cells.shape
    here = field[y, x]
    if here == 0.0 or here == np.inf:
        return NOWHERE
    corners = diagonal == DIAGONAL_NO_CORNER_CUTTING
    hexes = diagonal >= DIAGONAL_HEX
    slant = diagonal_step(diagonal)
    best = np.inf
    best_node = NOWHERE
    for d in range(directions(diagonal)):
        nx, ny = step_to(x, y, d)
        # moves.legal written out: the inlined call ran slower here (bench/queries.py, next_steps).
        if nx < 0 or ny < 0 or nx >= width or ny >= height or cells[ny, nx] == 0:
            continue
        if d >= 4 and corners and (cells[y, nx] == 0 or cells[ny, x] == 0):
            continue
        if d >= 4 and hexes and (hex_diagonals(diagonal, x, y) >> d) & 1 == 0:
            continue
        if use_heights != 0 and abs(heights[ny, nx] - heights[y, x]) > max_climb:
            continue
        rest = field[ny, nx]
        if rest == np.inf:
            continue
        value = rest + (slant if d >= 4 else 1.0) * entry_cost(cost_index, cost_table, uniform, nx, ny)
        if value < best:
            best = value
            best_node = ny * width + nx
    return best_node


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _step(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, field, following, node):
    # downhill() of a node, kept in `following`.
    found = following[node]
    if found == UNKNOWN:
        width = cells.shape[1]
        y = node // width
        found = downhill(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, field,
                         node - y * width, y)
        following[node] = found
    return found


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def sighted(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, field, following,
            x, y):
    """The node id of the farthest turn of the descent from (x, y), at most LOS_STEPS steps
    on, that the footprint sees from (x, y) without crossing terrain dearer than the
    descent up to it (its last cell within the steps counting as a turn); the first step
    when it sees none; NOWHERE where there is no step."""
    width = cells.shape[1]
    node = _step(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, field, following,
                 y * width + x)
    if node < 0:
        return NOWHERE
    best = node
    stretch_max = max(entry_cost(cost_index, cost_table, uniform, x, y),
                      entry_cost(cost_index, cost_table, uniform, node - (node // width) * width, node // width))
    previous = y * width + x
    for _ in range(LOS_STEPS - 1):
        following_node = _step(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal,
                               field, following, node)
        ny = node // width
        nx = node - ny * width
        # A turn: the direction changes here, or the descent ends (a goal) or the look does.
        turn = following_node < 0 or following_node - node != node - previous
        if turn and node != best:
            if not segment_clear(cells, cost_index, cost_table, uniform, stretch_max, heights, use_heights, max_climb,
                                 diagonal, x, y, nx, ny):
                return best
            best = node
        if following_node < 0:
            return best
        previous = node
        node = following_node
        ny = node // width
        entered = entry_cost(cost_index, cost_table, uniform, node - ny * width, ny)
        if entered > stretch_max:
            stretch_max = entered
    ny = node // width
    if segment_clear(cells, cost_index, cost_table, uniform, stretch_max, heights, use_heights, max_climb, diagonal,
                     x, y, node - ny * width, ny):
        return node
    return best


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def next_steps(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, field, units,
               lookahead, following, sights, steps, remaining):
    """For each unit at cell ``units[i]`` (int (n, 2) x, y, in bounds): ``steps[i]``
    (float64 (n, 2)) the cell to head for and ``remaining[i]`` (float32 (n,)) its cell's
    field value. A unit on a goal or unable to reach one (field 0 or inf) stays on its
    cell. lookahead: LOOKAHEAD_CELL (the next cell downhill) or LOOKAHEAD_LOS (see
    :func:`sighted`). following, sights: the per-cell answers (see the module docstring;
    ``sights`` a (1,) placeholder for LOOKAHEAD_CELL). Returns 0."""
    width = cells.shape[1]
    for i in range(units.shape[0]):
        x = units[i, 0]
        y = units[i, 1]
        here = y * width + x
        remaining[i] = field[y, x]
        if lookahead == LOOKAHEAD_LOS:
            target = sights[here]
            if target == UNKNOWN:
                target = sighted(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal,
                                 field, following, x, y)
                sights[here] = target
        else:
            target = _step(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, field,
                           following, here)
        if target < 0:
            target = here
        ty = target // width
        steps[i, 0] = target - ty * width
        steps[i, 1] = ty
    return 0
