"""Safe network exposure: the bind policy, CURVE keys, the client allow-list, a relay.

The server binds loopback by default. :func:`check_bind` refuses any other address unless
CURVE is configured (a server secret key plus a folder of allowed client public keys,
enforced by ``zmq.auth``'s ZAP handler) or the user passed ``--insecure``, which only
earns a loud warning. Keys are ZeroMQ certificate files, as ``pathserver keygen NAME``
writes them: ``NAME.key`` (public, safe to copy) and ``NAME.key_secret`` (secret).

Engines that cannot speak CURVE reach a CURVE server through :class:`Relay`
(``pathserver relay``): a plain ROUTER on loopback, and for each engine connection one
CURVE DEALER to the server. Frames pass through untouched, so the relay is invisible to
the protocol: request ids, envelopes, error replies and ordering are the server's own.

Errors::

    PathserverError
     +-- SecurityError          code = "security"       bad key file, bad allow-list folder
          +-- BindRefusedError  code = "bind_refused"   non-loopback bind without CURVE or --insecure
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth
from zmq.utils import z85

from pathserver.errors import BindRefusedError, SecurityError

log = logging.getLogger("pathserver.security")

#: Below this libzmq a network-facing socket carries known, fixed advisories
#: (CVE-2019-13132, CVE-2020-15166, CVE-2021-20234..20237, CVE-2020-36400).
SAFE_LIBZMQ = (4, 3, 5)
#: Local transports: never reachable from another machine.
_LOCAL_TRANSPORTS = ("ipc", "inproc")
_KEY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
#: The relay's engine-facing socket behaves like the server's (docs/protocol.md, Transport).
_HEARTBEAT_IVL_MS = 2000
_HEARTBEAT_TIMEOUT_MS = 10000
_HANDSHAKE_MS = 5000
_MAXMSGSIZE = 8 * 1024 * 1024
#: A relay connection to the server is closed after this long without traffic either way
#: (engines reconnect freely; this only bounds sockets left by engines that went away).
RELAY_IDLE_S = 300.0
#: Engine connections the relay serves at once; the least recently active is closed first.
RELAY_MAX_PEERS = 256
_POLL_MS = 100


# -- the bind policy ---------------------------------------------------------------------


def is_local_endpoint(endpoint: str) -> bool:
    """True when ``endpoint`` can only be reached from this machine.

    Local: ``ipc://``, ``inproc://``, and ``tcp://`` (or ``ws://``) on 127.0.0.0/8,
    ``::1`` (also as ``::ffff:127.x.x.x``) or ``localhost``. Everything else is not:
    ``*``, ``0.0.0.0``, ``::``, interface names, host names, other transports.

    >>> [is_local_endpoint(e) for e in ("tcp://127.0.0.1:5555", "tcp://[::1]:0", "ipc:///tmp/p")]
    [True, True, True]
    >>> [is_local_endpoint(e) for e in ("tcp://*:5555", "tcp://0.0.0.0:5555", "tcp://eth0:5555")]
    [False, False, False]
    """
    transport, sep, address = endpoint.partition("://")
    if not sep:
        return False
    transport = transport.lower()
    if transport in _LOCAL_TRANSPORTS:
        return True
    if transport not in ("tcp", "ws"):
        return False
    host = address.split("/", 1)[0]  # ws://host:port/path
    host = host.rsplit(";", 1)[-1]  # a connect-style "source;destination": the destination counts
    host, _, _port = host.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    host = host.split("%", 1)[0]  # an IPv6 zone id
    if host.lower() == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False  # "*", an interface name or a host name: possibly reachable
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def check_bind(endpoint: str, *, curve: bool, insecure: bool = False) -> list[str]:
    """Apply the bind policy; returns the warning lines to print on stderr.

    Raises BindRefusedError for a non-loopback ``endpoint`` unless ``curve`` (CURVE with
    an allow-list is configured) or ``insecure``.
    """
    if is_local_endpoint(endpoint):
        return []
    warnings = []
    if not curve:
        if not insecure:
            raise BindRefusedError(
                f"refusing to bind {endpoint}: not a loopback address, and CURVE is not configured; "
                "use --curve-keys KEY --allow DIR (see `pathserver keygen`), or --insecure to expose it anyway"
            )
        warnings.append(
            f"pathserver: WARNING: --insecure: serving {endpoint} WITHOUT encryption or authentication; "
            "anyone who can reach this port can query and edit your maps"
        )
    if zmq.zmq_version_info() < SAFE_LIBZMQ:
        warnings.append(
            f"pathserver: WARNING: libzmq {zmq.zmq_version()} is older than "
            f"{'.'.join(map(str, SAFE_LIBZMQ))} and has known network-facing vulnerabilities; "
            "install pyzmq's wheel (which bundles a current libzmq) or upgrade the system libzmq"
        )
    return warnings


# -- keys --------------------------------------------------------------------------------


def _z85_key(value, what: str) -> bytes | None:
    """``value`` as a 40-character Z85 key, or None when it does not look like one."""
    if isinstance(value, str):
        if len(value) != 40 or os.path.exists(value):
            return None
        value = value.encode("ascii", "replace")
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value)
        try:
            if len(value) == 40 and len(z85.decode(value)) == 32:
                return value
        except (ValueError, KeyError, TypeError):
            pass
        raise SecurityError(f"{what}: not a 40-character Z85 CURVE key")
    return None


def _certificate(path: Path, what: str) -> tuple[bytes, bytes | None]:
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as exc:
        raise SecurityError(f"{what}: cannot read key file {path}: {exc}") from None
    for key in (public, secret):
        if key is not None:
            _z85_key(key, f"{what} ({path})")
    return public, secret


def load_public_key(source, what: str = "server public key") -> bytes:
    """A public key (Z85 bytes) from a 40-character Z85 string/bytes or a key file path
    (``NAME.key``; a ``NAME.key_secret`` works too, its public half is used)."""
    key = _z85_key(source, what)
    if key is not None:
        return key
    public, _secret = _certificate(Path(source), what)
    return public


def load_secret_key(source, what: str = "secret key") -> tuple[bytes, bytes]:
    """``(public, secret)`` Z85 keys from a ``NAME.key_secret`` file, a folder holding
    exactly one ``*.key_secret`` (or a ``server.key_secret``), or a 40-character Z85
    secret key (the public half is derived)."""
    key = _z85_key(source, what)
    if key is not None:
        return zmq.curve_public(key), key
    path = Path(source)
    if path.is_dir():
        candidates = sorted(path.glob("*.key_secret"))
        server = path / "server.key_secret"
        if server in candidates:
            candidates = [server]
        if len(candidates) != 1:
            found = ", ".join(p.name for p in candidates) or "none"
            raise SecurityError(
                f"{what}: expected one NAME.key_secret in {path} (found: {found}); name the file instead"
            )
        path = candidates[0]
    public, secret = _certificate(path, what)
    if secret is None:
        raise SecurityError(f"{what}: {path} holds only a public key; give the NAME.key_secret file")
    return public, secret


def allowed_client_keys(folder) -> list[bytes]:
    """The public keys of every ``*.key`` file in ``folder`` (what ``zmq.auth`` will load)."""
    path = Path(folder)
    if not path.is_dir():
        raise SecurityError(f"allow-list: {path} is not a folder of client public keys (NAME.key files)")
    keys = [_certificate(p, "allow-list")[0] for p in sorted(path.glob("*.key"))]
    if not keys:
        raise SecurityError(
            f"allow-list: no client public keys (NAME.key) in {path}; copy each client's NAME.key there "
            "(`pathserver keygen NAME` makes them)"
        )
    return keys


@dataclass(frozen=True)
class CurveServer:
    """The server side of CURVE: its own keypair and the folder of allowed client keys.

    :meth:`start_authenticator` must run on the socket's context before the socket binds;
    :meth:`apply` sets the socket's options. The allow-list is read at start: restart the
    server after adding or removing a key.
    """

    public_key: bytes
    secret_key: bytes
    allowed_dir: Path
    allowed_count: int

    @classmethod
    def load(cls, secret_key_source, allowed_dir) -> "CurveServer":
        if allowed_dir is None:
            raise SecurityError("--curve-keys needs --allow DIR: a folder of the client public keys to admit")
        public, secret = load_secret_key(secret_key_source, "server secret key")
        keys = allowed_client_keys(allowed_dir)
        if not zmq.has("curve"):
            raise SecurityError(f"this libzmq ({zmq.zmq_version()}) was built without CURVE support")
        # Resolved: zmq.auth reads the location "*" as "allow any client".
        return cls(public, secret, Path(allowed_dir).resolve(), len(keys))

    def start_authenticator(self, context: zmq.Context):
        """Start the ZAP handler on ``context``; returns it (call ``.stop()`` before term)."""
        from zmq.auth.thread import ThreadAuthenticator

        authenticator = ThreadAuthenticator(context, log=logging.getLogger("pathserver.security.zap"))
        authenticator.start()
        # zmq.auth falls back to the "*" domain only for sockets that set no ZAP domain; the
        # server's ROUTER sets ZAP_DOMAIN_NAME, so the allow-list is registered under both.
        for domain in ("*", ZAP_DOMAIN_NAME):
            authenticator.configure_curve(domain=domain, location=str(self.allowed_dir))
        return authenticator

    def apply(self, socket: zmq.Socket) -> None:
        socket.curve_server = True
        socket.curve_publickey = self.public_key
        socket.curve_secretkey = self.secret_key


#: The ZAP domain the server's sockets announce (see ``pathserver.server.loop``).
ZAP_DOMAIN_NAME = "pathserver"


def client_curve_options(server_public_key=None, client_secret_key=None) -> dict:
    """Socket options for a CURVE client, ``{}`` when neither key is given.

    ``server_public_key``: the server's ``NAME.key`` file or Z85 key. ``client_secret_key``:
    this client's ``NAME.key_secret`` file (or Z85 secret); its ``NAME.key`` must be in the
    server's allow-list folder.
    """
    if server_public_key is None and client_secret_key is None:
        return {}
    if server_public_key is None or client_secret_key is None:
        raise SecurityError(
            "CURVE needs both server_public_key (the server's NAME.key) and client_secret_key "
            "(this client's NAME.key_secret, whose NAME.key is in the server's allow-list)"
        )
    server = load_public_key(server_public_key, "server public key")
    public, secret = load_secret_key(client_secret_key, "client secret key")
    return {zmq.CURVE_SERVERKEY: server, zmq.CURVE_PUBLICKEY: public, zmq.CURVE_SECRETKEY: secret}


# -- pathserver keygen -------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``pathserver keygen NAME [--dir DIR]``."""
    parser.add_argument("name", metavar="NAME", help="key name: writes NAME.key (public) and NAME.key_secret")
    parser.add_argument("--dir", type=Path, default=Path("."), help="folder to write to (default: current)")


def run(args) -> int:
    """Write a CURVE keypair and say how to use it."""
    name, folder = args.name, Path(args.dir)
    if not _KEY_NAME.match(name):
        raise SecurityError(f"key name {name!r}: use letters, digits, '_', '-', '.' (no paths)")
    public, secret = folder / f"{name}.key", folder / f"{name}.key_secret"
    existing = [str(p) for p in (public, secret) if p.exists()]
    if existing:
        raise SecurityError(f"{', '.join(existing)} already exists; remove it or pick another NAME")
    folder.mkdir(parents=True, exist_ok=True)
    umask = os.umask(0o077)  # the secret is never readable by others, not even briefly
    try:
        zmq.auth.create_certificates(folder, name)
    finally:
        os.umask(umask)
    public.chmod(0o644)
    print(
        f"wrote {public} (public key: give it out) and {secret} (secret key: keep it private)\n"
        "\n"
        "As the server's key:\n"
        f"  pathserver serve --bind tcp://0.0.0.0:5555 --curve-keys {secret} --allow ALLOWED_DIR\n"
        f"  Clients need {public} to know the server is genuine.\n"
        "\n"
        "As a client's key:\n"
        f"  copy {public} into the server's ALLOWED_DIR (the --allow folder), restart the server, then\n"
        f"  Python:  Client('tcp://SERVER:5555', server_public_key='server.key', client_secret_key='{secret}')\n"
        f"  engines: pathserver relay --listen tcp://127.0.0.1:5555 --connect tcp://SERVER:5555 "
        f"--server-key server.key --client-key {secret}"
    )
    return 0


def add_curve_arguments(parser: argparse.ArgumentParser) -> None:
    """``--curve-keys KEY --allow DIR`` (``pathserver serve`` and ``pathserver broker``)."""
    parser.add_argument(
        "--curve-keys", type=Path, default=None, metavar="KEY",
        help="enable CURVE: the server's NAME.key_secret (from `pathserver keygen`) or the folder holding it",
    )
    parser.add_argument(
        "--allow", type=Path, default=None, metavar="DIR",
        help="with --curve-keys: folder of the client public keys (NAME.key) allowed to connect",
    )


def curve_from_arguments(curve_keys, allowed_dir) -> "CurveServer | None":
    """The CurveServer ``--curve-keys`` / ``--allow`` ask for, None when neither is given;
    raises SecurityError naming what is wrong."""
    if curve_keys is None and allowed_dir is None:
        return None
    if curve_keys is None:
        raise SecurityError("--allow needs --curve-keys KEY: the server's NAME.key_secret")
    return CurveServer.load(curve_keys, allowed_dir)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The security options of ``pathserver serve``."""
    add_curve_arguments(parser)
    parser.add_argument(
        "--insecure", action="store_true",
        help="allow a non-loopback --bind without CURVE: anyone who can reach the port can use and edit maps",
    )


# -- pathserver relay --------------------------------------------------------------------


class _Peer:
    __slots__ = ("routing_id", "socket", "last")

    def __init__(self, routing_id: bytes, socket: zmq.Socket, now: float):
        self.routing_id = routing_id
        self.socket = socket
        self.last = now


class Relay:
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
        frontend = self._context.socket(zmq.ROUTER)
        for option, value in {
            zmq.LINGER: 0, zmq.ROUTER_MANDATORY: 1, zmq.MAXMSGSIZE: _MAXMSGSIZE,
            zmq.HEARTBEAT_IVL: _HEARTBEAT_IVL_MS, zmq.HEARTBEAT_TIMEOUT: _HEARTBEAT_TIMEOUT_MS,
            zmq.HEARTBEAT_TTL: _HEARTBEAT_TIMEOUT_MS, zmq.HANDSHAKE_IVL: _HANDSHAKE_MS,
        }.items():
            frontend.setsockopt(option, value)
        # As on the server (pathserver.server.loop): refuse ZMTP 1.0 greetings at once, or a
        # peer sending one byte and going silent would hold its connection forever.
        frontend.setsockopt(zmq.ZAP_DOMAIN, ZAP_DOMAIN_NAME.encode())
        listen = self.listen[:-2] + ":*" if self.listen.startswith("tcp://") and self.listen.endswith(":0") else self.listen
        try:
            frontend.bind(listen)
        except zmq.ZMQError:
            frontend.close(linger=0)
            raise
        self._frontend = frontend
        self._poller.register(frontend, zmq.POLLIN)
        self.endpoint = frontend.getsockopt_string(zmq.LAST_ENDPOINT)
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

    def __enter__(self):
        self.bind()
        return self

    def __exit__(self, *exc):
        self.close()

    def _backend(self) -> zmq.Socket:
        socket = self._context.socket(zmq.DEALER)
        socket.linger = 0
        socket.setsockopt(zmq.HEARTBEAT_IVL, _HEARTBEAT_IVL_MS)
        socket.setsockopt(zmq.HEARTBEAT_TIMEOUT, _HEARTBEAT_TIMEOUT_MS)
        for option, value in self.curve_options.items():
            socket.setsockopt(option, value)
        socket.connect(self.connect)
        return socket

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
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, lambda *_: relay.stop())
    try:
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
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        relay.close()
    return 0
