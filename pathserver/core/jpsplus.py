"""JPS+ : Jump Point Search on precomputed jump distances (the offline variant of
:mod:`pathserver.core.jps`, same grid rule: 8-connected, uniform cost, no corner cutting).

:func:`jump_table` stores, for every cell and each of the eight directions, how far the
online search would scan from that cell before it stops, so a search reads one number
where the online one scans bitmaps (straight moves) or steps cell by cell (diagonals):

- straight directions: ``d > 0``: the first jump point (a cell with a forced neighbour
  for that direction of travel, see :mod:`pathserver.core.jps`) is ``d`` steps away;
  ``d <= 0``: there is none, and ``-d`` legal steps lead to the wall.
- diagonal directions: ``d > 0``: ``d`` legal diagonal steps reach the first cell from
  which a straight scan along one of the diagonal's two components finds a jump point;
  ``d <= 0``: there is none, ``-d`` legal steps lead to a dead end.

int16 (H * W, 8), one row per cell (the eight numbers of a node share a cache line);
directions in the order of :data:`DIRECTION_X` / :data:`DIRECTION_Y`. 16 bytes a cell;
only grids whose sides are below 32768 cells fit (:func:`fits`).

The goal is handled at query time, exactly: a straight move stops on the goal when it
lies on the line within ``|d|`` steps; a diagonal move stops where it reaches the goal's
row or column (when the goal lies in its quadrant within ``|d|`` steps). That extra stop
is the only cell from which a straight scan could meet the goal, so the online search
would stop there or expand nothing the extra node misses: the path stays optimal.

:func:`update_jump_table` redoes only what an edit of the grid can change.
"""

import numpy as np
from numba import njit

from pathserver.core.astar import SQRT2, _octile
from pathserver.core.heap import TIE, key_pop, key_sift_up
from pathserver.core.status import SEARCH_BUDGET, SEARCH_FOUND, SEARCH_NO_PATH

#: The eight directions: east, south, west, north, then the diagonals SE, SW, NW, NE
#: (y grows downwards), the order of :func:`pathserver.core.jps.jps`.
DIRECTION_X = (1, 0, -1, 0, 1, -1, -1, 1)
DIRECTION_Y = (0, 1, 0, -1, 1, 1, -1, -1)
#: Distances are int16: a side of this many cells or more does not fit.
MAX_SIDE = 32767


def fits(height: int, width: int) -> bool:
    """Whether a grid of this size can have a jump table (int16 distances)."""
    return max(height, width) < MAX_SIDE


@njit(cache=True, nogil=True, inline="always")
def _free(cells, width, height, x, y):
    return 0 <= x < width and 0 <= y < height and cells[y * width + x] != 0


@njit(cache=True, nogil=True, inline="always")
def _has_forced(cells, width, height, x, y, dx, dy):
    """Whether the free cell (x, y), entered moving straight along (dx, dy), has a forced
    neighbour: a free side cell whose predecessor along the move is blocked."""
    if dx != 0:
        for s in (-1, 1):
            if _free(cells, width, height, x, y + s) and not _free(cells, width, height, x - dx, y + s):
                return True
        return False
    for s in (-1, 1):
        if _free(cells, width, height, x + s, y) and not _free(cells, width, height, x + s, y - dy):
            return True
    return False


@njit(cache=True, nogil=True)
def _straight_rows(cells, width, height, table, y0, y1):
    """East (0) and west (2) distances of rows y0..y1 - 1."""
    for y in range(y0, y1):
        row = y * width
        for d in (0, 2):
            dx = 1 if d == 0 else -1
            x = width - 1 if dx > 0 else 0
            # Walk against the direction of travel: each cell reads its neighbour ahead.
            ahead = 0  # the neighbour ahead's distance; unused at the edge
            for _ in range(width):
                node = row + x
                if cells[node] == 0:
                    table[node, d] = 0
                else:
                    nx = x + dx
                    if nx < 0 or nx >= width or cells[row + nx] == 0:
                        table[node, d] = 0
                    elif _has_forced(cells, width, height, nx, y, dx, 0):
                        table[node, d] = 1
                    elif ahead > 0:
                        table[node, d] = ahead + 1
                    else:
                        table[node, d] = ahead - 1
                ahead = table[node, d]
                x -= dx


@njit(cache=True, nogil=True)
def _straight_columns(cells, width, height, table, x0, x1):
    """South (1) and north (3) distances of columns x0..x1 - 1."""
    for x in range(x0, x1):
        for d in (1, 3):
            dy = 1 if d == 1 else -1
            y = height - 1 if dy > 0 else 0
            ahead = 0
            for _ in range(height):
                node = y * width + x
                if cells[node] == 0:
                    table[node, d] = 0
                else:
                    ny = y + dy
                    if ny < 0 or ny >= height or cells[ny * width + x] == 0:
                        table[node, d] = 0
                    elif _has_forced(cells, width, height, x, ny, 0, dy):
                        table[node, d] = 1
                    elif ahead > 0:
                        table[node, d] = ahead + 1
                    else:
                        table[node, d] = ahead - 1
                ahead = table[node, d]
                y -= dy


@njit(cache=True, nogil=True)
def _diagonals(cells, width, height, table, x0, y0, x1, y1):
    """The four diagonal distances, redone for every cell whose diagonal could reach the
    box [x0, x1) x [y0, y1) (rows and columns whose straight distances changed): for the
    direction (dx, dy), every cell not beyond the box both along x and along y. The whole
    grid for x0 = y0 = 0, x1 = width, y1 = height. Straight distances must be current."""
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
                if table[ahead, sd_x] > 0 or table[ahead, sd_y] > 0:
                    table[node, d] = 1
                elif table[ahead, d] > 0:
                    table[node, d] = table[ahead, d] + 1
                else:
                    table[node, d] = table[ahead, d] - 1
            y -= dy


@njit(cache=True, nogil=True)
def jump_table(cells):
    """The jump distances of a passability grid (see the module docstring).

    cells: uint8 (H, W) indexed [y, x], nonzero where passable; max(H, W) < 32767.
    Returns int16 (H * W, 8), row ``y * W + x``. O(H * W).
    """
    height, width = cells.shape
    flat = cells.ravel()
    table = np.zeros((height * width, 8), dtype=np.int16)
    _straight_rows(flat, width, height, table, 0, height)
    _straight_columns(flat, width, height, table, 0, width)
    _diagonals(flat, width, height, table, 0, 0, width, height)
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
    # One line either side: a cell's forced neighbours sit on the lines beside it.
    ry0 = max(0, y0 - 1)
    ry1 = min(height, y1 + 2)
    cx0 = max(0, x0 - 1)
    cx1 = min(width, x1 + 2)
    _straight_rows(flat, width, height, table, ry0, ry1)
    _straight_columns(flat, width, height, table, cx0, cx1)
    _diagonals(flat, width, height, table, cx0, ry0, cx1, ry1)
    return table, changed


@njit(cache=True, nogil=True, inline="always")
def _steps(table, node, x, y, d, gx, gy):
    """How many steps a move from ``node`` at (x, y) in direction ``d`` takes to where it
    stops (a jump point, or the goal's cell, row or column), 0 for none."""
    dx = DIRECTION_X[d]
    dy = DIRECTION_Y[d]
    dist = np.int64(table[node, d])
    reach = dist if dist > 0 else -dist
    if dx != 0 and dy != 0:
        ox = (gx - x) * dx
        oy = (gy - y) * dy
        if ox > 0 and oy > 0:
            k = ox if ox < oy else oy
            if k <= reach:
                return k
    elif dx != 0:
        if gy == y:
            k = (gx - x) * dx
            if 0 < k <= reach:
                return k
    else:
        if gx == x:
            k = (gy - y) * dy
            if 0 < k <= reach:
                return k
    return dist if dist > 0 else 0


@njit(cache=True, nogil=True)
def jps_plus(
    passable,
    table,
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
    """:func:`pathserver.core.jps.jps` reading ``table = jump_table(passable)`` (of this
    very grid, not checked) instead of scanning: the same arguments, workspace
    convention and return value ``(status, end_node, expanded)``; ``parent`` links jump
    points on a common row, column or diagonal (for :func:`~pathserver.core.astar.
    trace_path`).

    The heap orders one fused key a node (``heap_f``; see :data:`pathserver.core.heap.
    TIE`), so ``heap_h`` is free: it holds each open node's arrival direction instead
    (as int64), which spares a division per expansion.
    """
    height, width = passable.shape
    cells = passable.ravel()
    arrival = heap_h.view(np.int64)
    open_mark = pass_id
    closed_mark = pass_id + 1
    start = sy * width + sx
    goal = gy * width + gx
    h_scale = weight * (1.0 + TIE)
    h0 = _octile(sx, sy, gx, gy)
    g[start] = 0.0
    parent[start] = start
    stamp[start] = open_mark
    arrival[start] = 8
    heap_nodes[0] = start
    heap_f[0] = h0 * h_scale
    heap_pos[start] = 0
    size = 1
    best = start
    best_h = h0
    expanded = 0
    while size > 0:
        node, size = key_pop(heap_nodes, heap_f, heap_pos, size)
        if node == goal:
            return SEARCH_FOUND, goal, expanded
        if max_expansions > 0 and expanded >= max_expansions:
            return SEARCH_BUDGET, best, expanded
        stamp[node] = closed_mark
        expanded += 1
        y = node // width
        x = node - y * width
        g_node = g[node]
        h_node = _octile(x, y, gx, gy)
        if h_node < best_h:
            best_h = h_node
            best = node
        came = arrival[node]
        dx = DIRECTION_X[came] if came < 8 else 0
        dy = DIRECTION_Y[came] if came < 8 else 0
        for d in range(8):
            ddx = DIRECTION_X[d]
            ddy = DIRECTION_Y[d]
            # The pruning of jps(): the start tries all eight directions, a jump point its
            # natural ones and, after a straight move, the forced ones.
            if came < 8:
                if dx != 0 and dy != 0:
                    if ddx == -dx or ddy == -dy:
                        continue
                elif dx != 0:
                    if ddx == -dx:
                        continue
                    if ddy != 0 and not (_free(cells, width, height, x, y + ddy)
                                         and not _free(cells, width, height, x - dx, y + ddy)):
                        continue
                else:
                    if ddy == -dy:
                        continue
                    if ddx != 0 and not (_free(cells, width, height, x + ddx, y)
                                         and not _free(cells, width, height, x + ddx, y - dy)):
                        continue
            k = _steps(table, node, x, y, d, gx, gy)
            if k == 0:
                continue
            successor = node + k * (ddy * width + ddx)
            mark = stamp[successor]
            if mark == closed_mark:
                continue
            g_new = g_node + (k * SQRT2 if ddx != 0 and ddy != 0 else k * 1.0)
            if mark == open_mark:
                if g_new < g[successor]:
                    g[successor] = g_new
                    parent[successor] = node
                    arrival[successor] = d
                    at = heap_pos[successor]
                    heap_f[at] = g_new + _octile(x + k * ddx, y + k * ddy, gx, gy) * h_scale
                    key_sift_up(heap_nodes, heap_f, heap_pos, at)
                continue
            stamp[successor] = open_mark
            g[successor] = g_new
            parent[successor] = node
            arrival[successor] = d
            heap_nodes[size] = successor
            heap_f[size] = g_new + _octile(x + k * ddx, y + k * ddy, gx, gy) * h_scale
            key_sift_up(heap_nodes, heap_f, heap_pos, size)
            size += 1
    return SEARCH_NO_PATH, best, expanded
