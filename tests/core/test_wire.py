"""The compiled path encoder writes exactly msgpack-python's bytes for ``points.tolist()``,
and ``encode`` splices its output into a reply unchanged."""

import math
import time

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


# -- reading avoid.cells sent as [x, y] pairs ----------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pathserver.core.wire import PAIRS_FOUND, PAIRS_NONE, avoid_pairs  # noqa: E402
from pathserver.protocol.codec import DEFAULT_LIMITS, Limits, decode_map  # noqa: E402
from pathserver.protocol.reading import PAIRS_FROM_BYTES  # noqa: E402
from pathserver.server.handlers import BODIES  # noqa: E402

_NUMBERS = (int, float)


def _pairs_list(hook_value):
    """A decoded ``object_pairs_hook`` map as its list of (key, value), else None."""
    return hook_value if type(hook_value) is list and all(type(p) is tuple for p in hook_value) else None


def reference_pairs(body: bytes, max_rows: int):
    """The slow, plain reading: msgpack with every map kept as its list of entries
    (duplicates too), then the rule of avoid_pairs checked step by step. The float64
    rows, or None (also for a body msgpack refuses as a whole: see kernel_pairs)."""
    if type(_loose_unpack(body)) is tuple:
        return None
    try:
        top = msgpack.unpackb(body, object_pairs_hook=lambda entries: [tuple(e) for e in entries], raw=False,
                              unicode_errors="surrogateescape", strict_map_key=False, use_list=True)
    except Exception:  # noqa: BLE001 - any failure: not plainly so
        return None
    if type(top) is not list or (top and _pairs_list(top) is None) or not top and body[:1] not in (b"\x80",):
        return None
    entries = top
    if any(type(key) is not str for key, _ in entries):
        return None
    avoids = [value for key, value in entries if key == "avoid"]
    if len(avoids) != 1:
        return None
    inner = avoids[0]
    if type(inner) is not list or (inner and _pairs_list(inner) is None):
        return None
    if any(type(key) is not str for key, _ in inner):
        return None
    cells = [value for key, value in inner if key == "cells"]
    if len(cells) != 1 or type(cells[0]) is not list or len(cells[0]) > max_rows:
        return None
    rows = cells[0]
    for row in rows:
        # A two-number array; an empty map decodes as [] too, and is no pair.
        if type(row) is not list or len(row) != 2 or any(type(v) not in _NUMBERS for v in row):
            return None
        if any(type(v) is float and not math.isfinite(v) for v in row):
            return None
    return np.array(rows, dtype=np.float64).reshape(-1, 2)


def _loose_unpack(body: bytes):
    """msgpack's reading of ``body`` as the reference takes it, or the error it raises
    (its type and message)."""
    try:
        return msgpack.unpackb(body, raw=False, strict_map_key=False, unicode_errors="surrogateescape")
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc)


def kernel_pairs(body: bytes, max_rows: int):
    """avoid_pairs' rows, or None; checks that its place in ``info`` is the array's. The
    kernel walks headers only: in a body msgpack refuses elsewhere (an ext code past 127,
    say) it may find the pairs, and then msgpack refuses the body with nil in their place
    just as it refuses the body itself: that counts as None."""
    out = np.empty((max(len(body) // 3, 1), 2), dtype=np.float64)
    info = np.zeros(3, dtype=np.int64)
    status = avoid_pairs(np.frombuffer(body, dtype=np.uint8), max_rows, out, info)
    assert status in (PAIRS_FOUND, PAIRS_NONE)
    if status == PAIRS_NONE:
        return None
    start, end, count = info.tolist()
    # Nil in the array's place leaves the rest of the body as it was.
    spliced = _loose_unpack(body[:start] + b"\xc0" + body[end:])
    if type(spliced) is tuple:
        assert spliced == _loose_unpack(body)
        return None
    assert spliced["avoid"]["cells"] is None
    return out[:count].copy()


def same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and np.array_equal(a, b)


def body_of(obj, single_float=False) -> bytes:
    """``obj`` as msgpack, its floats as float32 if asked and they all fit."""
    try:
        return msgpack.packb(obj, use_single_float=single_float)
    except OverflowError:
        return msgpack.packb(obj)


def test_pairs_of_every_number_encoding_read_exactly():
    values = EDGES + [2**31, 2**32, 2**63 - 1, -(2**63), 2**64 - 1, 0.5, -1e300, 5e-324, -0.0, 1.5e38]
    cells = [[a, b] for a in values for b in (3, -7.25, 2**40)]
    small = [[a, b] for a in EDGES + [0.5, -0.0, 1.5e38, 1e-40] for b in (3, -7.25)]  # float32 holds these
    for single, cells in ((False, cells), (True, small)):
        body = msgpack.packb({"op": "path", "avoid": {"cells": cells}}, use_single_float=single)
        expected = reference_pairs(body, 1 << 17)
        assert expected is not None and same(kernel_pairs(body, 1 << 17), expected)
        sent = [[float(np.float32(v)) if single and type(v) is float else v for v in row] for row in cells]
        assert np.array_equal(expected, np.array(sent, dtype=np.float64))


@pytest.mark.parametrize("avoid", [
    {"cells": [[1, 2], [3, True]]},  # a bool is no number
    {"cells": [[1, 2], [3, None]]},
    {"cells": [[1, 2], [3, 4, 5]]},
    {"cells": [[1, 2], [3]]},
    {"cells": [[1, 2], "ab"]},
    {"cells": [[1, 2], [3, math.nan]]},
    {"cells": [[1, 2], [math.inf, 0]]},
    {"cells": [[1, 2], {"x": 1, "y": 2}]},
    {"cells": b"\x01\x00\x00\x00\x02\x00\x00\x00"},  # the bin: msgpack's own
    {"rects": [[1, 2, 3, 4]]},
    [[1, 2]],
    {1: [[1, 2]], "cells": [[1, 2]]},  # a key that is no string
])
def test_what_is_not_plainly_pairs_is_left_to_msgpack(avoid):
    body = body_of({"op": "path", "avoid": avoid, "pad": "x" * 300})
    assert reference_pairs(body, 1 << 17) is None
    assert kernel_pairs(body, 1 << 17) is None


def test_duplicate_keys_trailing_bytes_and_too_many_rows_are_left_to_msgpack():
    cells = msgpack.packb([[1, 2], [3, 4]])
    # {"avoid": {...}, "avoid": {...}} and {"avoid": {"cells": ..., "cells": ...}}, written by hand.
    twice = b"\x82\xa5avoid\x81\xa5cells" + cells + b"\xa5avoid\x81\xa5cells" + cells
    inner_twice = b"\x81\xa5avoid\x82\xa5cells" + cells + b"\xa5cells" + cells
    good = b"\x81\xa5avoid\x81\xa5cells" + cells
    for body in (twice, inner_twice, good + b"\x00", good[:-1]):
        assert reference_pairs(body, 100) is None
        assert kernel_pairs(body, 100) is None
    assert same(kernel_pairs(good, 100), np.array([[1, 2], [3, 4]], dtype=np.float64))
    assert kernel_pairs(good, 1) is None and reference_pairs(good, 1) is None
    # A top-level key as a bin, not a string.
    assert kernel_pairs(b"\x81\xc4\x05avoid\x81\xa5cells" + cells, 100) is None


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=True),
                     st.text(max_size=6), st.binary(max_size=6))
_numbers = st.one_of(st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=False, allow_infinity=False),
                     st.sampled_from(EDGES))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                       max_leaves=12)
_rows = st.lists(st.one_of(st.lists(_numbers, min_size=2, max_size=2), _values), max_size=40)
_avoid = st.one_of(st.fixed_dictionaries({"cells": _rows}, optional={"rects": _values, "x": _values}), _values)
_bodies = st.builds(lambda head, avoid, tail: {**head, "avoid": avoid, **tail},
                    st.dictionaries(st.sampled_from(["op", "id", "map", "start"]), _values, max_size=3), _avoid,
                    st.dictionaries(st.text(max_size=5).filter(lambda k: k != "avoid"), _values, max_size=3))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_bodies, st.booleans(), st.data())
def test_random_bodies_and_their_mutations_read_as_the_reference_says(obj, single, data):
    body = body_of(obj, single)
    assert same(kernel_pairs(body, 1 << 17), reference_pairs(body, 1 << 17))
    # Cut short, or a byte changed: never a read past the body, the same answer.
    cut = data.draw(st.integers(0, len(body)))
    at = data.draw(st.integers(0, len(body) - 1))
    changed = body[:at] + bytes([data.draw(st.integers(0, 255))]) + body[at + 1:]
    for mutant in (body[:cut], changed):
        if mutant:
            assert same(kernel_pairs(mutant, 1 << 17), reference_pairs(mutant, 1 << 17))


def plain_decode(body: bytes, limits: Limits = DEFAULT_LIMITS):
    """decode_map's answer (or its error), avoid's cells as float64 rows where
    BODIES.decode reads them."""
    try:
        return decode_map(body, limits)
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc)


def fast_decode(body: bytes, limits: Limits = DEFAULT_LIMITS):
    try:
        return BODIES.decode(body, limits)
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc)


def same_decoding(fast, plain) -> bool:
    """Whether two decodings are the same (NaNs too: compared as msgpack bytes), a
    float64 array of avoid's cells being the pairs it holds."""
    if type(plain) is tuple:
        return fast == plain
    if type(fast) is not dict:
        return False
    cells = fast["avoid"].get("cells") if type(fast.get("avoid")) is dict else None
    if isinstance(cells, np.ndarray):
        assert not cells.flags.writeable
        expected = np.array(plain["avoid"]["cells"], dtype=np.float64).reshape(-1, 2)
        if not np.array_equal(cells, expected):
            return False
        fast = {**fast, "avoid": {**fast["avoid"], "cells": None}}
        plain = {**plain, "avoid": {**plain["avoid"], "cells": None}}
    return msgpack.packb(fast) == msgpack.packb(plain)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_bodies, st.booleans(), st.integers(0, 400))
def test_the_server_decodes_bodies_as_msgpack_does(obj, single, pad):
    body = body_of({**obj, "pad": "p" * pad}, single)
    assert same_decoding(fast_decode(body), plain_decode(body))
    # Tighter limits than the body's: the same refusal either way.
    for limits in (Limits(max_array_len=3), Limits(max_request_bytes=len(body) - 1), Limits(max_depth=3),
                   Limits(max_map_len=2)):
        assert same_decoding(fast_decode(body, limits), plain_decode(body, limits))


def test_the_server_reads_200_plain_pairs_with_the_kernel():
    cells = [[x, 2 * x + 1] for x in range(200)]
    body = body_of({"op": "path", "id": 1, "map": "m", "start": [0, 0], "goal": [5, 5], "avoid": {"cells": cells}})
    assert len(body) >= PAIRS_FROM_BYTES
    decoded = BODIES.decode(body, DEFAULT_LIMITS)
    assert isinstance(decoded["avoid"]["cells"], np.ndarray)
    assert same_decoding(decoded, decode_map(body))


@pytest.mark.slow
def test_mutated_bodies_read_as_msgpack_does_for_a_minute():
    # Opt-in (--slow), bounded: bodies of pairs with bytes changed, cut, inserted, or
    # headers of huge containers and strings and the two keys spliced in anywhere. The
    # kernel never reads past a body (a read past it would crash the process), finds
    # what the reference finds, and the server decodes each as msgpack does. About
    # 35,000 bodies a second here.
    rng = np.random.default_rng(26)
    seeds = [body_of({"op": "path", "avoid": {"cells": rng.integers(-70000, 70000, size=(int(k), 2)).tolist()},
                      "x": "y" * int(pad)}) for k, pad in rng.integers(0, 300, size=(200, 2))]
    splices = [b"\xa5avoid", b"\xa5cells", b"\xdd\xff\xff\xff\xff", b"\xdf\x7f\xff\xff\xff", b"\xdb\xff\xff\xff\xf0",
               b"\x92", b"\xc7\x05\x80"]
    deadline = time.monotonic() + 60
    count = 0
    while time.monotonic() < deadline:
        body = bytearray(seeds[rng.integers(len(seeds))])
        for _ in range(int(rng.integers(1, 6))):
            kind, at = rng.integers(4), int(rng.integers(len(body) + 1))
            if kind == 0 and at < len(body):
                body[at] = rng.integers(256)
            elif kind == 1:
                del body[at:]
            elif kind == 2:
                body[at:at] = bytes(rng.integers(0, 256, size=int(rng.integers(1, 8)), dtype=np.uint8))
            else:
                body[at:at] = splices[rng.integers(len(splices))]
        body = bytes(body)
        if body:
            assert same(kernel_pairs(body, 1 << 17), reference_pairs(body, 1 << 17)), body
            assert same_decoding(fast_decode(body), plain_decode(body)), body
            count += 1
    assert count > 100_000
