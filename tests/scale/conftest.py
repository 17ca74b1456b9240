"""Fixtures: the two-room map in a temporary folder, and a Cluster killed at the end."""

import pytest

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
