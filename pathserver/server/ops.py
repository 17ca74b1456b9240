"""The table of ops: one row an op, from its wire name to the function that answers it.

Adding an op means adding a row here (and its parser in :mod:`pathserver.protocol.requests`,
its handler in one of the ``*_ops`` modules). The socket loop reads ``runs`` to decide
where a request is answered:

- ``LOOP``: on the socket loop itself, at once (cheap, no map work);
- ``WORKER``: on a worker thread (searches, edits, reading or dropping a map);
- ``UPLOAD``: on the one upload thread, which builds uploaded maps in turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from pathserver.options import BUDGET, GOALS
from pathserver.protocol import path_requests as path_req
from pathserver.protocol import requests as req
from pathserver.protocol.codec import UPLOAD_OP
from pathserver.protocol.replies import PROTOCOL_VERSION, ok_reply
from pathserver.server import map_ops, path_ops, query_ops

LOOP, WORKER, UPLOAD = "loop", "worker", "upload"


class Op(NamedTuple):
    """One op. ``parse(id, obj)`` -> its request; ``handle(request, registry, stats)`` ->
    the reply dict (raises PathserverError); ``name`` is also its name in ``stats``."""

    name: str
    request: type
    parse: Callable
    handle: Callable
    runs: str


def _ping(request, registry, stats) -> dict:
    return ok_reply(request.id, {"protocol": PROTOCOL_VERSION})


def _stats(request, registry, stats) -> dict:
    return ok_reply(request.id, dict(stats or {}))


def _on(handler: Callable) -> Callable:
    """A handler of ``(request, registry)`` as the table calls it."""
    return lambda request, registry, stats: handler(request, registry)


TABLE = (
    Op("path", req.PathRequest, path_req.parse_path, _on(path_ops.handle_path), WORKER),
    Op("paths", req.PathsRequest, path_req.parse_paths, _on(path_ops.handle_paths), WORKER),
    Op("maps", req.MapsRequest, req.parse_bare(req.MapsRequest), _on(map_ops.handle_maps), LOOP),
    Op("update", req.UpdateRequest, req.parse_update, _on(map_ops.handle_update), WORKER),
    Op("ping", req.PingRequest, req.parse_bare(req.PingRequest), _ping, LOOP),
    Op("stats", req.StatsRequest, req.parse_bare(req.StatsRequest), _stats, LOOP),
    Op(UPLOAD_OP, req.PutMapRequest, req.parse_put_map, _on(map_ops.handle_put_map), UPLOAD),
    Op("drop_map", req.DropMapRequest, req.parse_drop_map, _on(map_ops.handle_drop_map), WORKER),
    Op("get_map", req.GetMapRequest, req.parse_get_map, _on(map_ops.handle_get_map), WORKER),
    Op("reachable", req.QueryRequest, req.query_parser("reachable", ("start",), ("start", BUDGET.name), req.read_start),
       _on(query_ops.handle_reachable), WORKER),
    Op("field", req.QueryRequest, req.query_parser("field", (), (GOALS.name,)), _on(query_ops.handle_field), WORKER),
    Op("next_steps", req.QueryRequest, req.query_parser("next_steps", ("positions",), (GOALS.name, "positions"),
                                                        req.read_positions), _on(query_ops.handle_next_steps), WORKER),
    Op("check_block", req.QueryRequest, req.query_parser("check_block", ("points", "cells", "rects"), ("points",),
                                                         req.read_placement), _on(query_ops.handle_check_block), WORKER),
)

#: Every op's wire name, in the table's order.
NAMES = tuple(op.name for op in TABLE)
BY_NAME = {op.name: op for op in TABLE}
_PARSERS = {op.name: op.parse for op in TABLE}
# A request type names its op, but for the queries' one type (its ``op`` field does) and
# an upload not yet decoded.
_BY_TYPE = {op.request: op for op in TABLE if op.request is not req.QueryRequest}
_BY_TYPE[req.UploadBody] = BY_NAME[UPLOAD_OP]


def parse_request(obj: dict):
    """A decoded request map -> its typed request. Raises RequestError (with ``at``)."""
    return req.parse_request(obj, _PARSERS)


def of(request) -> Op:
    """The row of a typed request (an :class:`~pathserver.protocol.requests.UploadBody`: ``put_map``'s)."""
    op = _BY_TYPE.get(type(request))
    return op if op is not None else BY_NAME[request.op]


def handle(request, registry, stats: dict | None = None) -> dict:
    """The reply dict for a validated request; raises PathserverError on failure."""
    return of(request).handle(request, registry, stats)
