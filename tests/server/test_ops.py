"""Each op over a real socket, and each error code from a real bad request."""

import math

import msgpack
import pytest

from pathserver.errors import WIRE_CODES
from pathserver.server import path_ops


def ask(dealer, **request):
    return dealer.ask({"id": 1, **request})


def error(reply):
    assert reply["ok"] is False, reply
    assert "Traceback" not in reply["error"]["message"]
    return reply["error"]["code"], reply["error"]["at"]


def test_path_reply_fields_in_grid_space(dealer):
    reply = ask(dealer, op="path", map="arena", start=[0, 4], goal=[9, 2], smooth="none")
    assert list(reply) == [
        "id", "ok", "status", "path", "cost", "length", "expanded",
        "start", "goal", "start_snapped", "goal_snapped", "gen",
    ]
    assert reply["status"] == "found" and reply["path"][0] == [0, 4] and reply["path"][-1] == [9, 2]
    assert all(type(v) is int for point in reply["path"] for v in point)
    assert type(reply["gen"]) is int and reply["expanded"] > 0


def test_wire_default_smooth_is_line_of_sight(dealer):
    smooth = ask(dealer, op="path", map="arena", start=[0, 4], goal=[9, 2])
    full = ask(dealer, op="path", map="arena", start=[0, 4], goal=[9, 2], smooth="none")
    assert len(smooth["path"]) < len(full["path"])
    assert smooth["cost"] <= full["cost"] + 1e-9


def test_world_space_uses_cell_centres(dealer):
    grid = ask(dealer, op="path", map="arena", start=[0, 4], goal=[9, 0])
    world = ask(dealer, op="path", map="arena", start=[0.2, 4.9], goal=[9.99, 0.0], space="world")
    assert world["path"] == [[x + 0.5, y + 0.5] for x, y in grid["path"]]
    assert world["start"] == [0.5, 4.5] and world["goal"] == [9.5, 0.5]


def test_float_grid_coordinates_are_floored(dealer):
    reply = ask(dealer, op="path", map="arena", start=[0.9, 4.9], goal=[9.1, 0.5])
    assert reply["start"] == [0, 4] and reply["goal"] == [9, 0]


def test_results_not_errors(dealer):
    assert ask(dealer, op="path", map="split", start=[0, 0], goal=[4, 0])["status"] == "no_path"
    partial = ask(dealer, op="path", map="split", start=[0, 0], goal=[4, 0], allow_partial=True)
    assert partial["status"] == "partial" and partial["path"][-1][0] == 1
    snapped = ask(dealer, op="path", map="arena", start=[0, 0], goal=[2, 1])
    assert snapped["status"] == "found" and snapped["goal_snapped"] is True


def test_batch_one_result_per_entry_in_order(dealer):
    reply = ask(
        dealer,
        op="paths",
        map="arena",
        smooth="none",
        requests=[
            {"start": [0, 0], "goal": [9, 0]},
            {"start": [0, 0], "goal": [99, 0]},
            {"start": [0, 0], "goal": [9, 4], "smooth": "los"},
            {"start": [0, 0]},
            {"start": [0, 4], "goal": [9, 4], "unit_size": 0},
        ],
    )
    assert reply["ok"] and type(reply["gen"]) is int
    results = reply["results"]
    assert len(results) == 5
    assert results[0]["ok"] and len(results[0]["path"]) == 10
    assert results[1] == {"ok": False, "error": {**results[1]["error"], "code": "out_of_bounds", "at": "requests[1].goal"}}
    assert results[2]["ok"] and len(results[2]["path"]) < 8
    assert results[3]["error"]["code"] == "invalid_request" and results[3]["error"]["at"] == "requests[3].goal"
    assert results[4]["error"]["code"] == "bad_unit_size" and results[4]["error"]["at"] == "requests[4].unit_size"


def test_big_batch_matches_single_requests(dealer):
    pairs = [([x % 10, 0], [(x * 7) % 10, 4]) for x in range(180)]
    batch = ask(dealer, op="paths", map="arena", requests=[{"start": s, "goal": g} for s, g in pairs])
    for (start, goal), result in zip(pairs[:20], batch["results"]):
        single = ask(dealer, op="path", map="arena", start=start, goal=goal)
        assert result["path"] == single["path"] and math.isclose(result["cost"], single["cost"])


def test_maps_lists_every_map(dealer):
    maps = ask(dealer, op="maps")["maps"]
    assert [m["name"] for m in maps] == ["arena", "split"]
    arena = maps[0]
    assert (arena["width"], arena["height"], arena["file"]) == (10, 5, "arena.map")
    assert type(arena["gen"]) is int and arena["loaded_at"] > 0 and arena["walkable_share"] == 0.76
    assert arena["origin"] == [0.0, 0.0] and arena["cell_size"] == 1.0 and arena["last_error"] is None


def test_update_is_visible_in_the_next_path_and_gen(dealer):
    before = ask(dealer, op="path", map="arena", start=[0, 4], goal=[9, 4])
    assert before["path"] == [[0, 4], [9, 4]]
    edit = ask(dealer, op="update", map="arena", rects=[[2, 4, 1, 1]], solid=True)
    assert list(edit) == ["id", "ok", "map", "gen"] and edit["map"] == "arena" and edit["gen"] > before["gen"]
    after = ask(dealer, op="path", map="arena", start=[0, 4], goal=[9, 4], smooth="none")
    assert after["gen"] == edit["gen"] and after["status"] == "found"
    assert [2, 4] not in after["path"] and len(after["path"]) > 10
    reopened = ask(dealer, op="update", map="arena", cells=[[2.5, 4.5]], solid=False, space="world")
    assert reopened["gen"] > edit["gen"]
    assert ask(dealer, op="path", map="arena", start=[0, 4], goal=[9, 4])["path"] == [[0, 4], [9, 4]]


def test_stats_counts_requests_errors_and_latency(dealer):
    ask(dealer, op="ping")
    ask(dealer, op="fly")
    stats = ask(dealer, op="stats")
    assert stats["requests"] == 3 and stats["replies"] == 2
    assert stats["errors"] == {"unknown_op": 1}
    assert stats["ops"] == {"invalid": 1, "ping": 1, "stats": 1}
    assert set(stats["latency_ms"]) == {"p50", "p90", "p99", "max"}
    assert stats["reloads_ok"] == 2 and stats["reloads_failed"] == 0 and stats["dropped_replies"] == 0


BAD_REQUESTS = [
    ("malformed", None, b"\xc1"),
    ("malformed", None, msgpack.packb([1, 2])),
    ("too_large", "requests", {"op": "paths", "map": "arena", "requests": [{}] * 5000}),
    ("invalid_request", "start[0]", {"op": "path", "map": "arena", "start": ["a", 0], "goal": [1, 1]}),
    ("invalid_request", "smoth", {"op": "path", "map": "arena", "start": [0, 0], "goal": [1, 1], "smoth": "los"}),
    ("unknown_op", "op", {"op": "teleport"}),
    ("unknown_map", "map", {"op": "path", "map": "atlantis", "start": [0, 0], "goal": [1, 1]}),
    ("out_of_bounds", "goal", {"op": "path", "map": "arena", "start": [0, 0], "goal": [10, 0]}),
    ("out_of_bounds", "start", {"op": "path", "map": "arena", "start": [-0.5, 0], "goal": [1, 0]}),
    ("non_finite", "goal[1]", {"op": "path", "map": "arena", "start": [0, 0], "goal": [1, math.inf]}),
    ("bad_unit_size", "unit_size", {"op": "path", "map": "arena", "start": [0, 0], "goal": [1, 0], "unit_size": 0}),
    ("bad_unit_size", "unit_size", {"op": "path", "map": "arena", "start": [0, 0], "goal": [1, 0], "unit_size": 6}),
    ("start_blocked", "start", {"op": "path", "map": "arena", "start": [1, 1], "goal": [0, 0], "snap": False}),
    ("goal_blocked", "goal", {"op": "path", "map": "arena", "start": [0, 0], "goal": [2, 1], "snap": False}),
    ("search_limit", "max_expansions",
     {"op": "path", "map": "arena", "start": [0, 0], "goal": [2, 2], "max_expansions": 1}),
    ("out_of_bounds", "rects[0]", {"op": "update", "map": "arena", "rects": [[20, 20, 2, 2]], "solid": True}),
    ("invalid_request", "solid", {"op": "update", "map": "arena", "cells": [[0, 0]]}),
    ("conflict", "map", {"op": "put_map", "map": "arena", "width": 1, "height": 1, "cells": b"\x01"}),
    ("invalid_request", "after", {"op": "ping", "after": 17}),
    ("invalid_request", "after", {"op": "path", "map": "arena", "start": [0, 0], "goal": [1, 1], "after": "17-x"}),
]


@pytest.mark.parametrize("code, at, request_", BAD_REQUESTS, ids=[f"{c}-{a}" for c, a, _ in BAD_REQUESTS])
def test_each_error_code_from_a_real_bad_request(dealer, code, at, request_):
    body = request_ if isinstance(request_, bytes) else msgpack.packb({"id": 5, **request_})
    dealer.send(body)
    reply = dealer.recv()
    assert error(reply) == (code, at)
    assert reply["id"] == (None if isinstance(request_, bytes) else 5)
    assert list(reply) == ["id", "ok", "error", "retryable"]
    assert list(reply["error"]) == ["code", "message", "at"]
    assert dealer.ask({"id": 6, "op": "ping"})["ok"]  # and the server is still up


def test_too_large_body_still_names_its_id(dealer):
    body = msgpack.packb({"id": 77, "op": "ping", "pad": "x" * 2000, "more": ["y" * 4000] * 300})
    assert len(body) > 1 << 20
    reply = dealer.ask(body)
    assert error(reply) == ("too_large", None) and reply["id"] == 77


def test_deep_nesting_is_too_large(dealer):
    nested = [0]
    for _ in range(20):
        nested = [nested]
    reply = ask(dealer, op="ping", x=nested)
    assert error(reply)[0] == "too_large"


def test_a_bug_becomes_internal_and_the_server_stays_up(dealer, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("secret detail")

    monkeypatch.setattr(path_ops, "find_path", broken)
    monkeypatch.setattr(path_ops, "find_path_within", broken)  # the loop's own try
    reply = ask(dealer, op="path", map="arena", start=[0, 0], goal=[9, 4])
    assert error(reply) == ("internal", None)
    assert "secret" not in reply["error"]["message"]
    assert "ZeroDivisionError" in caplog.text
    assert ask(dealer, op="ping")["ok"]


def test_every_code_is_exercised():
    # The shared state's own codes need a Redis: tests/scale/test_state.py and test_reliability.py.
    shared_state = {"state_unavailable", "after_timeout"}
    tested = {code for code, _, _ in BAD_REQUESTS} | {"too_large", "internal", "overloaded"} | shared_state
    assert tested == set(WIRE_CODES)


def test_without_shared_state_a_request_with_after_is_answered_at_once(dealer):
    # Every edit this server answered is applied here: there is nothing to wait for.
    reply = ask(dealer, op="path", map="arena", start=[0, 0], goal=[9, 4], after="1718000000000-0")
    assert reply["ok"] and reply["status"] == "found"
    update = ask(dealer, op="update", map="arena", cells=[[5, 0]], solid=False)
    assert update["ok"] and "seq" not in update


def test_answers_on_the_loop_and_on_the_workers_agree(start_server, make_dealer):
    inline = make_dealer(start_server().endpoint)
    pooled = make_dealer(start_server(inline_expansions=0).endpoint)
    cases = [
        {"map": "arena", "start": [0, 4], "goal": [9, 2]},
        {"map": "arena", "start": [0, 0], "goal": [2, 2], "smooth": "none"},
        {"map": "arena", "start": [0, 0], "goal": [2, 2], "max_expansions": 3, "allow_partial": True},
        {"map": "arena", "start": [0, 0], "goal": [2, 2], "max_expansions": 3},
        {"map": "split", "start": [0, 0], "goal": [4, 2], "allow_partial": True},
        {"map": "split", "start": [0, 0], "goal": [4, 2]},
        {"map": "arena", "start": [0, 0], "goal": [9, 4], "unit_size": 2, "diagonal": "never"},
        {"map": "arena", "start": [0.5, 0.5], "goal": [5.5, 2.5], "space": "world", "smooth": "corners"},
    ]
    for i, case in enumerate(cases):
        request_ = {"id": i, "op": "path", **case}
        assert inline.ask(request_) == pooled.ask(request_), case


def test_the_table_of_ops_is_the_one_the_options_and_the_docs_name():
    from pathserver.options import QUERY_OPS, OPTIONS
    from pathserver.protocol.requests import QueryRequest
    from pathserver.server import ops

    assert {op.name for op in ops.TABLE if op.request is QueryRequest} == set(QUERY_OPS)
    assert {name for option in OPTIONS for name in option.ops} <= set(ops.NAMES)
    assert len(set(ops.NAMES)) == len(ops.TABLE)
