"""CURVE on the broker's front: behind ``pathserver broker --curve-keys KEY --allow DIR``,
only an allowed client key talking to the right server key reaches the workers; the
workers still connect to the loopback back, edits and feed with the NULL mechanism."""

import pytest
import zmq

from pathserver.broker import main as broker_main
from scale.cluster import Cluster

SILENCE_MS = 700
PING = {"id": 1, "op": "ping"}
PATH = {"id": 2, "op": "path", "map": "arena", "start": [0, 4], "goal": [9, 4]}


@pytest.fixture
def curve_cluster(maps_dir, keys):
    cluster = Cluster(maps_dir)
    try:
        cluster.start_broker("--curve-keys", str(keys.server.secret_file), "--allow", str(keys.allowed))
        cluster.start_workers(1)
        yield cluster
    finally:
        cluster.close()


def test_allowed_key_reaches_a_worker_and_edits_still_flow(curve_cluster, make_dealer, keys, curve_options):
    alice = make_dealer(curve_cluster.front, curve_options(keys.server.public, keys.alice))
    assert alice.ask(PING) == {"id": 1, "ok": True, "protocol": 1}
    assert alice.ask(PATH)["status"] == "found"
    # An edit goes through the worker's own edits/feed connection to the broker (NULL,
    # loopback) and comes back as a new generation.
    update = alice.ask({"id": 3, "op": "update", "map": "arena", "rects": [[4, 0, 1, 9]], "solid": True})
    assert update["ok"], update
    assert alice.ask({**PATH, "id": 4})["gen"] == update["gen"]


def test_others_get_nothing_from_a_curve_broker(curve_cluster, make_dealer, keys, curve_options):
    alice = make_dealer(curve_cluster.front, curve_options(keys.server.public, keys.alice))
    assert alice.ask(PING)["ok"]
    plain = make_dealer(curve_cluster.front)
    mallory = make_dealer(curve_cluster.front, curve_options(keys.server.public, keys.mallory))
    fooled = make_dealer(curve_cluster.front, curve_options(keys.mallory.public, keys.alice))
    for intruder in (plain, mallory, fooled):
        assert intruder.ask(PING, timeout_ms=SILENCE_MS) is None
    assert alice.ask(PATH)["status"] == "found"


def test_broker_security_options_fail_in_one_line(keys, capsys):
    assert broker_main(["--allow", str(keys.allowed)]) == 2
    assert broker_main(["--curve-keys", str(keys.server.secret_file)]) == 2
    # CURVE covers the front only: a non-loopback back is still refused.
    assert broker_main(["--curve-keys", str(keys.server.secret_file), "--allow", str(keys.allowed),
                        "--back", "tcp://0.0.0.0:0"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("pathserver broker: ") for line in lines)
    assert "--curve-keys" in lines[0] and "--allow" in lines[1] and "back" in lines[2]


def test_curve_front_may_face_the_network(keys, capsys, monkeypatch):
    # With CURVE the front binds a non-loopback address without --insecure (then stops).
    import pathserver.broker as broker_module

    bound = {}

    class Stub:
        def __init__(self, front, back, **kwargs):
            bound.update(front=front, curve=kwargs.get("curve"))

        def bind(self):
            return {"front": bound["front"], "back": "b"}

        def run(self):
            pass

        def stop(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(broker_module, "Broker", Stub)
    assert broker_main(["--curve-keys", str(keys.server.secret_file), "--allow", str(keys.allowed),
                        "--front", "tcp://0.0.0.0:5999"]) == 0
    assert bound["curve"] is not None and bound["curve"].public_key == keys.server.public
    assert "ready on tcp://0.0.0.0:5999" in capsys.readouterr().out
