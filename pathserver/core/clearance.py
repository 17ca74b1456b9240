"""True clearance (Harabor & Botea, HAA*) and per-footprint passability.

``clearance[y, x]`` is the side of the largest square of walkable cells whose top-left
cell is ``(x, y)``: 0 on a blocked cell, 1 on a walkable cell whose right, lower and
lower-right neighbours do not all extend it, and so on. One annotation answers every
unit size: a ``w x h`` footprint with top-left ``(x, y)`` is walkable exactly when the
squares of side ``min(w, h)`` laid along its long side all fit. Hex maps have their own
annotation, the hex distance to the nearest blocked cell (:func:`hex_clearance`).
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.moves import hex_move, step_to

#: Clearance values saturate here, so they fit in uint16.
CLEARANCE_MAX = 65535


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def compute_clearance(walkable, clearance, x0, y0, x1, y1):
    """Fill ``clearance[y0:y1, x0:x1]`` from ``walkable`` (both ``[y, x]``).

    walkable: uint8 (H, W), nonzero = walkable.  clearance: uint16 (H, W), written in the
    region only; cells right of / below the region must already hold their final values,
    which is why an edit recomputes from its bottom-right corner up and left.
    Returns 0.
    """
    height, width = walkable.shape
    for y in range(y1 - 1, y0 - 1, -1):
        for x in range(x1 - 1, x0 - 1, -1):
            if walkable[y, x] == 0:
                clearance[y, x] = 0
                continue
            if x + 1 >= width or y + 1 >= height:
                clearance[y, x] = 1
                continue
            m = clearance[y, x + 1]
            d = clearance[y + 1, x]
            if d < m:
                m = d
            d = clearance[y + 1, x + 1]
            if d < m:
                m = d
            if m >= CLEARANCE_MAX:
                m = CLEARANCE_MAX - 1
            clearance[y, x] = m + 1
    return 0


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def footprint_passable(clearance, unit_w, unit_h, off_x, off_y, passable):
    """Mark the anchor cells where a ``unit_w x unit_h`` footprint fits.

    The footprint of a unit anchored at ``(x, y)`` covers columns ``x - off_x .. x - off_x
    + unit_w - 1`` and rows ``y - off_y .. y - off_y + unit_h - 1``.
    passable: uint8 (H, W) output, 1 where the unit can stand. Returns the count of such cells.
    """
    height, width = clearance.shape
    side = unit_w if unit_w < unit_h else unit_h
    count = 0
    for y in range(height):
        top = y - off_y
        for x in range(width):
            left = x - off_x
            ok = top >= 0 and left >= 0 and top + unit_h <= height and left + unit_w <= width
            if ok:
                # Squares of side `side` along the long axis; the last one is flush with
                # the far edge so together they cover the whole rectangle.
                if unit_w >= unit_h:
                    sx = left
                    while True:
                        if sx + side > left + unit_w:
                            sx = left + unit_w - side
                        if clearance[top, sx] < side:
                            ok = False
                            break
                        if sx + side >= left + unit_w:
                            break
                        sx += side
                else:
                    sy = top
                    while True:
                        if sy + side > top + unit_h:
                            sy = top + unit_h - side
                        if clearance[sy, left] < side:
                            ok = False
                            break
                        if sy + side >= top + unit_h:
                            break
                        sy += side
            passable[y, x] = 1 if ok else 0
            if ok:
                count += 1
    return count


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def index_costs(cost, cost_table, cost_index, x0, y0, x1, y1):
    """Fill ``cost_index[y0:y1, x0:x1]`` with each cell's position in ``cost_table``.

    cost: float64 (H, W); cost_table: float64 (K,), sorted ascending, distinct, holding
    every value of the region; cost_index: unsigned integer (H, W) wide enough for K - 1.
    The region is passed as bounds rather than as slices so one compiled version serves
    whole maps and edited boxes alike. Returns 0, or 1 when a value is missing from the
    table (its cells are then left unwritten).
    """
    status = 0
    for y in range(y0, y1):
        for x in range(x0, x1):
            value = cost[y, x]
            lo = 0
            hi = cost_table.shape[0]
            while lo < hi:
                mid = (lo + hi) >> 1
                if cost_table[mid] < value:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < cost_table.shape[0] and cost_table[lo] == value:
                cost_index[y, x] = lo
            else:
                status = 1
    return status


@njit(cache=True, nogil=True)
def footprint_cost(cost_index, unit_w, unit_h, off_x, off_y, out):
    """``out[y, x]`` = the highest terrain cost under the footprint anchored at ``(x, y)``,
    as an index into the map's cost table.

    A large unit wading half into a swamp moves at the swamp's pace. The table is sorted
    ascending, so the highest index is the highest cost: a sliding maximum over indices,
    separable; cells where the footprint leaves the map get the cost of the clipped part.
    cost_index, out: the same unsigned integer dtype, (H, W). Returns 0.
    """
    height, width = cost_index.shape
    rows = np.empty_like(out)
    for y in range(height):
        for x in range(width):
            best = 0
            for c in range(x - off_x, x - off_x + unit_w):
                if 0 <= c < width and cost_index[y, c] > best:
                    best = cost_index[y, c]
            rows[y, x] = best
    for y in range(height):
        for x in range(width):
            best = 0
            for r in range(y - off_y, y - off_y + unit_h):
                if 0 <= r < height and rows[r, x] > best:
                    best = rows[r, x]
            out[y, x] = best
    return 0


@njit(cache=True, nogil=True)
def hex_clearance(walkable, layout, clearance):
    """Fill ``clearance`` (uint16 (H, W)) of a hex map of ``layout`` (a DIAGONAL_HEX_*
    code) from ``walkable``: each walkable cell's hex distance to the nearest blocked cell
    or cell off the map, 0 on blocked cells. A unit of size k (every cell within hex
    distance k - 1 of its own) stands where the clearance is k or more. A breadth-first
    search outward from the walkable cells beside a blocked or missing one. Returns the
    count of walkable cells."""
    height, width = walkable.shape
    queue = np.empty(height * width, dtype=np.int64)
    head = 0
    tail = 0
    for y in range(height):
        for x in range(width):
            clearance[y, x] = 0
            if walkable[y, x] == 0:
                continue
            edge = False
            for d in range(8):
                if not hex_move(layout, x, y, d):
                    continue
                nx, ny = step_to(x, y, d)
                if nx < 0 or ny < 0 or nx >= width or ny >= height or walkable[ny, nx] == 0:
                    edge = True
                    break
            if edge:
                clearance[y, x] = 1
                queue[tail] = y * width + x
                tail += 1
    while head < tail:
        node = queue[head]
        head += 1
        y = node // width
        x = node - y * width
        value = clearance[y, x]
        for d in range(8):
            if not hex_move(layout, x, y, d):
                continue
            nx, ny = step_to(x, y, d)
            if 0 <= nx < width and 0 <= ny < height and walkable[ny, nx] != 0 and clearance[ny, nx] == 0:
                clearance[ny, nx] = min(value + 1, CLEARANCE_MAX)
                queue[tail] = ny * width + nx
                tail += 1
    return tail


@njit(cache=True, nogil=True)
def hex_footprint_cost(cost_index, layout, radius, out):
    """``out[y, x]`` = the highest terrain cost (as an index into the sorted cost table)
    within hex distance ``radius`` of ``(x, y)`` on a hex map of ``layout``: the cost a
    unit of size ``radius + 1`` pays to enter the cell, as :func:`footprint_cost` on square
    maps. The hex ball of radius r is r steps of the ball of radius 1: r passes of a
    maximum over the six neighbours. Returns 0."""
    height, width = cost_index.shape
    out[:, :] = cost_index
    before = np.empty_like(out)
    for _ in range(radius):
        before[:, :] = out
        for y in range(height):
            for x in range(width):
                best = before[y, x]
                for d in range(8):
                    if not hex_move(layout, x, y, d):
                        continue
                    nx, ny = step_to(x, y, d)
                    if 0 <= nx < width and 0 <= ny < height and before[ny, nx] > best:
                        best = before[ny, nx]
                out[y, x] = best
    return 0
