"""The engine clients' conformance scenarios (engine_clients/conformance.json), run by the Python
client against a server of this test's own (the repository's maps/, a random loopback port) and
a ROUTER that never answers (the timeout scenario). The C# and GDScript clients run the same
list in engine_clients/test.sh and must report the same outcomes."""

import importlib.util
import threading
from pathlib import Path

import pytest
import zmq

from pathserver.maps.registry import MapRegistry
from pathserver.server.loop import Server
from pathserver.server.startup import warm_kernels

ROOT = Path(__file__).resolve().parents[2]


def _load_runner():
    spec = importlib.util.spec_from_file_location("conformance", ROOT / "engine_clients" / "conformance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


conformance = _load_runner()
SCENARIOS = conformance.load_scenarios()


@pytest.fixture(scope="module")
def endpoint():
    # Compiled first, as `pathserver serve` does before it is ready: with an empty numba
    # cache (CI) the first searches would otherwise outlast the scenarios' timeouts.
    warm_kernels()
    registry = MapRegistry(ROOT / "maps")
    registry.load_all()
    server = Server(registry, "tcp://127.0.0.1:0")
    server.bind()
    thread = threading.Thread(target=server.run, name="conformance-server", daemon=True)
    thread.start()
    yield server.endpoint
    server.stop()
    thread.join(5)
    server.close()
    registry.stop()


@pytest.fixture(scope="module")
def silent_endpoint():
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.linger = 0
    port = router.bind_to_random_port("tcp://127.0.0.1")
    yield f"tcp://127.0.0.1:{port}"
    router.close(linger=0)
    context.term()


def test_the_scenarios_cover_every_outcome_and_error_a_client_can_cause():
    covered = {s["expect"].get("status") or s["expect"]["error"] for s in SCENARIOS}
    assert covered >= {
        "found", "partial", "no_path", "invalid_request", "unknown_map", "out_of_bounds", "non_finite",
        "bad_unit_size", "start_blocked", "goal_blocked", "search_limit", "unknown_op", "timeout",
    }
    assert any(s["expect"].get("start_snapped") for s in SCENARIOS)
    assert len({s["name"] for s in SCENARIOS}) == len(SCENARIOS)


#: The first scenario's setup compiles every kernel when numba's cache is empty (CI): 110 s
#: on this project's 2-core machine, close to the suite's 120 s backstop.
WARM_UP_TIMEOUT_S = 300


@pytest.mark.timeout(WARM_UP_TIMEOUT_S)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_scenario(scenario, endpoint, silent_endpoint):
    got = conformance.outcome(scenario, endpoint, silent_endpoint)
    assert conformance.mismatches(scenario["expect"], got) == []


def test_mismatches_compares_numbers_to_a_tolerance_and_snapping_as_false_by_default():
    expect = {"status": "found", "cost": 8.0, "start": [2, 2]}
    got = {"status": "found", "cost": 8.0000004, "start": [2.0, 2.0], "start_snapped": False, "goal_snapped": False}
    assert conformance.mismatches(expect, got) == []
    assert conformance.mismatches(expect, {**got, "cost": 8.01}) == ["cost: expected 8.0, got 8.01"]
    assert conformance.mismatches(expect, {**got, "goal_snapped": True}) == [
        "goal_snapped: expected false, got true"
    ]
    assert conformance.mismatches({"error": "timeout", "at": None}, {"error": "timeout", "at": None}) == []
