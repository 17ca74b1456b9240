"""Hex maps over the wire: put_map's ``shape`` / ``layout``, get_map's round trip, every
query op answering on a hex map as the same GridMap does in process, world space on hex
centres (pathserver.hexes, pinned to Godot's map_to_local in tests/test_hexes.py), and bad
shapes and layouts refused with a code and ``at``."""

import numpy as np
import pytest

from pathserver import GridMap, find_path
from pathserver.client import Client, ServerError
from pathserver.hexes import LAYOUTS, cell_at, world_centre


@pytest.fixture
def client(server):
    with Client(server.endpoint, timeout=5.0) as made:
        yield made


def hex_map(rng, layout, width=17, height=13):
    walkable = rng.random((height, width)) > 0.2
    cost = np.where(rng.random((height, width)) < 0.3, 4.0, 1.0)
    return walkable, cost, GridMap(walkable, cost, shape="hex", layout=layout)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_uploaded_hex_map_answers_as_in_process(client, layout):
    rng = np.random.default_rng(LAYOUTS.index(layout))
    walkable, cost, local = hex_map(rng, layout)
    costs = np.where(walkable, cost, np.inf)
    reply = client.put_map("hex", costs, shape="hex", layout=layout, cell_size=(32, 28), origin=(10, 20))
    assert reply["gen"] >= 0
    cells = np.argwhere(walkable)
    for _ in range(10):
        (sy, sx), (gy, gx) = cells[rng.choice(len(cells), 2, replace=False)]
        start, goal = (int(sx), int(sy)), (int(gx), int(gy))
        expected = find_path(local, start, goal, smooth="none")
        got = client.find_path("hex", start, goal, smooth="none")
        assert got["status"] == expected.status
        if expected.found:
            assert got["cost"] == pytest.approx(expected.cost, rel=1e-6)
            assert got["path"] == expected.path.tolist()
    # World space: hex centres as Godot places them, and points to the hexagon holding them.
    (sy, sx), (gy, gx) = cells[0], cells[-1]
    start_world = world_centre(layout, int(sx), int(sy), (10, 20), (32, 28))
    goal_world = world_centre(layout, int(gx), int(gy), (10, 20), (32, 28))
    got = client.find_path("hex", (start_world[0] + 3, start_world[1] - 2), goal_world, smooth="none", space="world")
    expected = find_path(local, (int(sx), int(sy)), (int(gx), int(gy)), smooth="none")
    assert got["status"] == expected.status
    if expected.found:
        points = np.asarray(got["path"], dtype=np.float64)
        x, y = cell_at(layout, points[:, 0], points[:, 1], (10, 20), (32, 28))
        assert np.column_stack((x, y)).tolist() == expected.path.tolist()
    # get_map gives back what was sent.
    back = client.get_map("hex")
    assert back.shape == "hex" and back.layout == layout and tuple(back.cell_size) == (32.0, 28.0)
    assert np.array_equal(back.walkable, walkable)


def test_hex_queries_over_the_wire(client):
    rng = np.random.default_rng(7)
    walkable, cost, local = hex_map(rng, "even-q")
    client.put_map("hexq", np.where(walkable, cost, np.inf), shape="hex", layout="even-q")
    cells = np.argwhere(walkable)
    start = (int(cells[0][1]), int(cells[0][0]))
    goals = [(int(x), int(y)) for y, x in cells[-3:]]
    reply = client.request("reachable", map="hexq", start=list(start), budget=5.0)
    from pathserver.grid.queries import distance_field, reachable
    expected = reachable(local, start, 5.0)
    got = np.frombuffer(reply["cells"], dtype="<i4").reshape(-1, 2)
    assert {tuple(c) for c in got.tolist()} == {tuple(c) for c in expected.cells.tolist()}
    # The same range asked in world space, from a point inside the start's hexagon.
    centre = world_centre("even-q", *start)
    reply = client.request("reachable", map="hexq", start=[centre[0] + 0.2, centre[1] - 0.1], budget=5.0,
                           space="world")
    assert np.frombuffer(reply["cells"], dtype="<i4").reshape(-1, 2).tolist() == got.tolist()
    reply = client.request("field", map="hexq", goals=[list(g) for g in goals])
    field = np.frombuffer(reply["cost"], dtype="<f4").reshape(local.height, local.width)
    assert np.array_equal(field, distance_field(local, goals), equal_nan=True)
    reply = client.request("path", map="hexq", start=list(start), goals=[list(g) for g in goals], smooth="none")
    assert reply["cost"] == pytest.approx(find_path(local, start, goals=goals, smooth="none").cost, rel=1e-6)


@pytest.mark.parametrize("fields, at", [
    ({"shape": "hex"}, "layout"),
    ({"shape": "hex", "layout": "odd-x"}, "layout"),
    ({"shape": "round"}, "shape"),
    ({"layout": "odd-r"}, "layout"),
    ({"shape": "hex", "layout": "odd-r", "cell_size": [1, -2]}, "cell_size"),
])
def test_bad_shapes_and_layouts_are_refused(client, fields, at):
    with pytest.raises(ServerError) as error:
        client.request("put_map", map="bad", width=2, height=2, cells=b"\x01\x01\x01\x01", **fields)
    assert error.value.at == at
    with pytest.raises(ServerError):
        client.get_map("bad")


def test_square_only_options_are_refused_on_hex_maps(client):
    client.put_map("hex1", np.ones((6, 6), bool), shape="hex", layout="odd-r")
    with pytest.raises(ServerError) as error:
        client.find_path("hex1", (0, 0), (5, 5), diagonal="never")
    assert error.value.at == "diagonal"
    with pytest.raises(ServerError) as error:
        client.find_path("hex1", (0, 0), (5, 5), algorithm="jps")
    assert error.value.at == "algorithm"
    with pytest.raises(ServerError) as error:
        client.find_path("hex1", (2, 2), (3, 3), unit_size=[1, 2])
    assert error.value.at == "unit_size"
