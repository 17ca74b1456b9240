"""Reply builders.

Every reply is a map whose first two keys are ``id`` and ``ok``, in that order; the other
keys follow in the order these builders insert them (the golden vectors in
``docs/protocol.md`` depend on it). The error codes, and which are retryable, are the
error classes' (``pathserver.errors``).
"""

from __future__ import annotations

from pathserver.errors import RETRYABLE_CODES

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


def error_reply(request_id, code: str, message: str, at: str | None = None, *, retry_after_ms: int | None = None) -> dict:
    reply = {
        "id": request_id,
        "ok": False,
        "error": error_object(code, message, at),
        "retryable": code in RETRYABLE_CODES,
    }
    if retry_after_ms is not None:
        reply["retry_after_ms"] = int(retry_after_ms)
    return reply


def batch_error(code: str, message: str, at: str | None = None) -> dict:
    """One failed entry of a ``paths`` reply's ``results``."""
    return {"ok": False, "error": error_object(code, message, at)}


def path_fields(status, path, cost, length, expanded, start, goal, start_snapped, goal_snapped, gen) -> dict:
    """The members of a path answer, in wire order (each ``paths`` entry).

    status: ``"found"`` / ``"partial"`` / ``"no_path"``; path: ``[[x, y], ...]``; cost,
    length: float; expanded: int; start, goal: ``[x, y]``; start_snapped, goal_snapped:
    bool; gen: int.
    """
    return {
        "status": status,
        "path": path,
        "cost": cost,
        "length": length,
        "expanded": expanded,
        "start": start,
        "goal": goal,
        "start_snapped": start_snapped,
        "goal_snapped": goal_snapped,
        "gen": gen,
    }


def path_reply(request_id, status, path, cost, length, expanded, start, goal, start_snapped, goal_snapped,
               gen) -> dict:
    """A ``path`` reply: ``id, ok``, then the members of :func:`path_fields` in the same
    order. One literal rather than ``ok_reply(rid, path_fields(...))``: this is the reply
    the server builds most often."""
    return {
        "id": request_id,
        "ok": True,
        "status": status,
        "path": path,
        "cost": cost,
        "length": length,
        "expanded": expanded,
        "start": start,
        "goal": goal,
        "start_snapped": start_snapped,
        "goal_snapped": goal_snapped,
        "gen": gen,
    }
