"""Every invalid request shape, over a real socket to the real server process, gets its
own code (and ``at`` where the protocol names the field). Limits are probed on both sides:
one step inside gets past the limit (and is refused for another reason, or served), one
step outside is ``too_large``. ``tests/server/test_ops.py`` has one request per code;
this table adds the shapes it does not cover.

Maps (``reliability.helpers.small_maps``): ``arena`` is 10 x 5; ``hills`` is 8 x 5 with
origin (-2.5, 1.0) and cell size 0.5, so world x in [-2.5, 1.5) and y in [1.0, 3.5);
``walled`` is all wall.
"""

import math
import struct

import msgpack
import pytest

from pathserver.protocol.codec import MAX_UPLOAD_BYTES, peek_id
from pathserver.transport import max_message_bytes
from reliability.helpers import Dealer

NAN, INF = math.nan, math.inf
MIB = 1 << 20


def path(**fields):
    return {"op": "path", "map": "arena", "start": [0, 0], "goal": [9, 4], **fields}


def paths(entry: dict, **fields):
    return {"op": "paths", "map": "arena", "requests": [{"start": [0, 0], "goal": [9, 4], **entry}], **fields}


def update(**fields):
    return {"op": "update", "map": "arena", **fields}


def put(**fields):
    """A valid put_map of a 3 x 2 map under a new name, ``fields`` changed."""
    return {"op": "put_map", "map": "fresh", "width": 3, "height": 2, "cells": b"\x01" * 6, **fields}


def get(**fields):
    return {"op": "get_map", "map": "arena", **fields}


def f32(*values) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def i32(*values) -> bytes:
    return struct.pack(f"<{len(values)}i", *values)


def columns(**fields):
    """A packed batch of one entry, ``starts`` and ``goals`` as bins, ``fields`` changed."""
    return {"op": "paths", "map": "arena", "starts": i32(0, 0), "goals": i32(9, 4), **fields}


def duplicate_op_body(total: int) -> bytes:
    """``{"id": 3, "op": "put_map", "pad": bin, "op": "ping"}`` over 1 MiB: a decoder keeps
    the last ``op``, so the first must not open the upload limits."""
    pad = msgpack.packb(b"\x00" * total, use_bin_type=True)
    return b"\x84\xa2id\x03\xa2op\xa7put_map\xa3pad" + pad + b"\xa2op\xa4ping"


def nested(depth: int):
    """A list nested so that, as the value of a key of the body map, the deepest
    container is at level ``depth`` (the body map is level 1)."""
    value = [0]
    for _ in range(depth - 2):
        value = [value]
    return value


def nested_maps(depth: int):
    value = {"x": 0}
    for _ in range(depth - 2):
        value = {"x": value}
    return value


def padded_ping(total: int) -> bytes:
    """``{"id": 3, "op": "ping", "pad": [str, ...]}`` of exactly ``total`` bytes, every
    string within the 4096-byte limit (so only the body size can be over a limit)."""
    count = total // 4100
    size0 = len(msgpack.packb({"id": 3, "op": "ping", "pad": ["s" * 4096] * count + [""]}))
    missing = total - size0  # bytes the last string must add: its length plus header growth
    for length, extra_header in ((missing, 0), (missing - 1, 1), (missing - 2, 2)):
        if 0 <= length <= 4096 and (length <= 31) == (extra_header == 0) and (32 <= length <= 255) == (
                extra_header == 1):
            body = msgpack.packb({"id": 3, "op": "ping", "pad": ["s" * 4096] * count + ["s" * length]})
            assert len(body) == total
            return body
    raise AssertionError(f"no padding makes {total} bytes")


# (name, request or raw body, code, at, where): where "reply" checks the reply's error,
# "entry" the first result of a ``paths`` reply, "packed" the first entry's error of a
# packed ``paths`` reply; at None: not checked.
ROWS = [
    # -- out of bounds (grid and world; the edges, huge finite numbers) --
    ("goal-y-at-height", path(goal=[0, 5]), "out_of_bounds", "goal", "reply"),
    ("start-x-at-width", path(start=[10, 0]), "out_of_bounds", "start", "reply"),
    ("goal-negative", path(goal=[-1, 0]), "out_of_bounds", "goal", "reply"),
    ("start-1e300", path(start=[1e300, 0]), "out_of_bounds", "start", "reply"),
    ("start-minus-1e300", path(start=[-1e300, 0]), "out_of_bounds", "start", "reply"),
    ("start-u64-max", path(start=[2**64 - 1, 0]), "out_of_bounds", "start", "reply"),
    ("start-i64-min", path(start=[0, -(2**63)]), "out_of_bounds", "start", "reply"),
    ("world-start-right-edge", path(map="hills", space="world", start=[1.5, 1.0], goal=[0, 2]),
     "out_of_bounds", "start", "reply"),
    ("world-goal-left-of-origin", path(map="hills", space="world", start=[0, 2], goal=[-2.6, 1.0]),
     "out_of_bounds", "goal", "reply"),
    ("world-overflow-to-inf", path(map="hills", space="world", start=[1.7e308, 2.0]), "out_of_bounds", "start",
     "reply"),
    ("batch-world-entry", paths({"goal": [0, 99]}, space="world"), "out_of_bounds", "requests[0].goal", "entry"),
    ("batch-grid-entry", paths({"start": [-1, 0]}), "out_of_bounds", "requests[0].start", "entry"),
    ("update-cell-outside", update(cells=[[10, 0]], solid=True), "out_of_bounds", "cells[0]", "reply"),
    ("update-rect-left-of-map", update(rects=[[-10, -10, 5, 5]], solid=True), "out_of_bounds", "rects[0]", "reply"),
    ("update-world-cell-outside", update(map="hills", space="world", cells=[[5.0, 2.0]], solid=True),
     "out_of_bounds", "cells[0]", "reply"),
    # -- NaN and infinities --
    ("start-nan", path(start=[NAN, 0]), "non_finite", "start[0]", "reply"),
    ("goal-minus-inf", path(goal=[0, -INF]), "non_finite", "goal[1]", "reply"),
    ("weight-nan", path(weight=NAN), "non_finite", "weight", "reply"),
    ("max-climb-inf", path(max_climb=INF), "non_finite", "max_climb", "reply"),
    ("unit-size-nan", path(unit_size=NAN), "non_finite", "unit_size", "reply"),
    ("unit-size-pair-inf", path(unit_size=[2, INF]), "non_finite", "unit_size[1]", "reply"),
    ("world-start-nan", path(map="hills", space="world", start=[NAN, 2.0]), "non_finite", "start[0]", "reply"),
    ("update-cost-nan", update(cells=[[0, 0]], cost=NAN), "non_finite", "cost", "reply"),
    ("update-rect-width-nan", update(rects=[[0, 0, NAN, 1]], solid=True), "non_finite", "rects[0][2]", "reply"),
    ("batch-entry-nan", paths({"start": [NAN, 0]}), "non_finite", "requests[0].start[0]", "entry"),
    ("batch-default-weight-inf", paths({}, weight=INF), "non_finite", "weight", "reply"),
    ("float32-nan", msgpack.packb({"id": 1, **path(goal=[NAN, 0])}, use_single_float=True), "non_finite", "goal[0]",
     "reply"),
    # -- wrong types and missing fields --
    ("id-string", {"id": "1", "op": "ping"}, "invalid_request", "id", "reply"),
    ("id-float", {"id": 1.0, "op": "ping"}, "invalid_request", "id", "reply"),
    ("id-nil", {"id": None, "op": "ping"}, "invalid_request", "id", "reply"),
    ("id-missing", {"op": "ping"}, "invalid_request", "id", "reply"),
    ("op-int", {"op": 5}, "invalid_request", "op", "reply"),
    ("op-missing", {}, "invalid_request", "op", "reply"),
    ("map-int", path(map=5), "invalid_request", "map", "reply"),
    ("map-empty", path(map=""), "invalid_request", "map", "reply"),
    ("map-257-chars", path(map="a" * 257), "invalid_request", "map", "reply"),
    ("map-bin", path(map=b"arena"), "invalid_request", "map", "reply"),
    ("map-missing", {"op": "path", "start": [0, 0], "goal": [1, 1]}, "invalid_request", "map", "reply"),
    ("start-string", path(start="0,0"), "invalid_request", "start", "reply"),
    ("start-one-number", path(start=[0]), "invalid_request", "start", "reply"),
    ("start-four-numbers", path(start=[0, 0, 0, 0]), "invalid_request", "start", "reply"),
    ("start-missing-floor", path(start=[0, 0, 1]), "out_of_bounds", "start[2]", "reply"),
    ("start-fraction-floor", path(start=[0, 0, 0.5]), "invalid_request", "start[2]", "reply"),
    ("start-as-map", path(start={"x": 0, "y": 0}), "invalid_request", "start", "reply"),
    ("start-bool", path(start=[True, 0]), "invalid_request", "start[0]", "reply"),
    ("start-nil-entry", path(start=[None, 0]), "invalid_request", "start[0]", "reply"),
    ("goal-missing", {"op": "path", "map": "arena", "start": [0, 0]}, "invalid_request", "goal", "reply"),
    ("smooth-int", path(smooth=1), "invalid_request", "smooth", "reply"),
    ("snap-string", path(snap="yes"), "invalid_request", "snap", "reply"),
    ("allow-partial-int", path(allow_partial=1), "invalid_request", "allow_partial", "reply"),
    ("line-of-sight-string", path(line_of_sight="no"), "invalid_request", "line_of_sight", "reply"),
    ("max-expansions-negative", path(max_expansions=-1), "invalid_request", "max_expansions", "reply"),
    ("max-expansions-string", path(max_expansions="10"), "invalid_request", "max_expansions", "reply"),
    ("weight-string", path(weight="2"), "invalid_request", "weight", "reply"),
    ("heuristic-unknown", path(heuristic="taxicab"), "invalid_request", "heuristic", "reply"),
    ("algorithm-unknown", path(algorithm="dijkstra"), "invalid_request", "algorithm", "reply"),
    ("jps-with-4-connected", path(algorithm="jps", diagonal="never"), "invalid_request", "algorithm", "reply"),
    ("diagonal-unknown", path(diagonal="sometimes"), "invalid_request", "diagonal", "reply"),
    ("requests-not-a-list", {"op": "paths", "map": "arena", "requests": "all"}, "invalid_request", "requests",
     "reply"),
    ("batch-entry-not-a-map", {"op": "paths", "map": "arena", "requests": [[0, 0]]}, "invalid_request",
     "requests[0]", "entry"),
    ("batch-entry-unknown-field", paths({"speed": 3}), "invalid_request", "requests[0].speed", "entry"),
    ("update-solid-string", update(cells=[[0, 0]], solid="yes"), "invalid_request", "solid", "reply"),
    ("update-rect-three-numbers", update(rects=[[0, 0, 1]], solid=True), "invalid_request", "rects[0]", "reply"),
    ("update-cells-string", update(cells="all", solid=True), "invalid_request", "cells", "reply"),
    ("update-nothing-to-edit", update(solid=True), "invalid_request", "rects", "reply"),
    ("stats-unknown-field", {"op": "stats", "verbose": True}, "invalid_request", "verbose", "reply"),
    ("maps-unknown-field", {"op": "maps", "map": "arena"}, "invalid_request", "map", "reply"),
    # -- unit sizes --
    ("unit-size-negative", path(unit_size=-1), "bad_unit_size", "unit_size", "reply"),
    ("unit-size-fraction", path(unit_size=1.5), "bad_unit_size", "unit_size", "reply"),
    ("unit-size-pair-zero", path(unit_size=[0, 1]), "bad_unit_size", "unit_size[0]", "reply"),
    ("unit-size-taller-than-map", path(unit_size=[1, 6]), "bad_unit_size", None, "reply"),
    ("unit-size-wider-than-map", path(unit_size=[11, 1]), "bad_unit_size", None, "reply"),
    ("unit-size-u64-max", path(unit_size=2**64 - 1), "bad_unit_size", None, "reply"),
    ("unit-size-string", path(unit_size="2"), "invalid_request", "unit_size", "reply"),
    ("unit-size-triple", path(unit_size=[1, 2, 3]), "invalid_request", "unit_size", "reply"),
    ("batch-entry-unit-too-big", paths({"unit_size": 6}), "bad_unit_size", None, "entry"),
    # -- unknown maps and ops (map names never reach the file system) --
    ("map-other-case", path(map="ARENA"), "unknown_map", "map", "reply"),
    ("map-traversal", path(map="../arena"), "unknown_map", "map", "reply"),
    ("map-file-name", path(map="arena.map"), "unknown_map", "map", "reply"),
    ("map-absolute-path", path(map="/etc/passwd"), "unknown_map", "map", "reply"),
    ("paths-unknown-map", {"op": "paths", "map": "atlantis", "requests": []}, "unknown_map", "map", "reply"),
    ("update-unknown-map", update(map="atlantis", cells=[[0, 0]], solid=True), "unknown_map", "map", "reply"),
    ("op-upper-case", {"op": "PATH"}, "unknown_op", "op", "reply"),
    ("op-empty", {"op": ""}, "unknown_op", "op", "reply"),
    ("op-trailing-space", {"op": "path "}, "unknown_op", "op", "reply"),
    # -- a map where no cell holds the unit, and blocked endpoints --
    ("all-wall-map", path(map="walled", start=[0, 0], goal=[2, 1]), "start_blocked", "unit_size", "reply"),
    ("unit-too-big-for-any-cell", path(map="split", start=[0, 0], goal=[1, 2], unit_size=3), "start_blocked",
     "unit_size", "reply"),
    # -- limits: one step outside each is too_large --
    ("body-over-1-mib", padded_ping(MIB + 1), "too_large", None, "reply"),
    ("string-4097", {"op": "ping", "x": "s" * 4097}, "too_large", None, "reply"),
    # A bin may fill the body (next_steps' positions): within it, the field's own checks speak.
    ("bin-4097", {"op": "ping", "x": b"b" * 4097}, "invalid_request", "x", "reply"),
    ("bin-over-the-body", {"op": "ping", "x": b"b" * (1 << 20)}, "too_large", None, "reply"),
    ("ext-65", {"op": "ping", "x": msgpack.ExtType(3, b"e" * 65)}, "too_large", None, "reply"),
    ("array-131073", {"op": "ping", "x": [0] * 131073}, "too_large", None, "reply"),
    ("map-65-keys", {"op": "ping", **{f"k{i}": i for i in range(63)}}, "too_large", None, "reply"),
    ("batch-4097", {"op": "paths", "map": "arena", "requests": [{"start": [0, 0], "goal": [1, 1]}] * 4097},
     "too_large", "requests", "reply"),
    ("depth-9-lists", {"op": "ping", "x": nested(9)}, "too_large", None, "reply"),
    ("depth-9-maps", {"op": "ping", "x": nested_maps(9)}, "too_large", None, "reply"),
    ("depth-9-in-start", path(start=nested(9)), "too_large", None, "reply"),
    ("depth-5000", b"\x82\xa2id\x01\xa1x" + b"\x91" * 5000 + b"\x01", "too_large", None, "reply"),
    # -- one step inside each limit: past the limit, refused for the unknown field --
    ("body-exactly-1-mib", padded_ping(MIB), "invalid_request", "pad", "reply"),
    ("string-4096", {"op": "ping", "x": "s" * 4096}, "invalid_request", "x", "reply"),
    ("array-131072", {"op": "ping", "x": [0] * 131072}, "invalid_request", "x", "reply"),
    ("map-64-keys", {"op": "ping", **{f"k{i}": i for i in range(62)}}, "invalid_request", None, "reply"),
    ("depth-8-lists", {"op": "ping", "x": nested(8)}, "invalid_request", "x", "reply"),
    # -- the map ops (tests/server/test_uploads.py checks that each leaves every map as it was) --
    ("put-0-by-5", put(width=0, height=5, cells=b""), "invalid_request", "width", "reply"),
    ("put-5000-by-5000", put(width=5000, height=5000, cells=b""), "invalid_request", "width", "reply"),
    ("put-height-4097", put(width=1, height=4097, cells=b"\x01" * 4097), "invalid_request", "height", "reply"),
    ("put-width-fraction", put(width=2.5), "invalid_request", "width", "reply"),
    ("put-width-string", put(width="3"), "invalid_request", "width", "reply"),
    ("put-height-missing", {"op": "put_map", "map": "fresh", "width": 3, "cells": b"\x01" * 6},
     "invalid_request", "height", "reply"),
    ("put-cells-missing", {"op": "put_map", "map": "fresh", "width": 3, "height": 2}, "invalid_request", "cells",
     "reply"),
    ("put-cells-short", put(cells=b"\x01" * 5), "invalid_request", "cells", "reply"),
    ("put-cells-long", put(cells=b"\x01" * 7), "invalid_request", "cells", "reply"),
    ("put-cells-str", put(cells="\x01" * 6), "invalid_request", "cells", "reply"),
    ("put-cells-array", put(cells=[1] * 6), "invalid_request", "cells", "reply"),
    ("put-costs-float-not-bin", put(costs=1.5), "invalid_request", "costs", "reply"),
    ("put-costs-float64s", put(costs=struct.pack("<6d", *[1.0] * 6)), "invalid_request", "costs", "reply"),
    ("put-costs-nan", put(costs=f32(1, 1, NAN, 1, 1, 1)), "non_finite", "costs", "reply"),
    ("put-costs-inf", put(costs=f32(1, 1, 1, 1, 1, INF)), "non_finite", "costs", "reply"),
    ("put-costs-below-1", put(costs=f32(1, 0.5, 1, 1, 1, 1)), "invalid_request", "costs", "reply"),
    ("put-heights-nan-on-a-wall", put(cells=b"\x00" * 6, heights=f32(0, 0, 0, 0, 0, NAN)), "non_finite",
     "heights", "reply"),
    ("put-tags-short", put(tags=b"\x00" * 5), "invalid_request", "tags", "reply"),
    ("put-origin-nan", put(origin=[NAN, 0]), "non_finite", "origin[0]", "reply"),
    ("put-origin-one-number", put(origin=[0]), "invalid_request", "origin", "reply"),
    ("put-cell-size-zero", put(cell_size=0), "invalid_request", "cell_size", "reply"),
    ("put-cell-size-inf", put(cell_size=INF), "non_finite", "cell_size", "reply"),
    ("put-unknown-field", put(colour="red"), "invalid_request", "colour", "reply"),
    ("put-map-empty", put(map=""), "invalid_request", "map", "reply"),
    ("put-file-backed-name", put(map="arena"), "conflict", "map", "reply"),
    ("put-over-1-mib-wrong-length", put(width=1100, height=1000, cells=b"\x01" * (1100 * 1000 - 1)),
     "invalid_request", "cells", "reply"),
    ("put-bin-over-64-mib", put(width=4096, height=4096, cells=b"", costs=b"\x00" * (64 * MIB + 1)), "too_large",
     None, "reply"),
    ("duplicate-op-over-1-mib", duplicate_op_body(MIB), "too_large", None, "reply"),
    ("put-map-op-nested-over-1-mib", {"op": "ping", "x": {"op": "put_map"}, "pad": b"\x00" * MIB}, "too_large",
     None, "reply"),
    ("drop-file-backed-name", {"op": "drop_map", "map": "arena"}, "conflict", "map", "reply"),
    ("drop-unknown-map", {"op": "drop_map", "map": "atlantis"}, "unknown_map", "map", "reply"),
    ("drop-map-missing", {"op": "drop_map"}, "invalid_request", "map", "reply"),
    ("get-region-past-the-edge", get(region=[8, 0, 3, 1]), "out_of_bounds", "region", "reply"),
    ("get-region-negative", get(region=[-1, 0, 2, 2]), "out_of_bounds", "region", "reply"),
    ("get-region-zero-wide", get(region=[0, 0, 0, 1]), "invalid_request", "region", "reply"),
    ("get-region-fraction", get(region=[0.5, 0, 1, 1]), "invalid_request", "region[0]", "reply"),
    ("get-region-nan", get(region=[0, NAN, 1, 1]), "non_finite", "region[1]", "reply"),
    ("get-region-three-numbers", get(region=[0, 0, 1]), "invalid_request", "region", "reply"),
    ("get-unknown-map", get(map="atlantis"), "unknown_map", "map", "reply"),
    ("update-if-gen-string", update(cells=[[0, 0]], solid=True, if_gen="7"), "invalid_request", "if_gen",
     "reply"),
    ("update-if-gen-float", update(cells=[[0, 0]], solid=True, if_gen=7.0), "invalid_request", "if_gen", "reply"),
    # -- packed answers and packed batches --
    ("packed-int", path(packed=1), "invalid_request", "packed", "reply"),
    ("packed-string", path(packed="yes"), "invalid_request", "packed", "reply"),
    ("batch-packed-list", paths({}, packed=[True]), "invalid_request", "packed", "reply"),
    ("batch-entry-packed", paths({"packed": True}), "invalid_request", "requests[0].packed", "entry"),
    ("packed-entry-other-space", paths({"space": "world"}, packed=True), "invalid_request", "requests[0].space",
     "packed"),
    ("packed-entry-out-of-bounds", paths({"goal": [0, 5]}, packed=True), "out_of_bounds", "requests[0].goal",
     "packed"),
    ("columns-and-requests", columns(requests=[]), "invalid_request", "requests", "reply"),
    ("columns-starts-array", columns(starts=[[0, 0]]), "invalid_request", "starts", "reply"),
    ("columns-starts-str", columns(starts="0,0"), "invalid_request", "starts", "reply"),
    ("columns-goals-missing", columns(goals=None), "invalid_request", "goals", "reply"),
    ("columns-goals-array", columns(goals=[[9, 4]]), "invalid_request", "goals", "reply"),
    ("columns-starts-7-bytes", columns(starts=i32(0, 0)[:7]), "invalid_request", "starts", "reply"),
    ("columns-goals-9-bytes", columns(goals=i32(9, 4) + b"\x00"), "invalid_request", "goals", "reply"),
    ("columns-world-float64s", columns(space="world", starts=struct.pack("<2d", 0, 0)), "invalid_request", "goals",
     "reply"),
    ("columns-counts-differ", columns(goals=i32(9, 4, 1, 1)), "invalid_request", "goals", "reply"),
    ("columns-goals-bin-alone", {"op": "paths", "map": "arena", "goals": i32(9, 4)}, "invalid_request", "goals",
     "reply"),
    ("columns-4097", columns(starts=i32(0, 0) * 4097, goals=i32(1, 1) * 4097), "too_large", "starts", "reply"),
    ("columns-default-weight-nan", columns(weight=NAN), "non_finite", "weight", "reply"),
    ("columns-world-nan", columns(map="hills", space="world", starts=f32(NAN, 2), goals=f32(0, 2)), "non_finite",
     "starts[0]", "entry"),
    ("columns-world-inf-packed", columns(map="hills", space="world", starts=f32(0, 2), goals=f32(0, INF),
                                         packed=True), "non_finite", "goals[0]", "packed"),
    ("columns-goal-outside", columns(goals=i32(0, 5), packed=True), "out_of_bounds", "goals[0]", "packed"),
    ("columns-start-i32-min", columns(starts=i32(-(2**31), 0)), "out_of_bounds", "starts[0]", "entry"),
    ("columns-unit-too-big", columns(unit_size=6, packed=True), "bad_unit_size", None, "packed"),
    ("columns-unknown-map", columns(map="atlantis"), "unknown_map", "map", "reply"),
    # -- not a request at all --
    ("empty-body", b"", "malformed", None, "reply"),
    ("nil-body", b"\xc0", "malformed", None, "reply"),
    ("string-body", msgpack.packb("ping"), "malformed", None, "reply"),
    ("timestamp-body", msgpack.packb(msgpack.Timestamp(1, 0)), "malformed", None, "reply"),
    ("trailing-bytes", msgpack.packb({"id": 1, "op": "ping"}) + b"\x00", "malformed", None, "reply"),
    ("truncated", msgpack.packb({"id": 1, "op": "ping"})[:-2], "malformed", None, "reply"),
    ("invalid-utf8-value", b"\x82\xa2id\x01\xa2op\xa2\xff\xfe", "malformed", None, "reply"),
    ("int-key", msgpack.packb({"id": 1, "op": "ping", 7: 1}), "malformed", None, "reply"),
    ("bin-key", msgpack.packb({"id": 1, "op": "ping", b"k": 1}, use_bin_type=True), "malformed", None, "reply"),
    ("reserved-byte-inside", b"\x82\xa2id\x01\xa2op\xc1", "malformed", None, "reply"),
]

ROW_ID = 4242


def body_of(name: str, request) -> bytes:
    """The row's bytes: a dict gets ``id`` first unless the row is about the id."""
    if isinstance(request, bytes):
        return request
    if name.startswith("id-"):
        return msgpack.packb(request, use_bin_type=True)
    return msgpack.packb({"id": ROW_ID, **request}, use_bin_type=True)


def expected_reply_id(name: str, request, body: bytes):
    """The id the reply must carry: the request's, whenever the server can read one
    (from the decoded map, or from the first bytes of a body it cannot decode)."""
    if isinstance(request, bytes):
        return peek_id(body)
    return None if name.startswith("id-") else ROW_ID


@pytest.fixture
def dealer(live, context):
    client = Dealer(context, live.endpoint)
    yield client
    client.close()


def test_every_row_has_a_unique_name():
    names = [row[0] for row in ROWS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name, request_, code, at, where", ROWS, ids=[row[0] for row in ROWS])
def test_bad_input_gets_its_code(dealer, name, request_, code, at, where):
    body = body_of(name, request_)
    reply = dealer.ask(body)
    if where == "entry":
        assert reply["ok"] is True, reply
        error = reply["results"][0]["error"]
    elif where == "packed":
        assert reply["ok"] is True and "results" not in reply, reply
        assert reply["status"][0] == 3 and list(reply["errors"]) == [0], reply
        error = reply["errors"][0]
    else:
        assert reply["ok"] is False, reply
        assert list(reply) == ["id", "ok", "error", "retryable"]
        error = reply["error"]
        assert reply["id"] == expected_reply_id(name, request_, body), reply
    assert error["code"] == code, (name, error)
    if at is not None:
        assert error["at"] == at, (name, error)
    assert "Traceback" not in error["message"] and 'File "' not in error["message"]
    assert len(error["message"]) < 600  # an echo of the bad value is cut short


def test_a_message_over_the_socket_cap_drops_only_that_connection(live, context):
    """Beyond MAXMSGSIZE (a put_map's limit plus 1 MiB) libzmq drops the connection
    without a reply; the server serves everyone else, and the same client, once
    reconnected, again."""
    big = Dealer(context, live.endpoint)
    other = Dealer(context, live.endpoint)
    try:
        assert big.ask({"id": 1, "op": "ping"})["ok"]
        big.send(b"\x00" * (max_message_bytes() + 1))
        assert big.nothing_more(1000)
        assert other.ask({"id": 2, "op": "ping"})["id"] == 2
        big.send({"id": 3, "op": "ping"})
        assert big.recv(timeout_ms=10_000)["id"] == 3  # the DEALER reconnected by itself
    finally:
        big.close()
        other.close()


def test_a_body_under_the_socket_cap_but_over_its_limit_is_too_large(live, context):
    """Between the body limit and the socket cap: a ``too_large`` reply naming the id, for
    every op but put_map, and for a put_map past its own limit."""
    client = Dealer(context, live.endpoint)
    try:
        body = msgpack.packb({"id": 4, "op": "ping", "pad": b"\x00" * (8 * MIB)})
        reply = client.ask(body)
        assert reply["id"] == 4 and reply["error"]["code"] == "too_large", reply
        body = msgpack.packb({"id": 5, "op": "put_map", "map": "big", "pad": b"\x00" * MAX_UPLOAD_BYTES})
        assert MAX_UPLOAD_BYTES < len(body) <= max_message_bytes()
        reply = client.ask(body)
        assert reply["id"] == 5 and reply["error"]["code"] == "too_large", reply
        assert client.ask({"id": 6, "op": "ping"})["ok"]
    finally:
        client.close()
