"""A map's layers on the wire (pathserver.protocol.cells): the encoding rules of put_map and
get_map, checked against the bytes written out by hand, and arrays -> bins -> arrays."""

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pathserver.errors import NonFiniteError, RequestError
from pathserver.protocol.cells import MAX_SIDE, MapCells, check_side


def f32(*values) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def test_cells_are_row_major_from_the_top_left_and_costs_override_them():
    cells = MapCells.from_wire(3, 2, bytes([1, 0, 2, 5, 1, 1]))
    assert cells.walkable.tolist() == [[True, False, True], [True, True, True]]
    assert cells.cost[0, 2] == 2.0 and cells.cost[1, 0] == 5.0
    exact = MapCells.from_wire(3, 2, bytes([1, 0, 2, 5, 1, 1]), costs=f32(1.5, math.nan, 2.25, 5, 1, 1))
    assert exact.cost[exact.walkable].tolist() == [1.5, 2.25, 5.0, 1.0, 1.0]  # NaN on a wall: ignored
    assert MapCells.from_wire(2, 1, bytes([1, 1])).cost is None  # every cost 1: uniform


def test_the_bytes_of_a_cost_are_rounded_halves_up_and_clamped():
    cost = np.array([[1.0, 1.49, 1.5, 2.5, 254.5, 255.0, 1000.0]])
    cells = MapCells(np.ones(cost.shape, dtype=bool), cost)
    assert cells.cells.tolist() == [[1, 1, 2, 3, 255, 255, 255]]
    wire = cells.to_wire()
    assert wire["cells"] == bytes([1, 1, 2, 3, 255, 255, 255])
    assert wire["costs"] == f32(*cost[0])


@pytest.mark.parametrize("cost, sent", [
    ([1.0, 2.0, 255.0], False),
    ([1.0, 2.5, 3.0], True),
    ([1.0, 256.0, 3.0], True),
])
def test_costs_go_on_the_wire_only_when_the_bytes_cannot_say_them(cost, sent):
    walkable = np.array([[True, True, True, False]])
    cells = MapCells(walkable, np.array([cost + [1.5]]))  # the wall's cost never counts
    assert ("costs" in cells.to_wire()) is sent
    assert "costs" in cells.to_wire(with_costs=True) and "costs" not in cells.to_wire(with_costs=False)
    if sent:
        assert cells.to_wire()["costs"][-4:] == f32(0.0)  # 0 on the wall


@pytest.mark.parametrize("fields, error, at", [
    ({"cells": None}, RequestError, "cells"),
    ({"cells": "\x01" * 6}, RequestError, "cells"),
    ({"cells": b"\x01" * 5}, RequestError, "cells"),
    ({"costs": 1.0}, RequestError, "costs"),
    ({"costs": f32(1, 1, 1, 1, 1)}, RequestError, "costs"),
    ({"costs": f32(1, 1, 1, 1, 1, math.inf)}, NonFiniteError, "costs"),
    ({"costs": f32(1, 1, 1, 0.99, 1, 1)}, RequestError, "costs"),
    ({"heights": f32(0, 0, 0, 0, 0, math.nan)}, NonFiniteError, "heights"),
    ({"tags": b"\x00" * 7}, RequestError, "tags"),
])
def test_every_refusal_names_its_layer(fields, error, at):
    layers = {"cells": b"\x01" * 6, **fields}
    with pytest.raises(error) as refused:
        MapCells.from_wire(3, 2, **layers)
    assert type(refused.value) is error and refused.value.at == at


@pytest.mark.parametrize("value, ok", [(1, True), (MAX_SIDE, True), (64.0, True), (0, False), (MAX_SIDE + 1, False),
                                       (2.5, False), (math.nan, False), (True, False), ("3", False), (None, False)])
def test_sides_are_ints_1_to_4096(value, ok):
    if ok:
        assert check_side(value, "width") == int(value)
    else:
        with pytest.raises(RequestError) as refused:
            check_side(value, "width")
        assert refused.value.at == "width"


sizes = st.integers(1, 12)


@settings(max_examples=200, deadline=None)
@given(st.data(), sizes, sizes, st.sampled_from(["bool", "bytes", "floats"]), st.booleans(), st.booleans())
def test_arrays_travel_there_and_back_unchanged(data, width, height, kind, with_heights, with_tags):
    """What the client sends is what get_map gives back: walkable cells, every walkable
    cell's cost (as float32), heights and tags."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    walkable = rng.random((height, width)) > 0.3
    if kind == "bool":
        array, cost = walkable, np.ones(walkable.shape)
    elif kind == "bytes":
        array = np.where(walkable, rng.integers(1, 256, size=walkable.shape), 0)
        cost = array.astype(float)
    else:
        cost = np.float32(1.0 + rng.random(walkable.shape) * 300.0).astype(float)
        array = np.where(walkable, cost, np.inf)
    heights = rng.normal(size=walkable.shape).astype(np.float32) if with_heights else None
    tags = rng.integers(0, 256, size=walkable.shape) if with_tags else None
    sent = MapCells.from_arrays(array, heights=heights, tags=tags)
    back = MapCells.from_wire(width, height, **sent.to_wire())
    assert np.array_equal(back.walkable, walkable)
    assert np.array_equal(back.cost_grid[walkable], cost[walkable])
    assert np.isinf(back.cost_grid[~walkable]).all()
    assert (back.heights is None) == (heights is None) and (back.tags is None) == (tags is None)
    if heights is not None:
        assert np.array_equal(back.heights, heights)
    if tags is not None:
        assert np.array_equal(back.tags, tags)
    assert back.to_wire() == sent.to_wire()
