"""The server's fast path for ``path`` requests must agree with the full pipeline
(``decode_request`` then ``parse_request``): the same request when it accepts, and every
refusal left to the full validator, so error replies keep their code, ``at`` and message."""

import math

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pathserver.errors import PathserverError
from pathserver.options import PER_REQUEST
from pathserver.protocol.codec import DEFAULT_LIMITS, Limits, decode_request, peek_id
from pathserver.protocol.path_requests import FAST_CHECKS, FAST_OPTIONAL, parse_path_fast
from pathserver.protocol.requests import PathQuery, PathRequest, request_id
from pathserver.server.failures import error_reply_bytes
from pathserver.server.handlers import read_request
from pathserver.server.ops import parse_request

BASE = {"id": 1, "op": "path", "map": "m", "start": [0, 0], "goal": [3, 4]}


def reference(body: bytes, limits: Limits = DEFAULT_LIMITS):
    """``read_request`` as it was before the fast path: the full decode and validation."""
    rid = None
    try:
        try:
            obj = decode_request(body, limits)
        except PathserverError:
            rid = peek_id(body)
            raise
        rid = request_id(obj)
        return parse_request(obj), None, None
    except Exception as exc:
        reply, code = error_reply_bytes(rid, exc)
        return None, reply, code


def test_every_optional_field_has_a_fast_check_but_the_per_request_ones():
    # goals, avoid, avoid_cost and traversal are the full validator's (arrays and maps);
    # packed, the reply's form, is no option and is checked on its own.
    assert FAST_CHECKS.keys() == FAST_OPTIONAL - set(PER_REQUEST) - {"packed"}


@pytest.mark.parametrize("packed", [True, False, None])
def test_packed_takes_the_fast_path(packed):
    obj = {**BASE, "packed": packed, "space": "world"}
    fast = parse_path_fast(obj)
    assert isinstance(fast, PathRequest) and fast == parse_request(obj) and fast.packed is bool(packed)


@pytest.mark.parametrize("packed", [1, "true", [True], b"\x01"])
def test_a_packed_that_is_no_bool_gets_the_full_validators_error(packed):
    body = msgpack.packb({**BASE, "packed": packed}, use_bin_type=True)
    assert parse_path_fast(msgpack.unpackb(body)) is None
    assert read_request(body) == reference(body) and read_request(body)[2] == "invalid_request"


@pytest.mark.parametrize("fields", [{"goals": [[1, 1]], "goal": None}, {"avoid_cost": 2}, {"traversal": {}},
                                    {"avoid": {"cells": [[1, 1]], "rects": [[0, 0, 0, 1]]}},
                                    {"avoid": {"cells": [[1, True]]}}, {"avoid": [[1, 1]]}])
def test_a_per_request_option_goes_to_the_full_validator(fields):
    # But a plainly valid avoid (below); a refused one keeps the full validator's error.
    assert parse_path_fast({**BASE, **fields}) is None
    body = msgpack.packb({**BASE, **fields})
    assert read_request(body) == reference(body)


def test_avoided_cells_take_the_fast_path_within_the_depth_limit():
    # Other units' cells, a game's common extra: four levels deep.
    obj = {**BASE, "avoid": {"cells": [[1, 1], [2.5, 3]], "rects": [[0, 0, 2, 1]]}}
    fast = parse_path_fast(obj)
    assert isinstance(fast, PathRequest) and fast == parse_request(obj)
    assert parse_path_fast(obj, max_depth=3) is None
    body = msgpack.packb(obj)
    assert read_request(body) == reference(body)
    assert read_request(body, Limits(max_depth=3)) == reference(body, Limits(max_depth=3))
    assert read_request(body, Limits(max_depth=3))[2] == "too_large"


def test_avoided_cells_as_a_bin_take_the_fast_path_and_a_broken_bin_the_full_validators_error():
    import numpy as np

    cells = np.array([[1, 1], [-3, 2**31 - 1]], dtype="<i4").tobytes()
    obj = {**BASE, "avoid": {"cells": cells, "rects": [[0, 0, 2, 1]]}}
    fast = parse_path_fast(obj)
    assert isinstance(fast, PathRequest) and fast == parse_request(obj)
    body = msgpack.packb(obj)
    assert read_request(body) == reference(body)
    broken = msgpack.packb({**BASE, "avoid": {"cells": cells[:-1]}})
    assert parse_path_fast(msgpack.unpackb(broken)) is None
    assert read_request(broken) == reference(broken) and read_request(broken)[2] == "invalid_request"


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"unit_size": 2, "space": "world", "smooth": "corners", "diagonal": "never", "heuristic": "euclidean",
         "algorithm": "astar", "allow_partial": True, "snap": False, "line_of_sight": False, "max_expansions": 9,
         "weight": 2, "max_climb": 0.5},
        {"unit_size": [2, 3], "start": [1.5, 2.0], "smooth": None, "weight": None},
    ],
    ids=["bare", "every-option", "pairs-and-nil"],
)
def test_common_requests_take_the_fast_path(fields):
    obj = {**BASE, **fields}
    fast = parse_path_fast(obj)
    assert isinstance(fast, PathRequest)
    assert fast == parse_request(obj)


@pytest.mark.parametrize(
    "obj",
    [
        {**BASE, "smooth": [[[[[[[[["los"]]]]]]]]]},
        {**BASE, "start": [[[[[[[[[0]]]]]]]], 0]},
    ],
    ids=["deep-option", "deep-point"],
)
def test_deep_values_are_still_too_large(obj):
    body = msgpack.packb(obj)
    request, reply, code = read_request(body)
    assert request is None and code == "too_large"
    assert reply == reference(body)[1]


def test_a_tiny_depth_limit_turns_the_fast_path_off():
    body = msgpack.packb(BASE)
    limits = Limits(max_depth=1)
    assert read_request(body, limits)[2] == "too_large"
    assert read_request(body, limits) == reference(body, limits)


VALUES = st.sampled_from([
    None, True, False, 0, 1, -1, 2, 3, 7, 2**64 - 1, -(2**63), 0.0, -0.0, 0.5, 1.0, 1.5, 2.0, 3.0,
    math.nan, math.inf, -math.inf, "", "path", "ping", "m", "x" * 257, "grid", "world", "los", "corners", "none",
    "never", "always", "no_corner_cutting", "octile", "manhattan", "euclidean", "chebyshev", "auto", "astar",
    "jps", b"m", [], [0], [0, 0], [1, 2], [2, 3], [1.5, 2.0], [0, True], [0, None], [0, "1"], [0, math.nan],
    [math.inf, 0], [1, 2, 3], [[0, 0], 0], {}, {"x": 1},
])
KEYS = st.sampled_from(sorted(BASE) + sorted(FAST_OPTIONAL) + ["colour", "requests", "rects"])


@settings(max_examples=2000, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=6), st.lists(KEYS, max_size=2), st.booleans())
def test_read_request_matches_the_full_pipeline(changes, removed, bin_key):
    obj = {**BASE, **changes}
    for key in removed:
        obj.pop(key, None)
    if bin_key:
        obj[b"id"] = 1
    body = msgpack.packb(obj, use_bin_type=True)
    assert read_request(body) == reference(body)
    fast = parse_path_fast(msgpack.unpackb(body, strict_map_key=False))
    if fast is not None:
        assert type(fast.query) is PathQuery
        assert fast == parse_request(obj)
