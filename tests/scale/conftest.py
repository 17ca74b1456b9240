"""Fixtures: the two-room map in a temporary folder, and a Cluster killed at the end."""

import threading

import pytest

from pathserver.broker import Broker
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
