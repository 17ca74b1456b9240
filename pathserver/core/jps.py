"""Jump Point Search (Harabor & Grastien 2011) on an 8-connected uniform-cost grid with
no corner cutting: a diagonal step from (x, y) to (x + dx, y + dy) needs both (x + dx, y)
and (x, y + dy) passable, the Moving AI / GPPC rule.

Under that rule only straight moves have forced neighbours: travelling along x, the side
cell (x, y + s) is forced when it is free and the cell behind it, (x - dx, y + s), is
blocked, because the parent can reach it only through x; then (x, y + s) and
(x + dx, y + s) are explored too. After a diagonal move only the diagonal and its two
components are, and a diagonal jump stops wherever either straight scan finds a jump point.

Straight scans read :func:`jump_bitmaps`, built once per passability grid (about a byte a
cell): bitmaps of where each scan stops, searched 64 cells a step (after the block-based
scanning of Harabor & Grastien 2014), and one bit per cell and direction saying whether
the scan finds a jump point at all, so a diagonal step costs a few lookups.

Search state uses the workspace convention of :mod:`pathserver.core.astar` (stamped with
``pass_id``, never cleared). ``parent[node]`` is the previous jump point, always on the
same row, column or diagonal, so :func:`pathserver.core.astar.trace_path` fills in the
cells between them.
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit
from pathserver.core.jit import leading_zeros, trailing_zeros

from pathserver.core.astar import octile
from pathserver.core.heap import heap_decrease, heap_pop, heap_push
from pathserver.core.status import SEARCH_BUDGET, SEARCH_FOUND, SEARCH_NO_PATH

ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)
ONE = np.uint64(1)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def bitmap_words(count, length):
    """The words of one bitmap of ``count`` lines of ``length`` cells, a guard bit at each
    end of each line, packed end to end."""
    return (count * (length + 2) + 63) >> 6


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _set_bit(bitmaps, base, bit):
    bitmaps[base + (bit >> 6)] |= ONE << np.uint64(bit & 63)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _bit(bitmaps, base, bit):
    return (bitmaps[base + (bit >> 6)] >> np.uint64(bit & 63)) & ONE


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _fill_lines(lines, bitmaps, base):
    """The four bitmaps of one orientation (see :func:`jump_bitmaps`) for ``lines``, uint8
    (L, N): scanning line l along i, the side lines are l - 1 and l + 1."""
    count, length = lines.shape
    size = bitmap_words(count, length)
    stop_forward = base
    stop_back = base + size
    ahead_forward = base + 2 * size
    ahead_back = base + 3 * size
    for line in range(count):
        first = line * (length + 2) + 1
        for guard in (first - 1, first + length):
            _set_bit(bitmaps, stop_forward, guard)
            _set_bit(bitmaps, stop_back, guard)
        for i in range(length):
            if lines[line, i] == 0:
                _set_bit(bitmaps, stop_forward, first + i)
                _set_bit(bitmaps, stop_back, first + i)
                continue
            for side in (line - 1, line + 1):
                if 0 <= side < count and lines[side, i] != 0:
                    if i == 0 or lines[side, i - 1] == 0:
                        _set_bit(bitmaps, stop_forward, first + i)
                    if i == length - 1 or lines[side, i + 1] == 0:
                        _set_bit(bitmaps, stop_back, first + i)
        # ahead[i]: the first stop past i is a free cell, so a scan from i finds a jump point.
        found = False
        for i in range(length - 1, -1, -1):
            if found:
                _set_bit(bitmaps, ahead_forward, first + i)
            if _bit(bitmaps, stop_forward, first + i):
                found = lines[line, i] != 0
        found = False
        for i in range(length):
            if found:
                _set_bit(bitmaps, ahead_back, first + i)
            if _bit(bitmaps, stop_back, first + i):
                found = lines[line, i] != 0


@njit(cache=True, nogil=True)
def jump_bitmaps(passable):
    """The bitmaps :func:`jps` scans: uint64, about one byte a cell.

    passable: uint8 (H, W) indexed [y, x]. A straight scan stops on a blocked cell or on
    a cell with a forced neighbour (a free side cell whose predecessor along the scan is
    blocked); outside the grid counts as blocked. Eight bitmaps, each a whole number of
    words: for rows (H lines of W + 2 bits packed end to end, cell (x, y) at bit
    y * (W + 2) + x + 1, guard bits between lines) the stops scanning toward +x, the stops
    toward -x, then "ahead" toward +x and -x (the first stop past the cell is free: a
    scan from it finds a jump point); then the same four for columns (W lines of H + 2
    bits, cell (x, y) at bit x * (H + 2) + y + 1). Build it once per passability grid
    (so once per unit size): O(H * W).
    """
    height, width = passable.shape
    row_size = bitmap_words(height, width)
    bitmaps = np.zeros(4 * (row_size + bitmap_words(width, height)), dtype=np.uint64)
    _fill_lines(passable, bitmaps, 0)
    _fill_lines(_transposed(passable), bitmaps, 4 * row_size)
    return bitmaps


@njit(cache=True, nogil=True)
def _transposed(grid):
    """``grid.T`` as a C-contiguous copy, 64 x 64 tiles at a time: a plain transpose of a
    large grid writes (or reads) one cache line per cell."""
    height, width = grid.shape
    out = np.empty((width, height), dtype=grid.dtype)
    for y0 in range(0, height, 64):
        y1 = min(y0 + 64, height)
        for x0 in range(0, width, 64):
            x1 = min(x0 + 64, width)
            for x in range(x0, x1):
                for y in range(y0, y1):
                    out[x, y] = grid[y, x]
    return out


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def next_stop(bitmaps, base, bit):
    """The first set bit at or after ``bit`` of the bitmap at word ``base`` (a guard
    ends every line)."""
    k = bit >> 6
    word = bitmaps[base + k] & (ALL_BITS << np.uint64(bit & 63))
    while word == 0:
        k += 1
        word = bitmaps[base + k]
    return (k << 6) + trailing_zeros(word)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def previous_stop(bitmaps, base, bit):
    """The last set bit at or before ``bit`` (a guard starts every line)."""
    k = bit >> 6
    word = bitmaps[base + k] & (ALL_BITS >> np.uint64(63 - (bit & 63)))
    while word == 0:
        k -= 1
        word = bitmaps[base + k]
    return (k << 6) + 63 - leading_zeros(word)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _jump_line(bitmaps, base, count, length, line, i, step, goal_i, find):
    """Scan line ``line`` of the orientation at ``base`` from position i toward ``step``.

    Returns the position of the first jump point (the goal at ``goal_i``, -1 when it is
    not on this line, or a cell with a forced neighbour) or -1 for a dead end. With
    ``find`` False only whether there is one matters: when the goal is not ahead, returns
    0 or -1 without locating the jump point.
    """
    size = bitmap_words(count, length)
    bit = line * (length + 2) + i + 1
    if step > 0:
        ahead = _bit(bitmaps, base + 2 * size, bit)
        goal_ahead = goal_i > i
    else:
        ahead = _bit(bitmaps, base + 3 * size, bit)
        goal_ahead = 0 <= goal_i < i
    if not goal_ahead:
        if ahead == 0:
            return -1
        if not find:
            return 0
    if step > 0:
        stop = next_stop(bitmaps, base, bit + 1) - (bit - i)
        if goal_ahead and goal_i <= stop:
            return goal_i
    else:
        stop = previous_stop(bitmaps, base + size, bit - 1) - (bit - i)
        if goal_ahead and goal_i >= stop:
            return goal_i
    return stop if ahead else -1


@njit(cache=True, nogil=True, inline="always")
def _free(cells, width, height, x, y):
    return 0 <= x < width and 0 <= y < height and cells[y * width + x] != 0


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _forced(cells, width, height, x, y, behind_x, behind_y):
    """The side cell (x, y) is free and the one behind it, beside the parent's line,
    is blocked: the parent reaches it only through the jump point."""
    return _free(cells, width, height, x, y) and not _free(cells, width, height, behind_x, behind_y)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _jump_x(bitmaps, width, height, x, y, dx, gx, gy, find):
    """The x of the first jump point along the row from (x, y) toward dx, or -1 (with
    ``find`` False, any x >= 0 when there is one; see :func:`_jump_line`)."""
    return _jump_line(bitmaps, 0, height, width, y, x, dx, gx if gy == y else -1, find)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _jump_y(bitmaps, width, height, x, y, dy, gx, gy, find):
    """The y of the first jump point along the column from (x, y) toward dy, or -1."""
    columns = 4 * bitmap_words(height, width)
    return _jump_line(bitmaps, columns, width, height, x, y, dy, gy if gx == x else -1, find)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _jump_diagonal(cells, width, height, bitmaps, x, y, dx, dy, gx, gy):
    """Step diagonally from (x, y) while the move is legal; stop at the goal or where a
    straight scan finds a jump point. The node, or -1."""
    while True:
        nx = x + dx
        ny = y + dy
        if nx < 0 or nx >= width or ny < 0 or ny >= height:
            return -1
        if cells[ny * width + nx] == 0 or cells[y * width + nx] == 0 or cells[ny * width + x] == 0:
            return -1
        x = nx
        y = ny
        if x == gx and y == gy:
            return y * width + x
        if _jump_x(bitmaps, width, height, x, y, dx, gx, gy, False) >= 0:
            return y * width + x
        if _jump_y(bitmaps, width, height, x, y, dy, gx, gy, False) >= 0:
            return y * width + x


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _jump(cells, width, height, bitmaps, x, y, dx, dy, gx, gy):
    """The jump point reached from (x, y) toward (dx, dy), as a node, or -1."""
    if dx != 0 and dy != 0:
        return _jump_diagonal(cells, width, height, bitmaps, x, y, dx, dy, gx, gy)
    if dx != 0:
        at = _jump_x(bitmaps, width, height, x, y, dx, gx, gy, True)
        return y * width + at if at >= 0 else -1
    at = _jump_y(bitmaps, width, height, x, y, dy, gx, gy, True)
    return at * width + x if at >= 0 else -1


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _relax(
    node, x, y, successor, width, gx, gy, weight, g_node,
    g, parent, stamp, open_mark, closed_mark, heap_nodes, heap_f, heap_h, heap_pos, size,
):
    """Offer ``successor`` (on a line from ``node`` at (x, y)) to the open list; the new
    heap size."""
    mark = stamp[successor]
    if mark == closed_mark:
        return size
    sy = successor // width
    sx = successor - sy * width
    g_new = g_node + octile(x, y, sx, sy)
    if mark == open_mark:
        if g_new < g[successor]:
            g[successor] = g_new
            parent[successor] = node
            h = octile(sx, sy, gx, gy)
            heap_decrease(heap_nodes, heap_f, heap_h, heap_pos, successor, g_new + h * weight, h)
        return size
    stamp[successor] = open_mark
    g[successor] = g_new
    parent[successor] = node
    h = octile(sx, sy, gx, gy)
    return heap_push(heap_nodes, heap_f, heap_h, heap_pos, size, successor, g_new + h * weight, h)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def jps(
    passable,
    bitmaps,
    sx,
    sy,
    gx,
    gy,
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

    passable: uint8 (H, W) indexed [y, x], C-contiguous; bitmaps: ``jump_bitmaps(passable)``
    of this very grid (not checked). weight >= 1 inflates the octile heuristic (1 keeps
    the path optimal). max_expansions: 0 for no limit. Workspace arrays: length H*W, see
    :mod:`pathserver.core.astar`.

    Returns (status, end_node, expanded): SEARCH_FOUND with end_node the goal and
    ``g[goal]`` the path cost; SEARCH_NO_PATH or SEARCH_BUDGET with end_node the closed
    jump point nearest the goal by octile distance. Follow ``parent`` from end_node to
    the start; consecutive jump points lie on a row, column or diagonal.
    """
    height, width = passable.shape
    cells = passable.reshape(height * width)
    open_mark = pass_id
    closed_mark = pass_id + 1
    start = sy * width + sx
    goal = gy * width + gx
    h0 = octile(sx, sy, gx, gy)
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
        h_node = octile(x, y, gx, gy)
        if h_node < best_h:
            best_h = h_node
            best = node
        g_node = g[node]
        p = parent[node]
        py = p // width
        px = p - py * width
        dx = (x > px) - (x < px)
        dy = (y > py) - (y < py)
        # The start explores all eight directions; a jump point only its natural ones
        # and, after a straight move, the forced ones given the direction it came from.
        for d in range(8):
            ddx = (1, 0, -1, 0, 1, -1, -1, 1)[d]
            ddy = (0, 1, 0, -1, 1, 1, -1, -1)[d]
            if node != start:
                if dx != 0 and dy != 0:
                    if ddx == -dx or ddy == -dy:
                        continue
                elif dx != 0:
                    if ddx == -dx:
                        continue
                    if ddy != 0 and not _forced(cells, width, height, x, y + ddy, x - dx, y + ddy):
                        continue
                else:
                    if ddy == -dy:
                        continue
                    if ddx != 0 and not _forced(cells, width, height, x + ddx, y, x + ddx, y - dy):
                        continue
            successor = _jump(cells, width, height, bitmaps, x, y, ddx, ddy, gx, gy)
            if successor >= 0:
                size = _relax(
                    node, x, y, successor, width, gx, gy, weight, g_node,
                    g, parent, stamp, open_mark, closed_mark, heap_nodes, heap_f, heap_h, heap_pos, size,
                )
    return SEARCH_NO_PATH, best, expanded
