"""A* over a grid and its links (issue #35): ladders, teleporters, one-way drops, and the
floors they join (floors lie stacked in one grid, a blocked row between each two, so no
grid move crosses from one to the next).

A link is one move from its source cell to its target cell costing exactly its cost, not
multiplied by terrain. The links leaving each cell are kept in CSR form: ``link_first``
int64 (N + 1), the links of node ``v`` being ``link_to[link_first[v]:link_first[v + 1]]``
(node ids ``y * W + x``) with ``link_cost`` float64 and ``link_id`` int64 (the link's index
in the map's list, for the answer). A link is taken only when its target is standable in
``cells`` (so an avoided end, or a footprint that does not fit, bars it).

The estimate stays admissible and consistent with links of any cost, zero included: a
path either uses no link (it costs at least the grid estimate to the goal) or reaches the
source of its first link (at least the estimate to that source plus the link's cost), so
``h(n) = min(h_grid(n, goal), min over sources e of h_grid(n, e) + cost_e)``, ``cost_e`` the
cheapest link leaving ``e`` (``entries``). A node reached over link ``k`` (a CSR position)
has ``parent = -(k + 1)``; its predecessor is the link's source.

This loop is its own, not the square kernels' (:mod:`pathserver.core.astar`): maps without
links keep those untouched, so they lose nothing (bench/links.py).
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.astar import heuristic_distance, min_cost, next_pass_id
from pathserver.core.dijkstra import TOLERANCE
from pathserver.core.heap import key_pop, key_sift_up
from pathserver.core.moves import diagonal_step, entry_cost, hex_distance, move_bits
from pathserver.core.status import DIAGONAL_HEX, SEARCH_BUDGET, SEARCH_FOUND, SEARCH_NO_PATH
from pathserver.core.steer import NOWHERE

# Directions 0-3 straight, 4-7 diagonal, as pathserver.core.moves numbers them.
_STEP_X = (1, 0, -1, 0, 1, -1, -1, 1)
_STEP_Y = (0, 1, 0, -1, 1, 1, -1, -1)


#: With more goals than this, the search estimates 0 (Dijkstra): the estimate is the
#: cheapest over the goals, and its cost grows with them.
ESTIMATE_GOALS = 32
#: How a partial answer weighs a cell off the goal's floor: past any squared distance
#: on one floor (4096 x 4096 cells, hex or square).
_OTHER_FLOOR = np.int64(1 << 50)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _estimate(heuristic, cheapest, targets, width, entries, x, y):
    """The cost estimate from (x, y) to the nearest of ``targets`` with links (see the
    module docstring); 0 past ESTIMATE_GOALS goals."""
    if targets.shape[0] > ESTIMATE_GOALS:
        return 0.0
    best = np.inf
    for t in range(targets.shape[0]):
        ty = targets[t] // width
        to_goal = heuristic_distance(heuristic, x, y, targets[t] - ty * width, ty) * cheapest
        if to_goal < best:
            best = to_goal
    for e in range(entries.shape[0]):
        through = heuristic_distance(heuristic, x, y, int(entries[e, 0]), int(entries[e, 1])) * cheapest \
            + entries[e, 2]
        if through < best:
            best = through
    return best


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _is_target(targets, node):
    """Whether ``node`` is one of ``targets`` (sorted ascending): a binary search."""
    lo = 0
    hi = targets.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if targets[mid] < node:
            lo = mid + 1
        else:
            hi = mid
    return lo < targets.shape[0] and targets[lo] == node


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _nearness(diagonal, floor_rows, targets, width, x, y):
    """How near (x, y) lies to the nearest of ``targets``, smaller nearer: the squared
    distance to one on its floor (the hex distance on a hex map), else past every such."""
    best = _OTHER_FLOOR
    floor = y // floor_rows
    for t in range(targets.shape[0]):
        ty = targets[t] // width
        if ty // floor_rows != floor:
            continue
        tx = targets[t] - ty * width
        if diagonal >= DIAGONAL_HEX:
            d = np.int64(hex_distance(diagonal, x, y, tx, ty))
        else:
            d = np.int64((x - tx) * (x - tx) + (y - ty) * (y - ty))
        if d < best:
            best = d
    return best


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _grid_move(moves, d, x, y, width, heights, use_heights, max_climb):
    """``(node, nx, ny)``: the cell grid move ``d`` (0-7) from (x, y) enters; node -1
    when ``moves`` (:func:`move_bits`) lacks the move or its climb passes ``max_climb``."""
    if (moves >> d) & 1 == 0:
        return -1, x, y
    nx = x + _STEP_X[d]
    ny = y + _STEP_Y[d]
    if use_heights != 0 and abs(heights[ny, nx] - heights[y, x]) > max_climb:
        return -1, nx, ny
    return ny * width + nx, nx, ny


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def search_links(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, heuristic,
                 floor_rows, sx, sy, targets, max_expansions, track, link_first, link_to, link_cost, entries,
                 work_float, work_int):
    """A* from (sx, sy) (standable, or a cell the unit may leave) to the nearest of
    ``targets`` (int64 (G,) node ids ``y * W + x``, sorted, distinct, standable) over
    ``cells``' moves (``diagonal``'s rule, climbs above ``max_climb`` barred where
    ``use_heights``) and the links. floor_rows: the rows of a floor and its separator.
    track: 1 to keep the closed node nearest the goals (a partial answer's end: on a
    goal's floor first, then by distance). ``entries``, work_float (5, N) and work_int
    (4, N + 1) as :func:`astar_links`'. Returns (status, end, best, expanded): SEARCH_*,
    the goal reached, the nearest closed node (the start unless ``track``), expanded."""
    height, width = cells.shape
    flat = cells.reshape(-1)
    pass_id = next_pass_id(work_int)
    open_mark = pass_id
    closed_mark = pass_id + 1
    g = work_float[0]
    heap_keys = work_float[1]
    parent = work_int[0]
    heap_nodes = work_int[1]
    heap_pos = work_int[2]
    stamp = work_int[3]
    cheapest = min_cost(cost_table, uniform)
    slant = diagonal_step(diagonal)
    start = sy * width + sx
    g[start] = 0.0
    parent[start] = start
    stamp[start] = open_mark
    heap_nodes[0] = start
    heap_keys[0] = _estimate(heuristic, cheapest, targets, width, entries, sx, sy)
    heap_pos[start] = 0
    size = 1
    best = start
    best_near = _OTHER_FLOOR + 1
    expanded = 0
    while size > 0:
        node, size = key_pop(heap_nodes, heap_keys, heap_pos, size)
        if stamp[node] == closed_mark:
            continue
        if _is_target(targets, node):
            return SEARCH_FOUND, node, best, expanded
        if max_expansions > 0 and expanded >= max_expansions:
            return SEARCH_BUDGET, node, best, expanded
        stamp[node] = closed_mark
        expanded += 1
        y = node // width
        x = node - y * width
        if track != 0:
            near = _nearness(diagonal, floor_rows, targets, width, x, y)
            if near < best_near:
                best_near = near
                best = node
        g_node = g[node]
        moves = move_bits(flat, width, height, node, x, y, diagonal)
        # The grid's moves (d < 8), then the links leaving this cell.
        last = 8 + link_first[node + 1] - link_first[node]
        for d in range(last):
            if d < 8:
                neighbour, nx, ny = _grid_move(moves, d, x, y, width, heights, use_heights, max_climb)
                if neighbour < 0:
                    continue
                step = (slant if d >= 4 else 1.0) * entry_cost(cost_index, cost_table, uniform, nx, ny)
                via = node
            else:
                k = link_first[node] + d - 8
                neighbour = link_to[k]
                if flat[neighbour] == 0:
                    continue
                ny = neighbour // width
                nx = neighbour - ny * width
                step = link_cost[k]
                via = -(k + 1)
            mark = stamp[neighbour]
            if mark == closed_mark:
                continue
            g_new = g_node + step
            if mark == open_mark and g_new >= g[neighbour]:
                continue
            g[neighbour] = g_new
            parent[neighbour] = via
            key = g_new + _estimate(heuristic, cheapest, targets, width, entries, nx, ny)
            if mark == open_mark:
                at = heap_pos[neighbour]
                heap_keys[at] = key
                key_sift_up(heap_nodes, heap_keys, heap_pos, at)
            else:
                stamp[neighbour] = open_mark
                heap_nodes[size] = neighbour
                heap_keys[size] = key
                heap_pos[neighbour] = size
                key_sift_up(heap_nodes, heap_keys, heap_pos, size)
                size += 1
    return SEARCH_NO_PATH, best, best, expanded


@njit(cache=True, nogil=True)
def astar_links(cells, cost_index, cost_table, uniform, diagonal, heuristic, sx, sy, gx, gy, max_expansions,
                link_first, link_to, link_cost, entries, work_float, work_int):
    """A* from (sx, sy) to (gx, gy), both standable, over ``cells``' moves (``diagonal``'s
    rule: square or hex) and the links: :func:`search_links` to one goal, no climbs.
    ``entries``: float64 (E, 3), each link source's ``x, y`` and the cheapest link leaving
    it. work_float (5, N), work_int (4, N + 1): the workspace of
    :func:`pathserver.core.query.solve` (rows: g; keys; parent, heap nodes, heap
    positions, stamps). Returns (status, end node, expanded), SEARCH_* statuses, end the
    goal or (without a path) the start."""
    targets = np.full(1, gy * cells.shape[1] + gx, dtype=np.int64)
    no_heights = np.zeros((1, 1), dtype=np.float32)
    status, end, _, expanded = search_links(cells, cost_index, cost_table, uniform, no_heights, 0, 0.0, diagonal,
                                            heuristic, cells.shape[0] + 1, sx, sy, targets, max_expansions, 0,
                                            link_first, link_to, link_cost, entries, work_float, work_int)
    return status, end, expanded


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _source(link_first, k):
    """The node a CSR position ``k`` of ``link_first`` leaves from (a binary search)."""
    lo = 0
    hi = link_first.shape[0] - 1
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if link_first[mid] <= k:
            lo = mid
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def trace_links(parent, link_first, link_id, width, start, end):
    """The cells from ``start`` to ``end`` following :func:`astar_links`' parents, int32
    (n, 2) ``x, y`` with both ends, and the links taken, int64 (m, 2) ``[i, id]``: the move
    from cell ``i`` to cell ``i + 1`` is link ``id``."""
    count = 1
    taken = 0
    node = end
    while node != start:
        via = parent[node]
        if via < 0:
            taken += 1
            node = _source(link_first, -via - 1)
        else:
            node = via
        count += 1
    path = np.empty((count, 2), dtype=np.int32)
    links = np.empty((taken, 2), dtype=np.int64)
    i = count - 1
    j = taken - 1
    node = end
    while True:
        y = node // width
        path[i, 0] = node - y * width
        path[i, 1] = y
        if node == start:
            break
        via = parent[node]
        i -= 1
        if via < 0:
            links[j, 0] = i
            links[j, 1] = link_id[-via - 1]
            j -= 1
            node = _source(link_first, -via - 1)
        else:
            node = via
    return path, links


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _relax(g, stamp, heap_nodes, heap_keys, heap_pos, size, open_mark, closed_mark, limit, neighbour, g_new):
    """Dijkstra's step to ``neighbour`` at cost ``g_new``: skipped when it is closed, past
    ``limit`` or no cheaper than its open cost; else ``g`` lowered and the node pushed or
    sifted up in the key heap. Returns the heap's new size."""
    mark = stamp[neighbour]
    if mark == closed_mark or g_new > limit or (mark == open_mark and g_new >= g[neighbour]):
        return size
    g[neighbour] = g_new
    if mark == open_mark:
        at = heap_pos[neighbour]
        heap_keys[at] = g_new
        key_sift_up(heap_nodes, heap_keys, heap_pos, at)
        return size
    stamp[neighbour] = open_mark
    heap_nodes[size] = neighbour
    heap_keys[size] = g_new
    heap_pos[neighbour] = size
    key_sift_up(heap_nodes, heap_keys, heap_pos, size)
    return size + 1


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def reach_links(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, sx, sy, budget,
                link_first, link_to, link_cost, work_float, work_int):
    """Every cell the unit can reach from (sx, sy) over ``cells``' moves and the links
    for at most ``budget`` (and 1e-9 of it), cheapest first: as
    :func:`pathserver.core.dijkstra.reach`, the count n returned, ``work_int[0, :n]`` the
    nodes and ``work_float[0][node]`` their costs."""
    # dijkstra.reach's loop written out with links, so reach keeps no link test (bench/queries.py, reachable).
    height, width = cells.shape
    flat = cells.reshape(-1)
    pass_id = next_pass_id(work_int)
    open_mark = pass_id
    closed_mark = pass_id + 1
    g = work_float[0]
    heap_keys = work_float[1]
    order = work_int[0]
    heap_nodes = work_int[1]
    heap_pos = work_int[2]
    stamp = work_int[3]
    slant = diagonal_step(diagonal)
    limit = budget + TOLERANCE * max(1.0, budget)
    start = sy * width + sx
    g[start] = 0.0
    stamp[start] = open_mark
    heap_nodes[0] = start
    heap_keys[0] = 0.0
    heap_pos[start] = 0
    size = 1
    count = 0
    while size > 0:
        node, size = key_pop(heap_nodes, heap_keys, heap_pos, size)
        stamp[node] = closed_mark
        order[count] = node
        count += 1
        y = node // width
        x = node - y * width
        g_node = g[node]
        moves = move_bits(flat, width, height, node, x, y, diagonal)
        last = 8 + link_first[node + 1] - link_first[node]
        for d in range(last):
            if d < 8:
                neighbour, nx, ny = _grid_move(moves, d, x, y, width, heights, use_heights, max_climb)
                if neighbour < 0:
                    continue
                step = (slant if d >= 4 else 1.0) * entry_cost(cost_index, cost_table, uniform, nx, ny)
            else:
                k = link_first[node] + d - 8
                neighbour = link_to[k]
                if flat[neighbour] == 0:
                    continue
                step = link_cost[k]
            size = _relax(g, stamp, heap_nodes, heap_keys, heap_pos, size, open_mark, closed_mark, limit, neighbour,
                          g_node + step)
    return count


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def field_links(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, sources,
                max_cost, back_first, back_to, back_cost, out, work_float, work_int):
    """The distance field with links: Dijkstra back from every node of ``sources`` (int64,
    standable) at once over the reversed moves, stopped past ``max_cost`` (and 1e-9 of
    it). A grid move a -> b costs its step times b's terrain cost (the moves are
    symmetric, so b's moves are the cells that step into it); the links reversed, in CSR
    form (``back_first``, ``back_to``, ``back_cost``: the links entering each node, from
    their sources), let a source take its target's value plus the link's cost. Writes
    each settled node's cost into ``out`` (float64 (N,), the caller's inf elsewhere);
    ``work_float[0]`` and the stamps ``work_int[3]`` as :func:`pathserver.core.dijkstra.
    field` leaves them (settled: ``work_int[3, N] + 1``). Returns the count settled."""
    # dijkstra.field's loop written out with links, so field keeps no link test (bench/queries.py, distance_field).
    height, width = cells.shape
    flat = cells.reshape(-1)
    pass_id = next_pass_id(work_int)
    open_mark = pass_id
    closed_mark = pass_id + 1
    g = work_float[0]
    heap_keys = work_float[1]
    heap_nodes = work_int[1]
    heap_pos = work_int[2]
    stamp = work_int[3]
    slant = diagonal_step(diagonal)
    limit = max_cost + TOLERANCE * max(1.0, max_cost)
    size = 0
    for k in range(sources.shape[0]):
        node = sources[k]
        if stamp[node] == open_mark:
            continue
        stamp[node] = open_mark
        g[node] = 0.0
        heap_nodes[size] = node
        heap_keys[size] = 0.0
        heap_pos[node] = size
        key_sift_up(heap_nodes, heap_keys, heap_pos, size)
        size += 1
    settled = 0
    while size > 0:
        node, size = key_pop(heap_nodes, heap_keys, heap_pos, size)
        stamp[node] = closed_mark
        settled += 1
        g_node = g[node]
        out[node] = g_node
        y = node // width
        x = node - y * width
        entry = entry_cost(cost_index, cost_table, uniform, x, y)
        moves = move_bits(flat, width, height, node, x, y, diagonal)
        last = 8 + back_first[node + 1] - back_first[node]
        for d in range(last):
            if d < 8:
                neighbour, nx, ny = _grid_move(moves, d, x, y, width, heights, use_heights, max_climb)
                if neighbour < 0:
                    continue
                step = (slant if d >= 4 else 1.0) * entry
            else:
                k = back_first[node] + d - 8
                neighbour = back_to[k]
                if flat[neighbour] == 0:
                    continue
                step = back_cost[k]
            size = _relax(g, stamp, heap_nodes, heap_keys, heap_pos, size, open_mark, closed_mark, limit, neighbour,
                          g_node + step)
    return settled


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def link_steps(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, field, goals,
               link_first, link_to, link_cost, sources, following, jumps):
    """Where the cheapest way from a link's source is a link, on a field with links (float64
    (H, W)): for each node of ``sources`` (int64, the links' sources) that is not one of
    ``goals`` (sorted node ids) and whose cheapest link (its cost plus the field at its
    target) beats every grid move strictly, ``jumps[source]`` (int64 (N,)) becomes the
    link's target and ``following[source]`` NOWHERE (a descent stops there: steering never
    looks across a link). Returns the count of such sources."""
    height, width = cells.shape
    flat = cells.reshape(-1)
    values = field.reshape(-1)
    slant = diagonal_step(diagonal)
    count = 0
    for i in range(sources.shape[0]):
        node = sources[i]
        here = values[node]
        if here == np.inf or _is_target(goals, node):
            continue
        best_link = np.inf
        target = -1
        for k in range(link_first[node], link_first[node + 1]):
            there = link_to[k]
            if flat[there] == 0:
                continue
            value = values[there] + link_cost[k]
            if value < best_link:
                best_link = value
                target = there
        if target < 0:
            continue
        y = node // width
        x = node - y * width
        best_grid = np.inf
        moves = move_bits(flat, width, height, node, x, y, diagonal)
        for d in range(8):
            if (moves >> d) & 1 == 0:
                continue
            nx = x + _STEP_X[d]
            ny = y + _STEP_Y[d]
            if use_heights != 0 and abs(heights[ny, nx] - heights[y, x]) > max_climb:
                continue
            value = field[ny, nx] + (slant if d >= 4 else 1.0) * entry_cost(cost_index, cost_table, uniform, nx, ny)
            if value < best_grid:
                best_grid = value
        if best_link < best_grid:
            jumps[node] = target
            following[node] = NOWHERE
            count += 1
    return count
