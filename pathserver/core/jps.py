"""Jump Point Search (Harabor & Grastien 2011) on an 8-connected uniform-cost grid with
no corner cutting: a diagonal step from (x, y) to (x + dx, y + dy) needs both (x + dx, y)
and (x, y + dy) passable, the Moving AI / GPPC rule.

Under that rule only straight moves have forced neighbours: travelling along x, the
side cell (x, y + s) is forced when it is free and the cell behind it, (x - dx, y + s),
is blocked, because the parent can then reach it only through x. A diagonal jump checks
its two orthogonal components at every step and stops where either finds a jump point.

Search state uses the workspace convention of :mod:`pathserver.core.astar` (stamped with
``pass_id``, never cleared). ``parent[node]`` is the previous jump point, always on the
same row, column or exact diagonal, so :func:`pathserver.core.astar.trace_path` fills in
the cells between them.
"""

import math

from numba import njit

from pathserver.core.heap import heap_decrease, heap_pop, heap_push
from pathserver.core.status import SEARCH_BUDGET, SEARCH_FOUND, SEARCH_NO_PATH

SQRT2 = math.sqrt(2.0)


@njit(cache=True, nogil=True, inline="always")
def _octile(x, y, gx, gy):
    dx = abs(x - gx)
    dy = abs(y - gy)
    if dx < dy:
        return dy + (SQRT2 - 1.0) * dx
    return dx + (SQRT2 - 1.0) * dy


@njit(cache=True, nogil=True, inline="always")
def _free(cells, width, height, x, y):
    return 0 <= x < width and 0 <= y < height and cells[y * width + x] != 0


@njit(cache=True, nogil=True)
def _jump_x(cells, width, height, x, y, dx, goal):
    """Scan along the row from (x, y) in direction dx; the jump point's node or -1."""
    row = y * width
    has_up = y > 0
    has_down = y < height - 1
    while True:
        x += dx
        if x < 0 or x >= width:
            return -1
        node = row + x
        if cells[node] == 0:
            return -1
        if node == goal:
            return node
        # The cell behind a free side cell is on the row, so it is in bounds.
        if has_up and cells[node - width] != 0 and cells[node - width - dx] == 0:
            return node
        if has_down and cells[node + width] != 0 and cells[node + width - dx] == 0:
            return node


@njit(cache=True, nogil=True)
def _jump_y(cells, width, height, x, y, dy, goal):
    """Scan along the column from (x, y) in direction dy; the jump point's node or -1."""
    has_left = x > 0
    has_right = x < width - 1
    step = dy * width
    node = y * width + x
    while True:
        y += dy
        if y < 0 or y >= height:
            return -1
        node += step
        if cells[node] == 0:
            return -1
        if node == goal:
            return node
        if has_left and cells[node - 1] != 0 and cells[node - 1 - step] == 0:
            return node
        if has_right and cells[node + 1] != 0 and cells[node + 1 - step] == 0:
            return node


@njit(cache=True, nogil=True)
def _jump_diagonal(cells, width, height, x, y, dx, dy, goal):
    """Step diagonally from (x, y) while the move is legal; stop where the goal is or
    where a straight scan from the cell finds a jump point. The node or -1."""
    while True:
        nx = x + dx
        ny = y + dy
        if not (_free(cells, width, height, nx, ny) and _free(cells, width, height, nx, y) and _free(cells, width, height, x, ny)):
            return -1
        x = nx
        y = ny
        node = y * width + x
        if node == goal:
            return node
        if _jump_x(cells, width, height, x, y, dx, goal) >= 0 or _jump_y(cells, width, height, x, y, dy, goal) >= 0:
            return node


@njit(cache=True, nogil=True, inline="always")
def _relax(node, successor, width, gx, gy, weight, g_node, g, parent, stamp, open_mark, closed_mark, heap_nodes, heap_f, heap_h, heap_pos, size):
    """Offer ``successor`` (on a line from ``node``) to the open list; the new heap size."""
    mark = stamp[successor]
    if mark == closed_mark:
        return size
    y = node // width
    x = node - y * width
    sy = successor // width
    sx = successor - sy * width
    g_new = g_node + _octile(x, y, sx, sy)
    if mark == open_mark:
        if g_new < g[successor]:
            g[successor] = g_new
            parent[successor] = node
            h = _octile(sx, sy, gx, gy)
            heap_decrease(heap_nodes, heap_f, heap_h, heap_pos, successor, g_new + h * weight, h)
        return size
    stamp[successor] = open_mark
    g[successor] = g_new
    parent[successor] = node
    h = _octile(sx, sy, gx, gy)
    return heap_push(heap_nodes, heap_f, heap_h, heap_pos, size, successor, g_new + h * weight, h)


@njit(cache=True, nogil=True)
def jps(passable, sx, sy, gx, gy, weight, max_expansions, g, parent, stamp, pass_id, heap_nodes, heap_f, heap_h, heap_pos):
    """Search from (sx, sy) to (gx, gy); both must be passable and in bounds.

    passable: uint8 (H, W) indexed [y, x], C-contiguous. weight >= 1 inflates the octile
    heuristic (1 keeps the path optimal). max_expansions: 0 for no limit. Workspace
    arrays: length H*W, see :mod:`pathserver.core.astar`.

    Returns (status, end_node, expanded): SEARCH_FOUND with end_node the goal and
    ``g[goal]`` the path cost; SEARCH_NO_PATH or SEARCH_BUDGET with end_node the closed
    jump point nearest the goal by octile distance. Follow ``parent`` from end_node to
    the start; consecutive jump points lie on a row, column or diagonal.
    """
    height, width = passable.shape
    cells = passable.ravel()
    open_mark = pass_id
    closed_mark = pass_id + 1
    start = sy * width + sx
    goal = gy * width + gx
    h0 = _octile(sx, sy, gx, gy)
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
        h_node = _octile(x, y, gx, gy)
        if h_node < best_h:
            best_h = h_node
            best = node
        g_node = g[node]
        p = parent[node]
        py = p // width
        px = p - py * width
        dx = (x > px) - (x < px)
        dy = (y > py) - (y < py)
        for d in range(8):
            # The start explores all eight directions; a jump point only its natural
            # and forced ones given the direction it was reached from.
            if d < 4:
                ddx = (1, 0, -1, 0)[d]
                ddy = (0, 1, 0, -1)[d]
            else:
                ddx = (1, -1, -1, 1)[d - 4]
                ddy = (1, 1, -1, -1)[d - 4]
            if node != start:
                if dx != 0 and dy != 0:
                    # Diagonal arrival: the diagonal and its two components only.
                    if not ((ddx == dx and ddy == dy) or (ddx == dx and ddy == 0) or (ddx == 0 and ddy == dy)):
                        continue
                elif dx != 0:
                    if ddx == -dx:
                        continue
                    if ddy != 0:
                        # Forced on side ddy: that side free and the cell behind it blocked.
                        if not (_free(cells, width, height, x, y + ddy) and not _free(cells, width, height, x - dx, y + ddy)):
                            continue
                    elif ddx == 0:
                        continue
                else:
                    if ddy == -dy:
                        continue
                    if ddx != 0:
                        if not (_free(cells, width, height, x + ddx, y) and not _free(cells, width, height, x + ddx, y - dy)):
                            continue
                    elif ddy == 0:
                        continue
            if ddx != 0 and ddy != 0:
                successor = _jump_diagonal(cells, width, height, x, y, ddx, ddy, goal)
            elif ddx != 0:
                successor = _jump_x(cells, width, height, x, y, ddx, goal)
            else:
                successor = _jump_y(cells, width, height, x, y, ddy, goal)
            if successor >= 0:
                size = _relax(node, successor, width, gx, gy, weight, g_node, g, parent, stamp, open_mark, closed_mark, heap_nodes, heap_f, heap_h, heap_pos, size)
    return SEARCH_NO_PATH, best, expanded
