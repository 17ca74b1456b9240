"""CURVE keys made once per session, a real server on a random loopback port (CURVE or
not), and raw DEALERs whose sends and receives time out instead of hanging, for which
silence is an answer."""

import threading
from types import SimpleNamespace

import msgpack
import pytest
import zmq
import zmq.auth

from pathserver.maps.registry import MapRegistry
from pathserver.security import CurveServer
from pathserver.server.loop import Server
from pathserver.server.startup import warm_kernels
from grids import ARENA, movingai  # noqa: F401 - re-exported to the tests
import sockets


@pytest.fixture(scope="session", autouse=True)
def _compiled_kernels():
    warm_kernels()


@pytest.fixture(scope="session")
def keys(tmp_path_factory):
    """server / alice (allowed) / mallory (not allowed): paths and Z85 keys.

    ``keys.allowed`` is the server's allow-list folder, holding only alice.key."""
    root = tmp_path_factory.mktemp("keys")
    allowed = root / "allowed"
    allowed.mkdir()
    made = {}
    for name in ("server", "alice", "mallory"):
        public_file, secret_file = zmq.auth.create_certificates(root, name)
        public, secret = zmq.auth.load_certificate(secret_file)
        made[name] = SimpleNamespace(public_file=public_file, secret_file=secret_file, public=public, secret=secret)
    (allowed / "alice.key").write_bytes((root / "alice.key").read_bytes())
    return SimpleNamespace(root=root, allowed=allowed, **made)


@pytest.fixture
def maps_dir(tmp_path):
    folder = tmp_path / "maps"
    folder.mkdir()
    (folder / "arena.map").write_text(movingai(ARENA))
    return folder


@pytest.fixture
def start_server(maps_dir):
    """``start_server(curve=None)`` -> a running Server (``.endpoint``), stopped after the test."""
    running = []

    def start(curve=None, registry=None) -> Server:
        if registry is None:
            registry = MapRegistry(maps_dir)
            registry.load_all()
        server = Server(registry, "tcp://127.0.0.1:0", workers=2, curve=curve)
        server.bind()
        thread = threading.Thread(target=server.run, name="test-server", daemon=True)
        thread.start()
        running.append((server, thread))
        return server

    yield start
    for server, thread in running:
        server.stop()
        thread.join(5)
        server.close()


@pytest.fixture
def curve_server(start_server, keys):
    return start_server(CurveServer.load(keys.server.secret_file, keys.allowed))


class Dealer(sockets.Dealer):
    """The shared test DEALER, except that here silence is the answer an intruder must
    get: ``send`` returns False, and ``recv_frames`` and ``ask`` return None, when nothing
    could be sent or nothing came within the timeout.

    A send can fail that way: libzmq drops the connection of a client whose CURVE
    handshake the server refused, and that client then has nowhere to queue a message
    (without SNDTIMEO its send would block for good)."""

    def send(self, request, *, delimiter: bool = True) -> bool:
        try:
            super().send(request, delimiter=delimiter)
        except TimeoutError:
            return False
        return True

    def recv_frames(self, timeout_ms: int = sockets.RECV_TIMEOUT_MS):
        """The next message's frames, or None after ``timeout_ms``."""
        try:
            return super().recv_frames(timeout_ms)
        except TimeoutError:
            return None

    def ask(self, request, timeout_ms: int = sockets.RECV_TIMEOUT_MS, **kwargs):
        """The reply as a dict, or None when it could not be sent or nothing came within
        ``timeout_ms``."""
        if not self.send(request, **kwargs):
            return None
        frames = self.recv_frames(timeout_ms)
        return None if frames is None else msgpack.unpackb(frames[-1])


@pytest.fixture
def make_dealer(context):
    def make(endpoint: str, options=None, socket_type=zmq.DEALER) -> Dealer:
        return Dealer(context, endpoint, socket_type, options)

    return make


@pytest.fixture
def curve_options():
    """``curve_options(server_public, client)``: a CURVE client's socket options."""

    def options(server_public: bytes, client) -> dict:
        return {zmq.CURVE_SERVERKEY: server_public, zmq.CURVE_PUBLICKEY: client.public,
                zmq.CURVE_SECRETKEY: client.secret}

    return options
