"""A* on a passability grid: 8-connected (three diagonal rules) or 4-connected, terrain
costs, heights with a climb limit, four heuristics with an optional weight.

Search state lives in caller-owned workspace arrays of length H*W that are never cleared
between queries: a node's ``g``/``parent``/heap position are valid only when
``stamp[node]`` equals this query's ``pass_id`` (open) or ``pass_id + 1`` (closed), the
pass counter of Godot's AStarGrid2D. The caller advances ``pass_id`` by 2 per query.
"""

import math

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.heap import NODE_MASK, TIE, pair_pop, pair_replace_top, pair_sift_up
from pathserver.core.moves import SQRT2, diagonal_direction, diagonal_step, hex_distance, hex_move, move_bits
from pathserver.core.status import (
    DIAGONAL_HEX,
    DIAGONAL_NEVER,
    DIAGONAL_NO_CORNER_CUTTING,
    HEURISTIC_CHEBYSHEV,
    HEURISTIC_EUCLIDEAN,
    HEURISTIC_HEX,
    HEURISTIC_MANHATTAN,
    HEURISTIC_OCTILE,
    SEARCH_BUDGET,
    SEARCH_FOUND,
    SEARCH_NO_PATH,
)

# Directions 0-3 straight, 4-7 diagonal (pathserver.core.moves numbers them the same way).
# A* relaxes the straight moves first: of two equally cheap parents the straight one wins.
STEP_X = (1, 0, -1, 0, 1, -1, -1, 1)
STEP_Y = (0, 1, 0, -1, 1, 1, -1, -1)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def heuristic_distance(kind, x, y, gx, gy):
    """Unweighted estimate from (x, y) to (gx, gy) in straight-move units."""
    if kind >= HEURISTIC_HEX:
        return float(hex_distance(kind - HEURISTIC_HEX + DIAGONAL_HEX, x, y, gx, gy))
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


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def move_allowed(passable, heights, use_heights, max_climb, diagonal, x, y, nx, ny):
    """Whether the unit may step from (x, y) to the in-bounds neighbour (nx, ny)."""
    if passable[ny, nx] == 0:
        return False
    if nx != x and ny != y:
        if diagonal == DIAGONAL_NEVER:
            return False
        if diagonal == DIAGONAL_NO_CORNER_CUTTING and (passable[y, nx] == 0 or passable[ny, x] == 0):
            return False
        if not hex_move(diagonal, x, y, diagonal_direction(nx - x, ny - y)):
            return False
    if use_heights != 0 and abs(heights[ny, nx] - heights[y, x]) > max_climb:
        return False
    return True


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def octile(x, y, gx, gy):
    """The octile distance from (x, y) to (gx, gy): the uniform-cost 8-connected h."""
    dx = abs(x - gx)
    dy = abs(y - gy)
    if dx < dy:
        return dy + (SQRT2 - 1.0) * dx
    return dx + (SQRT2 - 1.0) * dy


#: Tie-break tags hold TIE_LIMIT less the unweighted h scaled to below TIE_RANGE in their
#: high 32 bits: the heap takes the larger tag first, so the smaller h, then the larger node id.
TIE_RANGE = float(2**30)
TIE_LIMIT = 2**30
#: Past this many distinct costs the heuristic takes 1 as the cheapest step factor (every
#: terrain cost is >= 1) instead of scanning the table on each query.
MIN_COST_SCAN = 4096


#: Pass ids live in int32 stamps: wrap (clearing the stamps) before they overflow.
PASS_ID_LIMIT = 2**31 - 4


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def next_pass_id(work_int):
    """This search's pass id (two stamps: ``id`` open, ``id + 1`` closed), kept in the last
    column of the stamp row ``work_int[3]``; the stamps are cleared when the ids wrap."""
    last = work_int.shape[1] - 1
    pass_id = work_int[3, last] + 2
    if pass_id >= PASS_ID_LIMIT:
        work_int[3, :] = 0
        pass_id = 2
    work_int[3, last] = pass_id
    return pass_id


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def min_cost(cost_table, uniform):
    """The cheapest terrain cost a step can have: the heuristic's scale (a lower bound on
    every step's cost factor keeps it admissible and consistent)."""
    if uniform != 0 or cost_table.shape[0] > MIN_COST_SCAN:
        return 1.0
    low = cost_table[0]
    for k in range(1, cost_table.shape[0]):
        if cost_table[k] < low:
            low = cost_table[k]
    return low


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def landmark_bound(table, node, goal):
    """The landmarks' lower bound on the cost from ``node`` to ``goal`` (a table of
    :func:`pathserver.core.landmarks.landmark_table`; 0 for one with no columns; ``inf``
    when a landmark shows there is no way). Differences in float64: exact for float32s."""
    best = 0.0
    for k in range(table.shape[1] // 2):
        ahead = np.float64(table[node, 2 * k]) - np.float64(table[goal, 2 * k])
        behind = np.float64(table[goal, 2 * k + 1]) - np.float64(table[node, 2 * k + 1])
        # A NaN (no way to a landmark from either end) compares false: no bound.
        if ahead > best:
            best = ahead
        if behind > best:
            best = behind
    return best


#: An estimate past every path's cost, for a node the landmarks show cannot reach the
#: goal (kept finite: the heap orders numbers).
NO_WAY = 1e300


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _estimate(h, cheapest, weight, h_scale, alt, landmarks, node, goal):
    """A node's estimate as the heap's key adds it to g: ``h * h_scale``, or with
    landmarks (``alt``) the best of ``h * cheapest`` and their bound, times ``weight``."""
    if not alt:
        return h * h_scale
    bound = landmark_bound(landmarks, node, goal)
    if bound < h * cheapest:
        bound = h * cheapest
    if bound > NO_WAY:
        bound = NO_WAY
    return bound * weight


def _search_kernel(fixed_uniform, fixed_heights, fixed_diagonal, fixed_heuristic, fused):
    """The A* loop, compiled once per option set: a ``fixed_*`` argument >= 0 is that
    option's value for every query this copy answers (numba takes a closure's variables as
    constants, so the branches on it fold away); -1 reads the argument.

    fused: one key per node, g + h * weight * (1 + TIE), as in the ``key_*`` heap of
    :mod:`pathserver.core.heap`: only for uniform cost, whose path costs a + b*sqrt(2)
    (a, b integers) lie too far apart for TIE * h to reorder them. Otherwise the key is f
    and the tag's high half is TIE_LIMIT less h scaled by ``tie_scale``: equal f, smaller h
    first.
    """

    @njit(cache=True, nogil=True, **NO_REFCOUNT)
    def search(
        passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, sx, sy, gx, gy,
        diagonal, heuristic, weight, max_expansions, g, parent, stamp, pass_id, heap_keys, heap_tags, heap_pos,
        landmarks,
    ):
        if fixed_uniform >= 0:
            uniform = fixed_uniform
        if fixed_heights >= 0:
            use_heights = fixed_heights
        if fixed_diagonal >= 0:
            diagonal = fixed_diagonal
        if fixed_heuristic >= 0:
            heuristic = fixed_heuristic
        height, width = passable.shape
        cells = passable.reshape(-1)
        cost_flat = cost_index.reshape(-1)
        heights_flat = heights.reshape(-1)
        # Moves in a flat index space, orthogonal first (E, S, W, N, SE, SW, NW, NE): a
        # tuple, not an array, so that the loop allocates nothing (NO_REFCOUNT).
        offsets = (1, width, -1, -width, width + 1, width - 1, -width - 1, 1 - width)
        open_mark = pass_id
        closed_mark = pass_id + 1
        start = sy * width + sx
        goal = gy * width + gx
        h_scale = weight * min_cost(cost_table, uniform)
        if fused:
            h_scale *= 1.0 + TIE
        # h < width + height for every heuristic: a tag's high half stays below 2**30.
        tie_scale = 0.0 if fused else TIE_RANGE / (width + height)
        # With landmarks (never on the fused path: uniform maps get none), the estimate in
        # cost units is the best of the scaled heuristic and their bound.
        cheapest = min_cost(cost_table, uniform)
        alt = landmarks.shape[1] > 0
        h0 = heuristic_distance(heuristic, sx, sy, gx, gy)
        g[start] = 0.0
        parent[start] = start
        stamp[start] = open_mark
        heap_keys[0] = _estimate(h0, cheapest, weight, h_scale, alt, landmarks, start, goal)
        heap_tags[0] = ((TIE_LIMIT - np.int64(h0 * tie_scale)) << 32) | start
        heap_pos[start] = 0
        size = 1
        best = start
        best_h = h0
        expanded = 0
        # The best node the last expansion opened, held out of the heap: when it comes
        # before the heap's top (often: a step toward the goal keeps f), it is expanded
        # next without a push and a pop; otherwise it takes the top's place (one sift
        # down, short for a node this early in the order). The order of expansions is the
        # heap's all the same.
        held_key = 0.0
        held_tag = -1
        inv_width = 1.0 / width
        while True:
            if held_tag >= 0:
                tag = held_tag
                held_tag = -1
                if size > 0 and (heap_keys[0] < held_key or (heap_keys[0] == held_key and heap_tags[0] > tag)):
                    tag = pair_replace_top(heap_keys, heap_tags, heap_pos, size, held_key, tag)
            elif size > 0:
                tag, size = pair_pop(heap_keys, heap_tags, heap_pos, size)
            else:
                break
            node = tag & NODE_MASK
            if node == goal:
                return SEARCH_FOUND, goal, expanded
            if max_expansions > 0 and expanded >= max_expansions:
                return SEARCH_BUDGET, best, expanded
            stamp[node] = closed_mark
            expanded += 1
            # node // width without a division: (node + 0.5) / width lies at least
            # 0.5 / width from a whole number, far beyond float64's rounding here.
            y = int((node + 0.5) * inv_width)
            x = node - y * width
            h_node = heuristic_distance(heuristic, x, y, gx, gy)
            if h_node < best_h:
                best_h = h_node
                best = node
            g_node = g[node]
            moves = move_bits(cells, width, height, node, x, y, diagonal)
            here = heights_flat[node] if use_heights != 0 else heights_flat[0]
            for d in range(8):
                if (moves >> d) & 1 == 0:
                    continue
                neighbour = node + offsets[d]
                # Unsigned: no negative-index wraparound code.
                at = np.uint64(neighbour)
                mark = stamp[at]
                if mark == closed_mark:
                    continue
                if use_heights != 0 and abs(heights_flat[at] - here) > max_climb:
                    continue
                step = diagonal_step(diagonal) if d >= 4 else 1.0
                if uniform == 0:
                    step *= cost_table[cost_flat[at]]
                g_new = g_node + step
                if mark == open_mark:
                    if g_new >= g[at]:
                        continue
                    g[at] = g_new
                    parent[at] = node
                    h = heuristic_distance(heuristic, x + STEP_X[d], y + STEP_Y[d], gx, gy)
                    pair_sift_up(heap_keys, heap_tags, heap_pos, heap_pos[at],
                                 g_new + _estimate(h, cheapest, weight, h_scale, alt, landmarks, neighbour, goal),
                                 ((TIE_LIMIT - np.int64(h * tie_scale)) << 32) | neighbour)
                    continue
                stamp[at] = open_mark
                g[at] = g_new
                parent[at] = node
                h = heuristic_distance(heuristic, x + STEP_X[d], y + STEP_Y[d], gx, gy)
                key = g_new + _estimate(h, cheapest, weight, h_scale, alt, landmarks, neighbour, goal)
                tag = ((TIE_LIMIT - np.int64(h * tie_scale)) << 32) | neighbour
                if held_tag < 0:
                    held_key = key
                    held_tag = tag
                    continue
                if key < held_key or (key == held_key and tag > held_tag):
                    key, held_key = held_key, key
                    tag, held_tag = held_tag, tag
                pair_sift_up(heap_keys, heap_tags, heap_pos, size, key, tag)
                size += 1
        return SEARCH_NO_PATH, best, expanded

    return search


search_uniform = _search_kernel(1, 0, DIAGONAL_NO_CORNER_CUTTING, HEURISTIC_OCTILE, True)
search_weighted = _search_kernel(0, 0, DIAGONAL_NO_CORNER_CUTTING, HEURISTIC_OCTILE, False)
search_any = _search_kernel(-1, -1, -1, -1, False)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
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
    heap_keys,
    heap_tags,
    heap_pos,
    landmarks,
):
    """Search from (sx, sy) to (gx, gy); both must be passable and in bounds.

    passable: C-contiguous integer (H, W), nonzero = passable. cost_index: C-contiguous
    unsigned integer (H, W) and cost_table: float64 (K,): entering cell (x, y) costs
    ``cost_table[cost_index[y, x]]``, read only when ``uniform`` is 0 (a (1, 1)
    placeholder and ``[1.0]`` serve then). heights: C-contiguous float32 (H, W), read only
    when ``use_heights`` is 1. diagonal / heuristic: the DIAGONAL_* / HEURISTIC_* codes;
    weight >= 1 inflates h, which is scaled by the cheapest cost in ``cost_table`` (see
    :func:`min_cost`). max_expansions: 0 for no limit.

    Workspace (see the module docstring): g float64 (N,), parent and stamp int32 (N,),
    and the open list, :mod:`pathserver.core.heap`'s ``pair_*`` heap: heap_keys float64
    (N,), heap_tags int64 (N,), heap_pos int32 (N,), N >= H * W.

    landmarks: float32 (H * W, 2 K), :func:`pathserver.core.landmarks.landmark_table` of
    a graph with no fewer moves and no dearer ones, or (1, 0) for none (uniform cost: the
    tie order of ``fused`` keys takes none). It strengthens the estimate; the answer is
    the same, found with fewer expansions.

    Open nodes come off in order of f, then of smaller h (toward the goal), then of larger
    node id. Returns (status, end_node, expanded): SEARCH_FOUND with end_node the goal;
    SEARCH_NO_PATH or SEARCH_BUDGET with end_node the closed node nearest the goal by
    the heuristic (for partial paths). Follow ``parent`` from end_node to the start.
    """
    # The option sets most queries use get their own copy of the loop; any other runs
    # the copy that reads the options.
    if use_heights == 0 and diagonal == DIAGONAL_NO_CORNER_CUTTING and heuristic == HEURISTIC_OCTILE:
        if uniform != 0:
            return search_uniform(
                passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, sx, sy, gx, gy,
                diagonal, heuristic, weight, max_expansions, g, parent, stamp, pass_id, heap_keys, heap_tags, heap_pos,
                landmarks,
            )
        return search_weighted(
            passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, sx, sy, gx, gy,
            diagonal, heuristic, weight, max_expansions, g, parent, stamp, pass_id, heap_keys, heap_tags, heap_pos,
            landmarks,
        )
    return search_any(
        passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, sx, sy, gx, gy,
        diagonal, heuristic, weight, max_expansions, g, parent, stamp, pass_id, heap_keys, heap_tags, heap_pos,
        landmarks,
    )


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def path_steps(parent, width, start, end):
    """The straight and the diagonal steps of the path :func:`trace_path_into` writes
    (its cells: one more than their sum)."""
    straight = 0
    diagonal = 0
    node = end
    while node != start:
        prev = parent[node]
        more_straight, more_diagonal = leg_steps(node, prev, width)
        straight += more_straight
        diagonal += more_diagonal
        node = prev
    return straight, diagonal


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def leg_steps(node, prev, width):
    """The straight and the diagonal steps of the cheapest way between two cells on one
    straight or diagonal line, or a diagonal and a straight run (a jump's)."""
    span = abs(node % width - prev % width)
    rows = abs(node // width - prev // width)
    if span > rows:
        return span - rows, rows
    return rows - span, span


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def trace_path_into(out, parent, width, start, end, count):
    """Write the cells from ``start`` to ``end`` following ``parent`` back from ``end``
    into ``out[:count]`` (``count``: one more than :func:`path_steps`' two; int32 (x, y)
    rows, start and end included).

    Consecutive parents may be several cells apart along a straight or diagonal line
    (jump points); the segment between them is filled in cell by cell.
    """
    i = count - 1
    node = end
    y = node // width
    x = node - y * width
    out[i, 0] = x
    out[i, 1] = y
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
            out[i, 0] = x
            out[i, 1] = y
        node = prev


@njit(cache=True, nogil=True)
def trace_path(parent, width, start, end):
    """The cells from ``start`` to ``end`` (see :func:`trace_path_into`), a new int32
    (n, 2) array of (x, y), start and end included."""
    straight, diagonal = path_steps(parent, width, start, end)
    count = straight + diagonal + 1
    path = np.empty((count, 2), dtype=np.int32)
    trace_path_into(path, parent, width, start, end, count)
    return path
