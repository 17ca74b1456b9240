"""A request's avoided cells laid on a copy of JPS's stop bitmaps, and lifted again.

:func:`pathserver.core.jps.jump_bitmaps` is built once per unit grid. When a request
blocks some of its cells (:func:`pathserver.core.avoid.block_anchors`), a cell's stop
bits (a scan stops on a blocked cell, and on one with a forced neighbour) change only if
a blocked anchor lies in the 3 x 3 cells around it: its own, and its side cells and
theirs behind or ahead. :func:`lay_avoided` recomputes the four stop bits of each of
those cells once, in a per-thread copy of the bitmaps, at a cost of the avoided area and
not the map's. The "ahead" bitmaps are left as they were: only a search that reads stops
alone may be given the copy.

It also says where the blocked grid's scans may differ from the grid's before, for
:func:`pathserver.core.jpsplus.jps_plus` to read its table everywhere else, in one uint64
``overlay`` array (:func:`overlay_size` words): first a bit for each word of the bitmaps,
marking the words it changed (each noted once, so :func:`lift_avoided` copies those back
and clears the marks); then, for the rows (from :func:`overlay_rows`) and the columns
(from :func:`overlay_columns`), which lines hold a cell it redid (an avoided anchor, or
a cell one step from one): their prefix counts (the marked lines before line i, i = 0..n,
so a run of lines is checked in one subtraction), and on each line the first position
redone and one past the last (the line's length and 0 when none).
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.avoid import anchor_box
from pathserver.core.jps import ONE, bitmap_words


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _open(cells, width, height, x, y):
    """Whether (x, y) is in the grid and open."""
    return 0 <= x < width and 0 <= y < height and cells[y, x] != 0


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def overlay_rows(height, width):
    """Where an overlay's rows start, for an H x W grid: after a bit for each word of its
    jump bitmaps. Then H + 1 counts, H first positions, H ends."""
    return (4 * (bitmap_words(height, width) + bitmap_words(width, height)) + 63) >> 6


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def overlay_columns(height, width):
    """Where an overlay's columns start: W + 1 counts, W first positions, W ends."""
    return overlay_rows(height, width) + 3 * height + 1


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def overlay_size(height, width):
    """The words of an overlay for an H x W grid."""
    return overlay_columns(height, width) + 3 * width + 1


@njit(cache=True, nogil=True)
def new_overlay(height, width):
    """A cleared overlay for an H x W grid (uint64, :func:`overlay_size` words)."""
    return np.zeros(overlay_size(height, width), dtype=np.uint64)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _mark(overlay, k, log, count):
    """Mark word ``k`` in ``overlay`` and note it in ``log``, once (past the log's end the
    count still grows: the caller then restores and clears everything). The new count."""
    flag = ONE << np.uint64(k & 63)
    if overlay[k >> 6] & flag == 0:
        overlay[k >> 6] |= flag
        if count < log.shape[0]:
            log[count] = k
        count += 1
    return count


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _put(bitmaps, overlay, base, bit, on, log, count):
    """Set (``on``) or clear one bit of the bitmap at word ``base``, marking its word if
    that changes it. The new log count."""
    k = base + (bit >> 6)
    flag = ONE << np.uint64(bit & 63)
    old = bitmaps[k]
    value = (old | flag) if on else (old & ~flag)
    if value != old:
        count = _mark(overlay, k, log, count)
        bitmaps[k] = value
    return count


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _restop(bitmaps, overlay, cells, width, height, x, y, rows, columns, log, count):
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
    count = _put(bitmaps, overlay, 0, row_bit, east, log, count)
    count = _put(bitmaps, overlay, rows, row_bit, west, log, count)
    count = _put(bitmaps, overlay, 4 * rows, column_bit, south, log, count)
    return _put(bitmaps, overlay, 4 * rows + columns, column_bit, north, log, count)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _redo_line(overlay, at, count, line, first, last):
    """Note positions first..last of line ``line`` as redone, in the lines at
    ``overlay[at]`` (``count`` of them)."""
    overlay[at + line] = 1
    if overlay[at + count + 1 + line] > first:
        overlay[at + count + 1 + line] = first
    if overlay[at + 2 * count + 1 + line] < last + 1:
        overlay[at + 2 * count + 1 + line] = last + 1


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _start_lines(overlay, at, count, length):
    """No line redone: flags clear, first positions past the end, ends 0."""
    overlay[at:at + count + 1] = 0
    overlay[at + count + 1:at + 2 * count + 1] = length
    overlay[at + 2 * count + 1:at + 3 * count + 1] = 0


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _count_lines(overlay, at, count):
    """The flags of the lines at ``overlay[at]`` to prefix counts."""
    total = np.uint64(0)
    for i in range(count + 1):
        flag = overlay[at + i] if i < count else np.uint64(0)
        overlay[at + i] = total
        total += flag


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def lay_avoided(bitmaps, cells, boxes, unit_w, unit_h, touched, overlay, log):
    """Bring the stop bitmaps of ``bitmaps`` (uint64, changed in place: the jump_bitmaps
    of ``cells`` before the boxes' anchors were blocked in it) to those of ``cells`` as it
    is, and say where they differ in ``overlay`` (uint64, :func:`overlay_size` words, its
    marks all clear; see the module docstring). boxes: the request's avoided boxes (int
    (K, 4) ``x0, y0, x1, y1``, see :mod:`pathserver.core.avoid`), for a ``unit_w x
    unit_h`` unit. touched: uint64, at least H * W bits, all clear (and left clear):
    marks the cells done, so overlapping boxes redo none. Each word changed goes into
    ``log`` (int64) once. Returns how many words changed (more than log holds: only the
    first len(log) are noted)."""
    height, width = cells.shape
    rows = bitmap_words(height, width)
    columns = bitmap_words(width, height)
    row_lines = overlay_rows(height, width)
    column_lines = overlay_columns(height, width)
    _start_lines(overlay, row_lines, height, width)
    _start_lines(overlay, column_lines, width, height)
    count = 0
    for sweep in range(2):
        for k in range(boxes.shape[0]):
            ax0, ay0, ax1, ay1 = anchor_box(boxes[k, 0], boxes[k, 1], boxes[k, 2], boxes[k, 3], unit_w, unit_h,
                                            width, height)
            if ax0 >= ax1 or ay0 >= ay1:
                continue
            # The anchors and the cells one step round them.
            y0 = max(ay0 - 1, 0)
            y1 = min(ay1 + 1, height)
            x0 = max(ax0 - 1, 0)
            x1 = min(ax1 + 1, width)
            for y in range(y0, y1):
                for x in range(x0, x1):
                    at = y * width + x
                    word = at >> 6
                    flag = ONE << np.uint64(at & 63)
                    if sweep == 1:
                        touched[word] &= ~flag  # the second sweep leaves the marks clear
                    elif touched[word] & flag == 0:
                        touched[word] |= flag
                        count = _restop(bitmaps, overlay, cells, width, height, x, y, rows, columns, log, count)
            if sweep == 0:
                for y in range(y0, y1):
                    _redo_line(overlay, row_lines, height, y, x0, x1 - 1)
                for x in range(x0, x1):
                    _redo_line(overlay, column_lines, width, x, y0, y1 - 1)
    _count_lines(overlay, row_lines, height)
    _count_lines(overlay, column_lines, width)
    return count


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def lift_avoided(bitmaps, source, overlay, log, count):
    """Undo :func:`lay_avoided` (which returned ``count``): the noted words copied back
    from ``source``, the bitmaps before it, and their marks cleared; all of them when the
    log overflowed. The lines are left: the next laying writes them anew."""
    if count > log.shape[0]:
        for k in range(bitmaps.shape[0]):
            bitmaps[k] = source[k]
        overlay[:(bitmaps.shape[0] + 63) >> 6] = 0
        return 0
    for i in range(count):
        k = log[i]
        bitmaps[k] = source[k]
        overlay[k >> 6] &= ~(ONE << np.uint64(k & 63))
    return 0
