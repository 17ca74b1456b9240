"""Reply builders.

Every reply is a map whose first two keys are ``id`` and ``ok``, in that order; the other
keys follow in the order these builders insert them (the golden vectors in
``docs/protocol.md`` depend on it). The error codes, and which are retryable, are the
error classes' (``pathserver.errors``).

Path answers come in as :class:`PathAnswer` and go out through :class:`PathReplies`,
which also owns the fast path for long paths: their points are written as msgpack by
compiled kernels it is handed (:mod:`pathserver.core.wire`; this package imports no
numba), without the GIL, and spliced into the reply byte for byte as msgpack would have
written the lists.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Protocol

import numpy as np

from pathserver.errors import RETRYABLE_CODES
from pathserver.protocol.codec import Packed, encode
from pathserver.protocol.packed import points_bin


#: Bumped only for an incompatible change; ``ping`` replies carry it.
PROTOCOL_VERSION = 1


def ok_reply(request_id, fields: dict | None = None) -> dict:
    reply = {"id": request_id, "ok": True}
    if fields:
        reply.update(fields)
    return reply


def error_object(code: str, message: str, at: str | None = None) -> dict:
    """The ``error`` member of an error reply."""
    return {"code": code, "message": message, "at": at}


def error_reply(request_id, code: str, message: str, at: str | None = None, *, retry_after_ms: int | None = None,
                gen: int | None = None) -> dict:
    """``overloaded`` replies carry ``retry_after_ms``, an ``update``'s ``conflict`` the
    map's current ``gen``, after ``retryable``."""
    reply = {
        "id": request_id,
        "ok": False,
        "error": error_object(code, message, at),
        "retryable": code in RETRYABLE_CODES,
    }
    if retry_after_ms is not None:
        reply["retry_after_ms"] = int(retry_after_ms)
    if gen is not None:
        reply["gen"] = int(gen)
    return reply


def batch_error(code: str, message: str, at: str | None = None) -> dict:
    """One failed entry of a ``paths`` reply's ``results``."""
    return {"ok": False, "error": error_object(code, message, at)}


class PathAnswer(NamedTuple):
    """One path answer, in the coordinates of the request's ``space`` (the server turns
    cells into world points, as it turns world points into cells on the way in).

    status: ``"found"`` / ``"partial"`` / ``"no_path"``.
    path: (n, 2) numpy array of ``(x, y)`` points, start and goal included: int32 cells
        in grid space, float64 points in world space.
    cost: float, the path's cost; length: float, its length in the request's units.
    expanded: int, nodes the search expanded.
    start, goal: ``[x, y]`` after snapping (ints in grid space, floats in world space).
    start_snapped, goal_snapped: bool, whether snapping moved them.
    gen: int, the generation of the map the answer was computed on.
    goal_index: with ``goals``, the index of the goal the path leads to, -1 when none is
        reached (nil on the wire); None for a single ``goal`` (the reply leaves it out).
    links: on a map with floors or links, ``[[i, k], ...]``: the move from ``path[i]`` to
        ``path[i + 1]`` is link ``k``; None elsewhere (the reply leaves it out).

    On a map of several floors every point is ``(x, y, floor)``.
    """

    status: str
    path: np.ndarray
    cost: float
    length: float
    expanded: int
    start: list
    goal: list
    start_snapped: bool
    goal_snapped: bool
    gen: int
    goal_index: int | None = None
    links: list | None = None


class PointKernels(Protocol):
    """Compiled msgpack encoders of a path's points (:mod:`pathserver.core.wire`): each
    writes exactly what msgpack-python's ``Packer`` writes for ``points.tolist()``."""

    def packed_points_bound(self, n: int) -> int:
        """Bytes enough for ``n`` points."""

    def pack_int_points(self, points: np.ndarray, out: np.ndarray) -> int:
        """int32 (n, 2) ``points`` into uint8 ``out``; returns the bytes written."""

    def pack_float_points(self, bits: np.ndarray, out: np.ndarray) -> int:
        """float64 (n, 2) points given as their uint64 bits into uint8 ``out``; returns the
        bytes written."""


#: Paths with at least this many points are encoded by the kernels (without the GIL);
#: shorter ones as Python lists, which is quicker for them. The bytes are the same.
PACK_MIN_POINTS = 64


class PathReplies:
    """:class:`PathAnswer` -> a ``path`` reply (:meth:`encode`, or :meth:`reply` as a
    dict for :func:`~pathserver.protocol.codec.encode`) or one entry of a ``paths``
    reply's ``results`` (:meth:`entry`). Members in wire order: ``status, path, cost,
    length, expanded, start, goal, start_snapped, goal_snapped, gen`` and, for a request
    with ``goals``, ``goal_index`` (nil when no goal is reached), and on a map with floors
    or links ``links``.

    kernels: the compiled point encoders for paths of ``pack_min_points`` points or more;
    None encodes every path as lists (the same bytes, slower for long paths, and the GIL
    held meanwhile).
    """

    def __init__(self, kernels: PointKernels | None = None, pack_min_points: int = PACK_MIN_POINTS):
        self.kernels = kernels
        self.pack_min_points = pack_min_points
        # Paths shorter than this go out as lists: without kernels, every path.
        self._pack_from = pack_min_points if kernels is not None else math.inf

    def encode(self, request_id, answer: PathAnswer, packed: bool = False) -> bytes:
        """The ``path`` reply's bytes."""
        return encode(self.reply(request_id, answer, packed))

    def reply(self, request_id, answer: PathAnswer, packed: bool = False) -> dict:
        """A ``path`` reply: ``id, ok``, then the answer's members; packed: ``path`` as one
        bin of pairs (:func:`~pathserver.protocol.packed.points_bin`). One literal, which
        :meth:`entry` reuses, rather than ``ok_reply(rid, self.entry(...))``: this is the
        reply the server builds most often."""
        status, path, cost, length, expanded, start, goal, start_snapped, goal_snapped, gen, goal_index, links = answer
        if packed:
            points = points_bin(path)
        elif path.shape[0] < self._pack_from or path.shape[1] != 2:
            points = path.tolist()
        else:
            points = self._packed(path)
        reply = {
            "id": request_id,
            "ok": True,
            "status": status,
            "path": points,
            "cost": cost,
            "length": length,
            "expanded": expanded,
            "start": start,
            "goal": goal,
            "start_snapped": start_snapped,
            "goal_snapped": goal_snapped,
            "gen": gen,
        }
        if goal_index is not None:
            reply["goal_index"] = goal_index if goal_index >= 0 else None
        if links is not None:
            reply["links"] = links
        return reply

    def entry(self, answer: PathAnswer) -> dict:
        """One successful entry of a ``paths`` reply's ``results``: the ``path`` reply's
        members but ``id``."""
        entry = self.reply(None, answer)
        del entry["id"]
        return entry

    def _packed(self, points: np.ndarray) -> Packed:
        """``points`` (n, 2) as the kernels' msgpack bytes, spliced in by ``encode``."""
        kernels = self.kernels
        out = np.empty(kernels.packed_points_bound(points.shape[0]), dtype=np.uint8)
        if points.dtype == np.float64:
            size = kernels.pack_float_points(np.ascontiguousarray(points).view(np.uint64), out)
        else:
            size = kernels.pack_int_points(np.ascontiguousarray(points, dtype=np.int32), out)
        return Packed(memoryview(out)[:size])
