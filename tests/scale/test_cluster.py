"""A broker and worker processes on loopback, driven through the unchanged client."""

import signal
import threading
import time

import msgpack
import zmq

import sockets

from scale.cluster import DOOR, EAST, WEST, WORKER_READY, worker_identity
from pathserver.broker import main as broker_main
from pathserver.client import Client, ClientTimeoutError


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


def test_an_update_through_the_broker_reaches_every_worker_and_later_joiners(cluster):
    cluster.start_broker()
    first, second = cluster.start_workers(2)
    identities = [worker_identity(first), worker_identity(second)]
    with Client(cluster.front, timeout=1.0) as client:
        assert all(client.find_path("rooms", WEST, EAST)["status"] == "found" for _ in range(4))
        client.update("rooms", cells=[DOOR], solid=True)
        deadline = time.monotonic() + 5
        while True:
            seen = stats_by_worker(client, identities)
            if all(s["edit_feed"]["seq"] >= 1 for s in seen.values()):
                break
            assert time.monotonic() < deadline, seen
        # Both workers have it: whichever answers, the door is closed.
        assert all(client.find_path("rooms", WEST, EAST)["status"] == "no_path" for _ in range(6))
        # A worker started now replays the edit before it takes requests; with the other
        # two gone, it answers everything.
        (late,) = cluster.start_workers(1)
        first.kill()
        second.kill()
        replies = [client.find_path("rooms", WEST, EAST) for _ in range(4)]
        assert [r["status"] for r in replies] == ["no_path"] * 4
        late_stats = client.stats()
    assert late_stats["worker"] == worker_identity(late)
    assert late_stats["edit_feed"]["seq"] == 1
    assert late_stats["edit_feed"]["applied"] == 1


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
