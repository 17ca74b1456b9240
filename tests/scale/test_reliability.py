"""The shared state through failures, with processes: a broker killed and restarted,
Redis killed and restarted, Redis not answering for seconds, concurrent edits through
two workers, and ``after`` under load. Each runs for seconds; ``--slow`` runs them
longer."""

import random
import threading
import time

import numpy as np
import pytest

from pathserver.client import Client, ServerError
from pathserver.editlog.connection import AFTER_TIMEOUT_S, COMMAND_TIMEOUT_S, seq_of
from scale.cluster import DOOR, EAST, WEST, WORKER_READY, worker_identity
from scale.test_cluster import stats_by_worker


@pytest.fixture
def seconds(request):
    """How long a load runs: a couple of seconds, ten times that with --slow."""
    return 20.0 if request.config.getoption("--slow") else 2.0


def retried(send, timeout: float = 10.0) -> dict:
    """``send()``'s reply, sent again while it fails retryably (Redis coming back)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return send()
        except ServerError as exc:
            assert exc.retryable and time.monotonic() < deadline, exc
            time.sleep(0.2)


def closed(client: Client, seq: str) -> bool:
    return client.find_path("rooms", WEST, EAST, after=seq)["status"] == "no_path"


def test_acknowledged_changes_survive_the_broker_killed_and_restarted(cluster):
    cluster.start_broker()
    (worker,) = cluster.start_workers(1)
    front, back = cluster.front, cluster.back
    with Client(front, timeout=2.0) as client:
        client.put_map("yard", np.ones((4, 8), dtype=bool))
        seq = client.update("yard", cells=[[3, 1]], solid=True)["seq"]
    cluster.broker.kill()
    cluster.start_broker(front=front, back=back)  # the same endpoints: the old worker reconnects
    (late,) = cluster.start_workers(1)
    with Client(front, timeout=2.0, retries=3) as client:
        seen = stats_by_worker(client, [worker_identity(worker), worker_identity(late)])
        assert {s["state"]["applied"] for s in seen.values()} == {seq}
        for _ in range(4):
            assert not client.get_map("yard").walkable[1, 3]


def test_acknowledged_changes_survive_redis_killed_and_restarted(cluster, redis_server):
    cluster.start_broker()
    workers = cluster.start_workers(2)
    with Client(cluster.front, timeout=2.0) as client:
        client.put_map("yard", np.ones((4, 8), dtype=bool))
        seq = client.update("rooms", cells=[DOOR], solid=True)["seq"]
        redis_server.kill()  # SIGKILL: only what the append-only file holds comes back
        redis_server.start()
        reply = retried(lambda: client.update("yard", cells=[[0, 0]], solid=True))  # the workers reconnect
        assert seq_of(reply["seq"]) > seq_of(seq)
        (late,) = cluster.start_workers(1)
        for worker in workers:
            worker.kill()
        assert closed(client, reply["seq"]) and not client.get_map("yard").walkable[0, 0]
        assert client.stats()["worker"] == worker_identity(late)


def test_while_redis_does_not_answer_edits_are_refused_and_paths_answered(cluster, redis_server):
    cluster.start_broker()
    cluster.start_workers(2)
    # An edit waits COMMAND_TIMEOUT_S and AFTER_TIMEOUT_S at most; the rest is slack for
    # the broker's hop on a shared machine. A queued edit would time the client out.
    refused_within = COMMAND_TIMEOUT_S + AFTER_TIMEOUT_S + 2.0
    with Client(cluster.front, timeout=refused_within + 2.0) as client:
        redis_server.pause()  # SIGSTOP: connections stay open, nothing answers
        try:
            started = time.monotonic()
            with pytest.raises(ServerError) as refused:
                client.update("rooms", cells=[DOOR], solid=True)
            assert refused.value.code == "state_unavailable" and refused.value.retryable
            assert time.monotonic() - started < refused_within
            paths = [client.find_path("rooms", WEST, EAST)["status"] for _ in range(20)]
            assert paths == ["found"] * 20
            time.sleep(1.0)
        finally:
            redis_server.resume()
        seq = retried(lambda: client.update("rooms", cells=[DOOR], solid=True))["seq"]
        assert all(closed(client, seq) for _ in range(6))


def test_concurrent_edits_through_two_workers_leave_both_on_the_same_cells(cluster, seconds):
    cluster.start_broker()
    workers = cluster.start_workers(2)
    identities = [worker_identity(w) for w in workers]
    stop = threading.Event()
    last, errors = [], []

    def edit(seed):
        rng = random.Random(seed)
        seq = None
        with Client(cluster.front, timeout=2.0) as client:
            while not stop.is_set():
                x, y, w, h = rng.randrange(11), rng.randrange(5), rng.randint(1, 3), rng.randint(1, 2)
                try:
                    seq = client.update("rooms", rects=[[x, y, w, h]], solid=rng.random() < 0.4,
                                        cost=float(rng.randint(1, 5)))["seq"]
                except ServerError as exc:
                    if not exc.retryable:  # a stall of Redis on a loaded machine: sent again, as clients do
                        errors.append(exc)
        last.append(seq)

    editors = [threading.Thread(target=edit, args=(i,)) for i in range(4)]
    for editor in editors:
        editor.start()
    time.sleep(seconds)
    stop.set()
    for editor in editors:
        editor.join(10)
    assert errors == [] and None not in last
    newest = max(last, key=seq_of)
    with Client(cluster.front, timeout=2.0) as client:
        seen = {}
        while set(seen) != set(identities):
            reply = client.request("stats", after=newest)
            seen[reply["worker"]] = reply["state"]
    crcs = {identity: state["crc"]["rooms"] for identity, state in seen.items()}
    assert len(set(crcs.values())) == 1, crcs
    assert all(state["failed"] == 0 for state in seen.values())


def test_after_gives_read_your_writes_on_every_worker_under_load(cluster, seconds):
    cluster.start_broker()
    cluster.start_workers(2, threads=2)
    stop = threading.Event()
    wrong, loaded = [], []

    def load():
        count = 0
        with Client(cluster.front, timeout=2.0) as client:
            while not stop.is_set():
                client.find_path("rooms", WEST, EAST)
                count += 1
        loaded.append(count)

    drivers = [threading.Thread(target=load) for _ in range(3)]
    for driver in drivers:
        driver.start()
    rounds = 0
    try:
        with Client(cluster.front, timeout=2.0) as client:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                solid = rounds % 2 == 0
                # A machine this loaded may stall Redis past its bound: clients retry that.
                seq = retried(lambda: client.update("rooms", cells=[DOOR], solid=solid))["seq"]
                status = retried(lambda: client.find_path("rooms", WEST, EAST, after=seq))["status"]
                if status != ("no_path" if solid else "found"):
                    wrong.append((rounds, seq, status))
                rounds += 1
    finally:
        stop.set()
        for driver in drivers:
            driver.join(10)
    assert wrong == []
    assert rounds > 10 and sum(loaded) > 100
