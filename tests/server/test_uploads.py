"""The game's own world over the wire: put_map, get_map, drop_map and update's if_gen, each
checked against an independent reference (the slow searches of tests/naive.py, the same
arrays as an in-process GridMap, the bytes that were sent)."""

import asyncio
import math
import os
import struct
import threading
import time

import msgpack
import numpy as np
import pytest

import naive
from grids import ARENA, movingai
from pathserver import GridMap, find_path
from pathserver.client import AsyncClient, Client, ServerError
from pathserver.maps.registry import MapRegistry
from sockets import Dealer


@pytest.fixture
def client(server):
    with Client(server.endpoint, timeout=5.0) as made:
        yield made


def footprint_max(cost, unit):
    """The highest terrain cost under each cell's footprint, clipped to the map (brute force)."""
    height, width = cost.shape
    out = np.ones_like(cost)
    for y in range(height):
        for x in range(width):
            out[y, x] = max(cost[cy, cx] for cx, cy in naive.footprint_cells(x, y, unit, unit)
                            if 0 <= cx < width and 0 <= cy < height)
    return out


def wire_snapshot(dealer) -> dict:
    """Every served map's entry in ``maps`` and its cells from ``get_map``, as the wire says."""
    maps = dealer.ask({"id": 1, "op": "maps"})["maps"]
    return {entry["name"]: (entry, dealer.ask({"id": 2, "op": "get_map", "map": entry["name"]}))
            for entry in maps if entry["gen"] is not None}


# -- searches on an uploaded map ----------------------------------------------------------------

#: (width, height, costs): uniform, whole-number costs sent as the cell bytes, or float costs
#: (float32 values, so the wire carries them exactly) sent as a float array with inf walls.
GRIDS = [(7, 5, "uniform"), (33, 21, "bytes"), (64, 48, "floats"), (150, 90, "bytes"), (300, 300, "floats")]


@pytest.mark.parametrize("width, height, costs", GRIDS, ids=[f"{w}x{h}-{c}" for w, h, c in GRIDS])
def test_a_random_uploaded_grid_searches_like_the_same_arrays_in_process_and_the_reference(server, width, height,
                                                                                         costs):
    # Float costs make more than 256 distinct costs: a wider cost index, whose kernels a
    # fresh machine compiles on the first search (the warm-up compiles the one-byte ones),
    # tens of seconds beside the other test processes' compiles.
    with Client(server.endpoint, timeout=60.0 if costs == "floats" else 5.0) as client:
        _uploaded_grid_searches(client, width, height, costs)


def _uploaded_grid_searches(client, width, height, costs):
    rng = np.random.default_rng(width * 1000 + height)
    walkable = naive.random_grid(rng, width, height, 0.25)
    if costs == "uniform":
        cost = np.ones(walkable.shape)
        sent = walkable
    elif costs == "bytes":
        cost = rng.integers(1, 10, size=walkable.shape).astype(np.float64)
        sent = np.where(walkable, cost, 0).astype(np.uint8)
    else:
        cost = (1.0 + rng.random(walkable.shape) * 4.0).astype(np.float32).astype(np.float64)
        sent = np.where(walkable, cost, np.inf)
    reply = client.put_map("random", sent)
    assert (reply["width"], reply["height"]) == (width, height)
    local = GridMap(walkable, None if costs == "uniform" else cost)
    cost[~walkable] = 1.0
    queries = 3 if width * height < 20_000 else 1
    for unit in (1, 2, 3):
        passable = naive.passable_for_unit(walkable, unit, unit)
        unit_cost = footprint_max(cost, unit)
        cells = np.argwhere(passable)
        if len(cells) < 2:
            continue
        for _ in range(queries):
            (sy, sx), (gy, gx) = cells[rng.choice(len(cells), 2, replace=False)]
            start, goal = [int(sx), int(sy)], [int(gx), int(gy)]
            remote = client.find_path("random", start, goal, unit, smooth="none")
            here = find_path(local, start, goal, unit, smooth="none")
            expected = naive.dijkstra(passable, tuple(start), tuple(goal), cost=unit_cost)
            assert remote["status"] == here.status
            assert remote["path"] == here.path.tolist()
            assert remote["cost"] == pytest.approx(here.cost, abs=1e-9)
            if math.isinf(expected):
                assert remote["status"] == "no_path"
            else:
                assert remote["status"] == "found"
                assert remote["cost"] == pytest.approx(expected, abs=1e-6)
                assert naive.path_is_valid(passable, remote["path"])


def test_an_upload_is_served_at_once_and_listed_as_an_upload(client):
    before = time.time()
    reply = client.put_map("yard", np.ones((4, 6), dtype=bool), origin=(10.0, -2.0), cell_size=0.5)
    assert list(reply) == ["id", "ok", "map", "gen", "width", "height"]
    assert client.find_path("yard", [0, 0], [5, 3])["gen"] == reply["gen"]
    world = client.find_path("yard", [10.1, -1.9], [12.9, -0.1], space="world")
    assert world["start"] == [10.25, -1.75] and world["goal"] == [12.75, -0.25]
    (entry,) = [e for e in client.maps() if e["name"] == "yard"]
    assert entry["source"] == "upload" and entry["file"] is None and entry["last_error"] is None
    assert entry["gen"] == reply["gen"] and (entry["width"], entry["height"]) == (6, 4)
    assert entry["origin"] == [10.0, -2.0] and entry["cell_size"] == 0.5
    assert before <= entry["loaded_at"] <= time.time() and entry["load_ms"] > 0
    assert {e["source"] for e in client.maps() if e["name"] != "yard"} == {"file"}


# -- get_map: what was sent, plus the edits since -------------------------------------------


def test_get_map_returns_byte_for_byte_what_was_uploaded_and_the_edits_since(client):
    rng = np.random.default_rng(5)
    width, height = 37, 23
    cells = rng.integers(0, 12, size=(height, width)).astype(np.uint8)
    heights = rng.normal(size=(height, width)).astype("<f4")
    tags = rng.integers(0, 256, size=(height, width)).astype(np.uint8)
    sent = {"cells": cells.tobytes(), "heights": heights.tobytes(), "tags": tags.tobytes()}
    put = client.request("put_map", map="layers", width=width, height=height, origin=[1.5, 2.5], cell_size=2.0,
                         **sent)
    got = client.request("get_map", map="layers")
    assert list(got) == ["id", "ok", "map", "gen", "width", "height", "origin", "cell_size", "region", "cells",
                         "heights", "tags"]
    assert (got["gen"], got["width"], got["height"]) == (put["gen"], width, height)
    assert got["origin"] == [1.5, 2.5] and got["cell_size"] == 2.0 and got["region"] == [0, 0, width, height]
    assert {key: got[key] for key in sent} == sent
    # Edits since: a wall, a cost, an opening. The reference applies them to the bytes.
    edited = client.update("layers", rects=[[2, 3, 4, 2]], solid=True)
    cells[3:5, 2:6] = 0
    edited = client.update("layers", cells=[[10, 10], [11, 10]], cost=7)
    cells[10, 10:12] = np.where(cells[10, 10:12] != 0, 7, 0)
    edited = client.update("layers", cells=[[0, 0]], solid=False)
    cells[0, 0] = cells[0, 0] or 1
    got = client.request("get_map", map="layers")
    assert got["gen"] == edited["gen"]
    assert got["cells"] == cells.tobytes()
    assert got["heights"] == sent["heights"] and got["tags"] == sent["tags"]
    x, y, w, h = 3, 2, 5, 4
    region = client.request("get_map", map="layers", region=[x, y, w, h])
    assert region["region"] == [x, y, w, h] and (region["width"], region["height"]) == (width, height)
    assert region["cells"] == cells[y:y + h, x:x + w].tobytes()
    assert region["heights"] == heights[y:y + h, x:x + w].tobytes()


def test_float_costs_come_back_exact_with_the_cells_rounded(client):
    costs = np.array([[1.0, 2.5, 300.0], [1.25, 0.0, 3.5]], dtype="<f4")  # 0: on the wall below
    cells = np.array([[1, 9, 9], [1, 0, 9]], dtype=np.uint8)  # the bytes say little: costs override them
    client.request("put_map", map="floats", width=3, height=2, cells=cells.tobytes(), costs=costs.tobytes())
    got = client.request("get_map", map="floats")
    # Halves round up, past 255 clamps; the costs are exact, 0 on blocked cells.
    assert got["cells"] == bytes([1, 3, 255, 1, 0, 4])
    assert got["costs"] == costs.tobytes()
    assert client.find_path("floats", [0, 0], [2, 0], smooth="none")["cost"] == pytest.approx(
        min(2.5 + 300.0, 1.25 + math.sqrt(2) * 2.5 + 300.0, math.sqrt(2) * 1.25 + math.sqrt(2) * 300.0))
    # Whole costs up to 255 need no costs layer; the arrays travel back the same.
    whole = np.array([[1.0, 2.0, np.inf], [255.0, 4.0, 1.0]])
    client.put_map("whole", whole)
    assert "costs" not in client.request("get_map", map="whole")
    back = client.get_map("whole")
    assert np.array_equal(back.cost_grid, whole)
    assert back.cells.tolist() == [[1, 2, 0], [255, 4, 1]]


def test_a_map_read_with_get_map_searches_in_process_like_on_the_server(client):
    rng = np.random.default_rng(9)
    cost = np.where(rng.random((30, 40)) < 0.2, np.inf, rng.integers(1, 5, size=(30, 40)).astype(float))
    client.put_map("copy", cost, heights=rng.random((30, 40)), origin=(-4.0, 6.0), cell_size=0.25)
    here = GridMap.from_cells(client.get_map("copy"))
    assert here.origin == (-4.0, 6.0) and here.cell_size == 0.25 and here.heights is not None
    cells = np.argwhere(here.walkable)
    for _ in range(5):
        (sy, sx), (gy, gx) = cells[rng.choice(len(cells), 2, replace=False)]
        for unit in (1, 2):
            remote = client.find_path("copy", [int(sx), int(sy)], [int(gx), int(gy)], unit, max_climb=0.5)
            local = find_path(here, (int(sx), int(sy)), (int(gx), int(gy)), unit, max_climb=0.5, smooth="los")
            assert remote["status"] == local.status and remote["path"] == local.path.tolist()
    # A region keeps its place in the world.
    part = GridMap.from_cells(client.get_map("copy", region=(8, 4, 10, 10)))
    assert part.cell_to_world(0, 0) == here.cell_to_world(8, 4)


def test_get_map_of_a_file_backed_map(client):
    got = client.get_map("arena")
    rows = [line.strip() for line in ARENA.strip().splitlines()]
    assert got.walkable.tolist() == [[ch == "." for ch in row] for row in rows]
    assert got.cost is None and got.heights is None and got.tags is None
    assert got.map_size == (10, 5) and got.region == (0, 0, 10, 5) and got.name == "arena"


# -- refused uploads ---------------------------------------------------------------------------


def f32(values) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


BAD_UPLOADS = [
    ("wrong-length", {"map": "kept", "width": 4, "height": 3, "cells": b"\x01" * 11}, "invalid_request", "cells"),
    ("wrong-bin-type", {"map": "kept", "width": 4, "height": 3, "cells": "\x01" * 12}, "invalid_request", "cells"),
    ("float-for-bin", {"map": "kept", "width": 4, "height": 3, "cells": b"\x01" * 12, "costs": 2.0},
     "invalid_request", "costs"),
    ("nan-cost", {"map": "kept", "width": 4, "height": 3, "cells": b"\x01" * 12, "costs": f32([1.0] * 11 + [math.nan])},
     "non_finite", "costs"),
    ("0-by-5", {"map": "kept", "width": 0, "height": 5, "cells": b""}, "invalid_request", "width"),
    ("5000-by-5000", {"map": "kept", "width": 5000, "height": 5000, "cells": b""}, "invalid_request", "width"),
    ("file-backed-name", {"map": "arena", "width": 4, "height": 3, "cells": b"\x01" * 12}, "conflict", "map"),
]


@pytest.mark.parametrize("case, fields, code, at", BAD_UPLOADS, ids=[row[0] for row in BAD_UPLOADS])
def test_a_bad_upload_gets_its_code_and_leaves_every_map_as_it_was(server, client, context, case, fields, code, at):
    client.put_map("kept", np.ones((3, 4), dtype=bool))
    dealer = Dealer(context, server.endpoint)
    try:
        before = wire_snapshot(dealer)
        reply = dealer.ask(msgpack.packb({"id": 9, "op": "put_map", **fields}, use_bin_type=True))
        assert reply["ok"] is False and (reply["error"]["code"], reply["error"]["at"]) == (code, at), reply
        assert wire_snapshot(dealer) == before
    finally:
        dealer.close()


def test_a_large_refused_upload_names_its_id_wherever_the_id_is(dealer):
    """Bins over 4096 bytes: read on the upload thread, which still finds the id."""
    body = msgpack.packb({"op": "put_map", "map": "late-id", "width": 100, "height": 100, "cells": b"\x01" * 9999,
                          "id": 77}, use_bin_type=True)
    reply = dealer.ask(body)
    assert reply["id"] == 77 and (reply["error"]["code"], reply["error"]["at"]) == ("invalid_request", "cells")


def test_past_the_upload_bound_a_put_is_too_large_and_nothing_is_evicted(start_server, maps_dir):
    registry = MapRegistry(maps_dir, max_upload_cells=100)
    registry.load_all()
    running = start_server(registry)
    with Client(running.endpoint, timeout=5.0) as client:
        first = client.put_map("first", np.ones((8, 8), dtype=bool))
        with pytest.raises(ServerError) as refused:
            client.put_map("second", np.ones((8, 8), dtype=bool))
        assert (refused.value.code, refused.value.at) == ("too_large", "cells")
        assert "first" in {e["name"] for e in client.maps()} and "second" not in {e["name"] for e in client.maps()}
        assert client.get_map("first").gen == first["gen"]
        # A put replacing an upload counts its new size only.
        client.put_map("first", np.ones((10, 10), dtype=bool))
        stats = client.stats()
        assert (stats["upload_cells"], stats["max_upload_cells"]) == (100, 100)
        client.drop_map("first")
        client.put_map("second", np.ones((8, 8), dtype=bool))


# -- names, files and generations ---------------------------------------------------------------


def test_generations_of_a_name_only_grow_across_drops_and_puts(client):
    gens = [client.put_map("again", np.ones((2, 2), dtype=bool))["gen"]]
    gens.append(client.update("again", cells=[[0, 0]], solid=True)["gen"])
    assert client.drop_map("again")["gen"] == gens[-1]
    with pytest.raises(ServerError) as gone:
        client.find_path("again", [0, 0], [1, 1])
    assert gone.value.code == "unknown_map"
    gens.append(client.put_map("again", np.ones((2, 2), dtype=bool))["gen"])
    gens.append(client.put_map("again", np.zeros((2, 2), dtype=bool))["gen"])
    assert gens == sorted(set(gens))


def test_drop_of_an_unknown_or_a_file_backed_name(client):
    with pytest.raises(ServerError) as unknown:
        client.drop_map("atlantis")
    assert (unknown.value.code, unknown.value.at) == ("unknown_map", "map")
    with pytest.raises(ServerError) as conflict:
        client.drop_map("arena")
    assert (conflict.value.code, conflict.value.at) == ("conflict", "map")
    assert client.find_path("arena", [0, 0], [9, 4])["status"] == "found"


def test_a_map_file_appearing_under_an_uploaded_name_never_replaces_the_upload(server, client, maps_dir):
    """The upload keeps serving and the name's last_error says why; dropping the upload
    serves the file."""
    walkable = np.ones((3, 3), dtype=bool)
    put = client.put_map("level", walkable)
    (maps_dir / "level.map").write_text(movingai(["@@@@@", "....."]))
    server.registry.rescan()
    (entry,) = [e for e in client.maps() if e["name"] == "level"]
    assert entry["source"] == "upload" and entry["gen"] == put["gen"]
    assert "level" in entry["last_error"] and "drop_map" in entry["last_error"]
    assert client.get_map("level").map_size == (3, 3)
    with pytest.raises(ServerError) as conflict:
        client.put_map("arena", walkable)
    assert conflict.value.code == "conflict"
    dropped = client.drop_map("level")
    (entry,) = [e for e in client.maps() if e["name"] == "level"]
    assert entry["source"] == "file" and entry["file"] == "level.map" and entry["gen"] > dropped["gen"]
    assert client.get_map("level").map_size == (5, 2)
    # The file now owns the name.
    with pytest.raises(ServerError) as owned:
        client.put_map("level", walkable)
    assert owned.value.code == "conflict"


def test_the_file_loading_while_an_upload_lands_leaves_the_upload(server, client, maps_dir, monkeypatch):
    """A load of the file that began before the put finishes after it: the upload stays."""
    import pathserver.maps.registry as registry_module

    loading, release = threading.Event(), threading.Event()
    real_load = registry_module.load_map_with_sources

    def slow_load(*args, **kwargs):
        loading.set()
        assert release.wait(10)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(registry_module, "load_map_with_sources", slow_load)
    (maps_dir / "race.map").write_text(movingai(["....."]))
    scan = threading.Thread(target=server.registry.rescan)
    scan.start()
    assert loading.wait(10)
    put = client.put_map("race", np.ones((2, 2), dtype=bool))
    release.set()
    scan.join(10)
    (entry,) = [e for e in client.maps() if e["name"] == "race"]
    assert entry["source"] == "upload" and entry["gen"] == put["gen"] and "drop_map" in entry["last_error"]


# -- update's if_gen -----------------------------------------------------------------------------


def test_a_reload_between_a_read_and_a_write_makes_the_write_a_conflict(server, client, maps_dir):
    read = client.get_map("arena")
    assert client.update("arena", cells=[[0, 0]], solid=True, if_gen=read.gen)["gen"] > read.gen
    read = client.get_map("arena")
    # The file is saved meanwhile (atomically, as editors do) and reloaded.
    temp = maps_dir / ".arena.map.tmp"
    temp.write_text(movingai(["." * 10] * 5))
    os.replace(temp, maps_dir / "arena.map")
    assert server.registry.reload(maps_dir / "arena.map")
    current = client.get_map("arena").gen
    assert current > read.gen
    with pytest.raises(ServerError) as stale:
        client.update("arena", cells=[[5, 2]], solid=True, if_gen=read.gen)
    assert (stale.value.code, stale.value.at, stale.value.gen) == ("conflict", "if_gen", current)
    assert list(stale.value.reply) == ["id", "ok", "error", "retryable", "gen"]
    assert client.get_map("arena").walkable[2, 5]  # nothing was edited
    assert client.update("arena", cells=[[5, 2]], solid=True, if_gen=current)["gen"] > current


def test_if_gen_is_checked_on_uploaded_maps_too(client):
    gen = client.put_map("mine", np.ones((3, 3), dtype=bool))["gen"]
    client.update("mine", cells=[[1, 1]], solid=True)  # another client's edit
    with pytest.raises(ServerError) as stale:
        client.update("mine", cells=[[0, 0]], solid=True, if_gen=gen)
    assert stale.value.code == "conflict" and stale.value.gen == gen + 1


# -- the socket loop during a large upload, and drops with requests in flight -----------------------


def test_pings_are_answered_promptly_while_a_2048_map_is_built(server, context):
    rng = np.random.default_rng(8)
    walkable = rng.random((2048, 2048)) > 0.1
    body = msgpack.packb({"id": 1, "op": "put_map", "map": "huge", "width": 2048, "height": 2048,
                          "cells": walkable.view(np.uint8).tobytes()}, use_bin_type=True)
    uploader = Dealer(context, server.endpoint)
    pinger = Dealer(context, server.endpoint)
    try:
        assert pinger.ask({"id": 0, "op": "ping"})["ok"]
        uploader.send(body)
        sent = time.perf_counter()
        waits = []
        while uploader.nothing_more(0):
            started = time.perf_counter()
            assert pinger.ask({"id": len(waits) + 1, "op": "ping"}, timeout_ms=2000)["ok"]
            waits.append(time.perf_counter() - started)
            assert time.perf_counter() - sent < 30
        reply = uploader.recv()
        assert reply["ok"], reply
    finally:
        uploader.close()
        pinger.close()
    assert len(waits) >= 3, f"the upload was answered after {len(waits)} pings"
    assert max(waits) < 0.1, f"pings during the upload: max {max(waits) * 1000:.1f} ms over {len(waits)}"


class HoldingRegistry:
    """The real registry, except that a search on map ``hold`` waits, after it got the
    map, until the test opens the gate."""

    def __init__(self, inner):
        self.inner = inner
        self.hold = None
        self.gate = threading.Event()
        self.entered = threading.Event()

    def get(self, name):
        gridmap = self.inner.get(name)
        if name == self.hold:
            self.entered.set()
            assert self.gate.wait(10)
        return gridmap

    def __getattr__(self, attr):
        return getattr(self.inner, attr)


def test_a_drop_lets_the_requests_in_flight_finish_on_the_version_they_started_on(start_server, maps_dir):
    registry = MapRegistry(maps_dir)
    registry.load_all()
    holding = HoldingRegistry(registry)
    running = start_server(holding, inline_expansions=0)
    try:
        with Client(running.endpoint, timeout=5.0) as client, Client(running.endpoint, timeout=5.0) as other:
            gen = client.put_map("doomed", np.ones((5, 5), dtype=bool))["gen"]
            holding.hold = "doomed"
            rid = client.submit("path", map="doomed", start=[0, 0], goal=[4, 4])
            assert holding.entered.wait(5)
            assert other.drop_map("doomed")["gen"] == gen
            holding.gate.set()
            reply = client.result(rid)
            assert reply["status"] == "found" and reply["gen"] == gen
            with pytest.raises(ServerError) as gone:
                client.find_path("doomed", [0, 0], [4, 4])
            assert gone.value.code == "unknown_map"
    finally:
        holding.gate.set()


# -- the Python client's arrays -----------------------------------------------------------------


def test_the_client_takes_bool_byte_and_float_arrays_and_layers(client):
    walkable = np.array([[True, True, False], [True, True, True]])
    client.put_map("bools", walkable, costs=np.array([[1.0, 2.5, 0.0], [1.0, 1.0, 1.0]]))
    back = client.get_map("bools")
    assert np.array_equal(back.walkable, walkable)
    assert back.cost_grid.tolist() == [[1.0, 2.5, math.inf], [1.0, 1.0, 1.0]]
    client.put_map("ints", [[1, 5, 0], [0, 1, 1]], heights=np.arange(6.0).reshape(2, 3),
                   tags=np.array([[7, 0, 0], [0, 0, 255]]))
    back = client.get_map("ints")
    assert back.cells.tolist() == [[1, 5, 0], [0, 1, 1]]
    assert back.heights.tolist() == [[0, 1, 2], [3, 4, 5]] and back.tags.tolist() == [[7, 0, 0], [0, 0, 255]]
    region = client.get_map("ints", region=(1, 0, 2, 2))
    assert region.cells.tolist() == [[5, 0], [1, 1]] and region.region == (1, 0, 2, 2)
    assert region.map_size == (3, 2)


@pytest.mark.parametrize("array, kwargs, error", [
    (np.array([[1.0, math.nan]]), {}, ValueError),
    (np.array([[1.0, 0.0]]), {}, ValueError),
    (np.array([[1.0, -math.inf]]), {}, ValueError),
    (np.array([[1, 256]]), {}, ValueError),
    (np.array([[1.0, 2.0]]), {"costs": np.ones((1, 2))}, ValueError),
    (np.ones((2, 2), dtype=bool), {"costs": np.ones((2, 3))}, ValueError),
    (np.ones((2, 2), dtype=bool), {"heights": np.full((2, 2), math.inf)}, ValueError),
    (np.ones(4, dtype=bool), {}, ValueError),
    (np.array([["a"]]), {}, TypeError),
])
def test_the_client_refuses_arrays_it_cannot_send_before_sending(client, array, kwargs, error):
    with pytest.raises(error):
        client.put_map("never", array, **kwargs)
    assert "never" not in {e["name"] for e in client.maps()}


def test_the_async_client_has_the_map_ops(server):
    async def session():
        async with AsyncClient(server.endpoint, timeout=5.0) as client:
            put = await client.put_map("async", np.ones((3, 4), dtype=bool))
            got = await client.get_map("async")
            with pytest.raises(ServerError) as stale:
                await client.update("async", cells=[[0, 0]], solid=True, if_gen=put["gen"] - 1)
            dropped = await client.drop_map("async")
            return put, got, stale.value, dropped

    put, got, stale, dropped = asyncio.run(session())
    assert got.gen == put["gen"] and got.walkable.shape == (3, 4)
    assert stale.code == "conflict" and stale.gen == put["gen"]
    assert dropped["gen"] == put["gen"]
