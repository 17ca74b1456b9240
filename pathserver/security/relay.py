"""``pathserver relay``: engines that cannot speak CURVE reach a CURVE server through it.

A plain ROUTER on loopback, and for each engine connection one CURVE DEALER to the
server. Frames pass through untouched, so the relay is invisible to the protocol: request
ids, envelopes, error replies and ordering are the server's own. Its engine-facing socket
behaves like the server's (``pathserver.transport``; docs/protocol.md, Transport).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

import zmq

from pathserver.security.keys import client_curve_options
from pathserver.security.policy import check_bind
from pathserver.transport import (
    HEARTBEAT_IVL_MS,
    HEARTBEAT_TIMEOUT_MS,
    Bindable,
    bind_socket,
    client_socket,
    max_message_bytes,
    server_socket,
    stopped_by_signals,
)

#: A relay connection to the server is closed after this long without traffic either way
#: (engines reconnect freely; this only bounds sockets left by engines that went away).
RELAY_IDLE_S = 300.0
#: Engine connections the relay serves at once; the least recently active is closed first.
RELAY_MAX_PEERS = 256
_POLL_MS = 100


class _Peer:
    __slots__ = ("routing_id", "socket", "last")

    def __init__(self, routing_id: bytes, socket: zmq.Socket, now: float):
        self.routing_id = routing_id
        self.socket = socket
        self.last = now


class Relay(Bindable):
    """Plain ZeroMQ on ``listen`` (loopback) to a CURVE server at ``connect``.

    Each engine connection gets its own CURVE DEALER to the server, and its messages pass
    through frame for frame both ways, so the server sees exactly what the engine sent
    (``[body]`` or ``["", body]``) and the engine gets the server's own reply. A send that
    would block is dropped, as the server does: clients retry on their timeout.
    """

    def __init__(self, listen: str, connect: str, *, curve_options: dict,
                 idle_s: float = RELAY_IDLE_S, max_peers: int = RELAY_MAX_PEERS):
        self.listen = listen
        self.connect = connect
        self.curve_options = dict(curve_options)
        self.idle_s = float(idle_s)
        self.max_peers = max(1, int(max_peers))
        self.endpoint: str | None = None
        self._context = zmq.Context()
        self._frontend: zmq.Socket | None = None
        self._peers: dict[bytes, _Peer] = {}
        self._by_socket: dict[zmq.Socket, _Peer] = {}
        self._poller = zmq.Poller()
        self._stop = threading.Event()
        self._closed = False

    def bind(self) -> str:
        frontend = server_socket(self._context, zmq.ROUTER, max_bytes=max_message_bytes(), mandatory=True)
        try:
            self.endpoint = bind_socket(frontend, self.listen)
        except zmq.ZMQError:
            frontend.close(linger=0)
            raise
        self._frontend = frontend
        self._poller.register(frontend, zmq.POLLIN)
        return self.endpoint

    def stop(self) -> None:
        """Ask ``run()`` to return within one poll interval. Thread- and signal-safe."""
        self._stop.set()

    def run(self) -> None:
        if self._frontend is None:
            self.bind()
        housekeeping = time.monotonic() + 1.0
        while not self._stop.is_set():
            for socket, _event in self._poller.poll(_POLL_MS):
                if socket is self._frontend:
                    self._from_engines()
                else:
                    peer = self._by_socket.get(socket)
                    if peer is not None:
                        self._from_server(peer)
            now = time.monotonic()
            if now >= housekeeping:
                housekeeping = now + 1.0
                for peer in [p for p in self._peers.values() if now - p.last > self.idle_s]:
                    self._drop(peer)

    def probe(self, timeout: float = 3.0) -> bool:
        """True when the server answers a ``ping`` through a fresh CURVE connection."""
        socket = self._backend()
        try:
            socket.send_multipart([b"", b"\x82\xa2id\x00\xa2op\xa4ping"])  # {"id": 0, "op": "ping"}
            return bool(socket.poll(int(timeout * 1000), zmq.POLLIN))
        finally:
            socket.close(linger=0)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        for peer in list(self._peers.values()):
            self._drop(peer)
        if self._frontend is not None:
            self._frontend.close(linger=0)
        self._context.term()

    def _backend(self) -> zmq.Socket:
        # With pings, a server gone without closing TCP is noticed and connected to again.
        return client_socket(self._context, self.connect, curve_options=self.curve_options,
                             heartbeat=(HEARTBEAT_IVL_MS, HEARTBEAT_TIMEOUT_MS))

    def _from_engines(self) -> None:
        for _ in range(256):
            try:
                routing_id, *frames = self._frontend.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            now = time.monotonic()
            peer = self._peers.get(routing_id)
            if peer is None:
                if len(self._peers) >= self.max_peers:
                    self._drop(min(self._peers.values(), key=lambda p: p.last))
                peer = _Peer(routing_id, self._backend(), now)
                self._peers[routing_id] = peer
                self._by_socket[peer.socket] = peer
                self._poller.register(peer.socket, zmq.POLLIN)
            peer.last = now
            try:
                peer.socket.send_multipart(frames, zmq.NOBLOCK)
            except zmq.Again:
                pass  # the server is unreachable and this connection's queue is full: dropped

    def _from_server(self, peer: _Peer) -> None:
        for _ in range(256):
            try:
                frames = peer.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            peer.last = time.monotonic()
            try:
                self._frontend.send_multipart([peer.routing_id, *frames], zmq.NOBLOCK)
            except zmq.ZMQError:
                pass  # the engine is gone (EHOSTUNREACH) or not reading (EAGAIN): dropped

    def _drop(self, peer: _Peer) -> None:
        self._poller.unregister(peer.socket)
        self._by_socket.pop(peer.socket, None)
        self._peers.pop(peer.routing_id, None)
        peer.socket.close(linger=0)


def add_relay_arguments(parser: argparse.ArgumentParser) -> None:
    """``pathserver relay --connect tcp://SERVER:5555 --server-key server.key --client-key NAME.key_secret``."""
    parser.add_argument("--listen", default="tcp://127.0.0.1:5555",
                        help="plain endpoint the engines connect to (default tcp://127.0.0.1:5555)")
    parser.add_argument("--connect", required=True, help="the CURVE server, e.g. tcp://pathserver.lan:5555")
    parser.add_argument("--server-key", required=True, metavar="KEY",
                        help="the server's public key: its NAME.key file (or the Z85 key)")
    parser.add_argument("--client-key", required=True, metavar="KEY",
                        help="this machine's NAME.key_secret; its NAME.key must be in the server's --allow folder")
    parser.add_argument("--insecure", action="store_true",
                        help="allow a non-loopback --listen: anyone who can reach it uses the server as you")


def run_relay(args, out=None) -> int:
    """Relay until SIGINT/SIGTERM; prints one ready line on ``out`` (stdout)."""
    out = sys.stdout if out is None else out
    for warning in check_bind(args.listen, curve=False, insecure=args.insecure):
        print(warning, file=sys.stderr, flush=True)
    options = client_curve_options(args.server_key, args.client_key)
    relay = Relay(args.listen, args.connect, curve_options=options)
    try:
        with stopped_by_signals(relay.stop):
            try:
                endpoint = relay.bind()
            except zmq.ZMQError as exc:
                print(f"pathserver: cannot bind {args.listen}: {exc}", file=sys.stderr, flush=True)
                return 2
            if not relay.probe():
                print(f"pathserver: WARNING: no answer from {args.connect} through CURVE yet: check that it runs, "
                      "that --server-key is its public key, and that this client's NAME.key is in its --allow "
                      "folder; relaying anyway", file=sys.stderr, flush=True)
            print(f"pathserver relay ready on {endpoint} -> {args.connect} (CURVE)", file=out, flush=True)
            relay.run()
    finally:
        relay.close()
    return 0
