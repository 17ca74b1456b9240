"""The request pipeline: body bytes -> typed request -> reply bytes, never raising.

::

    body bytes --read_request()--> typed request --run()--> reply bytes
                     |                                 |
                     +------- error_reply_bytes() <----+   (any exception, exactly here)

``read_request`` runs on the socket loop (cheap: decode and validate); ``run`` answers by
the op's row in :mod:`pathserver.server.ops`, on the thread the row names. A ``put_map``
body over the default limits is not decoded on the loop at all: ``read_request`` hands it
on as an ``UploadBody``, which ``run`` reads on the upload thread. Errors become replies
in :mod:`pathserver.server.failures`.

The ops read maps through a registry (``get``, ``info``, ``apply_edit``, ``check_put``,
``put_map``, ``drop_map``, ``stats``; see ``pathserver.maps.registry``). A request sent
with ``after`` reads as an ``After`` around the request.
"""

from __future__ import annotations

import time

from pathserver.core import wire as wire_kernels
from pathserver.errors import PathserverError, TooLargeError
from pathserver.protocol.codec import (
    DEFAULT_LIMITS,
    UPLOAD_LIMITS,
    UPLOAD_OP,
    Limits,
    check_structure,
    decode_request,
    encode,
    peek_id,
    top_level_op,
)
from pathserver.protocol.reading import BodyDecoder
from pathserver.protocol.path_requests import parse_path_fast
from pathserver.protocol.requests import After, PutMapRequest, UploadBody, parse_seq, request_id
from pathserver.server import ops
from pathserver.server.failures import error_reply_bytes
from pathserver.server.map_ops import handle_put_map

#: Request bodies, with ``avoid.cells`` pairs read by the compiled kernel.
BODIES = BodyDecoder(wire_kernels)


def read_request(body: bytes, limits: Limits = DEFAULT_LIMITS, upload_limits: Limits = UPLOAD_LIMITS):
    """Decode and validate one body. Returns ``(request, None, None)``, or
    ``(None, reply_bytes, code)`` when the body fails; the error reply carries the id
    whenever one could be read (even from a body too large or broken to decode).

    A plainly valid ``path`` request takes a fast path (``parse_path_fast``, which also
    vouches for the depth and key types the codec's walk would check); anything else gets
    the codec's walk and the full validator, so every error is the one they raise.

    A body over ``limits`` whose top-level ``op`` is ``put_map`` (``codec.top_level_op``,
    which reads headers only) and within ``upload_limits``' size is returned undecoded as
    an :class:`UploadBody`, for :func:`read_upload` on a worker; any other stays
    ``too_large``."""
    rid = None
    try:
        try:
            obj = BODIES.decode(body, limits)
            if "after" in obj:
                return _read_after(obj, limits), None, None
            if limits.max_depth >= 2:
                request = parse_path_fast(obj, limits.max_depth)
                if request is not None:
                    return request, None, None
            check_structure(obj, limits)
        except TooLargeError:
            if len(body) <= upload_limits.max_request_bytes and top_level_op(body) == UPLOAD_OP:
                return UploadBody(peek_id(body), body), None, None
            rid = peek_id(body)
            raise
        except PathserverError:
            rid = peek_id(body)
            raise
        rid = request_id(obj)
        return ops.parse_request(obj), None, None
    except Exception as exc:
        reply, code = error_reply_bytes(rid, exc)
        return None, reply, code


def _read_after(obj: dict, limits: Limits) -> After:
    """A request sent with ``after``: the request without it, wrapped in :class:`After`."""
    rid = request_id(obj)
    after = obj.pop("after")
    check_structure(obj, limits)
    request = ops.parse_request(obj)
    seq = parse_seq(after)
    return After(rid, seq, after, request)


def read_upload(upload: UploadBody, limits: Limits = UPLOAD_LIMITS) -> PutMapRequest:
    """The ``put_map`` request in an :class:`UploadBody`, decoded with the upload limits
    and validated; raises as ``parse_request`` does."""
    return _parse_upload(upload, decode_request(upload.body, limits))


def _parse_upload(upload: UploadBody, obj: dict) -> PutMapRequest:
    obj.pop("after", None)  # checked and waited for by the caller
    request = ops.parse_request(obj)
    if type(request) is not PutMapRequest:
        # top_level_op vouched for the op; a decoder that disagreed must not let another
        # op past the default limits.
        raise TooLargeError(f"request of {len(upload.body)} bytes exceeds the limit of "
                            f"{DEFAULT_LIMITS.max_request_bytes} bytes")
    return request


def run(request, registry, stats: dict | None = None) -> tuple[bytes, str | None]:
    """Answer a validated request (or an :class:`UploadBody`): ``(reply_bytes, error_code
    or None)``. Never raises."""
    rid = request.id
    try:
        if type(request) is After:
            _wait_for(registry, request.seq, request.text)
            request = request.request
        if type(request) is UploadBody:
            started = time.perf_counter()
            obj = decode_request(request.body, UPLOAD_LIMITS)
            rid = request_id(obj)  # also when the id is not the body's first key
            if "after" in obj:
                _wait_for(registry, parse_seq(obj["after"]), obj["after"])
            request = _parse_upload(request, obj)
            return encode(handle_put_map(request, registry, started)), None
        return encode(ops.handle(request, registry, stats)), None
    except Exception as exc:
        return error_reply_bytes(rid, exc)


def _wait_for(registry, seq: tuple, text: str) -> None:
    """Block until ``registry`` (a shared state, ``pathserver.editlog``) applied entry
    ``seq``; AfterTimeoutError past its bound. A registry without shared state has
    applied every edit it answered: nothing to wait for."""
    wait = getattr(registry, "wait_applied", None)
    if wait is not None:
        wait(seq, text)


def respond(body: bytes, registry, stats: dict | None = None, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The whole pipeline for one body on the calling thread (tests, fuzzing)."""
    request, reply, _ = read_request(body, limits)
    if request is None:
        return reply
    return run(request, registry, stats)[0]

