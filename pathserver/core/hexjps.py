"""Jump Point Search on hex maps of uniform cost, on precomputed jump distances.

Directions d = 0..5 go round the hexagon in axial coordinates (:data:`DIRECTION_Q`,
:data:`DIRECTION_R`). A shortest path keeps one order, primary (even) steps before
secondary (odd) ones; the moves left after each step are :func:`successors`'.
:func:`hex_jump_table` stores how far each jump goes, for every cell and direction;
:func:`hex_jps` searches with it, stopping on the goal at query time, and
:func:`trace_hex_into` fills in the cells between jump points. Search state follows
:mod:`pathserver.core.astar`'s workspace convention. Why the rules are exact, and how ties
are kept: docs/design.md, "Hex JPS".
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.heap import NODE_MASK, pair_pop, pair_sift_up
from pathserver.core.moves import axial, offset
from pathserver.core.status import SEARCH_BUDGET, SEARCH_FOUND, SEARCH_NO_PATH

#: The six axial directions in order round the hexagon: even ones primary, odd ones
#: secondary; direction d + 3 is the opposite of d.
DIRECTION_Q = (1, 1, 0, -1, -1, 0)
DIRECTION_R = (0, -1, -1, 0, 1, 1)
#: A node's direction bits (see :func:`hex_jps`): the start expands all six.
FROM_START = 1 << 6
#: Tie-break tags: TIE_LIMIT less h in the high half (see pathserver.core.astar).
TIE_LIMIT = 2**30
#: Jump distances are int16: no hex ray on a map of this side or less is longer.
MAX_SIDE = 32767


def fits(height: int, width: int) -> bool:
    """Whether a grid of this size can have a hex jump table."""
    return max(height, width) <= MAX_SIDE


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def successors(incoming, blocked):
    """The direction bits to jump toward from a node entered by a step in direction
    ``incoming`` (0-5), whose neighbours in the directions of the bits of ``blocked``
    are blocked or off the map: see the module docstring."""
    if incoming & 1 == 0:
        return (1 << incoming) | (1 << ((incoming + 1) % 6)) | (1 << ((incoming + 5) % 6))
    bits = 1 << incoming
    if (blocked >> ((incoming + 2) % 6)) & 1:
        bits |= 1 << ((incoming + 1) % 6)
    if (blocked >> ((incoming + 4) % 6)) & 1:
        bits |= 1 << ((incoming + 5) % 6)
    return bits & ~blocked


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _free(cells, layout, q, r):
    height, width = cells.shape
    x, y = offset(layout, q, r)
    return 0 <= x < width and 0 <= y < height and cells[y, x] != 0


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def blocked_around(cells, layout, q, r):
    """Bit d set where the neighbour of axial (q, r) in direction d is blocked or off
    the map."""
    bits = 0
    for d in range(6):
        if not _free(cells, layout, q + DIRECTION_Q[d], r + DIRECTION_R[d]):
            bits |= 1 << d
    return bits


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _turns(cells, layout, q, r, s):
    """Whether entering axial (q, r) by the secondary step ``s`` forces a turn."""
    return successors(s, blocked_around(cells, layout, q, r)) & ~(1 << s) != 0


@njit(cache=True, nogil=True)
def hex_jump_table(cells, layout):
    """The jump distances :func:`hex_jps` reads: int16 (H * W * 6,), entry
    ``(y * W + x) * 6 + d`` for cell (x, y) and axial direction d. cells: uint8 (H, W)
    indexed [y, x], nonzero where passable; layout: the map's DIAGONAL_HEX_* code.
    H and W at most :data:`MAX_SIDE` (see :func:`fits`).

    ``v > 0``: the jump from the cell toward d stops ``v`` steps away, on a jump point
    (secondary d: a cell where a turn is forced; primary d: a cell from which a side ray
    d - 1 or d + 1 reaches one). ``v <= 0``: it finds none, and ``-v`` steps are free
    before a wall or the map's edge. O(H * W)."""
    height, width = cells.shape
    table = np.zeros(height * width * 6, dtype=np.int16)
    # The side rays first: a primary direction's stops read them.
    for d in (1, 3, 5, 0, 2, 4):
        dq = DIRECTION_Q[d]
        dr = DIRECTION_R[d]
        for y in range(height):
            for x in range(width):
                q, r = axial(layout, x, y)
                nx, ny = offset(layout, q + dq, r + dr)
                if 0 <= nx < width and 0 <= ny < height:
                    continue  # not the last cell of its ray toward d
                # Walk the ray back from its end, each cell's entry from the next one's.
                node = y * width + x
                table[node * 6 + d] = 0
                while True:
                    q -= dq
                    r -= dr
                    px, py = offset(layout, q, r)
                    if not (0 <= px < width and 0 <= py < height):
                        break
                    ahead = table[node * 6 + d]
                    cx = node % width
                    cy = node // width
                    if cells[cy, cx] == 0:
                        value = 0
                    else:
                        if d & 1:
                            stop = _turns(cells, layout, q + dq, r + dr, d)
                        else:
                            stop = table[node * 6 + (d + 1) % 6] > 0 or table[node * 6 + (d + 5) % 6] > 0
                        if stop:
                            value = 1
                        elif ahead > 0:
                            value = ahead + 1
                        else:
                            value = ahead - 1
                    node = py * width + px
                    table[node * 6 + d] = value
    return table


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _along(dq, dr, d):
    """How many steps toward d lead from axial offset (0, 0) to (dq, dr), or 0 when it
    is not on that ray."""
    k = (abs(dq) + abs(dr) + abs(dq + dr)) >> 1
    if k > 0 and dq == k * DIRECTION_Q[d] and dr == k * DIRECTION_R[d]:
        return k
    return 0


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _distance(dq, dr):
    """The hex distance of the axial offset (dq, dr)."""
    return (abs(dq) + abs(dr) + abs(dq + dr)) >> 1


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _reach(value):
    """The free steps a table entry says its ray has up to and including its stop."""
    return value if value > 0 else -value


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _relax(
    node, successor, sq, sr, g_new, d, gq, gr, weight, g, parent, stamp, open_mark, closed_mark, heap_keys,
    heap_tags, heap_pos, directions, size,
):
    """Offer ``successor`` at axial (sq, sr), reached from ``node`` by a jump whose last
    step is toward d, at cost ``g_new``; the new heap size."""
    bit = np.int64(1) << d
    mark = stamp[successor]
    if mark == open_mark or mark == closed_mark:
        if g_new < g[successor]:
            g[successor] = g_new
            parent[successor] = node
            directions[successor] = bit
        elif g_new == g[successor] and directions[successor] & bit == 0:
            # As short from another direction: its moves from there count too.
            directions[successor] |= bit
            if mark == open_mark:
                return size
        else:
            return size
    else:
        g[successor] = g_new
        parent[successor] = node
        directions[successor] = bit
    h = _distance(sq - gq, sr - gr)
    key = g_new + h * weight
    tag = ((TIE_LIMIT - np.int64(h)) << 32) | successor
    if mark == open_mark:
        pair_sift_up(heap_keys, heap_tags, heap_pos, heap_pos[successor], key, tag)
        return size
    # New, or closed and opened again for what it has not been expanded for.
    stamp[successor] = open_mark
    pair_sift_up(heap_keys, heap_tags, heap_pos, size, key, tag)
    return size + 1


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def hex_jps(
    cells, table, layout, sx, sy, gx, gy, weight, max_expansions,
    g, parent, stamp, pass_id, heap_keys, heap_tags, heap_pos, directions,
):
    """Search from (sx, sy) to (gx, gy) on a hex map of uniform cost; both must be
    passable and in bounds.

    cells: uint8 (H, W) indexed [y, x], C-contiguous, nonzero where the unit can stand;
    table: ``hex_jump_table(cells, layout)`` of this very grid (not checked); layout: a
    DIAGONAL_HEX_* code. weight >= 1 inflates the hex distance estimate (1 keeps the path
    optimal). max_expansions: 0 for no limit. Workspace (length N >= H * W, see
    :mod:`pathserver.core.astar`): g float64, parent and stamp int32, the ``pair_*`` heap
    of :mod:`pathserver.core.heap` (heap_keys float64, heap_tags int64, heap_pos int32),
    directions int64: per node, the directions of the last steps it was reached by at its
    cost (bits 0-6, FROM_START for the start) and, shifted by 8, those it was expanded
    for.

    A primary jump is not pushed where it stops: the cells its side rays reach from there
    are, straight away, each with the node as its parent (an elbow: primary steps, then
    secondary ones), and the jump goes on. Open nodes come off in order of f, then of
    smaller h, then of larger node id. Returns (status, end_node, expanded) as
    :func:`pathserver.core.jps.jps`: follow ``parent`` from end_node to the start
    (:func:`hex_path_steps`, :func:`trace_hex_into`).
    """
    height, width = cells.shape
    open_mark = pass_id
    closed_mark = pass_id + 1
    start = sy * width + sx
    goal = gy * width + gx
    gq, gr = axial(layout, gx, gy)
    q0, r0 = axial(layout, sx, sy)
    h0 = _distance(q0 - gq, r0 - gr)
    g[start] = 0.0
    parent[start] = start
    stamp[start] = open_mark
    directions[start] = FROM_START
    heap_keys[0] = h0 * weight
    heap_tags[0] = ((TIE_LIMIT - np.int64(h0)) << 32) | start
    heap_pos[start] = 0
    size = 1
    best = start
    best_h = h0
    expanded = 0
    inv_width = 1.0 / width
    while size > 0:
        tag, size = pair_pop(heap_keys, heap_tags, heap_pos, size)
        node = tag & NODE_MASK
        if node == goal:
            return SEARCH_FOUND, goal, expanded
        if max_expansions > 0 and expanded >= max_expansions:
            return SEARCH_BUDGET, best, expanded
        stamp[node] = closed_mark
        expanded += 1
        # astar's pop written out for hex, so A* keeps no hex test (bench/hex.py); node // width
        # without a division, as there.
        y = int((node + 0.5) * inv_width)
        x = node - y * width
        q, r = axial(layout, x, y)
        h_node = _distance(q - gq, r - gr)
        if h_node < best_h:
            best_h = h_node
            best = node
        seen = directions[node]
        fresh = seen & ~(seen >> 8) & 0x7F
        directions[node] = seen | (fresh << 8)
        if fresh & FROM_START:
            jumps = 0x3F
        else:
            jumps = 0
            blocked = -1
            for d in range(6):
                if (fresh >> d) & 1:
                    if d & 1 and blocked < 0:
                        blocked = blocked_around(cells, layout, q, r)
                    jumps |= successors(d, blocked if d & 1 else 0)
        g_node = g[node]
        dq = gq - q
        dr = gr - r
        for d in range(6):
            if (jumps >> d) & 1 == 0:
                continue
            aq = DIRECTION_Q[d]
            ar = DIRECTION_R[d]
            value = np.int64(table[node * 6 + d])
            if d & 1:
                # Secondary: to the goal if it lies on the way, else to the stop if any.
                to_goal = _along(dq, dr, d)
                if to_goal > 0 and to_goal <= _reach(value):
                    size = _relax(node, goal, gq, gr, g_node + to_goal, d, gq, gr, weight, g, parent, stamp,
                                  open_mark, closed_mark, heap_keys, heap_tags, heap_pos, directions, size)
                elif value > 0:
                    cq = q + value * aq
                    cr = r + value * ar
                    cx, cy = offset(layout, cq, cr)
                    size = _relax(node, cy * width + cx, cq, cr, g_node + value, d, gq, gr, weight, g, parent,
                                  stamp, open_mark, closed_mark, heap_keys, heap_tags, heap_pos, directions, size)
                continue
            # Primary: from stop to stop along the ray, offering what each one's side rays
            # reach; the goal, where it lies on the ray or on a side ray, ends the ray.
            to_goal = _along(dq, dr, d)
            ks = np.int64(0)
            js = np.int64(0)
            goal_side = -1
            for side in ((d + 1) % 6, (d + 5) % 6):
                sq = DIRECTION_Q[side]
                sr = DIRECTION_R[side]
                det = aq * sr - ar * sq  # +-1: two neighbouring directions
                k = (dq * sr - dr * sq) * det
                j = (aq * dr - ar * dq) * det
                if k >= 1 and j >= 1:
                    ks = k
                    js = j
                    goal_side = side
            cq = q
            cr = r
            travelled = 0
            here = node
            while True:
                reach = _reach(value)
                if to_goal > 0 and to_goal - travelled <= reach:
                    size = _relax(node, goal, gq, gr, g_node + to_goal, d, gq, gr, weight, g, parent, stamp,
                                  open_mark, closed_mark, heap_keys, heap_tags, heap_pos, directions, size)
                    break
                if goal_side >= 0 and ks - travelled <= reach:
                    # The goal's side ray leaves the ray at ks: does it get there?
                    tq = q + ks * aq
                    tr = r + ks * ar
                    tx, ty = offset(layout, tq, tr)
                    if _reach(np.int64(table[(ty * width + tx) * 6 + goal_side])) >= js:
                        size = _relax(node, goal, gq, gr, g_node + ks + js, goal_side, gq, gr, weight, g, parent,
                                      stamp, open_mark, closed_mark, heap_keys, heap_tags, heap_pos, directions,
                                      size)
                        break
                    goal_side = -1
                if value <= 0:
                    break
                travelled += value
                cq += value * aq
                cr += value * ar
                cx, cy = offset(layout, cq, cr)
                here = cy * width + cx
                for side in ((d + 1) % 6, (d + 5) % 6):
                    side_value = np.int64(table[here * 6 + side])
                    if side_value > 0:
                        fq = cq + side_value * DIRECTION_Q[side]
                        fr = cr + side_value * DIRECTION_R[side]
                        fx, fy = offset(layout, fq, fr)
                        size = _relax(node, fy * width + fx, fq, fr, g_node + travelled + side_value, side, gq, gr,
                                      weight, g, parent, stamp, open_mark, closed_mark, heap_keys, heap_tags,
                                      heap_pos, directions, size)
                value = np.int64(table[here * 6 + d])
    return SEARCH_NO_PATH, best, expanded


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _legs(dq, dr):
    """The axial offset (dq, dr) as k primary steps toward a, then j secondary ones
    toward s (a and s neighbours): (a, k, s, j), the way :func:`hex_jps` joins a node to
    its parent."""
    for a in (0, 2, 4):
        aq = DIRECTION_Q[a]
        ar = DIRECTION_R[a]
        for s in ((a + 1) % 6, (a + 5) % 6):
            sq = DIRECTION_Q[s]
            sr = DIRECTION_R[s]
            det = aq * sr - ar * sq
            k = (dq * sr - dr * sq) * det
            j = (aq * dr - ar * dq) * det
            if k >= 0 and j >= 0:
                return a, k, s, j
    return 0, 0, 1, 0


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def hex_path_steps(parent, width, layout, start, end):
    """The hex steps of the path :func:`trace_hex_into` writes (its cells: one more)."""
    steps = 0
    node = end
    while node != start:
        prev = parent[node]
        q, r = axial(layout, node % width, node // width)
        pq, pr = axial(layout, prev % width, prev // width)
        steps += _distance(q - pq, r - pr)
        node = prev
    return steps


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def trace_hex_into(out, parent, width, layout, start, end, count):
    """Write the cells from ``start`` to ``end``, following ``parent`` back from
    ``end``, into ``out[:count]``: int32 (x, y) rows, start and end included; ``count``
    one more than :func:`hex_path_steps`. Each node and its parent are joined as
    :func:`hex_jps` joins them: primary steps from the parent, then secondary ones."""
    i = count - 1
    node = end
    out[i, 0] = node % width
    out[i, 1] = node // width
    while node != start:
        prev = parent[node]
        q, r = axial(layout, node % width, node // width)
        pq, pr = axial(layout, prev % width, prev // width)
        a, k, s, j = _legs(q - pq, r - pr)
        # Back from the node: the secondary steps, then the primary ones.
        for step in range(j + k):
            if step < j:
                q -= DIRECTION_Q[s]
                r -= DIRECTION_R[s]
            else:
                q -= DIRECTION_Q[a]
                r -= DIRECTION_R[a]
            x, y = offset(layout, q, r)
            i -= 1
            out[i, 0] = x
            out[i, 1] = y
        node = prev
