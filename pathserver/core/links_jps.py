"""JPS+ over a grid and its links (issue #35): :mod:`pathserver.core.jpsplus`' search
with the sources of the links as jump points, on the grids JPS+ takes (uniform cost,
8-connected, no corner cutting), exact with links of any cost, zero included.

The table is :func:`pathserver.core.jpsplus.jump_table_stops` with every link source a
stop; a node that is a link source also takes its links (``link_first``, ``link_to``,
``link_cost``: the CSR form of :mod:`pathserver.core.links`), and a node reached over a
link tries all eight directions. The estimate is the least ``octile(n, p) + D(p)`` over
the exits ``p`` of the node's component (:func:`link_exits`). Records and heap are
:func:`pathserver.core.jpsplus.jps_plus`' (a node reached over a link marked
:data:`OVER_LINK`, its link's CSR position in ``work_int[0]``). :func:`trace_link_jumps`
lays the cells and the links taken; :func:`path_links` does all of it, and the smoothing,
in one call. Why the estimate is admissible and consistent, and how goal bounds prune:
docs/design.md, "Links and floors: the search".
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.astar import leg_steps, next_pass_id, octile
from pathserver.core.components import BLOCK, BLOCK_SHIFT
from pathserver.core.heap import TIE
from pathserver.core.jpsplus import (
    DIRECTION_X,
    DIRECTION_Y,
    LINK_MASK,
    LINK_SHIFT,
    SAT,
    SAT_STEP,
    is_free,
    jump_cost,
    stop_steps,
    strided_pop,
    strided_push,
    table_distance,
    table_within,
)
from pathserver.core.lines import finish_in_place, polyline_length
from pathserver.core.moves import SQRT2
from pathserver.core.status import DIAGONAL_NO_CORNER_CUTTING, SEARCH_BUDGET, SEARCH_FOUND, SEARCH_NO_PATH

#: The arrival direction of a node reached over a link (0-7: a grid direction, 8: the start).
OVER_LINK = 9
# What a uniform-cost grid without heights passes for costs and heights (never read).
_UNIFORM_INDEX = np.zeros((1, 1), dtype=np.uint8)
_UNIFORM_TABLE = np.ones(1, dtype=np.float64)
_NO_HEIGHTS = np.zeros((1, 1), dtype=np.float32)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _label(cells, comps, per_row, width, node):
    """The global component id of the standable ``node`` (see :mod:`pathserver.core.components`)."""
    y = node // width
    x = node - y * width
    return comps[comps[(y >> BLOCK_SHIFT) * per_row + (x >> BLOCK_SHIFT)] + cells[node] - 1]


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _group(groups, label):
    """The row of ``groups`` (int64 (G, 5): label first, by label, see :func:`link_exits`) of
    ``label``, -1 for none."""
    lo = 0
    hi = groups.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if groups[mid, 0] < label:
            lo = mid + 1
        else:
            hi = mid
    if lo < groups.shape[0] and groups[lo, 0] == label:
        return lo
    return -1


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _near(exits, first, end, x, y):
    """The estimate at (x, y) over the exits ``first..end - 1`` of its component (one at
    x = -1: the rest of them, its D alone), cheapest D first: none past one whose D
    alone is no less than the best so far can do better."""
    best = np.inf
    for i in range(first, end):
        if exits[i, 2] >= best:
            break
        if exits[i, 0] < 0.0:
            h = exits[i, 2]
        else:
            h = octile(x, y, exits[i, 0], exits[i, 1]) + exits[i, 2]
        if h < best:
            best = h
    return best


@njit(cache=True, nogil=True)
def link_rows(cells, comps, sources, link_first, link_to, link_cost):
    """What :func:`link_exits` reads of the links, whatever the goal: ``(source_label,
    into, leaves, ends)``. source_label int64 (E,): each source's component, 0 where the
    unit cannot stand. The links usable (both ends standable), by the component they lead
    into: into int64 (R,) that component (ascending), leaves int64 (R,) the link's source
    (its index in ``sources``), ends float64 (R, 3) its target's ``x, y`` and its cost.

    cells, comps: the unit's block-local components. sources: int64 (E,), the nodes
    ``y * W + x`` links leave (each once); link_first, link_to, link_cost: the links' CSR
    form (:mod:`pathserver.core.links`)."""
    height, width = cells.shape
    flat = cells.reshape(-1)
    per_row = (width + BLOCK - 1) >> BLOCK_SHIFT
    count = sources.shape[0]
    source_label = np.zeros(count, dtype=np.int64)
    rows = 0
    for i in range(count):
        node = sources[i]
        if flat[node] != 0:
            source_label[i] = _label(flat, comps, per_row, width, node)
            for j in range(link_first[node], link_first[node + 1]):
                if flat[link_to[j]] != 0:
                    rows += 1
    into = np.empty(rows, dtype=np.int64)
    leaves = np.empty(rows, dtype=np.int64)
    ends = np.empty((rows, 3), dtype=np.float64)
    r = 0
    for i in range(count):
        node = sources[i]
        if source_label[i] == 0:
            continue
        for j in range(link_first[node], link_first[node + 1]):
            t = link_to[j]
            if flat[t] == 0:
                continue
            into[r] = _label(flat, comps, per_row, width, t)
            leaves[r] = i
            ends[r, 1] = t // width
            ends[r, 0] = t - (t // width) * width
            ends[r, 2] = link_cost[j]
            r += 1
    order = np.argsort(into, kind="mergesort")
    return source_label, into[order].copy(), leaves[order].copy(), ends[order].copy()


#: How many exits of each component the estimate reads (the cheapest by D); the rest
#: count as one, the least D among them, without the walk (see :func:`link_exits`).
EXACT_EXITS = 16


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _push(keys, items, size, key, item):
    """Add (key, item) to the binary heap ``keys[:size]``; the new size."""
    i = size
    while i > 0:
        up = (i - 1) >> 1
        if keys[up] <= key:
            break
        keys[i] = keys[up]
        items[i] = items[up]
        i = up
    keys[i] = key
    items[i] = item
    return size + 1


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _pop(keys, items, size):
    """Remove the least entry; returns (key, item, new size)."""
    top_key = keys[0]
    top = items[0]
    size -= 1
    key = keys[size]
    item = items[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and keys[child + 1] < keys[child]:
            child += 1
        if key <= keys[child]:
            break
        keys[i] = keys[child]
        items[i] = items[child]
        i = child
    keys[i] = key
    items[i] = item
    return top_key, top, size


@njit(cache=True, nogil=True)
def link_exits(cells, comps, gx, gy, sources, source_label, into, leaves, ends):
    """The exits the estimate of a search for the goal (gx, gy) reads (see the module
    docstring): ``(exits, groups, targets)``, exits float64 (P, 3) ``x, y, D`` grouped by
    component; targets int64 (Q, 2) ``x, y`` of every exit with a way to the goal
    (where an optimal path may leave the component: the goal bounds keep a direction
    toward any); groups int64 (G, 5) ``label, first, end, first target, end target``
    sorted by label.

    cells, comps: the unit's block-local components (the goal standable); sources and
    the rest: :func:`link_rows`. D is a Dijkstra from the goal. The estimate reads, of
    each component, the first :data:`EXACT_EXITS` exits settled there (the cheapest) with
    their walks, and the next one's D alone (an exit at x = -1), which is no more than
    any later one's walk and D: the Dijkstra offers exactly these (settling one of the
    first, the links into its component offer their sources the link's cost, the walk to
    it and its D; settling the next, the cost and its D), so the estimate stays
    consistent, in O(EXACT_EXITS * links). An exit that another of those read makes
    useless (``D(q) + octile(p, q) <= D(p)``) is left out: the estimate is the same."""
    height, width = cells.shape
    flat = cells.reshape(-1)
    per_row = (width + BLOCK - 1) >> BLOCK_SHIFT
    count = sources.shape[0]
    rows = into.shape[0]
    # Exit i < count: source i; exit count: the goal.
    dist = np.full(count + 1, np.inf)
    done = np.zeros(count + 1, dtype=np.uint8)
    order = np.empty(count + 1, dtype=np.int64)
    # Per component with links into it (by its first row): exits settled there so far.
    seen = np.zeros(rows + 1, dtype=np.int64)
    capacity = (EXACT_EXITS + 1) * rows + 2
    heap_keys = np.empty(capacity, dtype=np.float64)
    heap_items = np.empty(capacity, dtype=np.int64)
    goal_label = _label(flat, comps, per_row, width, gy * width + gx)
    dist[count] = 0.0
    size = _push(heap_keys, heap_items, 0, 0.0, count)
    settled = 0
    while size > 0:
        best, p, size = _pop(heap_keys, heap_items, size)
        if done[p] != 0:
            continue
        done[p] = 1
        order[settled] = p
        settled += 1
        if p == count:
            px = gx
            py = gy
            label = goal_label
        else:
            py = sources[p] // width
            px = sources[p] - py * width
            label = source_label[p]
        first = np.searchsorted(into, label)
        if first >= rows or into[first] != label:
            continue
        seen[first] += 1
        if seen[first] > EXACT_EXITS + 1:
            continue  # the estimate reads no more of this component
        exact = seen[first] <= EXACT_EXITS
        r = first
        while r < rows and into[r] == label:
            s = leaves[r]
            if done[s] == 0:
                through = ends[r, 2] + best
                if exact:
                    through += octile(ends[r, 0], ends[r, 1], px, py)
                if through < dist[s]:
                    dist[s] = through
                    size = _push(heap_keys, heap_items, size, through, s)
            r += 1
    # The settled exits by component, cheapest first (the order they were settled in,
    # which _near relies on):
    # the first EXACT_EXITS each kept unless one kept before it makes it useless (a kept
    # one's useless exits are useless by it too), the next as the rest.
    label = np.empty(settled, dtype=np.int64)
    for k in range(settled):
        label[k] = goal_label if order[k] == count else source_label[order[k]]
    by_label = np.argsort(label, kind="mergesort")
    exits = np.empty((settled, 3), dtype=np.float64)
    groups = np.empty((settled, 5), dtype=np.int64)
    targets = np.empty((settled, 2), dtype=np.int64)
    n_exits = 0
    n_groups = 0
    taken = 0
    for k in range(settled):
        i = order[by_label[k]]
        here = label[by_label[k]]
        if n_groups == 0 or groups[n_groups - 1, 0] != here:
            groups[n_groups, 0] = here
            groups[n_groups, 1] = n_exits
            groups[n_groups, 2] = n_exits
            groups[n_groups, 3] = k
            n_groups += 1
            taken = 0
        groups[n_groups - 1, 4] = k + 1
        if i == count:
            x = gx
            y = gy
        else:
            y = sources[i] // width
            x = sources[i] - y * width
        targets[k, 0] = x
        targets[k, 1] = y
        taken += 1
        if taken > EXACT_EXITS + 1:
            continue
        if taken > EXACT_EXITS:
            x = -1  # the rest: its D alone
        else:
            useless = False
            for q in range(groups[n_groups - 1, 1], n_exits):
                if exits[q, 2] + octile(x, y, exits[q, 0], exits[q, 1]) <= dist[i]:
                    useless = True
                    break
            if useless:
                continue
        exits[n_exits, 0] = x
        exits[n_exits, 1] = y
        exits[n_exits, 2] = dist[i]
        n_exits += 1
        groups[n_groups - 1, 2] = n_exits
    return exits[:n_exits].copy(), groups[:n_groups].copy(), targets


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _compact(keys, nodes, base, size, words, records, open_mark, width, cells, comps, per_row, exits, groups,
             h_scale):
    """Drop the stale heap entries (a node improved since, or closed) and heapify the
    rest, as :func:`pathserver.core.jpsplus._compact` does under this estimate."""
    kept = 0
    for i in range(size):
        node = nodes[base + 2 * i + 1]
        if words[2 * (records + 2 * node + 1)] != open_mark:
            continue
        y = node // width
        row = _group(groups, _label(cells, comps, per_row, width, node))
        key = keys[base + 2 * i]
        h = _near(exits, groups[row, 1], groups[row, 2], node - y * width, y)
        if key != keys[records + 2 * node] + h * h_scale:
            continue
        kept = strided_push(keys, nodes, base, kept, node, key)
    return kept


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _offer(node, successor, sx, sy, d, g_new, first, end, keys, nodes, base, size, words, records, open_mark,
           closed_mark, h_scale, n, width, cells, comps, per_row, exits, groups):
    """Offer ``successor`` at (sx, sy), reached on the grid from ``node`` (so in its
    component, whose exits are ``first..end - 1``) at cost ``g_new`` arriving in
    direction ``d``; the new heap size."""
    s_at = records + 2 * successor
    mark = words[2 * s_at + 2]
    if mark == closed_mark or (mark == open_mark and g_new >= keys[s_at]):
        return size
    keys[s_at] = g_new
    words[2 * s_at + 2] = open_mark
    words[2 * s_at + 3] = node | (d << LINK_SHIFT)
    if size >= n:
        size = _compact(keys, nodes, base, size, words, records, open_mark, width, cells, comps, per_row, exits,
                        groups, h_scale)
    return strided_push(keys, nodes, base, size, successor, g_new + _near(exits, first, end, sx, sy) * h_scale)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _offer_turns(table, node, cell, cx, cy, d, g_turn, first, end, keys, nodes, base, size, words, records,
                 open_mark, closed_mark, h_scale, n, width, cells, comps, per_row, exits, groups):
    """:func:`pathserver.core.jpsplus._offer_turns` under this estimate."""
    dx = DIRECTION_X[d]
    dy = DIRECTION_Y[d]
    along_x = 0 if dx > 0 else 2
    along_y = 1 if dy > 0 else 3
    ahead = table_distance(table, cell, along_x, dx)
    if ahead > 0:
        size = _offer(node, cell + ahead * dx, cx + ahead * dx, cy, along_x, g_turn + ahead, first, end, keys,
                      nodes, base, size, words, records, open_mark, closed_mark, h_scale, n, width, cells, comps,
                      per_row, exits, groups)
    ahead = table_distance(table, cell, along_y, dy * width)
    if ahead > 0:
        size = _offer(node, cell + ahead * dy * width, cx, cy + ahead * dy, along_y, g_turn + ahead, first, end,
                      keys, nodes, base, size, words, records, open_mark, closed_mark, h_scale, n, width, cells,
                      comps, per_row, exits, groups)
    return size


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _offer_goal(table, node, cell, ox, oy, k, d, g_turn, gx, gy, goal, first, end, keys, nodes, base, size, words,
                records, open_mark, closed_mark, h_scale, n, width, cells, comps, per_row, exits, groups):
    """:func:`pathserver.core.jpsplus._offer_goal` under this estimate."""
    dx = DIRECTION_X[d]
    dy = DIRECTION_Y[d]
    if ox == oy:
        return _offer(node, goal, gx, gy, d, g_turn, first, end, keys, nodes, base, size, words, records, open_mark,
                      closed_mark, h_scale, n, width, cells, comps, per_row, exits, groups)
    turn = cell + k * (dy * width + dx)
    if ox < oy:
        along = 1 if dy > 0 else 3
        if table_within(table, turn, along, dy * width, oy - ox):
            size = _offer(node, goal, gx, gy, along, g_turn + (oy - ox), first, end, keys, nodes, base, size, words,
                          records, open_mark, closed_mark, h_scale, n, width, cells, comps, per_row, exits, groups)
        return size
    along = 0 if dx > 0 else 2
    if table_within(table, turn, along, dx, ox - oy):
        size = _offer(node, goal, gx, gy, along, g_turn + (ox - oy), first, end, keys, nodes, base, size, words,
                      records, open_mark, closed_mark, h_scale, n, width, cells, comps, per_row, exits, groups)
    return size


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _walk_diagonal(table, link_first, node, x, y, d, g_node, gx, gy, goal, first, end, keys, nodes, base, size,
                   words, records, open_mark, closed_mark, h_scale, n, width, cells, comps, per_row, exits, groups):
    """:func:`pathserver.core.jpsplus._walk_diagonal` (without an overlay) under this
    estimate, and ending on a link source the diagonal meets: a node of its own."""
    dx = DIRECTION_X[d]
    dy = DIRECTION_Y[d]
    step = dy * width + dx
    cx = x
    cy = y
    cell = node
    walked = 0
    while True:
        dist = np.int64(table[cell, d])
        if dist == SAT:
            reach = SAT_STEP
        else:
            reach = dist if dist > 0 else -dist
        ox = (gx - cx) * dx
        oy = (gy - cy) * dy
        if ox > 0 and oy > 0:
            k = ox if ox < oy else oy
            if k <= reach:
                size = _offer_goal(table, node, cell, ox, oy, k, d, g_node + (walked + k) * SQRT2, gx, gy, goal,
                                   first, end, keys, nodes, base, size, words, records, open_mark, closed_mark,
                                   h_scale, n, width, cells, comps, per_row, exits, groups)
                if ox == oy:
                    return size
        if dist == SAT:
            cell += SAT_STEP * step
            cx += SAT_STEP * dx
            cy += SAT_STEP * dy
            walked += SAT_STEP
            continue
        if dist <= 0:
            return size
        cell += dist * step
        cx += dist * dx
        cy += dist * dy
        walked += dist
        if link_first[cell + 1] > link_first[cell]:
            return _offer(node, cell, cx, cy, d, g_node + walked * SQRT2, first, end, keys, nodes, base, size, words,
                          records, open_mark, closed_mark, h_scale, n, width, cells, comps, per_row, exits, groups)
        size = _offer_turns(table, node, cell, cx, cy, d, g_node + walked * SQRT2, first, end, keys, nodes, base,
                            size, words, records, open_mark, closed_mark, h_scale, n, width, cells, comps, per_row,
                            exits, groups)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _prune(bounds, row, mask, targets, first, end):
    """``mask`` (bit d: direction d) without the directions whose box of row ``row`` of
    the goal bounds holds none of ``targets[first:end]``."""
    for d in range(8):
        if (mask >> d) & 1:
            at = 4 * d
            inside = False
            for i in range(first, end):
                x = targets[i, 0]
                y = targets[i, 1]
                if bounds[row, at] <= x <= bounds[row, at + 2] and bounds[row, at + 1] <= y <= bounds[row, at + 3]:
                    inside = True
                    break
            if not inside:
                mask &= ~(1 << d)
    return mask


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def jps_links(passable, comps, table, sx, sy, gx, gy, max_expansions, link_first, link_to, link_cost, exits, groups,
              targets, bound_rows, bounds, work_float, work_int):
    """JPS+ from (sx, sy) to (gx, gy), both standable, over ``passable``'s moves (no
    corner cutting, uniform cost) and the links.

    passable, comps: the unit's block-local components (:mod:`pathserver.core.components`;
    ``passable`` the grid). table: ``jump_table_stops(passable, stops)``, ``stops`` the
    sources of the links (not checked). max_expansions: 0 for no limit. link_first,
    link_to, link_cost: the links' CSR form (:mod:`pathserver.core.links`). exits,
    groups, targets: :func:`link_exits` for this goal. bound_rows, bounds: the goal bounds
    of ``passable`` (:mod:`pathserver.core.bounds`: of the grid without links), or empty
    arrays: a node reached on the grid skips each direction whose box holds none of the
    targets of its component (an optimal path leaves it at one, by a shortest way on
    the grid). work_float (5, N), work_int (4, N + 1), N > H * W: the workspace of
    :func:`pathserver.core.query.solve`. Returns (status, end
    node, expanded): SEARCH_FOUND with end the goal (:func:`trace_link_jumps` lays the
    path), SEARCH_NO_PATH or SEARCH_BUDGET with end the start.
    """
    height, width = passable.shape
    cells = passable.reshape(height * width)
    per_row = (width + BLOCK - 1) >> BLOCK_SHIFT
    via = work_int[0]
    pass_id = next_pass_id(work_int)
    n = work_float.shape[1]
    keys = work_float.reshape(-1)
    nodes = keys.view(np.int64)
    words = keys.view(np.int32)
    base = n
    records = 3 * n
    last_pass = 2 * (records + 2 * (n - 1) + 1)
    if pass_id <= words[last_pass]:
        work_float[3:] = 0.0
    words[last_pass] = pass_id
    open_mark = pass_id
    closed_mark = pass_id + 1
    goal = gy * width + gx
    start = sy * width + sx
    h_scale = 1.0 + TIE
    row = _group(groups, _label(cells, comps, per_row, width, start))
    if row < 0:
        return SEARCH_NO_PATH, start, 0  # no exit in the start's component: the goal is out of reach
    at = records + 2 * start
    keys[at] = 0.0
    words[2 * at + 2] = open_mark
    words[2 * at + 3] = start | (8 << LINK_SHIFT)
    size = strided_push(keys, nodes, base, 0, start, _near(exits, groups[row, 1], groups[row, 2], sx, sy) * h_scale)
    expanded = 0
    while size > 0:
        node, size = strided_pop(keys, nodes, base, size)
        at = records + 2 * node
        if words[2 * at + 2] == closed_mark:
            continue
        if node == goal:
            return SEARCH_FOUND, goal, expanded
        if max_expansions > 0 and expanded >= max_expansions:
            return SEARCH_BUDGET, start, expanded
        words[2 * at + 2] = closed_mark
        expanded += 1
        y = node // width
        x = node - y * width
        g_node = keys[at]
        # Every node queued has an exit in its component; its grid successors share it.
        row = _group(groups, _label(cells, comps, per_row, width, node))
        first = groups[row, 1]
        end = groups[row, 2]
        came = words[2 * at + 3] >> LINK_SHIFT
        # jps_plus's loop written out with links, so it keeps no link test (bench/links.py, without links).
        # Its pruning; the start and a node reached over a link try all eight.
        if came >= 8:
            mask = 255
        elif came >= 4:
            along_x = 0 if DIRECTION_X[came] > 0 else 2
            along_y = 1 if DIRECTION_Y[came] > 0 else 3
            mask = (1 << came) | (1 << along_x) | (1 << along_y)
        elif came == 0 or came == 2:
            dx = 1 if came == 0 else -1
            mask = 1 << came
            if is_free(cells, width, height, x, y + 1) and not is_free(cells, width, height, x - dx, y + 1):
                mask |= 2 | (1 << (4 if dx > 0 else 5))
            if is_free(cells, width, height, x, y - 1) and not is_free(cells, width, height, x - dx, y - 1):
                mask |= 8 | (1 << (7 if dx > 0 else 6))
        else:
            dy = 1 if came == 1 else -1
            mask = 1 << came
            if is_free(cells, width, height, x + 1, y) and not is_free(cells, width, height, x + 1, y - dy):
                mask |= 1 | (1 << (4 if dy > 0 else 7))
            if is_free(cells, width, height, x - 1, y) and not is_free(cells, width, height, x - 1, y - dy):
                mask |= 4 | (1 << (5 if dy > 0 else 6))
        if came < 8 and bound_rows.shape[0] > 0:
            bound_row = bound_rows[node]
            if bound_row >= 0:
                mask = _prune(bounds, bound_row, mask, targets, groups[row, 3], groups[row, 4])
        for d in range(8):
            if (mask >> d) & 1 == 0:
                continue
            ddx = DIRECTION_X[d]
            ddy = DIRECTION_Y[d]
            if ddx != 0 and ddy != 0:
                size = _walk_diagonal(table, link_first, node, x, y, d, g_node, gx, gy, goal, first, end, keys, nodes,
                                      base, size, words, records, open_mark, closed_mark, h_scale, n, width, cells,
                                      comps, per_row, exits, groups)
                continue
            k = stop_steps(table, node, x, y, d, gx, gy, width)
            if k == 0:
                continue
            size = _offer(node, node + k * (ddy * width + ddx), x + k * ddx, y + k * ddy, d, g_node + k, first, end,
                          keys, nodes, base, size, words, records, open_mark, closed_mark, h_scale, n, width, cells,
                          comps, per_row, exits, groups)
        # The links leaving this node, to targets the unit can stand on.
        for j in range(link_first[node], link_first[node + 1]):
            target = link_to[j]
            if cells[target] == 0:
                continue
            t_at = records + 2 * target
            mark = words[2 * t_at + 2]
            g_new = g_node + link_cost[j]
            if mark == closed_mark or (mark == open_mark and g_new >= keys[t_at]):
                continue
            t_row = _group(groups, _label(cells, comps, per_row, width, target))
            if t_row < 0:
                continue  # the goal is out of reach from there
            ty = target // width
            h = _near(exits, groups[t_row, 1], groups[t_row, 2], target - ty * width, ty)
            keys[t_at] = g_new
            words[2 * t_at + 2] = open_mark
            words[2 * t_at + 3] = node | (OVER_LINK << LINK_SHIFT)
            via[target] = j
            if size >= n:
                size = _compact(keys, nodes, base, size, words, records, open_mark, width, cells, comps, per_row,
                                exits, groups, h_scale)
            size = strided_push(keys, nodes, base, size, target, g_new + h * h_scale)
    return SEARCH_NO_PATH, start, expanded


@njit(cache=True, nogil=True)
def trace_link_jumps(work_float, work_int, link_id, width, start, end):
    """The cells from ``start`` to ``end`` after :func:`jps_links`, int32 (n, 2) ``x, y``
    with both ends, and the links taken, int64 (m, 2) ``[i, id]``: the move from cell
    ``i`` to cell ``i + 1`` is link ``id`` (``link_id``: each CSR position's link), as
    :func:`pathserver.core.links.trace_links` gives them. Between jump points the way runs
    diagonal first, as :func:`pathserver.core.jpsplus.trace_jumps_into` lays it."""
    words = work_float.reshape(-1).view(np.int32)
    first = 2 * (3 * work_float.shape[1]) + 3  # node v's link word: words[first + 4v]
    via = work_int[0]
    count = 1
    taken = 0
    node = end
    while node != start:
        word = words[first + 4 * node]
        parent = word & LINK_MASK
        if word >> LINK_SHIFT == OVER_LINK:
            count += 1
            taken += 1
        else:
            straight, diagonal = leg_steps(node, parent, width)
            count += straight + diagonal
        node = parent
    path = np.empty((count, 2), dtype=np.int32)
    links = np.empty((taken, 2), dtype=np.int64)
    i = count - 1
    j = taken - 1
    node = end
    y = node // width
    x = node - y * width
    path[i, 0] = x
    path[i, 1] = y
    while node != start:
        word = words[first + 4 * node]
        parent = word & LINK_MASK
        py = parent // width
        px = parent - py * width
        if word >> LINK_SHIFT == OVER_LINK:
            i -= 1
            path[i, 0] = px
            path[i, 1] = py
            links[j, 0] = i
            links[j, 1] = link_id[via[node]]
            j -= 1
        else:
            # Back from the node: the straight leg first, then the diagonal.
            span = abs(px - x)
            rows = abs(py - y)
            sx = 1 if px > x else -1 if px < x else 0
            sy = 1 if py > y else -1 if py < y else 0
            if span > rows:
                straight = span - rows
                diagonal = rows
                ux = sx
                uy = 0
            else:
                straight = rows - span
                diagonal = span
                ux = 0
                uy = sy
            cx = x
            cy = y
            for _ in range(straight):
                cx += ux
                cy += uy
                i -= 1
                path[i, 0] = cx
                path[i, 1] = cy
            for _ in range(diagonal):
                cx += sx
                cy += sy
                i -= 1
                path[i, 0] = cx
                path[i, 1] = cy
        x = px
        y = py
        node = parent
    return path, links


@njit(cache=True, nogil=True)
def finish_links(path, links, corners, passable, cost_index, cost_table, uniform, heights, use_heights, max_climb,
                 diagonal, smooth, stride, floors):
    """Smooth a path over links as ``smooth`` (SMOOTH_*) says, each stretch between two
    links on its own (both ends of every link stay waypoints), and lay it floor by floor.

    path: int32 (n, 2) cells of the stacked grid, smoothed in place; links: int64 (m, 2)
    ``[i, id]`` as :func:`trace_link_jumps` gives them; corners: int64 scratch of n or
    more; the grid and rules as :func:`pathserver.core.lines.finish_in_place` takes them.
    stride: a floor's rows plus the blocked one; floors: the map's. Returns (points,
    kept, length): points int32 (k, 3) ``x, y, floor`` (``(k, 2)`` ``x, y`` with one
    floor), kept int64 (m, 2) the links at their new indices, length the Euclidean
    length within floors (the links' jumps not counted)."""
    count = path.shape[0]
    taken = links.shape[0]
    kept = np.empty((taken, 2), dtype=np.int64)
    written = 0
    begin = 0
    length = 0.0
    for j in range(taken + 1):
        last = links[j, 0] if j < taken else count - 1
        piece = path[begin:last + 1]
        n = finish_in_place(piece, last + 1 - begin, smooth, corners, passable, cost_index, cost_table, uniform,
                            heights, use_heights, max_climb, diagonal)
        for i in range(n):
            path[written + i, 0] = piece[i, 0]
            path[written + i, 1] = piece[i, 1]
        length += polyline_length(path[written:written + n], diagonal)
        written += n
        if j < taken:
            kept[j, 0] = written - 1
            kept[j, 1] = links[j, 1]
        begin = last + 1
    points = np.empty((written, 3 if floors > 1 else 2), dtype=np.int32)
    for i in range(written):
        points[i, 0] = path[i, 0]
        if floors > 1:
            points[i, 1] = path[i, 1] % stride
            points[i, 2] = path[i, 1] // stride
        else:
            points[i, 1] = path[i, 1]
    return points, kept, length


@njit(cache=True, nogil=True)
def path_links(cells, comps, table, sx, sy, gx, gy, max_expansions, link_first, link_to, link_cost, link_id, sources,
               source_label, into, leaves, ends, bound_rows, bounds, smooth, stride, floors, work_float, work_int):
    """One path on a map with links, in one call: :func:`link_exits`, :func:`jps_links`,
    :func:`trace_link_jumps` and :func:`finish_links` (arguments as theirs; ``source_label``,
    ``into``, ``leaves``, ``ends``: :func:`link_rows`; ``bound_rows``, ``bounds``: as
    jps_links takes them). Returns (status, expanded, cost,
    length, points, links): finish_links' points and links, empty without a path."""
    exits, groups, targets = link_exits(cells, comps, gx, gy, sources, source_label, into, leaves, ends)
    status, end, expanded = jps_links(cells, comps, table, sx, sy, gx, gy, max_expansions, link_first, link_to,
                                      link_cost, exits, groups, targets, bound_rows, bounds, work_float, work_int)
    if status != SEARCH_FOUND:
        return (status, expanded, 0.0, 0.0, np.empty((0, 3 if floors > 1 else 2), dtype=np.int32),
                np.empty((0, 2), dtype=np.int64))
    width = cells.shape[1]
    cost = jump_cost(work_float, end)
    path, links = trace_link_jumps(work_float, work_int, link_id, width, sy * width + sx, end)
    # JPS+'s heap row is free once the search is done: string pulling's scratch.
    corners = work_float[1].view(np.int64)
    points, kept, length = finish_links(path, links, corners, cells, _UNIFORM_INDEX, _UNIFORM_TABLE, 1, _NO_HEIGHTS,
                                        0, 0.0, DIAGONAL_NO_CORNER_CUTTING, smooth, stride, floors)
    return status, expanded, cost, length, points, kept
