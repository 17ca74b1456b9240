"""The edit log shared by the broker and its workers (the ZeroMQ Guide's Clone pattern):
the messages, the sequencer's numbered log (:class:`EditLog`, kept by ``pathserver
broker``) and the worker's side (:class:`SharedEdits`, in ``pathserver serve --connect``).

A worker applies an ``update``, ``put_map`` or ``drop_map`` at once (so its own reply and
its next answers see it) and sends it to the broker's edits ROUTER; the sequencer numbers it, keeps it in a
bounded log and publishes it on the feed. Every worker, the sender included, applies the
feed in that one order; a worker that applied its own edit early applies it again when it
comes back if anything was applied in between (see :class:`SharedEdits`), so all workers
that saw the whole feed hold the same cells. A gap in the numbers (a slow or reconnecting
subscriber) is filled from the log, and a worker that joins later replays the log before
it takes requests. The broker's epoch (random, per broker run) tells workers that the
broker restarted and its numbering began again. ``docs/scaling.md`` states the
consistency model.

Uploads. A ``put_map`` travels as an entry like any edit, carrying the whole map, so the
log holds only the newest upload of each name: a later put or drop of the name replaces
the older put's body with a stub (``stub``, a few bytes that keep its sender's
bookkeeping), and trimming the log keeps the newest uploads whatever their age. A worker
that joins later gets those first (seq below the log's oldest entry: a snapshot, as in the
Clone pattern), then the log. The log's memory for uploads is thus one body per uploaded
name, bounded by the workers' ``--max-upload-cells``.

The messages (internal to broker and workers, never seen by clients)::

    worker -> edits ROUTER:  [b"edit", body]            body: msgpack map, opaque to the broker
                             [b"upload", name, body, stub]   a put_map of map `name`
                             [b"drop", name, body]      a drop_map of map `name`
                             [b"fetch", SEQ(since)]     "every entry after `since`"
    edits ROUTER -> worker:  [b"log", LOG(epoch, oldest kept, newest), ENTRY, body, ENTRY, body...]
                             (the newest uploads older than `oldest kept` first, then the log)
    feed PUB -> workers:     [b"edit", ENTRY(epoch, seq, broker time), body]

A body is ``{"origin": worker, "oseq": its own number, "kind": "edit" | "put" | "drop" |
"superseded", "map": name, ...}``: an edit's fields (``rects``, ``cells``, ``solid``,
``cost``), a put's request fields under ``"put"``.

Endpoints. The edits and feed endpoints default to the back endpoint's next two ports,
derived by :func:`edit_endpoints` on both sides, so ``broker --back B`` and
``serve --connect B`` agree without more options.

Why not two ``zmq.proxy`` (XSUB/XPUB) for the edits: a forwarder passes messages without
numbering them, so a worker could neither notice a dropped edit nor tell where a joining
worker's catch-up ends and the live feed begins. The fan-out is still libzmq's PUB.
"""

from __future__ import annotations

import collections
import logging
import os
import queue
import secrets
import socket
import struct
import threading
import time

import msgpack
import zmq

from pathserver.transport import BACK_HEARTBEAT_IVL_MS, BACK_HEARTBEAT_TIMEOUT_MS, server_socket

log = logging.getLogger("pathserver.editlog")

#: Edits kept for catch-up (at least this many; trimmed in halves).
EDIT_LOG_LIMIT = 100_000
#: Log entries per catch-up reply; a worker asks again until it has them all.
FETCH_BATCH = 1000
#: A catch-up reply stops adding entries once their bodies hold this many bytes (uploads).
FETCH_BYTES = 64 << 20
#: Feed messages a slow subscriber may lag behind before PUB drops (gaps are refetched).
FEED_HWM = 10_000
#: A worker asks the log for anything newer at least this often (s): a gap shows only when
#: a later edit arrives, so an edit the feed dropped while nothing followed it (a
#: subscription not yet active at start, a reconnect) would otherwise go unnoticed.
RESYNC_S = 1.0

EDIT, FETCH, LOG, UPLOAD, DROP = b"edit", b"fetch", b"log", b"upload", b"drop"
_SEQ = struct.Struct("<Q")
_LOG = struct.Struct("<QQQ")
_ENTRY = struct.Struct("<QQd")
_POLL_MS = 100
_BURST = 256


def edit_endpoints(back: str, edits: str | None = None, feed: str | None = None, *,
                   bind: bool = False) -> tuple[str, str]:
    """The broker's ``(edits, feed)`` endpoints: ``edits`` and ``feed`` where given, else
    derived from the back endpoint: same host, the next two ports (``tcp://h:5556`` ->
    ``tcp://h:5557``, ``tcp://h:5558``). The broker (``bind=True``) and every worker call
    this one function, so ``broker --back B`` and ``serve --connect B`` meet.

    A wildcard back port (``0`` or ``*``) has no next port until it is bound: the broker
    then binds edits and feed on free ports too (its ready line names them), and a worker
    must be given them. Raises ValueError, with a message for the command line, when the
    endpoints cannot be derived (a worker's wildcard, not ``tcp://host:port``, a port past
    65533).
    """
    if edits is not None and feed is not None:
        return edits, feed
    head, sep, port = back.rpartition(":")
    tcp = back.startswith("tcp://") and bool(sep) and len(head) > len("tcp://")
    if tcp and bind and (port == "*" or (port.isdigit() and int(port) == 0)):
        return edits or f"{head}:*", feed or f"{head}:*"
    if not tcp or not port.isdigit() or not 0 < int(port) <= 65533:
        raise ValueError(f"cannot derive the broker's edits and feed endpoints from {back!r}: they are its port + 1 "
                         "and + 2 only for tcp://HOST:PORT (PORT 1 to 65533); pass --edits and --feed (to a worker: "
                         "those the broker's ready line names)")
    return edits or f"{head}:{int(port) + 1}", feed or f"{head}:{int(port) + 2}"


def read_worker_message(message: list) -> tuple | None:
    """A worker's message to the edits ROUTER (after the routing id): ``(EDIT, body)``,
    ``(UPLOAD, name, body, stub)``, ``(DROP, name, body)``, ``(FETCH, since)``, or None
    when it is none of them."""
    kind = message[0] if message else b""
    if kind == EDIT and len(message) == 2:
        return EDIT, message[1]
    if kind == UPLOAD and len(message) == 4:
        return UPLOAD, bytes(message[1]), message[2], message[3]
    if kind == DROP and len(message) == 3:
        return DROP, bytes(message[1]), message[2]
    if kind == FETCH and len(message) == 2 and len(message[1]) == _SEQ.size:
        return FETCH, _SEQ.unpack(message[1])[0]
    return None


# -- the sequencer's side (pathserver broker) ------------------------------------------------


class EditLog:
    """The broker's numbered log: each edit gets the next number of this ``epoch`` in
    arrival order; the newest ``limit`` (at least; trimmed in halves) are kept for
    workers that catch up, and besides them the newest upload of each map name (see the
    module docstring). Used by one thread (the broker's sequencer)."""

    def __init__(self, limit: int = EDIT_LOG_LIMIT, epoch: int | None = None):
        self.limit = max(1, int(limit))
        #: Changes with every broker run, so workers notice a restart (numbering from 1).
        self.epoch = secrets.randbits(63) + 1 if epoch is None else int(epoch)
        self.seq = 0
        # [ENTRY header, body, upload's map name or None, upload's stub or None], oldest first.
        self._entries: list[list] = []
        self._uploads: dict[bytes, int] = {}  # map name -> seq of its newest upload, while not dropped
        self._kept: dict[bytes, tuple[int, bytes, bytes]] = {}  # those trimmed from _entries: (seq, header, body)

    def append(self, body: bytes) -> list[bytes]:
        """Number an edit's ``body``; returns the feed message that publishes it."""
        return self._append(body, None, None)

    def append_upload(self, name: bytes, body: bytes, stub: bytes) -> list[bytes]:
        """Number a ``put_map`` of map ``name``; it replaces the name's older upload in the
        log by that one's stub."""
        self._supersede(name)
        message = self._append(body, name, stub)
        self._uploads[name] = self.seq
        return message

    def append_drop(self, name: bytes, body: bytes) -> list[bytes]:
        """Number a ``drop_map`` of map ``name``; the name's upload is no longer kept."""
        self._supersede(name)
        return self._append(body, None, None)

    def upload_bytes(self) -> int:
        """Bytes of the upload bodies the log holds."""
        held = sum(len(entry[1]) for entry in self._entries if entry[3] is not None)
        return held + sum(len(body) for _, _, body in self._kept.values())

    def _append(self, body: bytes, name: bytes | None, stub: bytes | None) -> list[bytes]:
        self.seq += 1
        header = _ENTRY.pack(self.epoch, self.seq, time.time())
        self._entries.append([header, body, name, stub])
        if len(self._entries) >= 2 * self.limit:
            cut = len(self._entries) - self.limit
            oldest = self.seq - len(self._entries) + 1
            for offset, (old_header, old_body, old_name, _) in enumerate(self._entries[:cut]):
                if old_name is not None and self._uploads.get(old_name) == oldest + offset:
                    self._kept[old_name] = (oldest + offset, old_header, old_body)
            del self._entries[:cut]
        return [EDIT, header, body]

    def _supersede(self, name: bytes) -> None:
        seq = self._uploads.pop(name, None)
        if seq is None:
            return
        if self._kept.pop(name, None) is not None:
            return
        entry = self._entries[seq - (self.seq - len(self._entries) + 1)]
        entry[1], entry[3] = entry[3], None

    def catch_up(self, since: int) -> list[bytes]:
        """The reply to ``fetch(since)``: the log's span, then the kept uploads older than
        the log's oldest entry and newer than ``since``, then the log's entries after
        ``since``: up to FETCH_BATCH entries or FETCH_BYTES of bodies (one at least)."""
        oldest = self.seq - len(self._entries) + 1
        start = max(0, since + 1 - oldest)
        reply = [LOG, _LOG.pack(self.epoch, oldest, self.seq)]
        snapshot = sorted(kept for kept in self._kept.values() if kept[0] > since)
        pairs = [(header, body) for _, header, body in snapshot]
        pairs += ((entry[0], entry[1]) for entry in self._entries[start:start + FETCH_BATCH])
        size = 0
        for count, (header, body) in enumerate(pairs):
            if count == FETCH_BATCH or (count and size + len(body) > FETCH_BYTES):
                break
            reply += (header, body)
            size += len(body)
        return reply


# -- the worker's side (pathserver serve --connect) ------------------------------------------


def default_identity() -> str:
    """``host:pid``: unique among running workers, and says where to look."""
    return f"{socket.gethostname()}:{os.getpid()}"


class SharedEdits:
    """A map registry (anything with ``apply_edit``, ``put_map``, ``drop_map``; see
    ``pathserver.maps.registry``) whose edits and uploads reach every worker behind a
    broker. Everything else is the wrapped registry's.

    ``apply_edit``, ``put_map`` and ``drop_map`` (a handler thread, for a client's
    ``update``, ``put_map``, ``drop_map``) apply the change here at once and queue it for
    the broker. A feed thread applies the broker's numbered changes in order, its own ones
    included, and fetches any it missed from the broker's log. ``build_upload(fields)``
    makes the GridMap of another worker's ``put_map`` from its request fields (the
    server's ``handlers.build_upload``); without it, uploads from the feed fail here.

    Why this converges: an edit sets cells (walkable, cost) of one map to values, a put
    replaces a map whole and a drop removes it, so a sequence of them leaves each map's
    cells as their last writers in the sequence left them. Every worker applies the
    broker's order. A worker also applied its own pending changes (sent, not back yet)
    early; whenever it applies a change of map M from the feed it marks its pending changes
    of M, and a marked change is applied again when it comes back, after whatever the feed
    put before it. So once nothing is pending, every cell's last writer here is its last
    writer in the broker's order: the same on every worker that saw the whole feed.

    Uploads from the feed are applied whatever this worker's ``--max-upload-cells``: the
    worker that took the put checked it, and every worker must hold the same maps. (Two
    workers taking large puts at the same moment can so pass the bound by one map each.)
    """

    def __init__(
        self,
        registry,
        edits: str,
        feed: str,
        *,
        identity: str | None = None,
        back: str | None = None,
        heartbeat_ivl_ms: int = BACK_HEARTBEAT_IVL_MS,
        heartbeat_timeout_ms: int = BACK_HEARTBEAT_TIMEOUT_MS,
        build_upload=None,
    ):
        self.registry = registry
        self.build_upload = build_upload
        self.identity = identity or default_identity()
        self.edits_endpoint = edits
        self.feed_endpoint = feed
        #: The broker's back endpoint this worker connects to, when known: named in the
        #: warning while the edit log does not answer.
        self.back_endpoint = back
        #: Set once the broker's log has been replayed; serve() takes requests after that.
        self.caught_up = threading.Event()
        self._heartbeat = (int(heartbeat_ivl_ms), int(heartbeat_timeout_ms))
        self._context = zmq.Context()
        self._lock = threading.Lock()  # one edit at a time, local or from the feed
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()  # local changes' messages for the feed thread
        # Wakes the feed thread's poll when a handler thread queues an edit.
        self._wake_recv, self._wake_send = socket.socketpair()
        self._wake_recv.setblocking(False)
        self._wake_send.setblocking(False)
        self._pending: collections.deque = collections.deque()  # [own seq, apply again?, map], oldest first
        self._own_seq = 0
        self._epoch: int | None = None
        self._applied = 0  # the last broker number applied
        self._early: dict[int, tuple[float, bytes]] = {}  # entries that came before a gap was filled
        self._fetch_wanted = True
        self._fetch_sent: float | None = None
        self._synced_at = 0.0  # when the last catch-up reply arrived (monotonic)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._counts = {"sent": 0, "applied": 0, "reapplied": 0, "failed": 0, "unconfirmed": 0, "missed": 0}
        self._lags: collections.deque = collections.deque(maxlen=1024)
        self._lags_lock = threading.Lock()

    def __getattr__(self, name):
        if name == "registry":
            raise AttributeError(name)
        return getattr(self.registry, name)

    # -- the registry API --------------------------------------------------------------

    def apply_edit(self, name, rects=(), cells=(), *, solid=None, cost=None, if_gen=None):
        """Apply the edit here now (returns the new map) and send it to the broker.
        ``if_gen`` is checked against this worker's map (generations are per worker); the
        other workers apply the edit as it is."""
        with self._lock:
            edited = self.registry.apply_edit(name, rects=rects, cells=cells, solid=solid, cost=cost, if_gen=if_gen)
            self._queue(name, EDIT, {"kind": "edit", "rects": [list(r) for r in rects],
                                     "cells": [list(c) for c in cells], "solid": solid, "cost": cost})
        self._wake()
        return edited

    def put_map(self, name, gridmap, *, load_ms: float = 0.0, wire=None, bounded: bool = True):
        """Serve the upload here now (returns the stored map) and send its request fields
        ``wire`` to the broker."""
        with self._lock:
            stored = self.registry.put_map(name, gridmap, load_ms=load_ms, bounded=bounded)
            self._queue(name, UPLOAD, {"kind": "put", "put": wire})
        self._wake()
        return stored

    def drop_map(self, name):
        """Drop the upload here now (returns the generation dropped) and tell the broker."""
        with self._lock:
            generation = self.registry.drop_map(name)
            self._queue(name, DROP, {"kind": "drop"})
        self._wake()
        return generation

    def _queue(self, name: str, kind: bytes, fields: dict) -> None:
        """Number a local change and queue its message for the feed thread; caller holds
        ``_lock``, so the broker receives our changes in own-seq order."""
        self._own_seq += 1
        self._pending.append([self._own_seq, False, name])
        head = {"origin": self.identity, "oseq": self._own_seq, "map": name}
        body = msgpack.packb({**head, **fields}, use_bin_type=True)
        if kind == EDIT:
            self._outbox.put([EDIT, body])
        elif kind == UPLOAD:
            stub = msgpack.packb({**head, "kind": "superseded"}, use_bin_type=True)
            self._outbox.put([UPLOAD, name.encode(), body, stub])
        else:
            self._outbox.put([DROP, name.encode(), body])

    def _wake(self) -> None:
        try:
            self._wake_send.send(b"\0")
        except OSError:
            pass  # the wake-up buffer is full: the thread is waking anyway

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Connect and start replaying the broker's log (see ``caught_up``)."""
        self._thread = threading.Thread(target=self._run, name="pathserver-edit-feed", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)
            if self._thread.is_alive():
                # Still inside an edit of a huge map; terminating the context would wait
                # for it. The thread is a daemon: the process exit ends it.
                log.warning("the edit feed thread is still busy at shutdown")
                return
        self._wake_recv.close()
        self._wake_send.close()
        self._context.term()

    def feed_stats(self) -> dict:
        """For ``stats``: the broker epoch and the last number applied (equal numbers on
        two workers of one epoch mean the same edits), counts, and the feed's lag (ms from
        the broker numbering an edit to this worker applying it; across machines this
        includes their clock offset)."""
        with self._lags_lock:
            lags = sorted(self._lags)
        return {
            "epoch": self._epoch,
            "seq": self._applied,
            "caught_up": self.caught_up.is_set(),
            **self._counts,
            "pending": len(self._pending),
            "lag_ms": {
                "p50": round(lags[len(lags) // 2] * 1000.0, 3) if lags else 0.0,
                "max": round(lags[-1] * 1000.0, 3) if lags else 0.0,
            },
        }

    # -- the feed thread ---------------------------------------------------------------

    def _run(self) -> None:
        dealer = server_socket(self._context, zmq.DEALER, heartbeat=self._heartbeat)
        sub = server_socket(self._context, zmq.SUB, heartbeat=self._heartbeat)
        sub.setsockopt(zmq.RCVHWM, FEED_HWM)
        sub.setsockopt(zmq.SUBSCRIBE, EDIT)
        dealer.connect(self.edits_endpoint)
        sub.connect(self.feed_endpoint)
        poller = zmq.Poller()
        poller.register(dealer, zmq.POLLIN)
        poller.register(sub, zmq.POLLIN)
        poller.register(self._wake_recv, zmq.POLLIN)
        started = last_note = time.monotonic()
        try:
            while not self._stop.is_set():
                self._maybe_fetch(dealer)
                events = dict(poller.poll(_POLL_MS))
                if self._wake_recv in events:
                    try:
                        while self._wake_recv.recv(4096):
                            pass
                    except OSError:
                        pass
                self._send_outbox(dealer)
                if sub in events:
                    self._drain(sub, self._on_feed)
                if dealer in events:
                    self._drain(dealer, self._on_log)
                now = time.monotonic()
                if not self.caught_up.is_set() and now - last_note > 5.0:
                    last_note = now
                    log.warning("%s", self._unreachable_note(now - started))
        except zmq.ContextTerminated:
            pass
        finally:
            dealer.close(linger=0)
            sub.close(linger=0)

    def _unreachable_note(self, waited: float) -> str:
        note = (f"waited {waited:.0f} s for the broker's edit log: no answer from edits {self.edits_endpoint} "
                f"(feed {self.feed_endpoint}); ")
        try:
            derived = self.back_endpoint is not None and \
                edit_endpoints(self.back_endpoint) == (self.edits_endpoint, self.feed_endpoint)
        except ValueError:
            derived = False
        if derived:
            return note + (f"is the broker running with --back {self.back_endpoint}? Start it so, or pass --edits "
                           "and --feed matching the broker's ready line")
        return note + "is the broker running? Pass --edits and --feed matching the broker's ready line"

    def _drain(self, sock: zmq.Socket, handle) -> None:
        for _ in range(_BURST):
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                handle(frames)
            except Exception:
                # A bad message must not stop the feed: later edits still have to apply.
                log.exception("edit feed: cannot handle a message")

    def _send_outbox(self, dealer: zmq.Socket) -> None:
        while True:
            try:
                message = self._outbox.get_nowait()
            except queue.Empty:
                return
            try:
                dealer.send_multipart(message, zmq.NOBLOCK)
                self._counts["sent"] += 1
            except zmq.Again:
                # Its high-water mark is full: the broker has been unreachable for a long
                # time. The edit stays here and is counted unconfirmed when a later one returns.
                log.warning("edit not sent: the broker at %s is not taking edits", self.edits_endpoint)

    def _maybe_fetch(self, dealer: zmq.Socket) -> None:
        now = time.monotonic()
        if not self._fetch_wanted:
            if now - self._synced_at < RESYNC_S:
                return
            self._fetch_wanted = True
        if self._fetch_sent is not None and now - self._fetch_sent < 2.0:
            return
        try:
            dealer.send_multipart([FETCH, _SEQ.pack(self._applied)], zmq.NOBLOCK)
        except zmq.Again:
            return
        self._fetch_sent = now

    def _on_log(self, frames: list) -> None:
        if len(frames) < 2 or frames[0] != LOG or len(frames[1]) != _LOG.size or len(frames) % 2:
            log.warning("edit feed: ignoring a malformed catch-up reply")
            return
        epoch, oldest, newest = _LOG.unpack(frames[1])
        self._fetch_sent = None
        self._synced_at = time.monotonic()
        if epoch != self._epoch:
            self._new_epoch(epoch)
        # Entries numbered below the log's oldest are the newest uploads it kept: applied
        # first, in order. Until a reply holds none of them newer than what is applied
        # here (the broker sends them before the log's own entries), there may be more.
        entries = [(frames[i], frames[i + 1]) for i in range(2, len(frames), 2)]
        snapshot = [entry for entry in entries if _ENTRY.unpack(entry[0])[1] < oldest]
        rest = entries[len(snapshot):]
        took_snapshot = False
        for header, body in snapshot:
            seq = _ENTRY.unpack(header)[1]
            if seq > self._applied:
                self._skip_to(seq - 1)
                self._on_entry(header, body, live=False)
                took_snapshot = True
        if took_snapshot and not rest:
            self._fetch_wanted = True
            return
        if oldest > self._applied + 1:
            missed = self._skip_to(oldest - 1)
            log.warning("the broker's log no longer holds %d edits this worker missed; its maps may differ "
                        "from the other workers' until those cells are edited again", missed)
        for header, body in rest:
            self._on_entry(header, body, live=False)
        self._fetch_wanted = self._applied < newest or bool(self._early)
        if self._applied >= newest:
            self.caught_up.set()

    def _skip_to(self, seq: int) -> int:
        """Count the entries up to ``seq`` that are no longer in the log as missed (trimmed
        edits, and uploads a later one of their name replaced), and go past them."""
        missed = max(0, seq - self._applied)
        self._counts["missed"] += missed
        self._applied = max(self._applied, seq)
        self._early = {early: entry for early, entry in self._early.items() if early > self._applied}
        return missed

    def _on_feed(self, frames: list) -> None:
        if len(frames) != 3 or frames[0] != EDIT or len(frames[1]) != _ENTRY.size:
            log.warning("edit feed: ignoring a malformed message")
            return
        self._on_entry(frames[1], frames[2], live=True)

    def _new_epoch(self, epoch: int) -> None:
        if self._epoch is not None:
            log.warning("the broker restarted: edits are numbered afresh, and those made before are not "
                        "replayed to workers that join from now on")
        self._epoch = epoch
        self._applied = 0
        self._early.clear()
        self._fetch_wanted = True
        self._fetch_sent = None

    def _on_entry(self, header: bytes, body: bytes, *, live: bool) -> None:
        epoch, seq, stamped = _ENTRY.unpack(header)
        if epoch != self._epoch:
            self._new_epoch(epoch)
        if seq <= self._applied:
            return  # already applied (a catch-up reply overlapping the feed)
        if seq > self._applied + 1:
            if len(self._early) < FEED_HWM:
                self._early[seq] = (stamped, body)
            self._fetch_wanted = True
            return
        self._apply(seq, body)
        if live:
            with self._lags_lock:
                self._lags.append(time.time() - stamped)
        while self._applied + 1 in self._early:
            _, early = self._early.pop(self._applied + 1)
            self._apply(self._applied + 1, early)

    def _apply(self, seq: int, body: bytes) -> None:
        try:
            change = msgpack.unpackb(body, raw=False)
            name, origin, own_seq = change["map"], change["origin"], change["oseq"]
            kind = change.get("kind", "edit")
        except Exception:
            self._counts["failed"] += 1
            log.warning("edit %d is unreadable; skipped", seq)
            self._applied = seq
            return
        with self._lock:
            again = True
            own = origin == self.identity
            if own:
                while self._pending and self._pending[0][0] < own_seq:
                    self._pending.popleft()  # sent before this one and never numbered: lost
                    self._counts["unconfirmed"] += 1
                if self._pending and self._pending[0][0] == own_seq:
                    again = self._pending.popleft()[1]
        if again and kind != "superseded":
            try:
                self._apply_change(kind, name, change)
            except Exception as exc:
                self._counts["failed"] += 1
                log.warning("edit %d from %s not applied here: %s", seq, origin, exc)
            else:
                self._counts["reapplied" if own else "applied"] += 1
        self._applied = seq

    def _apply_change(self, kind: str, name: str, change: dict) -> None:
        gridmap = None
        if kind == "put":
            if self.build_upload is None:
                raise RuntimeError("this worker cannot build uploaded maps (no build_upload)")
            # Outside the lock: a put replaces the map whole, whatever came before it here.
            started = time.perf_counter()
            gridmap = self.build_upload(change["put"])
            load_ms = (time.perf_counter() - started) * 1000.0
        with self._lock:
            if kind == "put":
                self.registry.put_map(name, gridmap, load_ms=load_ms, bounded=False)
            elif kind == "drop":
                self.registry.drop_map(name)
            else:
                self.registry.apply_edit(name, rects=change.get("rects") or (), cells=change.get("cells") or (),
                                         solid=change.get("solid"), cost=change.get("cost"))
            # Our pending changes of this map were applied before this one; they go again after it.
            for pending in self._pending:
                if pending[2] == name:
                    pending[1] = True
