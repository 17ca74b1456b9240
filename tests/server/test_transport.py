"""The ROUTER loop: envelopes, pipelining, the bounded queue, dropped replies, heartbeats."""

import os
import random
import socket
import time

import msgpack
import pytest
import zmq

from pathserver.server import handlers
from pathserver.server.loop import MAX_SPIN_US


def path_request(rid, name="arena", start=(0, 0), goal=(9, 4)):
    return {"id": rid, "op": "path", "map": name, "start": list(start), "goal": list(goal)}


def test_reply_mirrors_the_envelope_with_and_without_delimiter(dealer):
    dealer.send({"id": 1, "op": "ping"}, delimiter=True)
    frames = dealer.recv_frames()
    assert frames[0] == b"" and len(frames) == 2
    assert msgpack.unpackb(frames[1]) == {"id": 1, "ok": True, "protocol": 1}

    dealer.send({"id": 2, "op": "ping"}, delimiter=False)
    frames = dealer.recv_frames()
    assert len(frames) == 1
    assert msgpack.unpackb(frames[0])["id"] == 2


def test_a_req_socket_is_served(server, make_dealer):
    req = make_dealer(server.endpoint, zmq.REQ)
    req.socket.send(msgpack.packb({"id": 9, "op": "path", "map": "arena", "start": [0, 0], "goal": [9, 0]}))
    reply = req.recv()
    assert reply["id"] == 9 and reply["ok"] and reply["status"] == "found"


@pytest.mark.parametrize(
    "frames",
    [[b"x", msgpack.packb({"id": 4, "op": "ping"})], [b"", b"", msgpack.packb({"id": 4, "op": "ping"})]],
    ids=["non-empty-delimiter", "three-frames"],
)
def test_a_bad_envelope_gets_a_malformed_reply_in_the_same_shape(dealer, frames):
    dealer.socket.send_multipart(frames)
    got = dealer.recv_frames()
    assert got[:-1] == frames[:-1]
    reply = msgpack.unpackb(got[-1])
    # The id is still read from the body, so the client can tell which request failed.
    assert reply["id"] == 4 and not reply["ok"] and reply["error"]["code"] == "malformed"


def test_pipelined_requests_are_matched_by_id(dealer):
    rng = random.Random(3)
    ids = rng.sample(range(1, 10**9), 200)
    for i, rid in enumerate(ids):
        if i % 10 == 0:
            dealer.send({"id": rid, "op": "ping"})
        else:
            dealer.send(path_request(rid, goal=(rng.randrange(10), 4)), delimiter=bool(i % 2))
    replies = [dealer.recv() for _ in ids]
    assert sorted(r["id"] for r in replies) == sorted(ids)
    assert all(r["ok"] for r in replies)
    with pytest.raises(TimeoutError):
        dealer.recv(timeout_ms=100)  # exactly one reply each


def test_ping_is_answered_while_searches_wait(start_server, gated, make_dealer):
    server = start_server(gated, inline_expansions=0, workers=1)
    client = make_dealer(server.endpoint)
    client.send(path_request(1, name="gate"))
    assert gated.entered.wait(5)
    assert client.ask({"id": 2, "op": "ping"})["id"] == 2
    gated.gate.set()
    assert client.recv()["id"] == 1


def test_a_full_queue_answers_overloaded_at_once(start_server, gated, make_dealer):
    server = start_server(gated, inline_expansions=0, workers=1, queue_limit=2)
    client = make_dealer(server.endpoint)
    client.send(path_request(1, name="gate"))
    assert gated.entered.wait(5)
    client.send(path_request(2))
    client.send(path_request(3))  # over the limit: two are queued or running
    reply = client.recv(timeout_ms=1000)
    assert reply["id"] == 3 and reply["error"]["code"] == "overloaded"
    assert reply["retryable"] is True and reply["retry_after_ms"] >= 1
    assert list(reply)[:5] == ["id", "ok", "error", "retryable", "retry_after_ms"]
    gated.gate.set()
    assert sorted(client.recv()["id"] for _ in range(2)) == [1, 2]
    stats = client.ask({"id": 4, "op": "stats"})
    assert stats["errors"] == {"overloaded": 1} and stats["queue_depth"] == 0


def test_replies_to_a_vanished_client_are_dropped_and_counted(start_server, gated, make_dealer, wait_for):
    server = start_server(gated, inline_expansions=0, workers=1)
    leaving = make_dealer(server.endpoint)
    leaving.send(path_request(1, name="gate"))
    assert gated.entered.wait(5)
    leaving.close()
    observer = make_dealer(server.endpoint)
    assert observer.ask({"id": 1, "op": "ping"})["ok"]
    time.sleep(0.2)  # let the server see the disconnect
    gated.gate.set()
    assert wait_for(lambda: observer.ask({"id": 2, "op": "stats"})["dropped_replies"] == 1)


def test_a_client_that_stops_reading_does_not_block_others(server, make_dealer):
    stalled = make_dealer(server.endpoint)
    stalled.socket.rcvhwm = 1
    body = msgpack.packb({"id": 1, "op": "ping"})
    for _ in range(3000):
        stalled.socket.send_multipart([b"", body])
    other = make_dealer(server.endpoint)
    started = time.monotonic()
    assert other.ask({"id": 7, "op": "ping"})["id"] == 7
    assert time.monotonic() - started < 1.0


def _zmtp_greeting() -> bytes:
    return b"\xff" + b"\x00" * 8 + b"\x7f\x03\x00" + b"NULL" + b"\x00" * 16 + b"\x00" + b"\x00" * 31


def test_a_peer_that_never_answers_heartbeats_is_dropped(start_server):
    server = start_server(heartbeat_ivl_ms=100, heartbeat_timeout_ms=300)
    host, port = server.endpoint.rsplit("/", 1)[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        raw.sendall(_zmtp_greeting())
        raw.sendall(b"\x04\x1c\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if raw.recv(4096) == b"":  # the server closed the connection
                break
        else:
            pytest.fail("server kept a silent peer")


def test_a_stalled_handshake_is_dropped(start_server):
    server = start_server(handshake_ms=200)
    host, port = server.endpoint.rsplit("/", 1)[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        started = time.monotonic()
        while raw.recv(4096) != b"":
            pass
        assert time.monotonic() - started < 3


def test_server_stops_within_a_second(start_server):
    server = start_server()
    started = time.monotonic()
    server.server.stop()
    server.thread.join(1.0)
    assert not server.thread.is_alive()
    server.server.close()
    assert time.monotonic() - started < 1.0


def test_pipelined_paths_grouped_into_one_job_answer_as_one_at_a_time(start_server, make_dealer):
    # inline_expansions=0 sends every path to the workers, where a burst's requests with
    # the same map and options share one find_paths call; each reply must still be the
    # one that request gets on its own, bad entries included.
    server = start_server(inline_expansions=0)
    client = make_dealer(server.endpoint)
    rng = random.Random(5)
    bodies = []
    sizes = {"arena": (10, 5), "split": (5, 3)}
    for rid in range(1, 121):
        name = rng.choice(list(sizes))
        width, height = sizes[name]
        # Goals one column past the edge now and then: out_of_bounds inside a group.
        request = {"id": rid, "op": "path", "map": name,
                   "start": [rng.randrange(width), rng.randrange(height)],
                   "goal": [rng.randrange(width + 1), rng.randrange(height)],
                   "smooth": rng.choice(["los", "none"])}
        bodies.append(msgpack.packb(request))
    for body in bodies:
        client.send(body)
    replies = {}
    for _ in bodies:
        frames = client.recv_frames()
        replies[msgpack.unpackb(frames[-1])["id"]] = frames[-1]
    for rid, body in enumerate(bodies, start=1):
        assert replies[rid] == handlers.respond(body, server.registry)
    assert any(not msgpack.unpackb(r)["ok"] for r in replies.values())  # out-of-bounds goals among them


def _cpu_ticks(thread) -> int:
    """User + system clock ticks a thread of this process has run (Linux's /proc)."""
    with open(f"/proc/self/task/{thread.native_id}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads a thread's CPU time from Linux's /proc")
def test_a_spinning_loop_answers_then_sleeps_and_stops_at_once(start_server, make_dealer):
    running = start_server(spin_us=MAX_SPIN_US)
    client = make_dealer(running.endpoint)
    for rid in range(1, 21):
        assert client.ask(path_request(rid))["status"] == "found"
    # Within MAX_SPIN_US (10 ms) of its last reply the loop sleeps again: a second
    # later it has used almost no CPU, where spinning on would be about 100 ticks.
    time.sleep(0.05)
    before = _cpu_ticks(running.thread)
    time.sleep(1.0)
    assert _cpu_ticks(running.thread) - before <= 10
    assert client.ask({"id": 99, "op": "ping"})["ok"] is True
    running.server.stop()
    running.thread.join(1.0)
    assert not running.thread.is_alive()


@pytest.mark.parametrize("spin_us", [-1, MAX_SPIN_US + 1])
def test_spin_us_out_of_range_is_refused(start_server, spin_us):
    with pytest.raises(ValueError, match="spin_us"):
        start_server(spin_us=spin_us)
