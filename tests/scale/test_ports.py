"""The broker and its workers as a user starts them (``python -m pathserver broker``,
``python -m pathserver serve --connect``): the edit endpoints derived from one back
endpoint on both sides, an idle broker that sleeps, and a request that arrives while no
worker is connected."""

import signal
import subprocess
import sys
import threading
import time

import msgpack
import pytest
import zmq

from scale.cluster import DOOR, EAST, WEST, WORKER_READY, START_TIMEOUT_S, cpu_seconds, free_ports, worker_identity
from scale.test_cluster import stats_by_worker
from pathserver import broker as broker_module
from pathserver.broker import WORKER_WAIT_S
from pathserver.editlog import SharedEdits, edit_endpoints
from pathserver.client import Client
from pathserver.maps.registry import MapRegistry

#: "Idle" means this share of one core at most, measured over IDLE_WINDOW_S.
IDLE_CPU_SHARE = 0.02
IDLE_WINDOW_S = 10.0


@pytest.fixture
def dealer():
    """``dealer(endpoint)`` -> a DEALER with send and receive timeouts, closed with LINGER 0."""
    context = zmq.Context()
    made = []

    def connect(endpoint: str) -> zmq.Socket:
        sock = context.socket(zmq.DEALER)
        sock.linger = 0
        sock.sndtimeo = sock.rcvtimeo = 5000
        sock.connect(endpoint)
        made.append(sock)
        return sock

    yield connect
    for sock in made:
        sock.close(linger=0)
    context.term()


def ask(sock: zmq.Socket, request: dict) -> None:
    sock.send_multipart([b"", msgpack.packb(request)])


def answer(sock: zmq.Socket, timeout_s: float) -> dict | None:
    """The next reply within ``timeout_s``, or None."""
    if not sock.poll(int(timeout_s * 1000), zmq.POLLIN):
        return None
    return msgpack.unpackb(sock.recv_multipart()[-1], raw=False)


def test_a_broker_given_only_back_and_workers_given_only_connect_find_each_other(cluster):
    back_port = free_ports(3)
    back = f"tcp://127.0.0.1:{back_port}"
    cluster.launch_broker("--front", "tcp://127.0.0.1:0", "--back", back)
    # The edit log where `serve --connect` looks for it: the next two ports.
    assert (cluster.back, cluster.edits, cluster.feed) == (
        back, f"tcp://127.0.0.1:{back_port + 1}", f"tcp://127.0.0.1:{back_port + 2}")
    workers = [cluster.launch_worker("--connect", back) for _ in range(2)]
    for worker in workers:
        worker.wait_line(WORKER_READY, START_TIMEOUT_S)
    identities = [worker_identity(w) for w in workers]
    with Client(cluster.front, timeout=2.0) as client:
        assert all(client.find_path("rooms", WEST, EAST)["status"] == "found" for _ in range(4))
        client.update("rooms", cells=[list(DOOR)], solid=True)
        deadline = time.monotonic() + 5
        while not all(s["edit_feed"]["seq"] >= 1 for s in stats_by_worker(client, identities).values()):
            assert time.monotonic() < deadline, "the edit did not reach both workers through the derived feed"
            time.sleep(0.05)


@pytest.mark.parametrize("how", ["explicit", "wildcard back"])
def test_edit_endpoints_that_are_not_the_next_ports_are_named_for_the_workers(cluster, how):
    if how == "explicit":
        back_port, edits_port = free_ports(1), free_ports(2)
        cluster.launch_broker("--front", "tcp://127.0.0.1:0", "--back", f"tcp://127.0.0.1:{back_port}",
                              "--edits", f"tcp://127.0.0.1:{edits_port}", "--feed", f"tcp://127.0.0.1:{edits_port + 1}")
        assert (cluster.edits, cluster.feed) == (f"tcp://127.0.0.1:{edits_port}", f"tcp://127.0.0.1:{edits_port + 1}")
    else:
        # A wildcard back has no next port before it is bound: edits and feed take free ports too.
        cluster.launch_broker("--front", "tcp://127.0.0.1:0", "--back", "tcp://127.0.0.1:0")
    if (cluster.edits, cluster.feed) == edit_endpoints(cluster.back):
        pytest.skip("the free ports happened to follow the back's")
    worker = cluster.launch_worker("--connect", cluster.back, "--edits", cluster.edits, "--feed", cluster.feed)
    worker.wait_line(WORKER_READY, START_TIMEOUT_S)
    with Client(cluster.front, timeout=2.0) as client:
        client.update("rooms", cells=[list(DOOR)], solid=True)  # out through edits, back through the feed
        deadline = time.monotonic() + 5
        while client.stats()["edit_feed"]["seq"] < 1:
            assert time.monotonic() < deadline, "the worker's edit never came back on the feed"
            time.sleep(0.05)
        assert client.find_path("rooms", WEST, EAST)["status"] == "no_path"
    cluster.broker.signal(signal.SIGINT)
    assert cluster.broker.popen.wait(10) == 0
    hint = f"start workers with --connect {cluster.back} --edits {cluster.edits} --feed {cluster.feed}"
    assert hint in cluster.broker.stderr()


def test_an_idle_broker_sleeps_with_or_without_a_worker(cluster, dealer):
    lonely = cluster.start_broker()
    lonely_front = cluster.front
    served = cluster.start_broker()
    worker = cluster.launch_worker("--connect", cluster.back, "--edits", cluster.edits, "--feed", cluster.feed)
    worker.wait_line(WORKER_READY, START_TIMEOUT_S)
    client = dealer(lonely_front)
    # A request with no worker to take it: libzmq's own proxy spun a core from here on.
    ask(client, {"id": 1, "op": "ping"})
    before = {process: cpu_seconds(process.popen.pid) for process in (lonely, served)}
    started = time.monotonic()
    sent = 1
    while time.monotonic() - started < IDLE_WINDOW_S:
        if answer(client, 1.0) is not None:
            sent += 1
            ask(client, {"id": sent, "op": "ping"})  # keep one waiting all along
    elapsed = time.monotonic() - started
    shares = {name: (cpu_seconds(process.popen.pid) - before[process]) / elapsed
              for name, process in (("no worker", lonely), ("one worker", served))}
    assert all(share <= IDLE_CPU_SHARE for share in shares.values()), shares
    assert sent > 1  # the waiting requests were answered, not just left


def test_a_request_with_no_worker_is_answered_retryable_within_the_bound(cluster, dealer):
    cluster.start_broker()
    client = dealer(cluster.front)
    sent = time.monotonic()
    ask(client, {"op": "ping", "id": 41})  # the id not first: read from the whole body
    reply = answer(client, WORKER_WAIT_S + 5.0)
    waited = time.monotonic() - sent
    assert reply is not None, "no reply at all"
    assert reply["id"] == 41 and reply["ok"] is False and reply["retryable"] is True
    assert reply["error"]["code"] == "overloaded"
    assert "no worker" in reply["error"]["message"]
    assert reply["retry_after_ms"] > 0
    # It waited for a worker first.
    assert waited >= WORKER_WAIT_S * 0.9


def test_a_request_sent_before_any_worker_is_answered_once_one_connects(cluster, dealer):
    cluster.start_broker("--worker-wait", "100")
    client = dealer(cluster.front)
    ask(client, {"id": 7, "op": "path", "map": "rooms", "start": list(WEST), "goal": list(EAST)})
    assert answer(client, 0.3) is None  # held, not refused
    worker = cluster.launch_worker("--connect", cluster.back, "--edits", cluster.edits, "--feed", cluster.feed)
    worker.wait_line(WORKER_READY, START_TIMEOUT_S)
    reply = answer(client, 10.0)
    assert reply is not None and reply["id"] == 7 and reply["ok"] is True and reply["status"] == "found"


@pytest.mark.parametrize("argv, message", [
    (["broker", "--back", "tcp://127.0.0.1:65534"], "cannot derive the broker's edits and feed endpoints"),
    (["broker", "--back", "ipc:///tmp/pathserver-test-back"], "pass --edits and --feed"),
    (["broker", "--worker-wait", "-1"], "--worker-wait"),
])
def test_the_broker_refuses_what_it_cannot_run_with_one_line(argv, message):
    done = subprocess.run([sys.executable, "-m", "pathserver", *argv], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_worker_waiting_for_the_edit_log_says_what_it_tried_and_how_to_fix_it(maps_dir):
    back_port = free_ports(3)
    back = f"tcp://127.0.0.1:{back_port}"
    edits, feed = edit_endpoints(back)
    shared = SharedEdits(MapRegistry(maps_dir), edits, feed, back=back)
    try:
        note = shared._unreachable_note(10.0)
    finally:
        shared.close()
    assert "waited 10 s for the broker's edit log" in note
    assert edits in note and feed in note
    assert f"--back {back}" in note and "--edits and --feed" in note


def test_past_the_waiting_limit_a_request_is_refused_at_once(monkeypatch, dealer):
    monkeypatch.setattr(broker_module, "WAITING_LIMIT", 2)
    running = broker_module.Broker(*["tcp://127.0.0.1:0"] * 4, worker_wait_s=0.5)
    endpoints = running.bind()
    thread = threading.Thread(target=running.run, name="test-broker", daemon=True)
    thread.start()
    try:
        client = dealer(endpoints["front"])
        sent = time.monotonic()
        for rid in (1, 2, 3):
            ask(client, {"id": rid, "op": "ping"})
        first = answer(client, 5.0)
        assert first is not None and first["id"] == 3 and first["error"]["code"] == "overloaded"
        assert time.monotonic() - sent < 0.4  # not held: the two before it fill the broker
        later = [answer(client, 5.0) for _ in range(2)]
        assert [r and r["id"] for r in later] == [1, 2]
        assert all(r["retryable"] for r in later)
    finally:
        running.stop()
        thread.join(5)
