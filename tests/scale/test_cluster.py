"""A broker and worker processes on loopback sharing their state on a real Redis, driven
through the unchanged client."""

import signal
import threading
import time

import msgpack
import numpy as np
import zmq

import sockets

from scale.cluster import DOOR, EAST, WEST, WORKER_READY, worker_identity
from pathserver.broker import main as broker_main
from pathserver.client import Client, ClientTimeoutError
from pathserver.editlog.connection import seq_of


def stats_by_worker(client: Client, identities, attempts: int = 40) -> dict:
    """Ask ``stats`` until every identity answered (round-robin spreads the asks)."""
    seen = {}
    for _ in range(attempts):
        reply = client.stats()
        seen[reply["worker"]] = reply
        if set(identities) <= set(seen):
            return seen
    raise AssertionError(f"stats never came from {set(identities) - set(seen)}; got {sorted(seen)}")


def test_a_killed_worker_loses_no_request_and_a_new_worker_gets_traffic(cluster):
    cluster.start_broker()
    doomed, survivor = cluster.start_workers(2)
    stop = threading.Event()
    answered, failures = [], []

    def drive():
        count = 0
        # Lazy Pirate: a request stuck on the killed worker times out and is resent.
        with Client(cluster.front, timeout=0.5, retries=5) as client:
            try:
                while not stop.is_set():
                    assert client.find_path("rooms", WEST, EAST)["status"] == "found"
                    count += 1
            except (ClientTimeoutError, AssertionError) as exc:
                failures.append(exc)
        answered.append(count)

    drivers = [threading.Thread(target=drive, name=f"driver-{i}") for i in range(4)]
    for driver in drivers:
        driver.start()
    try:
        time.sleep(1.0)
        doomed.popen.send_signal(signal.SIGKILL)
        newcomer = cluster.spawn_worker()
        newcomer.wait_line(WORKER_READY, 60)  # joins while the load runs
        time.sleep(1.0)
    finally:
        stop.set()
        for driver in drivers:
            driver.join(10)
    assert failures == []
    assert sum(answered) > 100
    with Client(cluster.front, timeout=1.0) as client:
        seen = stats_by_worker(client, [worker_identity(survivor), worker_identity(newcomer)])
    assert seen[worker_identity(newcomer)]["ops"].get("path", 0) > 0
    assert worker_identity(doomed) not in seen


def test_an_update_read_with_after_is_on_every_worker_and_later_joiners(cluster):
    cluster.start_broker()
    first, second = cluster.start_workers(2)
    with Client(cluster.front, timeout=2.0) as client:
        assert all(client.find_path("rooms", WEST, EAST)["status"] == "found" for _ in range(4))
        reply = client.update("rooms", cells=[DOOR], solid=True)
        seq = reply["seq"]
        # Whichever worker answers, with after it has the door closed.
        assert all(client.find_path("rooms", WEST, EAST, after=seq)["status"] == "no_path" for _ in range(6))
        # A worker started now loads the edit before it takes requests; with the other
        # two gone, it answers everything.
        (late,) = cluster.start_workers(1)
        first.kill()
        second.kill()
        replies = [client.find_path("rooms", WEST, EAST) for _ in range(4)]
        assert [r["status"] for r in replies] == ["no_path"] * 4
        late_stats = client.stats()
    assert late_stats["worker"] == worker_identity(late)
    assert late_stats["state"]["applied"] == seq


def test_an_upload_through_the_broker_is_served_by_every_worker_and_a_later_one(cluster):
    cluster.start_broker()
    first, second = cluster.start_workers(2)
    walkable = np.ones((20, 30), dtype=bool)
    walkable[:, 15] = False
    walkable[10, 15] = True  # one door
    with Client(cluster.front, timeout=5.0) as client:
        reply = client.put_map("uploaded", walkable)
        assert reply["width"] == 30 and reply["height"] == 20 and reply["seq"]
        answers = [client.find_path("uploaded", [0, 0], [29, 19], after=reply["seq"]) for _ in range(6)]
        assert {a["status"] for a in answers} == {"found"}
        assert len({a["cost"] for a in answers}) == 1
        (late,) = cluster.start_workers(1)
        first.kill()
        second.kill()
        assert client.find_path("uploaded", [0, 0], [29, 19])["cost"] == answers[0]["cost"]
        assert np.array_equal(client.get_map("uploaded").walkable, walkable)
        assert client.stats()["worker"] == worker_identity(late)
        dropped = client.drop_map("uploaded")
        assert seq_of(dropped["seq"]) > seq_of(reply["seq"])
        assert "uploaded" not in [entry["name"] for entry in client.maps()]


def test_the_broker_stops_at_once_even_with_a_request_and_no_worker(cluster):
    broker = cluster.start_broker()
    context = zmq.Context()
    try:
        dealer = sockets.bounded_socket(context, connect=cluster.front)
        dealer.send_multipart([b"", msgpack.packb({"id": 1, "op": "ping"})])
        time.sleep(0.3)  # the request now waits in the broker for a worker
        started = time.monotonic()
        broker.signal(signal.SIGTERM)
        assert broker.popen.wait(5) == 0
        assert time.monotonic() - started < 2.0
        assert "Traceback" not in broker.stderr()
        dealer.close()
    finally:
        context.destroy(linger=0)


def test_the_broker_refuses_a_lan_address_without_insecure(capsys):
    assert broker_main(["--front", "tcp://0.0.0.0:0"]) == 2
    assert "refusing to bind front tcp://0.0.0.0:0" in capsys.readouterr().err
