"""Hypothesis strategies for request bodies: random bytes, valid requests of every op, and
those requests mutated field by field or byte by byte.

A valid request aims at the maps of ``reliability_helpers.small_maps`` or at the maps the
strategies upload (``UPLOAD_NAMES``: uploads may carry a tag layer, ``TAG_NAMES`` and
``CLASSES``, which ``traversal`` names; the small maps have none); mutations then
drop fields, swap in values of any msgpack type (NaN, huge ints, bin, ext, deep
containers), rename fields, and flip, cut or splice the encoded bytes.
"""

from __future__ import annotations

import copy
import math
import random
import struct
import zlib

import msgpack
from hypothesis import strategies as st

from pathserver.hexes import LAYOUTS
from pathserver.options import QUERY_OPS, op_fields
from reliability.helpers import SMALL_MAP_NAMES

FIELD_NAMES = (
    "id", "op", "map", "start", "goal", "unit_size", "space", "smooth", "diagonal", "snap",
    "allow_partial", "max_expansions", "heuristic", "weight", "max_climb", "algorithm",
    "line_of_sight", "requests", "rects", "cells", "solid", "cost", "if_gen", "width", "height", "costs",
    "heights", "tags", "origin", "cell_size", "region",
    # The queries beyond one path, the options shaping one path, an upload's tag names.
    "goals", "avoid", "avoid_cost", "traversal", "budget", "max_cost", "positions", "lookahead", "points",
    "tag_names", "classes",
    # Packed answers and packed batches.
    "packed", "starts",
    # Hex maps.
    "shape", "layout",
    # Floors and links.
    "floors", "links",
)
WORDS = (
    "path", "paths", "maps", "update", "ping", "stats", "put_map", "drop_map", "get_map", "grid", "world", "los",
    "corners", "reachable", "field", "next_steps", "check_block", "cell", "boat", "truck", "walker", "water", "mud",
    "none", "no_corner_cutting", "never", "always", "octile", "euclidean", "manhattan",
    "chebyshev", "auto", "astar", "jps", "", "ARENA", "../arena", "arena.map", "nosuch",
    "hex", "square", "odd-r", "even-r", "odd-q", "even-q",
) + SMALL_MAP_NAMES

SPECIAL_FLOATS = (math.nan, math.inf, -math.inf, -0.0, 0.5, 1e300, -1e300, 5e-324, 2.0**63, 2.0**64, 1e16)
SPECIAL_INTS = (0, 1, -1, 2, 3, 7, 63, 64, 65, 255, 256, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**64 - 1, -(2**63))

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(SPECIAL_INTS),
    st.integers(-(2**63), 2**64 - 1),
    st.integers(-3, 70),
    st.sampled_from(SPECIAL_FLOATS),
    st.floats(),
    st.floats(-2, 70),
    st.sampled_from(WORDS),
    st.text(max_size=12),
    st.binary(max_size=12),
    st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=12)),
    st.builds(msgpack.Timestamp, st.integers(0, 2**34), st.integers(0, 999_999_999)),
)

values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5)
    | st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=6), inner, max_size=5),
    max_leaves=16,
)

coordinate = st.integers(-1, 9) | st.floats(-1.0, 9.5, allow_nan=False)
point = st.lists(coordinate, min_size=2, max_size=2)
unit_size = st.sampled_from([1, 2, 3, 1.0, 2.0, [1, 2], [2, 1], [3, 3], [1.0, 4]])


#: The tag names and unit classes an upload may carry (``put_map``'s ``tag_names`` and
#: ``classes``), and the ``traversal`` values naming them; the small maps have no tags, so
#: there a ``traversal`` other than ``{}`` is an unknown class or tag.
TAG_NAMES = {"water": 1, "mud": 2, "rock": 3}
CLASSES = {"boat": {"mud": None, "rock": None}, "truck": {"water": None, "mud": 2.5}, "walker": {}}
TRAVERSALS = ("boat", "truck", "walker", {}, {"water": None}, {"mud": 3.0, "rock": None}, {"water": 1, "mud": 1.5})
#: The maps a strategy may upload (the small maps' names are file-backed: conflict).
UPLOAD_NAMES = ("upload-a", "upload-b")

rect = st.tuples(coordinate, coordinate, st.integers(1, 3), st.integers(1, 3) | st.floats(0.5, 3)).map(list)
#: A handful of points: goals, positions, check_block's points and cells, avoided cells.
few_points = st.lists(point, max_size=4)
goals = st.lists(point, min_size=1, max_size=4)
#: avoid's cells as pairs, or as the bin of int32 pairs the engine clients send.
cell_bin = st.lists(st.tuples(st.integers(-1, 9), st.integers(-1, 9)), max_size=3).map(
    lambda cells: struct.pack(f"<{2 * len(cells)}i", *(v for cell in cells for v in cell)))
avoid = st.fixed_dictionaries({}, optional={"cells": st.lists(point, max_size=3) | cell_bin,
                                            "rects": st.lists(rect, max_size=2)})
#: A field's window: small, mostly inside the small maps (grid cells, whole numbers).
field_region = st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(1, 4), st.integers(1, 3)).map(list)


def _traversals(map_name: str):
    """``traversal`` values for requests on ``map_name``: the uploads' classes and tags on an
    upload; ``{}`` (no rules) on a small map, which has no tags."""
    if map_name in UPLOAD_NAMES:
        return st.sampled_from(TRAVERSALS).map(copy.deepcopy)
    return st.just({})


@st.composite
def search_options(draw, op: str = "path", map_name: str = "arena") -> dict:
    """Up to five of the options ``op`` takes (``pathserver.options``), valid values."""
    options = {}
    choices = {
        "space": st.sampled_from(["grid", "world", None]),
        "smooth": st.sampled_from(["los", "corners", "none", None]),
        "diagonal": st.sampled_from(["no_corner_cutting", "never", "always", None]),
        "snap": st.booleans() | st.none(),
        "allow_partial": st.booleans() | st.none(),
        "max_expansions": st.integers(1, 400) | st.none(),
        "heuristic": st.sampled_from(["octile", "euclidean", "manhattan", "chebyshev", None]),
        "weight": st.sampled_from([1, 1.0, 1.5, 3, None]),
        "max_climb": st.sampled_from([0, 0.5, 1, 2.0, 100, math.inf, None]),
        "algorithm": st.sampled_from(["auto", "astar", "jps", None]),
        "line_of_sight": st.booleans() | st.none(),
        "unit_size": unit_size | st.none(),
        "goals": goals,
        "avoid": avoid,
        "avoid_cost": st.sampled_from([1, 1.5, 4, 20.0, None]),
        "traversal": _traversals(map_name) | st.none(),
        "max_cost": st.sampled_from([0, 1, 3.5, 8, 30.0, None]),
        "region": field_region | st.none(),
        "lookahead": st.sampled_from(["cell", "los", None]),
    }
    # "budget" is reachable's own (required) field, set by valid_requests.
    names = sorted(set(op_fields(op)) - {"budget"})
    assert set(names) <= set(choices), set(names) - set(choices)
    for key in draw(st.lists(st.sampled_from(names), max_size=5, unique=True)):
        options[key] = draw(choices[key])
    return options


map_name = st.sampled_from(SMALL_MAP_NAMES)
#: A search's or query's map: a small map, or one in four an upload (tags, classes).
search_map = st.one_of(map_name, map_name, map_name, st.sampled_from(UPLOAD_NAMES))
upload_name = st.sampled_from(UPLOAD_NAMES) | map_name
ids = st.integers(-(2**63), 2**64 - 1) | st.integers(0, 1000)


def float32_bytes(values) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def int32_bytes(values) -> bytes:
    """Values as int32, floored (a float grid coordinate's cell)."""
    return struct.pack(f"<{len(values)}i", *(math.floor(v) for v in values))


@st.composite
def put_map_requests(draw, rid) -> dict:
    """A put_map of a small map: cells, and maybe costs, heights, tags, origin, cell size."""
    width, height = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    # Mostly one floor; sometimes several (the layers hold each), or a count it refuses.
    floors = draw(st.sampled_from([None, None, None, 1, 2, 3, 0, 17, 1.5, "2"]))
    count = width * height * (floors if type(floors) is int and 1 <= floors <= 16 else 1)
    request = {"id": rid, "op": "put_map", "map": draw(upload_name), "width": width, "height": height,
               "cells": draw(st.binary(min_size=count, max_size=count))}
    if floors is not None:
        request["floors"] = floors
    if draw(st.integers(0, 3)) == 0:
        # Links, mostly on the map; ends off it, on a missing floor and bad costs as well.
        end = st.lists(st.integers(-1, 8), min_size=2, max_size=3)
        link = st.fixed_dictionaries({"from": end, "to": end, "cost": st.sampled_from([0, 1, 2.5, 20, -1])},
                                     optional={"two_way": st.booleans(), "tag": st.sampled_from(["water", "ladder"])})
        request["links"] = draw(st.lists(link, max_size=3))
    layer = st.lists(st.floats(1.0, 100.0, width=32), min_size=count, max_size=count).map(float32_bytes)
    if draw(st.booleans()):
        request["costs"] = draw(layer)
    if draw(st.booleans()):
        request["heights"] = draw(layer)
    if draw(st.booleans()):
        # Mostly the values TAG_NAMES names, so traversal rules meet tagged cells.
        tag = st.sampled_from([0, 0, 1, 2, 3]) | st.integers(0, 255)
        request["tags"] = bytes(draw(st.lists(tag, min_size=count, max_size=count)))
        if draw(st.integers(0, 3)):
            request["tag_names"] = dict(TAG_NAMES)
            if draw(st.integers(0, 3)):
                request["classes"] = copy.deepcopy(CLASSES)
    if draw(st.booleans()):
        request["origin"] = [draw(st.floats(-100, 100)), draw(st.floats(-100, 100))]
    if draw(st.booleans()):
        request["cell_size"] = draw(st.sampled_from([0.5, 1, 2.0, 32]))
    if draw(st.integers(0, 3)) == 0:
        request["shape"] = "hex"
        request["layout"] = draw(st.sampled_from(LAYOUTS))
        if draw(st.booleans()):
            request["cell_size"] = [draw(st.sampled_from([16, 32.0])), draw(st.sampled_from([14, 28.0]))]
    return request


@st.composite
def valid_requests(draw) -> dict:
    """A request of any op that the server should accept (it may still answer with a
    map-dependent error: out of bounds, blocked, search limit)."""
    rid = draw(ids)
    op = draw(st.sampled_from(["path", "path", "path", "paths", "update", "maps", "ping", "stats", "put_map",
                               "drop_map", "get_map", *QUERY_OPS]))
    if op == "put_map":
        return draw(put_map_requests(rid))
    if op == "drop_map":
        return {"id": rid, "op": op, "map": draw(upload_name)}
    if op == "get_map":
        request = {"id": rid, "op": op, "map": draw(upload_name)}
        if draw(st.booleans()):
            request["region"] = [draw(st.integers(-1, 9)), draw(st.integers(-1, 5)), draw(st.integers(0, 10)),
                                 draw(st.integers(0, 6))]
        return request
    if op == "path":
        name = draw(search_map)
        request = {"id": rid, "op": op, "map": name, "start": draw(point), "goal": draw(point),
                   **draw(search_options(op, name))}
        if "goals" in request:
            del request["goal"]  # goals in place of goal
        if draw(st.booleans()):
            request["packed"] = draw(st.booleans() | st.none())
        return request
    if op == "paths":
        name = draw(search_map)
        options = draw(search_options(op, name))
        if draw(st.booleans()):
            options["packed"] = draw(st.booleans() | st.none())
        if draw(st.integers(0, 2)) == 0:
            # A packed batch: starts and goals as bins of the batch's space's pairs.
            options.pop("goals", None)
            ends = draw(st.lists(st.tuples(point, point), max_size=6))
            pack_points = float32_bytes if options.get("space") == "world" else int32_bytes
            return {"id": rid, "op": op, "map": name, **options,
                    "starts": pack_points([v for start, _ in ends for v in start]),
                    "goals": pack_points([v for _, goal in ends for v in goal])}
        entries = draw(st.lists(st.fixed_dictionaries({"start": point}, optional={
            "goal": point, "goals": goals, "unit_size": unit_size, "smooth": st.sampled_from(["los", "none"]),
            "allow_partial": st.booleans(), "avoid": avoid, "avoid_cost": st.sampled_from([1, 3]),
            "traversal": _traversals(name)}), max_size=6))
        for entry in entries:
            if "goal" in entry and "goals" in entry:
                del entry["goals"]
            elif "goal" not in entry and "goals" not in entry and "goals" not in options:
                entry["goal"] = draw(point)
        return {"id": rid, "op": op, "map": name, "requests": entries, **options}
    if op in QUERY_OPS:
        name = draw(search_map)
        request = {"id": rid, "op": op, "map": name, **draw(search_options(op, name))}
        if op == "reachable":
            request["start"] = draw(point)
            request["budget"] = draw(st.sampled_from([0, 1, 2.5, 5, 9.5]))
        elif op in ("field", "next_steps"):
            request.setdefault("goals", draw(goals))
        if op == "next_steps":
            positions = draw(few_points)
            packed = draw(st.booleans())
            request["positions"] = float32_bytes([v for xy in positions for v in xy]) if packed else positions
        if op == "check_block":
            request["points"] = draw(few_points)
            what = draw(st.sampled_from(["cells", "rects", "both"]))
            if what != "rects":
                request["cells"] = draw(st.lists(point, min_size=1, max_size=3))
            if what != "cells":
                request["rects"] = draw(st.lists(rect, min_size=1, max_size=2))
        return request
    if op == "update":
        request = {"id": rid, "op": op, "map": draw(map_name)}
        if draw(st.booleans()):
            request["rects"] = draw(st.lists(st.tuples(coordinate, coordinate, st.integers(1, 4),
                                                       st.floats(0.1, 4)).map(list), min_size=1, max_size=3))
        else:
            request["cells"] = draw(st.lists(point, min_size=1, max_size=3))
        request["solid"] = draw(st.booleans())
        if draw(st.booleans()):
            request["cost"] = draw(st.sampled_from([1, 2.5, 10]))
        if draw(st.booleans()):
            request["space"] = draw(st.sampled_from(["grid", "world"]))
        if draw(st.booleans()):
            request["if_gen"] = draw(st.integers(0, 40))
        return request
    return {"id": rid, "op": op}


def _containers(obj, found: list) -> list:
    """Every dict and list inside ``obj`` (including itself), depth first."""
    found.append(obj)
    children = obj.values() if isinstance(obj, dict) else obj
    for child in children:
        if isinstance(child, (dict, list)):
            _containers(child, found)
    return found


@st.composite
def mutated_requests(draw) -> dict:
    """A valid request with 1..4 structural mutations anywhere inside it."""
    # A deep copy: the strategies' constants (unit sizes as lists) must not be mutated.
    request = copy.deepcopy(draw(valid_requests()))
    for _ in range(draw(st.integers(1, 4))):
        targets = _containers(request, [])
        target = draw(st.sampled_from(targets))
        kind = draw(st.sampled_from(["set", "set", "drop", "wrap", "rename"]))
        if isinstance(target, dict):
            key = draw(st.sampled_from(sorted(target, key=str)) if target and kind != "set"
                       else st.sampled_from(FIELD_NAMES) | st.text(max_size=6))
            if kind == "drop":
                target.pop(key, None)
            elif kind == "wrap" and key in target:
                target[key] = draw(st.sampled_from([[target[key]], {"v": target[key]}, [target[key]] * 2]))
            elif kind == "rename" and key in target:
                target[draw(st.sampled_from(FIELD_NAMES) | st.text(max_size=6))] = target.pop(key)
            else:
                target[key] = draw(values)
        elif target:
            index = draw(st.integers(0, len(target) - 1))
            if kind == "drop":
                del target[index]
            elif kind == "wrap":
                target[index] = [target[index]]
            else:
                target[index] = draw(values)
        else:
            target.append(draw(values))
    return request


def pack(obj, single_float: bool = False) -> bytes:
    """msgpack bytes; ``single_float`` sends floats as float32 where they fit (engines do)."""
    try:
        return msgpack.packb(obj, use_bin_type=True, use_single_float=single_float)
    except OverflowError:
        return msgpack.packb(obj, use_bin_type=True)


@st.composite
def encoded(draw, requests) -> bytes:
    return pack(draw(requests), draw(st.booleans()))


@st.composite
def byte_mutations(draw, requests) -> bytes:
    """A valid request's bytes with a few flips, cuts, insertions or splices."""
    body = bytearray(draw(encoded(requests)))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "set", "cut", "insert", "splice", "duplicate"]))
        at = draw(st.integers(0, max(0, len(body) - 1)))
        if kind == "flip" and body:
            body[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and body:
            body[at] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0x90, 0xC0, 0xC1, 0xCB, 0xD9, 0xDC, 0xDE, 0xFF,
                                              draw(st.integers(0, 255))]))
        elif kind == "cut":
            del body[at:at + draw(st.integers(1, 8))]
        elif kind == "insert":
            body[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "splice":
            body[at:] = draw(st.binary(max_size=16))
        else:
            body[at:at] = body[at:at + draw(st.integers(1, 16))]
    return bytes(body)


random_bytes = st.binary(max_size=96) | st.binary(min_size=1, max_size=8).map(lambda b: b"\x8a" + b)

#: Weighted towards requests that get past the decoder and into the handlers; the
#: derived cases below add plenty of bytes that do not.
any_body = st.one_of(
    random_bytes,
    encoded(valid_requests()),
    encoded(valid_requests()),
    encoded(mutated_requests()),
    encoded(mutated_requests()),
    encoded(mutated_requests()),
    byte_mutations(valid_requests()),
    encoded(values),
)

_SPECIAL_BYTES = (0x00, 0x7F, 0x80, 0x8F, 0x90, 0xC0, 0xC1, 0xC2, 0xC4, 0xCB, 0xCF, 0xD3, 0xD9, 0xDB, 0xDD, 0xDF,
                  0xE0, 0xFF)


def derived(body: bytes, count: int) -> list[bytes]:
    """``count`` cheap variants of ``body``, fixed by its bytes (so a failure replays):
    cut at a random point, one byte flipped, one byte set to a msgpack type marker, a
    chunk repeated. Hypothesis draws are slow (about 1 ms a request); these multiply the
    cases each draw buys, and a failing variant still shrinks through its source."""
    rng = random.Random(zlib.crc32(body))
    variants = []
    for k in range(count):
        out = bytearray(body)
        at = rng.randrange(len(out)) if out else 0
        kind = k % 4
        if kind == 0:
            del out[at:]
        elif kind == 1 and out:
            out[at] ^= 1 << rng.randrange(8)
        elif kind == 2 and out:
            out[at] = rng.choice(_SPECIAL_BYTES)
        else:
            out[at:at] = out[at:at + rng.randrange(1, 12)]
        variants.append(bytes(out))
    return variants


# -- bodies from a byte string of choices -------------------------------------------------------
#
# Structured strategies cost about 1-6 ms a draw here, too slow for ten thousand cases in a
# few seconds. ``genome_body`` instead reads every choice from one drawn byte string (one
# draw, well under a millisecond): hypothesis still generates and shrinks it (towards zero
# bytes, which read as the simplest valid ``path``), it only sees bytes.


def _deep(depth: int):
    value: list = [0]
    for _ in range(depth - 1):
        value = [value]
    return value


ODD_VALUES = (
    None, True, False, 0, 1, -1, 2, 1.5, 2**31, 2**63 - 1, 2**64 - 1, -(2**63), math.nan, math.inf, -math.inf,
    -0.0, 1e300, -1e300, 5e-324, 2.0**53, "", "x", "arena", "ARENA", "../arena", "/etc/passwd", "world", "los",
    "x" * 4097, "é" * 3, b"", b"\x00\xff", [], {}, [0], [1, 2], [1, 2, 3], [math.nan, 0], [0, math.inf],
    [[0, 0]], [[0, 0, 1, 1]], [[0, 0, 0, 0]], [-1, -1], [1e300, 1e300], [True, False], ["0", "0"], [None, None],
    {"start": [0, 0]}, {"start": [0, 0], "goal": [1, 1]}, {"x": 1}, msgpack.ExtType(1, b"ab"),
    msgpack.Timestamp(0, 0), _deep(7), _deep(8), _deep(9), list(range(300)), {f"k{i}": i for i in range(65)},
    # Near misses of the queries' and uploads' shapes: avoid maps, traversal rules, bins.
    {"cells": [[0, 0]], "rects": [[0, 0, 1, 1]]}, {"cells": [[math.nan, 0]]}, {"rects": [[0, 0, 0, 1]]},
    {"cells": 1}, {"water": None}, {"water": 0.5}, {"boat": {"water": None}}, {"": 1}, "boat", "cell",
    b"\x00" * 7, float32_bytes([math.nan, 0.0]), float32_bytes([1e30, 1e30]),
    # Near misses of a packed batch's bins: a pair and a half, int32 extremes, three pairs.
    b"\x00" * 12, struct.pack("<2i", 2**31 - 1, -(2**31)), struct.pack("<6i", 0, 0, 1, 0, 9, 4),
    {"cells": b"\x00" * 7}, {"cells": struct.pack("<2i", -(2**31), 2**31 - 1)},
)
GOOD_VALUES = {
    "map": SMALL_MAP_NAMES + UPLOAD_NAMES,
    "start": ([0, 0], [1, 0], [0.5, 0.5], [3, 2], [7, 4], [9, 0], [-0.5, 0.0], [2.9999, 1], [1, 1, 0], [2, 2, 1]),
    "goal": ([9, 4], [0, 0], [2, 1], [5.5, 2.5], [63, 63], [4, 0], [1, 1], [0, 4]),
    "unit_size": (1, 2, 3, [1, 2], [2, 1], 2.0, [1.0, 3], None),
    "space": ("grid", "world", None),
    "smooth": ("los", "corners", "none", None),
    "diagonal": ("no_corner_cutting", "never", "always", None),
    "snap": (True, False, None),
    "allow_partial": (False, True, None),
    "max_expansions": (1, 3, 50, 1000, None),
    "heuristic": ("octile", "euclidean", "manhattan", "chebyshev", None),
    "weight": (1, 1.5, 4.0, None),
    "max_climb": (0, 0.5, 1, 3.0, math.inf, None),
    "algorithm": ("auto", "astar", "jps", None),
    "line_of_sight": (True, False, None),
    "rects": ([[1, 1, 2, 2]], [[0, 0, 0.5, 0.5]], [[-3, -3, 4, 4]], [[5, 1, 3, 9], [0, 0, 1, 1]]),
    "cells": ([[0, 0]], [[2.5, 1.5]], [[9, 4], [0, 4]]),
    "solid": (True, False),
    "cost": (1, 2.5, 9),
    "if_gen": (0, 1, 7, 40),
    "side": (1, 2, 3, 5),
    "cell": (0, 1, 1, 1, 2, 9, 255),
    "layer": (1.0, 1.5, 2.0, 300.0, math.nan, math.inf, 0.5, -1.0),
    "region": ([0, 0, 1, 1], [0, 0, 3, 2], [1, 1, 2, 2], [0, 0, 10, 5], [-1, 0, 2, 2], [0, 0, 0, 1], [9, 4, 1, 1]),
    # The queries beyond one path and the options shaping one path: a handful of points.
    "goals": ([[9, 4]], [[0, 0], [9, 4]], [[3, 2], [7, 4], [1, 1]], [[2.5, 1.5]], [[63, 63]], [[-1, 0], [4, 0]]),
    "avoid": ({"cells": [[1, 0]]}, {"rects": [[0, 1, 3, 2]]}, {"cells": [[2, 1], [9, 9]], "rects": [[4, 0, 1, 5]]},
              {}, {"cells": [], "rects": [[0, 0, 0.5, 0.5]]}, {"rects": [[-3, -3, 4, 4]]},
              {"cells": struct.pack("<4i", 1, 0, 2, 1)}, {"cells": b""}),
    "avoid_cost": (1, 2.5, 10, None),
    "traversal": TRAVERSALS + (None,),
    "budget": (0, 1, 2.5, 6, 12),
    "max_cost": (0, 1, 4.5, 20, None),
    "lookahead": ("cell", "los", None),
    "positions": ([[0, 0]], [[1, 1], [9, 4]], [], float32_bytes([0.5, 0.5, 3, 2]), float32_bytes([9, 4]), b"",
                  [[2.5, 0.5], [0, 4], [63, 0]]),
    "points": ([[0, 0], [9, 4]], [[0, 0]], [], [[0, 0], [4, 0], [9, 4], [0, 4]], [[1, 0], [2, 0]]),
    "tag": (0, 0, 1, 2, 3, 255),
    "packed": (True, False, None),
    # A packed batch's starts and goals: int32 pairs (grid) or float32 pairs (world).
    "starts": (struct.pack("<2i", 0, 0), struct.pack("<4i", 0, 0, 3, 2), float32_bytes([0.5, 0.5]), b""),
    "column_goals": (struct.pack("<2i", 9, 4), struct.pack("<4i", 9, 4, 63, 63), float32_bytes([1.5, 2.5]), b""),
}
#: Ops by the genome's first byte (a zero genome is a ``path``).
_OPS_ORDER = ("path", "paths", "update", "path", "ping", "maps", "stats", "path", "put_map", "get_map", "drop_map",
              *QUERY_OPS)
#: The options ``path`` and ``paths`` take (``pathserver.options``: new ones join by themselves).
_OPTIONAL = op_fields("path")
#: Each query op's required fields (set first), and the options it may add.
_QUERY_REQUIRED = {"reachable": ("start", "budget"), "field": ("goals",), "next_steps": ("goals", "positions"),
                   "check_block": ("points",)}
_QUERY_OPTIONAL = {op: tuple(name for name in op_fields(op) if name not in _QUERY_REQUIRED[op])
                   for op in QUERY_OPS}


class _Choices:
    """Reads choices from bytes; past the end every choice is 0 (the first option)."""

    def __init__(self, data: bytes):
        self.data = data
        self.at = 0

    def below(self, n: int) -> int:
        byte = self.data[self.at] if self.at < len(self.data) else 0
        self.at += 1
        return byte % n

    def pick(self, options):
        return options[self.below(len(options))]


def genome_request(genome: bytes):
    """A request (or, rarely, another value) built from the choices in ``genome``."""
    c = _Choices(genome)
    op = c.pick(_OPS_ORDER)
    request: dict = {"id": c.below(256) - 8, "op": op}
    if op in ("path", "paths", "update", *QUERY_OPS):
        request["map"] = c.pick(GOOD_VALUES["map"])
    if op in ("put_map", "get_map", "drop_map"):
        request["map"] = c.pick(UPLOAD_NAMES + GOOD_VALUES["map"][:2])
    if op == "put_map":
        width, height = c.pick(GOOD_VALUES["side"]), c.pick(GOOD_VALUES["side"])
        request["width"], request["height"] = width, height
        request["cells"] = bytes(c.pick(GOOD_VALUES["cell"]) for _ in range(width * height))
        for layer in ("costs", "heights"):
            if c.below(3) == 1:
                request[layer] = float32_bytes([c.pick(GOOD_VALUES["layer"]) for _ in range(width * height)])
        if c.below(4) == 1:
            request["shape"] = "hex"
            request["layout"] = c.pick(LAYOUTS)
        if c.below(4) == 1:
            request["tags"] = bytes(c.pick(GOOD_VALUES["tag"]) for _ in range(width * height))
            if c.below(3):
                request["tag_names"] = dict(TAG_NAMES)
                if c.below(3):
                    request["classes"] = copy.deepcopy(CLASSES)
    if op == "get_map" and c.below(2):
        request["region"] = list(c.pick(GOOD_VALUES["region"]))
    if op == "path":
        request["start"] = list(c.pick(GOOD_VALUES["start"]))
        request["goal"] = list(c.pick(GOOD_VALUES["goal"]))
    if op in ("path", "paths"):
        for _ in range(c.below(4)):
            key = c.pick(_OPTIONAL)
            request[key] = copy.deepcopy(c.pick(GOOD_VALUES[key]))
        if op == "path" and request.get("goals") is not None:
            del request["goal"]  # goals in place of goal
    if op in QUERY_OPS:
        for key in _QUERY_REQUIRED[op]:
            request[key] = copy.deepcopy(c.pick(GOOD_VALUES[key]))
        if op == "check_block":
            placed = ("rects", "cells", "both")[c.below(3)]
            for key in ("rects", "cells"):
                if placed in (key, "both"):
                    request[key] = copy.deepcopy(c.pick(GOOD_VALUES[key]))
        for _ in range(c.below(4)):
            key = c.pick(_QUERY_OPTIONAL[op])
            request[key] = copy.deepcopy(c.pick(GOOD_VALUES[key]))
    if op in ("path", "paths") and c.below(3) == 1:
        request["packed"] = c.pick(GOOD_VALUES["packed"])
    if op == "paths" and c.below(3) == 1:
        # A packed batch: the columns in place of requests (goals a column, not the option).
        request["starts"] = c.pick(GOOD_VALUES["starts"])
        request["goals"] = c.pick(GOOD_VALUES["column_goals"])
    elif op == "paths":
        request["requests"] = [
            {"start": list(c.pick(GOOD_VALUES["start"])), "goal": list(c.pick(GOOD_VALUES["goal"])),
             **({"unit_size": c.pick(GOOD_VALUES["unit_size"])} if c.below(3) == 1 else {})}
            for _ in range(c.below(5))
        ]
        for entry in request["requests"]:
            if c.below(4) == 1:  # an entry's own option, or goals (the batch's when it has them)
                key = c.pick(("goals", "avoid", "avoid_cost", "traversal", "goal"))
                if key == "goal":
                    if request.get("goals") is not None:
                        del entry["goal"]
                else:
                    entry[key] = copy.deepcopy(c.pick(GOOD_VALUES[key]))
                    if key == "goals":
                        del entry["goal"]
    if op == "update":
        request["rects" if c.below(2) else "cells"] = copy.deepcopy(c.pick(GOOD_VALUES["rects"] + GOOD_VALUES["cells"]))
        request["solid" if c.below(3) else "cost"] = c.pick((True, False, 2.5))
        if c.below(3) == 1:
            request["space"] = c.pick(("grid", "world"))
        if c.below(4) == 1:
            request["if_gen"] = c.pick(GOOD_VALUES["if_gen"])
    # Mutations: set, drop, wrap or rename a field, or poke inside a list field.
    for _ in range(c.below(4)):
        action = c.below(5)
        key = c.pick(FIELD_NAMES + ("x", ""))
        if action == 0:
            request[key] = copy.deepcopy(c.pick(ODD_VALUES))
        elif action == 1:
            request.pop(key, None)
        elif action == 2 and key in request:
            request[key] = [request[key]]
        elif action == 3 and key in request:
            request[c.pick(FIELD_NAMES)] = request.pop(key)
        else:
            target = request.get(key)
            if isinstance(target, list) and target:
                index = c.below(len(target))
                if isinstance(target[index], (list, dict)) and c.below(2):
                    inner = target[index]
                    if isinstance(inner, dict):
                        inner[c.pick(("start", "goal", "unit_size", "smooth", "goals", "avoid", "traversal",
                                      "x"))] = copy.deepcopy(c.pick(ODD_VALUES))
                    elif inner:
                        inner[c.below(len(inner))] = copy.deepcopy(c.pick(ODD_VALUES))
                else:
                    target[index] = copy.deepcopy(c.pick(ODD_VALUES))
            elif isinstance(target, dict):  # avoid, traversal, tag_names, classes
                inner_key = c.pick(("cells", "rects", "water", "mud", "boat", "x"))
                if c.below(2) and isinstance(target.get(inner_key), list) and target[inner_key]:
                    target[inner_key][c.below(len(target[inner_key]))] = copy.deepcopy(c.pick(ODD_VALUES))
                else:
                    target[inner_key] = copy.deepcopy(c.pick(ODD_VALUES))
    shape = c.below(16)
    if shape == 15:
        return c.pick(ODD_VALUES)  # not a map at all
    if shape == 14:
        return {1: request}  # a non-string key
    return request


def genome_body(genome: bytes) -> bytes:
    body = pack(genome_request(genome), single_float=bool(genome[-1] & 1) if genome else False)
    return body


genome_bodies = st.binary(max_size=48).map(genome_body)
