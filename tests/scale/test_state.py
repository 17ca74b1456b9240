"""The shared state on a real Redis, in one process: RedisStates over map registries
stand in for servers (no request path involved)."""

import random
import subprocess
import threading
import time

import numpy as np
import pytest
import redis

from pathserver import find_path
from pathserver.editlog.connection import STREAM, seq_of
from pathserver.errors import AfterTimeoutError, ConflictError, RequestError, StateUnavailableError, UnknownMapError
from pathserver.grid.overlay import map_crc
from pathserver.protocol.cells import MapCells
from pathserver.server.map_ops import build_upload
from scale.cluster import ROOMS, free_ports, movingai, settled


def random_edit(rng: random.Random) -> dict:
    x, y = rng.randrange(11), rng.randrange(5)
    if rng.random() < 0.5:
        return {"cells": [(x, y)], "solid": rng.random() < 0.5}
    return {"rects": [(x, y, rng.randint(1, 4), rng.randint(1, 3))], "solid": rng.random() < 0.5,
            "cost": float(rng.randint(1, 4))}


def put(state, name: str, walkable: np.ndarray, cost=None, **more):
    """What the server's put_map handler does on ``state``."""
    cells = MapCells.from_arrays(walkable, costs=cost)
    fields = {"map": name, "width": cells.width, "height": cells.height, **cells.to_wire(),
              "origin": [0.0, 0.0], "cell_size": 1.0, **more}
    return state.put_map(name, build_upload(fields), wire=fields)


def crcs(state, name: str = "rooms") -> int:
    return map_crc(state.get(name))


def test_an_edit_is_applied_here_before_it_returns_and_carries_its_stream_id(join):
    state, other = join(), join()
    edited = state.apply_edit("rooms", cells=[(5, 2)], solid=True)
    seq = state.committed_seq()
    assert seq_of(seq) > (0, 0)
    assert not state.get("rooms").walkable[2, 5] and edited is state.get("rooms")  # [y, x]
    settled([other], seq)
    assert not other.get("rooms").walkable[2, 5]


def test_concurrent_conflicting_edits_leave_every_server_with_the_same_cells(join):
    states = [join(), join()]
    per_state = 150
    seqs = []

    def edit(state, seed):
        rng = random.Random(seed)
        for _ in range(per_state):
            state.apply_edit("rooms", **random_edit(rng))
        seqs.append(state.committed_seq())  # this thread's last

    threads = [threading.Thread(target=edit, args=(s, i)) for i, s in enumerate(states)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    settled(states, max(seqs, key=seq_of))
    late = join()
    assert crcs(states[0]) == crcs(states[1]) == crcs(late)
    assert states[0].state_stats()["crc"] == states[1].state_stats()["crc"] == late.state_stats()["crc"]
    assert all(s.state_stats()["failed"] == 0 for s in states)


def test_a_put_reaches_every_server_and_a_later_one_and_a_drop_removes_it(join, redis_server):
    first, second = join(), join()
    rng = np.random.default_rng(3)
    walkable = rng.random((40, 30)) > 0.3
    cost = rng.integers(1, 9, size=walkable.shape).astype(float)
    put(first, "world", walkable, cost)
    settled([second], first.committed_seq())
    for state in (first, second):
        assert np.array_equal(state.get("world").walkable, walkable)
        assert np.array_equal(state.get("world").cost[walkable], cost[walkable])
    assert first.state_stats()["skipped"] == 0 and first.state_stats()["failed"] == 0
    late = join()
    assert np.array_equal(late.get("world").walkable, walkable)
    assert late.info()[-1]["source"] == "upload"
    with redis_server.client() as client:
        assert client.hkeys("pathserver:uploads") == [b"world"]  # stored once, under its name
    first.drop_map("world")
    settled([second, late], first.committed_seq())
    assert "world" not in second.names() and "world" not in late.names()
    with redis_server.client() as client:
        assert client.hkeys("pathserver:uploads") == []


def test_a_put_with_tags_and_unit_classes_reaches_every_server(join):
    first, second = join(), join()
    walkable = np.ones((3, 6), dtype=bool)
    tags = np.zeros(walkable.shape, dtype=np.uint8)
    tags[:, 2:4] = 1
    cells = MapCells.from_arrays(walkable, tags=tags)
    fields = {"map": "river", "width": 6, "height": 3, **cells.to_wire(), "origin": [0.0, 0.0], "cell_size": 1.0,
              "tag_names": {"water": 1}, "classes": {"tank": {"water": None}}}
    first.put_map("river", build_upload(fields), wire=fields)
    settled([second], first.committed_seq())
    gridmap = second.get("river")
    assert gridmap.tag_names == {"water": 1} and gridmap.classes == {"tank": {"water": None}}
    assert find_path(gridmap, (0, 1), (5, 1), traversal="tank").status == "no_path"


def test_a_put_with_floors_and_links_reaches_every_server_and_links_edits_are_refused(join):
    first, second = join(), join()
    walkable = np.ones((2, 3, 5), dtype=bool)
    links = [{"from": [0, 0, 0], "to": [4, 2, 1], "cost": 0.0, "two_way": False}]
    put(first, "house", walkable.reshape(6, 5), floors=2, links=links, height=3)
    settled([second], first.committed_seq())
    gridmap = second.get("house")
    assert gridmap.floors == 2 and gridmap.links.to_wire(2) == links
    assert find_path(gridmap, (0, 0, 0), (4, 2, 1)).cost == 0.0
    # An edit on floor 1 lands there on every server, and in the snapshot a later one loads.
    first.apply_edit("house", cells=[(1, 1, 1)], rects=[(3, 2, 9, 9, 1)], solid=True)
    settled([second], first.committed_seq())
    for state in (first, second, join()):
        walkable = state.get("house").walkable
        assert not walkable[state.get("house").stacked(1, 1, 1)[::-1]] and walkable[1, 1]
        assert not walkable[state.get("house").stacked(4, 2, 1)[::-1]] and walkable[2, 4]
    with pytest.raises(RequestError) as refused:
        first.apply_edit("house", links=[])
    assert refused.value.at == "links"
    assert first.get("house").links.to_wire(2) == links


def test_puts_edits_and_drops_from_two_servers_converge(join):
    states = [join(), join()]

    def churn(state, seed):
        rng = np.random.default_rng(seed)

        for _ in range(30):
            choice = rng.integers(4)
            try:
                if choice == 0:
                    put(state, "shared", rng.random((8, 12)) > 0.2)
                elif choice == 1:
                    state.drop_map("shared")
                else:
                    state.apply_edit("shared", cells=[(int(rng.integers(12)), int(rng.integers(8)))],
                                     solid=bool(rng.integers(2)))
            except (UnknownMapError, ConflictError):
                pass  # no map of that name here now: refused before anything was written

    threads = [threading.Thread(target=churn, args=(s, i)) for i, s in enumerate(states)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    put(states[0], "shared", np.ones((8, 12), dtype=bool))
    settled([states[1]], states[0].committed_seq())
    states[1].apply_edit("shared", rects=[(3, 3, 2, 2)], solid=True)
    late = join()
    settled([*states, late], states[1].committed_seq())
    assert crcs(states[0], "shared") == crcs(states[1], "shared") == crcs(late, "shared")
    assert not late.get("shared").walkable[3, 3]


def test_compaction_trims_the_stream_and_a_later_server_still_gets_every_cell(join, redis_server):
    writer = join(compact_entries=20)
    rng = random.Random(7)
    walkable = np.ones((6, 6), dtype=bool)
    walkable[2, 1:5] = False
    put(writer, "keep", walkable)
    for _ in range(120):
        writer.apply_edit("rooms", **random_edit(rng))
    writer.apply_edit("keep", cells=[(0, 0)], solid=True)
    deadline = time.monotonic() + 10
    while writer.state_stats()["compactions"] < 2:  # housekeeping runs about once a second
        assert time.monotonic() < deadline, writer.state_stats()
        writer.apply_edit("rooms", **random_edit(rng))
        time.sleep(0.05)
    with redis_server.client() as client:
        assert client.xlen(STREAM) < 120
    late = join()
    settled([late], writer.committed_seq())
    assert crcs(late) == crcs(writer) and crcs(late, "keep") == crcs(writer, "keep")
    assert not late.get("keep").walkable[0, 0]


def test_a_server_left_behind_by_a_trim_reloads_from_the_snapshot(join, redis_server):
    writer, lagging = join(compact_entries=10), join()
    lagging._stop.set()  # its reader stops where it stands
    lagging._thread.join(5)
    rng = random.Random(11)
    deadline = time.monotonic() + 15
    while writer.state_stats()["compactions"] < 3:
        assert time.monotonic() < deadline, writer.state_stats()
        writer.apply_edit("rooms", **random_edit(rng))
        time.sleep(0.02)
    lagging._stop.clear()
    lagging.start()
    settled([lagging], writer.committed_seq())
    assert lagging.state_stats()["resyncs"] >= 1
    assert crcs(lagging) == crcs(writer)


def test_a_reloaded_map_file_keeps_the_edited_cells_and_takes_the_rest_from_the_file(join, maps_dir):
    state = join()
    state.apply_edit("rooms", cells=[(5, 2)], solid=True)  # close the door
    state.apply_edit("rooms", cells=[(0, 0)], cost=3.0)
    rows = ROOMS.strip().splitlines()
    rows[4] = "@" + rows[4][1:]  # the file changes elsewhere: (0, 4) blocked
    (maps_dir / "rooms.map").write_text(movingai("\n".join(rows)))
    assert state.registry.reload(maps_dir / "rooms.map")
    gridmap = state.get("rooms")
    assert not gridmap.walkable[4, 0]  # from the new file
    assert not gridmap.walkable[2, 5]  # the edit kept
    assert gridmap.cost[0, 0] == 3.0


def test_while_redis_is_down_edits_are_refused_at_once_and_maps_keep_serving(join, redis_server):
    state = join()
    redis_server.kill()
    started = time.monotonic()
    with pytest.raises(StateUnavailableError) as refused:
        state.apply_edit("rooms", cells=[(5, 2)], solid=True)
    assert time.monotonic() - started < 2.0
    assert refused.value.retryable and refused.value.retry_after_ms > 0
    assert find_path(state.get("rooms"), (0, 2), (10, 2)).status == "found"  # the map as it was
    redis_server.start()
    deadline = time.monotonic() + 10
    while True:
        try:
            state.apply_edit("rooms", cells=[(5, 2)], solid=True)
            break
        except StateUnavailableError:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert state.state_stats()["connected"] and state.state_stats()["refused"] >= 1
    assert not state.get("rooms").walkable[2, 5]


def test_waiting_for_an_entry_not_applied_here_ends_at_the_bound(join):
    state = join(after_timeout_s=0.2)
    started = time.monotonic()
    with pytest.raises(AfterTimeoutError):
        state.wait_applied((2 ** 62, 0), "4611686018427387904-0")
    assert 0.15 < time.monotonic() - started < 2.0
    state.apply_edit("rooms", cells=[(1, 1)], solid=True)
    state.wait_applied(seq_of(state.committed_seq()), state.committed_seq())  # at once


def test_a_state_found_through_sentinel_takes_edits(join, redis_server, tmp_path):
    port = free_ports(1)
    config = tmp_path / "sentinel.conf"
    config.write_text(f"port {port}\nbind 127.0.0.1\ndir {tmp_path}\n"
                      f"sentinel monitor pathserver 127.0.0.1 {redis_server.port} 1\n")
    sentinel = subprocess.Popen(["redis-server", str(config), "--sentinel"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        probe = redis.Redis(port=port, socket_timeout=1.0)
        deadline = time.monotonic() + 10
        while True:
            try:
                if probe.sentinel_get_master_addr_by_name("pathserver"):
                    break
            except redis.RedisError:
                pass
            assert time.monotonic() < deadline, "the sentinel never named the master"
            time.sleep(0.05)
        probe.close()
        through = join(url=f"redis+sentinel://127.0.0.1:{port}/pathserver/0")
        direct = join()
        through.apply_edit("rooms", cells=[(5, 2)], solid=True)
        settled([direct], through.committed_seq())
        assert not direct.get("rooms").walkable[2, 5]
    finally:
        sentinel.kill()
        sentinel.wait(5)
