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
    """Bounds on one inbound request. The socket's own ``MAXMSGSIZE`` is set well above
    ``max_request_bytes`` (see ``pathserver.server.loop``), so an oversized body still
    gets a ``too_large`` reply instead of a silent disconnect."""

    max_request_bytes: int = 1 << 20
    max_str_len: int = 4096
    max_bin_len: int = 4096
    max_ext_len: int = 64
    #: Long enough for an ``update`` with tens of thousands of cells.
    max_array_len: int = 1 << 17
    max_map_len: int = 64
    max_depth: int = 8


DEFAULT_LIMITS = Limits()


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
