"""Fixtures: the two-room map in a temporary folder, and a Cluster killed at the end."""

import threading

import pytest

from pathserver.broker import Broker
from pathserver.editlog import SharedEdits
from pathserver.maps.registry import MapRegistry
from pathserver.server.handlers import build_upload
from scale.cluster import ROOMS, Cluster, movingai


@pytest.fixture
def maps_dir(tmp_path):
    folder = tmp_path / "maps"
    folder.mkdir()
    (folder / "rooms.map").write_text(movingai(ROOMS))
    return folder


@pytest.fixture
def cluster(maps_dir):
    made = Cluster(maps_dir)
    yield made
    made.close()


@pytest.fixture
def broker():
    """``broker(**options)`` -> a Broker on free loopback ports, forwarding in a thread
    until the test ends."""
    made = []

    def start(**options) -> Broker:
        running = Broker(*["tcp://127.0.0.1:0"] * 4, **options)
        running.bind()
        thread = threading.Thread(target=running.run, name="test-broker", daemon=True)
        thread.start()
        made.append((running, thread))
        return running

    yield start
    for running, thread in made:
        running.stop()
        thread.join(5)


@pytest.fixture
def join(maps_dir):
    """``join(broker)`` -> a SharedEdits worker registry on ``maps_dir`` caught up with the
    broker's log (uploads rebuilt with the server's own ``build_upload``), closed at the end."""
    made = []

    def make(running: Broker) -> SharedEdits:
        registry = MapRegistry(maps_dir)
        registry.load_all()
        shared = SharedEdits(registry, running.endpoints["edits"], running.endpoints["feed"],
                             identity=f"test-{len(made)}", build_upload=build_upload)
        made.append(shared)
        shared.start()
        assert shared.caught_up.wait(10), "no catch-up reply from the broker"
        return shared

    yield make
    for shared in made:
        shared.close()
