"""A request's avoided cells, laid on a private copy of the unit's grids and lifted again.

A unit may not stand where its footprint overlaps an avoided cell: those anchor cells are
the avoided box grown by the footprint (:func:`anchor_box`). :func:`block_anchors` clears
them in a copy of the unit's ``cells`` grid (so every kernel reads them as solid), or
:func:`price_anchors` gives them a dearer cost index; :func:`restore_anchors` copies the
originals back afterwards. Each touches only the anchors concerned, so a request pays for
the size of its avoided area, not of the map.

Boxes are int (K, 4) arrays of ``x0, y0, x1, y1`` (ends excluded), clipped to the map.
"""

import math

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.moves import hex_move, step_to


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def anchor_box(x0, y0, x1, y1, unit_w, unit_h, width, height):
    """The anchors ``[ax0, ax1) x [ay0, ay1)`` whose ``unit_w x unit_h`` footprint overlaps
    the cells ``[x0, x1) x [y0, y1)``, clipped to the map (footprints as in
    :func:`pathserver.core.clearance.footprint_passable`: the unit at ``x`` covers
    ``x - (unit_w - 1) // 2`` to ``x + unit_w // 2``)."""
    off_x = (unit_w - 1) // 2
    off_y = (unit_h - 1) // 2
    ax0 = x0 + off_x - unit_w + 1
    ay0 = y0 + off_y - unit_h + 1
    ax1 = x1 + off_x
    ay1 = y1 + off_y
    if ax0 < 0:
        ax0 = 0
    if ay0 < 0:
        ay0 = 0
    if ax1 > width:
        ax1 = width
    if ay1 > height:
        ay1 = height
    return ax0, ay0, ax1, ay1


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def block_anchors(cells, boxes, unit_w, unit_h):
    """Clear (set 0) every anchor of ``cells`` (uint8 (H, W), the unit's grid) whose
    footprint overlaps a box. Returns the count cleared."""
    height, width = cells.shape
    count = 0
    for k in range(boxes.shape[0]):
        ax0, ay0, ax1, ay1 = anchor_box(boxes[k, 0], boxes[k, 1], boxes[k, 2], boxes[k, 3], unit_w, unit_h,
                                        width, height)
        for y in range(ay0, ay1):
            for x in range(ax0, ax1):
                if cells[y, x] != 0:
                    cells[y, x] = 0
                    count += 1
    return count


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def price_anchors(cost_index, source_index, cost_table, uniform, boxes, unit_w, unit_h, slot, avoid_cost):
    """Give every anchor whose footprint overlaps a box the cost ``avoid_cost`` (index
    ``slot`` of ``cost_table``) where its own cost (``cost_table[source_index]``, 1 on a
    uniform map) is lower: entering it costs the dearer of the two. cost_index and
    source_index: the same unsigned dtype, (H, W). Returns 0."""
    height, width = cost_index.shape
    for k in range(boxes.shape[0]):
        ax0, ay0, ax1, ay1 = anchor_box(boxes[k, 0], boxes[k, 1], boxes[k, 2], boxes[k, 3], unit_w, unit_h,
                                        width, height)
        for y in range(ay0, ay1):
            for x in range(ax0, ax1):
                own = 1.0 if uniform != 0 else cost_table[source_index[y, x]]
                if own < avoid_cost:
                    cost_index[y, x] = slot
    return 0


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def restore_anchors(grid, source, boxes, unit_w, unit_h):
    """Copy ``source`` back into ``grid`` (same shape and dtype) on every anchor of the
    boxes: undoes :func:`block_anchors` and :func:`price_anchors`. Returns 0."""
    height, width = grid.shape
    for k in range(boxes.shape[0]):
        ax0, ay0, ax1, ay1 = anchor_box(boxes[k, 0], boxes[k, 1], boxes[k, 2], boxes[k, 3], unit_w, unit_h,
                                        width, height)
        for y in range(ay0, ay1):
            for x in range(ax0, ax1):
                grid[y, x] = source[y, x]
    return 0


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def boxes_into(cells, rects, width, height, boxes):
    """The boxes of a request's avoided cells (see :func:`boxes_from`) written into
    ``boxes`` (int64, at least N + M rows); returns their count."""
    count = 0
    for k in range(cells.shape[0] + rects.shape[0]):
        if k < cells.shape[0]:
            x0 = math.floor(cells[k, 0])
            y0 = math.floor(cells[k, 1])
            x1 = x0 + 1.0
            y1 = y0 + 1.0
        else:
            r = k - cells.shape[0]
            x0 = math.floor(rects[r, 0])
            y0 = math.floor(rects[r, 1])
            x1 = math.ceil(rects[r, 0] + rects[r, 2])
            y1 = math.ceil(rects[r, 1] + rects[r, 3])
        x0 = min(max(x0, 0.0), width)
        x1 = min(max(x1, 0.0), width)
        y0 = min(max(y0, 0.0), height)
        y1 = min(max(y1, 0.0), height)
        if x0 < x1 and y0 < y1:
            boxes[count, 0] = np.int64(x0)
            boxes[count, 1] = np.int64(y0)
            boxes[count, 2] = np.int64(x1)
            boxes[count, 3] = np.int64(y1)
            count += 1
    return count


@njit(cache=True, nogil=True)
def boxes_from(cells, rects, width, height):
    """The boxes of a request's avoided cells: int64 (K, 4) ``x0, y0, x1, y1`` (ends
    excluded) clipped to a ``width x height`` map, empty ones left out. cells: float64
    (N, 2) points ``x, y``, each the cell it falls in; rects: float64 (M, 4) ``x, y, w, h``,
    each every cell it overlaps."""
    boxes = np.empty((cells.shape[0] + rects.shape[0], 4), dtype=np.int64)
    return boxes[:boxes_into(cells, rects, width, height, boxes)].copy()


#: :func:`lay_cells`' answers but a count of boxes (the grid then as it was).
LAY_NOT_PLAIN = -1  # a number not finite, or a rectangle not wider and taller than 0
LAY_GOAL_BLOCKED = -2  # the goal on a cell the unit cannot stand on, with the cells laid


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def lay_cells(grid, source, cells, rects, unit_w, unit_h, sx, sy, gx, gy, boxes):
    """A request's avoided cells and rectangles (float64, as :func:`boxes_from` takes
    them) laid on ``grid`` (uint8 (H, W), equal to ``source``) for a unit going from
    ``(sx, sy)`` to ``(gx, gy)`` in one call: their boxes written into ``boxes`` (int64,
    at least N + M rows), their anchors cleared (:func:`block_anchors`), then the start
    given its own value back (a unit may leave where it stands). Returns the count of
    boxes, or LAY_NOT_PLAIN / LAY_GOAL_BLOCKED (the goal, not the start, on a cleared or
    solid cell) with ``grid`` left as it was: the caller's general way answers those."""
    height, width = grid.shape
    for k in range(cells.shape[0]):
        if not (math.isfinite(cells[k, 0]) and math.isfinite(cells[k, 1])):
            return LAY_NOT_PLAIN
    for r in range(rects.shape[0]):
        for i in range(4):
            if not math.isfinite(rects[r, i]):
                return LAY_NOT_PLAIN
        if not (rects[r, 2] > 0.0 and rects[r, 3] > 0.0):
            return LAY_NOT_PLAIN
    count = boxes_into(cells, rects, float(width), float(height), boxes)
    block_anchors(grid, boxes[:count], unit_w, unit_h)
    grid[sy, sx] = source[sy, sx]
    if grid[gy, gx] == 0 and (gx != sx or gy != sy):
        restore_anchors(grid, source, boxes[:count], unit_w, unit_h)
        return LAY_GOAL_BLOCKED
    return count


@njit(cache=True, nogil=True)
def hex_anchors(boxes, layout, radius, width, height):
    """On a hex map of ``layout`` (a DIAGONAL_HEX_* code), the anchors of a unit of size
    ``radius + 1`` whose footprint overlaps one of ``boxes`` (int (K, 4), clipped, K >= 1):
    every cell within hex distance ``radius`` of a boxed cell, as int64 boxes one row tall
    (runs of a row), clipped to the map. The kernels then lay them as a 1 x 1 unit's."""
    rx0 = width
    ry0 = height
    rx1 = 0
    ry1 = 0
    for k in range(boxes.shape[0]):
        rx0 = min(rx0, boxes[k, 0] - radius)
        ry0 = min(ry0, boxes[k, 1] - radius)
        rx1 = max(rx1, boxes[k, 2] + radius)
        ry1 = max(ry1, boxes[k, 3] + radius)
    rx0 = max(rx0, 0)
    ry0 = max(ry0, 0)
    rx1 = min(rx1, width)
    ry1 = min(ry1, height)
    mask = np.zeros((ry1 - ry0, rx1 - rx0), dtype=np.bool_)
    for k in range(boxes.shape[0]):
        mask[boxes[k, 1] - ry0:boxes[k, 3] - ry0, boxes[k, 0] - rx0:boxes[k, 2] - rx0] = True
    before = np.empty_like(mask)
    for _ in range(radius):
        before[:, :] = mask
        for y in range(ry0, ry1):
            for x in range(rx0, rx1):
                if before[y - ry0, x - rx0]:
                    continue
                for d in range(8):
                    if not hex_move(layout, x, y, d):
                        continue
                    nx, ny = step_to(x, y, d)
                    if rx0 <= nx < rx1 and ry0 <= ny < ry1 and before[ny - ry0, nx - rx0]:
                        mask[y - ry0, x - rx0] = True
                        break
    runs = 0
    for y in range(ry1 - ry0):
        for x in range(rx1 - rx0):
            if mask[y, x] and (x == 0 or not mask[y, x - 1]):
                runs += 1
    out = np.empty((runs, 4), dtype=np.int64)
    runs = 0
    for y in range(ry1 - ry0):
        x = 0
        while x < rx1 - rx0:
            if not mask[y, x]:
                x += 1
                continue
            start = x
            while x < rx1 - rx0 and mask[y, x]:
                x += 1
            out[runs, 0] = start + rx0
            out[runs, 1] = y + ry0
            out[runs, 2] = x + rx0
            out[runs, 3] = y + ry0 + 1
            runs += 1
    return out
