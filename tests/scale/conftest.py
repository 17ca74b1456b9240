"""Fixtures: the two-room map in a temporary folder, a real redis-server (AOF in a temp
folder, stopped at the end), a Cluster of processes on it, and RedisStates over map
registries standing in for servers in this process."""

import pytest

from pathserver.editlog import RedisState
from pathserver.maps.registry import MapRegistry
from pathserver.server.map_ops import build_upload
from scale.cluster import ROOMS, Cluster, movingai, redis_server_or_skip


@pytest.fixture
def maps_dir(tmp_path):
    folder = tmp_path / "maps"
    folder.mkdir()
    (folder / "rooms.map").write_text(movingai(ROOMS))
    return folder


@pytest.fixture
def redis_server(tmp_path):
    """A redis-server on a free loopback port (skipped, saying why, when not installed)."""
    folder = tmp_path / "redis"
    folder.mkdir()
    server = redis_server_or_skip(folder)
    yield server
    if server.popen.poll() is None:
        server.resume()  # a test that paused it: SIGKILL ends it either way, this lets it go at once
    server.kill()


@pytest.fixture
def cluster(maps_dir, redis_server):
    made = Cluster(maps_dir, state=redis_server.url)
    yield made
    made.close()


@pytest.fixture
def join(maps_dir, redis_server):
    """``join(**options)`` -> a RedisState over a registry of ``maps_dir`` caught up with
    Redis (uploads built with the server's own ``build_upload``), closed at the end."""
    made = []

    def make(folder=None, url=None, **options) -> RedisState:
        registry = MapRegistry(folder or maps_dir)
        registry.load_all()
        state = RedisState(registry, url or redis_server.url, identity=f"test-{len(made)}", build_upload=build_upload,
                           **options)
        made.append(state)
        state.start()
        assert state.caught_up.wait(10), "the state never caught up with Redis"
        return state

    yield make
    for state in made:
        state.close()
