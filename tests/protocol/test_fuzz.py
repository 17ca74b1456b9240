"""Garbage and near-miss requests through the real decode -> validate -> handle pipeline:
never an exception, always exactly one well-formed reply with a known code and no
traceback. (Short by default; the long runs belong to the reliability tests.)"""

import math
import struct

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pathserver.errors import WIRE_CODES
from pathserver.maps.registry import MapRegistry
from pathserver.server.handlers import respond

VALID = [
    {"id": 1, "op": "path", "map": "tiny", "start": [0, 0], "goal": [3, 2], "unit_size": 1, "smooth": "los"},
    {"id": 2, "op": "paths", "map": "tiny", "requests": [{"start": [0, 0], "goal": [3, 0]}]},
    {"id": 3, "op": "update", "map": "tiny", "rects": [[1, 1, 1, 1]], "solid": True},
    {"id": 4, "op": "maps"},
    {"id": 5, "op": "ping"},
    {"id": 6, "op": "path", "map": "tiny", "start": [0, 0], "goals": [[3, 2], [0, 2]], "avoid": {"cells": [[2, 1]]},
     "avoid_cost": 3, "traversal": {}},
    {"id": 7, "op": "reachable", "map": "tiny", "start": [0, 0], "budget": 3, "avoid": {"rects": [[2, 0, 1, 2]]}},
    {"id": 8, "op": "field", "map": "tiny", "goals": [[3, 2]], "region": [0, 0, 2, 2], "max_cost": 5},
    {"id": 9, "op": "next_steps", "map": "tiny", "goals": [[3, 2]], "positions": bytes(8), "lookahead": "los"},
    {"id": 10, "op": "next_steps", "map": "tiny", "goals": [[3, 2]], "positions": [[0.5, 0.5]], "space": "world"},
    {"id": 11, "op": "check_block", "map": "tiny", "cells": [[2, 1]], "rects": [[0, 1, 1, 1]],
     "points": [[0, 0], [3, 2]]},
    # Packed answers, and a packed batch (starts and goals as bins of pairs).
    {"id": 12, "op": "path", "map": "tiny", "start": [0, 0], "goal": [3, 2], "packed": True, "space": "world"},
    {"id": 13, "op": "paths", "map": "tiny", "packed": True, "requests": [{"start": [0, 0], "goal": [3, 0]}]},
    {"id": 14, "op": "paths", "map": "tiny", "packed": True, "smooth": "none",
     "starts": struct.pack("<4i", 0, 0, 3, 0), "goals": struct.pack("<4i", 3, 2, 0, 2)},
    {"id": 15, "op": "paths", "map": "tiny", "space": "world", "starts": struct.pack("<2f", 0.5, 0.5),
     "goals": struct.pack("<2f", 3.5, 2.5)},
]

values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    folder = tmp_path_factory.mktemp("maps")
    (folder / "tiny.map").write_text("type octile\nheight 3\nwidth 4\nmap\n....\n.@..\n....\n")
    registry = MapRegistry(folder)
    registry.load_all()
    return registry


def check(body: bytes, registry) -> dict:
    reply = msgpack.unpackb(respond(body, registry), strict_map_key=False)
    assert list(reply)[:2] == ["id", "ok"]
    if not reply["ok"]:
        assert reply["error"]["code"] in WIRE_CODES
        assert reply["error"]["code"] != "internal", reply
        assert "Traceback" not in reply["error"]["message"]
    return reply


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=64))
def test_random_bytes(registry, body):
    check(body, registry)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(VALID), st.text(max_size=12), values)
def test_mutated_requests(registry, request_, key, value):
    mutated = dict(request_)
    target = mutated
    if key and key[0] in "rs" and "requests" in mutated:
        target = mutated["requests"][0] = dict(mutated["requests"][0])
        key = key[1:] or "start"
    target[key if key else "goal"] = value
    reply = check(msgpack.packb(mutated, use_bin_type=True), registry)
    if key != "id":
        assert reply["id"] == request_["id"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), values)
def test_each_field_of_each_request_mutated(registry, data, value):
    """Every field a valid request has, replaced by any value (the new ops' fields too)."""
    request_ = dict(data.draw(st.sampled_from(VALID)))
    key = data.draw(st.sampled_from(sorted(set(request_) - {"id"})))
    request_[key] = value
    reply = check(msgpack.packb(request_, use_bin_type=True), registry)
    assert reply["id"] == request_["id"]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 2**64 - 1, -(2**63), 1e308, -1e308])
def test_extreme_numbers_in_the_queries(registry, value):
    for request_ in VALID[5:]:
        for key, field in request_.items():
            if type(field) is list and field and type(field[0]) is list:
                check(msgpack.packb({**request_, key: [[value] * len(field[0])]}), registry)
            elif type(field) in (int, float) and key != "id":
                check(msgpack.packb({**request_, key: value}), registry)
            elif type(field) is dict:
                for part, rows in field.items():
                    check(msgpack.packb({**request_, key: {part: [[value] * len(rows[0])]}}), registry)
    positions = struct.pack("<2f", value if abs(value) < 1e39 else math.inf, 0.0)
    check(msgpack.packb({**VALID[8], "positions": positions}), registry)
    # A packed batch's points: float32 in world space, int32 (clamped to its range) in grid space.
    check(msgpack.packb({**VALID[14], "starts": positions}), registry)
    cell = int(min(max(value, -(2**31)), 2**31 - 1)) if math.isfinite(value) else -(2**31)
    check(msgpack.packb({**VALID[13], "starts": struct.pack("<4i", cell, 0, 0, cell)}), registry)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 2**64 - 1, -(2**63), 1e308, -1e308])
def test_extreme_numbers_everywhere(registry, value):
    for field in ("start", "goal"):
        for index in (0, 1):
            request_ = dict(VALID[0])
            point = list(request_[field])
            point[index] = value
            request_[field] = point
            check(msgpack.packb(request_), registry)
    world = {**VALID[0], "space": "world", "start": [value, 0.0]}
    check(msgpack.packb(world), registry)
    check(msgpack.packb({"id": 9, "op": "update", "map": "tiny", "rects": [[0, 0, value, value]], "solid": True}),
          registry)
