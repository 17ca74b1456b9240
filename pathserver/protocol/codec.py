"""msgpack bytes <-> Python objects, with every unpacker limit set explicitly.

A request body is one msgpack map with string keys. Decoding refuses, before any other
work is done:

- a body longer than ``Limits.max_request_bytes``                  -> TooLargeError
- a string, array, map, bin or ext longer than its limit            -> TooLargeError
- containers nested deeper than ``Limits.max_depth``                -> TooLargeError
- bytes that are not exactly one msgpack value (or trailing bytes)  -> MalformedError
- a value that is not a map, or a map key that is not a string      -> MalformedError

``decode_request`` is ``decode_map`` (msgpack's own checks, and "is it a map") followed by
``check_structure`` (a walk for depth and key types); the server skips the walk only for a
request whose shape its fast path has checked already.

Strings decode as ``str`` (``raw=False``); invalid UTF-8 is malformed. Replies are encoded
with the bin type for bytes, float64 for floats, the smallest int encoding, and map keys in
dict insertion order — replies are built ``id, ok, ...`` so their bytes are reproducible
(``docs/protocol.md`` lists golden vectors).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import msgpack

from pathserver.errors import MalformedError, TooLargeError
from pathserver.options import wire_type


@dataclass(frozen=True)
class Limits:
    """Bounds on one inbound request. The socket's own ``MAXMSGSIZE`` is set above
    ``max_request_bytes`` (``pathserver.transport.max_message_bytes``), so an oversized
    body still gets a ``too_large`` reply instead of a silent disconnect."""

    max_request_bytes: int = 1 << 20
    max_str_len: int = 4096
    #: A ``next_steps`` request's ``positions`` (8 bytes a unit) may fill the request.
    max_bin_len: int = 1 << 20
    max_ext_len: int = 64
    #: Long enough for an ``update`` with tens of thousands of cells.
    max_array_len: int = 1 << 17
    max_map_len: int = 64
    max_depth: int = 8


DEFAULT_LIMITS = Limits()

#: The largest ``put_map`` body: a 4096 x 4096 map with every layer (1 + 4 + 4 + 1 bytes
#: a cell), plus 1 MiB for its other fields and the msgpack headers.
MAX_UPLOAD_BYTES = 4096 * 4096 * 10 + (1 << 20)

#: Bounds on a ``put_map`` body, the only op that may exceed :data:`DEFAULT_LIMITS`: its
#: bins (the map's layers) may hold 4096 * 4096 float32s. Every other bound is the default.
UPLOAD_LIMITS = Limits(max_request_bytes=MAX_UPLOAD_BYTES, max_bin_len=4096 * 4096 * 4)
#: The op decoded with :data:`UPLOAD_LIMITS`.
UPLOAD_OP = "put_map"


def decode_request(body: bytes, limits: Limits = DEFAULT_LIMITS) -> dict:
    """One request body -> a dict with str keys. Raises MalformedError or TooLargeError."""
    obj = decode_map(body, limits)
    check_structure(obj, limits)
    return obj


def decode_map(body: bytes, limits: Limits = DEFAULT_LIMITS) -> dict:
    """The first half of :func:`decode_request`: every check msgpack itself makes (sizes,
    lengths, UTF-8, trailing bytes) and that the value is a map — but not the nesting
    depth nor the key types, which need a walk over the value.

    A caller may skip :func:`check_structure` only for a value whose shape it has checked
    itself (the server's fast path for ``path``: str keys, depth 2 at most); anything else
    must go through it, so that its error is the one ``decode_request`` would raise.
    """
    if len(body) > limits.max_request_bytes:
        raise TooLargeError(f"request of {len(body)} bytes exceeds the limit of {limits.max_request_bytes} bytes")
    if not body:
        raise MalformedError("empty request body; expected one msgpack map")
    try:
        obj = msgpack.unpackb(body, **_unpack_options(limits))
    except msgpack.StackError:
        # msgpack's own fixed stack (1024 levels) is far above max_depth: past it, the
        # body is too deep all the same.
        raise TooLargeError(f"request nests deeper than {limits.max_depth} levels") from None
    except msgpack.ExtraData:
        raise MalformedError("trailing bytes after the msgpack map; send exactly one map per frame") from None
    except UnicodeDecodeError:
        raise MalformedError("a msgpack string is not valid UTF-8") from None
    except ValueError as exc:
        # msgpack reports its length limits as plain ValueErrors ("N exceeds max_str_len(M)").
        if "exceeds max_" in str(exc):
            raise TooLargeError(f"request field too long: {exc}") from None
        if "map key" in str(exc):
            raise MalformedError("map keys must be strings") from None
        raise MalformedError("request is not valid msgpack") from None
    except Exception:
        raise MalformedError("request is not valid msgpack") from None
    if type(obj) is not dict:
        raise MalformedError(f"request must be a msgpack map, got {wire_type(obj)}")
    return obj


def check_structure(obj: dict, limits: Limits = DEFAULT_LIMITS) -> None:
    """The second half of :func:`decode_request`: nesting depth, then str keys."""
    if not _depth_within(obj, limits.max_depth):
        raise TooLargeError(f"request nests deeper than {limits.max_depth} levels")
    for key in obj:
        if type(key) is not str:
            raise MalformedError("map keys must be strings")


def _unpack_options(limits: Limits) -> dict:
    if limits is DEFAULT_LIMITS:
        return _DEFAULT_UNPACK_OPTIONS
    return {
        "raw": False,
        "strict_map_key": True,
        "use_list": True,
        "max_str_len": limits.max_str_len,
        "max_bin_len": limits.max_bin_len,
        "max_ext_len": limits.max_ext_len,
        "max_array_len": limits.max_array_len,
        "max_map_len": limits.max_map_len,
    }


_DEFAULT_UNPACK_OPTIONS = _unpack_options(Limits())


def top_level_op(body: bytes, max_headers: int = 256) -> str | None:
    """The ``op`` of a body that is one msgpack map with string keys and exactly one
    ``"op"`` key whose value is a string, else None: read from the msgpack headers alone,
    without decoding or copying anything (a bin's or string's length is in its header, so
    skipping a 64 MiB layer costs what skipping an int does).

    The server reads this only for a body over :data:`DEFAULT_LIMITS`, to tell a
    ``put_map`` (decoded on a worker with :data:`UPLOAD_LIMITS`) from anything else (a
    ``too_large`` reply at once). It gives up (None) after ``max_headers`` msgpack headers,
    so a body of many small values costs no more than a ``put_map``'s dozen; a duplicate
    ``"op"`` key gives None too, as a decoder would keep the other one.
    """
    budget = [max_headers]
    try:
        pos, entries = _container_header(body, 0, 0x80, 0xDE)
        op = None
        for _ in range(entries):
            pos, key = _skip(body, pos, budget, want_str=True)
            if type(key) is not str:
                return None
            pos, value = _skip(body, pos, budget, want_str=key == "op")
            if key == "op":
                if op is not None or type(value) is not str:
                    return None
                op = value
        return op if pos == len(body) else None
    except (IndexError, ValueError):
        return None


def _container_header(body: bytes, pos: int, fix: int, code16: int) -> tuple[int, int]:
    """``(position after the header, entries)`` of a map (``fix`` 0x80, ``code16`` 0xde)
    or array (0x90, 0xdc) header at ``pos``; ValueError for anything else."""
    first = body[pos]
    if fix <= first <= fix + 0x0F:
        return pos + 1, first - fix
    if first == code16:
        return pos + 3, int.from_bytes(body[pos + 1:pos + 3], "big")
    if first == code16 + 1:
        return pos + 5, int.from_bytes(body[pos + 1:pos + 5], "big")
    raise ValueError("not the container expected")


#: msgpack's fixed-size types: first byte -> bytes after it.
_FIXED = {0xC0: 0, 0xC2: 0, 0xC3: 0, 0xCA: 4, 0xCB: 8, 0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8, 0xD0: 1, 0xD1: 2,
          0xD2: 4, 0xD3: 8, 0xD4: 2, 0xD5: 3, 0xD6: 5, 0xD7: 9, 0xD8: 17}
#: Types with a length header: first byte -> (bytes of the length, bytes before the data:
#: an ext's type).
_SIZED = {0xC4: (1, 0), 0xC5: (2, 0), 0xC6: (4, 0), 0xC7: (1, 1), 0xC8: (2, 1), 0xC9: (4, 1), 0xD9: (1, 0),
          0xDA: (2, 0), 0xDB: (4, 0)}
_STR_CODES = (0xD9, 0xDA, 0xDB)
#: Strings up to this long are decoded by the scan (keys, op names); longer ones skipped.
_SCAN_STR_LEN = 64


def _skip(body: bytes, pos: int, budget: list, want_str: bool = False) -> tuple[int, object]:
    """The position after the msgpack value at ``pos``, and the value when it is a short
    string and ``want_str`` (else None). Each header read takes one from ``budget[0]``;
    ValueError when it runs out, at a truncated value, or at a byte msgpack never uses."""
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("too many values to scan")
    first = body[pos]
    if first <= 0x7F or first >= 0xE0:  # positive and negative fixints
        return pos + 1, None
    if 0xA0 <= first <= 0xBF or first in _STR_CODES:
        if first <= 0xBF:
            start, length = pos + 1, first - 0xA0
        else:
            start = pos + 1 + _SIZED[first][0]
            length = int.from_bytes(body[pos + 1:start], "big")
        end = start + length
        if end > len(body):
            raise ValueError("truncated")
        text = body[start:end].decode("utf-8") if want_str and length <= _SCAN_STR_LEN else None
        return end, text
    if first in _FIXED:
        end = pos + 1 + _FIXED[first]
    elif first in _SIZED:
        width, extra = _SIZED[first]
        start = pos + 1 + width
        end = start + extra + int.from_bytes(body[pos + 1:start], "big")
    else:
        if 0x80 <= first <= 0x8F or first in (0xDE, 0xDF):
            pos, entries = _container_header(body, pos, 0x80, 0xDE)
            entries *= 2
        elif 0x90 <= first <= 0x9F or first in (0xDC, 0xDD):
            pos, entries = _container_header(body, pos, 0x90, 0xDC)
        else:
            raise ValueError("not msgpack")  # 0xc1
        if entries > budget[0]:
            raise ValueError("too many values to scan")
        for _ in range(entries):
            pos, _ = _skip(body, pos, budget)
        return pos, None
    if end > len(body):
        raise ValueError("truncated")
    return end, None


def peek_id(body: bytes):
    """The request id when ``body`` starts like a map whose first key is ``"id"`` with an
    int value, else None. Reads only the first few bytes: used to address error replies
    to bodies that are too large or fail to decode further on."""
    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=64, max_str_len=8, max_bin_len=0,
                                max_array_len=0, max_map_len=1 << 16, max_ext_len=0)
    try:
        unpacker.feed(body[:32])
        unpacker.read_map_header()
        if unpacker.unpack() != "id":
            return None
        value = unpacker.unpack()
    except Exception:
        return None
    return value if is_wire_int(value) else None


class Packed:
    """A value already encoded as msgpack bytes (``data``: bytes or a buffer), which
    :func:`encode` splices into the reply as it is: a long path's points, encoded by
    compiled kernels without the GIL (see :class:`pathserver.protocol.replies.PathReplies`)
    rather than as Python lists."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data


# While a reply is packed, each Packed value is written as a fixext16 token (ext type
# 127, a per-thread secret and its ordinal), then the tokens are replaced by the values'
# bytes. The secret keeps a request id that mimics a token from ever matching one.
_TOKEN_EXT = 127


def _default(obj):
    if type(obj) is Packed:
        spliced = _local.spliced
        spliced.append(obj.data)
        return msgpack.ExtType(_TOKEN_EXT, _local.secret + len(spliced).to_bytes(8, "little"))
    raise TypeError(f"can not serialize {type(obj).__name__!r} object")


def encode(obj) -> bytes:
    """A reply (or a request, for clients) as msgpack bytes; :class:`Packed` values are
    spliced in as they are."""
    # One Packer per thread: ``packb`` builds a new one per call, which costs as much as
    # packing a short reply; a Packer is not thread-safe, and replies are encoded on the
    # socket loop and on every worker. A failed pack() empties the Packer's buffer.
    packer = getattr(_local, "packer", None)
    if packer is None:
        packer = _local.packer = msgpack.Packer(use_bin_type=True, buf_size=_PACKER_START_BYTES, default=_default)
        _local.spliced = []
        _local.secret = os.urandom(8)
    try:
        body = packer.pack(obj)
    except BaseException:
        _local.spliced.clear()  # a reply that failed leaves no Packed value behind
        raise
    spliced = _local.spliced
    if spliced:
        try:
            body = _splice(body, spliced, _local.secret)
        finally:
            spliced.clear()
    if len(body) > _PACKER_KEEP_BYTES:
        # The buffer grew to this reply's size and never shrinks: let it go with the Packer.
        _local.packer = None
    return body


def _splice(body: bytes, spliced: list, secret: bytes) -> bytes:
    parts = []
    pos = 0
    for ordinal, data in enumerate(spliced, 1):
        token = b"\xd8\x7f" + secret + ordinal.to_bytes(8, "little")
        at = body.index(token, pos)
        parts.append(body[pos:at])
        parts.append(data)
        pos = at + len(token)
    parts.append(body[pos:])
    return b"".join(parts)


_local = threading.local()
_PACKER_START_BYTES = 16 * 1024
_PACKER_KEEP_BYTES = 256 * 1024


def is_wire_int(value) -> bool:
    return type(value) is int


def _depth_within(obj, max_depth: int) -> bool:
    stack = [(obj, 1)]
    while stack:
        container, depth = stack.pop()
        if depth > max_depth:
            return False
        for child in container.values() if type(container) is dict else container:
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1))
    return True
