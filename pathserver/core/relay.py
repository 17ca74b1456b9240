"""A request's avoided cells laid on a copy of JPS's bitmaps, and lifted again.

:func:`pathserver.core.jps.jump_bitmaps` is built once per unit grid. When a request
blocks some of its cells (:func:`pathserver.core.avoid.block_anchors`), only the lines
through and beside the blocked anchors change: a blocked cell is a stop, and it makes or
unmakes forced neighbours one step along the lines beside it. :func:`lay_avoided`
recomputes those stop bits in a per-thread copy of the bitmaps, then the "ahead" bits
their change reaches (from the stop before each changed window to the stop after it,
a run of equal bits between two stops filled a word at a time), so the online JPS
searches the blocked grid exactly, at a cost of the avoided area and not the map's. It
notes every word it changes, so :func:`lift_avoided` copies those back.
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.avoid import anchor_box
from pathserver.core.jps import ALL_BITS, ONE, _bitmap_words, _next_stop, _previous_stop


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _free(cells, rows, line, i, length):
    """Whether position ``i`` of ``line`` is open (False outside the line): rows (lines
    are cells' rows) or columns."""
    if i < 0 or i >= length:
        return False
    return (cells[line, i] if rows else cells[i, line]) != 0


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _store(bitmaps, k, value, log, count):
    """Write word ``k``, noting it in ``log`` when it changes (past the log's end the
    count still grows: the caller then restores everything). The new count."""
    if bitmaps[k] != value:
        if count < log.shape[0]:
            log[count] = k
        bitmaps[k] = value
        count += 1
    return count


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _fill(bitmaps, base, bit0, bit1, on, log, count):
    """Set (``on``) or clear bits ``bit0..bit1`` (inclusive) of the bitmap at word
    ``base``. The new log count."""
    if bit1 < bit0:
        return count
    k0 = bit0 >> 6
    k1 = bit1 >> 6
    for k in range(k0, k1 + 1):
        mask = ALL_BITS
        if k == k0:
            mask &= ALL_BITS << np.uint64(bit0 & 63)
        if k == k1:
            mask &= ALL_BITS >> np.uint64(63 - (bit1 & 63))
        old = bitmaps[base + k]
        count = _store(bitmaps, base + k, (old | mask) if on else (old & ~mask), log, count)
    return count


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _set(bitmaps, base, bit, on, log, count):
    k = base + (bit >> 6)
    flag = ONE << np.uint64(bit & 63)
    return _store(bitmaps, k, (bitmaps[k] | flag) if on else (bitmaps[k] & ~flag), log, count)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _refresh(bitmaps, base, cells, rows, line, count_lines, length, i0, i1, log, count):
    """Positions ``i0..i1`` of ``line`` (one orientation's four bitmaps at word ``base``,
    as :func:`pathserver.core.jps.jump_bitmaps` lays them out) as ``cells`` is now: their
    stop bits, then the ahead bits whose first stop that changes. The new log count."""
    size = _bitmap_words(count_lines, length)
    stop_forward = base
    stop_back = base + size
    ahead_forward = base + 2 * size
    ahead_back = base + 3 * size
    first = line * (length + 2) + 1
    for i in range(i0, i1 + 1):
        open_here = _free(cells, rows, line, i, length)
        forward = not open_here
        back = not open_here
        if open_here:
            for side in (line - 1, line + 1):
                if 0 <= side < count_lines and _free(cells, rows, side, i, length):
                    if not _free(cells, rows, side, i - 1, length):
                        forward = True
                    if not _free(cells, rows, side, i + 1, length):
                        back = True
        count = _set(bitmaps, stop_forward, first + i, forward, log, count)
        count = _set(bitmaps, stop_back, first + i, back, log, count)
    # Ahead toward +i: a position's bit says whether the first stop past it is open. From
    # the first stop after the window back to the last one before it, run by run.
    stop = _next_stop(bitmaps, stop_forward, first + i1 + 1)
    low = _previous_stop(bitmaps, stop_forward, first + i0 - 1)
    while stop > low:
        before = _previous_stop(bitmaps, stop_forward, stop - 1)
        at = stop - first
        count = _fill(bitmaps, ahead_forward, max(before, first), stop - 1, _free(cells, rows, line, at, length), log,
                      count)
        stop = before
    # Ahead toward -i, the same mirrored.
    stop = _previous_stop(bitmaps, stop_back, first + i0 - 1)
    high = _next_stop(bitmaps, stop_back, first + i1 + 1)
    while stop < high:
        after = _next_stop(bitmaps, stop_back, stop + 1)
        at = stop - first
        count = _fill(bitmaps, ahead_back, stop + 1, min(after, first + length - 1),
                      _free(cells, rows, line, at, length), log, count)
        stop = after
    return count


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def lay_avoided(bitmaps, cells, boxes, unit_w, unit_h, log):
    """Bring ``bitmaps`` (the jump_bitmaps of ``cells`` before the boxes' anchors were
    blocked in it; uint64, changed in place) to those of ``cells`` as it is. boxes: the
    request's avoided boxes (int (K, 4) ``x0, y0, x1, y1``, see
    :mod:`pathserver.core.avoid`), for a ``unit_w x unit_h`` unit. Every changed word's
    index goes into ``log`` (int64) in turn. Returns how many words changed (more than
    log holds: only the first len(log) are noted)."""
    height, width = cells.shape
    columns = 4 * _bitmap_words(height, width)
    count = 0
    for k in range(boxes.shape[0]):
        ax0, ay0, ax1, ay1 = anchor_box(boxes[k, 0], boxes[k, 1], boxes[k, 2], boxes[k, 3], unit_w, unit_h,
                                        width, height)
        if ax0 >= ax1 or ay0 >= ay1:
            continue
        # The lines through the blocked anchors and beside them; on each, the anchors'
        # span and a step either side (where a forced neighbour may come or go).
        for y in range(max(ay0 - 1, 0), min(ay1 + 1, height)):
            count = _refresh(bitmaps, 0, cells, True, y, height, width, max(ax0 - 1, 0), min(ax1, width - 1), log,
                             count)
        for x in range(max(ax0 - 1, 0), min(ax1 + 1, width)):
            count = _refresh(bitmaps, columns, cells, False, x, width, height, max(ay0 - 1, 0), min(ay1, height - 1),
                             log, count)
    return count


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def lift_avoided(bitmaps, source, log, count):
    """Undo :func:`lay_avoided` (which returned ``count``): the noted words copied back
    from ``source``, the bitmaps before it; all of them when the log overflowed."""
    if count > log.shape[0]:
        for k in range(bitmaps.shape[0]):
            bitmaps[k] = source[k]
        return 0
    for i in range(count - 1, -1, -1):
        bitmaps[log[i]] = source[log[i]]
    return 0
