"""Steering on a distance field: for each unit, where to head next and the cost left.

The field holds each cell's cost to the nearest goal (see
:func:`pathserver.core.dijkstra.field`), so a cell's best move is the legal step
minimising the step's cost plus the field beyond it: that sum equals the cell's own value
(computed by the same float operations), so following it is an optimal path, each step
strictly downhill. With line-of-sight lookahead a unit heads instead for the farthest cell
of that descent its footprint can see (the footprint-safe segment test of
:func:`pathserver.core.lines.segment_clear`, never across terrain dearer than the stretch
of descent it replaces), looking at most :data:`LOS_STEPS` steps ahead.

Grid arguments as in :func:`pathserver.core.astar.astar`.
"""

import numpy as np
from numba import njit

from pathserver.core.astar import SQRT2, STEP_X, STEP_Y, move_allowed
from pathserver.core.lines import segment_clear

#: How far along its descent the line-of-sight lookahead looks.
LOS_STEPS = 64
#: A cell whose line-of-sight target is not known yet (``targets`` below).
UNKNOWN = -2
LOOKAHEAD_CELL = 0
LOOKAHEAD_LOS = 1


@njit(cache=True, nogil=True, inline="always")
def _entry_cost(cost_index, cost_table, uniform, x, y):
    if uniform != 0:
        return 1.0
    return cost_table[cost_index[y, x]]


@njit(cache=True, nogil=True)
def downhill(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, field, x, y):
    """The node id of the best step from (x, y) (the legal move minimising its cost plus
    the field beyond it), or -1 where no neighbour reaches a goal. (x, y) itself need not
    be standable in ``cells``: a unit may leave an avoided cell."""
    height, width = cells.shape
    best = np.inf
    best_node = -1
    for d in range(8):
        nx = x + STEP_X[d]
        ny = y + STEP_Y[d]
        if nx < 0 or ny < 0 or nx >= width or ny >= height:
            continue
        rest = field[ny, nx]
        if rest == np.inf:
            continue
        if not move_allowed(cells, heights, use_heights, max_climb, diagonal, x, y, nx, ny):
            continue
        value = rest + (SQRT2 if d >= 4 else 1.0) * _entry_cost(cost_index, cost_table, uniform, nx, ny)
        if value < best:
            best = value
            best_node = ny * width + nx
    return best_node


@njit(cache=True, nogil=True)
def sighted(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, field, x, y):
    """The farthest cell of the descent from (x, y), at most LOS_STEPS steps on, that the
    footprint sees from (x, y) without crossing terrain dearer than the descent up to it;
    (x, y)'s own node id at a goal or where no step leads on."""
    width = cells.shape[1]
    here = y * width + x
    best = here
    stretch_max = _entry_cost(cost_index, cost_table, uniform, x, y)
    node = here
    for _ in range(LOS_STEPS):
        cy = node // width
        cx = node - cy * width
        if field[cy, cx] == 0.0:
            break
        node = downhill(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, field,
                        cx, cy)
        if node < 0:
            break
        ny = node // width
        nx = node - ny * width
        entered = _entry_cost(cost_index, cost_table, uniform, nx, ny)
        if entered > stretch_max:
            stretch_max = entered
        if best != here and not segment_clear(cells, cost_index, cost_table, uniform, stretch_max, heights,
                                              use_heights, max_climb, diagonal, x, y, nx, ny):
            break
        best = node
    return best


@njit(cache=True, nogil=True)
def next_steps(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, field, units,
               lookahead, targets, steps, remaining):
    """For each unit at cell ``units[i]`` (int (n, 2) x, y, in bounds): ``steps[i]``
    (float64 (n, 2)) the cell to head for and ``remaining[i]`` (float32 (n,)) its cell's
    field value. A unit on a goal or unable to reach one (field 0 or inf) stays on its
    cell. lookahead: LOOKAHEAD_CELL (the next cell downhill) or LOOKAHEAD_LOS (see
    :func:`sighted`), whose answers are kept per cell in ``targets`` (int32 (H * W,),
    UNKNOWN where not worked out yet; a (1,) placeholder for cells), so a later call for
    units on the same cells only looks them up. Returns 0."""
    width = cells.shape[1]
    for i in range(units.shape[0]):
        x = units[i, 0]
        y = units[i, 1]
        value = field[y, x]
        remaining[i] = value
        target = y * width + x
        if value != 0.0 and value != np.inf:
            if lookahead == LOOKAHEAD_LOS:
                target = targets[target]
                if target == UNKNOWN:
                    target = sighted(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal,
                                     field, x, y)
                    targets[y * width + x] = target
            else:
                found = downhill(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal,
                                 field, x, y)
                if found >= 0:
                    target = found
        ty = target // width
        steps[i, 0] = target - ty * width
        steps[i, 1] = ty
    return 0
