"""Kill and restart under load: the real server process is SIGKILLed and started again on
the same port several times while clients keep requests in flight. The project's own
clients (``pathserver.client.Client``, pipelined, and ``AsyncClient``, concurrent) time
out, reconnect and resend (Lazy Pirate): every request is eventually answered, and each
answer is the right one for its request.

Restarts: ``PATHSERVER_RESTARTS`` (default 3); ``--slow`` runs 10.
"""

import asyncio
import random
import threading
import time

import pytest

from pathserver.client import AsyncClient, Client
from reliability.helpers import ServerProcess, env_int, free_port, open_rows, percentile, record, small_maps

RESTARTS = env_int("PATHSERVER_RESTARTS", 3)
LONG_RESTARTS = max(10, RESTARTS)
SYNC_CLIENTS, SYNC_INFLIGHT = 3, 8
ASYNC_INFLIGHT = 8
#: Short, so a dead connection is noticed fast; retries enough to outlast any restart.
TIMEOUT_S, RETRIES = 0.25, 60

OPEN = open_rows(64, 64)
WALKABLE = [(x, y) for y in range(64) for x in range(64) if OPEN[y][x] == "."]


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.sent = 0
        self.answered = 0
        self.wrong: list = []
        self.failures: list = []
        self.latency: list = []

    def check(self, start, goal, reply, latency: float) -> None:
        ok = reply.get("ok") and reply["status"] in ("found", "no_path") and (
            reply["status"] == "no_path" or (reply["path"][0] == list(start) and reply["path"][-1] == list(goal)))
        with self.lock:
            self.answered += 1
            self.latency.append(latency)
            if not ok:
                self.wrong.append((start, goal, reply))


def trip(rng: random.Random):
    return rng.choice(WALKABLE), rng.choice(WALKABLE)


def sync_client(endpoint: str, seed: int, stop: threading.Event, tally: Tally) -> None:
    rng = random.Random(seed)
    try:
        with Client(endpoint, timeout=TIMEOUT_S, retries=RETRIES) as client:
            pending = []  # (rid, start, goal, sent at), oldest first
            while not stop.is_set() or pending:
                while not stop.is_set() and len(pending) < SYNC_INFLIGHT:
                    start, goal = trip(rng)
                    rid = client.submit("path", map="open64", start=list(start), goal=list(goal), smooth="none")
                    pending.append((rid, start, goal, time.monotonic()))
                    with tally.lock:
                        tally.sent += 1
                rid, start, goal, sent_at = pending.pop(0)
                tally.check(start, goal, client.result(rid), time.monotonic() - sent_at)
    except BaseException as exc:  # reported by the test
        with tally.lock:
            tally.failures.append(repr(exc))


def async_client(endpoint: str, seed: int, stop: threading.Event, tally: Tally) -> None:
    async def one(client, rng):
        while not stop.is_set():
            start, goal = trip(rng)
            with tally.lock:
                tally.sent += 1
            sent_at = time.monotonic()
            reply = await client.find_path("open64", start, goal, smooth="none")
            tally.check(start, goal, reply, time.monotonic() - sent_at)

    async def main():
        async with AsyncClient(endpoint, timeout=TIMEOUT_S, retries=RETRIES) as client:
            await asyncio.gather(*(one(client, random.Random(seed + i)) for i in range(ASYNC_INFLIGHT)))

    try:
        asyncio.run(main())
    except BaseException as exc:
        with tally.lock:
            tally.failures.append(repr(exc))


def kill_and_restart(tmp_path, restarts: int) -> None:
    maps = small_maps(tmp_path / "maps")
    server = ServerProcess(maps, port=free_port())
    stop = threading.Event()
    tally = Tally()
    threads = []
    outages = []
    try:
        server.start()
        endpoint = server.endpoint
        threads = [threading.Thread(target=sync_client, args=(endpoint, i, stop, tally), daemon=True)
                   for i in range(SYNC_CLIENTS)]
        threads.append(threading.Thread(target=async_client, args=(endpoint, 100, stop, tally), daemon=True))
        for thread in threads:
            thread.start()
        for _ in range(restarts):
            answered = tally.answered
            deadline = time.monotonic() + 10
            while tally.answered < answered + 200 and time.monotonic() < deadline:
                time.sleep(0.05)  # under load before each kill
            assert tally.answered >= answered + 200, "no progress between restarts"
            killed_at = time.monotonic()
            server.kill()
            time.sleep(0.1)
            server.start()  # same port
            assert server.endpoint == endpoint
            outages.append(time.monotonic() - killed_at)
        answered = tally.answered
        deadline = time.monotonic() + 15
        while tally.answered < answered + 200 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
        server.close()
    assert not any(thread.is_alive() for thread in threads), "a client never finished"
    assert not tally.failures, tally.failures
    assert not tally.wrong, tally.wrong[:3]
    assert tally.answered == tally.sent > restarts * 200
    latency_ms = [v * 1000 for v in tally.latency]
    record("restart", f"{restarts} SIGKILLs + restarts on the same port (outage {min(outages):.2f}-"
                      f"{max(outages):.2f} s each) under {SYNC_CLIENTS} Client x {SYNC_INFLIGHT} pipelined + "
                      f"AsyncClient x {ASYNC_INFLIGHT}: {tally.sent} requests, {tally.answered} answered, 0 lost, "
                      f"0 wrong; latency p50 {percentile(latency_ms, 50):.1f} ms, max {max(latency_ms):.0f} ms "
                      f"(timeout {TIMEOUT_S} s, retries {RETRIES})")


def test_kill_and_restart_under_load(tmp_path):
    kill_and_restart(tmp_path, RESTARTS)


@pytest.mark.slow
def test_kill_and_restart_under_load_long(tmp_path):
    kill_and_restart(tmp_path, LONG_RESTARTS)
