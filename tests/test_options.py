"""The search options are defined once (``pathserver.options``): the wire and ``find_path``
accept and refuse the same values alike, the CLI and ``pathserver options`` show them, and
find_path's prepared-call key counts every one of them."""

from __future__ import annotations

import inspect
import json
import math

import numpy as np
import pytest

from pathserver import GridMap, cli, find_path
from pathserver.errors import RequestError
from pathserver.server.ops import parse_request

#: Values at and around each option's edges (its range, its type, values of another type
#: that compare equal to valid ones), as msgpack can carry them: lists, not tuples.
BOUNDARIES = {
    "unit_size": [1, 2, 0, -1, 2.0, 2.5, True, None, "2", math.nan, math.inf, [1, 2], [2, 2.0], [0, 1], [1],
                  [1, 2, 3], [True, 1], [1, math.nan], [1, "2"]],
    "smooth": ["los", "corners", "none", "", "LOS", 1, True, None, ["los"]],
    "allow_partial": [True, False, 0, 1, None, "true"],
    "snap": [True, False, 0, 1, None, "true"],
    "max_expansions": [1, 2, 0, -1, 1.0, True, None, "1", 2**63, 2**64 - 1],
    "heuristic": ["octile", "euclidean", "manhattan", "chebyshev", "", "Octile", 0, False, None],
    "weight": [1, 1.0, 0.5, 0.999, 1.5, 0, True, None, "2", math.nan, math.inf, -math.inf, 1e300],
    "diagonal": ["no_corner_cutting", "never", "always", "sometimes", 2, None],
    "max_climb": [0, 0.0, -0.0, 0.5, -0.5, -1, True, False, None, "1", math.nan, math.inf, -math.inf],
    "algorithm": ["auto", "astar", "jps", "dijkstra", 1, None],
    "line_of_sight": [True, False, 0, 1, None, "no"],
}
#: find_path works in grid cells: ``space`` is the wire's alone.
WIRE_ONLY = {"space"}

OPEN = GridMap(np.ones((8, 8), dtype=bool))


def _outcome(call) -> tuple:
    """``("ok",)``, or the refusal's code, ``at`` and message."""
    try:
        call()
    except RequestError as error:
        return error.code, error.at, error.message
    return ("ok",)


CASES = [(name, value) for name, values in BOUNDARIES.items() for value in values]


def _both(name, value) -> tuple[tuple, tuple]:
    wire = _outcome(lambda: parse_request(
        {"id": 1, "op": "path", "map": "m", "start": [0, 0], "goal": [7, 7], name: value}
    ))
    python = _outcome(lambda: find_path(OPEN, (0, 0), (7, 7), **{name: value}))
    return wire, python


@pytest.mark.parametrize("name, value", CASES, ids=[f"{name}={value!r}" for name, value in CASES])
def test_the_wire_and_find_path_accept_and_refuse_alike(name, value):
    wire, python = _both(name, value)
    assert (python == ("ok",)) == (wire == ("ok",)), f"wire: {wire}, find_path: {python}"


@pytest.mark.parametrize("name, value", CASES, ids=[f"{name}={value!r}" for name, value in CASES])
def test_a_refusal_has_the_same_code_at_and_message_on_both(name, value):
    wire, python = _both(name, value)
    assert python == wire


def test_the_boundaries_cover_every_option():
    from pathserver.options import OPTIONS, WIRE_OPTIONS

    assert WIRE_OPTIONS == OPTIONS
    assert set(BOUNDARIES) | set(QUERY_BOUNDARIES) == {option.name for option in OPTIONS} - WIRE_ONLY
    assert not set(BOUNDARIES) & set(QUERY_BOUNDARIES)


#: The Python functions and the parameters they take that are no option.
FUNCTIONS = {
    "find_path": ("gridmap", "start", "goal"),
    "reachable": ("gridmap", "start"),
    "distance_field": ("gridmap",),
    "next_steps": ("gridmap", "positions"),
    "check_block": ("gridmap", "rects", "cells", "points"),
}


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_function_takes_its_options_with_their_python_defaults(function):
    import pathserver
    from pathserver.options import function_options

    parameters = inspect.signature(getattr(pathserver, function)).parameters
    options = function_options(function)
    assert set(parameters) - set(FUNCTIONS[function]) == {option.name for option in options}
    for option in options:
        if parameters[option.name].default is not inspect.Parameter.empty:
            assert parameters[option.name].default == option.python_default, (function, option.name)


#: The options of the queries beyond one path: (value, the code it gets or "ok", at),
#: through the function that takes it and through its wire request.
QUERY_BOUNDARIES = {
    "goals": [([[1, 1]], "ok", None), ([], "invalid_request", "goals"), ([[1, 1]] * 4097, "too_large", "goals"),
              ([[1]], "invalid_request", "goals[0]"), ([[1, True]], "invalid_request", "goals[0][1]"),
              ([[1, math.nan]], "non_finite", "goals[0][1]"), ([[1.5, 2.5]], "ok", None), (5, "invalid_request",
                                                                                         "goals"),
              ([[9, 1]], "out_of_bounds", "goals[0]")],
    "budget": [(0, "ok", None), (2.5, "ok", None), (-1, "invalid_request", "budget"), (None, "invalid_request",
                                                                                     "budget"),
               (True, "invalid_request", "budget"), (math.inf, "non_finite", "budget")],
    "max_cost": [(0, "ok", None), (None, "ok", None), (-0.5, "invalid_request", "max_cost"),
                 ("1", "invalid_request", "max_cost")],
    "region": [([0, 0, 8, 8], "ok", None), ([1, 1, 2.0, 3], "ok", None), ([0, 0, 0, 1], "invalid_request", "region"),
               ([0, 0, 1], "invalid_request", "region"), ([0, 0.5, 1, 1], "invalid_request", "region[1]"),
               ([7, 7, 2, 2], "out_of_bounds", "region")],
    "lookahead": [("cell", "ok", None), ("los", "ok", None), ("far", "invalid_request", "lookahead"),
                  (1, "invalid_request", "lookahead")],
    "avoid": [({"cells": [[1, 1]]}, "ok", None), ({}, "ok", None), ({"rects": [[0, 0, 2, 2]], "cells": None}, "ok",
                                                                    None),
              ([[1, 1]], "invalid_request", "avoid"), ({"cell": []}, "invalid_request", "avoid.cell"),
              ({"rects": [[0, 0, -1, 2]]}, "invalid_request", "avoid.rects[0]"),
              ({"cells": [[1, 1]] * 65537}, "too_large", "avoid"),
              # The compact form: a bin of int32 x, y pairs.
              ({"cells": bytes(8)}, "ok", None), ({"cells": b""}, "ok", None),
              ({"cells": bytes(7)}, "invalid_request", "avoid.cells"),
              ({"cells": bytes(8 * 65537)}, "too_large", "avoid")],
    "avoid_cost": [(1, "ok", None), (2.5, "ok", None), (0.9, "invalid_request", "avoid_cost"),
                   (math.nan, "non_finite", "avoid_cost")],
    "traversal": [({}, "ok", None), ("", "invalid_request", "traversal"), ("boat", "invalid_request", "traversal"),
                  ({"water": None}, "invalid_request", "traversal.water"), (["a"], "invalid_request", "traversal")],
}
_TAKER = {"goals": "distance_field", "budget": "reachable", "max_cost": "distance_field", "region": "distance_field",
          "lookahead": "next_steps", "avoid": "find_path", "avoid_cost": "reachable", "traversal": "find_path"}


#: The wire request of each function.
_OPS = {"find_path": "path", "reachable": "reachable", "distance_field": "field", "next_steps": "next_steps"}


def _wire_call(name, value):
    """The request :func:`_python_call` makes, over the wire (a real handler, one map)."""
    import msgpack

    from pathserver.server.handlers import respond

    taker = _TAKER[name]
    request = {"id": 1, "op": _OPS[taker], "map": "m"}
    if taker == "distance_field":
        request["goals"] = [[0, 0]]
    elif taker == "reachable":
        request.update(start=[0, 0], budget=3)
    elif taker == "next_steps":
        request.update(goals=[[0, 0]], positions=[[3, 3]])
    else:
        request.update(start=[0, 0], goal=[7, 7])
    request[name] = value

    class Registry:
        def get(self, map_name):
            return OPEN

    reply = msgpack.unpackb(respond(msgpack.packb(request), Registry()))
    return ("ok",) if reply["ok"] else (reply["error"]["code"], reply["error"]["at"])


def _python_call(name, value):
    from pathserver import distance_field, next_steps, reachable

    taker = _TAKER[name]
    if taker == "distance_field":
        goals = value if name == "goals" else [[0, 0]]
        extra = {} if name == "goals" else {name: value}
        return lambda: distance_field(OPEN, goals, **extra)
    if taker == "reachable":
        budget = value if name == "budget" else 3
        extra = {} if name == "budget" else {name: value}
        return lambda: reachable(OPEN, (0, 0), budget, **extra)
    if taker == "next_steps":
        return lambda: next_steps(OPEN, [(0, 0)], 1, [(3, 3)], **{name: value})
    return lambda: find_path(OPEN, (0, 0), (7, 7), **{name: value})


QUERY_CASES = [(name, *case) for name, cases in QUERY_BOUNDARIES.items() for case in cases]


@pytest.mark.parametrize("name, value, code, at", QUERY_CASES,
                         ids=[f"{name}={str(value)[:20]}" for name, value, *_ in QUERY_CASES])
def test_the_query_options_refuse_with_a_code_and_at_in_python_and_on_the_wire(name, value, code, at):
    outcome = _outcome(_python_call(name, value))
    wire = _wire_call(name, value)
    if code == "ok":
        assert outcome == ("ok",) and wire == ("ok",)
    else:
        assert outcome[:2] == (code, at) and wire == (code, at)


def test_the_tables_list_each_option_with_the_requests_taking_it():
    from pathserver.options import OPTIONS, QUERY_OPS
    from pathserver.options.tables import as_json, markdown_table, query_options_table, text_table

    listed = {entry["name"]: entry for entry in as_json()["options"]}
    for option in OPTIONS:
        assert listed[option.name]["ops"] == list(option.ops)
        assert f"| `{option.name}` |" in markdown_table() and option.name in text_table()
        if set(option.ops) & set(QUERY_OPS):
            assert f"| `{option.name}` |" in query_options_table()

def test_the_kernel_codes_name_exactly_the_choices():
    from pathserver.grid import prepared
    from pathserver.options import BY_NAME

    for name, table in (("smooth", prepared.SMOOTHING), ("diagonal", prepared.DIAGONALS),
                        ("heuristic", prepared.HEURISTICS)):
        assert set(table) == set(BY_NAME[name].choices), name


def _valid_pair(option):
    """Two values of ``option`` that both pass and differ."""
    if option.kind == "enum":
        return option.choices[:2]
    if option.kind == "bool":
        return (True, False)
    if option.kind == "unit_size":
        return (1, 2)
    return (option.min, option.min + (5 if option.kind == "int" else 0.5))


def test_each_option_has_a_slot_in_the_prepared_call_key():
    from pathserver.options import SEARCH_OPTIONS

    for option in SEARCH_OPTIONS:
        m = GridMap(np.ones((8, 8), dtype=bool))
        for value in _valid_pair(option):
            find_path(m, (0, 0), (7, 7), **{option.name: value})
        assert len(m.layers.prepared_calls()) == 2, f"{option.name}: two values, one prepared call"


def test_a_value_equal_to_a_kept_one_but_of_another_type_is_still_checked():
    from pathserver.options import SEARCH_OPTIONS

    # True == 1 and 1.0 == 1: a key without the value's type would find the kept call.
    for option in SEARCH_OPTIONS:
        if option.kind == "enum":
            continue
        valid = _valid_pair(option)[0]
        m = GridMap(np.ones((8, 8), dtype=bool))
        find_path(m, (0, 0), (7, 7), **{option.name: valid})
        for other in (True, 1, 1.0, 0, 0.0):
            if other == valid and type(other) is not type(valid):
                wire = _outcome(lambda: parse_request(
                    {"id": 1, "op": "path", "map": "m", "start": [0, 0], "goal": [7, 7], option.name: other}
                ))
                assert _outcome(lambda: find_path(m, (0, 0), (7, 7), **{option.name: other})) == wire, (
                    option.name, other
                )


def test_numpy_values_count_as_the_numbers_they_hold():
    r = find_path(OPEN, (0, 0), (7, 7), np.int64(2), max_expansions=np.int64(50), weight=np.float32(1.5),
                  snap=np.bool_(True), smooth=np.str_("los"))
    assert r.found
    assert find_path(OPEN, (0, 0), (7, 7), np.array([2, 1])).found
    with pytest.raises(RequestError) as info:
        find_path(OPEN, (0, 0), (7, 7), max_expansions=np.int64(0))
    assert info.value.at == "max_expansions"


def test_options_json_has_the_shape_clients_read(capsys):
    assert cli.main(["options", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert list(listed) == ["options"]
    names = [entry["name"] for entry in listed["options"]]
    assert names == ["unit_size", "space", "smooth", "allow_partial", "snap", "max_expansions", "heuristic",
                     "weight", "diagonal", "max_climb", "algorithm", "line_of_sight", "goals", "budget", "max_cost",
                     "region", "lookahead", "avoid", "avoid_cost", "traversal"]
    for entry in listed["options"]:
        has_choices = entry["kind"] in ("enum", "space")
        has_max = entry["kind"] in ("points", "cells")
        assert list(entry) == ["name", "kind"] + (["choices"] if has_choices else []) + [
            "wire_default", "python_default", "min"] + (["max"] if has_max else []) + ["ops", "doc"]
        assert entry["kind"] in ("enum", "bool", "int", "float", "unit_size", "space", "points", "rect", "cells",
                                 "traversal")
        assert entry["ops"] and set(entry["ops"]) <= {"path", "paths", "update", "reachable", "field", "next_steps",
                                                      "check_block"}
        assert entry["min"] is None or type(entry["min"]) in (int, float)
        assert isinstance(entry["doc"], str) and entry["doc"]
    smooth = listed["options"][2]
    assert smooth["choices"] == ["los", "corners", "none"]
    assert (smooth["wire_default"], smooth["python_default"]) == ("los", "none")
    assert listed["options"][5]["min"] == 1  # max_expansions: >= 1, null (no limit) by default
    assert listed["options"][5]["wire_default"] is None


def test_options_without_json_prints_a_table(capsys):
    assert cli.main(["options"]) == 0
    out = capsys.readouterr().out
    for entry in ("smooth", "--no-snap", '"los" on the wire, "none" in Python', "int >= 1"):
        assert entry in out


def test_the_path_command_takes_the_options_flags(tmp_path, capsys):
    (tmp_path / "m.map").write_text("type octile\nheight 3\nwidth 4\nmap\n....\n.@..\n....\n")
    args = [str(tmp_path / "m.map"), "0", "0", "3", "2", "--json"]
    assert cli.main(["path", *args, "--smooth", "los", "--no-line-of-sight", "--algorithm", "astar"]) == 0
    assert json.loads(capsys.readouterr().out)["algorithm"] == "astar"
    assert cli.main(["path", *args, "--max-expansions", "0"]) == 2
    assert "invalid_request: 'max_expansions' must be >= 1, got 0" in capsys.readouterr().err


def test_the_default_call_and_every_default_spelled_out_agree_and_a_bool_size_is_still_refused():
    # find_path keys a call with every option left at its default by the int unit size
    # alone: the same answer as the full key's, and no way round the unit size's check.
    from pathserver.options import SEARCH_OPTIONS

    m = GridMap(np.ones((8, 8), dtype=bool))
    spelled = {option.name: option.python_default for option in SEARCH_OPTIONS if option.name != "unit_size"}
    spelled["smooth"] = "".join(["no", "ne"])  # equal to the default, not the same object
    plain = find_path(m, (0, 0), (7, 5))
    full = find_path(m, (0, 0), (7, 5), 1, **spelled)
    assert (plain.status, plain.cost, plain.path.tolist()) == (full.status, full.cost, full.path.tolist())
    assert len(m.layers.prepared_calls()) == 2
    wire = _outcome(lambda: parse_request({"id": 1, "op": "path", "map": "m", "start": [0, 0], "goal": [7, 5],
                                           "unit_size": True}))
    assert wire[0] == "invalid_request"
    assert _outcome(lambda: find_path(m, (0, 0), (7, 5), True)) == wire
    assert find_path(m, (0, 0), (7, 5), np.int64(1)).cost == plain.cost
