"""Test sockets that cannot hang a test, shared by the test folders that talk ZeroMQ.

Every socket from :func:`bounded_socket` has LINGER 0 (closing it, or terminating its
context, never waits for unsent messages), SNDTIMEO and RCVTIMEO: a send or a receive
that cannot finish raises ``zmq.Again`` after the timeout instead of blocking. A send
can block for good: a DEALER queues only to a connection it holds, and libzmq drops
the connection of a client whose CURVE handshake the server refused (about a second
after connecting, on loopback), so that client's next send waits for a peer forever.

:class:`Dealer` wraps one such socket for request/reply tests: it polls with a
timeout before each receive and raises ``TimeoutError`` when nothing came.
"""

from __future__ import annotations

import msgpack
import zmq

SEND_TIMEOUT_MS = 5000
RECV_TIMEOUT_MS = 5000


def bounded_socket(context: zmq.Context, socket_type: int = zmq.DEALER, *, connect: str | None = None,
                   options: dict | None = None) -> zmq.Socket:
    """A ``socket_type`` socket of ``context`` with LINGER 0, SNDTIMEO and RCVTIMEO set.

    ``options`` (``{zmq.CURVE_SERVERKEY: ..., zmq.RCVHWM: 1}``) are set after those and
    before connecting to ``connect``, so they may override the timeouts."""
    sock = context.socket(socket_type)
    sock.linger = 0
    sock.sndtimeo = SEND_TIMEOUT_MS
    sock.rcvtimeo = RECV_TIMEOUT_MS
    for option, value in (options or {}).items():
        sock.setsockopt(option, value)
    if connect is not None:
        sock.connect(connect)
    return sock


class Dealer:
    """A raw DEALER (or ``socket_type``) on ``endpoint``: ``send`` a dict or bytes,
    ``recv`` the next reply within a timeout. ``options`` as for :func:`bounded_socket`."""

    def __init__(self, context: zmq.Context, endpoint: str, socket_type: int = zmq.DEALER,
                 options: dict | None = None):
        self.socket = bounded_socket(context, socket_type, connect=endpoint, options=options)

    def send(self, request, *, delimiter: bool = True) -> None:
        body = request if isinstance(request, bytes) else msgpack.packb(request)
        try:
            self.socket.send_multipart([b"", body] if delimiter else [body])
        except zmq.Again:
            raise TimeoutError(f"could not queue a request within {self.socket.sndtimeo} ms "
                               "(no connection to the server, or its queue is full)") from None

    def recv_frames(self, timeout_ms: int = RECV_TIMEOUT_MS) -> list:
        if not self.socket.poll(timeout_ms, zmq.POLLIN):
            raise TimeoutError(f"no reply within {timeout_ms} ms")
        return self.socket.recv_multipart()

    def recv(self, timeout_ms: int = RECV_TIMEOUT_MS) -> dict:
        # strict_map_key=False: a packed batch's "errors" is keyed by entry index (ints).
        return msgpack.unpackb(self.recv_frames(timeout_ms)[-1], strict_map_key=False)

    def ask(self, request, timeout_ms: int = RECV_TIMEOUT_MS, **kwargs) -> dict:
        self.send(request, **kwargs)
        return self.recv(timeout_ms)

    def nothing_more(self, timeout_ms: int = 200) -> bool:
        return not self.socket.poll(timeout_ms, zmq.POLLIN)

    def close(self) -> None:
        self.socket.close(linger=0)
