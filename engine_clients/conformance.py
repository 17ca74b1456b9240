"""The engine clients' conformance scenarios (``conformance.json``), run by the Python client.

    python engine_clients/conformance.py run ENDPOINT --silent-endpoint SILENT [--scenarios FILE]
    python engine_clients/conformance.py silent --bind tcp://127.0.0.1:PORT

``run`` sends every scenario through :class:`pathserver.client.Client` to the server at
ENDPOINT (the scenarios marked ``"server": "silent"`` to SILENT instead), compares each
outcome with the scenario's expectation, prints ``ok    conformance: NAME`` or ``FAIL ...``
per scenario and ``conformance (python): N passed, N failed`` last; exit code 1 when one
failed. ``silent`` binds a ZeroMQ ROUTER that completes the handshake and never answers, for
the timeout scenario, until it is killed; ``engine_clients/test.sh`` starts one beside its
server and hands both endpoints to every client's runner. ``tests/clients/test_conformance.py``
runs the same scenarios under pytest with a server of its own.

The C# (``csharp/Tests~/Tests.Conformance.cs``) and GDScript (``godot/tests/conformance_tests.gd``) runners follow
:func:`outcome` and :func:`mismatches` here: a path answer is ``status`` (``"no_path"``
included: an answer, not an error), ``cost``, ``start``, ``goal``, ``waypoints`` (how many),
``start_snapped``, ``goal_snapped``, ``start_floor`` and ``goal_floor`` (0 on a pair),
``links``; another op's answer is ``status`` ``"ok"`` with, for
``put_map``, ``width`` and ``height``, for ``get_map`` also ``region``, ``cells`` (a list of
bytes) and ``costs`` (a list of floats, when the reply has them); a failure is ``error`` (the
wire's code or the client's ``"timeout"``) and ``at``. A scenario's ``before`` requests go
first through the same client (the first failure is the outcome), its ``after`` requests last.
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
import time
from pathlib import Path

SCENARIOS = Path(__file__).resolve().parent / "conformance.json"
#: Numbers (cost, coordinates) match to this much.
TOLERANCE = 1e-6
#: A scenario without its own timeout_ms waits this long for a reply.
DEFAULT_TIMEOUT_MS = 5000
#: The statuses of a path answer (the others' answers are "ok").
PATH_STATUSES = ("found", "partial", "no_path")


def load_scenarios(path: Path | str = SCENARIOS) -> list[dict]:
    return json.loads(Path(path).read_text(encoding="utf-8"))["scenarios"]


def number(value):
    """A scenario coordinate: a number, or "nan" / "inf" / "-inf" (JSON has no such floats)."""
    return float(value) if isinstance(value, str) else value


def outcome(scenario: dict, endpoint: str, silent_endpoint: str | None) -> dict:
    """What the Python client reports for ``scenario``, in the shape the expectations use."""
    from pathserver.client import Client, ClientTimeoutError, ServerError

    request = scenario["request"]
    if scenario.get("server") == "silent":
        if silent_endpoint is None:
            raise ValueError(f"scenario {scenario['name']!r} needs a silent endpoint")
        endpoint = silent_endpoint
    timeout_s = request.get("timeout_ms", DEFAULT_TIMEOUT_MS) / 1000.0
    # retries=0: the scenario's timeout is the whole wait, as in the engine clients.
    with Client(endpoint, timeout=timeout_s, retries=0) as client:
        try:
            for step in scenario.get("before", []):
                got = _step(client, step, ServerError, ClientTimeoutError)
                if "error" in got:
                    return got
            return _step(client, request, ServerError, ClientTimeoutError)
        finally:
            for step in scenario.get("after", []):
                _step(client, step, ServerError, ClientTimeoutError)


def _step(client, request: dict, server_error, timeout_error) -> dict:
    """One request of a scenario through ``client``: its outcome, or ``error`` and ``at``."""
    try:
        return _answer(client, request)
    except server_error as error:
        return {"error": error.code, "at": error.at}
    except timeout_error as error:
        return {"error": error.code, "at": None}


def _float32(values) -> bytes:
    return struct.pack(f"<{len(values)}f", *(number(v) for v in values))


def _points(rows) -> list:
    return [[number(v) for v in row] for row in rows]


def _listed(values) -> list:
    """Floats as a scenario writes them: ``"inf"`` for +inf."""
    return ["inf" if math.isinf(v) else float(v) for v in values]


def _answer(client, request: dict) -> dict:
    op = request.get("op", "path")
    unit_size = request.get("unit_size", 1)
    options = request.get("options", {})
    if op == "path":
        goal = [number(v) for v in request["goal"]] if "goal" in request else None
        if "goals" in request:
            options = {**options, "goals": _points(request["goals"])}
        reply = client.find_path(request["map"], [number(v) for v in request["start"]], goal, unit_size, **options)
        start, goal = reply["start"], reply["goal"]
        got = {
            "status": reply["status"],
            "cost": reply["cost"],
            "start": start[:2],
            "goal": goal[:2],
            "start_floor": start[2] if len(start) == 3 else 0,
            "goal_floor": goal[2] if len(goal) == 3 else 0,
            "waypoints": len(reply["path"]),
            "start_snapped": reply["start_snapped"],
            "goal_snapped": reply["goal_snapped"],
            "links": reply.get("links", []),
        }
        if "goals" in request:
            got["goal_index"] = reply["goal_index"]
        return got
    if op == "reachable":
        reply = client.reachable(request["map"], _points([request["start"]])[0], request["budget"], unit_size,
                                 **options)
        cells, costs = reply["cells"], reply["costs"]
        return {"status": "ok", "count": len(cells), "first": cells[0].tolist() if len(cells) else None,
                "last_cost": float(costs[-1]) if len(costs) else None}
    if op == "field":
        reply = client.distance_field(request["map"], _points(request["goals"]), unit_size, **options)
        return {"status": "ok", "width": reply["width"], "height": reply["height"], "origin": reply["origin"],
                "cost": _listed(reply["cost"].ravel())}
    if op == "next_steps":
        reply = client.next_steps(request["map"], _points(request["goals"]), unit_size,
                                  _points(request["positions"]), **options)
        return {"status": "ok", "steps": reply["steps"].tolist(), "remaining": _listed(reply["remaining"])}
    if op == "check_block":
        reply = client.check_block(request["map"], rects=request.get("rects", []), cells=request.get("cells", []),
                                   unit_size=unit_size, points=_points(request["points"]), **options)
        return {"status": "ok", "disconnected": reply["disconnected"]}
    fields = {key: value for key, value in request.items() if key not in ("op", "timeout_ms")}
    if not fields:
        # An op alone goes out as it is, required fields missing included.
        client.request(op)
        return {"status": "ok"}
    if op == "put_map":
        fields["cells"] = bytes(fields["cells"])
        for key in ("costs", "heights"):
            if key in fields:
                fields[key] = _float32(fields[key])
        reply = client.request(op, **fields)
        return {"status": "ok", "width": reply["width"], "height": reply["height"]}
    if op == "get_map":
        reply = client.request(op, **fields)
        got = {
            "status": "ok",
            "width": reply["width"],
            "height": reply["height"],
            "region": reply["region"],
            "cells": list(reply["cells"]),
        }
        if "costs" in reply:
            got["costs"] = list(struct.unpack(f"<{len(reply['costs']) // 4}f", reply["costs"]))
        return got
    client.request(op, **fields)
    return {"status": "ok"}


def mismatches(expect: dict, got: dict) -> list[str]:
    """How ``got`` differs from ``expect``: numbers to :data:`TOLERANCE`, the rest exactly;
    for a path, ``start_snapped`` and ``goal_snapped`` are false unless expected true."""
    keys = list(expect)
    if expect.get("status") in PATH_STATUSES:
        keys += [key for key in ("start_snapped", "goal_snapped") if key not in expect]
    wrong = []
    for key in keys:
        wanted = expect.get(key, False)
        if not _same(wanted, got.get(key)):
            wrong.append(f"{key}: expected {json.dumps(wanted)}, got {json.dumps(got.get(key))}")
    return wrong


def _same(wanted, value) -> bool:
    if isinstance(wanted, bool) or wanted is None or isinstance(wanted, str):
        return wanted == value
    if isinstance(wanted, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool) and (
            math.isclose(wanted, value, rel_tol=0.0, abs_tol=TOLERANCE)
        )
    if isinstance(wanted, list):
        return isinstance(value, list) and len(value) == len(wanted) and all(map(_same, wanted, value))
    return wanted == value


def serve_silent(bind: str) -> None:
    """A ROUTER on ``bind`` that never answers; prints ``silent on ENDPOINT`` once bound."""
    import zmq

    context = zmq.Context()
    socket = context.socket(zmq.ROUTER)
    socket.linger = 0
    socket.bind(bind)
    print(f"silent on {socket.getsockopt_string(zmq.LAST_ENDPOINT)}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        socket.close(linger=0)
        context.term()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the scenarios against a server")
    run.add_argument("endpoint")
    run.add_argument("--silent-endpoint", required=True, help="a server that never answers")
    run.add_argument("--scenarios", default=str(SCENARIOS))
    silent = commands.add_parser("silent", help="a ROUTER that never answers, until killed")
    silent.add_argument("--bind", required=True)
    args = parser.parse_args(argv)
    if args.command == "silent":
        serve_silent(args.bind)
        return 0
    passed = failed = 0
    for scenario in load_scenarios(args.scenarios):
        got = outcome(scenario, args.endpoint, args.silent_endpoint)
        wrong = mismatches(scenario["expect"], got)
        if wrong:
            failed += 1
            print(f"FAIL  conformance: {scenario['name']}: {'; '.join(wrong)}")
        else:
            passed += 1
            print(f"ok    conformance: {scenario['name']}")
    print(f"conformance (python): {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
