"""Validation into typed requests: each refusal names its field path in ``at``."""

import math

import pytest

from pathserver.errors import BadUnitSizeError, NonFiniteError, RequestError, TooLargeError, UnknownOpError
from pathserver.protocol.requests import (
    PathQuery,
    PathRequest,
    PathsRequest,
    PingRequest,
    UpdateRequest,
)
from pathserver.server.ops import parse_request


def path(**fields):
    return {"id": 1, "op": "path", "map": "m", "start": [0, 0], "goal": [3, 4], **fields}


def test_path_with_wire_defaults():
    request = parse_request(path())
    assert isinstance(request, PathRequest)
    assert request.query == PathQuery((0, 0), (3, 4), (1, 1), "grid", {"smooth": "los"})


def test_path_options_pass_through_and_nil_means_default():
    request = parse_request(path(unit_size=[2, 3.0], space="world", smooth=None, heuristic="euclidean",
                                 weight=2, max_expansions=50, allow_partial=True, snap=False,
                                 max_climb=0.5, algorithm="astar", line_of_sight=False, diagonal="never"))
    q = request.query
    assert q.unit_size == (2, 3) and q.space == "world"
    assert q.options == {"smooth": "los", "diagonal": "never", "heuristic": "euclidean", "weight": 2.0,
                         "max_expansions": 50, "allow_partial": True, "snap": False, "max_climb": 0.5,
                         "algorithm": "astar", "line_of_sight": False}


@pytest.mark.parametrize(
    "obj, error, at",
    [
        ({"op": "ping"}, RequestError, "id"),
        ({"id": "1", "op": "ping"}, RequestError, "id"),
        ({"id": True, "op": "ping"}, RequestError, "id"),
        ({"id": 1}, RequestError, "op"),
        ({"id": 1, "op": "PING"}, UnknownOpError, "op"),
        ({"id": 1, "op": "ping", "extra": 1}, RequestError, "extra"),
        (path(map=3), RequestError, "map"),
        (path(map=""), RequestError, "map"),
        ({"id": 1, "op": "path", "start": [0, 0], "goal": [1, 1]}, RequestError, "map"),
        (path(start=[0]), RequestError, "start"),
        (path(start=[0, "1"]), RequestError, "start[1]"),
        (path(start=[0, True]), RequestError, "start[1]"),
        (path(goal=[math.nan, 0]), NonFiniteError, "goal[0]"),
        (path(unit_size=0), BadUnitSizeError, "unit_size"),
        (path(unit_size=[1, -2]), BadUnitSizeError, "unit_size[1]"),
        (path(unit_size=1.5), BadUnitSizeError, "unit_size"),
        (path(unit_size="big"), RequestError, "unit_size"),
        (path(unit_size=math.inf), NonFiniteError, "unit_size"),
        (path(smooth="straight"), RequestError, "smooth"),
        (path(diagonal=1), RequestError, "diagonal"),
        (path(space="screen"), RequestError, "space"),
        (path(snap=1), RequestError, "snap"),
        (path(max_expansions=0), RequestError, "max_expansions"),
        (path(max_expansions=1.0), RequestError, "max_expansions"),
        (path(weight=0.5), RequestError, "weight"),
        (path(weight=math.inf), NonFiniteError, "weight"),
        (path(max_climb=-1), RequestError, "max_climb"),
        ({"id": 1, "op": "paths", "map": "m"}, RequestError, "requests"),
        ({"id": 1, "op": "paths", "map": "m", "requests": {}}, RequestError, "requests"),
        ({"id": 1, "op": "paths", "map": "m", "requests": [], "smooth": "x"}, RequestError, "smooth"),
        ({"id": 1, "op": "paths", "map": "m", "requests": [{}] * 4097}, TooLargeError, "requests"),
        ({"id": 1, "op": "update", "map": "m", "solid": True}, RequestError, "rects"),
        ({"id": 1, "op": "update", "map": "m", "rects": [[0, 0, 1]], "solid": True}, RequestError, "rects[0]"),
        ({"id": 1, "op": "update", "map": "m", "rects": [[0, 0, 0, 1]], "solid": True}, RequestError, "rects[0]"),
        ({"id": 1, "op": "update", "map": "m", "cells": [[0, math.nan]], "solid": True}, NonFiniteError,
         "cells[0][1]"),
        ({"id": 1, "op": "update", "map": "m", "cells": [[0, 0]]}, RequestError, "solid"),
        ({"id": 1, "op": "update", "map": "m", "cells": [[0, 0]], "cost": 0.5}, RequestError, "cost"),
        ({"id": 1, "op": "update", "map": "m", "cells": [[0, 0]], "solid": "yes"}, RequestError, "solid"),
    ],
)
def test_refusals_name_the_field(obj, error, at):
    with pytest.raises(error) as info:
        parse_request(obj)
    assert type(info.value) is error
    assert info.value.at == at


def test_batch_entries_fail_alone_with_prefixed_paths():
    request = parse_request({
        "id": 1, "op": "paths", "map": "m", "unit_size": 2, "smooth": "none",
        "requests": [
            {"start": [0, 0], "goal": [1, 1]},
            {"start": [0, 0]},
            "nope",
            {"start": [0, 0], "goal": [1, 1], "unit_size": 3, "smooth": "corners"},
            {"start": [0, 0], "goal": [1, 1], "colour": "red"},
        ],
    })
    assert isinstance(request, PathsRequest)
    first, missing, nope, override, unknown = request.items
    assert first.unit_size == (2, 2) and first.options["smooth"] == "none"
    assert missing.at == "requests[1].goal"
    assert nope.at == "requests[2]"
    assert override.unit_size == (3, 3) and override.options["smooth"] == "corners"
    assert unknown.at == "requests[4].colour"
    assert first.group_key() != override.group_key()


def test_update_and_bare_ops():
    update = parse_request({"id": 1, "op": "update", "map": "m", "rects": [[0, 0, 2, 2]], "cells": [[5, 5]],
                            "cost": 3, "space": "world"})
    assert update == UpdateRequest(1, "m", ((0, 0, 2, 2),), ((5, 5),), None, 3.0, "world")
    assert parse_request({"id": -5, "op": "ping"}) == PingRequest(-5)
