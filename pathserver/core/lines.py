"""Straight lines on the grid: the line-of-sight skip and string pulling.

Both are valid for the unit's footprint because they test the per-size ``passable``
grid, in which a cell is open only when the unit's whole footprint fits there.
"""

import math

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.astar import move_allowed
from pathserver.core.moves import SQRT2, axial, hex_distance, offset
from pathserver.core.status import DIAGONAL_ALWAYS, DIAGONAL_HEX, SMOOTH_CORNERS, SMOOTH_LOS

# A hex line's nudge off the edges between hexes, in cube coordinates (q, r; s follows):
# pathserver.hexes.LINE_NUDGE, which draws the same line in Python.
_NUDGE_Q = 1e-6
_NUDGE_R = 2e-6


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def hex_line_cell(layout, q0, r0, q1, r1, i, n):
    """Cell ``i`` (0..n) of the hex line of ``n`` steps from axial (q0, r0) to (q1, r1) in
    ``layout``, as :func:`pathserver.hexes.hex_line` draws it: the cube coordinates
    interpolated at i / n, nudged, each rounded half up, and the component that moved
    most recomputed from the other two."""
    t = i / n if n > 0 else 0.0
    fq = q0 + _NUDGE_Q + (q1 - q0) * t
    fr = r0 + _NUDGE_R + (r1 - r0) * t
    fs = -fq - fr
    rq = math.floor(fq + 0.5)
    rr = math.floor(fr + 0.5)
    rs = math.floor(fs + 0.5)
    eq = abs(rq - fq)
    er = abs(rr - fr)
    es = abs(rs - fs)
    if eq > er and eq > es:
        rq = -rr - rs
    elif er > es:
        rr = -rq - rs
    return offset(layout, int(rq), int(rr))


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
    On a hex map (``four_connected`` a DIAGONAL_HEX_* code: see
    :func:`pathserver.core.moves.line_kind`), the hex line: hex-distance steps.
    Returns the count of cells, both ends included.
    """
    n = line_cells(sx, sy, gx, gy, four_connected)
    if four_connected >= DIAGONAL_HEX:
        q0, r0 = axial(four_connected, sx, sy)
        q1, r1 = axial(four_connected, gx, gy)
        for i in range(n):
            out[i, 0], out[i, 1] = hex_line_cell(four_connected, q0, r0, q1, r1, i, n - 1)
        return n
    dx = abs(gx - sx)
    dy = abs(gy - sy)
    step_x = 1 if gx > sx else -1
    step_y = 1 if gy > sy else -1
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
    if four_connected >= DIAGONAL_HEX:
        return hex_distance(four_connected, sx, sy, gx, gy) + 1
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
    if four_connected >= DIAGONAL_HEX:
        # A hex line's steps are all moves: clear of cells dearer than 1, it is optimal.
        return segment_clear(passable, cost_index, cost_table, uniform, 1.0, heights, use_heights, max_climb,
                             diagonal, sx, sy, gx, gy)
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
def path_cost(path, cost_index, cost_table, uniform, diagonal):
    """Cost of a cell path: each step's length (1 every step on a hex map, ``diagonal``
    >= DIAGONAL_HEX) times the entered cell's terrain cost, ``cost_table[cost_index[y,
    x]]`` (read only when ``uniform`` is 0)."""
    total = 0.0
    slant = 1.0 if diagonal >= DIAGONAL_HEX else SQRT2
    for i in range(1, path.shape[0]):
        step = slant if (path[i, 0] != path[i - 1, 0] and path[i, 1] != path[i - 1, 1]) else 1.0
        if uniform == 0:
            step *= cost_table[cost_index[path[i, 1], path[i, 0]]]
        total += step
    return total


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def polyline_length(points, diagonal):
    """The Euclidean length of the polyline through ``points`` (int (n, 2)). A cell path's
    unit and diagonal steps are counted as integers and summed once, ``straight +
    diagonal * SQRT2`` (a chain of float additions, one a step, cost a long path's
    answer half a microsecond); other segments add their square roots. On a hex map
    (``diagonal`` >= DIAGONAL_HEX) between hex centres, neighbours 1 apart."""
    if diagonal >= DIAGONAL_HEX:
        total = 0.0
        for i in range(1, points.shape[0]):
            q0, r0 = axial(diagonal, points[i - 1, 0], points[i - 1, 1])
            q1, r1 = axial(diagonal, points[i, 0], points[i, 1])
            dq = q1 - q0
            dr = r1 - r0
            square = dq * dq + dq * dr + dr * dr
            total += 1.0 if square == 1 else math.sqrt(float(square))
        return total
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
    ``diagonal`` allows cutting corners. On a hex map, the cells of the hex line
    (:func:`straight_line_into`) instead."""
    if diagonal >= DIAGONAL_HEX:
        q0, r0 = axial(diagonal, x0, y0)
        q1, r1 = axial(diagonal, x1, y1)
        n = hex_distance(diagonal, x0, y0, x1, y1)
        px = x0
        py = y0
        for i in range(1, n + 1):
            x, y = hex_line_cell(diagonal, q0, r0, q1, r1, i, n)
            if not _cell_ok(passable, cost_index, cost_table, uniform, max_cost, heights, use_heights, max_climb,
                            px, py, x, y):
                return False
            px = x
            py = y
        return True
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
def _turns(path, i, diagonal):
    """Whether the direction of travel changes at ``path[i]`` (0 < i < n - 1); on a hex
    map (``diagonal`` >= DIAGONAL_HEX) in axial coordinates, where a straight hex run's
    offset steps alternate."""
    if diagonal >= DIAGONAL_HEX:
        q0, r0 = axial(diagonal, path[i - 1, 0], path[i - 1, 1])
        q1, r1 = axial(diagonal, path[i, 0], path[i, 1])
        q2, r2 = axial(diagonal, path[i + 1, 0], path[i + 1, 1])
        return q1 - q0 != q2 - q1 or r1 - r0 != r2 - r1
    return (path[i, 0] - path[i - 1, 0] != path[i + 1, 0] - path[i, 0]) or (
        path[i, 1] - path[i - 1, 1] != path[i + 1, 1] - path[i, 1]
    )


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def keep_corners(path, n, diagonal):
    """Keep, in place at the front of ``path[:n]``, its start, goal and the cells where the
    direction of travel changes; returns their count. (Each kept cell moves to a
    position no later than its own, and the cells read after are later still.)"""
    if n <= 2:
        return n
    count = 1
    for i in range(1, n - 1):
        if _turns(path, i, diagonal):
            path[count, 0] = path[i, 0]
            path[count, 1] = path[i, 1]
            count += 1
    path[count, 0] = path[n - 1, 0]
    path[count, 1] = path[n - 1, 1]
    return count + 1


@njit(cache=True, nogil=True)
def corner_points(path, diagonal):
    """Start, goal, and the cells where the direction of travel changes (a new array)."""
    out = path.copy()
    return out[:keep_corners(out, out.shape[0], diagonal)].copy()


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
        if _turns(path, i, diagonal):
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
        return keep_corners(path, n, diagonal)
    if smooth == SMOOTH_LOS:
        return pull_in_place(path, n, corners, passable, cost_index, cost_table, uniform, heights, use_heights,
                             max_climb, diagonal)
    return n


@njit(cache=True, nogil=True)
def finish(path, passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, smooth):
    """:func:`finish_in_place` on ``path`` (a new array when smoothing keeps fewer)."""
    if smooth == SMOOTH_CORNERS:
        return corner_points(path, diagonal)
    if smooth == SMOOTH_LOS:
        return string_pull(path, passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal)
    return path
