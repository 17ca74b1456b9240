"""A* on a passability grid: 8-connected (three diagonal rules) or 4-connected, terrain
costs, heights with a climb limit, four heuristics with an optional weight.

Search state lives in caller-owned workspace arrays of length H*W that are never cleared
between queries: a node's ``g``/``parent``/heap position are valid only when
``stamp[node]`` equals this query's ``pass_id`` (open) or ``pass_id + 1`` (closed), the
pass counter of Godot's AStarGrid2D. The caller advances ``pass_id`` by 2 per query.
"""

import math

import numpy as np
from pathserver.core.jit import njit

from pathserver.core.heap import TIE, heap_decrease, heap_pop, heap_push, key_pop, key_sift_up
from pathserver.core.status import (
    DIAGONAL_NEVER,
    DIAGONAL_NO_CORNER_CUTTING,
    HEURISTIC_CHEBYSHEV,
    HEURISTIC_EUCLIDEAN,
    HEURISTIC_MANHATTAN,
    SEARCH_BUDGET,
    SEARCH_FOUND,
    SEARCH_NO_PATH,
)

SQRT2 = math.sqrt(2.0)
# Orthogonal moves first: with equal keys the heap keeps insertion order stable enough
# that straight runs are preferred, which reads better on screen.
STEP_X = (1, 0, -1, 0, 1, -1, -1, 1)
STEP_Y = (0, 1, 0, -1, 1, 1, -1, -1)


@njit(cache=True, nogil=True, inline="always")
def heuristic_distance(kind, x, y, gx, gy):
    """Unweighted estimate from (x, y) to (gx, gy) in straight-move units."""
    dx = abs(x - gx)
    dy = abs(y - gy)
    if kind == HEURISTIC_EUCLIDEAN:
        return math.sqrt(dx * dx + dy * dy)
    if kind == HEURISTIC_MANHATTAN:
        return float(dx + dy)
    lo = dx if dx < dy else dy
    hi = dx if dx > dy else dy
    if kind == HEURISTIC_CHEBYSHEV:
        return float(hi)
    return hi + (SQRT2 - 1.0) * lo


@njit(cache=True, nogil=True, inline="always")
def move_allowed(passable, heights, use_heights, max_climb, diagonal, x, y, nx, ny):
    """Whether the unit may step from (x, y) to the in-bounds neighbour (nx, ny)."""
    if passable[ny, nx] == 0:
        return False
    if nx != x and ny != y:
        if diagonal == DIAGONAL_NEVER:
            return False
        if diagonal == DIAGONAL_NO_CORNER_CUTTING and (passable[y, nx] == 0 or passable[ny, x] == 0):
            return False
    if use_heights != 0 and abs(heights[ny, nx] - heights[y, x]) > max_climb:
        return False
    return True


@njit(cache=True, nogil=True)
def astar(
    passable,
    cost_index,
    cost_table,
    uniform,
    heights,
    use_heights,
    max_climb,
    sx,
    sy,
    gx,
    gy,
    diagonal,
    heuristic,
    weight,
    max_expansions,
    g,
    parent,
    stamp,
    pass_id,
    heap_nodes,
    heap_f,
    heap_h,
    heap_pos,
):
    """Search from (sx, sy) to (gx, gy); both must be passable and in bounds.

    passable: integer (H, W), nonzero = passable. cost_index: unsigned integer (H, W) and
    cost_table: float64 (K,): entering cell (x, y) costs ``cost_table[cost_index[y, x]]``,
    read only when ``uniform`` is 0 (a (1, 1) placeholder and ``[1.0]`` serve then).
    heights: float32 (H, W), read only when ``use_heights`` is 1.
    diagonal / heuristic: the DIAGONAL_* / HEURISTIC_* codes; weight >= 1 inflates h.
    max_expansions: 0 for no limit. Workspace arrays: see the module docstring.

    Returns (status, end_node, expanded): SEARCH_FOUND with end_node the goal;
    SEARCH_NO_PATH or SEARCH_BUDGET with end_node the closed node nearest the goal by
    the heuristic (for partial paths). Follow ``parent`` from end_node to the start.
    """
    height, width = passable.shape
    open_mark = pass_id
    closed_mark = pass_id + 1
    start = sy * width + sx
    goal = gy * width + gx
    h0 = heuristic_distance(heuristic, sx, sy, gx, gy)
    g[start] = 0.0
    parent[start] = start
    stamp[start] = open_mark
    size = heap_push(heap_nodes, heap_f, heap_h, heap_pos, 0, start, h0 * weight, h0)
    best = start
    best_h = h0
    expanded = 0
    while size > 0:
        node, size = heap_pop(heap_nodes, heap_f, heap_h, heap_pos, size)
        if node == goal:
            return SEARCH_FOUND, goal, expanded
        if max_expansions > 0 and expanded >= max_expansions:
            return SEARCH_BUDGET, best, expanded
        stamp[node] = closed_mark
        expanded += 1
        y = node // width
        x = node - y * width
        h_node = heuristic_distance(heuristic, x, y, gx, gy)
        if h_node < best_h:
            best_h = h_node
            best = node
        g_node = g[node]
        for d in range(8):
            nx = x + STEP_X[d]
            ny = y + STEP_Y[d]
            if nx < 0 or ny < 0 or nx >= width or ny >= height:
                continue
            if not move_allowed(passable, heights, use_heights, max_climb, diagonal, x, y, nx, ny):
                continue
            neighbour = ny * width + nx
            mark = stamp[neighbour]
            if mark == closed_mark:
                continue
            step = SQRT2 if d >= 4 else 1.0
            if uniform == 0:
                step *= cost_table[cost_index[ny, nx]]
            g_new = g_node + step
            if mark == open_mark:
                if g_new < g[neighbour]:
                    g[neighbour] = g_new
                    parent[neighbour] = node
                    h = heuristic_distance(heuristic, nx, ny, gx, gy)
                    heap_decrease(heap_nodes, heap_f, heap_h, heap_pos, neighbour, g_new + h * weight, h)
            else:
                stamp[neighbour] = open_mark
                g[neighbour] = g_new
                parent[neighbour] = node
                h = heuristic_distance(heuristic, nx, ny, gx, gy)
                size = heap_push(heap_nodes, heap_f, heap_h, heap_pos, size, neighbour, g_new + h * weight, h)
    return SEARCH_NO_PATH, best, expanded


@njit(cache=True, nogil=True, inline="always")
def _octile(x, y, gx, gy):
    dx = abs(x - gx)
    dy = abs(y - gy)
    if dx < dy:
        return dy + (SQRT2 - 1.0) * dx
    return dx + (SQRT2 - 1.0) * dy


@njit(cache=True, nogil=True)
def astar_octile(passable, sx, sy, gx, gy, weight, max_expansions,
                 g, parent, stamp, pass_id, heap_nodes, heap_keys, heap_pos):
    """:func:`astar` for the Moving AI rules only: uniform cost, no heights, 8 directions
    without corner cutting, octile heuristic. Same results and tie-breaking (equal f:
    nearer the goal first), with no per-move branches on options and one fused heap key
    per node (see :mod:`pathserver.core.heap`): about 2 times faster per expansion.
    heap_keys: float64 (N,), takes the place of heap_f and heap_h."""
    height, width = passable.shape
    open_mark = pass_id
    closed_mark = pass_id + 1
    start = sy * width + sx
    goal = gy * width + gx
    h_scale = weight * (1.0 + TIE)
    h0 = _octile(sx, sy, gx, gy)
    g[start] = 0.0
    parent[start] = start
    stamp[start] = open_mark
    heap_nodes[0] = start
    heap_keys[0] = h0 * h_scale
    heap_pos[start] = 0
    size = 1
    best = start
    best_h = h0
    expanded = 0
    while size > 0:
        node, size = key_pop(heap_nodes, heap_keys, heap_pos, size)
        if node == goal:
            return SEARCH_FOUND, goal, expanded
        if max_expansions > 0 and expanded >= max_expansions:
            return SEARCH_BUDGET, best, expanded
        stamp[node] = closed_mark
        expanded += 1
        y = node // width
        x = node - y * width
        h_node = _octile(x, y, gx, gy)
        if h_node < best_h:
            best_h = h_node
            best = node
        g_node = g[node]
        for d in range(8):
            nx = x + STEP_X[d]
            ny = y + STEP_Y[d]
            if nx < 0 or ny < 0 or nx >= width or ny >= height:
                continue
            if passable[ny, nx] == 0:
                continue
            if d >= 4 and (passable[y, nx] == 0 or passable[ny, x] == 0):
                continue
            neighbour = ny * width + nx
            mark = stamp[neighbour]
            if mark == closed_mark:
                continue
            g_new = g_node + (SQRT2 if d >= 4 else 1.0)
            if mark == open_mark:
                if g_new < g[neighbour]:
                    g[neighbour] = g_new
                    parent[neighbour] = node
                    at = heap_pos[neighbour]
                    heap_keys[at] = g_new + _octile(nx, ny, gx, gy) * h_scale
                    key_sift_up(heap_nodes, heap_keys, heap_pos, at)
            else:
                stamp[neighbour] = open_mark
                g[neighbour] = g_new
                parent[neighbour] = node
                heap_nodes[size] = neighbour
                heap_keys[size] = g_new + _octile(nx, ny, gx, gy) * h_scale
                key_sift_up(heap_nodes, heap_keys, heap_pos, size)
                size += 1
    return SEARCH_NO_PATH, best, expanded


@njit(cache=True, nogil=True)
def trace_path(parent, width, start, end):
    """The cells from ``start`` to ``end`` following ``parent`` back from ``end``.

    Consecutive parents may be several cells apart along a straight or diagonal line
    (jump points); the segment between them is filled in cell by cell.
    Returns int32 (n, 2) of (x, y), start and end included.
    """
    count = 1
    node = end
    while node != start:
        prev = parent[node]
        y = node // width
        x = node - y * width
        py = prev // width
        px = prev - py * width
        span = abs(x - px)
        if abs(y - py) > span:
            span = abs(y - py)
        count += span
        node = prev
    path = np.empty((count, 2), dtype=np.int32)
    i = count - 1
    node = end
    y = node // width
    x = node - y * width
    path[i, 0] = x
    path[i, 1] = y
    while node != start:
        prev = parent[node]
        py = prev // width
        px = prev - py * width
        step_x = (px > x) - (px < x)
        step_y = (py > y) - (py < y)
        while x != px or y != py:
            if x != px:
                x += step_x
            if y != py:
                y += step_y
            i -= 1
            path[i, 0] = x
            path[i, 1] = y
        node = prev
    return path
