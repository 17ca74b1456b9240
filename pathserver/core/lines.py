"""Straight lines on the grid: the line-of-sight skip and string pulling.

Both are valid for the unit's footprint because they test the per-size ``passable``
grid, in which a cell is open only when the unit's whole footprint fits there.
"""

import math

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.astar import move_allowed
from pathserver.core.moves import SQRT2
from pathserver.core.status import DIAGONAL_ALWAYS, SMOOTH_CORNERS, SMOOTH_LOS


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _line_step(x, y, a, b, dx, dy, step_x, step_y, four_connected):
    """The cell after (x, y) on :func:`straight_grid_path`'s line, and the walk's new
    state ``a, b``: for a 4-connected line the steps taken along x and along y (both 0 at
    the start), else Bresenham's error (``dx - dy`` at the start; ``b`` unused)."""
    if four_connected:
        # Step along the axis whose next cell boundary the segment crosses first.
        if (1 + 2 * a) * dy < (1 + 2 * b) * dx:
            return x + step_x, y, a + 1, b
        return x, y + step_y, a, b + 1
    e2 = 2 * a
    if e2 > -dy:
        a -= dy
        x += step_x
    if e2 < dx:
        a += dx
        y += step_y
    return x, y, a, b


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def straight_line_into(out, sx, sy, gx, gy, four_connected):
    """A grid path hugging the segment from (sx, sy) to (gx, gy), written into ``out``
    (int32 (m, 2), m >= the count returned).

    8-connected: Bresenham's cells, max(dx, dy) steps of which min(dx, dy) are diagonal,
    so its length is the octile distance, a lower bound on any path: when every step is
    legal and every entered cell costs 1, it is optimal. 4-connected: a monotone
    staircase, dx + dy steps, likewise optimal under Manhattan moves.
    Returns the count of cells, both ends included.
    """
    dx = abs(gx - sx)
    dy = abs(gy - sy)
    step_x = 1 if gx > sx else -1
    step_y = 1 if gy > sy else -1
    n = line_cells(sx, sy, gx, gy, four_connected)
    x = sx
    y = sy
    a = 0 if four_connected else dx - dy
    b = 0
    out[0, 0] = x
    out[0, 1] = y
    for i in range(1, n):
        x, y, a, b = _line_step(x, y, a, b, dx, dy, step_x, step_y, four_connected)
        out[i, 0] = x
        out[i, 1] = y
    return n


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def line_cells(sx, sy, gx, gy, four_connected):
    """How many cells :func:`straight_line_into` writes, both ends included."""
    dx = abs(gx - sx)
    dy = abs(gy - sy)
    return (dx + dy if four_connected else max(dx, dy)) + 1


@njit(cache=True, nogil=True)
def straight_grid_path(sx, sy, gx, gy, four_connected):
    """:func:`straight_line_into` as a new int32 (n, 2) array."""
    path = np.empty((line_cells(sx, sy, gx, gy, four_connected), 2), dtype=np.int32)
    straight_line_into(path, sx, sy, gx, gy, four_connected)
    return path


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def line_is_optimal(sx, sy, gx, gy, four_connected, passable, cost_index, cost_table, uniform, heights, use_heights,
                    max_climb, diagonal):
    """Whether ``straight_grid_path(sx, sy, gx, gy, four_connected)`` is optimal: every
    step a legal move entering a cell of cost 1. Walks the line without building it, so
    a blocked line costs the cells up to its first bad step. The other arguments as in
    :func:`pathserver.core.astar.astar`."""
    dx = abs(gx - sx)
    dy = abs(gy - sy)
    step_x = 1 if gx > sx else -1
    step_y = 1 if gy > sy else -1
    x = sx
    y = sy
    a = 0 if four_connected else dx - dy
    b = 0
    for _ in range(dx + dy if four_connected else max(dx, dy)):
        nx, ny, a, b = _line_step(x, y, a, b, dx, dy, step_x, step_y, four_connected)
        if not move_allowed(passable, heights, use_heights, max_climb, diagonal, x, y, nx, ny):
            return False
        if uniform == 0 and cost_table[cost_index[ny, nx]] != 1.0:
            return False
        x = nx
        y = ny
    return True


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def path_cost(path, cost_index, cost_table, uniform):
    """Cost of a cell path: each step's length times the entered cell's terrain cost,
    ``cost_table[cost_index[y, x]]`` (read only when ``uniform`` is 0)."""
    total = 0.0
    for i in range(1, path.shape[0]):
        step = SQRT2 if (path[i, 0] != path[i - 1, 0] and path[i, 1] != path[i - 1, 1]) else 1.0
        if uniform == 0:
            step *= cost_table[cost_index[path[i, 1], path[i, 0]]]
        total += step
    return total


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def polyline_length(points):
    """The Euclidean length of the polyline through ``points`` (int (n, 2)). A cell path's
    unit and diagonal steps are counted as integers and summed once, ``straight +
    diagonal * SQRT2`` (a chain of float additions, one a step, cost a long path's
    answer half a microsecond); other segments add their square roots."""
    straight = 0
    diagonal = 0
    other = 0.0
    for i in range(1, points.shape[0]):
        dx = np.int64(points[i, 0]) - points[i - 1, 0]
        dy = np.int64(points[i, 1]) - points[i - 1, 1]
        square = dx * dx + dy * dy
        if square == 1:
            straight += 1
        elif square == 2:
            diagonal += 1
        else:
            other += math.sqrt(float(square))
    return straight + diagonal * SQRT2 + other


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _cell_ok(passable, cost_index, cost_table, uniform, max_cost, heights, use_heights, max_climb, px, py, x, y):
    if passable[y, x] == 0:
        return False
    if uniform == 0 and cost_table[cost_index[y, x]] > max_cost:
        return False
    if use_heights != 0 and abs(heights[y, x] - heights[py, px]) > max_climb:
        return False
    return True


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def segment_clear(
    passable, cost_index, cost_table, uniform, max_cost, heights, use_heights, max_climb, diagonal, x0, y0, x1, y1
):
    """Whether the segment between the centres of two cells crosses only cells the unit
    can stand on (its supercover), none costing more than ``max_cost``, with no climb
    steeper than ``max_climb`` between consecutive cells. Where the segment passes
    exactly through a cell corner, both cells beside the corner must be open too, unless
    ``diagonal`` allows cutting corners."""
    dx = x1 - x0
    dy = y1 - y0
    nx = abs(dx)
    ny = abs(dy)
    step_x = 1 if dx > 0 else -1
    step_y = 1 if dy > 0 else -1
    x = x0
    y = y0
    ix = 0
    iy = 0
    while ix < nx or iy < ny:
        decision = (1 + 2 * ix) * ny - (1 + 2 * iy) * nx
        px = x
        py = y
        if decision == 0:
            if diagonal != DIAGONAL_ALWAYS:
                if not _cell_ok(
                    passable, cost_index, cost_table, uniform, max_cost, heights, use_heights, max_climb,
                    px, py, x + step_x, y,
                ):
                    return False
                if not _cell_ok(
                    passable, cost_index, cost_table, uniform, max_cost, heights, use_heights, max_climb,
                    px, py, x, y + step_y,
                ):
                    return False
            x += step_x
            y += step_y
            ix += 1
            iy += 1
        elif decision < 0:
            x += step_x
            ix += 1
        else:
            y += step_y
            iy += 1
        if not _cell_ok(
            passable, cost_index, cost_table, uniform, max_cost, heights, use_heights, max_climb, px, py, x, y
        ):
            return False
    return True


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _turns(path, i):
    """Whether the direction of travel changes at ``path[i]`` (0 < i < n - 1)."""
    return (path[i, 0] - path[i - 1, 0] != path[i + 1, 0] - path[i, 0]) or (
        path[i, 1] - path[i - 1, 1] != path[i + 1, 1] - path[i, 1]
    )


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def keep_corners(path, n):
    """Keep, in place at the front of ``path[:n]``, its start, goal and the cells where the
    direction of travel changes; returns their count. (Each kept cell moves to a
    position no later than its own, and the cells read after are later still.)"""
    if n <= 2:
        return n
    count = 1
    for i in range(1, n - 1):
        if _turns(path, i):
            path[count, 0] = path[i, 0]
            path[count, 1] = path[i, 1]
            count += 1
    path[count, 0] = path[n - 1, 0]
    path[count, 1] = path[n - 1, 1]
    return count + 1


@njit(cache=True, nogil=True)
def corner_points(path):
    """Start, goal, and the cells where the direction of travel changes (a new array)."""
    out = path.copy()
    return out[:keep_corners(out, out.shape[0])].copy()


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def pull_in_place(path, n, corners, passable, cost_index, cost_table, uniform, heights, use_heights, max_climb,
                  diagonal):
    """Greedy string pulling of ``path[:n]``, in place: from each kept point, go straight
    to the farthest later corner of the path in clear sight. The kept points end at the
    front of ``path``; returns their count. ``corners``: int64 scratch of n or more.

    Only corners are candidates: the cells between two corners lie on one straight or
    diagonal run, which is always in clear sight of both ends (a diagonal run passes
    exactly through cell corners, where the no-corner-cutting rule already held), so the
    greedy walk always advances. A shortcut never crosses terrain dearer than the
    dearest cell of the stretch of path it replaces, so pulling never drags a unit
    through a swamp the search went around.
    """
    if n <= 2:
        return n
    k = 1
    corners[0] = 0
    for i in range(1, n - 1):
        if _turns(path, i):
            corners[k] = i
            k += 1
    corners[k] = n - 1
    k += 1
    kept = 1  # path[0] stays
    anchor = 0
    while anchor < k - 1:
        last = anchor + 1
        a = corners[anchor]
        stretch_max = 1.0
        if uniform == 0:
            for c in range(a, corners[last] + 1):
                entered = cost_table[cost_index[path[c, 1], path[c, 0]]]
                if entered > stretch_max:
                    stretch_max = entered
        for j in range(anchor + 2, k):
            if uniform == 0:
                for c in range(corners[j - 1] + 1, corners[j] + 1):
                    entered = cost_table[cost_index[path[c, 1], path[c, 0]]]
                    if entered > stretch_max:
                        stretch_max = entered
            b = corners[j]
            if segment_clear(
                passable, cost_index, cost_table, uniform, stretch_max, heights, use_heights, max_climb, diagonal,
                path[a, 0], path[a, 1], path[b, 0], path[b, 1],
            ):
                last = j
            else:
                break
        # The kept point moves to the front: to a position before every cell read after
        # (those lie at or past corners[last]).
        path[kept, 0] = path[corners[last], 0]
        path[kept, 1] = path[corners[last], 1]
        kept += 1
        anchor = last
    return kept


@njit(cache=True, nogil=True)
def string_pull(path, passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal):
    """:func:`pull_in_place` on a copy of ``path``: the kept points, a new array."""
    out = path.copy()
    corners = np.empty(max(out.shape[0], 1), dtype=np.int64)
    kept = pull_in_place(out, out.shape[0], corners, passable, cost_index, cost_table, uniform, heights,
                         use_heights, max_climb, diagonal)
    return out[:kept].copy()


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def finish_in_place(path, n, smooth, corners, passable, cost_index, cost_table, uniform, heights, use_heights,
                    max_climb, diagonal):
    """Smooth the cell path ``path[:n]`` in place as ``smooth`` (SMOOTH_*) says; returns the
    count of points kept at its front. ``corners``: :func:`pull_in_place`'s scratch."""
    if smooth == SMOOTH_CORNERS:
        return keep_corners(path, n)
    if smooth == SMOOTH_LOS:
        return pull_in_place(path, n, corners, passable, cost_index, cost_table, uniform, heights, use_heights,
                             max_climb, diagonal)
    return n


@njit(cache=True, nogil=True)
def finish(path, passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, smooth):
    """:func:`finish_in_place` on ``path`` (a new array when smoothing keeps fewer)."""
    if smooth == SMOOTH_CORNERS:
        return corner_points(path)
    if smooth == SMOOTH_LOS:
        return string_pull(path, passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal)
    return path
