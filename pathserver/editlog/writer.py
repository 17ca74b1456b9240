"""The shared state's writing side: a change is appended to the stream by the server that
took it, which answers once its own reader has applied it. ``put_map`` and ``drop_map``
are written by the handler thread that waits for them; the socket loop's ``update``s
are handed to the writer thread, which writes many to a round trip."""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time

import msgpack
import redis

from pathserver.editlog.connection import (
    COMMAND_TIMEOUT_S, READ_COUNT, RETRY_AFTER_MS, STREAM, UPLOAD_IDS, UPLOADS, shown_url,
)
from pathserver.editlog.reader import Reader
from pathserver.errors import AfterTimeoutError, ConflictError, RequestError, StateUnavailableError
from pathserver.grid.gridmap import GridMap
from pathserver.grid.values import check_edit

log = logging.getLogger("pathserver.state")

_PUT = """
local id = redis.call('XADD', KEYS[1], '*', 'op', 'put', 'map', ARGV[1], 'token', ARGV[2], 't', ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
redis.call('HSET', KEYS[3], ARGV[1], id)
return id
"""
_DROP = """
local id = redis.call('XADD', KEYS[1], '*', 'op', 'drop', 'map', ARGV[1], 'token', ARGV[2], 't', ARGV[3])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return id
"""


class _Waiter:
    """A handler thread waiting for its own change: set by the reader with what applying
    it gave (one event per change: a batch wakes only the threads whose change it held)."""

    __slots__ = ("applied", "result")

    def __init__(self):
        self.applied = threading.Event()
        self.result = None

    def set(self, result, seq: str | None) -> None:
        self.result = result
        self.applied.set()


class _Submitted:
    """An edit the socket loop handed over without waiting (:meth:`Writer.submit_edit`):
    once applied here, or refused, ``(context, outcome, seq)`` joins ``done``."""

    __slots__ = ("context", "deadline", "done")

    def __init__(self, context, deadline: float, done: collections.deque):
        self.context, self.deadline, self.done = context, deadline, done

    def set(self, result, seq: str | None) -> None:
        self.done.append((self.context, result, seq))


class Writer:
    """Appends changes of ``registry``'s maps to the stream through ``client`` and waits
    for ``reader`` to apply them. ``token()``: a fresh change token; ``wake()``: wakes the
    socket loop; ``done``: what became of the submitted edits, for :meth:`finished`."""

    def __init__(self, client: redis.Redis, reader: Reader, *, url: str, counts: dict, token, wake,
                 after_timeout_s: float):
        self.client, self.reader, self.registry = client, reader, reader.registry
        self.url, self.counts, self.token, self.wake = url, counts, token, wake
        self.after_timeout_s = after_timeout_s
        self._put_script = client.register_script(_PUT)
        self._drop_script = client.register_script(_DROP)
        # Edits the socket loop submitted: (token, stream fields) for the writer thread, and
        # (token, deadline) in submission order; what became of them, for finished().
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._submitted: collections.deque = collections.deque()
        self.done: collections.deque = collections.deque()
        self._local = threading.local()
        self._refused_at = -1e9

    def apply_edit(self, name, rects=(), cells=(), *, solid=None, cost=None, if_gen=None, links=None) -> GridMap:
        """Append the edit to the stream, wait until it is applied here; returns the new
        map. ``if_gen`` is checked against this server's map (generations are per server).
        ``links`` (issue #35) are not in the stream yet: refused."""
        token, fields = self._edit_entry(name, rects, cells, solid, cost, if_gen, links)
        return self._commit(token, lambda: self.client.xadd(STREAM, fields))

    def submit_edit(self, name, rects=(), cells=(), *, solid=None, cost=None, if_gen=None, context=None,
                    links=None) -> None:
        """:meth:`apply_edit` without waiting: checked here (raising as it does), written by
        the writer thread with others in one round trip; ``(context, outcome, seq)`` comes
        out of :meth:`finished` once it is applied here (``outcome``: the new map) or
        failed (``outcome``: the error; ``state_unavailable``, ``after_timeout``...)."""
        token, fields = self._edit_entry(name, rects, cells, solid, cost, if_gen, links)
        if not self.reader.connected:
            raise self._refusal(ConnectionError("the reader is not connected"))
        # Its write may take COMMAND_TIMEOUT_S before it fails as state_unavailable.
        deadline = time.monotonic() + COMMAND_TIMEOUT_S + self.after_timeout_s
        self.reader.waiting[token] = _Submitted(context, deadline, self.done)
        self._submitted.append((token, deadline))
        self._outbox.put((token, fields))

    def finished(self) -> list:
        """The submitted edits done since the last call, ``(context, outcome, seq)`` each,
        those still waiting past their bound among them (``after_timeout``)."""
        now = time.monotonic()
        waiting = self.reader.waiting
        while self._submitted and (self._submitted[0][0] not in waiting or self._submitted[0][1] <= now):
            token, _ = self._submitted.popleft()
            late = waiting.pop(token, None)
            if late is not None:
                late.set(AfterTimeoutError(f"the edit was not applied here within {self.after_timeout_s:g} s "
                                           f"(applied up to {self.reader.applied_text}); it may still be: read the "
                                           "map again before sending it again", retry_after_ms=100), None)
        done = []
        while self.done:
            done.append(self.done.popleft())
        return done

    def outstanding(self) -> int:
        """Submitted edits not yet finished."""
        return len(self._submitted)

    def _edit_entry(self, name, rects, cells, solid, cost, if_gen, links=None) -> tuple[str, dict]:
        """Check an edit against this server's map; its token and stream fields."""
        if links is not None:
            raise RequestError("an update of 'links' on a server with shared state (serve --state) comes later: "
                               "send put_map with the new links", at="links")
        current = self.registry.get(name)
        if if_gen is not None and current.generation != if_gen:
            raise ConflictError(f"map {name!r} is at generation {current.generation}, not {if_gen} (if_gen): "
                                "read it again and retry", gen=current.generation, at="if_gen")
        check_edit(solid, cost)  # refused here, before Redis holds it
        body = msgpack.packb({"rects": [[int(v) for v in rect] for rect in rects],
                              "cells": [[int(v) for v in cell] for cell in cells],
                              "solid": solid, "cost": None if cost is None else float(cost)}, use_bin_type=True)
        token = self.token()
        return token, {"op": "edit", "map": name, "token": token, "body": body}

    def put_map(self, name, gridmap, *, load_ms: float = 0.0, wire=None, bounded: bool = True) -> GridMap:
        """Store the upload's fields ``wire`` under ``name`` with its entry, wait until it
        is applied here (with ``gridmap``, not built again); returns the stored map."""
        body = msgpack.packb(wire, use_bin_type=True)
        token = self.token()
        self.reader.prebuilt[token] = (gridmap, load_ms)
        try:
            return self._commit(token, lambda: self._put_script(
                keys=[STREAM, UPLOADS, UPLOAD_IDS], args=[name, token, repr(time.time()), body]))
        finally:
            self.reader.prebuilt.pop(token, None)

    def drop_map(self, name) -> int:
        """Remove the upload ``name`` from Redis with its entry; returns the generation
        dropped here."""
        self.registry.check_drop(name)
        token = self.token()
        return self._commit(token, lambda: self._drop_script(
            keys=[STREAM, UPLOADS, UPLOAD_IDS], args=[name, token, repr(time.time())]))

    def committed_seq(self) -> str:
        """The stream id of the change this thread made last (a reply's ``seq``)."""
        return self._local.seq

    def _commit(self, token: str, write):
        """Run ``write`` (one command appending a change carrying ``token``), then wait for
        the reader to apply it; returns what applying it gave, or raises what it raised."""
        if not self.reader.connected:  # the reader lost Redis: refused at once, not after a timeout
            raise self._refusal(ConnectionError("the reader is not connected"))
        waiting = self.reader.waiting
        waiter = waiting[token] = _Waiter()
        try:
            try:
                seq = write()
            except redis.RedisError as exc:
                raise self._refusal(exc) from None
            seq = seq.decode() if isinstance(seq, bytes) else str(seq)
            self._local.seq = seq
            if not waiter.applied.wait(self.after_timeout_s):
                raise AfterTimeoutError(
                    f"the change was accepted as {seq} but not applied here within {self.after_timeout_s:g} s "
                    f"(applied up to {self.reader.applied_text}); it will be: ask again with after {seq}",
                    retry_after_ms=100)
            result = waiter.result
        finally:
            waiting.pop(token, None)
        if isinstance(result, BaseException):
            raise result
        return result

    def _refusal(self, exc: Exception) -> StateUnavailableError:
        """The error an edit Redis did not take gets; the outage logged once a burst."""
        self.counts["refused"] += 1
        now = time.monotonic()
        if now - self._refused_at > 5.0:  # one line per outage burst, not one per edit
            self._refused_at = now
            log.warning("shared state %s did not take an edit (%s: %s); edits are refused with state_unavailable "
                        "until it does, paths are answered on the maps as they are", shown_url(self.url),
                        type(exc).__name__, exc)
        return StateUnavailableError(f"the shared state ({shown_url(self.url)}) is unreachable: nothing was "
                                     f"applied; retry after {RETRY_AFTER_MS} ms", retry_after_ms=RETRY_AFTER_MS)

    def run(self, stop: threading.Event) -> None:
        """The writer thread: submitted edits, many to a round trip, until ``stop`` is set
        (and :meth:`close` wakes it)."""
        while not stop.is_set():
            batch = [self._outbox.get()]
            while batch[-1] is not None and len(batch) < READ_COUNT:
                try:
                    batch.append(self._outbox.get_nowait())
                except queue.Empty:
                    break
            # One answered meanwhile (past its bound) is not written: its client was told so.
            batch = [item for item in batch if item is not None and item[0] in self.reader.waiting]
            if not batch:
                continue
            pipe = self.client.pipeline(transaction=False)
            for _, fields in batch:
                pipe.xadd(STREAM, fields)
            try:
                written = pipe.execute(raise_on_error=False)
            except redis.RedisError as exc:
                written = [exc] * len(batch)
            for (token, _), outcome in zip(batch, written):
                if isinstance(outcome, Exception):
                    waiting = self.reader.waiting.pop(token, None)
                    if waiting is not None:
                        waiting.set(self._refusal(outcome), None)
            if self.done:
                self.wake()

    def close(self) -> None:
        """Wake the writer thread so that it sees its stop."""
        self._outbox.put(None)
