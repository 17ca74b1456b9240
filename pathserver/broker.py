"""Scale out: ``pathserver broker`` forwards requests between clients and worker processes
(``pathserver serve --connect``), and numbers the map edits every worker applies.

::

                       ┌─────────────────────── pathserver broker ───────────────────────┐
    clients ──────────►│ front ROUTER ══ forwarding thread (poll loop) ══ back DEALER    │◄── worker A (DEALER)
    (DEALER/REQ,       │            └─ requests no worker can take yet wait here (1 s)   │◄── worker B ...
     unchanged)        │ edits ROUTER ◄── each worker's DEALER: its own edits, "fetch"   │
                       │     └─► sequencer thread: number, keep a log ──► feed PUB ──────│──► every worker's SUB
                       └─────────────────────────────────────────────────────────────────┘

Requests. The front ROUTER prefixes each request with the client's routing id; the
forwarding thread hands ``[client id, (""), body]`` to the back DEALER, which deals
requests round-robin over the connected workers (skipping a worker whose pipe is full).
A worker reads them with a DEALER, so it sees exactly the frames a plain server's ROUTER
sees and answers through the same code; the reply travels back the same way and the front
ROUTER routes it by the first frame. The wire protocol is unchanged: a client cannot tell
a broker from a server.

No worker. When the back DEALER can take nothing (no worker connected, or every worker's
pipe full), a request waits in the broker, oldest first, and goes out as soon as a worker
can take it; one that waited ``worker_wait_s`` (default 1 s) is answered ``overloaded``
(retryable) instead, so no request vanishes. Why not libzmq's ``zmq_proxy``: with a
request waiting at the front and no peer at the back it polls the front again at once,
a core at 100 % for as long as no worker connects, and it cannot answer such a request.
Our loop polls the back for "can send" only while requests wait, so an idle broker sleeps
in ``zmq_poll``, with or without workers.

Edits. A worker applies an ``update`` at once (so its own reply and its next answers see
it) and sends the edit to the broker's edits ROUTER; the sequencer numbers it, keeps it in
a bounded log and publishes it on the feed. Every worker, the sender included, applies
the feed in that one order; a worker that applied its own edit early applies it again when
it comes back if anything was applied in between (see :class:`SharedEdits`), so all
workers that saw the whole feed hold the same cells. A gap in the numbers (a slow or
reconnecting subscriber) is filled from the log, and a worker that joins later replays
the log before it takes requests — the ZeroMQ Guide's Clone pattern. The broker's epoch
(random, per broker run) tells workers that the broker restarted and its numbering began
again. ``docs/scaling.md`` states the consistency model.

Endpoints. The edits and feed endpoints default to the back endpoint's next two ports,
derived by :func:`edit_endpoints` on both sides, so ``broker --back B`` and
``serve --connect B`` agree without more options.

Why not two ``zmq.proxy`` (XSUB/XPUB) for the edits: a forwarder passes messages without
numbering them, so a worker could neither notice a dropped edit nor tell where a joining
worker's catch-up ends and the live feed begins. The fan-out is still libzmq's PUB.

Stopping: ``stop()`` (any thread, or a signal) ends the forwarding thread through an
inproc control socket; requests still waiting for a worker are answered ``overloaded``.
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import queue
import secrets
import signal
import socket
import struct
import sys
import threading
import time

import msgpack
import zmq

from pathserver import security
from pathserver.errors import BrokerError, OverloadedError, PathserverError
from pathserver.protocol.codec import decode_request, peek_id
from pathserver.protocol.requests import request_id
from pathserver.server.handlers import error_reply_bytes

log = logging.getLogger("pathserver.broker")

DEFAULT_FRONT = "tcp://127.0.0.1:5555"
DEFAULT_BACK = "tcp://127.0.0.1:5556"
#: Front heartbeats and message cap: the values a plain server uses, so clients see one
#: behaviour (``docs/protocol.md``, Transport).
FRONT_HEARTBEAT_IVL_MS = 2000
FRONT_HEARTBEAT_TIMEOUT_MS = 10000
HANDSHAKE_MS = 5000
FRONT_MAXMSGSIZE = 8 << 20
#: Back end and edit channel: a worker that stops answering ZMTP pings (hung, or its
#: machine gone without closing TCP) is dropped after the timeout, and round-robin stops
#: dealing requests to it. A killed process is noticed at once (its kernel closes TCP).
BACK_HEARTBEAT_IVL_MS = 1000
BACK_HEARTBEAT_TIMEOUT_MS = 3000
#: How long (s) a request waits in the broker for a worker that can take it (none
#: connected, or every worker's pipe full) before it is answered ``overloaded``. Below
#: the clients' own timeout (2 s in ``pathserver.client``), so they get the error rather
#: than a silence, and long enough to ride out a worker's restart on a warm cache.
WORKER_WAIT_S = 1.0
#: That reply's ``retry_after_ms``: a worker takes seconds to (re)start, so resending at
#: once would only wait again.
NO_WORKER_RETRY_AFTER_MS = 500
#: Requests (and their bytes) held while no worker can take them; past either, a request
#: is answered ``overloaded`` at once, so a flood cannot exhaust the broker's memory.
WAITING_LIMIT = 10_000
WAITING_BYTES = 64 << 20
#: Edits kept for catch-up (at least this many; trimmed in halves).
EDIT_LOG_LIMIT = 100_000
#: Log entries per catch-up reply; a worker asks again until it has them all.
FETCH_BATCH = 1000
#: Feed messages a slow subscriber may lag behind before PUB drops (gaps are refetched).
FEED_HWM = 10_000
#: A worker asks the log for anything newer at least this often (s): a gap shows only when
#: a later edit arrives, so an edit the feed dropped while nothing followed it (a
#: subscription not yet active at start, a reconnect) would otherwise go unnoticed.
RESYNC_S = 1.0

# The edit channel's frames (internal to broker and workers, never seen by clients):
#   worker -> edits ROUTER:  [b"edit", body]            body: msgpack map, opaque to the broker
#                            [b"fetch", SEQ(since)]     "every entry after `since`"
#   edits ROUTER -> worker:  [b"log", LOG(epoch, oldest kept, newest), ENTRY, body, ENTRY, body...]
#   feed PUB -> workers:     [b"edit", ENTRY(epoch, seq, broker time), body]
EDIT, FETCH, LOG = b"edit", b"fetch", b"log"
_SEQ = struct.Struct("<Q")
_LOG = struct.Struct("<QQQ")
_ENTRY = struct.Struct("<QQd")
_POLL_MS = 100
_BURST = 256
# Plain ints: pyzmq's enum arithmetic costs microseconds a message on the forwarding path.
_NOBLOCK = int(zmq.NOBLOCK)
_POLLIN = int(zmq.POLLIN)
_POLLOUT = int(zmq.POLLOUT)
_MORE_NOBLOCK = int(zmq.SNDMORE | zmq.NOBLOCK)
_RCVMORE = int(zmq.RCVMORE)
_TERMINATE = b"TERMINATE"


def _normalize_endpoint(endpoint: str) -> str:
    """``tcp://host:0`` means any free port, as ``tcp://host:*`` does."""
    if endpoint.startswith("tcp://") and endpoint.endswith(":0"):
        return endpoint[:-2] + ":*"
    return endpoint


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


def _heartbeats(sock: zmq.Socket, ivl_ms: int, timeout_ms: int) -> None:
    sock.setsockopt(zmq.HEARTBEAT_IVL, ivl_ms)
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, timeout_ms)
    sock.setsockopt(zmq.HEARTBEAT_TTL, timeout_ms)
    sock.setsockopt(zmq.HANDSHAKE_IVL, HANDSHAKE_MS)


def _recv_frames(sock: zmq.Socket) -> list:
    """All frames of one message, without blocking (raises zmq.Again when none)."""
    frames = [sock.recv(_NOBLOCK)]
    while sock.getsockopt(_RCVMORE):
        frames.append(sock.recv(_NOBLOCK))
    return frames


def _send_frames(sock: zmq.Socket, frames: list) -> None:
    """One message, without blocking: a full pipe refuses its first frame (zmq.Again),
    so it goes whole or not at all."""
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        sock.send(frame, _NOBLOCK if i == last else _MORE_NOBLOCK)


def _relay(back: zmq.Socket, front: zmq.Socket) -> None:
    """Replies from the workers to the clients, frame by frame: the front ROUTER never
    refuses a frame (it drops a reply whose client has gone), so nothing is held back."""
    for _ in range(_BURST):
        try:
            frame = back.recv(_NOBLOCK)
        except zmq.Again:
            return
        while back.getsockopt(_RCVMORE):
            front.send(frame, _MORE_NOBLOCK)
            frame = back.recv(_NOBLOCK)
        front.send(frame, _NOBLOCK)


class Broker:
    """Forwards requests between ``front`` (clients) and ``back`` (workers), and runs the
    edit sequencer on ``edits`` / ``feed``.

    ``edits`` and ``feed`` default to :func:`edit_endpoints` of ``back`` (ValueError when
    they cannot be derived). ``bind()`` returns the real endpoints (a port of 0 or ``*``
    picks a free one); ``run()`` forwards until ``stop()``, which any thread or a signal
    handler may call, then closes everything with LINGER 0. ``worker_wait_s``: how long a
    request waits for a worker that can take it before it is answered ``overloaded``.
    """

    def __init__(
        self,
        front: str = DEFAULT_FRONT,
        back: str = DEFAULT_BACK,
        edits: str | None = None,
        feed: str | None = None,
        *,
        edit_log: int = EDIT_LOG_LIMIT,
        worker_wait_s: float = WORKER_WAIT_S,
        back_heartbeat_ivl_ms: int = BACK_HEARTBEAT_IVL_MS,
        back_heartbeat_timeout_ms: int = BACK_HEARTBEAT_TIMEOUT_MS,
        curve=None,
    ):
        self._derived = {role for role, given in (("edits", edits), ("feed", feed)) if given is None}
        edits, feed = edit_endpoints(back, edits, feed, bind=True)
        self.addresses = {"front": front, "back": back, "edits": edits, "feed": feed}
        self.worker_wait_s = max(0.0, float(worker_wait_s))
        self._warned_at = -1e9
        #: A ``pathserver.security.CurveServer`` securing the front (clients), or None.
        self.curve = curve
        self._authenticator = None
        self.endpoints: dict[str, str] = {}
        self.edit_log = max(1, int(edit_log))
        #: Changes with every broker run, so workers notice a restart (numbering from 1).
        self.epoch = secrets.randbits(63) + 1
        self._back_heartbeat = (int(back_heartbeat_ivl_ms), int(back_heartbeat_timeout_ms))
        self._context = zmq.Context()
        self._sockets: dict[str, zmq.Socket] = {}
        self._stop = threading.Event()
        self._closed = False
        self._seq = 0
        self._log: list[tuple[bytes, bytes]] = []  # (ENTRY header, body), oldest first

    # -- lifecycle ---------------------------------------------------------------------

    def bind(self) -> dict[str, str]:
        """Create and bind the four sockets; returns their endpoints by role."""
        front = self._make("front", zmq.ROUTER)
        # No ROUTER_MANDATORY here: a reply to a client that has gone is dropped by the
        # ROUTER, as a plain server's is, and a send to the front never blocks the loop.
        front.setsockopt(zmq.MAXMSGSIZE, FRONT_MAXMSGSIZE)
        _heartbeats(front, FRONT_HEARTBEAT_IVL_MS, FRONT_HEARTBEAT_TIMEOUT_MS)
        back = self._make("back", zmq.DEALER)
        _heartbeats(back, *self._back_heartbeat)
        edits = self._make("edits", zmq.ROUTER)
        # Our own loop sends here, with NOBLOCK: a reply to a worker that has gone fails
        # at once instead of vanishing.
        edits.setsockopt(zmq.ROUTER_MANDATORY, 1)
        _heartbeats(edits, *self._back_heartbeat)
        feed = self._make("feed", zmq.PUB)
        feed.setsockopt(zmq.SNDHWM, FEED_HWM)
        _heartbeats(feed, *self._back_heartbeat)
        if self.curve is not None:
            # Clients only: the ZAP handler admits the allow-listed CURVE keys on the
            # front, and NULL peers (the workers) on the loopback back, edits and feed.
            self._authenticator = self.curve.start_authenticator(self._context)
            self.curve.apply(front)
        for role, sock in self._sockets.items():
            # As on the server (pathserver.server.loop): a ZAP domain makes libzmq refuse
            # ZMTP 1.0/2.0 peers at once, which have no heartbeats and could otherwise hold
            # a connection forever; ZMTP 3 peers with the NULL mechanism still get in.
            sock.setsockopt(zmq.ZAP_DOMAIN, b"pathserver")
            address = self.addresses[role]
            try:
                sock.bind(_normalize_endpoint(address))
            except zmq.ZMQError as exc:
                self.close()
                hint = " (back's port + 1 and + 2; choose others with --edits/--feed)" if role in self._derived else ""
                raise BrokerError(f"cannot bind {role} endpoint {address}: {exc}{hint}") from None
            self.endpoints[role] = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        return dict(self.endpoints)

    def _make(self, role: str, kind: int) -> zmq.Socket:
        sock = self._context.socket(kind)
        sock.linger = 0
        self._sockets[role] = sock
        return sock

    def stop(self) -> None:
        """Ask ``run()`` to return (within about 0.2 s). Thread- and signal-safe."""
        self._stop.set()

    def run(self) -> None:
        """Forward requests and sequence edits until ``stop()``; then close everything."""
        if not self.endpoints:
            self.bind()
        control = self._context.socket(zmq.PAIR)
        control.linger = 0
        control_address = f"inproc://pathserver-broker-control-{id(self)}"
        control.bind(control_address)
        listener = self._context.socket(zmq.PAIR)
        listener.linger = 0
        listener.connect(control_address)
        # The threads take over the sockets; starting a thread is the memory barrier
        # libzmq asks for when a socket changes threads.
        forwarder = threading.Thread(target=self._forward, args=(listener,), name="pathserver-broker-forward",
                                     daemon=True)
        sequencer = threading.Thread(target=self._sequence, name="pathserver-broker-edits", daemon=True)
        forwarder.start()
        sequencer.start()
        try:
            while not self._stop.wait(0.2):
                if not forwarder.is_alive():
                    log.error("the forwarding thread stopped; shutting the broker down")
                    break
        finally:
            self._stop.set()
            try:
                control.send(_TERMINATE, zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
            forwarder.join(1.0)
            sequencer.join(1.0)
            control.close(linger=0)
            self._sockets.clear()
            self.close()

    def close(self) -> None:
        """Close what is still open (the threads close their own sockets as they end)."""
        if self._closed:
            return
        self._closed = True
        for sock in self._sockets.values():
            sock.close(linger=0)
        self._sockets.clear()
        if self._authenticator is not None:
            self._authenticator.stop()
            self._authenticator = None
        self._context.term()

    def __enter__(self):
        self.bind()
        return self

    def __exit__(self, *exc):
        self.stop()
        self.close()

    # -- the threads -------------------------------------------------------------------

    def _forward(self, control: zmq.Socket) -> None:
        """Requests front -> back, replies back -> front, until a message on ``control``.

        The back is polled for "can send" only while requests wait for a worker: polled
        always, a back with room would wake the loop at once every time, and never polled,
        a waiting request would not notice a worker connecting. Without waiting requests
        the loop sleeps in ``zmq_poll`` until a message arrives."""
        front, back = self._sockets["front"], self._sockets["back"]
        waiting: collections.deque = collections.deque()  # (deadline, frames), oldest first
        held = [0]  # bytes in ``waiting``
        idle = [(control, _POLLIN), (back, _POLLIN), (front, _POLLIN)]
        holding = [(control, _POLLIN), (back, _POLLIN | _POLLOUT), (front, _POLLIN)]
        try:
            while True:
                if waiting:
                    timeout_ms = max(0, int((waiting[0][0] - time.monotonic()) * 1000.0) + 1)
                    events = zmq.zmq_poll(holding, timeout_ms)
                else:
                    events = zmq.zmq_poll(idle, -1)
                ready = dict(events)
                if control in ready:
                    break
                back_events = ready.get(back, 0)
                if back_events & _POLLIN:
                    _relay(back, front)
                if waiting and back_events & _POLLOUT:
                    self._send_waiting(back, waiting, held)
                if front in ready:
                    self._take_requests(front, back, waiting, held)
                if waiting:
                    self._expire(front, waiting, held, time.monotonic())
            while waiting:
                self._answer_unforwarded(front, waiting.popleft()[1],
                                         "the broker stopped before a worker took this request")
        except zmq.ContextTerminated:
            pass
        except zmq.ZMQError as exc:
            if not self._stop.is_set():
                log.error("forwarding failed: %s", exc)
        finally:
            for sock in (front, back, control):
                sock.close(linger=0)

    def _take_requests(self, front: zmq.Socket, back: zmq.Socket, waiting: collections.deque, held: list) -> None:
        for _ in range(_BURST):
            try:
                frames = _recv_frames(front)
            except zmq.Again:
                return
            if not waiting:  # else it would overtake the requests that came before it
                try:
                    _send_frames(back, frames)
                    continue
                except zmq.Again:
                    now = time.monotonic()
                    if now - self._warned_at > 10.0:  # a warning a flapping worker cannot turn into a flood
                        self._warned_at = now
                        log.warning("no worker can take requests (none connected to %s, or all busy); each waits "
                                    "up to %g s, then is answered overloaded", self.endpoints.get("back"),
                                    self.worker_wait_s)
            size = sum(len(frame) for frame in frames)
            if len(waiting) >= WAITING_LIMIT or held[0] + size > WAITING_BYTES:
                self._answer_unforwarded(front, frames, f"no worker can take requests, and the broker already "
                                                        f"holds {len(waiting)} of them")
                continue
            waiting.append((time.monotonic() + self.worker_wait_s, frames))
            held[0] += size

    @staticmethod
    def _send_waiting(back: zmq.Socket, waiting: collections.deque, held: list) -> None:
        while waiting:
            frames = waiting[0][1]
            try:
                _send_frames(back, frames)
            except zmq.Again:
                return
            waiting.popleft()
            held[0] -= sum(len(frame) for frame in frames)

    def _expire(self, front: zmq.Socket, waiting: collections.deque, held: list, now: float) -> None:
        while waiting and waiting[0][0] <= now:
            frames = waiting.popleft()[1]
            held[0] -= sum(len(frame) for frame in frames)
            self._answer_unforwarded(front, frames, f"no worker took this request within {self.worker_wait_s:g} s: "
                                                    "none is connected to the broker, or every worker is busy")

    @staticmethod
    def _answer_unforwarded(front: zmq.Socket, frames: list, message: str) -> None:
        """An ``overloaded`` reply, encoded where every error reply is, to a request no
        worker took. Bad bytes from a client must not stop the loop: anything that fails
        here costs that one reply (the client times out and resends, as before)."""
        try:
            body = frames[-1]
            rid = peek_id(body)
            if rid is None:
                try:
                    rid = request_id(decode_request(body))
                except PathserverError:
                    pass
            error = OverloadedError(message, retry_after_ms=NO_WORKER_RETRY_AFTER_MS)
            reply, _ = error_reply_bytes(rid, error)
            _send_frames(front, [*frames[:-1], reply])
        except zmq.ContextTerminated:
            raise
        except Exception:
            log.exception("cannot answer a request no worker took")

    def _sequence(self) -> None:
        edits, feed = self._sockets["edits"], self._sockets["feed"]
        try:
            while not self._stop.is_set():
                if not edits.poll(_POLL_MS, zmq.POLLIN):
                    continue
                for _ in range(_BURST):
                    try:
                        frames = edits.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    self._on_edits_message(edits, feed, frames)
        except zmq.ContextTerminated:
            pass
        finally:
            edits.close(linger=0)
            feed.close(linger=0)

    def _on_edits_message(self, edits: zmq.Socket, feed: zmq.Socket, frames: list) -> None:
        peer, kind = frames[0], frames[1] if len(frames) > 1 else b""
        if kind == EDIT and len(frames) == 3:
            self._seq += 1
            header = _ENTRY.pack(self.epoch, self._seq, time.time())
            self._log.append((header, frames[2]))
            if len(self._log) >= 2 * self.edit_log:
                del self._log[: len(self._log) - self.edit_log]
            feed.send_multipart([EDIT, header, frames[2]])  # PUB never blocks; it drops
        elif kind == FETCH and len(frames) == 3 and len(frames[2]) == _SEQ.size:
            (since,) = _SEQ.unpack(frames[2])
            oldest = self._seq - len(self._log) + 1
            start = max(0, since + 1 - oldest)
            reply = [peer, LOG, _LOG.pack(self.epoch, oldest, self._seq)]
            for header, body in self._log[start:start + FETCH_BATCH]:
                reply += (header, body)
            try:
                edits.send_multipart(reply, zmq.NOBLOCK)
            except zmq.ZMQError as exc:
                log.info("catch-up reply not sent (the worker has gone?): %s", exc)
        else:
            log.warning("ignoring a %d-frame message of kind %r on the edits endpoint", len(frames), kind[:16])


# -- the worker's side ---------------------------------------------------------------------


def default_identity() -> str:
    """``host:pid``: unique among running workers, and says where to look."""
    return f"{socket.gethostname()}:{os.getpid()}"


class SharedEdits:
    """A map registry (anything with ``apply_edit``; see ``pathserver.maps.registry``)
    whose edits reach every worker behind a broker. Everything else is the wrapped
    registry's.

    ``apply_edit`` (a handler thread, for a client's ``update``) applies the edit here at
    once and queues it for the broker. A feed thread applies the broker's numbered edits
    in order, its own ones included, and fetches any it missed from the broker's log.

    Why this converges: an edit sets cells (walkable, cost) to values, so a sequence of
    edits leaves each cell as its last writer in the sequence left it. Every worker applies
    the broker's order. A worker also applied its own pending edits (sent, not back yet)
    early; whenever it applies anything from the feed it marks those pending edits, and a
    marked edit is applied again when it comes back, after whatever the feed put before
    it. So once nothing is pending, every cell's last writer here is its last writer in
    the broker's order: the same on every worker that saw the whole feed.
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
    ):
        self.registry = registry
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
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()  # local edits for the feed thread to send
        # Wakes the feed thread's poll when a handler thread queues an edit.
        self._wake_recv, self._wake_send = socket.socketpair()
        self._wake_recv.setblocking(False)
        self._wake_send.setblocking(False)
        self._pending: collections.deque = collections.deque()  # [own seq, apply again?], oldest first
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

    def apply_edit(self, name, rects=(), cells=(), *, solid=None, cost=None):
        """Apply the edit here now (returns the new map) and send it to the broker."""
        with self._lock:
            edited = self.registry.apply_edit(name, rects=rects, cells=cells, solid=solid, cost=cost)
            self._own_seq += 1
            self._pending.append([self._own_seq, False])
            body = msgpack.packb({
                "origin": self.identity, "oseq": self._own_seq, "map": name,
                "rects": [list(r) for r in rects], "cells": [list(c) for c in cells],
                "solid": solid, "cost": cost,
            })
            # Queued under the lock, so the broker receives our edits in own-seq order.
            self._outbox.put(body)
        try:
            self._wake_send.send(b"\0")
        except OSError:
            pass  # the wake-up buffer is full: the thread is waking anyway
        return edited

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
        dealer = self._context.socket(zmq.DEALER)
        sub = self._context.socket(zmq.SUB)
        for sock in (dealer, sub):
            sock.linger = 0
            _heartbeats(sock, *self._heartbeat)
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
                body = self._outbox.get_nowait()
            except queue.Empty:
                return
            try:
                dealer.send_multipart([EDIT, body], zmq.NOBLOCK)
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
        if oldest > self._applied + 1:
            missed = oldest - self._applied - 1
            self._counts["missed"] += missed
            log.warning("the broker's log no longer holds %d edits this worker missed; its maps may differ "
                        "from the other workers' until those cells are edited again", missed)
            self._applied = oldest - 1
            self._early = {seq: entry for seq, entry in self._early.items() if seq > self._applied}
        for i in range(2, len(frames), 2):
            self._on_entry(frames[i], frames[i + 1], live=False)
        self._fetch_wanted = self._applied < newest or bool(self._early)
        if self._applied >= newest:
            self.caught_up.set()

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
            edit = msgpack.unpackb(body, raw=False)
            name, origin, own_seq = edit["map"], edit["origin"], edit["oseq"]
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
            if again:
                try:
                    self.registry.apply_edit(name, rects=edit.get("rects") or (), cells=edit.get("cells") or (),
                                             solid=edit.get("solid"), cost=edit.get("cost"))
                except Exception as exc:
                    self._counts["failed"] += 1
                    log.warning("edit %d from %s not applied here: %s", seq, origin, exc)
                else:
                    self._counts["reapplied" if own else "applied"] += 1
                    # Our pending edits were applied before this one; they go again after it.
                    for pending in self._pending:
                        pending[1] = True
            self._applied = seq


# -- the command line ----------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``broker`` subcommand's arguments."""
    parser.add_argument("--front", default=DEFAULT_FRONT, help=f"endpoint clients connect to (default {DEFAULT_FRONT})")
    parser.add_argument("--back", default=DEFAULT_BACK,
                        help=f"endpoint workers (serve --connect) connect to (default {DEFAULT_BACK})")
    parser.add_argument("--edits", default=None,
                        help="endpoint workers send their map edits to and catch up from (default: --back's port + 1, "
                             "where `serve --connect` looks for it; a free port when --back's port is 0 or *)")
    parser.add_argument("--feed", default=None,
                        help="endpoint the broker publishes the numbered edits on (default: --back's port + 2, "
                             "likewise)")
    parser.add_argument("--edit-log", type=int, default=EDIT_LOG_LIMIT,
                        help=f"edits kept for workers that join later (default {EDIT_LOG_LIMIT})")
    parser.add_argument("--worker-wait", type=float, default=WORKER_WAIT_S, metavar="SECONDS",
                        help="how long a request waits for a worker that can take it (none connected, or all busy) "
                             f"before it is answered `overloaded` (default {WORKER_WAIT_S:g})")
    security.add_curve_arguments(parser)
    parser.add_argument("--insecure", action="store_true",
                        help="allow binding non-loopback addresses without encryption (see docs/security.md)")


def run(args: argparse.Namespace, out=None) -> int:
    """Bind, print one ready line, forward until SIGINT/SIGTERM. 0 after a clean stop, 2
    when the edit endpoints cannot be derived from ``--back``, ``--worker-wait`` is out of
    range, or an endpoint cannot be bound or is refused by the bind policy of
    docs/security.md: with ``--curve-keys`` / ``--allow`` the front may face the network;
    the workers' endpoints (back, edits, feed) have no CURVE, so off loopback they need
    ``--insecure``.

    When the bound edits and feed are not the back's next two ports (a wildcard back,
    explicit ``--edits``/``--feed``), a second line on stderr gives the worker's options."""
    out = sys.stdout if out is None else out
    try:
        curve = security.curve_from_arguments(getattr(args, "curve_keys", None), getattr(args, "allow", None))
    except security.SecurityError as exc:
        print(f"pathserver broker: {exc}", file=sys.stderr, flush=True)
        return 2
    try:
        edits, feed = edit_endpoints(args.back, args.edits, args.feed, bind=True)
    except ValueError as exc:
        print(f"pathserver broker: {exc}", file=sys.stderr, flush=True)
        return 2
    worker_wait = getattr(args, "worker_wait", WORKER_WAIT_S)
    if not 0.0 <= worker_wait <= 3600.0:  # also refuses nan
        print(f"pathserver broker: --worker-wait {worker_wait:g} is not between 0 and 3600 seconds",
              file=sys.stderr, flush=True)
        return 2
    addresses = {"front": args.front, "back": args.back, "edits": edits, "feed": feed}
    warnings = []
    for role, endpoint in addresses.items():
        secured = curve is not None and role == "front"
        try:
            warnings += security.check_bind(endpoint, curve=secured, insecure=args.insecure)
        except security.SecurityError:
            what = "the broker has no CURVE without --curve-keys" if role == "front" else \
                "the workers' endpoints have no CURVE"
            print(f"pathserver broker: refusing to bind {role} {endpoint}: not a loopback address, and {what}; "
                  "pass --insecure on a network you control (docs/scaling.md, Security)",
                  file=sys.stderr, flush=True)
            return 2
    for warning in dict.fromkeys(warnings):
        print(warning, file=sys.stderr, flush=True)
    broker = Broker(args.front, args.back, edits, feed, edit_log=args.edit_log, worker_wait_s=worker_wait,
                    curve=curve)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, lambda *_: broker.stop())
    try:
        try:
            endpoints = broker.bind()
        except BrokerError as exc:
            print(f"pathserver broker: {exc}", file=sys.stderr, flush=True)
            return 2
        print(f"pathserver broker ready on {endpoints['front']} (back {endpoints['back']}, "
              f"edits {endpoints['edits']}, feed {endpoints['feed']})", file=out, flush=True)
        try:
            derived = edit_endpoints(endpoints["back"])
        except ValueError:
            derived = None
        if derived != (endpoints["edits"], endpoints["feed"]):
            # `serve --connect BACK` alone would look for the edit log elsewhere.
            print(f"pathserver broker: start workers with --connect {endpoints['back']} --edits {endpoints['edits']} "
                  f"--feed {endpoints['feed']}", file=sys.stderr, flush=True)
        broker.run()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        broker.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pathserver broker", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
