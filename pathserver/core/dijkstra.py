"""Dijkstra over the unit's grid: the cells reachable within a budget (:func:`reach`,
forward from one start) and the distance field (:func:`field`, :func:`field_whole`: the
cost to the nearest of many goals, searched backwards from all of them at once).

The graph is find_path's: 8 moves (``diagonal`` decides which diagonals exist), entering a
cell costs the step's length times its terrain cost ``cost_table[cost_index[y, x]]``
(read only when ``uniform`` is 0), steps climbing more than ``max_climb`` are blocked when
``use_heights`` is 1. Arguments of those names are as in :func:`pathserver.core.astar.astar`.
A field's value is exactly the cost of the cheapest path from that cell. Its queue is a
ring of unit-wide buckets, or past :data:`MAX_BUCKETS` a binary heap (why, and why
:func:`field_whole` works in its output array: docs/design.md, "The distance field").

Workspace (per thread, never cleared between searches: ``stamp`` tells which entries this
search wrote): ``work_float`` float64 (3, N) and ``work_int`` int32 (4, N + 1), N >= H * W,
as :func:`pathserver.core.query.solve` takes them. Rows: g = ``work_float[0]``, heap keys
``work_float[1]``; ``work_int[0]`` the settle order (reach), ``work_int[1]`` / ``[2]`` the
heap (nodes, positions), ``work_int[3]`` the stamps.
"""

import math

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.astar import next_pass_id
from pathserver.core.avoid import anchor_box
from pathserver.core.components import component_at
from pathserver.core.heap import key_pop, key_sift_up
from pathserver.core.moves import SQRT2, diagonal_step, directions, entry_cost, hex_diagonals, legal, step_to
from pathserver.core.status import DIAGONAL_HEX, DIAGONAL_NO_CORNER_CUTTING

#: Above this many buckets in the ring (terrain costs above ~700), the field uses a heap.
MAX_BUCKETS = 1024
#: Costs within this share of the limit count as within it (sums of sqrt(2) in another
#: order may differ in the last bits).
TOLERANCE = 1e-9


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def reach(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, sx, sy, budget,
          work_float, work_int):
    """Every cell the unit can reach from ``(sx, sy)`` (in bounds; the start need not be
    standable: it is where the unit is) for at most ``budget`` (within
    :data:`TOLERANCE`), cheapest first.

    Returns the count n: ``work_int[0, :n]`` holds the cells (node ids ``y * W + x``) in
    ascending cost, ``work_float[0][node]`` each one's cost. Ties come in no set order.
    """
    height, width = cells.shape
    n_dirs = directions(diagonal)
    corners = diagonal == DIAGONAL_NO_CORNER_CUTTING
    hexes = diagonal >= DIAGONAL_HEX
    slant = diagonal_step(diagonal)
    pass_id = next_pass_id(work_int)
    open_mark = pass_id
    closed_mark = pass_id + 1
    g = work_float[0]
    heap_keys = work_float[1]
    order = work_int[0]
    heap_nodes = work_int[1]
    heap_pos = work_int[2]
    stamp = work_int[3]
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
        for d in range(n_dirs):
            nx, ny = step_to(x, y, d)
            # moves.legal written out: the inlined call ran slower here (bench/queries.py, reachable).
            if nx < 0 or ny < 0 or nx >= width or ny >= height or cells[ny, nx] == 0:
                continue
            if d >= 4 and corners and (cells[y, nx] == 0 or cells[ny, x] == 0):
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
            g_new = g_node + step * entry_cost(cost_index, cost_table, uniform, nx, ny)
            if g_new > limit:
                continue
            if mark == open_mark:
                if g_new < g[neighbour]:
                    g[neighbour] = g_new
                    at = heap_pos[neighbour]
                    heap_keys[at] = g_new
                    key_sift_up(heap_nodes, heap_keys, heap_pos, at)
            else:
                stamp[neighbour] = open_mark
                g[neighbour] = g_new
                heap_nodes[size] = neighbour
                heap_keys[size] = g_new
                key_sift_up(heap_nodes, heap_keys, heap_pos, size)
                size += 1
    return count


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def ring_size(cost_table, uniform):
    """The buckets the field's ring needs (a power of two), or 0 past :data:`MAX_BUCKETS`."""
    highest = 1.0
    if uniform == 0:
        for c in cost_table:
            if c > highest:
                highest = c
    needed = math.ceil(SQRT2 * highest) + 2.0
    if needed > MAX_BUCKETS:
        return 0
    size = 4
    while size < needed:
        size *= 2
    return size


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _settle(out, value, x, y, rx0, ry0, rx1, ry1):
    # Returns 1 when (x, y) lies in the region (and was written).
    if rx0 <= x < rx1 and ry0 <= y < ry1:
        out[y - ry0, x - rx0] = value
        return 1
    return 0


@njit(cache=True, nogil=True)
def field(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, sources, max_cost,
          region, targets, out, work_float, work_int):
    """The distance field: for each cell, the cost of the cheapest path from it to the
    nearest source, up to ``max_cost`` (``inf`` for no limit, within :data:`TOLERANCE`).

    sources: int (K,) node ids ``y * W + x`` of the goals, each standable (repeats are
    fine). region: int (4,) ``x0, y0, x1, y1`` (ends excluded), the window written to
    ``out``: float64 (y1 - y0, x1 - x0), filled with ``inf`` by the caller; cells never
    reached keep it. The search still runs over the whole map (values stay exact); it stops
    once ``targets`` cells of the region are settled (the caller's count of the cells that
    can reach a source, from the components; -1: no early stop).

    Returns the count of cells settled. Afterwards ``work_float[0]`` holds the field for
    every cell whose stamp (``work_int[3]``) is the search's closed mark, ``work_int[3, N]
    + 1``; :func:`leave_costs` reads it so.
    """
    ring = ring_size(cost_table, uniform)
    if ring > 0:
        settled = _field_buckets(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal,
                                 sources, max_cost, region, targets, out, work_float, work_int, ring)
        if settled >= 0:
            return settled
    return _field_heap(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, sources,
                       max_cost, region, targets, out, work_float, work_int)


@njit(cache=True, nogil=True)
def _field_buckets(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, sources,
                   max_cost, region, targets, out, work_float, work_int, ring):
    # field() with the ring of buckets; -1 when a bucket overflows (then the heap runs).
    height, width = cells.shape
    n_dirs = directions(diagonal)
    corners = diagonal == DIAGONAL_NO_CORNER_CUTTING
    hexes = diagonal >= DIAGONAL_HEX
    slant = diagonal_step(diagonal)
    pass_id = next_pass_id(work_int)
    open_mark = pass_id
    closed_mark = pass_id + 1
    g = work_float[0]
    stamp = work_int[3]
    mask = ring - 1
    # Each bucket an array filled in order and read in order (breadth-first within a
    # bucket keeps neighbouring cells close in time); a cell improved after it was queued
    # is queued again, its stale entry skipped as closed when met. A quarter of the map a
    # bucket is far more than a wavefront holds; should one ever fill, the heap takes over
    # (growing the arrays here, in the loop, was slower: bench/queries.py, distance_field).
    capacity = max(4096, (height * width) >> 2, sources.shape[0])
    buckets = np.empty((ring, capacity), dtype=np.int32)
    sizes = np.zeros(ring, dtype=np.int64)
    limit = max_cost + TOLERANCE * max(1.0, max_cost)
    rx0, ry0, rx1, ry1 = region[0], region[1], region[2], region[3]
    waiting = 0
    for k in range(sources.shape[0]):
        node = sources[k]
        if stamp[node] == open_mark:
            continue
        stamp[node] = open_mark
        g[node] = 0.0
        buckets[0, sizes[0]] = node
        sizes[0] += 1
        waiting += 1
    settled = 0
    in_region = 0
    current = 0
    while waiting > 0:
        b = current & mask
        i = 0
        while i < sizes[b]:
            node = buckets[b, i]
            i += 1
            waiting -= 1
            if stamp[node] == closed_mark:
                continue
            stamp[node] = closed_mark
            settled += 1
            y = node // width
            x = node - y * width
            g_node = g[node]
            if rx0 <= x < rx1 and ry0 <= y < ry1:
                out[y - ry0, x - rx0] = g_node
                in_region += 1
                if in_region == targets:
                    return settled
            # The step into this cell, from any neighbour, pays this cell's cost.
            entry = 1.0 if uniform != 0 else cost_table[cost_index[y, x]]
            for d in range(n_dirs):
                nx, ny = step_to(x, y, d)
                # Legal both ways, the corner rule and the climb being symmetric.
                # moves.legal written out: the inlined call ran slower (bench/queries.py, distance_field).
                if nx < 0 or ny < 0 or nx >= width or ny >= height or cells[ny, nx] == 0:
                    continue
                if d >= 4 and corners and (cells[y, nx] == 0 or cells[ny, x] == 0):
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
                if g_new > limit or (mark == open_mark and g_new >= g[neighbour]):
                    continue
                stamp[neighbour] = open_mark
                g[neighbour] = g_new
                nb = np.int64(g_new) & mask
                if sizes[nb] == capacity:
                    return -1
                buckets[nb, sizes[nb]] = neighbour
                sizes[nb] += 1
                waiting += 1
        sizes[b] = 0
        current += 1
    return settled


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _lower(g, steps, record, buckets, sizes, mask, node, neighbour, g_new):
    """field_whole's relaxation: ``neighbour`` at ``g_new`` through ``node`` if that is
    lower, queued in its bucket. Returns 1 if queued, 0 if not lower, -1 if the bucket is
    full."""
    if g_new >= g[neighbour]:
        return 0
    g[neighbour] = g_new
    if record != 0:
        steps[neighbour] = node
    nb = np.int64(g_new) & mask
    if sizes[nb] == buckets.shape[1]:
        return -1
    buckets[nb, sizes[nb]] = neighbour
    sizes[nb] += 1
    return 1


@njit(cache=True, nogil=True)
def field_whole(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, sources, ring,
                out, closed, steps, record):
    """:func:`field` over the whole map with no cost limit, in less memory traffic: the
    field is computed in ``out`` itself (float64 (H, W), filled with inf by the caller)
    and ``closed`` (uint8 (H * W,), zeros) marks settled cells, instead of the workspace's
    values and stamps written to ``out`` as they settle. ``ring``: :func:`ring_size`, > 0.

    steps: int32 (H * W,) (with ``record`` 1; else any placeholder): receives, for each
    cell reached, the neighbour its value came through (a best step towards a goal, as
    :func:`pathserver.core.steer.downhill` picks one, maybe another of equal cost) and -1
    on the goals; cells not reached keep what they held.

    Returns the count settled, or -1 when a bucket overflows (then use :func:`field`)."""
    height, width = cells.shape
    capacity = max(4096, (height * width) >> 2, sources.shape[0])
    buckets = np.empty((ring, capacity), dtype=np.int32)
    sizes = np.zeros(ring, dtype=np.int64)
    return _field_whole(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, sources,
                        out.ravel(), closed, steps, record, buckets, sizes)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _field_whole(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, sources, g,
                 closed, steps, record, buckets, sizes):
    # field_whole's search in its ``out`` (g: flattened) and the ring of buckets it
    # allocated (empty: sizes all 0).
    height, width = cells.shape
    n_dirs = directions(diagonal)
    corners = diagonal == DIAGONAL_NO_CORNER_CUTTING
    hexes = diagonal >= DIAGONAL_HEX
    slant = diagonal_step(diagonal)
    mask = buckets.shape[0] - 1
    waiting = 0
    for k in range(sources.shape[0]):
        node = sources[k]
        if g[node] == 0.0:
            continue
        g[node] = 0.0
        if record != 0:
            steps[node] = -1
        buckets[0, sizes[0]] = node
        sizes[0] += 1
        waiting += 1
    settled = 0
    current = 0
    # The common grid (uniform cost, 8 moves without cutting corners, no climbs): away from
    # the border, the eight neighbours' cells read once each, no bounds to test. A copy of
    # the general loop below, written out for speed (bench/queries.py, distance_field).
    plain = uniform != 0 and corners and use_heights == 0 and n_dirs == 8
    while waiting > 0:
        b = current & mask
        i = 0
        while i < sizes[b]:
            node = buckets[b, i]
            i += 1
            waiting -= 1
            if closed[node] != 0:
                continue
            closed[node] = 1
            settled += 1
            y = node // width
            x = node - y * width
            g_node = g[node]
            if plain and 0 < x < width - 1 and 0 < y < height - 1:
                east = cells[y, x + 1] != 0
                south = cells[y + 1, x] != 0
                west = cells[y, x - 1] != 0
                north = cells[y - 1, x] != 0
                # step_to's directions: E, S, W, N, then SE, SW, NW, NE.
                free = (east, south, west, north, south and east and cells[y + 1, x + 1] != 0,
                        south and west and cells[y + 1, x - 1] != 0, north and west and cells[y - 1, x - 1] != 0,
                        north and east and cells[y - 1, x + 1] != 0)
                offsets = (1, width, -1, -width, width + 1, width - 1, -width - 1, 1 - width)
                for d in range(8):
                    if free[d]:
                        queued = _lower(g, steps, record, buckets, sizes, mask, node, node + offsets[d],
                                        g_node + (slant if d >= 4 else 1.0))
                        if queued < 0:
                            return -1
                        waiting += queued
                continue
            entry = 1.0 if uniform != 0 else cost_table[cost_index[y, x]]
            for d in range(n_dirs):
                nx, ny = step_to(x, y, d)
                # moves.legal written out, as in field: the inlined call ran slower (bench/queries.py).
                if nx < 0 or ny < 0 or nx >= width or ny >= height or cells[ny, nx] == 0:
                    continue
                if d >= 4 and corners and (cells[y, nx] == 0 or cells[ny, x] == 0):
                    continue
                if d >= 4 and hexes and (hex_diagonals(diagonal, x, y) >> d) & 1 == 0:
                    continue
                if use_heights != 0 and abs(heights[ny, nx] - heights[y, x]) > max_climb:
                    continue
                # A settled cell's value is never beaten: no need to ask if it is closed.
                queued = _lower(g, steps, record, buckets, sizes, mask, node, ny * width + nx,
                                g_node + (slant if d >= 4 else 1.0) * entry)
                if queued < 0:
                    return -1
                waiting += queued
        sizes[b] = 0
        current += 1
    return settled


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _field_heap(cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal, sources,
                max_cost, region, targets, out, work_float, work_int):
    # field() with a binary heap, for steep cost tables.
    height, width = cells.shape
    n_dirs = directions(diagonal)
    corners = diagonal == DIAGONAL_NO_CORNER_CUTTING
    hexes = diagonal >= DIAGONAL_HEX
    slant = diagonal_step(diagonal)
    pass_id = next_pass_id(work_int)
    open_mark = pass_id
    closed_mark = pass_id + 1
    g = work_float[0]
    heap_keys = work_float[1]
    heap_nodes = work_int[1]
    heap_pos = work_int[2]
    stamp = work_int[3]
    limit = max_cost + TOLERANCE * max(1.0, max_cost)
    rx0, ry0, rx1, ry1 = region[0], region[1], region[2], region[3]
    size = 0
    for k in range(sources.shape[0]):
        node = sources[k]
        if stamp[node] == open_mark:
            continue
        stamp[node] = open_mark
        g[node] = 0.0
        heap_nodes[size] = node
        heap_keys[size] = 0.0
        key_sift_up(heap_nodes, heap_keys, heap_pos, size)
        size += 1
    settled = 0
    in_region = 0
    while size > 0:
        node, size = key_pop(heap_nodes, heap_keys, heap_pos, size)
        stamp[node] = closed_mark
        settled += 1
        y = node // width
        x = node - y * width
        g_node = g[node]
        in_region += _settle(out, g_node, x, y, rx0, ry0, rx1, ry1)
        if in_region == targets:
            break
        entry = entry_cost(cost_index, cost_table, uniform, x, y)
        for d in range(n_dirs):
            nx, ny = step_to(x, y, d)
            # moves.legal written out, as in _field_buckets, where the inlined call ran slower (bench/queries.py).
            if nx < 0 or ny < 0 or nx >= width or ny >= height or cells[ny, nx] == 0:
                continue
            if d >= 4 and corners and (cells[y, nx] == 0 or cells[ny, x] == 0):
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
            if g_new > limit:
                continue
            if mark == open_mark:
                if g_new < g[neighbour]:
                    g[neighbour] = g_new
                    at = heap_pos[neighbour]
                    heap_keys[at] = g_new
                    key_sift_up(heap_nodes, heap_keys, heap_pos, at)
            else:
                stamp[neighbour] = open_mark
                g[neighbour] = g_new
                heap_nodes[size] = neighbour
                heap_keys[size] = g_new
                key_sift_up(heap_nodes, heap_keys, heap_pos, size)
                size += 1
    return settled


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def leave_costs(cells, source_cells, cost_index, cost_table, uniform, heights, use_heights, max_climb, diagonal,
                boxes, unit_w, unit_h, max_cost, region, out, g, marks, settled):
    """After a field on ``cells`` with avoided anchors cleared (``source_cells`` the
    unit's grid before, boxes the avoided cells as for
    :func:`pathserver.core.avoid.block_anchors`): the field on those anchors, which a unit
    may not enter but may leave, is the cheapest legal step to a settled neighbour plus
    that neighbour's value. The field's values are ``g`` (float64 (H * W,)), a cell's
    settled where ``marks[node] == settled``: after :func:`field` the workspace's
    ``work_float[0]``, ``work_int[3]`` and ``work_int[3, N] + 1``; after
    :func:`field_whole` its ``out`` (flattened), ``closed`` and 1. Writes ``out`` in the
    region as :func:`field` does. Returns the count written."""
    height, width = cells.shape
    n_dirs = directions(diagonal)
    slant = diagonal_step(diagonal)
    limit = max_cost + TOLERANCE * max(1.0, max_cost)
    rx0, ry0, rx1, ry1 = region[0], region[1], region[2], region[3]
    written = 0
    for k in range(boxes.shape[0]):
        ax0, ay0, ax1, ay1 = anchor_box(boxes[k, 0], boxes[k, 1], boxes[k, 2], boxes[k, 3], unit_w, unit_h,
                                        width, height)
        for y in range(max(ay0, ry0), min(ay1, ry1)):
            for x in range(max(ax0, rx0), min(ax1, rx1)):
                if source_cells[y, x] == 0 or cells[y, x] != 0:
                    continue
                best = np.inf
                for d in range(n_dirs):
                    nx, ny = step_to(x, y, d)
                    if not legal(cells, heights, use_heights, max_climb, diagonal, x, y, nx, ny, d):
                        continue
                    neighbour = ny * width + nx
                    if marks[neighbour] != settled:
                        continue
                    value = g[neighbour] + (slant if d >= 4 else 1.0) * entry_cost(
                        cost_index, cost_table, uniform, nx, ny
                    )
                    if value < best:
                        best = value
                if best <= limit:
                    out[y - ry0, x - rx0] = best
                    written += 1
    return written


@njit(cache=True, nogil=True)
def count_in_components(cells, comps, sources, region):
    """How many cells of ``region`` (int (4,) ``x0, y0, x1, y1``) lie in the component of
    one of ``sources`` (node ids): the cells a field's search must settle there, when
    nothing but the components cuts cells off."""
    width = cells.shape[1]
    labels = np.empty(sources.shape[0], dtype=np.int64)
    for k in range(sources.shape[0]):
        node = sources[k]
        y = node // width
        labels[k] = component_at(cells, comps, node - y * width, y)
    labels = np.unique(labels)
    count = 0
    for y in range(region[1], region[3]):
        for x in range(region[0], region[2]):
            if cells[y, x] == 0:
                continue
            label = component_at(cells, comps, x, y)
            at = np.searchsorted(labels, label)
            if at < labels.shape[0] and labels[at] == label:
                count += 1
    return count
