"""The maps clients change, shared through Redis (``pathserver serve --state redis://...``):
the writer a server's handlers call and the reader thread that applies every change.

What lives in Redis (keys under ``pathserver:``)::

    edits        a Stream: one entry per update, put_map and drop_map, in the one order
                 every server applies them ({op, map, token, t, body})
    uploads      a hash: map name -> the put_map's fields (msgpack), stored once
    upload_ids   a hash: map name -> the stream id of that put
    snapshot     a hash: "id" -> the stream id it reflects; "map:NAME" -> the map's overlay
    compactor    a short lock: one server at a time writes the snapshot and trims

:class:`RedisState` is a server's handle on it. A change is appended by the server that
took it, which answers (``"seq"``: the entry's id) only once its own reader has applied
it; while Redis does not answer, a change is refused with ``state_unavailable`` and
nothing is queued. What is guaranteed: docs/scaling.md, "The shared state on Redis"; how
the writer, the reader and the compaction go about it: docs/design.md, "The shared state".
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import queue
import secrets
import socket
import threading
import time

import msgpack
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from pathserver.errors import AfterTimeoutError, ConflictError, StateUnavailableError, UnknownMapError
from pathserver.grid.gridmap import GridMap
from pathserver.grid.overlay import Overlay, edit_boxes, map_crc
from pathserver.grid.values import check_edit

log = logging.getLogger("pathserver.state")

PREFIX = "pathserver:"
STREAM, UPLOADS, UPLOAD_IDS, SNAPSHOT, COMPACTOR = (PREFIX + key for key in
                                                     ("edits", "uploads", "upload_ids", "snapshot", "compactor"))
#: How long a request's ``after`` (and a server's own change) waits to be applied here (s).
AFTER_TIMEOUT_S = 1.0
#: A command to Redis that takes longer than this fails the edit (s). Room for a slow
#: fsync under ``appendfsync always``; an edit waits this and AFTER_TIMEOUT_S at most.
COMMAND_TIMEOUT_S = 1.0
#: The reader takes Redis for gone (and edits are refused at once) when a blocking read
#: gets no answer this long past its block time (s).
READ_GRACE_S = 2.0
CONNECT_TIMEOUT_S = 0.5
#: The ``retry_after_ms`` of a ``state_unavailable`` reply.
RETRY_AFTER_MS = 500
#: The reader's blocking read: entries per read, and how long one waits when none come.
READ_COUNT = 512
READ_BLOCK_MS = 500
#: The stream is compacted (snapshot, then trim) once it holds more entries than this.
COMPACT_ENTRIES = 10_000
#: How often (s) the reader looks at the stream's length and how far it was trimmed.
HOUSEKEEPING_S = 1.0
#: A ``stats`` request's lag figures cover this many applied entries.
LAG_WINDOW = 4096

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
_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
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
    """An edit the socket loop handed over without waiting (:meth:`RedisState.submit_edit`):
    once applied here, or refused, ``(context, outcome, seq)`` joins ``done``."""

    __slots__ = ("context", "deadline", "done")

    def __init__(self, context, deadline: float, done: collections.deque):
        self.context, self.deadline, self.done = context, deadline, done

    def set(self, result, seq: str | None) -> None:
        self.done.append((self.context, result, seq))


def seq_of(text) -> tuple[int, int]:
    """A stream id (``"1718000000000-3"``, str or bytes) as ``(1718000000000, 3)``."""
    ms, _, number = (text.decode() if isinstance(text, bytes) else text).partition("-")
    return int(ms), int(number or 0)


def shown_url(url: str) -> str:
    """``url`` without a password, for logs and ``stats``."""
    head, at, tail = url.rpartition("@")
    return f"{url.split('://', 1)[0]}://***@{tail}" if at else url


SENTINEL = "redis+sentinel://"


def check_url(url: str) -> str:
    """``url`` if :func:`connect` can use it, else ValueError with a message for the
    command line."""
    try:
        if url.startswith(SENTINEL):
            _sentinel_parts(url)
        else:
            redis.connection.parse_url(url)
    except ValueError as exc:
        raise ValueError(f"--state {url!r}: {exc} (expected redis://HOST:PORT/DB or "
                         f"{SENTINEL}HOST:PORT[,HOST:PORT...]/SERVICE/DB)") from None
    return url


def _sentinel_parts(url: str) -> tuple[list, str, int, str | None]:
    """``redis+sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE[/DB]`` ->
    (sentinels, service, db, password)."""
    rest = url[len(SENTINEL):]
    password = None
    if "@" in rest:
        credentials, rest = rest.rsplit("@", 1)
        password = credentials.split(":", 1)[-1] or None
    hosts, _, path = rest.partition("/")
    service, _, db = path.partition("/")
    sentinels = []
    for host in hosts.split(","):
        name, _, port = host.rpartition(":")
        if not name or not port.isdigit():
            raise ValueError(f"a sentinel is HOST:PORT, got {host!r}")
        sentinels.append((name, int(port)))
    if not service or (db and not db.isdigit()):
        raise ValueError("name the master's service after the sentinels, and the database number after that")
    return sentinels, service, int(db or 0), password


def connect(url: str, socket_timeout: float) -> redis.Redis:
    """A client of the Redis at ``url``: ``redis://``, ``rediss://``, ``unix://``, or
    ``redis+sentinel://`` (the master the sentinels name, found again after a failover).
    No retries: a command that fails raises at once, after ``socket_timeout`` at most."""
    options = {"socket_timeout": socket_timeout, "socket_connect_timeout": CONNECT_TIMEOUT_S,
               "retry": Retry(NoBackoff(), 0)}
    if not url.startswith(SENTINEL):
        return redis.Redis.from_url(url, **options)
    from redis.sentinel import Sentinel

    sentinels, service, db, password = _sentinel_parts(url)
    watch = Sentinel(sentinels, sentinel_kwargs={"socket_timeout": CONNECT_TIMEOUT_S,
                                                 "socket_connect_timeout": CONNECT_TIMEOUT_S})
    return watch.master_for(service, db=db, password=password, **options)


class RedisState:
    """A map registry (see ``pathserver.maps.registry``) whose uploads and edits live in
    Redis at ``url`` and reach every server that shares it. Everything but
    ``apply_edit``, ``put_map`` and ``drop_map`` is the wrapped registry's.

    ``identity`` names this server in tokens and logs. ``start()`` starts the reader; ``caught_up`` is set once it has applied what Redis
    held. ``build_upload(fields)`` makes the GridMap of a put_map's fields (the server's
    ``map_ops.build_upload``). For the socket loop: ``reached(seq)``, ``wake_socket``
    (readable when an entry was applied while ``notify_applied`` is set), ``drain_wake()``;
    for the handlers: ``wait_applied(seq, text)``, ``committed_seq()``.
    """

    def __init__(self, registry, url: str, *, identity: str | None = None, build_upload=None,
                 after_timeout_s: float = AFTER_TIMEOUT_S, compact_entries: int = COMPACT_ENTRIES):
        self.registry = registry
        self.url = check_url(url)
        self.identity = identity or f"pid {os.getpid()}"
        self.build_upload = build_upload
        self.after_timeout_s = float(after_timeout_s)
        self.compact_entries = int(compact_entries)
        self._writer = connect(url, COMMAND_TIMEOUT_S)
        self._reader = connect(url, READ_BLOCK_MS / 1000.0 + READ_GRACE_S)
        self._put_script = self._writer.register_script(_PUT)
        self._drop_script = self._writer.register_script(_DROP)
        self._unlock_script = self._reader.register_script(_UNLOCK)
        #: Set once the reader has applied everything Redis held when it started.
        self.caught_up = threading.Event()
        #: Set by the socket loop while requests wait for an ``after``.
        self.notify_applied = False
        self.wake_socket, self._wake_send = socket.socketpair()
        for end in (self.wake_socket, self._wake_send):
            end.setblocking(False)
        self.connected = False
        self._applied, self._applied_text = (0, 0), "0-0"
        self._progress = threading.Condition()
        self._lock = threading.RLock()  # one change at a time: the reader's, a reload's re-application
        self._results: dict[str, object] = {}  # token -> who waits for that change (_Waiter, _Submitted)
        # Edits the socket loop submitted: (token, stream fields) for the writer thread, and
        # (token, deadline) in submission order; what became of them, for finished().
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._submitted: collections.deque = collections.deque()
        self._done: collections.deque = collections.deque()
        self._prebuilt: dict[str, tuple] = {}  # token -> (GridMap, load_ms) of our own put
        self._overlays: dict[str, Overlay] = {}
        self._bases: dict[str, str] = {}  # uploaded map -> the stream id of its put
        self._stand: dict[str, tuple] = {}  # map -> the id up to which it was loaded whole
        self._tokens = itertools.count()
        self._token_head = f"{self.identity}/{secrets.token_hex(4)}/"
        self._local = threading.local()
        self._counts = {"changes": 0, "failed": 0, "skipped": 0, "refused": 0, "resyncs": 0, "compactions": 0}
        self._lags: collections.deque = collections.deque(maxlen=LAG_WINDOW)
        self._crcs: dict[str, tuple] = {}
        self._refused_at = -1e9
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._writer_thread: threading.Thread | None = None
        self._chained = registry.on_event
        registry.on_event = self._on_registry_event

    def __getattr__(self, name):
        if name == "registry":
            raise AttributeError(name)
        return getattr(self.registry, name)

    # -- the registry API: changes go through Redis ------------------------------------

    def apply_edit(self, name, rects=(), cells=(), *, solid=None, cost=None, if_gen=None) -> GridMap:
        """Append the edit to the stream, wait until it is applied here; returns the new
        map. ``if_gen`` is checked against this server's map (generations are per server)."""
        token, fields = self._edit_entry(name, rects, cells, solid, cost, if_gen)
        return self._commit(token, lambda: self._writer.xadd(STREAM, fields))

    def submit_edit(self, name, rects=(), cells=(), *, solid=None, cost=None, if_gen=None, context=None) -> None:
        """:meth:`apply_edit` without waiting: checked here (raising as it does), written by
        the writer thread with others in one round trip; ``(context, outcome, seq)`` comes
        out of :meth:`finished` once it is applied here (``outcome``: the new map) or
        failed (``outcome``: the error; ``state_unavailable``, ``after_timeout``...)."""
        token, fields = self._edit_entry(name, rects, cells, solid, cost, if_gen)
        if not self.connected:
            raise self._refusal(ConnectionError("the reader is not connected"))
        # Its write may take COMMAND_TIMEOUT_S before it fails as state_unavailable.
        deadline = time.monotonic() + COMMAND_TIMEOUT_S + self.after_timeout_s
        self._results[token] = _Submitted(context, deadline, self._done)
        self._submitted.append((token, deadline))
        self._outbox.put((token, fields))

    def finished(self) -> list:
        """The submitted edits done since the last call, ``(context, outcome, seq)`` each,
        those still waiting past their bound among them (``after_timeout``)."""
        now = time.monotonic()
        while self._submitted and (self._submitted[0][0] not in self._results or self._submitted[0][1] <= now):
            token, _ = self._submitted.popleft()
            late = self._results.pop(token, None)
            if late is not None:
                late.set(AfterTimeoutError(f"the edit was not applied here within {self.after_timeout_s:g} s "
                                           f"(applied up to {self._applied_text}); it may still be: read the map "
                                           "again before sending it again", retry_after_ms=100), None)
        done = []
        while self._done:
            done.append(self._done.popleft())
        return done

    def outstanding(self) -> int:
        """Submitted edits not yet finished."""
        return len(self._submitted)

    def _edit_entry(self, name, rects, cells, solid, cost, if_gen) -> tuple[str, dict]:
        """Check an edit against this server's map; its token and stream fields."""
        current = self.registry.get(name)
        if if_gen is not None and current.generation != if_gen:
            raise ConflictError(f"map {name!r} is at generation {current.generation}, not {if_gen} (if_gen): "
                                "read it again and retry", gen=current.generation, at="if_gen")
        check_edit(solid, cost)  # refused here, before Redis holds it
        body = msgpack.packb({"rects": [[int(v) for v in rect] for rect in rects],
                              "cells": [[int(v) for v in cell] for cell in cells],
                              "solid": solid, "cost": None if cost is None else float(cost)}, use_bin_type=True)
        token = self._token()
        return token, {"op": "edit", "map": name, "token": token, "t": repr(time.time()), "body": body}

    def put_map(self, name, gridmap, *, load_ms: float = 0.0, wire=None, bounded: bool = True) -> GridMap:
        """Store the upload's fields ``wire`` under ``name`` with its entry, wait until it
        is applied here (with ``gridmap``, not built again); returns the stored map."""
        body = msgpack.packb(wire, use_bin_type=True)
        token = self._token()
        self._prebuilt[token] = (gridmap, load_ms)
        try:
            return self._commit(token, lambda: self._put_script(
                keys=[STREAM, UPLOADS, UPLOAD_IDS], args=[name, token, repr(time.time()), body]))
        finally:
            self._prebuilt.pop(token, None)

    def drop_map(self, name) -> int:
        """Remove the upload ``name`` from Redis with its entry; returns the generation
        dropped here."""
        self.registry.check_drop(name)
        token = self._token()
        return self._commit(token, lambda: self._drop_script(
            keys=[STREAM, UPLOADS, UPLOAD_IDS], args=[name, token, repr(time.time())]))

    def committed_seq(self) -> str:
        """The stream id of the change this thread made last (a reply's ``seq``)."""
        return self._local.seq

    def _token(self) -> str:
        return self._token_head + str(next(self._tokens))

    def _commit(self, token: str, write):
        """Run ``write`` (one command appending a change carrying ``token``), then wait for
        the reader to apply it; returns what applying it gave, or raises what it raised."""
        if not self.connected:  # the reader lost Redis: refused at once, not after a timeout
            raise self._refusal(ConnectionError("the reader is not connected"))
        waiter = self._results[token] = _Waiter()
        try:
            try:
                seq = write()
            except redis.RedisError as exc:
                self._refuse(exc)
            seq = seq.decode() if isinstance(seq, bytes) else str(seq)
            self._local.seq = seq
            if not waiter.applied.wait(self.after_timeout_s):
                raise AfterTimeoutError(
                    f"the change was accepted as {seq} but not applied here within {self.after_timeout_s:g} s "
                    f"(applied up to {self._applied_text}); it will be: ask again with after {seq}",
                    retry_after_ms=100)
            result = waiter.result
        finally:
            self._results.pop(token, None)
        if isinstance(result, BaseException):
            raise result
        return result

    def _refuse(self, exc: Exception):
        raise self._refusal(exc) from None

    def _refusal(self, exc: Exception) -> StateUnavailableError:
        """The error an edit Redis did not take gets; the outage logged once a burst."""
        self._counts["refused"] += 1
        now = time.monotonic()
        if now - self._refused_at > 5.0:  # one line per outage burst, not one per edit
            self._refused_at = now
            log.warning("shared state %s did not take an edit (%s: %s); edits are refused with state_unavailable "
                        "until it does, paths are answered on the maps as they are", shown_url(self.url),
                        type(exc).__name__, exc)
        return StateUnavailableError(f"the shared state ({shown_url(self.url)}) is unreachable: nothing was "
                                     f"applied; retry after {RETRY_AFTER_MS} ms", retry_after_ms=RETRY_AFTER_MS)

    # -- what the socket loop and the handlers ask -------------------------------------

    def reached(self, seq: tuple) -> bool:
        """Whether the entry ``seq`` (``(ms, n)``) is applied here."""
        return self._applied >= seq

    def applied_text(self) -> str:
        return self._applied_text

    def wait_applied(self, seq: tuple, text: str) -> None:
        """Block until entry ``seq`` is applied here; AfterTimeoutError past the bound."""
        with self._progress:
            if not self._progress.wait_for(lambda: self._applied >= seq, self.after_timeout_s):
                raise AfterTimeoutError(f"entry {text} not applied here within {self.after_timeout_s:g} s (applied "
                                        f"up to {self._applied_text}); retry after 100 ms", retry_after_ms=100,
                                        at="after")

    def drain_wake(self) -> None:
        try:
            while self.wake_socket.recv(4096):
                pass
        except OSError:
            pass

    def state_stats(self) -> dict:
        """For ``stats``: where the state is, whether Redis answers, the last entry applied
        here (equal on two servers: the same changes applied), counts, the lag from an
        entry's writer to this server applying it (ms), and a CRC of each shared map."""
        lags = sorted(self._lags)

        def at(q: float) -> float:
            return round(lags[min(len(lags) - 1, int(q * len(lags)))] * 1000.0, 3) if lags else 0.0

        return {"url": shown_url(self.url), "connected": self.connected, "caught_up": self.caught_up.is_set(),
                "applied": self._applied_text, **self._counts,
                "lag_ms": {"p50": at(0.5), "p99": at(0.99), "max": at(1.0)}, "crc": self._map_crcs()}

    def _map_crcs(self) -> dict:
        crcs = {}
        for name in sorted(set(self._overlays) | set(self._bases)):
            try:
                gridmap = self.registry.get(name)
            except UnknownMapError:
                continue
            cached = self._crcs.get(name)
            if cached is None or cached[0] is not gridmap:
                cached = self._crcs[name] = (gridmap, f"{map_crc(gridmap):08x}")
            crcs[name] = cached[1]
        return crcs

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the reader thread (see ``caught_up``)."""
        self._thread = threading.Thread(target=self._run, name="pathserver-state", daemon=True)
        self._thread.start()
        self._writer_thread = threading.Thread(target=self._write, name="pathserver-state-writer", daemon=True)
        self._writer_thread.start()

    def close(self) -> None:
        self._stop.set()
        self._outbox.put(None)
        for thread in (self._thread, self._writer_thread):
            if thread is not None:
                thread.join(READ_BLOCK_MS / 1000.0 + 1.0)
        for client in (self._writer, self._reader):
            client.close()
        self.wake_socket.close()
        self._wake_send.close()

    # -- the writer thread: submitted edits, many to a round trip -------------------------

    def _write(self) -> None:
        while not self._stop.is_set():
            batch = [self._outbox.get()]
            while batch[-1] is not None and len(batch) < READ_COUNT:
                try:
                    batch.append(self._outbox.get_nowait())
                except queue.Empty:
                    break
            # One answered meanwhile (past its bound) is not written: its client was told so.
            batch = [item for item in batch if item is not None and item[0] in self._results]
            if not batch:
                continue
            pipe = self._writer.pipeline(transaction=False)
            for _, fields in batch:
                pipe.xadd(STREAM, fields)
            try:
                written = pipe.execute(raise_on_error=False)
            except redis.RedisError as exc:
                written = [exc] * len(batch)
            for (token, _), outcome in zip(batch, written):
                if isinstance(outcome, Exception):
                    waiting = self._results.pop(token, None)
                    if waiting is not None:
                        waiting.set(self._refusal(outcome), None)
            if self._done:
                self._wake()

    def _wake(self) -> None:
        try:
            self._wake_send.send(b"\0")
        except OSError:
            pass  # the buffer is full: the loop is waking anyway

    # -- the reader thread -------------------------------------------------------------

    def _run(self) -> None:
        backoff = 0.05
        checked = 0.0
        waited_since = time.monotonic()
        while not self._stop.is_set():
            try:
                if not self.caught_up.is_set():
                    self._load()
                    while self._read(block=False) == READ_COUNT:
                        pass
                    self._note_connected(True)
                    self.caught_up.set()
                elif not self.connected:
                    self._check_trimmed()  # back after an outage: is our position still in the stream?
                self._note_connected(True)
                backoff = 0.05
                if time.monotonic() - checked > HOUSEKEEPING_S:
                    # Before reading on: a server that stalled finds out here whether the
                    # stream was trimmed past it meanwhile.
                    checked = time.monotonic()
                    self._housekeeping()
                self._read(block=True)
            except redis.RedisError as exc:
                self._note_connected(False, exc)
                if not self.caught_up.is_set() and time.monotonic() - waited_since > 5.0:
                    waited_since = time.monotonic()
                    log.warning("still waiting for the shared state at %s before taking requests: %s",
                                shown_url(self.url), exc)
                self._stop.wait(backoff)
                backoff = min(1.0, backoff * 2)
            except Exception:
                log.exception("the shared state's reader failed; retrying")
                self._stop.wait(0.5)

    def _note_connected(self, connected: bool, exc: Exception | None = None) -> None:
        if connected and not self.connected:
            log.info("shared state %s reachable; applied up to %s", shown_url(self.url), self._applied_text)
        elif not connected and (self.connected or self._counts["resyncs"] == 0 and not self.caught_up.is_set()):
            log.warning("shared state %s unreachable (%s: %s): edits are refused, paths are answered on the maps "
                        "as they are, until it is back", shown_url(self.url), type(exc).__name__, exc)
        self.connected = connected

    def _read(self, *, block: bool) -> int:
        """Apply the next entries (waiting up to READ_BLOCK_MS for one when ``block``);
        returns how many came."""
        reply = self._reader.xread({STREAM: self._applied_text}, count=READ_COUNT,
                                   block=READ_BLOCK_MS if block else None)
        entries = [(entry_id.decode(), fields) for _, batch in reply or () for entry_id, fields in batch]
        start = 0
        while start < len(entries):
            # A run of edits of one map is applied as one edit of it (one copy of its arrays).
            end = start + 1
            op, name = entries[start][1].get(b"op"), entries[start][1].get(b"map")
            while op == b"edit" and end < len(entries) and entries[end][1].get(b"op") == op \
                    and entries[end][1].get(b"map") == name:
                end += 1
            if end - start > 1:
                self._apply_edits(entries[start:end])
            else:
                self._apply_entry(*entries[start])
            start = end
        count = len(entries)
        if count:
            with self._progress:
                self._progress.notify_all()
            if self.notify_applied or self._done:
                self._wake()
        return count

    def _apply_entry(self, text: str, fields: dict) -> None:
        seq = seq_of(text)
        op, name = fields.get(b"op", b"").decode(), fields.get(b"map", b"").decode()
        token = fields.get(b"token", b"").decode()
        with self._lock:
            try:
                skipped = seq <= self._stand.get(name, (0, 0))
                if skipped:
                    result = self.registry.get(name) if op != "drop" else None
                elif op == "edit":
                    result = self._apply_edit(name, msgpack.unpackb(fields[b"body"], raw=False))
                elif op == "put":
                    result = self._apply_put(name, text, token)
                elif op == "drop":
                    result = self._apply_drop(name, seq)
                else:
                    raise ValueError(f"unknown op {op!r}")
                self._counts["skipped" if skipped else "changes"] += 1
            except redis.RedisError:
                raise  # not applied: the reader reads this entry again once Redis answers
            except Exception as exc:
                result = exc
                self._counts["failed"] += 1
                if token not in self._results:
                    log.warning("entry %s (%s of %r) not applied here: %s", text, op, name, exc)
            self._applied, self._applied_text = seq, text
        waiter = self._results.pop(token, None)
        if waiter is not None:
            waiter.set(result, text)
        self._note_lag(time.time(), fields)

    def _apply_edits(self, run: list) -> None:
        """Apply a run of edit entries of one map as one edit; entry by entry if that fails."""
        name = run[0][1][b"map"].decode()
        stand = self._stand.get(name, (0, 0))
        fresh = [(text, fields) for text, fields in run if seq_of(text) > stand]
        if len(fresh) < len(run):
            for text, fields in run:
                self._apply_entry(text, fields)
            return
        changes = []
        for _, fields in run:
            change = msgpack.unpackb(fields[b"body"], raw=False)
            changes.append((edit_boxes(change.get("rects") or (), change.get("cells") or ()), change.get("solid"),
                            change.get("cost")))
        with self._lock:
            try:
                edited = self.registry.apply_edits(name, changes)
            except Exception:
                edited = None
            else:
                overlay = self._overlay(name, edited)
                overlay.record(edited, [box for boxes, _, _ in changes for box in boxes])
                self._counts["changes"] += len(run)
                self._applied, self._applied_text = seq_of(run[-1][0]), run[-1][0]
        if edited is None:
            for text, fields in run:
                self._apply_entry(text, fields)
            return
        now = time.time()
        for text, fields in run:
            waiter = self._results.pop(fields.get(b"token", b"").decode(), None)
            if waiter is not None:
                waiter.set(edited, text)
            self._note_lag(now, fields)

    def _note_lag(self, now: float, fields: dict) -> None:
        try:
            self._lags.append(now - float(fields[b"t"]))
        except (KeyError, ValueError):
            pass

    def _overlay(self, name: str, gridmap: GridMap) -> Overlay:
        overlay = self._overlays.get(name)
        if overlay is None:
            overlay = self._overlays[name] = Overlay.empty(gridmap.height, gridmap.width, self._bases.get(name, ""))
        return overlay

    def _apply_edit(self, name: str, change: dict) -> GridMap:
        rects, cells = change.get("rects") or (), change.get("cells") or ()
        edited = self.registry.apply_edit(name, rects=rects, cells=cells, solid=change.get("solid"),
                                          cost=change.get("cost"))
        self._overlay(name, edited).record(edited, edit_boxes(rects, cells))
        return edited

    def _apply_put(self, name: str, text: str, token: str) -> GridMap:
        pipe = self._reader.pipeline(transaction=True)
        pipe.hget(UPLOADS, name)
        pipe.hget(UPLOAD_IDS, name)
        body, stored = pipe.execute()
        if body is None or stored is None:
            self._stand[name] = seq_of(text)
            raise UnknownMapError(f"map {name!r} was dropped before its upload {text} was applied here", at="map")
        stored = stored.decode()
        prebuilt = self._prebuilt.get(token) if stored == text else None
        return self._serve_upload(name, stored, body, prebuilt)

    def _serve_upload(self, name: str, stored: str, body: bytes, prebuilt=None) -> GridMap:
        """Serve the upload stored as ``stored`` (its put's id): built from ``body``
        unless ``prebuilt`` holds it; entries of ``name`` up to ``stored`` are then skipped."""
        if prebuilt is None:
            if self.build_upload is None:
                raise RuntimeError("this server cannot build uploaded maps (no build_upload)")
            started = time.perf_counter()
            gridmap = self.build_upload(msgpack.unpackb(body, raw=False))
            load_ms = (time.perf_counter() - started) * 1000.0
        else:
            gridmap, load_ms = prebuilt
        self._overlays.pop(name, None)
        stored_map = self.registry.put_map(name, gridmap, load_ms=load_ms, bounded=False)
        self._bases[name] = stored
        self._stand[name] = seq_of(stored)
        return stored_map

    def _apply_drop(self, name: str, seq: tuple) -> int | None:
        # The overlay first: a map file of that name loads as the upload goes, without it.
        self._overlays.pop(name, None)
        self._bases.pop(name, None)
        self._stand[name] = seq
        return self.registry.drop_map(name)

    def _load(self) -> None:
        """Load the snapshot and the stored uploads (at one moment: one transaction) and
        stand where they do; the stream is read from the snapshot's id on."""
        pipe = self._reader.pipeline(transaction=True)
        pipe.hgetall(SNAPSHOT)
        pipe.hgetall(UPLOADS)
        pipe.hgetall(UPLOAD_IDS)
        snapshot, uploads, upload_ids = pipe.execute()
        since = (snapshot.get(b"id") or b"0-0").decode()
        ids = {name.decode(): value.decode() for name, value in upload_ids.items()}
        with self._lock:
            served = {row["name"] for row in self.registry.info() if row["source"] == "upload"}
            for name in sorted(served - set(ids)):
                self._apply_drop(name, seq_of(since))
            for raw_name, body in uploads.items():
                name = raw_name.decode()
                if name in ids and self._bases.get(name) != ids[name]:
                    try:
                        self._serve_upload(name, ids[name], body)
                    except Exception as exc:
                        log.warning("stored upload %r not served here: %s", name, exc)
            for key, value in snapshot.items():
                if not key.startswith(b"map:"):
                    continue
                name, overlay = key[4:].decode(), Overlay.from_bytes(value)
                if overlay.base != ids.get(name, ""):
                    continue  # edits of an upload replaced since: its entries follow
                self._overlays[name] = overlay
                if overlay.base:
                    self._stand[name] = max(self._stand.get(name, (0, 0)), seq_of(since))
                self._put_back(name)
            if seq_of(since) > self._applied:
                self._applied, self._applied_text = seq_of(since), since

    def _put_back(self, name: str) -> None:
        """Serve map ``name`` with its overlay's cells set (caller holds ``_lock``)."""
        overlay = self._overlays.get(name)
        if overlay is None:
            return
        try:
            self.registry.replace(name, overlay.apply_to)
        except UnknownMapError:
            pass  # its file is not (yet) here: put back when it loads

    def _on_registry_event(self, event: dict) -> None:
        """A map file (re)loaded: its edits go back on top of it."""
        if event["event"] == "loaded" and event["name"] in self._overlays:
            with self._lock:
                if self._bases.get(event["name"]) is None:
                    self._put_back(event["name"])
        if self._chained is not None:
            self._chained(event)

    def _check_trimmed(self) -> bool:
        """Reload from the snapshot if the stream was trimmed past what is applied here."""
        try:
            info = self._reader.xinfo_stream(STREAM)
        except redis.ResponseError:
            return False  # no stream yet
        # A trim removes the oldest entries; the entry applied last here is gone with them
        # when the first one left is newer (the newest snapshot is never trimmed past).
        first = info.get("recorded-first-entry-id") or b"0-0"
        if info.get("entries-added", 0) <= info.get("length", 0) or seq_of(first) <= self._applied:
            return False
        log.warning("the shared state's stream was trimmed past what this server applied (%s, the stream now "
                    "starts at %s): reloading from its snapshot", self._applied_text, first.decode())
        self._counts["resyncs"] += 1
        self._load()
        return True

    def _housekeeping(self) -> None:
        if self._check_trimmed():
            return
        try:
            length = self._reader.xlen(STREAM)
        except redis.ResponseError:
            return
        if length > self.compact_entries:
            self._compact()

    def _compact(self) -> None:
        """Write every overlay with the id they reflect as the snapshot, then trim the
        stream to the previous snapshot's id: a server that loaded that one, or applied
        past it, still finds its next entry. One server at a time (the compactor lock)."""
        owner = self._token()
        if not self._reader.set(COMPACTOR, owner, nx=True, px=30_000):
            return
        try:
            with self._lock:
                since = self._applied_text
                blobs = {f"map:{name}": overlay.to_bytes() for name, overlay in self._overlays.items()}
            with self._reader.pipeline(transaction=True) as pipe:
                pipe.watch(SNAPSHOT)
                previous = pipe.hget(SNAPSHOT, "id")
                if previous is not None and seq_of(previous) >= seq_of(since):
                    return
                pipe.multi()
                pipe.delete(SNAPSHOT)
                pipe.hset(SNAPSHOT, mapping={"id": since, **blobs})
                pipe.execute()
            if previous is not None:
                self._reader.xtrim(STREAM, minid=previous.decode(), approximate=False)
            self._counts["compactions"] += 1
            log.info("shared state compacted: snapshot at %s (%d maps), stream trimmed before %s", since,
                     len(blobs), previous.decode() if previous else "nothing")
        except redis.WatchError:
            pass  # another server wrote a snapshot meanwhile
        finally:
            self._unlock_script(keys=[COMPACTOR], args=[owner])
