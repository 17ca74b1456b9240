"""Packed answers say exactly what the plain ones say: on random maps, in grid and world
space, a ``path`` with ``packed: true``, a ``paths`` batch with ``packed: true``, and a batch
sent as ``starts`` / ``goals`` bins (answered plain or packed) are compared with the plain
forms of the same requests, through the whole read -> handle -> encode pipeline."""

import random

import msgpack
import numpy as np
import pytest

from pathserver.maps.registry import MapRegistry
from pathserver.protocol.codec import encode
from pathserver.protocol.packed import STATUS_CODES, STATUSES, PackedPaths, batch_fields, markdown_table
from pathserver.protocol.replies import PathAnswer
from pathserver.server.handlers import respond

SEEDS = range(6)
POINT_DTYPES = {"grid": "<i4", "world": "<f4"}


def ask(registry, request: dict) -> dict:
    return msgpack.unpackb(respond(encode(request), registry), strict_map_key=False)


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    registry = MapRegistry(tmp_path_factory.mktemp("maps"))
    registry.load_all()
    return registry


def random_map(registry, seed: int) -> dict:
    """Upload a random map (walls, terrain costs on some, a world transform); returns what
    the requests on it need: its name, size, origin and cell size."""
    rng = np.random.default_rng(seed)
    width, height = int(rng.integers(6, 24)), int(rng.integers(6, 24))
    cells = rng.choice([0, 1, 1, 1, 2, 5], size=(height, width)) if seed % 2 else \
        rng.choice([0, 1, 1, 1], size=(height, width))
    origin = [float(rng.integers(-8, 8)) * 0.5, float(rng.integers(-8, 8)) * 0.25]
    cell_size = float(rng.choice([0.5, 1.0, 2.0, 32.0]))
    name = f"random-{seed}"
    reply = ask(registry, {"id": 1, "op": "put_map", "map": name, "width": width, "height": height,
                           "cells": cells.astype(np.uint8).tobytes(), "origin": origin, "cell_size": cell_size})
    assert reply["ok"], reply
    return {"name": name, "width": width, "height": height, "origin": np.array(origin), "cell_size": cell_size}


def random_ends(world: dict, rng: random.Random, count: int, space: str) -> tuple[np.ndarray, np.ndarray]:
    """``count`` starts and goals, a few off the map, as the packed bins' dtype holds them."""
    def one():
        x = rng.randrange(-1, world["width"] + 1)
        y = rng.randrange(-1, world["height"] + 1)
        if space == "grid":
            return [x, y]
        return list((np.array([x, y]) + rng.random()) * world["cell_size"] + world["origin"])

    ends = np.array([[one(), one()] for _ in range(count)], dtype=POINT_DTYPES[space])
    return ends[:, 0], ends[:, 1]


def options(rng: random.Random) -> dict:
    chosen = {"smooth": rng.choice(["los", "corners", "none"]), "allow_partial": rng.random() < 0.3,
              "unit_size": rng.choice([1, 1, 2, [1, 2]])}
    if rng.random() < 0.2:
        chosen["snap"] = False
    return chosen


def plain_point(value):
    """A packed point as the plain request would send it (the same number)."""
    return [int(v) for v in value] if value.dtype.kind == "i" else [float(v) for v in value]


@pytest.mark.parametrize("space", ["grid", "world"])
@pytest.mark.parametrize("seed", SEEDS)
def test_a_packed_path_is_the_plain_path(registry, seed, space):
    world = random_map(registry, seed)
    rng = random.Random(seed)
    starts, goals = random_ends(world, rng, 12, space)
    for start, goal in zip(starts, goals):
        request = {"id": 7, "op": "path", "map": world["name"], "start": plain_point(start),
                   "goal": plain_point(goal), "space": space, **options(rng)}
        plain = ask(registry, request)
        packed = ask(registry, {**request, "packed": True})
        if not plain["ok"]:
            assert packed == plain
            continue
        points = np.frombuffer(packed.pop("path"), POINT_DTYPES[space]).reshape(-1, 2)
        assert points.tolist() == np.array(plain.pop("path"), dtype=POINT_DTYPES[space]).reshape(-1, 2).tolist()
        assert packed == plain


def columns_of(results: list, space: str) -> tuple:
    """What the packed columns of a batch must hold, from a plain reply's ``results``."""
    status, cost, count, points, errors = [], [], [], [], {}
    for i, entry in enumerate(results):
        if entry["ok"]:
            status.append(STATUS_CODES[entry["status"]])
            cost.append(entry["cost"])
            count.append(len(entry["path"]))
            points.extend(entry["path"])
        else:
            status.append(STATUS_CODES["error"])
            cost.append(0.0)
            count.append(0)
            errors[i] = entry["error"]
    dtype = POINT_DTYPES[space]
    return (status, np.array(cost, "<f4").tolist(), count, np.array(points, dtype).reshape(-1, 2).tolist(), errors)


def read_columns(reply: dict, space: str) -> tuple:
    answer = PackedPaths.from_reply(reply, space)
    return (answer.status.tolist(), answer.cost.tolist(), answer.count.tolist(), answer.points.tolist(),
            answer.errors)


@pytest.mark.parametrize("space", ["grid", "world"])
@pytest.mark.parametrize("seed", SEEDS)
def test_a_packed_batch_is_the_plain_batch(registry, seed, space):
    world = random_map(registry, seed)
    rng = random.Random(100 + seed)
    starts, goals = random_ends(world, rng, 40, space)
    shared = options(rng)
    entries = [{"start": plain_point(s), "goal": plain_point(g)} for s, g in zip(starts, goals)]
    request = {"id": 8, "op": "paths", "map": world["name"], "space": space, **shared, "requests": entries}
    plain = ask(registry, request)
    assert plain["ok"], plain
    expected = columns_of(plain["results"], space)

    packed = ask(registry, {**request, "packed": True})
    assert [key for key in packed if key not in ("status", "cost", "count", "points", "errors")] == \
        ["id", "ok", "gen"]
    assert packed["gen"] == plain["gen"]
    assert read_columns(packed, space) == expected

    # The same entries as starts and goals bins: the same answers, errors pointing at the bins.
    columns = {"id": 9, "op": "paths", "map": world["name"], "space": space, **shared,
               "starts": starts.tobytes(), "goals": goals.tobytes()}
    renamed = {i: {**error, "at": error["at"].replace(f"requests[{i}].start", f"starts[{i}]")
                   .replace(f"requests[{i}].goal", f"goals[{i}]")} for i, error in expected[4].items()}
    assert read_columns(ask(registry, {**columns, "packed": True}), space) == (*expected[:4], renamed)
    plain_columns = ask(registry, columns)["results"]
    for i, (entry, reference) in enumerate(zip(plain_columns, plain["results"])):
        assert entry == (reference if reference["ok"] else {"ok": False, "error": renamed[i]})


def test_the_columns_split_into_each_entrys_path():
    found = PathAnswer("found", np.array([[0, 0], [1, 1], [2, 1]], np.int32), 2.4, 2.4, 3, [0, 0], [2, 1],
                       False, False, 4)
    none = PathAnswer("no_path", np.empty((0, 2), np.int32), 0.0, 0.0, 9, [0, 0], [5, 5], False, False, 4)
    partial = PathAnswer("partial", np.array([[3, 3], [4, 3]], np.int32), 1.0, 1.0, 2, [3, 3], [4, 3],
                         False, False, 4)
    error = {"code": "out_of_bounds", "message": "...", "at": "goals[1]"}
    fields = batch_fields([found, error, none, partial], "grid")
    answer = PackedPaths.from_reply({"gen": 4, **msgpack.unpackb(msgpack.packb(fields), strict_map_key=False)})
    assert len(answer) == 4 and answer.gen == 4
    assert answer.statuses == ["found", "error", "no_path", "partial"]
    assert answer.offsets.tolist() == [0, 3, 3, 3, 5]
    assert [path.tolist() for path in answer.paths()] == [found.path.tolist(), [], [], partial.path.tolist()]
    assert answer.path(3).tolist() == [[3, 3], [4, 3]]
    assert answer.errors == {1: error}
    assert answer.cost.dtype == np.float32 and answer.points.dtype == np.int32


def test_columns_that_do_not_agree_are_refused():
    fields = batch_fields([PathAnswer("found", np.zeros((2, 2), np.int32), 1.0, 1.0, 1, [0, 0], [0, 0],
                                      False, False, 1)], "grid")
    with pytest.raises(ValueError, match="counts add up"):
        PackedPaths.from_reply({**fields, "points": fields["points"][:8]})
    with pytest.raises(ValueError, match="statuses"):
        PackedPaths.from_reply({**fields, "status": b"\x00\x00"})


def test_the_status_codes_are_the_path_statuses_then_error():
    assert STATUSES == ("found", "partial", "no_path", "error")
    assert markdown_table().splitlines()[2:] == [f"| `{i}` | `{name}` |" for i, name in enumerate(STATUSES)]
