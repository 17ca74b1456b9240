"""A real server on a random loopback port, real map files in a temporary folder, and a
raw DEALER whose every send and receive times out instead of hanging (``sockets.Dealer``)."""

import threading

import pytest
import zmq

from pathserver.maps.registry import MapRegistry
from pathserver.server.loop import Server
from pathserver.server.startup import warm_kernels
from grids import ARENA, SPLIT, movingai, write_map  # noqa: F401 - re-exported to the tests
from reliability.helpers import wait_for
from sockets import Dealer


@pytest.fixture(scope="session", autouse=True)
def _compiled_kernels():
    warm_kernels()


@pytest.fixture
def maps_dir(tmp_path):
    folder = tmp_path / "maps"
    folder.mkdir()
    write_map(folder, "arena", ARENA)
    write_map(folder, "split", SPLIT)
    return folder


class Running:
    """A Server running in a thread; ``stop()`` is idempotent."""

    def __init__(self, server: Server, registry, thread: threading.Thread):
        self.server = server
        self.registry = registry
        self.thread = thread
        self.endpoint = server.endpoint

    def stop(self) -> None:
        if self.thread.is_alive():
            self.server.stop()
            self.thread.join(5)
            self.server.close()
        self.registry.stop()


@pytest.fixture
def start_server(maps_dir):
    running = []

    def start(registry=None, *, watch=False, **options) -> Running:
        if registry is None:
            registry = MapRegistry(maps_dir, debounce_ms=20, rescan_ms=200)
            registry.load_all()
        server = Server(registry, "tcp://127.0.0.1:0", **options)
        server.bind()
        if watch:
            registry.start()
        thread = threading.Thread(target=server.run, name="test-server", daemon=True)
        thread.start()
        handle = Running(server, registry, thread)
        running.append(handle)
        return handle

    yield start
    for handle in running:
        handle.stop()


@pytest.fixture
def server(start_server):
    return start_server()


@pytest.fixture
def dealer(context, server):
    client = Dealer(context, server.endpoint)
    yield client
    client.close()


@pytest.fixture(name="wait_for")
def _wait_for():
    return wait_for


@pytest.fixture(name="write_map")
def _write_map():
    return write_map


@pytest.fixture(name="movingai")
def _movingai():
    return movingai


@pytest.fixture
def make_dealer(context):
    """``make_dealer(endpoint, socket_type=zmq.DEALER)`` -> a Dealer closed after the test."""
    made = []

    def make(endpoint: str, socket_type=zmq.DEALER) -> Dealer:
        client = Dealer(context, endpoint, socket_type)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


class GatedRegistry:
    """The real registry, except that map ``"gate"`` (served as ``arena``) holds the
    worker that asks for it until the test opens the gate: a search that is "slow" on
    cue, without timing luck."""

    def __init__(self, inner):
        self.inner = inner
        self.gate = threading.Event()
        self.entered = threading.Event()

    def get(self, name):
        if name == "gate":
            self.entered.set()
            assert self.gate.wait(10)
            name = "arena"
        return self.inner.get(name)

    def __getattr__(self, attr):
        return getattr(self.inner, attr)


@pytest.fixture
def gated(maps_dir):
    registry = MapRegistry(maps_dir)
    registry.load_all()
    gated = GatedRegistry(registry)
    yield gated
    gated.gate.set()
