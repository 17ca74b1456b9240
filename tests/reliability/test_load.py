"""Load on loopback against the real server process: several clients, many requests in
flight each, for a fixed time (``pathserver.loadtest.run_load``): nothing lost, nothing
unmatched. Then the same load next to bad clients: one that stops reading (receive
high-water mark 1, never reads) and keeps sending, and a stream of clients that vanish
with requests in flight. The server must not block on them, must count the replies it
drops, and the good clients' latency must stay close to what it was without them.

Duration: ``PATHSERVER_LOAD_SECONDS`` per phase (default 3); ``--slow`` runs 30 s.
"""

import threading
import time

import msgpack
import pytest
import zmq

from pathserver.loadtest import LoadConfig, run_load
from reliability.helpers import env_int, record, timed_ping
from sockets import bounded_socket

SECONDS = env_int("PATHSERVER_LOAD_SECONDS", 3)
LONG_SECONDS = max(30, SECONDS)
CLIENTS = 6
INFLIGHT = 16
#: Requests each vanishing client leaves behind (about ten such clients a second).
VANISHING_REQUESTS = 10


def long_trip(rid: int) -> bytes:
    """A corner-to-corner search on the 64 x 64 map: queued to a worker, never inline."""
    return msgpack.packb({"id": rid, "op": "path", "map": "open64", "start": [0, 0], "goal": [63, 63 - rid % 8]})


class BadClients:
    """Background misbehaviour until ``stop()``: a client that never reads, and clients
    that send and vanish. Each thread uses its own context; every socket is bounded (LINGER 0, timeouts)."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.stop_event = threading.Event()
        self.sent_unread = 0
        self.vanished = 0
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._guarded, args=(target,), daemon=True)
                        for target in (self._never_reads, self._vanishes)]

    def start(self) -> "BadClients":
        for thread in self.threads:
            thread.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(10)
        assert not self.errors, self.errors

    def _guarded(self, target) -> None:
        try:
            target()
        except BaseException as exc:  # reported by stop()
            self.errors.append(exc)

    def _never_reads(self) -> None:
        context = zmq.Context()
        sock = bounded_socket(context, connect=self.endpoint, options={zmq.RCVHWM: 1, zmq.RCVBUF: 4096})
        try:
            rid = 0
            # A burst that overfills every queue between the server and this socket, then
            # a steady trickle so the server keeps trying to reply to it.
            while not self.stop_event.is_set():
                burst = 3000 if rid == 0 else 20
                for _ in range(burst):
                    rid += 1
                    body = msgpack.packb({"id": rid, "op": "ping"}) if rid % 2 else long_trip(rid)
                    try:
                        sock.send(body, zmq.NOBLOCK)
                    except zmq.Again:
                        break  # our own send queue is full: the server is not reading it faster
                    self.sent_unread += 1
                self.stop_event.wait(0.05)
        finally:
            sock.close(linger=0)
            context.term()

    def _vanishes(self) -> None:
        context = zmq.Context()
        try:
            rid = 0
            while not self.stop_event.is_set():
                sock = bounded_socket(context, connect=self.endpoint)
                for _ in range(VANISHING_REQUESTS):
                    rid += 1
                    sock.send(long_trip(rid))
                time.sleep(0.005)  # long enough for the requests to leave, not for replies
                sock.close(linger=0)
                self.vanished += 1
                self.stop_event.wait(0.1)
        finally:
            context.term()


def load(endpoint: str, seconds: float, seed: int) -> dict:
    summary = run_load(LoadConfig(endpoint=endpoint, clients=CLIENTS, inflight=INFLIGHT, duration=seconds,
                                  map_names=("open64",), seed=seed, threads=1, grace=5.0))
    assert summary["lost"] == 0 and summary["unmatched"] == 0 and summary["send_failures"] == 0, summary
    assert summary["errors"] == {}, summary["errors"]
    return summary


def figures(summary: dict) -> str:
    lat = summary["latency_ms"]
    return (f"{summary['replies']} replies, {summary['throughput_rps']:.0f}/s, p50 {lat['p50']:.2f} ms, "
            f"p99 {lat['p99']:.2f} ms, max {lat['max']:.1f} ms, lost {summary['lost']}, "
            f"unmatched {summary['unmatched']}")


def load_with_bad_clients(server, seconds: float) -> None:
    before = server.stats()
    baseline = load(server.endpoint, seconds, seed=1)
    record("load", f"{CLIENTS} clients x {INFLIGHT} in flight, {seconds} s: {figures(baseline)}")
    bad = BadClients(server.endpoint).start()
    try:
        time.sleep(0.5)  # the non-reader's burst is out, its queues are full
        stalled_ping = timed_ping(server.endpoint)
        loaded = load(server.endpoint, seconds, seed=2)
    finally:
        bad.stop()
    after = server.stats()
    dropped = after["dropped_replies"] - before["dropped_replies"]
    record("load", f"same, next to a client that never reads ({bad.sent_unread} requests sent) and "
                   f"{bad.vanished} clients that vanished with {VANISHING_REQUESTS} requests in flight: "
                   f"{figures(loaded)}")
    base_p99, bad_p99 = baseline["latency_ms"]["p99"], loaded["latency_ms"]["p99"]
    record("load", f"p99 {base_p99:.2f} -> {bad_p99:.2f} ms ({bad_p99 / base_p99:.2f}x); replies the server "
                   f"dropped: {dropped}; a new client's ping meanwhile {stalled_ping * 1000:.1f} ms")
    assert bad.vanished >= 5 and bad.sent_unread >= 1000
    assert dropped > 0  # the server did meet the bad clients, and counted what it dropped
    assert stalled_ping < 0.5
    # Generous: both phases share two cores with the load generator. The bad clients
    # also add real work (their searches), so some slowdown is their fair share.
    assert bad_p99 <= max(3.0 * base_p99, base_p99 + 25.0), (base_p99, bad_p99)
    assert timed_ping(server.endpoint) < 0.5


def test_load_with_and_without_bad_clients(live):
    load_with_bad_clients(live, SECONDS)


@pytest.mark.slow
def test_load_soak_with_bad_clients(live):
    load_with_bad_clients(live, LONG_SECONDS)
