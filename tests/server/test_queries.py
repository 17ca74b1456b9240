"""The queries beyond one path over a real server, through the Python clients: each
reply is what the in-process function answers on the same map (the functions themselves
are checked against slow references in tests/grid), in grid and world space."""

import asyncio

import numpy as np
import pytest

from pathserver import check_block, distance_field, find_path, next_steps, reachable
from pathserver.client import AsyncClient, Client, ServerError


@pytest.fixture
def client(server):
    with Client(server.endpoint, timeout=5, retries=1) as c:
        yield c


@pytest.fixture
def arena(server):
    return server.registry.get("arena")


def test_many_goals_on_path_and_paths(client, arena):
    goals = [(9, 0), (0, 4), (5, 2)]
    reply = client.find_path("arena", (0, 0), goals=goals, smooth="none")
    local = find_path(arena, (0, 0), goals=goals)
    assert reply["goal_index"] == local.goal_index and reply["cost"] == pytest.approx(local.cost)
    assert reply["path"] == local.path.tolist()
    results = client.find_paths("arena", [{"start": [0, 0]}, {"start": [9, 4]}, {"start": [0, 0], "goal": [2, 0]}],
                                goals=goals)
    assert [r.get("goal_index", "none") for r in results] == [local.goal_index,
                                                              find_path(arena, (9, 4), goals=goals).goal_index, "none"]
    assert client.find_path("arena", (0, 0), (9, 4))
    assert "goal_index" not in client.find_path("arena", (0, 0), (9, 4))


def test_avoided_cells_as_an_int_array_go_as_a_bin_with_the_answers_of_lists(client, arena):
    from pathserver.client.messages import compact

    cells = np.array([[1, 0], [1, 1], [4, 3], [-5, 2]], dtype=np.int16)
    sent = compact({"avoid": {"cells": cells, "rects": [[7, 0, 1, 3]]}})["avoid"]
    assert sent["cells"] == cells.astype("<i4").tobytes() and sent["rects"] == [[7, 0, 1, 3]]
    # Past int32, or not ints: as given (the server's check says what is wrong, if anything).
    assert compact({"avoid": {"cells": np.array([[2**40, 0]])}})["avoid"]["cells"].dtype == np.int64
    assert compact({"avoid": {"cells": np.array([[1.5, 0]])}})["avoid"]["cells"].dtype == np.float64
    for kind in (lambda a: a, np.asarray):
        avoid = {"cells": kind(cells.tolist()), "rects": [[7, 0, 1, 3]]}
        reply = client.find_path("arena", (0, 0), (9, 4), avoid=avoid, smooth="none")
        local = find_path(arena, (0, 0), (9, 4), avoid={"cells": cells.tolist(), "rects": [[7, 0, 1, 3]]})
        assert reply["path"] == local.path.tolist() and reply["cost"] == pytest.approx(local.cost)
        batch = client.find_paths("arena", [((0, 0), (9, 4)), ((0, 4), (9, 0))], avoid=avoid, smooth="none")
        assert batch[0]["path"] == local.path.tolist()
        field = client.distance_field("arena", [(9, 4)], avoid=avoid)["cost"]
        assert np.array_equal(field, distance_field(arena, [(9, 4)], avoid={"cells": cells.tolist(),
                                                                            "rects": [[7, 0, 1, 3]]}))
    with pytest.raises(ServerError) as error:
        client.find_path("arena", (0, 0), (9, 4), avoid={"cells": bytes(7)})
    assert (error.value.code, error.value.at) == ("invalid_request", "avoid.cells")


def test_reachable(client, arena):
    reply = client.reachable("arena", (0, 0), 6.5, unit_size=1, avoid={"cells": [[0, 2]]})
    cells, costs = reachable(arena, (0, 0), 6.5, avoid={"cells": [[0, 2]]})
    assert reply["cells"].tolist() == cells.tolist() and reply["costs"].tolist() == costs.tolist()
    assert reply["gen"] == arena.generation


def test_field_whole_and_region(client, arena):
    whole = client.distance_field("arena", [(9, 4)])
    assert np.array_equal(whole["cost"], distance_field(arena, [(9, 4)]))
    assert (whole["width"], whole["height"], whole["origin"]) == (10, 5, [0, 0])
    window = client.distance_field("arena", [(9, 4), (0, 0)], region=[2, 1, 3, 2], max_cost=5, diagonal="never")
    expected = distance_field(arena, [(9, 4), (0, 0)], region=(2, 1, 3, 2), max_cost=5, diagonal="never")
    assert window["cost"].shape == (2, 3) and np.array_equal(window["cost"], expected)
    assert window["origin"] == [2, 1]


@pytest.mark.parametrize("lookahead", ["cell", "los"])
def test_next_steps_as_a_bin(client, arena, lookahead):
    positions = np.array([[0.5, 0.5], [3.2, 4.9], [9, 0], [9, 4]])
    reply = client.next_steps("arena", [(9, 4)], 1, positions, lookahead=lookahead)
    steps, remaining = next_steps(arena, [(9, 4)], 1, positions, lookahead=lookahead)
    assert reply["steps"].dtype == np.float32 and np.array_equal(reply["steps"], steps)
    assert np.array_equal(reply["remaining"], remaining)


def test_next_steps_as_arrays_in_world_space(start_server, maps_dir):
    (maps_dir / "arena.json").write_text('{"origin": [100, 50], "cell_size": 2}')
    server = start_server()
    arena = server.registry.get("arena")
    with Client(server.endpoint, timeout=5, retries=1) as client:
        reply = client.request("next_steps", map="arena", goals=[[119, 59]], positions=[[101, 51], [108.5, 58]],
                               space="world")
    steps, remaining = next_steps(arena, [(9.5, 4.5)], 1, [(0.5, 0.5), (4.25, 4)])
    assert reply["steps"] == ((steps + 0.5) * 2 + [100, 50]).tolist()
    assert np.frombuffer(reply["remaining"], "<f4").tolist() == remaining.tolist()


def test_check_block(client, arena):
    points = [(0, 0), (9, 4), (5, 2)]
    reply = client.check_block("arena", rects=[(0, 1, 1, 4)], cells=[(5, 0)], points=points)
    assert reply["disconnected"] == [list(p) for p in check_block(arena, rects=[(0, 1, 1, 4)], cells=[(5, 0)],
                                                                   points=points)]
    assert client.check_block("arena", cells=[(9, 9)], points=points)["disconnected"] == []


def test_check_block_in_world_space_with_rects_alone(start_server, maps_dir):
    (maps_dir / "arena.json").write_text('{"origin": [100, 50], "cell_size": 2}')
    server = start_server()
    arena = server.registry.get("arena")
    points = [(0, 0), (9, 4), (5, 2)]
    with Client(server.endpoint, timeout=5, retries=1) as client:
        reply = client.check_block("arena", rects=[(100, 52, 2, 8)], points=[(101, 51), (119, 59), (111, 55)],
                                   space="world")
    assert reply["disconnected"] == [list(p) for p in check_block(arena, rects=[(0, 1, 1, 4)], points=points)]


def test_traversal_and_classes_on_an_uploaded_map(client):
    tags = np.zeros((3, 6), dtype=np.uint8)
    tags[:, 2:4] = 1
    client.put_map("river", np.ones((3, 6), dtype=bool), tags=tags, tag_names={"water": 1},
                   classes={"tank": {"water": None}, "boat": {"water": 1.0}})
    assert client.find_path("river", (0, 1), (5, 1), traversal="boat")["status"] == "found"
    assert client.find_path("river", (0, 1), (5, 1), traversal="tank")["status"] == "no_path"
    slow = client.find_path("river", (0, 1), (5, 1), traversal={"water": 4}, smooth="none")
    assert slow["cost"] == pytest.approx(1 + 4 + 4 + 1 + 1)
    assert len(client.reachable("river", (0, 1), 10, traversal="tank")["cells"]) == 6
    with pytest.raises(ServerError) as info:
        client.find_path("river", (0, 1), (5, 1), traversal="plane")
    assert (info.value.code, info.value.at) == ("invalid_request", "traversal")


@pytest.mark.parametrize("request_, code, at", [
    ({"op": "reachable", "start": [0, 0]}, "invalid_request", "budget"),
    ({"op": "reachable", "start": [0, 0], "budget": -1}, "invalid_request", "budget"),
    ({"op": "reachable", "start": [50, 0], "budget": 1}, "out_of_bounds", "start"),
    ({"op": "field", "goals": []}, "invalid_request", "goals"),
    ({"op": "field", "goals": [[0, 0]], "region": [8, 0, 5, 1]}, "out_of_bounds", "region"),
    ({"op": "next_steps", "goals": [[0, 0]], "positions": b"\0" * 12}, "invalid_request", "positions"),
    ({"op": "next_steps", "goals": [[0, 0]], "positions": [[0, float("nan")]]}, "non_finite", "positions[0][1]"),
    ({"op": "next_steps", "goals": [[0, 0]], "positions": [[0, 0]], "lookahead": "far"}, "invalid_request",
     "lookahead"),
    ({"op": "check_block", "points": [[0, 0]]}, "invalid_request", "rects"),
    ({"op": "check_block", "cells": [[0, 0]], "points": [[0, 0]], "max_climb": 1}, "invalid_request",
     "max_climb"),
    ({"op": "path", "start": [0, 0], "goal": [1, 1], "goals": [[2, 2]]}, "invalid_request", "goals"),
    ({"op": "path", "start": [0, 0], "goals": [[2, 2]], "avoid": [[1, 1]]}, "invalid_request", "avoid"),
    ({"op": "path", "start": [0, 0], "goals": [[2, 2]], "traversal": {"water": None}}, "invalid_request",
     "traversal.water"),
])
def test_bad_queries_get_an_error_with_at_and_change_nothing(client, arena, request_, code, at):
    fields = {key: value for key, value in request_.items() if key != "op"}
    with pytest.raises(ServerError) as info:
        client.request(request_["op"], map="arena", **fields)
    assert (info.value.code, info.value.at) == (code, at)
    assert client.maps()[0]["gen"] == arena.generation
    assert client.find_path("arena", (0, 0), (9, 4))["status"] == "found"


def test_the_async_client_has_the_same_queries(server, arena):
    async def main():
        async with AsyncClient(server.endpoint, timeout=5, retries=1) as client:
            return await asyncio.gather(
                client.find_path("arena", (0, 0), goals=[(9, 4)]),
                client.reachable("arena", (0, 0), 3),
                client.distance_field("arena", [(9, 4)]),
                client.next_steps("arena", [(9, 4)], 1, [(0, 0)]),
                client.check_block("arena", cells=[(1, 0)], points=[(0, 0), (9, 4)]),
            )

    path, reach, field, steer, cut = asyncio.run(asyncio.wait_for(main(), 20))
    assert path["goal_index"] == 0
    assert reach["cells"].tolist() == reachable(arena, (0, 0), 3).cells.tolist()
    assert np.array_equal(field["cost"], distance_field(arena, [(9, 4)]))
    assert np.array_equal(steer["steps"], next_steps(arena, [(9, 4)], 1, [(0, 0)])[0])
    assert cut["disconnected"] == [list(p) for p in check_block(arena, cells=[(1, 0)], points=[(0, 0), (9, 4)])]


@pytest.mark.parametrize("names, classes, at", [
    ({"water": 0}, None, "tag_names.water"),
    ({"water": 1, "lava": 1}, None, "tag_names"),
    ({"water": 1}, {"boat": {"sky": None}}, "classes.boat"),
    ({"water": 1}, {"boat": {"water": 0.5}}, "classes.boat.water"),
    ([1], None, "tag_names"),
])
def test_bad_tag_names_and_classes_are_refused_and_serve_nothing(client, names, classes, at):
    fields = {"map": "river", "width": 2, "height": 1, "cells": bytes([1, 1]), "tags": bytes([0, 1]),
              "tag_names": names}
    if classes is not None:
        fields["classes"] = classes
    with pytest.raises(ServerError) as info:
        client.request("put_map", **fields)
    assert (info.value.code, info.value.at) == ("invalid_request", at)
    assert "river" not in [entry["name"] for entry in client.maps()]


def test_get_map_returns_the_tag_names_and_classes(client):
    client.put_map("river", np.ones((1, 2), dtype=bool), tags=np.array([[0, 1]]), tag_names={"water": 1},
                   classes={"tank": {"water": None}})
    cells = client.get_map("river")
    assert cells.tag_names == {"water": 1} and cells.classes == {"tank": {"water": None}}
    assert cells.tags.tolist() == [[0, 1]]
    (entry,) = [entry for entry in client.maps() if entry["name"] == "river"]
    assert entry["tag_names"] == {"water": 1} and entry["classes"] == ["tank"]
