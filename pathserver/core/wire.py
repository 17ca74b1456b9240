"""msgpack encoding of a path's points, compiled, so a long path is encoded without
holding the GIL.

The bytes are exactly what msgpack-python's ``Packer`` writes for ``points.tolist()``:
an array of ``[x, y]`` arrays, each int in its smallest encoding (positive fixint,
uint8/16/32, negative fixint, int8/16/32) and each float as a big-endian float64. A
server thread encodes a 260 000-point path here in a few milliseconds while the socket
loop goes on; ``tolist()`` plus ``Packer.pack`` take about 100 ms with the GIL held.
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def packed_points_bound(n):
    """An upper bound on the bytes :func:`pack_int_points` / :func:`pack_float_points`
    write for ``n`` points: a 5-byte array header, then per point a 1-byte pair header and
    two values of at most 9 bytes."""
    return 5 + 19 * n


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _tagged(out, at, tag, v, size):
    """``tag`` then the low ``size`` bytes of ``v``, big-endian; returns the next offset."""
    out[at] = tag
    for k in range(size):
        out[at + 1 + k] = (v >> (8 * (size - 1 - k))) & 0xFF
    return at + 1 + size


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _array_header(out, at, n):
    if n <= 15:
        out[at] = 0x90 | n
        return at + 1
    if n <= 0xFFFF:
        return _tagged(out, at, 0xDC, n, 2)
    return _tagged(out, at, 0xDD, n, 4)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _int(out, at, v):
    if -32 <= v <= 0x7F:  # positive or negative fixint
        out[at] = v & 0xFF
        return at + 1
    if v > 0:
        if v <= 0xFF:
            return _tagged(out, at, 0xCC, v, 1)
        if v <= 0xFFFF:
            return _tagged(out, at, 0xCD, v, 2)
        return _tagged(out, at, 0xCE, v, 4)
    if v >= -0x80:
        return _tagged(out, at, 0xD0, v, 1)
    if v >= -0x8000:
        return _tagged(out, at, 0xD1, v, 2)
    return _tagged(out, at, 0xD2, v, 4)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def pack_int_points(points, out):
    """Encode int32 ``points`` (n, 2) into uint8 ``out`` (at least
    :func:`packed_points_bound` bytes). Returns the bytes written."""
    n = points.shape[0]
    at = _array_header(out, 0, n)
    for i in range(n):
        out[at] = 0x92
        at = _int(out, at + 1, np.int64(points[i, 0]))
        at = _int(out, at, np.int64(points[i, 1]))
    return at


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def pack_float_points(bits, out):
    """Encode float64 points, given as their uint64 bit patterns ``bits`` (n, 2)
    (``points.view(np.uint64)``), into uint8 ``out``. Returns the bytes written."""
    n = bits.shape[0]
    at = _array_header(out, 0, n)
    for i in range(n):
        out[at] = 0x92
        at += 1
        for j in range(2):
            v = bits[i, j]
            out[at] = 0xCB
            for k in range(8):
                out[at + 1 + k] = (v >> np.uint64(56 - 8 * k)) & np.uint64(0xFF)
            at += 9
    return at
