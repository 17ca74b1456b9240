"""Scale out: ``pathserver broker`` forwards requests between clients and worker processes
(``pathserver serve --connect``). It forwards only: the maps clients change are shared by
the workers through Redis (``serve --state``, ``pathserver.editlog``), not through here.

::

                       ┌─────────────────────── pathserver broker ───────────────────────┐
    clients ──────────►│ front ROUTER ══ forwarding thread (poll loop) ══ back DEALER    │◄── worker A (DEALER)
    (DEALER/REQ,       │            └─ requests no worker can take yet wait here (1 s)   │◄── worker B ...
     unchanged)        └─────────────────────────────────────────────────────────────────┘

The back DEALER deals requests round-robin over the connected workers, which answer
through the same code as a plain server: a client cannot tell a broker from a server. A
request no worker can take yet waits in the broker, oldest first; one that waited
``worker_wait_s`` (default 1 s) is answered ``overloaded`` (retryable), so no request
vanishes. ``stop()`` (any thread, or a signal) ends the forwarding thread through an
inproc control socket; requests still waiting are answered ``overloaded``. The frames,
and why the broker polls rather than use libzmq's ``zmq_proxy``: docs/scaling.md, "The
request path".
"""

from __future__ import annotations

import argparse
import collections
import logging
import sys
import threading
import time

import zmq

from pathserver import security
from pathserver.errors import BrokerError, OverloadedError, PathserverError
from pathserver.protocol.codec import decode_request, peek_id
from pathserver.protocol.requests import request_id
from pathserver.server.failures import error_reply_bytes
from pathserver.transport import (
    BACK_HEARTBEAT_IVL_MS,
    BACK_HEARTBEAT_TIMEOUT_MS,
    MORE_NOBLOCK,
    NOBLOCK,
    RCVMORE,
    Bindable,
    bind_socket,
    max_message_bytes,
    recv_frames,
    send_frames,
    server_socket,
    stopped_by_signals,
)

log = logging.getLogger("pathserver.broker")

DEFAULT_FRONT = "tcp://127.0.0.1:5555"
DEFAULT_BACK = "tcp://127.0.0.1:5556"
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
_POLL_MS = 100
_BURST = 256
# Plain ints, as pathserver.transport's flags: enum arithmetic costs microseconds a poll.
_POLLIN = int(zmq.POLLIN)
_POLLOUT = int(zmq.POLLOUT)
_TERMINATE = b"TERMINATE"
#: What ``--edits``/``--feed``/``--edit-log`` (the broker's edit log, gone) are answered.
GONE_EDIT_LOG = ("--edits, --feed and --edit-log are gone: the workers share uploads and edits through Redis, "
                 "start each with `serve --connect BACK --state redis://HOST:PORT/DB` (docs/scaling.md)")




def _relay(back: zmq.Socket, front: zmq.Socket) -> None:
    """Replies from the workers to the clients, frame by frame: the front ROUTER never
    refuses a frame (it drops a reply whose client has gone), so nothing is held back."""
    for _ in range(_BURST):
        try:
            frame = back.recv(NOBLOCK)
        except zmq.Again:
            return
        while back.getsockopt(RCVMORE):
            front.send(frame, MORE_NOBLOCK)
            frame = back.recv(NOBLOCK)
        front.send(frame, NOBLOCK)


class Broker(Bindable):
    """Forwards requests between ``front`` (clients) and ``back`` (workers).

    ``bind()`` returns the real endpoints (a port of 0 or ``*`` picks a free one); ``run()`` forwards until ``stop()``, which any thread or a signal
    handler may call, then closes everything with LINGER 0. ``worker_wait_s``: how long a
    request waits for a worker that can take it before it is answered ``overloaded``.
    """

    def __init__(
        self,
        front: str = DEFAULT_FRONT,
        back: str = DEFAULT_BACK,
        *,
        worker_wait_s: float = WORKER_WAIT_S,
        back_heartbeat_ivl_ms: int = BACK_HEARTBEAT_IVL_MS,
        back_heartbeat_timeout_ms: int = BACK_HEARTBEAT_TIMEOUT_MS,
        curve=None,
    ):
        self.addresses = {"front": front, "back": back}
        self.worker_wait_s = max(0.0, float(worker_wait_s))
        # The forwarding thread's alone: requests no worker could take yet, as
        # (deadline, frames), oldest first, and their bytes.
        self._waiting: collections.deque = collections.deque()
        self._waiting_bytes = 0
        self._warned_at = -1e9
        #: A ``pathserver.security.CurveServer`` securing the front (clients), or None.
        self.curve = curve
        self._authenticator = None
        self.endpoints: dict[str, str] = {}
        self._back_heartbeat = (int(back_heartbeat_ivl_ms), int(back_heartbeat_timeout_ms))
        self._context = zmq.Context()
        self._sockets: dict[str, zmq.Socket] = {}
        self._stop = threading.Event()
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------

    def bind(self) -> dict[str, str]:
        """Create and bind the two sockets; returns their endpoints by role."""
        if self.curve is not None:
            # Clients only: the ZAP handler admits the allow-listed CURVE keys on the
            # front, and NULL peers (the workers) on the loopback back.
            self._authenticator = self.curve.start_authenticator(self._context)
        context, back_heartbeat = self._context, self._back_heartbeat
        self._sockets = {
            # The clients' side behaves as a plain server's ROUTER, but for ROUTER_MANDATORY:
            # a reply to a client that has gone is dropped by the ROUTER, and a send to the
            # front never blocks the loop.
            "front": server_socket(context, zmq.ROUTER, max_bytes=max_message_bytes(), curve=self.curve),
            "back": server_socket(context, zmq.DEALER, heartbeat=back_heartbeat),
        }
        for role, sock in self._sockets.items():
            address = self.addresses[role]
            try:
                self.endpoints[role] = bind_socket(sock, address)
            except zmq.ZMQError as exc:
                self.close()
                raise BrokerError(f"cannot bind {role} endpoint {address}: {exc}") from None
        return dict(self.endpoints)

    def stop(self) -> None:
        """Ask ``run()`` to return (within about 0.2 s). Thread- and signal-safe."""
        self._stop.set()

    def run(self) -> None:
        """Forward requests until ``stop()``; then close everything."""
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
        forwarder.start()
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
        waiting = self._waiting
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
                    self._send_waiting(back)
                if front in ready:
                    self._take_requests(front, back)
                if waiting:
                    self._expire(front, time.monotonic())
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

    def _take_requests(self, front: zmq.Socket, back: zmq.Socket) -> None:
        waiting = self._waiting
        for _ in range(_BURST):
            try:
                frames = recv_frames(front)
            except zmq.Again:
                return
            if not waiting:  # else it would overtake the requests that came before it
                try:
                    send_frames(back, frames)
                    continue
                except zmq.Again:
                    now = time.monotonic()
                    if now - self._warned_at > 10.0:  # a warning a flapping worker cannot turn into a flood
                        self._warned_at = now
                        log.warning("no worker can take requests (none connected to %s, or all busy); each waits "
                                    "up to %g s, then is answered overloaded", self.endpoints.get("back"),
                                    self.worker_wait_s)
            size = sum(len(frame) for frame in frames)
            if len(waiting) >= WAITING_LIMIT or self._waiting_bytes + size > WAITING_BYTES:
                self._answer_unforwarded(front, frames, f"no worker can take requests, and the broker already "
                                                        f"holds {len(waiting)} of them")
                continue
            waiting.append((time.monotonic() + self.worker_wait_s, frames))
            self._waiting_bytes += size

    def _send_waiting(self, back: zmq.Socket) -> None:
        waiting = self._waiting
        while waiting:
            frames = waiting[0][1]
            try:
                send_frames(back, frames)
            except zmq.Again:
                return
            waiting.popleft()
            self._waiting_bytes -= sum(len(frame) for frame in frames)

    def _expire(self, front: zmq.Socket, now: float) -> None:
        waiting = self._waiting
        while waiting and waiting[0][0] <= now:
            frames = waiting.popleft()[1]
            self._waiting_bytes -= sum(len(frame) for frame in frames)
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
            send_frames(front, [*frames[:-1], reply])
        except zmq.ContextTerminated:
            raise
        except Exception:
            log.exception("cannot answer a request no worker took")


# -- the command line ----------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``broker`` subcommand's arguments."""
    parser.add_argument("--front", default=DEFAULT_FRONT, help=f"endpoint clients connect to (default {DEFAULT_FRONT})")
    parser.add_argument("--back", default=DEFAULT_BACK,
                        help=f"endpoint workers (serve --connect) connect to (default {DEFAULT_BACK})")
    for gone in ("--edits", "--feed", "--edit-log"):  # refused with GONE_EDIT_LOG
        parser.add_argument(gone, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker-wait", type=float, default=WORKER_WAIT_S, metavar="SECONDS",
                        help="how long a request waits for a worker that can take it (none connected, or all busy) "
                             f"before it is answered `overloaded` (default {WORKER_WAIT_S:g})")
    security.add_curve_arguments(parser)
    parser.add_argument("--insecure", action="store_true",
                        help="allow binding non-loopback addresses without encryption (see docs/security.md)")


def run(args: argparse.Namespace, out=None) -> int:
    """Bind, print one ready line, forward until SIGINT/SIGTERM. 0 after a clean stop, 2
    when ``--worker-wait`` is out of range, an option of the edit log that is gone is
    given, or an endpoint cannot be bound or is refused by the bind policy of
    docs/security.md: with ``--curve-keys`` / ``--allow`` the front may face the network;
    the workers' endpoint (back) has no CURVE, so off loopback it needs ``--insecure``."""
    out = sys.stdout if out is None else out
    if any(getattr(args, gone, None) is not None for gone in ("edits", "feed", "edit_log")):
        print(f"pathserver broker: {GONE_EDIT_LOG}", file=sys.stderr, flush=True)
        return 2
    try:
        curve = security.curve_from_arguments(getattr(args, "curve_keys", None), getattr(args, "allow", None))
    except security.SecurityError as exc:
        print(f"pathserver broker: {exc}", file=sys.stderr, flush=True)
        return 2
    worker_wait = getattr(args, "worker_wait", WORKER_WAIT_S)
    if not 0.0 <= worker_wait <= 3600.0:  # also refuses nan
        print(f"pathserver broker: --worker-wait {worker_wait:g} is not between 0 and 3600 seconds",
              file=sys.stderr, flush=True)
        return 2
    addresses = {"front": args.front, "back": args.back}
    warnings = []
    for role, endpoint in addresses.items():
        secured = curve is not None and role == "front"
        try:
            warnings += security.check_bind(endpoint, curve=secured, insecure=args.insecure)
        except security.SecurityError:
            what = "the broker has no CURVE without --curve-keys" if role == "front" else \
                "the workers' endpoint has no CURVE"
            print(f"pathserver broker: refusing to bind {role} {endpoint}: not a loopback address, and {what}; "
                  "pass --insecure on a network you control (docs/scaling.md, Security)",
                  file=sys.stderr, flush=True)
            return 2
    for warning in dict.fromkeys(warnings):
        print(warning, file=sys.stderr, flush=True)
    broker = Broker(args.front, args.back, worker_wait_s=worker_wait, curve=curve)
    try:
        with stopped_by_signals(broker.stop):
            try:
                endpoints = broker.bind()
            except BrokerError as exc:
                print(f"pathserver broker: {exc}", file=sys.stderr, flush=True)
                return 2
            print(f"pathserver broker ready on {endpoints['front']} (back {endpoints['back']})", file=out,
                  flush=True)
            broker.run()
    finally:
        broker.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pathserver broker", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
