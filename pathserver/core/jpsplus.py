"""JPS+ : Jump Point Search on precomputed jump distances (the offline variant of
:mod:`pathserver.core.jps`, same grid rule: 8-connected, uniform cost, no corner cutting).

:func:`jump_table` stores, for every cell and each of the eight directions, how far the
online search would scan from that cell before it stops: int8 (H * W, 8), directions in
the order of :data:`DIRECTION_X` / :data:`DIRECTION_Y`.

- straight directions: ``d > 0``: the first jump point (a cell with a forced neighbour
  for that direction of travel, see :mod:`pathserver.core.jps`) is ``d`` steps away;
  ``d <= 0``: there is none, and ``-d`` legal steps lead to the wall.
- diagonal directions: ``d > 0``: ``d`` legal diagonal steps reach the first cell from
  which a straight scan along one of the diagonal's two components finds a jump point;
  ``d <= 0``: there is none, ``-d`` legal steps lead to a dead end.
- :data:`SAT`: the next :data:`SAT_STEP` steps are legal and hold no jump point; read on
  from the cell that far ahead.

:func:`update_jump_table` redoes only what an edit of the grid can change. :func:`jps_plus`
searches with the table, stopping on the goal at query time, and with an overlay for a
request's avoided cells. Why the table is laid out so, why the goal's stops keep the path
optimal, and how the overlay is read: docs/design.md, "JPS+".
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.astar import leg_steps, octile
from pathserver.core.heap import TIE
from pathserver.core.jps import bitmap_words, next_stop, previous_stop
from pathserver.core.moves import SQRT2
from pathserver.core.relay import overlay_columns, overlay_rows
from pathserver.core.status import SEARCH_BUDGET, SEARCH_FOUND, SEARCH_NO_PATH

#: The eight directions: east, south, west, north, then the diagonals SE, SW, NW, NE
#: (y grows downwards), the order of :func:`pathserver.core.jps.jps`.
DIRECTION_X = (1, 0, -1, 0, 1, -1, -1, 1)
DIRECTION_Y = (0, 1, 0, -1, 1, 1, -1, -1)
#: The stored value of a distance past 126: "no jump point within SAT_STEP steps, all of
#: them legal: read on from there".
SAT = 127
SAT_STEP = 126
#: Node ids and links hold up to 2**27 cells; a side must fit an int32 offset.
MAX_SIDE = 1 << 26


def fits(height: int, width: int) -> bool:
    """Whether a grid of this size can have a jump table."""
    return max(height, width) < MAX_SIDE and height * width < (1 << 27)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _stored(distance):
    """A true distance as the table stores it."""
    if distance > SAT_STEP or distance < -SAT_STEP:
        return SAT
    return distance


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _one_more(stored):
    """The stored distance of the cell one step behind one whose stored distance is
    ``stored`` (no jump point at that cell itself)."""
    if stored == SAT:
        return SAT
    return _stored(stored + 1 if stored > 0 else stored - 1)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _finds(table, node, d, step):
    """Whether a move from ``node`` in direction ``d`` (``step``: its node offset) reaches
    a jump point at all, reading on past SAT entries."""
    value = table[node, d]
    while value == SAT:
        node += SAT_STEP * step
        value = table[node, d]
    return value > 0


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def table_distance(table, node, d, step):
    """The steps from ``node`` to the jump point a move in direction ``d`` reaches, 0
    for none (reading on past SAT entries)."""
    total = 0
    value = np.int64(table[node, d])
    while value == SAT:
        total += SAT_STEP
        node += SAT_STEP * step
        value = np.int64(table[node, d])
    return total + value if value > 0 else 0


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def table_within(table, node, d, step, steps):
    """Whether ``steps`` > 0 moves from ``node`` in direction ``d`` are legal and meet
    no jump point before the last."""
    value = np.int64(table[node, d])
    while value == SAT:
        if steps <= SAT_STEP:
            return True
        steps -= SAT_STEP
        node += SAT_STEP * step
        value = np.int64(table[node, d])
    return steps <= (value if value > 0 else -value)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def is_free(cells, width, height, x, y):
    """Whether (x, y) is on the flat grid ``cells`` (row-major, ``width`` a row) and free."""
    return 0 <= x < width and 0 <= y < height and cells[y * width + x] != 0


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def has_forced(cells, width, height, x, y, dx, dy):
    """Whether the free cell (x, y), entered moving straight along (dx, dy), has a forced
    neighbour: a free side cell whose predecessor along the move is blocked."""
    if dx != 0:
        for s in (-1, 1):
            if is_free(cells, width, height, x, y + s) and not is_free(cells, width, height, x - dx, y + s):
                return True
        return False
    for s in (-1, 1):
        if is_free(cells, width, height, x + s, y) and not is_free(cells, width, height, x + s, y - dy):
            return True
    return False


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _straight_rows(cells, width, height, table, y0, y1, stops):
    """East (0) and west (2) distances of rows y0..y1 - 1 (``stops``: see
    :func:`jump_table_stops`)."""
    for y in range(y0, y1):
        row = y * width
        for d in (0, 2):
            dx = 1 if d == 0 else -1
            x = width - 1 if dx > 0 else 0
            # Walk against the direction of travel: each cell reads its neighbour ahead.
            ahead = 0  # the true distance of the neighbour ahead; unused at the edge
            for _ in range(width):
                node = row + x
                distance = 0
                if cells[node] != 0:
                    nx = x + dx
                    if nx < 0 or nx >= width or cells[row + nx] == 0:
                        distance = 0
                    elif has_forced(cells, width, height, nx, y, dx, 0) or (
                            stops.shape[0] > 0 and stops[row + nx] != 0):
                        distance = 1
                    elif ahead > 0:
                        distance = ahead + 1
                    else:
                        distance = ahead - 1
                table[node, d] = _stored(distance)
                ahead = distance
                x -= dx


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _straight_columns(cells, width, height, table, x0, x1, stops):
    """South (1) and north (3) distances of columns x0..x1 - 1 (``stops``: see
    :func:`jump_table_stops`)."""
    for x in range(x0, x1):
        for d in (1, 3):
            dy = 1 if d == 1 else -1
            y = height - 1 if dy > 0 else 0
            ahead = 0
            for _ in range(height):
                node = y * width + x
                distance = 0
                if cells[node] != 0:
                    ny = y + dy
                    if ny < 0 or ny >= height or cells[ny * width + x] == 0:
                        distance = 0
                    elif has_forced(cells, width, height, x, ny, 0, dy) or (
                            stops.shape[0] > 0 and stops[ny * width + x] != 0):
                        distance = 1
                    elif ahead > 0:
                        distance = ahead + 1
                    else:
                        distance = ahead - 1
                table[node, d] = _stored(distance)
                ahead = distance
                y -= dy


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _diagonals(cells, width, height, table, x0, y0, x1, y1, stops):
    """The four diagonal distances, redone for every cell whose diagonal could reach the
    box [x0, x1) x [y0, y1) (rows and columns whose straight distances changed): for the
    direction (dx, dy), every cell not beyond the box both along x and along y. The whole
    grid for x0 = y0 = 0, x1 = width, y1 = height. Straight distances must be current.
    A diagonal also stops on a cell of ``stops`` (see :func:`jump_table_stops`)."""
    for d in range(4, 8):
        dx = DIRECTION_X[d]
        dy = DIRECTION_Y[d]
        sd_x = 0 if dx > 0 else 2
        sd_y = 1 if dy > 0 else 3
        # Rows far to near along dy: a cell reads the one diagonally ahead, done before it.
        y = height - 1 if dy > 0 else 0
        for _ in range(height):
            row_beyond = y >= y1 if dy > 0 else y < y0
            for x in range(width):
                if row_beyond and (x >= x1 if dx > 0 else x < x0):
                    continue
                node = y * width + x
                nx = x + dx
                ny = y + dy
                if (cells[node] == 0 or nx < 0 or nx >= width or ny < 0 or ny >= height
                        or cells[ny * width + nx] == 0 or cells[y * width + nx] == 0
                        or cells[ny * width + x] == 0):
                    table[node, d] = 0
                    continue
                ahead = ny * width + nx
                if _finds(table, ahead, sd_x, dx) or _finds(table, ahead, sd_y, dy * width) or (
                        stops.shape[0] > 0 and stops[ahead] != 0):
                    table[node, d] = 1
                else:
                    table[node, d] = _one_more(table[ahead, d])
            y -= dy


@njit(cache=True, nogil=True)
def jump_table(cells):
    """The jump distances of a passability grid (see the module docstring).

    cells: uint8 (H, W) indexed [y, x], nonzero where passable (see :func:`fits`).
    Returns int8 (H * W, 8), row ``y * W + x``. O(H * W).
    """
    return jump_table_stops(cells, np.zeros(0, dtype=np.uint8))


@njit(cache=True, nogil=True)
def jump_table_stops(cells, stops):
    """:func:`jump_table` with more jump points: ``stops``, uint8 (H * W,) nonzero on
    each (row ``y * W + x``), or empty for none. A straight move stops on a passable cell
    of ``stops`` as on one with a forced neighbour, and so a diagonal stops where a
    straight move from it finds one; a diagonal also stops on one. (The sources of a
    map's links, :mod:`pathserver.core.links_jps`.)"""
    height, width = cells.shape
    flat = cells.ravel()
    table = np.zeros((height * width, 8), dtype=np.int8)
    _straight_rows(flat, width, height, table, 0, height, stops)
    _straight_columns(flat, width, height, table, 0, width, stops)
    _diagonals(flat, width, height, table, 0, 0, width, height, stops)
    return table


@njit(cache=True, nogil=True)
def update_jump_table(cells, old_cells, old_table):
    """The jump table of ``cells`` from that of ``old_cells`` (same shape), redoing only
    what the cells that changed passability can reach: the rows and columns next to
    them (straight distances: forced neighbours look one line aside) and the diagonals
    that run into those. Returns ``(table, changed)``: ``old_table`` itself when no cell
    changed passability (changed 0), else a new array (changed: how many cells did)."""
    height, width = cells.shape
    x0 = width
    y0 = height
    x1 = -1
    y1 = -1
    changed = 0
    for y in range(height):
        for x in range(width):
            if (cells[y, x] != 0) != (old_cells[y, x] != 0):
                changed += 1
                x0 = min(x0, x)
                x1 = max(x1, x)
                y0 = min(y0, y)
                y1 = max(y1, y)
    if changed == 0:
        return old_table, 0
    table = old_table.copy()
    flat = cells.ravel()
    stops = np.zeros(0, dtype=np.uint8)
    # One line either side: a cell's forced neighbours sit on the lines beside it.
    ry0 = max(0, y0 - 1)
    ry1 = min(height, y1 + 2)
    cx0 = max(0, x0 - 1)
    cx1 = min(width, x1 + 2)
    _straight_rows(flat, width, height, table, ry0, ry1, stops)
    _straight_columns(flat, width, height, table, cx0, cx1, stops)
    _diagonals(flat, width, height, table, cx0, ry0, cx1, ry1, stops)
    return table, changed


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _prune(bound_rows, bounds, node, gx, gy, mask):
    """``mask`` (bit d: direction d) without the directions whose box at ``node`` does not
    hold the goal (gx, gy) (goal bounds, :mod:`pathserver.core.bounds`); ``mask`` itself
    where ``node`` has no row (or there are no bounds: an empty ``bound_rows``)."""
    if bound_rows.shape[0] == 0:
        return mask
    row = bound_rows[node]
    if row < 0:
        return mask
    for d in range(8):
        if (mask >> d) & 1:
            at = 4 * d
            if gx < bounds[row, at] or gx > bounds[row, at + 2] or gy < bounds[row, at + 1] or gy > bounds[row, at + 3]:
                mask &= ~(1 << d)
    return mask


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def stop_steps(table, node, x, y, d, gx, gy, width):
    """How many steps a straight move from ``node`` at (x, y) in direction ``d`` takes
    to where it stops (a jump point, or the goal), 0 for none."""
    dx = DIRECTION_X[d]
    dy = DIRECTION_Y[d]
    step = dy * width + dx
    # The goal's distance along the line, 0 when it is not ahead on it.
    to_goal = 0
    if dx != 0:
        if gy == y and (gx - x) * dx > 0:
            to_goal = (gx - x) * dx
    elif gx == x and (gy - y) * dy > 0:
        to_goal = (gy - y) * dy
    total = 0
    value = np.int64(table[node, d])
    while value == SAT:
        if 0 < to_goal - total <= SAT_STEP:
            return to_goal
        total += SAT_STEP
        node += SAT_STEP * step
        value = np.int64(table[node, d])
    if 0 < to_goal - total <= (value if value > 0 else -value):
        return to_goal
    return total + value if value > 0 else 0


# The search state of JPS+ lives in rows 1 to 4 of the workspace's work_float (float64
# (5, N), see :func:`pathserver.core.query.solve`), laid out so that what one node needs
# shares a cache line: rows 3 and 4 hold a 16-byte record a node, its g (float64), its
# stamp (int32: the pass id open, pass id + 1 closed) and its link (int32: the parent
# node, and the direction it arrived from in the top bits); rows 1 and 2 hold the open
# list, a binary heap of 16-byte (key, node) entries. The other searches use rows 0 to
# 2 and their own stamps (``work_int[3]``), so every record is stamped by JPS+ alone.

#: A link holds the parent node in its low LINK_SHIFT bits (maps have at most 2**26
#: cells) and the arrival direction (0-7, 8 for the start) above them.
LINK_SHIFT = 27
LINK_MASK = (1 << LINK_SHIFT) - 1


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def strided_push(keys, nodes, base, size, node, key):
    """Add an entry to the heap whose entry i is (keys[base + 2i], nodes[base + 2i + 1]);
    returns the new size."""
    i = size
    while i > 0:
        up = (i - 1) >> 1
        if keys[base + 2 * up] <= key:
            break
        keys[base + 2 * i] = keys[base + 2 * up]
        nodes[base + 2 * i + 1] = nodes[base + 2 * up + 1]
        i = up
    keys[base + 2 * i] = key
    nodes[base + 2 * i + 1] = node
    return size + 1


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def strided_pop(keys, nodes, base, size):
    """Remove the minimum entry; returns (node, new size). The heap must not be empty."""
    top = nodes[base + 1]
    size -= 1
    key = keys[base + 2 * size]
    node = nodes[base + 2 * size + 1]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and keys[base + 2 * child + 2] < keys[base + 2 * child]:
            child += 1
        if key <= keys[base + 2 * child]:
            break
        keys[base + 2 * i] = keys[base + 2 * child]
        nodes[base + 2 * i + 1] = nodes[base + 2 * child + 1]
        i = child
    keys[base + 2 * i] = key
    nodes[base + 2 * i + 1] = node
    return top, size


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _compact(keys, nodes, base, size, words, records, open_mark, width, gx, gy, h_scale):
    """Drop the stale entries (a node improved since, or closed) and heapify the rest:
    each open node keeps the one entry whose key is its current one. The new size."""
    kept = 0
    for i in range(size):
        node = nodes[base + 2 * i + 1]
        if words[2 * (records + 2 * node + 1)] != open_mark:
            continue
        y = node // width
        key = keys[base + 2 * i]
        if key != keys[records + 2 * node] + octile(node - y * width, y, gx, gy) * h_scale:
            continue
        kept = strided_push(keys, nodes, base, kept, node, key)
    return kept


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _offer(node, successor, sx, sy, d, g_new, gx, gy, width, keys, nodes, base, size, words, records, open_mark,
           closed_mark, h_scale, n):
    """Offer ``successor`` at (sx, sy), reached from ``node`` at cost ``g_new`` arriving
    in direction ``d``, to the open list; the new heap size."""
    s_at = records + 2 * successor
    mark = words[2 * s_at + 2]
    if mark == closed_mark or (mark == open_mark and g_new >= keys[s_at]):
        return size
    keys[s_at] = g_new
    words[2 * s_at + 2] = open_mark
    words[2 * s_at + 3] = node | (d << LINK_SHIFT)
    if size >= n:
        size = _compact(keys, nodes, base, size, words, records, open_mark, width, gx, gy, h_scale)
    return strided_push(keys, nodes, base, size, successor, g_new + octile(sx, sy, gx, gy) * h_scale)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _offer_turns(table, node, cell, cx, cy, d, g_turn, gx, gy, width, keys, nodes, base, size, words, records,
                 open_mark, closed_mark, h_scale, n):
    """Offer the jump points the straight moves along the two components of the diagonal
    ``d`` find from ``cell`` at (cx, cy), reached from ``node`` at cost ``g_turn`` (see
    :func:`_walk_diagonal`). The new heap size."""
    dx = DIRECTION_X[d]
    dy = DIRECTION_Y[d]
    along_x = 0 if dx > 0 else 2
    along_y = 1 if dy > 0 else 3
    ahead = table_distance(table, cell, along_x, dx)
    if ahead > 0:
        size = _offer(node, cell + ahead * dx, cx + ahead * dx, cy, along_x, g_turn + ahead, gx, gy, width,
                      keys, nodes, base, size, words, records, open_mark, closed_mark, h_scale, n)
    ahead = table_distance(table, cell, along_y, dy * width)
    if ahead > 0:
        size = _offer(node, cell + ahead * dy * width, cx, cy + ahead * dy, along_y, g_turn + ahead, gx, gy,
                      width, keys, nodes, base, size, words, records, open_mark, closed_mark, h_scale, n)
    return size


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _offer_goal(table, node, cell, ox, oy, k, d, g_turn, gx, gy, goal, width, keys, nodes, base, size, words,
                records, open_mark, closed_mark, h_scale, n):
    """Offer the goal where the diagonal ``d`` from ``node`` meets its row or column
    ``k`` steps past ``cell`` (at cost ``g_turn`` there; ``ox``, ``oy``: the goal's
    distances from ``cell`` along the diagonal's components), if a straight move from
    there reaches it. The new heap size."""
    dx = DIRECTION_X[d]
    dy = DIRECTION_Y[d]
    if ox == oy:
        return _offer(node, goal, gx, gy, d, g_turn, gx, gy, width, keys, nodes, base, size, words, records,
                      open_mark, closed_mark, h_scale, n)
    turn = cell + k * (dy * width + dx)
    if ox < oy:
        along = 1 if dy > 0 else 3
        if table_within(table, turn, along, dy * width, oy - ox):
            size = _offer(node, goal, gx, gy, along, g_turn + (oy - ox), gx, gy, width, keys, nodes, base, size,
                          words, records, open_mark, closed_mark, h_scale, n)
        return size
    along = 0 if dx > 0 else 2
    if table_within(table, turn, along, dx, ox - oy):
        size = _offer(node, goal, gx, gy, along, g_turn + (ox - oy), gx, gy, width, keys, nodes, base, size,
                      words, records, open_mark, closed_mark, h_scale, n)
    return size


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _stop_at(bitmaps, width, height, x, y, d):
    """Where a straight scan from (x, y) in direction ``d`` first stops: its position
    along the line (x for a row, y for a column) of a blocked cell, a cell with a forced
    neighbour, or the guard just outside the grid, read from the stop bitmaps of
    :func:`pathserver.core.jps.jump_bitmaps` (their "ahead" bitmaps are not read)."""
    if d == 0 or d == 2:
        first = y * (width + 2) + 1
        if d == 0:
            return next_stop(bitmaps, 0, first + x + 1) - first
        return previous_stop(bitmaps, bitmap_words(height, width), first + x - 1) - first
    columns = 4 * bitmap_words(height, width)
    first = x * (height + 2) + 1
    if d == 1:
        return next_stop(bitmaps, columns, first + y + 1) - first
    return previous_stop(bitmaps, columns + bitmap_words(width, height), first + y - 1) - first


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _scan(bitmaps, cells, width, height, x, y, d, gx, gy):
    """:func:`_steps` scanning the stop bitmaps instead of reading the table: how many
    steps a straight move from (x, y) in direction ``d`` takes to the jump point or the
    goal where it stops, 0 for none."""
    stop = _stop_at(bitmaps, width, height, x, y, d)
    if d == 0 or d == 2:
        dx = DIRECTION_X[d]
        steps = (stop - x) * dx
        to_goal = (gx - x) * dx if gy == y else 0
        open_stop = 0 <= stop < width and cells[y * width + stop] != 0
    else:
        dy = DIRECTION_Y[d]
        steps = (stop - y) * dy
        to_goal = (gy - y) * dy if gx == x else 0
        open_stop = 0 <= stop < height and cells[stop * width + x] != 0
    # The goal is open: on the line no further than the stop, the move reaches it.
    if 0 < to_goal <= steps:
        return to_goal
    return steps if open_stop else 0


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _clean_lines(overlay, at, first, last):
    """Whether none of the lines ``first..last`` at ``overlay[at]`` (the overlay's rows or
    columns, see :mod:`pathserver.core.relay`) holds a cell the overlay redid."""
    return overlay[at + last + 1] == overlay[at + first]


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _clean_ahead(overlay, at, count, line, position, forward):
    """Whether the overlay redid no cell of line ``line`` (of the ``count`` at
    ``overlay[at]``) past ``position`` in the direction of a scan from there."""
    if forward:
        return overlay[at + 2 * count + 1 + line] <= position + 1
    return overlay[at + count + 1 + line] >= position


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _straight_over(table, bitmaps, overlay, cells, node, x, y, d, gx, gy, width, height, turn):
    """:func:`_steps` on the blocked grid under the overlay, from ``node`` at (x, y): the
    table's answer where the overlay redid no cell ahead on the line, else the scan's.
    From a diagonal's cell (``turn`` 0 short of its stop, 1 at it: the table says no jump
    point is found short of it) only a jump point or the goal counts."""
    if d == 0 or d == 2:
        clean = _clean_ahead(overlay, overlay_rows(height, width), height, y, x, d == 0)
        on_line = gy == y and (gx - x) * DIRECTION_X[d] > 0
    else:
        clean = _clean_ahead(overlay, overlay_columns(height, width), width, x, y, d == 1)
        on_line = gx == x and (gy - y) * DIRECTION_Y[d] > 0
    if not clean:
        return _scan(bitmaps, cells, width, height, x, y, d, gx, gy)
    if turn < 0 or on_line:
        return stop_steps(table, node, x, y, d, gx, gy, width)
    return table_distance(table, node, d, DIRECTION_Y[d] * width + DIRECTION_X[d]) if turn > 0 else 0


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _redone_stretch(overlay, cx, cy, dx, dy, reach, width, height):
    """Whether a row or a column of the diagonal stretch of ``reach`` steps from (cx, cy)
    holds a cell the overlay redid."""
    first_row = cy + 1 if dy > 0 else cy - reach
    first_column = cx + 1 if dx > 0 else cx - reach
    return not (_clean_lines(overlay, overlay_rows(height, width), first_row, first_row + reach - 1)
                and _clean_lines(overlay, overlay_columns(height, width), first_column, first_column + reach - 1))


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _stretch_over(table, bitmaps, overlay, cells, height, node, cell, cx, cy, walked, dist, reach, d, g_node, gx, gy,
                  goal, width, keys, nodes, base, size, words, records, open_mark, closed_mark, h_scale, n):
    """One stretch of :func:`_walk_diagonal` under an overlay, between two of the table's
    stops, whose rows or columns hold a cell the overlay redid: step by step (legal on
    the grid before, each step; avoided cells may block one), each step's two straight
    moves read from the table or scanned (:func:`_straight_over`). Returns (size, cell,
    cx, cy, walked, whether the walk ends)."""
    dx = DIRECTION_X[d]
    dy = DIRECTION_Y[d]
    along_x = 0 if dx > 0 else 2
    along_y = 1 if dy > 0 else 3
    step = dy * width + dx
    for k in range(1, reach + 1):
        if cells[cell + step] == 0 or cells[cell + dx] == 0 or cells[cell + dy * width] == 0:
            return size, cell, cx, cy, walked, True
        cell += step
        cx += dx
        cy += dy
        walked += 1
        g_here = g_node + walked * SQRT2
        if cell == goal:
            size = _offer(node, goal, gx, gy, d, g_here, gx, gy, width, keys, nodes, base, size, words, records,
                          open_mark, closed_mark, h_scale, n)
            return size, cell, cx, cy, walked, True
        turn = 1 if k == reach and dist != SAT and dist > 0 else 0
        ahead = _straight_over(table, bitmaps, overlay, cells, cell, cx, cy, along_x, gx, gy, width, height, turn)
        if ahead > 0:
            size = _offer(node, cell + ahead * dx, cx + ahead * dx, cy, along_x, g_here + ahead, gx, gy, width, keys,
                          nodes, base, size, words, records, open_mark, closed_mark, h_scale, n)
        ahead = _straight_over(table, bitmaps, overlay, cells, cell, cx, cy, along_y, gx, gy, width, height, turn)
        if ahead > 0:
            size = _offer(node, cell + ahead * dy * width, cx, cy + ahead * dy, along_y, g_here + ahead, gx, gy,
                          width, keys, nodes, base, size, words, records, open_mark, closed_mark, h_scale, n)
    return size, cell, cx, cy, walked, dist != SAT and dist <= 0


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _walk_diagonal(table, bitmaps, overlay, cells, height, node, x, y, d, g_node, gx, gy, goal, width, keys, nodes,
                   base, size, words, records, open_mark, closed_mark, h_scale, n):
    """Offer what the diagonal ``d`` from ``node`` at (x, y) leads to, without making
    its turning points nodes (the intermediate pruning of Harabor & Grastien 2014): walk
    the diagonal from one diagonal jump point to the next and offer the jump points the
    straight moves along its two components find from each (arriving straight, with
    ``node`` as parent: :func:`trace_jumps` lays the way diagonal first), and the goal
    where the diagonal meets its row or column and a straight move reaches it. The new
    heap size.

    Under an ``overlay`` (not None, see :func:`jps_plus`), a stretch whose rows or columns
    hold a cell the overlay redid is walked by :func:`_stretch_over` instead."""
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
        # On the argument itself: numba drops the branch when overlay is None.
        if overlay is not None:
            if reach > 0 and _redone_stretch(overlay, cx, cy, dx, dy, reach, width, height):
                size, cell, cx, cy, walked, done = _stretch_over(
                    table, bitmaps, overlay, cells, height, node, cell, cx, cy, walked, dist, reach, d, g_node, gx,
                    gy, goal, width, keys, nodes, base, size, words, records, open_mark, closed_mark, h_scale, n,
                )
                if done:
                    return size
                continue
        ox = (gx - cx) * dx
        oy = (gy - cy) * dy
        if ox > 0 and oy > 0:
            k = ox if ox < oy else oy
            if k <= reach:
                # The diagonal meets the goal's column (ox < oy), row, or the goal itself.
                size = _offer_goal(table, node, cell, ox, oy, k, d, g_node + (walked + k) * SQRT2, gx, gy, goal,
                                   width, keys, nodes, base, size, words, records, open_mark, closed_mark, h_scale, n)
                if ox == oy:
                    return size
        if dist == SAT:
            # No diagonal jump point in the next SAT_STEP steps: read on from there.
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
        size = _offer_turns(table, node, cell, cx, cy, d, g_node + walked * SQRT2, gx, gy, width, keys, nodes, base,
                            size, words, records, open_mark, closed_mark, h_scale, n)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def jps_plus(passable, table, sx, sy, gx, gy, weight, max_expansions, work_float, pass_id, sources, bound_rows,
             bounds, bitmaps, overlay):
    """:func:`pathserver.core.jps.jps` reading ``table = jump_table(passable)`` (of this
    very grid, not checked) instead of scanning.

    passable, sx, sy, gx, gy, weight, max_expansions: as for jps. work_float: float64
    (5, N), N > H * W, zeroed when allocated, rows 1 to 4 laid out as the comment above
    this function's helpers says (:func:`jump_cost` and :func:`trace_jumps` read the
    result). pass_id: this search's, from the workspace's counter (stamps pass_id open,
    pass_id + 1 closed; one no larger than the last clears the records). sources: int32
    node ids ``y * W + x``, each passable, all searched from at once at cost 0 (then
    (sx, sy) is not one; :func:`jump_root` names a node's source), or empty for the one
    start (sx, sy). bound_rows, bounds: :mod:`pathserver.core.bounds` of this grid, or
    empty arrays. bitmaps, overlay: None; or, for ``passable`` with a request's avoided
    cells blocked and ``table`` the grid before's, what
    :func:`pathserver.core.relay.lay_avoided` made of the grid before's
    :func:`pathserver.core.jps.jump_bitmaps` (then ``bounds`` must be empty): the search is
    JPS+ on the blocked grid, the same expansions, paths of the same cost.

    Returns (status, end_node, expanded) as jps does.
    """
    height, width = passable.shape
    cells = passable.reshape(height * width)
    n = work_float.shape[1]
    keys = work_float.reshape(-1)
    nodes = keys.view(np.int64)
    words = keys.view(np.int32)
    base = n  # heap entry i: keys[base + 2 * i], nodes[base + 2 * i + 1]
    records = 3 * n  # node v: g at keys[records + 2v], stamp and link at words[2 (records + 2v + 1)] and + 1
    last_pass = 2 * (records + 2 * (n - 1) + 1)
    if pass_id <= words[last_pass]:
        work_float[3:] = 0.0
    words[last_pass] = pass_id
    open_mark = pass_id
    closed_mark = pass_id + 1
    goal = gy * width + gx
    h_scale = weight * (1.0 + TIE)
    size = 0
    best = -1
    best_h = np.inf
    for k in range(max(sources.shape[0], 1)):
        start = sources[k] if sources.shape[0] > 0 else sy * width + sx
        at = records + 2 * start
        if words[2 * at + 2] == open_mark:
            continue  # a source twice
        y = start // width
        h0 = octile(start - y * width, y, gx, gy)
        keys[at] = 0.0
        words[2 * at + 2] = open_mark
        words[2 * at + 3] = start | (8 << LINK_SHIFT)
        size = strided_push(keys, nodes, base, size, start, h0 * h_scale)
        if h0 < best_h:
            best_h = h0
            best = start
    expanded = 0
    while size > 0:
        node, size = strided_pop(keys, nodes, base, size)
        at = records + 2 * node
        if words[2 * at + 2] == closed_mark:
            continue  # a stale entry: the node was improved and expanded since
        if node == goal:
            return SEARCH_FOUND, goal, expanded
        if max_expansions > 0 and expanded >= max_expansions:
            return SEARCH_BUDGET, best, expanded
        words[2 * at + 2] = closed_mark
        expanded += 1
        y = node // width
        x = node - y * width
        g_node = keys[at]
        h_node = octile(x, y, gx, gy)
        if h_node < best_h:
            best_h = h_node
            best = node
        came = words[2 * at + 3] >> LINK_SHIFT
        # The pruning of jps() as a set of directions: the start tries all eight, a jump
        # point reached diagonally its natural three, one reached straight its natural
        # one and the forced ones beside it.
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
        if came < 8:
            mask = _prune(bound_rows, bounds, node, gx, gy, mask)
        for d in range(8):
            if (mask >> d) & 1 == 0:
                continue
            ddx = DIRECTION_X[d]
            ddy = DIRECTION_Y[d]
            if ddx != 0 and ddy != 0:
                size = _walk_diagonal(
                    table, bitmaps, overlay, cells, height, node, x, y, d, g_node, gx, gy, goal, width, keys, nodes,
                    base, size, words, records, open_mark, closed_mark, h_scale, n,
                )
                continue
            # On the argument itself: numba drops the branch not taken when it compiles, so
            # the search without an overlay carries none of its code.
            if overlay is not None:
                k = _straight_over(table, bitmaps, overlay, cells, node, x, y, d, gx, gy, width, height, -1)
            else:
                k = stop_steps(table, node, x, y, d, gx, gy, width)
            if k == 0:
                continue
            size = _offer(node, node + k * (ddy * width + ddx), x + k * ddx, y + k * ddy, d, g_node + k,
                          gx, gy, width, keys, nodes, base, size, words, records, open_mark, closed_mark, h_scale, n)
    return SEARCH_NO_PATH, best, expanded


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def jump_root(work_float, node):
    """The start (a source) whose links lead to ``node`` in :func:`jps_plus`'s last search."""
    links = work_float.reshape(-1).view(np.int32)
    first = 2 * (3 * work_float.shape[1]) + 3
    parent = links[first + 4 * node] & LINK_MASK
    while parent != node:
        node = parent
        parent = links[first + 4 * node] & LINK_MASK
    return node


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def jump_stamp(work_float, node):
    """The stamp :func:`jps_plus` left on ``node`` (its pass id open, + 1 closed)."""
    return work_float.reshape(-1).view(np.int32)[2 * (3 * work_float.shape[1] + 2 * node + 1)]


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def jump_cost(work_float, node):
    """The cost :func:`jps_plus` found to ``node`` (closed or open in its last pass)."""
    return work_float.reshape(-1)[3 * work_float.shape[1] + 2 * node]


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def jump_parent(work_float, node):
    """The node :func:`jps_plus` reached ``node`` from (itself for the start)."""
    links = work_float.reshape(-1).view(np.int32)
    return links[2 * (3 * work_float.shape[1] + 2 * node + 1) + 1] & LINK_MASK


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def jump_path_steps(work_float, width, start, end):
    """The straight and the diagonal steps of the path :func:`trace_jumps_into` writes
    (its cells: one more than their sum)."""
    links = work_float.reshape(-1).view(np.int32)
    first = 2 * (3 * work_float.shape[1]) + 3  # node v's link: links[first + 4v]
    straight = 0
    diagonal = 0
    node = end
    while node != start:
        parent = links[first + 4 * node] & LINK_MASK
        more_straight, more_diagonal = leg_steps(node, parent, width)
        straight += more_straight
        diagonal += more_diagonal
        node = parent
    return straight, diagonal


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def trace_jumps_into(out, work_float, width, start, end, count):
    """:func:`pathserver.core.astar.trace_path_into` over :func:`jps_plus`'s records: the
    cells from ``start`` to ``end`` into ``out[:count]`` (``count``: one more than
    :func:`jump_path_steps`' two; int32 (x, y) rows, both ends included)."""
    links = work_float.reshape(-1).view(np.int32)
    first = 2 * (3 * work_float.shape[1]) + 3
    # Each cell written as one int64, x in the low half (little-endian, as int32 pairs
    # lie in memory): a step is one addition to it.
    cells = out.reshape(-1).view(np.int64)
    i = count - 1
    node = end
    y = node // width
    x = node - y * width
    cells[i] = _pack(x, y)
    while node != start:
        parent = links[first + 4 * node] & LINK_MASK
        py = parent // width
        px = parent - py * width
        span = abs(px - x)
        rows = abs(py - y)
        # Back from the node: the straight leg first, then the diagonal, so that the way
        # from the parent runs diagonal first (how _walk_diagonal found it).
        if span > rows:
            straight = _pack(1 if px > x else -1, 0)
            diagonal = rows
            straight_steps = span - rows
        else:
            straight = _pack(0, 1 if py > y else -1)
            diagonal = span
            straight_steps = rows - span
        step = _pack(1 if px > x else -1, 1 if py > y else -1)
        cell = cells[i]
        for _ in range(straight_steps):
            cell += straight
            i -= 1
            cells[i] = cell
        for _ in range(diagonal):
            cell += step
            i -= 1
            cells[i] = cell
        x = px
        y = py
        node = parent


@njit(cache=True, nogil=True)
def trace_jumps(work_float, width, start, end):
    """The cells from ``start`` to ``end`` (see :func:`trace_jumps_into`), a new int32
    (n, 2) array of (x, y), both ends included."""
    straight, diagonal = jump_path_steps(work_float, width, start, end)
    count = straight + diagonal + 1
    path = np.empty((count, 2), dtype=np.int32)
    trace_jumps_into(path, work_float, width, start, end, count)
    return path


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _pack(x, y):
    """(x, y) as the int64 an int32 pair (x, y) reads as; steps of -1, 0, 1 add."""
    return np.int64(x) + (np.int64(y) << 32)
