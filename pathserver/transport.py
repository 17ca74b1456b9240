"""How pathserver's ZeroMQ sockets are made and used: every socket option, heartbeat and
size limit, set here once for the server, the broker, its workers, the relay and the
Python client.

::

    socket                                made by        kind        heartbeat  MAXMSGSIZE  MANDATORY  CURVE
    serve --bind: the server              server_socket  ROUTER      clients    yes         yes        server, optional
    serve --connect: a worker's requests  server_socket  DEALER      clients    yes         -          -
    broker front                          server_socket  ROUTER      clients    yes         -          server, optional
    broker back                           server_socket  DEALER      workers    -           -          -
    relay, engine side                    server_socket  ROUTER      clients    yes         yes        -
    relay -> server, one per engine       client_socket  DEALER      pings      -           -          client
    pathserver.client                     client_socket  DEALER      -          -           -          client, optional

"clients": HEARTBEAT_IVL_MS and HEARTBEAT_TIMEOUT_MS; "workers": the BACK_ pair; both
with the timeout as TTL and a HANDSHAKE_MS deadline. "pings": the clients' interval and
timeout only. Every socket closes with LINGER 0 (a stopped process never waits to
deliver), and every bound one binds through :func:`bind_socket`, which also announces
the ZAP domain. Process-internal inproc sockets (the loop's result pipe, the broker's
control pair) are made where they are used: no peer to time out, nothing to limit. The
owners of bound sockets share :class:`Bindable` and :func:`stopped_by_signals`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading

import zmq

from pathserver.protocol.codec import DEFAULT_LIMITS, UPLOAD_LIMITS, Limits

#: ZMTP heartbeats (ms) towards clients (server, broker front, relay): ping every
#: interval, drop a peer silent for the timeout. docs/protocol.md (Transport) promises
#: these numbers to engine clients, so the server, the broker and the relay share them:
#: a client cannot tell which one it talks to.
HEARTBEAT_IVL_MS = 2000
HEARTBEAT_TIMEOUT_MS = 10000
#: Between the broker and its workers (the back end): a worker that stops
#: answering ZMTP pings (hung, or its machine gone without closing TCP) is dropped after
#: the timeout, and round-robin stops dealing requests to it. A killed process is noticed
#: at once (its kernel closes TCP). Shorter than the clients' timeout, at the price of
#: dropping a worker that merely stalls that long (docs/scaling.md, Failure).
BACK_HEARTBEAT_IVL_MS = 1000
BACK_HEARTBEAT_TIMEOUT_MS = 3000
#: A connection must finish its ZMTP handshake (CURVE included) within this (ms), so a
#: peer that connects and stalls cannot hold a descriptor (docs/security.md).
HANDSHAKE_MS = 5000
#: The ZAP domain every bound socket announces. With it libzmq refuses ZMTP 1.0/2.0 peers
#: at once. Without it, any first byte but 0xff reads as a 1.0 greeting, which ends the
#: handshake timer, and 1.0 has no heartbeats: a peer that then went silent held its
#: connection forever. With the NULL mechanism and no ZAP handler, ZMTP 3 peers still get
#: in; with CURVE, the handler (``pathserver.security.CurveServer``) answers for it.
ZAP_DOMAIN_NAME = "pathserver"

# Plain ints: pyzmq's send/recv do enum arithmetic on every frame, which costs several
# microseconds a message on the server's and the broker's hot paths.
NOBLOCK = int(zmq.NOBLOCK)
MORE_NOBLOCK = int(zmq.SNDMORE | zmq.NOBLOCK)
RCVMORE = int(zmq.RCVMORE)


def max_message_bytes(limits: Limits = DEFAULT_LIMITS, upload_limits: Limits = UPLOAD_LIMITS) -> int:
    """``MAXMSGSIZE``, the socket's own hard cap, for a socket that takes requests checked
    against ``limits`` and ``put_map`` bodies checked against ``upload_limits``: the
    largest body either allows, plus the default body limit, so a body a little past its
    limit still gets a ``too_large`` reply from the server; a larger one is a disconnect
    from libzmq (docs/protocol.md, Limits)."""
    return max(limits.max_request_bytes, upload_limits.max_request_bytes) + limits.max_request_bytes


def normalize_endpoint(endpoint: str) -> str:
    """``tcp://host:0`` means any free port, as ``tcp://host:*`` does.

    >>> normalize_endpoint("tcp://127.0.0.1:0"), normalize_endpoint("ipc:///tmp/p")
    ('tcp://127.0.0.1:*', 'ipc:///tmp/p')
    """
    if endpoint.startswith("tcp://") and endpoint.endswith(":0"):
        return endpoint[:-2] + ":*"
    return endpoint


# -- making sockets ----------------------------------------------------------------------


def server_socket(
    context: zmq.Context,
    kind: int,
    *,
    heartbeat: tuple[int, int] = (HEARTBEAT_IVL_MS, HEARTBEAT_TIMEOUT_MS),
    handshake_ms: int = HANDSHAKE_MS,
    max_bytes: int | None = None,
    mandatory: bool = False,
    curve=None,
) -> zmq.Socket:
    """A socket of one of pathserver's own processes (server, worker, broker, relay),
    bound with :func:`bind_socket` or connected by the caller.

    ``heartbeat``: ``(interval, timeout)`` in ms; the timeout is also sent to the peer as
    its TTL, so both ends give up alike. ``max_bytes``: ``MAXMSGSIZE`` (None: no cap).
    ``mandatory``: ``ROUTER_MANDATORY``, so a send to a peer that has gone fails at once
    (EHOSTUNREACH) instead of vanishing. ``curve``: a ``pathserver.security.CurveServer``
    to make this the CURVE server side; start its authenticator on ``context`` before
    the socket binds (without a ZAP handler libzmq admits every CURVE client).
    """
    ivl_ms, timeout_ms = heartbeat
    sock = context.socket(kind)
    sock.linger = 0
    if mandatory:
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
    if max_bytes is not None:
        sock.setsockopt(zmq.MAXMSGSIZE, max_bytes)
    sock.setsockopt(zmq.HEARTBEAT_IVL, ivl_ms)
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, timeout_ms)
    sock.setsockopt(zmq.HEARTBEAT_TTL, timeout_ms)
    sock.setsockopt(zmq.HANDSHAKE_IVL, handshake_ms)
    if curve is not None:
        curve.apply(sock)
    return sock


def client_socket(context: zmq.Context, endpoint: str, *, curve_options: dict | None = None,
                  heartbeat: tuple[int, int] | None = None) -> zmq.Socket:
    """A DEALER connected to a server at ``endpoint``, as a client holds one.

    ``curve_options``: from ``pathserver.security.client_curve_options`` (``{}`` or None:
    plain ZMTP). ``heartbeat``: ``(interval, timeout)`` in ms for a connection that may
    stay idle for long (the relay's); the Python client sends none, its requests time out.
    ``context`` may be a ``zmq.asyncio.Context``.
    """
    sock = context.socket(zmq.DEALER)
    sock.linger = 0
    if heartbeat is not None:
        sock.setsockopt(zmq.HEARTBEAT_IVL, heartbeat[0])
        sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, heartbeat[1])
    for option, value in (curve_options or {}).items():
        sock.setsockopt(option, value)
    sock.connect(endpoint)
    return sock


def bind_socket(sock: zmq.Socket, endpoint: str) -> str:
    """Bind ``sock`` to ``endpoint`` (port 0 or ``*``: a free one) behind the ZAP domain;
    returns the bound endpoint. Raises zmq.ZMQError; the caller closes the socket."""
    sock.setsockopt(zmq.ZAP_DOMAIN, ZAP_DOMAIN_NAME.encode())
    sock.bind(normalize_endpoint(endpoint))
    return sock.getsockopt_string(zmq.LAST_ENDPOINT)


# -- what owns bound sockets: the server, the broker, the relay --------------------------


class Bindable:
    """A base for what owns bound sockets: ``with`` binds it (``bind()``) and closes it on
    the way out (``close()``)."""

    def __enter__(self):
        self.bind()
        return self

    def __exit__(self, *exc):
        self.close()


@contextlib.contextmanager
def stopped_by_signals(stop):
    """Within, SIGINT and SIGTERM call ``stop()``; the handlers they replace come back on
    leaving. Signals reach only the main thread: elsewhere (a test's thread) nothing is
    installed."""
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, lambda *_: stop())
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


# -- messages without blocking -------------------------------------------------------------


def recv_frames(sock: zmq.Socket) -> list:
    """All frames of one message, without blocking (raises zmq.Again when none)."""
    frames = [sock.recv(NOBLOCK)]
    while sock.getsockopt(RCVMORE):
        frames.append(sock.recv(NOBLOCK))
    return frames


def send_frames(sock: zmq.Socket, frames: list) -> None:
    """One message, without blocking. A ROUTER or a full pipe refuses the first frame
    (zmq.Again, or EHOSTUNREACH with ROUTER_MANDATORY), so a message goes whole or not at all."""
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        sock.send(frame, NOBLOCK if i == last else MORE_NOBLOCK)


def send_request(sock, body: bytes) -> bool:
    """Queue one client request ``["", body]`` without blocking. False when libzmq has
    nowhere to queue it (no connection: a refused handshake drops it, and then a blocking
    send would wait forever); the caller keeps the request and retries it on its timeout."""
    try:
        sent = sock.send_multipart([b"", body], zmq.NOBLOCK)
        if isinstance(sent, asyncio.Future) and sent.done():  # zmq.asyncio: done at once with NOBLOCK
            sent.result()
    except zmq.Again:
        return False
    return True
