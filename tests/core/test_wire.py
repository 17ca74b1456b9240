"""The compiled path encoder writes exactly msgpack-python's bytes for ``points.tolist()``,
and ``encode`` splices its output into a reply unchanged."""

import math

import msgpack
import numpy as np
import pytest

from pathserver.core import wire
from pathserver.core.wire import pack_float_points, pack_int_points, packed_points_bound
from pathserver.protocol.codec import Packed, encode
from pathserver.protocol.replies import PACK_MIN_POINTS, PathAnswer, PathReplies

# Every boundary between int encodings, both signs.
EDGES = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**31 - 1, -1, -32, -33, -128, -129, -32768, -32769, -(2**31)]


def kernel_bytes(points: np.ndarray) -> bytes:
    out = np.empty(packed_points_bound(points.shape[0]), dtype=np.uint8)
    if points.dtype == np.float64:
        size = pack_float_points(points.view(np.uint64), out)
    else:
        size = pack_int_points(points, out)
    return out[:size].tobytes()


@pytest.mark.parametrize("n", [0, 1, 15, 16, 300, 65535, 65536])
def test_int_points_match_msgpack(n):
    rng = np.random.default_rng(n)
    points = rng.choice(EDGES + list(range(-40, 300)), size=(n, 2)).astype(np.int32)
    assert kernel_bytes(points) == msgpack.packb(points.tolist())


def test_every_int_edge_matches_msgpack():
    points = np.array([[a, b] for a in EDGES for b in EDGES], dtype=np.int32)
    assert kernel_bytes(points) == msgpack.packb(points.tolist())


@pytest.mark.parametrize("n", [0, 3, 16, 1000])
def test_float_points_match_msgpack(n):
    rng = np.random.default_rng(n)
    points = (rng.random((n, 2)) - 0.5) * 10.0 ** rng.integers(-3, 9, size=(n, 2))
    if n:
        points[0] = [-0.0, math.inf]
        points[-1] = [math.nan, 5e-324]
    assert kernel_bytes(points) == msgpack.packb(points.tolist())


def test_encode_splices_packed_values_in_order():
    paths = [np.arange(2 * k, dtype=np.int32).reshape(k, 2) for k in (70, 1, 500)]
    reply = {"id": "\xd8\x7f looks like a token", "ok": True,
             "results": [{"path": Packed(kernel_bytes(p)), "n": len(p)} for p in paths]}
    plain = {**reply, "results": [{"path": p.tolist(), "n": len(p)} for p in paths]}
    assert encode(reply) == msgpack.packb(plain)
    # A memoryview works as well as bytes, and the next reply starts clean.
    assert encode({"path": Packed(memoryview(kernel_bytes(paths[0])))}) == msgpack.packb({"path": paths[0].tolist()})
    assert encode({"id": 1}) == msgpack.packb({"id": 1})


def test_a_failed_encode_leaves_no_packed_value_behind():
    with pytest.raises(TypeError):
        encode({"path": Packed(b"\x90"), "bad": object()})
    assert encode({"path": Packed(b"\x91\x01")}) == msgpack.packb({"path": [1]})


@pytest.mark.parametrize("n", [1, PACK_MIN_POINTS - 1, PACK_MIN_POINTS, 1000])
@pytest.mark.parametrize("space", ["grid", "world"])
def test_path_replies_are_the_same_bytes_with_the_kernels_or_without(n, space):
    rng = np.random.default_rng(n)
    cells = rng.integers(-40, 70000, size=(n, 2)).astype(np.int32)
    path = (cells + 0.5) * 0.25 - 3.0 if space == "world" else cells
    answer = PathAnswer(status="found", path=path, cost=12.5, length=11.0, expanded=7, start=path[0].tolist(),
                        goal=path[-1].tolist(), start_snapped=False, goal_snapped=True, gen=3)
    fast, plain = PathReplies(wire), PathReplies()
    assert fast.encode(5, answer) == plain.encode(5, answer) == msgpack.packb({
        "id": 5, "ok": True, "status": "found", "path": path.tolist(), "cost": 12.5, "length": 11.0, "expanded": 7,
        "start": path[0].tolist(), "goal": path[-1].tolist(), "start_snapped": False, "goal_snapped": True, "gen": 3,
    })
    assert encode({"results": [fast.entry(answer)]}) == encode({"results": [plain.entry(answer)]})
    assert isinstance(fast.reply(5, answer)["path"], Packed) == (n >= PACK_MIN_POINTS)


class OneMap:
    """A registry serving one map under any name."""

    def __init__(self, gridmap):
        self.gridmap = gridmap

    def get(self, name):
        return self.gridmap


def test_long_paths_come_over_the_wire_as_plain_arrays():
    from pathserver import GridMap, find_path
    from pathserver.protocol.replies import PACK_MIN_POINTS
    from pathserver.server.handlers import respond

    gridmap = GridMap(np.ones((8, 200), dtype=bool), origin=(-3.0, 10.0), cell_size=0.25)
    cells = find_path(gridmap, (0, 0), (199, 7)).path
    assert len(cells) >= PACK_MIN_POINTS
    world = ((cells + 0.5) * 0.25 + np.array([-3.0, 10.0])).tolist()
    request = {"id": 9, "op": "path", "map": "m", "start": [0, 0], "goal": [199, 7], "smooth": "none"}
    grid_reply = msgpack.unpackb(respond(msgpack.packb(request), OneMap(gridmap)))
    assert grid_reply["ok"] and grid_reply["path"] == cells.tolist()
    world_request = {**request, "space": "world", "start": [-2.875, 10.125], "goal": [46.875, 11.875]}
    world_reply = msgpack.unpackb(respond(msgpack.packb(world_request), OneMap(gridmap)))
    assert world_reply["ok"] and world_reply["path"] == world
    batch = {"id": 10, "op": "paths", "map": "m", "smooth": "none",
             "requests": [{"start": [0, 0], "goal": [199, 7]}, {"start": [0, 0], "goal": [1, 0]}]}
    batch_reply = msgpack.unpackb(respond(msgpack.packb(batch), OneMap(gridmap)))
    assert [r["path"] for r in batch_reply["results"]] == [cells.tolist(), [[0, 0], [1, 0]]]
