"""Floors and links over the wire (issue #35): put_map's ``floors`` and ``links``, points
``[x, y, floor]``, path replies' ``links``, packed triples, ``update`` replacing links,
get_map's round trip, ``maps``, and bad floors and links refused with a code and ``at``.
Answers are compared with the same GridMap searched in process, and costs with the slow
reference (tests/naive_links.py)."""

import numpy as np
import pytest

import naive_links
from pathserver import GridMap, distance_field, find_path
from pathserver.client import Client, ServerError


@pytest.fixture
def client(server):
    with Client(server.endpoint, timeout=30.0) as made:
        yield made


def two_floors(rng, width=14, height=11):
    """Two random floors, a two-way stair and a one-way drop between them, a tagged ladder."""
    walkable = rng.random((2, height, width)) > 0.25
    links = [
        {"from": [1, 1, 0], "to": [1, 1, 1], "cost": 2.0},
        {"from": [width - 2, 1, 1], "to": [width - 2, height - 2, 0], "cost": 0.0, "two_way": False},
        {"from": [3, height - 2, 0], "to": [4, 2, 1], "cost": 5.0, "tag": "ladder"},
    ]
    for link in links:
        for end in (link["from"], link["to"]):
            walkable[end[2], end[1], end[0]] = True
    tags = np.zeros(walkable.shape, np.uint8)
    return walkable, tags, links


def test_an_uploaded_map_of_floors_answers_as_in_process(client):
    rng = np.random.default_rng(35)
    walkable, tags, links = two_floors(rng)
    reply = client.put_map("storeys", walkable, tags=tags, tag_names={"ladder": 7}, links=links)
    assert (reply["width"], reply["height"]) == (14, 11)
    local = GridMap(walkable, tags=tags, tag_names={"ladder": 7}, floors=2, links=links)
    cells = np.argwhere(walkable)
    for _ in range(12):
        (sf, sy, sx), (gf, gy, gx) = cells[rng.choice(len(cells), 2, replace=False)].tolist()
        start, goal = [sx, sy, sf], [gx, gy, gf]
        expected = find_path(local, start, goal, smooth="none")
        got = client.request("path", map="storeys", start=start, goal=goal, smooth="none")
        assert got["status"] == expected.status
        best = naive_links.cost(walkable.astype(np.uint8), np.ones(walkable.shape), links, start, goal)
        if expected.found:
            assert got["cost"] == pytest.approx(best, rel=1e-9)
            assert got["path"] == expected.path.tolist()
            assert got["links"] == expected.links.tolist()
            assert got["start"] == start and got["goal"] == goal
            for i, k in got["links"]:  # each taken link joins its two points
                ends = [links[k]["from"], links[k]["to"]]
                assert sorted([got["path"][i], got["path"][i + 1]]) == sorted(ends)
        else:
            assert best == np.inf


def test_points_replies_and_packed_triples(client):
    walkable = np.ones((2, 6, 8), bool)
    walkable[0, :, 4] = False  # floor 0 split in two: the way round is upstairs
    links = [{"from": [2, 2, 0], "to": [2, 2, 1], "cost": 1.0},
             {"from": [5, 2, 1], "to": [5, 3, 0], "cost": 0.5, "two_way": False}]
    client.put_map("halves", walkable, links=links, cell_size=2.0, origin=(10.0, 20.0))
    got = client.request("path", map="halves", start=[0, 0], goal=[7, 5], smooth="none")
    assert got["status"] == "found" and got["start"] == [0, 0, 0] and got["goal"] == [7, 5, 0]
    assert all(len(point) == 3 for point in got["path"])
    assert [k for _, k in got["links"]] == [0, 1]
    # Smoothing keeps both ends of every link.
    smooth = client.request("path", map="halves", start=[0, 0], goal=[7, 5])
    assert [2, 2, 0] in smooth["path"] and [2, 2, 1] in smooth["path"] and [5, 3, 0] in smooth["path"]
    assert smooth["cost"] == pytest.approx(got["cost"])
    # Packed: int32 triples in grid space, float32 in world space, floors as numbers.
    packed = client.request("path", map="halves", start=[0, 0, 0], goal=[7, 5, 0], packed=True)
    assert np.frombuffer(packed["path"], "<i4").reshape(-1, 3).tolist() == smooth["path"]
    assert packed["links"] == smooth["links"]
    world = client.request("path", map="halves", start=[11.0, 21.0, 0], goal=[25.0, 31.0, 0], space="world",
                           packed=True)
    points = np.frombuffer(world["path"], "<f4").reshape(-1, 3)
    assert points[:, 2].tolist() == [p[2] for p in smooth["path"]]
    assert ((points[:, :2] - (10.0, 20.0)) / 2.0 - 0.5).tolist() == [p[:2] for p in smooth["path"]]
    # reachable's cells are triples on a map of several floors.
    reach = client.request("reachable", map="halves", start=[0, 0, 1], budget=1.0)
    cells = np.frombuffer(reach["cells"], "<i4").reshape(-1, 3)
    assert cells[0].tolist() == [0, 0, 1] and set(cells[:, 2].tolist()) == {1}


def test_update_replaces_links_and_edits_a_floor(client):
    walkable = np.ones((2, 5, 5), bool)
    links = [{"from": [0, 0, 0], "to": [0, 0, 1], "cost": 1.0}]
    first = client.put_map("lift", walkable, links=links)["gen"]
    assert client.request("path", map="lift", start=[0, 0, 0], goal=[4, 4, 1])["status"] == "found"
    closed = client.update("lift", links=[])
    assert closed["gen"] > first
    assert client.request("path", map="lift", start=[0, 0, 0], goal=[4, 4, 1])["status"] == "no_path"
    client.update("lift", links=[{"from": [4, 4, 0], "to": [4, 4, 1], "cost": 3}])
    got = client.request("path", map="lift", start=[0, 0, 0], goal=[4, 4, 1], smooth="none")
    assert got["links"] == [[len(got["path"]) - 2, 0]] and got["cost"] == pytest.approx(4 * 2 ** 0.5 + 3)
    # A cell edit lands on the floor it names, and only there.
    client.update("lift", cells=[[2, 2, 1]], solid=True)
    back = client.get_map("lift")
    assert not back.walkable[5 + 2, 2] and back.walkable[2, 2]
    # An update with a bad link changes nothing.
    gen = client.get_map("lift").gen
    with pytest.raises(ServerError) as refused:
        client.update("lift", links=[{"from": [0, 0, 2], "to": [1, 1], "cost": 1}])
    assert (refused.value.code, refused.value.at) == ("out_of_bounds", "links[0].from[2]")
    assert client.get_map("lift").gen == gen


def test_get_map_round_trip_and_maps(client):
    rng = np.random.default_rng(7)
    walkable, tags, links = two_floors(rng, 9, 6)
    tags[1, 0, 0] = 7
    client.put_map("house", walkable, tags=tags, tag_names={"ladder": 7}, links=links)
    back = client.get_map("house")
    assert back.floors == 2 and back.map_size == (9, 6)
    assert np.array_equal(back.walkable.reshape(2, 6, 9), walkable)
    assert back.links == [{"two_way": True, **link} for link in links]
    again = GridMap.from_cells(back)
    assert again.floors == 2 and np.array_equal(again.links.cost, [2.0, 0.0, 5.0])
    region = client.get_map("house", region=(1, 2, 3, 2))
    assert np.array_equal(region.walkable.reshape(2, 2, 3), walkable[:, 2:4, 1:4])
    entry = next(m for m in client.request("maps")["maps"] if m["name"] == "house")
    assert (entry["floors"], entry["links"], entry["height"]) == (2, 3, 6)


@pytest.mark.parametrize("fields, code, at", [
    ({"floors": 0}, "invalid_request", "floors"),
    ({"floors": 17}, "invalid_request", "floors"),
    ({"floors": "2"}, "invalid_request", "floors"),
    ({"floors": 2}, "invalid_request", "cells"),  # one floor's bytes for two floors
    ({"links": {"from": [0, 0]}}, "invalid_request", "links"),
    ({"links": [[0, 0]]}, "invalid_request", "links[0]"),
    ({"links": [{"from": [0, 0], "to": [1, 1], "cost": -1}]}, "invalid_request", "links[0].cost"),
    ({"links": [{"from": [0, 0], "to": [1, 1], "cost": float("nan")}]}, "non_finite", "links[0].cost"),
    ({"links": [{"from": [0, 0], "to": [9, 1], "cost": 1}]}, "out_of_bounds", "links[0].to"),
    ({"links": [{"from": [0, 0, 1], "to": [1, 1], "cost": 1}]}, "out_of_bounds", "links[0].from[2]"),
    ({"links": [{"from": [0, 0], "to": [1, 1], "cost": 1, "door": True}]}, "invalid_request", "links[0].door"),
    ({"links": [{"from": [0, 0], "to": [1, 1], "cost": 1, "tag": "ladder"}]}, "invalid_request", "links[0].tag"),
])
def test_bad_floors_and_links_are_refused(client, fields, code, at):
    with pytest.raises(ServerError) as refused:
        client.request("put_map", map="bad", width=4, height=3, cells=bytes([1] * 12), **fields)
    assert (refused.value.code, refused.value.at) == (code, at)
    assert "bad" not in [m["name"] for m in client.request("maps")["maps"]]


@pytest.mark.parametrize("start, code, at", [
    ([0, 0, 2], "out_of_bounds", "start[2]"),
    ([0, 0, -1], "out_of_bounds", "start[2]"),
    ([0, 0, 0.5], "invalid_request", "start[2]"),
    ([0, 0, 0, 0], "invalid_request", "start"),
    ([0, 9, 1], "out_of_bounds", "start"),
])
def test_points_on_a_missing_floor_are_refused(client, start, code, at):
    client.put_map("pair", np.ones((2, 4, 4), bool), links=[{"from": [0, 0, 0], "to": [0, 0, 1], "cost": 1}])
    with pytest.raises(ServerError) as refused:
        client.request("path", map="pair", start=start, goal=[1, 1])
    assert (refused.value.code, refused.value.at) == (code, at)


def test_a_map_of_one_floor_takes_floor_zero_points(client):
    client.put_map("flat", np.ones((4, 6), bool))
    got = client.request("path", map="flat", start=[0, 0, 0], goal=[5, 3, 0])
    assert got["status"] == "found" and got["start"] == [0, 0] and "links" not in got
    with pytest.raises(ServerError) as refused:
        client.request("path", map="flat", start=[0, 0, 1], goal=[5, 3])
    assert (refused.value.code, refused.value.at) == ("out_of_bounds", "start[2]")


def test_a_batch_answers_each_entry_across_floors(client):
    walkable = np.ones((3, 5, 6), bool)
    links = [{"from": [0, 0, 0], "to": [0, 0, 1], "cost": 1.0}, {"from": [5, 4, 1], "to": [5, 4, 2], "cost": 1.0}]
    client.put_map("tower", walkable, links=links)
    entries = [{"start": [1, 1], "goal": [4, 4, 2]}, {"start": [1, 1, 2], "goal": [4, 4, 0]},
               {"start": [1, 1, 5], "goal": [0, 0]}]
    reply = client.request("paths", map="tower", requests=entries, smooth="none")
    first, second, bad = reply["results"]
    single = client.request("path", map="tower", **entries[0], smooth="none")
    assert first["path"] == single["path"] and first["links"] == single["links"] == [[1, 0], [7, 1]]
    assert second["status"] == "found" and [k for _, k in second["links"]] == [1, 0]
    assert bad["error"]["code"] == "out_of_bounds" and bad["error"]["at"] == "requests[2].start[2]"
    packed = client.request("paths", map="tower", requests=entries[:2], smooth="none", packed=True)
    points = np.frombuffer(packed["points"], "<i4").reshape(-1, 3)
    assert points[:len(first["path"])].tolist() == first["path"]



def test_avoid_names_cells_and_rectangles_on_their_floors(client):
    walkable = np.ones((2, 3, 7), bool)
    walkable[0, :, 3] = False  # floor 0 in two halves; floor 1 open
    links = [{"from": [1, 1, 0], "to": [1, 1, 1], "cost": 1.0}, {"from": [5, 1, 1], "to": [5, 1, 0], "cost": 1.0}]
    client.put_map("bridge", walkable, links=links)
    trip = {"map": "bridge", "start": [0, 1], "goal": [6, 1], "smooth": "none"}
    assert client.request("path", **trip)["status"] == "found"
    # A wall across floor 1 cuts the only way; the same rectangle on floor 0 does not.
    wall = {"rects": [[3, 0, 1, 3, 1]]}
    assert client.request("path", **trip, avoid=wall)["status"] == "no_path"
    assert client.request("path", **trip, avoid={"rects": [[3, 0, 1, 9]]})["status"] == "found"
    # An avoided link end blocks the link.
    assert client.request("path", **trip, avoid={"cells": [[5, 1, 1]]})["status"] == "no_path"
    with pytest.raises(ServerError) as refused:
        client.request("path", **trip, avoid={"cells": [[5, 1, 2]]})
    assert (refused.value.code, refused.value.at) == ("out_of_bounds", "avoid.cells[0][2]")


def test_field_next_steps_and_check_block_across_floors(client):
    walkable = np.ones((2, 4, 6), bool)
    links = [{"from": [5, 3, 0], "to": [5, 3, 1], "cost": 2.0}]
    client.put_map("keep", walkable, links=links)
    local = GridMap(walkable, floors=2, links=links)
    field = client.request("field", map="keep", goals=[[0, 0, 1]])
    assert (field["width"], field["height"], field["floors"]) == (6, 4, 2)
    values = np.frombuffer(field["cost"], "<f4").reshape(2, 4, 6)
    assert np.allclose(values, distance_field(local, [(0, 0, 1)]))
    assert values[1, 0, 0] == 0 and values[0, 3, 5] == pytest.approx(2.0 + 2 + 3 * 2 ** 0.5)
    window = client.request("field", map="keep", goals=[[0, 0, 1]], region=[1, 1, 2, 2])
    assert np.allclose(np.frombuffer(window["cost"], "<f4").reshape(2, 2, 2), values[:, 1:3, 1:3])
    # A unit on the stair's foot heads up it; others walk to it.
    steps = client.request("next_steps", map="keep", goals=[[0, 0, 1]], positions=[[5, 3, 0], [0, 0, 0]])
    assert steps["steps"][0] == [5, 3, 1] and steps["steps"][1] in ([1, 0, 0], [1, 1, 0])  # downhill, ties either way
    # The stair keeps the floors joined; a wall over its foot cuts them.
    assert client.request("check_block", map="keep", cells=[[2, 2, 0]], points=[[0, 0], [0, 0, 1]])[
        "disconnected"] == []
    assert client.request("check_block", map="keep", cells=[[5, 3]], points=[[0, 0], [0, 0, 1]])[
        "disconnected"] == [[0, 1]]
