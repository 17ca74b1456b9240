"""A request's avoided cells laid on a copy of JPS's stop bitmaps, and lifted again.

:func:`pathserver.core.jps.jump_bitmaps` is built once per unit grid. When a request
blocks some of its cells (:func:`pathserver.core.avoid.block_anchors`), a cell's stop
bits (a scan stops on a blocked cell, and on one with a forced neighbour) change only if
a blocked anchor lies in the 3 x 3 cells around it: its own, and its side cells and
theirs behind or ahead. :func:`lay_avoided` recomputes the four stop bits of each of
those cells once, in a per-thread copy of the bitmaps, so that scanning
(:func:`pathserver.core.jpsplus.jps_plus` without a table) searches the blocked grid
exactly, at a cost of the avoided area and not the map's. The "ahead" bitmaps are left
as they were: only a search that reads stops alone may be given the copy. It notes each
word it changes, so :func:`lift_avoided` copies those back.
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.avoid import anchor_box
from pathserver.core.jps import ONE, _bitmap_words


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _open(cells, width, height, x, y):
    """Whether (x, y) is in the grid and open."""
    return 0 <= x < width and 0 <= y < height and cells[y, x] != 0


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _put(bitmaps, source, base, bit, on, log, count):
    """Set (``on``) or clear one bit of the bitmap at word ``base``, noting its word in
    ``log`` the first time it differs from ``source`` (past the log's end the count still
    grows: the caller then restores everything). The new count."""
    k = base + (bit >> 6)
    flag = ONE << np.uint64(bit & 63)
    old = bitmaps[k]
    value = (old | flag) if on else (old & ~flag)
    if value != old:
        if old == source[k]:
            if count < log.shape[0]:
                log[count] = k
            count += 1
        bitmaps[k] = value
    return count


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _restop(bitmaps, source, cells, width, height, x, y, rows, columns, log, count):
    """The four stop bits of cell (x, y) as ``cells`` is now (the rule of
    :func:`pathserver.core.jps.jump_bitmaps`). The new log count."""
    open_here = cells[y, x] != 0
    east = west = south = north = not open_here
    if open_here:
        for s in (-1, 1):
            # Along the row, the side cells are above and below; along the column, beside.
            if _open(cells, width, height, x, y + s):
                if not _open(cells, width, height, x - 1, y + s):
                    east = True
                if not _open(cells, width, height, x + 1, y + s):
                    west = True
            if _open(cells, width, height, x + s, y):
                if not _open(cells, width, height, x + s, y - 1):
                    south = True
                if not _open(cells, width, height, x + s, y + 1):
                    north = True
    row_bit = y * (width + 2) + x + 1
    column_bit = x * (height + 2) + y + 1
    count = _put(bitmaps, source, 0, row_bit, east, log, count)
    count = _put(bitmaps, source, rows, row_bit, west, log, count)
    count = _put(bitmaps, source, 4 * rows, column_bit, south, log, count)
    return _put(bitmaps, source, 4 * rows + columns, column_bit, north, log, count)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def lay_avoided(bitmaps, source, cells, boxes, unit_w, unit_h, touched, log):
    """Bring the stop bitmaps of ``bitmaps`` (uint64, changed in place; equal to
    ``source``, the jump_bitmaps of ``cells`` before the boxes' anchors were blocked in
    it) to those of ``cells`` as it is. boxes: the request's avoided boxes (int (K, 4)
    ``x0, y0, x1, y1``, see :mod:`pathserver.core.avoid`), for a ``unit_w x unit_h``
    unit. touched: uint64, at least H * W bits, all clear (and left clear): marks the
    cells done, so overlapping boxes redo none. Each word changed goes into ``log``
    (int64) once. Returns how many words changed (more than log holds: only the first
    len(log) are noted)."""
    height, width = cells.shape
    rows = _bitmap_words(height, width)
    columns = _bitmap_words(width, height)
    count = 0
    for sweep in range(2):
        for k in range(boxes.shape[0]):
            ax0, ay0, ax1, ay1 = anchor_box(boxes[k, 0], boxes[k, 1], boxes[k, 2], boxes[k, 3], unit_w, unit_h,
                                            width, height)
            if ax0 >= ax1 or ay0 >= ay1:
                continue
            # The anchors and the cells one step round them.
            for y in range(max(ay0 - 1, 0), min(ay1 + 1, height)):
                for x in range(max(ax0 - 1, 0), min(ax1 + 1, width)):
                    at = y * width + x
                    word = at >> 6
                    flag = ONE << np.uint64(at & 63)
                    if sweep == 1:
                        touched[word] &= ~flag  # the second sweep leaves the marks clear
                    elif touched[word] & flag == 0:
                        touched[word] |= flag
                        count = _restop(bitmaps, source, cells, width, height, x, y, rows, columns, log, count)
    return count


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def lift_avoided(bitmaps, source, log, count):
    """Undo :func:`lay_avoided` (which returned ``count``): the noted words copied back
    from ``source``, the bitmaps before it; all of them when the log overflowed."""
    if count > log.shape[0]:
        for k in range(bitmaps.shape[0]):
            bitmaps[k] = source[k]
        return 0
    for i in range(count):
        bitmaps[log[i]] = source[log[i]]
    return 0
