"""The broker and its workers as a user starts them (``python -m pathserver broker``,
``python -m pathserver serve --connect --state``): an idle broker that sleeps, a request
that arrives while no worker is connected, and the options of the broker's edit log,
gone, refused with a pointer to ``--state``."""

import subprocess
import sys
import threading
import time

import msgpack
import pytest
import zmq

from scale.cluster import EAST, WEST, WORKER_READY, START_TIMEOUT_S, cpu_seconds
from pathserver import broker as broker_module
from pathserver.broker import WORKER_WAIT_S

#: "Idle" means this share of one core at most, measured over IDLE_WINDOW_S.
IDLE_CPU_SHARE = 0.02
IDLE_WINDOW_S = 4.0


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


def test_an_idle_broker_sleeps_with_or_without_a_worker(cluster, dealer):
    lonely = cluster.start_broker()
    lonely_front = cluster.front
    served = cluster.start_broker()
    worker = cluster.launch_worker("--connect", cluster.back, "--state", cluster.state)
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
    worker = cluster.launch_worker("--connect", cluster.back, "--state", cluster.state)
    worker.wait_line(WORKER_READY, START_TIMEOUT_S)
    reply = answer(client, 10.0)
    assert reply is not None and reply["id"] == 7 and reply["ok"] is True and reply["status"] == "found"


@pytest.mark.parametrize("argv, message", [
    (["broker", "--worker-wait", "-1"], "--worker-wait"),
    (["broker", "--edits", "tcp://127.0.0.1:5557"], "--state redis://HOST:PORT/DB"),
    (["broker", "--edit-log", "10"], "--state redis://HOST:PORT/DB"),
    (["serve", "--connect", "tcp://127.0.0.1:5556", "--feed", "tcp://127.0.0.1:5558"], "--state redis://HOST:PORT/DB"),
    (["serve", "--state", "http://127.0.0.1:6379"], "expected redis://HOST:PORT/DB"),
])
def test_what_cannot_run_is_refused_with_one_line(argv, message):
    done = subprocess.run([sys.executable, "-m", "pathserver", *argv], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_past_the_waiting_limit_a_request_is_refused_at_once(monkeypatch, dealer):
    monkeypatch.setattr(broker_module, "WAITING_LIMIT", 2)
    running = broker_module.Broker("tcp://127.0.0.1:0", "tcp://127.0.0.1:0", worker_wait_s=0.5)
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
