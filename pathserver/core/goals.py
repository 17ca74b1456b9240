"""One path to the cheapest of many goals, in one search.

Backwards: an A* from all the goals at once (each queued at cost 0) to the start, whose
estimate is the distance to the start, one distance a node however many goals there are.
The first time it takes the start, the start's cost is the cheapest path from the start to
any goal, and the parents lead from the start to that goal. Steps are priced as forwards
(the cell entered pays), so the costs are exactly find_path's. Goals whose distance to the
start already exceeds the answer are never expanded: on a map with 100 goals the search
does about the work of one A* to the nearest. Where find_path would run JPS+ (the layer's
jump table built, no budget, no avoided cells), the search back is JPS+ from every goal
at once: each a start, trying all eight directions (the moves are symmetric on such a
grid, so a path found backwards is one forwards).

Forwards, for a partial path (allow_partial when no goal is reached): an A* from the start
whose estimate is the distance to the nearest of a few boxes holding the goals (a minimum
of consistent estimates is consistent); up to :data:`MAX_BOXES` goals each is its own box,
more are sorted along a Morton curve and cut into :data:`MAX_BOXES` compact runs. Its
closed node the estimate deems nearest a goal ends the partial path.

Goals outside the start's component are dropped before searching.
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.astar import heuristic_distance, next_pass_id, trace_path
from pathserver.core.components import component_at, nearest_with_label
from pathserver.core.heap import TIE, heap_decrease, heap_pop, heap_push, key_pop, key_sift_up
from pathserver.core.jpsplus import jps_plus, jump_cost, jump_path_steps, jump_root, trace_jumps_into
from pathserver.core.lines import finish, line_is_optimal, path_cost, polyline_length, straight_grid_path
from pathserver.core.moves import diagonal_step, directions, hex_diagonals, line_kind, step_to
from pathserver.core.status import (
    ALGORITHM_JPS,
    DIAGONAL_HEX,
    DIAGONAL_MASK,
    DIAGONAL_NO_CORNER_CUTTING,
    FLAG_BUDGET_HIT,
    FLAG_GOAL_SNAPPED,
    FLAG_LINE_OF_SIGHT,
    FLAG_OTHER_COMPONENT,
    FLAG_START_SNAPPED,
    HEURISTIC_CHEBYSHEV,
    HEURISTIC_HEX,
    HEURISTIC_MANHATTAN,
    HEURISTIC_MASK,
    HEURISTIC_OCTILE,
    MODE_ALGORITHM,
    MODE_ALLOW_PARTIAL,
    MODE_DIAGONAL,
    MODE_HEURISTIC,
    MODE_LINE_OF_SIGHT,
    MODE_SMOOTH,
    MODE_SNAP,
    MODE_UNIFORM,
    MODE_USE_HEIGHTS,
    QUERY_FOUND,
    QUERY_GOAL_BLOCKED,
    QUERY_NO_PATH,
    QUERY_PARTIAL,
    QUERY_SEARCH_LIMIT,
    QUERY_START_BLOCKED,
    SEARCH_BUDGET,
    SEARCH_FOUND,
    SEARCH_NO_PATH,
)

#: The most boxes the heuristic takes the minimum over.
MAX_BOXES = 16


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def box_distance(kind, x, y, box):
    """``heuristic_distance`` from (x, y) to the nearest cell of ``box`` = (x0, y0, x1,
    y1), ends included. On a hex map, to a box of more than one cell, the Chebyshev
    distance (a hex move changes x and y by at most 1 each: a lower bound)."""
    cx = x if x > box[0] else box[0]
    if cx > box[2]:
        cx = box[2]
    cy = y if y > box[1] else box[1]
    if cy > box[3]:
        cy = box[3]
    if kind >= HEURISTIC_HEX and (box[0] != box[2] or box[1] != box[3]):
        return heuristic_distance(HEURISTIC_CHEBYSHEV, x, y, cx, cy)
    return heuristic_distance(kind, x, y, cx, cy)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def nearest_box(kind, x, y, boxes, n_boxes):
    best = np.inf
    for b in range(n_boxes):
        d = box_distance(kind, x, y, boxes[b])
        if d < best:
            best = d
    return best


@njit(cache=True, nogil=True)
def goal_boxes(points, n, max_boxes):
    """int64 (B, 4) boxes ``x0, y0, x1, y1`` (ends included) holding the first ``n`` rows
    of ``points`` (int (K, 2) x, y): one a point up to ``max_boxes`` points, else
    ``max_boxes`` runs of the points in Morton order."""
    if n <= max_boxes:
        boxes = np.empty((n, 4), dtype=np.int64)
        for i in range(n):
            boxes[i, 0] = points[i, 0]
            boxes[i, 1] = points[i, 1]
            boxes[i, 2] = points[i, 0]
            boxes[i, 3] = points[i, 1]
        return boxes
    codes = np.empty(n, dtype=np.int64)
    for i in range(n):
        code = 0
        for bit in range(24):
            code |= ((points[i, 0] >> bit) & 1) << (2 * bit)
            code |= ((points[i, 1] >> bit) & 1) << (2 * bit + 1)
        codes[i] = code
    order = np.argsort(codes)
    boxes = np.empty((max_boxes, 4), dtype=np.int64)
    for b in range(max_boxes):
        lo = b * n // max_boxes
        hi = (b + 1) * n // max_boxes
        first = order[lo]
        boxes[b, 0] = points[first, 0]
        boxes[b, 1] = points[first, 1]
        boxes[b, 2] = points[first, 0]
        boxes[b, 3] = points[first, 1]
        for k in range(lo + 1, hi):
            i = order[k]
            boxes[b, 0] = min(boxes[b, 0], points[i, 0])
            boxes[b, 1] = min(boxes[b, 1], points[i, 1])
            boxes[b, 2] = max(boxes[b, 2], points[i, 0])
            boxes[b, 3] = max(boxes[b, 3], points[i, 1])
    return boxes


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _goal_at(goal_nodes, goal_order, node):
    # The goal index at `node` (the lowest of equal ones), or -1: a binary search of the
    # sorted node ids.
    lo = 0
    hi = goal_nodes.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if goal_nodes[mid] < node:
            lo = mid + 1
        else:
            hi = mid
    if lo < goal_nodes.shape[0] and goal_nodes[lo] == node:
        return goal_order[lo]
    return -1


@njit(cache=True, nogil=True)
def astar_goals(passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, sx, sy, targets, index,
                n, diagonal, heuristic, weight, max_expansions, g, parent, stamp, pass_id, heap_nodes, heap_f, heap_h,
                heap_pos):
    """A* from (sx, sy) to the cheapest of the first ``n`` rows of ``targets`` (int (K, 2)
    x, y, each passable; ``index`` (K,) the goal index each stands for). Arguments and
    workspace as :func:`pathserver.core.astar.astar`.

    Returns (status, end_node, goal, expanded): SEARCH_FOUND with end_node the goal
    reached and goal its ``index``; SEARCH_NO_PATH or SEARCH_BUDGET with end_node the closed
    node with the smallest estimate (for partial paths) and goal the index of the target
    nearest it."""
    height, width = passable.shape
    n_dirs = directions(diagonal)
    corners = diagonal == DIAGONAL_NO_CORNER_CUTTING
    hexes = diagonal >= DIAGONAL_HEX
    slant = diagonal_step(diagonal)
    open_mark = pass_id
    closed_mark = pass_id + 1
    boxes = goal_boxes(targets, n, MAX_BOXES)
    n_boxes = boxes.shape[0]
    goal_nodes = np.empty(n, dtype=np.int64)
    for i in range(n):
        goal_nodes[i] = targets[i, 1] * width + targets[i, 0]
    order = np.argsort(goal_nodes, kind="mergesort")  # stable: the lowest index first
    sorted_nodes = goal_nodes[order]
    goal_order = index[:n][order]
    start = sy * width + sx
    h0 = nearest_box(heuristic, sx, sy, boxes, n_boxes)
    g[start] = 0.0
    parent[start] = start
    stamp[start] = open_mark
    size = heap_push(heap_nodes, heap_f, heap_h, heap_pos, 0, start, h0 * weight, h0)
    best = start
    best_h = h0
    expanded = 0
    while size > 0:
        node, size = heap_pop(heap_nodes, heap_f, heap_h, heap_pos, size)
        y = node // width
        x = node - y * width
        h_node = nearest_box(heuristic, x, y, boxes, n_boxes)
        if h_node == 0.0:
            found = _goal_at(sorted_nodes, goal_order, node)
            if found >= 0:
                return SEARCH_FOUND, node, found, expanded
        if max_expansions > 0 and expanded >= max_expansions:
            return SEARCH_BUDGET, best, _nearest_goal(targets, index, n, heuristic, best, width), expanded
        stamp[node] = closed_mark
        expanded += 1
        if h_node < best_h:
            best_h = h_node
            best = node
        g_node = g[node]
        for d in range(n_dirs):
            nx, ny = step_to(x, y, d)
            # moves.legal written out: the inlined call ran slower in these loops (bench/queries.py).
            if nx < 0 or ny < 0 or nx >= width or ny >= height or passable[ny, nx] == 0:
                continue
            if d >= 4 and corners and (passable[y, nx] == 0 or passable[ny, x] == 0):
                continue
            if d >= 4 and hexes and (hex_diagonals(diagonal, x, y) >> d) & 1 == 0:
                continue
            if use_heights != 0 and abs(heights[ny, nx] - heights[y, x]) > max_climb:
                continue
            neighbour = ny * width + nx
            mark = stamp[neighbour]
            if mark == closed_mark:
                continue
            step = slant if d >= 4 else 1.0
            if uniform == 0:
                step *= cost_table[cost_index[ny, nx]]
            g_new = g_node + step
            if mark == open_mark:
                if g_new < g[neighbour]:
                    g[neighbour] = g_new
                    parent[neighbour] = node
                    h = heap_h[heap_pos[neighbour]]
                    heap_decrease(heap_nodes, heap_f, heap_h, heap_pos, neighbour, g_new + h * weight, h)
            else:
                stamp[neighbour] = open_mark
                g[neighbour] = g_new
                parent[neighbour] = node
                h = nearest_box(heuristic, nx, ny, boxes, n_boxes)
                size = heap_push(heap_nodes, heap_f, heap_h, heap_pos, size, neighbour, g_new + h * weight, h)
    return SEARCH_NO_PATH, best, _nearest_goal(targets, index, n, heuristic, best, width), expanded


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def astar_back(passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, sx, sy, targets, n,
               diagonal, heuristic, weight, max_expansions, g, parent, stamp, pass_id, heap_nodes, heap_keys, heap_pos):
    """A* from the first ``n`` rows of ``targets`` (int (K, 2) x, y, each passable) at
    once, back to (sx, sy) (passable). Arguments and workspace as
    :func:`pathserver.core.astar.astar`, with the ``key_*`` heap of
    :mod:`pathserver.core.heap` (one key a node); the estimate is the
    distance to the start.

    The key is ``g + h * weight``; on a uniform map ``g + h * weight * (1 + TIE)``, which
    also prefers the node nearer the start among equal ``g + h`` (see
    :mod:`pathserver.core.heap`: exact there, where costs are ``a + b * sqrt(2)``). With
    terrain costs, equal keys come in no set order.

    Returns (status, goal_node, expanded): SEARCH_FOUND with goal_node the target the
    cheapest path from the start leads to, ``parent`` leading from the start to it (each
    target is its own parent); else SEARCH_NO_PATH or SEARCH_BUDGET and -1."""
    height, width = passable.shape
    n_dirs = directions(diagonal)
    corners = diagonal == DIAGONAL_NO_CORNER_CUTTING
    hexes = diagonal >= DIAGONAL_HEX
    slant = diagonal_step(diagonal)
    open_mark = pass_id
    closed_mark = pass_id + 1
    h_scale = weight * (1.0 + TIE) if uniform != 0 else weight
    start = sy * width + sx
    size = 0
    for i in range(n):
        tx = targets[i, 0]
        ty = targets[i, 1]
        node = ty * width + tx
        if stamp[node] == open_mark:
            continue
        g[node] = 0.0
        parent[node] = node
        stamp[node] = open_mark
        heap_nodes[size] = node
        heap_keys[size] = heuristic_distance(heuristic, tx, ty, sx, sy) * h_scale
        key_sift_up(heap_nodes, heap_keys, heap_pos, size)
        size += 1
    expanded = 0
    while size > 0:
        node, size = key_pop(heap_nodes, heap_keys, heap_pos, size)
        if node == start:
            goal = start
            while parent[goal] != goal:
                goal = parent[goal]
            return SEARCH_FOUND, goal, expanded
        if max_expansions > 0 and expanded >= max_expansions:
            return SEARCH_BUDGET, -1, expanded
        stamp[node] = closed_mark
        expanded += 1
        y = node // width
        x = node - y * width
        g_node = g[node]
        # Every step into this cell, from any neighbour, pays this cell's cost.
        entry = 1.0 if uniform != 0 else cost_table[cost_index[y, x]]
        for d in range(n_dirs):
            nx, ny = step_to(x, y, d)
            # Legal both ways, the corner rule and the climb being symmetric.
            # moves.legal written out: the inlined call ran slower in these loops (bench/queries.py).
            if nx < 0 or ny < 0 or nx >= width or ny >= height or passable[ny, nx] == 0:
                continue
            if d >= 4 and corners and (passable[y, nx] == 0 or passable[ny, x] == 0):
                continue
            if d >= 4 and hexes and (hex_diagonals(diagonal, x, y) >> d) & 1 == 0:
                continue
            if use_heights != 0 and abs(heights[ny, nx] - heights[y, x]) > max_climb:
                continue
            neighbour = ny * width + nx
            mark = stamp[neighbour]
            if mark == closed_mark:
                continue
            g_new = g_node + (slant if d >= 4 else 1.0) * entry
            if mark == open_mark:
                if g_new < g[neighbour]:
                    g[neighbour] = g_new
                    parent[neighbour] = node
                    at = heap_pos[neighbour]
                    heap_keys[at] = g_new + heuristic_distance(heuristic, nx, ny, sx, sy) * h_scale
                    key_sift_up(heap_nodes, heap_keys, heap_pos, at)
            else:
                stamp[neighbour] = open_mark
                g[neighbour] = g_new
                parent[neighbour] = node
                heap_nodes[size] = neighbour
                heap_keys[size] = g_new + heuristic_distance(heuristic, nx, ny, sx, sy) * h_scale
                key_sift_up(heap_nodes, heap_keys, heap_pos, size)
                size += 1
    return SEARCH_NO_PATH, -1, expanded


@njit(cache=True, nogil=True)
def trace_forward(parent, width, start):
    """The cells from ``start`` following ``parent`` to a node that is its own parent, as
    int32 (n, 2) x, y, both ends included (the path :func:`astar_back` found)."""
    count = 1
    node = start
    while parent[node] != node:
        node = parent[node]
        count += 1
    path = np.empty((count, 2), dtype=np.int32)
    node = start
    for i in range(count):
        y = node // width
        path[i, 0] = node - y * width
        path[i, 1] = y
        node = parent[node]
    return path


@njit(cache=True, nogil=True)
def _goal_of(targets, index, n, width, node):
    """The index of the goal at ``node`` among the first ``n`` ``targets`` (``index``:
    their goal indices; the lowest of equal ones)."""
    order = np.argsort(targets[:n, 1] * width + targets[:n, 0], kind="mergesort")
    return _goal_at(targets[:n, 1][order] * width + targets[:n, 0][order], index[:n][order], node)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _nearest_goal(targets, index, n, heuristic, node, width):
    y = node // width
    x = node - y * width
    best = np.inf
    chosen = -1
    for i in range(n):
        d = heuristic_distance(heuristic, x, y, targets[i, 0], targets[i, 1])
        if d < best or (d == best and index[i] < chosen):
            best = d
            chosen = index[i]
    return chosen


@njit(cache=True, nogil=True)
def _no_points():
    return np.empty((0, 2), dtype=np.int32)


@njit(cache=True, nogil=True)
def solve_goals(cells, comps, jump_table, cost_index, cost_table, heights, max_climb, sx, sy, goals,
                mode, weight, max_expansions, work_float, work_int, snapped, bound_rows, bounds):
    """One path from (sx, sy) to the cheapest reachable of ``goals`` (int (K, 2) x, y, K >=
    1, all in bounds). Arguments, ``mode`` and workspace as
    :func:`pathserver.core.query.solve`: with the algorithm bit set, the jump table built
    and no budget, the search back from the goals is JPS+ from all of them at once (with
    the goal bounds ``bound_rows``, ``bounds`` of ``cells``, or empty arrays for none);
    else A* (which avoided cells take: the caller clears the algorithm bit).

    Each goal the unit cannot stand on moves to the nearest cell it can (with the snap
    flag; else QUERY_GOAL_BLOCKED naming it); ``snapped`` (int32 (K, 2)) receives every
    goal after snapping. Goals outside the start's component are skipped; when none is
    left, allow_partial aims at the cell of the start's component nearest to any goal.

    Returns (status, flags, points, cost, length, expanded, sx, sy, goal): as ``solve``,
    and the index of the goal the path leads to (for QUERY_GOAL_BLOCKED the goal blocked;
    -1 when there is none). FLAG_GOAL_SNAPPED says that goal moved.
    """
    diagonal = (mode >> MODE_DIAGONAL) & DIAGONAL_MASK
    heuristic = (mode >> MODE_HEURISTIC) & HEURISTIC_MASK
    smooth = (mode >> MODE_SMOOTH) & 3
    snap = (mode >> MODE_SNAP) & 1
    allow_partial = (mode >> MODE_ALLOW_PARTIAL) & 1
    line_of_sight = (mode >> MODE_LINE_OF_SIGHT) & 1
    uniform = (mode >> MODE_UNIFORM) & 1
    use_heights = (mode >> MODE_USE_HEIGHTS) & 1
    passable = cells
    height, width = cells.shape
    pass_id = next_pass_id(work_int)
    g = work_float[0]
    parent = work_int[0]
    flags = 0
    radius = height if height > width else width
    k = goals.shape[0]
    if passable[sy, sx] == 0:
        if snap == 0:
            return QUERY_START_BLOCKED, flags, _no_points(), 0.0, 0.0, 0, sx, sy, -1
        found, nx, ny = nearest_with_label(cells, comps, sx, sy, 0, radius, diagonal)
        if found != 0:
            return QUERY_START_BLOCKED, flags, _no_points(), 0.0, 0.0, 0, sx, sy, -1
        sx = nx
        sy = ny
        flags |= FLAG_START_SNAPPED
    moved = np.zeros(k, dtype=np.bool_)
    start_label = component_at(cells, comps, sx, sy)
    # The goals in the start's component, as targets with their indices.
    targets = np.empty((k, 2), dtype=np.int64)
    index = np.empty(k, dtype=np.int64)
    n = 0
    for i in range(k):
        gx = goals[i, 0]
        gy = goals[i, 1]
        if passable[gy, gx] == 0:
            if snap == 0:
                return QUERY_GOAL_BLOCKED, flags, _no_points(), 0.0, 0.0, 0, sx, sy, i
            found, gx, gy = nearest_with_label(cells, comps, gx, gy, 0, radius, diagonal)
            moved[i] = True
        snapped[i, 0] = gx
        snapped[i, 1] = gy
        if component_at(cells, comps, gx, gy) == start_label:
            targets[n, 0] = gx
            targets[n, 1] = gy
            index[n] = i
            n += 1

    reached = QUERY_FOUND
    if n == 0:
        flags |= FLAG_OTHER_COMPONENT
        if allow_partial == 0:
            return QUERY_NO_PATH, flags, _no_points(), 0.0, 0.0, 0, sx, sy, -1
        # The start's cell nearest (Euclidean) to any goal; ties to the lowest index.
        best = -1
        chosen = -1
        for i in range(k):
            found, tx, ty = nearest_with_label(cells, comps, snapped[i, 0], snapped[i, 1], start_label, radius, diagonal)
            d = (tx - snapped[i, 0]) ** 2 + (ty - snapped[i, 1]) ** 2
            if found == 0 and (best < 0 or d < best):
                best = d
                chosen = i
                targets[0, 0] = tx
                targets[0, 1] = ty
        index[0] = chosen
        n = 1
        reached = QUERY_PARTIAL

    four = line_kind(diagonal)
    if line_of_sight != 0:
        # The straight walk to the goal nearest by the metric, when clear and of cost 1 a
        # cell, costs that distance: a lower bound on the cost to every goal.
        metric = HEURISTIC_MANHATTAN if four == 1 else HEURISTIC_OCTILE
        if diagonal >= DIAGONAL_HEX:
            metric = HEURISTIC_HEX + diagonal - DIAGONAL_HEX
        nearest = 0
        nearest_d = np.inf
        for i in range(n):
            d = heuristic_distance(metric, sx, sy, targets[i, 0], targets[i, 1])
            if d < nearest_d or (d == nearest_d and index[i] < index[nearest]):
                nearest_d = d
                nearest = i
        if line_is_optimal(sx, sy, targets[nearest, 0], targets[nearest, 1], four, passable, cost_index, cost_table,
                           uniform, heights, use_heights, max_climb, diagonal):
            line = straight_grid_path(sx, sy, targets[nearest, 0], targets[nearest, 1], four)
            chosen = index[nearest]
            if moved[chosen]:
                flags |= FLAG_GOAL_SNAPPED
            points = finish(
                line, passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, smooth
            )
            return (
                reached, flags | FLAG_LINE_OF_SIGHT, points, path_cost(line, cost_index, cost_table, uniform, diagonal),
                polyline_length(points, diagonal), 0, sx, sy, chosen,
            )

    start_node = sy * width + sx
    expanded = 0
    plus = ((mode >> MODE_ALGORITHM) & 1 == ALGORITHM_JPS and jump_table.shape[0] == height * width
            and work_float.shape[1] > height * width and max_expansions == 0)
    if plus:
        sources = work_int[1, :n]
        for i in range(n):
            sources[i] = targets[i, 1] * width + targets[i, 0]
        # Back from the goals, the start is the search's goal: the moves cost the same both
        # ways, so the bounds rule out what they do forward.
        status, goal_node, expanded = jps_plus(
            passable, jump_table, sx, sy, sx, sy, weight, 0, work_float, pass_id, sources, bound_rows, bounds,
            None, None,  # no overlay
        )
        if status == SEARCH_FOUND:
            # The links lead from the start back to the goal the search came from.
            root = jump_root(work_float, start_node)
            chosen = _goal_of(targets, index, n, width, root)
            if moved[chosen]:
                flags |= FLAG_GOAL_SNAPPED
            straight, diagonals = jump_path_steps(work_float, width, root, start_node)
            count = straight + diagonals + 1
            path = np.empty((count, 2), dtype=np.int32)
            trace_jumps_into(path, work_float, width, root, start_node, count)
            points = finish(
                path[::-1].copy(), passable, cost_index, cost_table, uniform, heights, use_heights, max_climb,
                diagonal, smooth,
            )
            cost = jump_cost(work_float, start_node)
            return reached, flags, points, cost, polyline_length(points, diagonal), expanded, sx, sy, chosen
        pass_id = next_pass_id(work_int)  # A* takes it from here (its stamps are its own)
    status, goal_node, more = astar_back(
        passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, sx, sy, targets, n,
        diagonal, heuristic, weight, max_expansions, g, parent, work_int[3], pass_id, work_int[1],
        work_float[1], work_int[2],
    )
    expanded += more
    if status == SEARCH_FOUND:
        chosen = _goal_of(targets, index, n, width, goal_node)
        if moved[chosen]:
            flags |= FLAG_GOAL_SNAPPED
        path = trace_forward(parent, width, start_node)
        points = finish(
            path, passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, smooth
        )
        return reached, flags, points, g[start_node], polyline_length(points, diagonal), expanded, sx, sy, chosen
    if status == SEARCH_BUDGET:
        flags |= FLAG_BUDGET_HIT
    if allow_partial == 0:
        if status == SEARCH_BUDGET:
            return QUERY_SEARCH_LIMIT, flags, _no_points(), 0.0, 0.0, expanded, sx, sy, -1
        return QUERY_NO_PATH, flags, _no_points(), 0.0, 0.0, expanded, sx, sy, -1
    # No goal reached: forwards, for the closed cell nearest a goal.
    pass_id = next_pass_id(work_int)
    status, end, chosen, more = astar_goals(
        passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, sx, sy, targets, index, n,
        diagonal, heuristic, weight, max_expansions, g, parent, work_int[3], pass_id, work_int[1],
        work_float[1], work_float[2], work_int[2],
    )
    expanded += more
    if chosen >= 0 and moved[chosen]:
        flags |= FLAG_GOAL_SNAPPED
    if status != SEARCH_FOUND:
        reached = QUERY_PARTIAL
    path = trace_path(parent, width, start_node, end)
    points = finish(
        path, passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, smooth
    )
    return (
        reached, flags, points, g[end] if end != start_node else 0.0,
        polyline_length(points, diagonal), expanded, sx, sy, chosen,
    )


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def snap_goals(cells, comps, points, snap, out, diagonal):
    """Each of ``points`` (int (K, 2) x, y, in bounds) where the unit can stand, or with
    ``snap`` 1 moved to the nearest cell where it can (by ``diagonal``'s metric), into ``out`` (int64 (K, 2));
    ``(-1, -1)`` for a point it cannot be placed on (blocked without ``snap``; no cell
    left at all with it). Returns the count placed."""
    height, width = cells.shape
    radius = height if height > width else width
    placed = 0
    for i in range(points.shape[0]):
        x = points[i, 0]
        y = points[i, 1]
        if cells[y, x] == 0:
            found = 1
            if snap != 0:
                found, x, y = nearest_with_label(cells, comps, x, y, 0, radius, diagonal)
            if found != 0:
                x = -1
                y = -1
        out[i, 0] = x
        out[i, 1] = y
        if x >= 0:
            placed += 1
    return placed
