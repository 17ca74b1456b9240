"""msgpack encoding of a path's points, compiled, so a long path is encoded without
holding the GIL.

The bytes are exactly what msgpack-python's ``Packer`` writes for ``points.tolist()``:
an array of ``[x, y]`` arrays, each int in its smallest encoding (positive fixint,
uint8/16/32, negative fixint, int8/16/32) and each float as a big-endian float64. A
server thread encodes a long path here while the socket loop goes on, where ``tolist()``
plus ``Packer.pack`` would hold the GIL far longer.
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


# -- reading: a request's avoided cells sent as [x, y] pairs --------------------------------
#
# msgpack-python builds a list of two numbers for every pair of a request's ``avoid.cells``
# and the validators then walk them, far slower than the same cells as a bin
# (bench/queries.py's wire rows with avoided cells). :func:`avoid_pairs` reads such an
# array straight from the body's bytes; the server (``server.handlers``) decodes the rest
# with msgpack, the array left out.
# Anything it does not plainly recognise is left to msgpack and the validators, so that
# every refusal keeps its code, ``at`` and message.

#: :func:`avoid_pairs` found the array (its place and rows in ``info``).
PAIRS_FOUND = 0
#: :func:`avoid_pairs` did not: no such array, or one not plainly of number pairs.
PAIRS_NONE = 1

_BAD = -1
_ATOM = 0
_ARRAY = 1
_MAP = 2
_STR = 3

_AVOID_KEY = np.frombuffer(b"avoid", dtype=np.uint8)
_CELLS_KEY = np.frombuffer(b"cells", dtype=np.uint8)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _big_endian(body, at, size):
    """The unsigned big-endian int of ``size`` (at most 4) bytes at ``at``."""
    v = 0
    for k in range(size):
        v = (v << 8) | np.int64(body[at + k])
    return v


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _header(body, at, n):
    """The msgpack header at ``at``: (kind, length, where its payload starts). An
    ``_ARRAY`` or ``_MAP``'s length counts its entries, a ``_STR``'s its bytes, an
    ``_ATOM``'s (any other value) the bytes after the header it takes; ``_BAD`` when the
    bytes end or the type byte is unused."""
    if at >= n:
        return _BAD, 0, at
    b = np.int64(body[at])
    at += 1
    if b <= 0x7F or b >= 0xE0 or b == 0xC0 or b == 0xC2 or b == 0xC3:
        return _ATOM, 0, at
    if b <= 0x8F:
        return _MAP, b & 0x0F, at
    if b <= 0x9F:
        return _ARRAY, b & 0x0F, at
    if b <= 0xBF:
        return _STR, b & 0x1F, at
    if b == 0xC1:
        return _BAD, 0, at
    kind = _ATOM
    size = 0  # bytes of the length field
    extra = 0  # payload bytes besides the length
    if b <= 0xC6:  # bin 8 / 16 / 32
        size = 1 << (b - 0xC4)
    elif b <= 0xC9:  # ext 8 / 16 / 32: a type byte, then the data
        size = 1 << (b - 0xC7)
        extra = 1
    elif b == 0xCA:
        return _ATOM, 4, at
    elif b == 0xCB:
        return _ATOM, 8, at
    elif b <= 0xD3:  # uint and int 8 / 16 / 32 / 64
        return _ATOM, 1 << ((b - 0xCC) & 3), at
    elif b <= 0xD8:  # fixext 1 / 2 / 4 / 8 / 16: a type byte, then the data
        return _ATOM, 1 + (1 << (b - 0xD4)), at
    elif b <= 0xDB:  # str 8 / 16 / 32
        kind = _STR
        size = 1 << (b - 0xD9)
    elif b <= 0xDD:  # array 16 / 32
        kind = _ARRAY
        size = 2 << (b - 0xDC)
    else:  # map 16 / 32
        kind = _MAP
        size = 2 << (b - 0xDE)
    if at + size > n:
        return _BAD, 0, at
    return kind, _big_endian(body, at, size) + extra, at + size


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _skip(body, at, n):
    """Where the value at ``at`` ends, containers and all; -1 past the body's end."""
    pending = 1
    while pending > 0:
        kind, length, at = _header(body, at, n)
        if kind == _BAD:
            return -1
        pending -= 1
        if kind == _ARRAY:
            pending += length
        elif kind == _MAP:
            pending += 2 * length
        else:
            at += length
            if at > n:
                return -1
    return at


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _key_is(body, at, length, key):
    """Whether the string of ``length`` bytes at ``at`` is ``key``."""
    if length != key.shape[0]:
        return False
    for k in range(length):
        if body[at + k] != key[k]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _entry(body, at, n, wanted):
    """The map entry at ``at``: (1, where its value starts) when its key is the string
    ``wanted``, (0, where the entry ends) for another string key, (-1, at) for a key that
    is no string or bytes that end too soon."""
    kind, length, key = _header(body, at, n)
    at = key + length
    if kind != _STR or at > n:
        return -1, at
    if _key_is(body, key, length, wanted):
        return 1, at
    at = _skip(body, at, n)
    return (-1 if at < 0 else 0), at


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _number(body, at, n, flat, bits, halves, singles, slot):
    """Read the int or float at ``at`` into ``flat[slot]`` (float64; ``bits``, ``halves``
    and ``singles`` its uint64, uint32 and float32 views). Returns where it ends, or -1
    for anything else (a bool, nil, a NaN...)."""
    if at >= n:
        return -1
    b = np.int64(body[at])
    at += 1
    if b <= 0x7F:
        flat[slot] = b
        return at
    if b >= 0xE0:
        flat[slot] = b - 256
        return at
    if b < 0xCA or b > 0xD3:
        return -1
    size = 4 if b == 0xCA else 8 if b == 0xCB else 1 << ((b - 0xCC) & 3)
    if at + size > n:
        return -1
    if size == 8:
        word = np.uint64(0)
        for k in range(8):
            word = (word << np.uint64(8)) | np.uint64(body[at + k])
        if b == 0xCB:
            bits[slot] = word
            if not np.isfinite(flat[slot]):
                return -1
        elif b == 0xCF:
            flat[slot] = np.float64(word)
        else:
            flat[slot] = np.float64(np.int64(word))
    elif b == 0xCA:
        halves[2 * slot] = np.uint32(_big_endian(body, at, 4))
        flat[slot] = np.float64(singles[2 * slot])
        if not np.isfinite(flat[slot]):
            return -1
    else:
        v = _big_endian(body, at, size)
        if b >= 0xD0 and v >= 1 << (8 * size - 1):  # int 8 / 16 / 32: two's complement
            v -= 1 << (8 * size)
        flat[slot] = v
    return at + size


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _pairs(body, at, n, max_rows, out):
    """The array of ``[x, y]`` number pairs at ``at`` into ``out``'s rows: (rows, where it
    ends), or (-1, -1) when it is not one, or holds more than ``max_rows``."""
    kind, count, at = _header(body, at, n)
    if kind != _ARRAY or count > max_rows or count > out.shape[0]:
        return -1, -1
    flat = out.reshape(-1)
    bits = flat.view(np.uint64)
    halves = flat.view(np.uint32)
    singles = flat.view(np.float32)
    for i in range(count):
        if at >= n or body[at] != 0x92:
            return -1, -1
        at = _number(body, at + 1, n, flat, bits, halves, singles, 2 * i)
        if at < 0:
            return -1, -1
        at = _number(body, at, n, flat, bits, halves, singles, 2 * i + 1)
        if at < 0:
            return -1, -1
    return count, at


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def avoid_pairs(body, max_rows, out, info):
    """Find a request's ``avoid.cells`` sent as ``[x, y]`` pairs in its msgpack ``body``
    (uint8): the body one map with string keys holding ``avoid`` once, a map with
    string keys holding ``cells`` once, an array of at most ``max_rows`` (and at most
    ``out``'s rows) two-number arrays, ints or finite floats, and nothing after the map.
    Reads the numbers into float64 ``out`` (n, 2) and writes the array's first byte, the
    byte after it and its rows into int64 ``info``. Returns PAIRS_FOUND, or PAIRS_NONE
    (``out`` and ``info`` then say nothing) for a body that is not plainly so."""
    n = body.shape[0]
    kind, count, at = _header(body, 0, n)
    if kind != _MAP:
        return PAIRS_NONE
    seen_avoid = False
    start = -1
    for _ in range(count):
        found, at = _entry(body, at, n, _AVOID_KEY)
        if found < 0:
            return PAIRS_NONE
        if found == 0:
            continue
        if seen_avoid:
            return PAIRS_NONE  # msgpack keeps the last; the validators decide
        seen_avoid = True
        kind, inner, at = _header(body, at, n)
        if kind != _MAP:
            return PAIRS_NONE
        for _ in range(inner):
            found, at = _entry(body, at, n, _CELLS_KEY)
            if found < 0 or found > 0 and start >= 0:
                return PAIRS_NONE
            if found == 0:
                continue
            start = at
            rows, at = _pairs(body, at, n, max_rows, out)
            if rows < 0:
                return PAIRS_NONE
            info[0] = start
            info[1] = at
            info[2] = rows
    if start < 0 or at != n:
        return PAIRS_NONE
    return PAIRS_FOUND
