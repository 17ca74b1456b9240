"""Benchmark scale-out behind ``pathserver broker`` on one machine, side by side in one run:

1. throughput: one plain server process vs the broker with 1, 2 and 4 worker processes,
   driven by the same closed-loop load (``pathserver.loadtest``, same trips for all), in
   rounds that take turns so a slow spell on the machine lands on every setup; two
   workloads: the load generator's default game mix (30% trips across the map, the rest
   within 24 cells) and long trips only;
   and 2 workers sharing their state on Redis (``serve --state``), whose path throughput
   should be the 2 workers' without it;
2. the cost of one proxy hop: ``ping`` and a short ``path`` with one request in flight,
   straight to a server vs through the broker to one worker;
3. the shared state: small ``update``s a second through the broker to 2 workers on one
   Redis (closed loop, pipelined), and the lag from an edit's acceptance by Redis to each
   worker applying it (its ``stats``' ``state.lag_ms``, over the last 4096 entries): an
   upper bound on the lag from the edit's reply, which comes after the acceptance; the
   targets are printed beside the figures;
4. failover: under load, one of three workers is SIGKILLed, or frozen with SIGSTOP; the
   driver resends a request that got no reply within 0.5 s (as ``Client`` does), and
   counts those first attempts and when they were sent.

    python bench/scale.py                 # about 4 minutes
    python bench/scale.py --quick --json  # shorter, one JSON object on stdout

Section 3 starts its own ``redis-server`` (Debian's package) on a free loopback port, its
append-only file fsynced as ``--appendfsync`` says (default ``everysec``), in a temporary
folder.

The map is den520d from the Moving AI folder (``--movingai``, default ../shared/movingai
beside the repo), copied into a temporary folder; without it, the repository's sample maps.
Every process (servers, broker, workers, and this load generator) shares the machine's
cores: on a small machine read the ratios, and read them knowing that the load generator
takes a core of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import msgpack
import numpy as np
import zmq

from pathserver import kernel_cache

# First, before anything imports the kernels: numba picks their cache folder then.
kernel_cache.configure()

from pathserver.loadtest import LoadConfig, SpawnedServer, TripSource, run_load  # noqa: E402
from pathserver.loadtest.spawn import stop_process  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import add_argument as add_write_docs, write_section  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MOVINGAI = REPO.parent / "shared" / "movingai"
DEN = Path("dao") / "den520d.map"
BROKER_READY = re.compile(r"pathserver broker ready on (\S+) \(back ([^)]+)\)")
WORKER_READY = re.compile(r"pathserver worker (\S+) ready, connected to")
START_TIMEOUT_S = 120
RECEIVE_TIMEOUT_MS = 10_000
WORKER_COUNTS = (1, 2, 4)
#: (name, share of trips across the whole map, unit sizes): the load generator's default
#: game mix, and long trips for units of 1 to 3 cells (more time in the search kernels).
WORKLOADS = (("game mix", 0.3, (1,)), ("long, 1-3", 1.0, (1, 2, 3)))
#: The issue's targets for the shared state (section 3).
TARGET_UPDATES_PER_S = 5000
TARGET_LAG_P99_MS = 10.0
#: Updates of section 3's paced run: more than the 4096 a worker's lag figures cover.
PACED_UPDATES = 5000


# -- processes ---------------------------------------------------------------------------------


class Child:
    """A subprocess whose stdout lines arrive on a queue (so waits can time out)."""

    def __init__(self, args: list):
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        stdin=subprocess.DEVNULL, text=True,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, pattern: re.Pattern) -> re.Match:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"no ready line within {START_TIMEOUT_S} s from {self.process.args[:3]}") from None
            if line is None:
                raise RuntimeError(f"{self.process.args[:3]} exited with {self.process.wait()} before it was ready")
            match = pattern.search(line)
            if match:
                return match

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # a frozen worker must wake up to stop
            stop_process(self.process, signal.SIGTERM, 5.0)


class RedisServer:
    """``redis-server`` on a free loopback port, AOF in ``folder`` fsynced per ``fsync``."""

    def __init__(self, folder: Path, fsync: str):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(folder),
             "--appendonly", "yes", "--appendfsync", fsync, "--save", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        import redis

        client = redis.Redis(port=self.port, socket_timeout=1.0)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not answer within 10 s") from None
                time.sleep(0.05)
        client.close()

    def __enter__(self) -> "RedisServer":
        return self

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(10)


class Cluster:
    """``pathserver.broker`` on free loopback ports and ``n`` workers (``serve(connect=...)``),
    sharing their state on the Redis at ``state`` if given."""

    def __init__(self, folder: Path, n_workers: int, state: str | None = None):
        self.folder = folder
        self.n_workers = n_workers
        self.state = state
        self.workers: list[Child] = []
        self.broker: Child | None = None
        self.front = None

    def __enter__(self) -> "Cluster":
        self.broker = Child([sys.executable, "-m", "pathserver.broker", "--front", "tcp://127.0.0.1:0",
                             "--back", "tcp://127.0.0.1:0"])
        self.front, back = self.broker.wait_for(BROKER_READY).groups()
        code = ("import sys; from pathserver.server import serve; "
                f"sys.exit(serve({str(self.folder)!r}, watch=False, connect={back!r}, state={self.state!r}))")
        self.workers = [Child([sys.executable, "-c", code]) for _ in range(self.n_workers)]
        for worker in self.workers:
            worker.wait_for(WORKER_READY)
        return self

    def __exit__(self, *exc) -> None:
        for child in self.workers + [self.broker]:
            if child is not None:
                child.stop()


def _ask(sock, request: dict) -> dict:
    sock.send_multipart([b"", msgpack.packb(request)])
    if not sock.poll(RECEIVE_TIMEOUT_MS, zmq.POLLIN):
        raise RuntimeError(f"no reply to {request.get('op')} within {RECEIVE_TIMEOUT_MS / 1000:g} s")
    return msgpack.unpackb(sock.recv_multipart()[-1], raw=False)


def fetch_maps(endpoint: str) -> list[dict]:
    with zmq.Context() as context, context.socket(zmq.DEALER) as sock:
        sock.linger = 0
        sock.connect(endpoint)
        return _ask(sock, {"id": 1, "op": "maps"})["maps"]


# -- 1. throughput -------------------------------------------------------------------------------


def throughput(endpoints: dict, maps: list, seconds: float, rounds: int, clients: int, inflight: int,
               threads: int) -> list:
    """One row per (workload, setup): replies/s averaged over the rounds, latency of the
    last round, and the ratio to the plain server."""
    rows = []
    for workload, long_share, unit_sizes in WORKLOADS:
        runs: dict = {name: [] for name in endpoints}

        def load(endpoint, duration, seed):
            config = LoadConfig(endpoint=endpoint, clients=clients, inflight=inflight, duration=duration,
                                long_share=long_share, unit_sizes=unit_sizes, threads=threads, grace=2.0,
                                seed=seed)
            summary = run_load(config, maps=maps)
            summary.pop("_latencies")
            return summary

        for endpoint in endpoints.values():
            load(endpoint, 1.0, 0)  # warm up: connections, the per-size layers
        for round_index in range(rounds):
            names = list(endpoints)
            if round_index % 2:
                names.reverse()
            for name in names:
                runs[name].append(load(endpoints[name], seconds, 100 + round_index))
        plain = np.mean([s["throughput_rps"] for s in runs["plain server"]])
        for name, summaries in runs.items():
            rps = float(np.mean([s["throughput_rps"] for s in summaries]))
            last = summaries[-1]
            rows.append({
                "workload": workload, "setup": name, "replies_per_s": round(rps, 1),
                "rounds_min_max": [round(min(s["throughput_rps"] for s in summaries)),
                                   round(max(s["throughput_rps"] for s in summaries))],
                "vs_plain": round(rps / plain, 3) if plain else None,
                "p50_ms": last["latency_ms"]["p50"], "p99_ms": last["latency_ms"]["p99"],
                "lost": sum(s["lost"] for s in summaries), "errors": summaries[-1]["errors"],
            })
    return rows


# -- 2. one hop ----------------------------------------------------------------------------------


def hop_latency(direct: str, brokered: str, maps: list, n: int) -> dict:
    """Round trips with one request in flight, in blocks that alternate between the two
    endpoints; percentiles in ms and the broker's extra at the median."""
    trips = TripSource(maps, LoadConfig(long_share=0.0, short_radius=8), random.Random(7))
    short_paths = [trips.next() for _ in range(n)]
    block = 200
    times = {(kind, where): [] for kind in ("ping", "path") for where in ("direct", "broker")}
    with zmq.Context() as context:
        socks = {}
        for where, endpoint in (("direct", direct), ("broker", brokered)):
            sock = context.socket(zmq.DEALER)
            sock.linger = 0
            sock.connect(endpoint)
            _ask(sock, {"id": 0, "op": "ping"})
            socks[where] = sock
        for start in range(0, n, block):
            for where, sock in socks.items():
                for i in range(start, min(n, start + block)):
                    for kind, request in (("ping", {"id": i, "op": "ping"}),
                                          ("path", {"id": i, **short_paths[i]})):
                        began = time.perf_counter()
                        reply = _ask(sock, request)
                        times[(kind, where)].append((time.perf_counter() - began) * 1000.0)
                        assert reply["id"] == i
        for sock in socks.values():
            sock.close(linger=0)
    out = {}
    for kind in ("ping", "path"):
        row = {}
        for where in ("direct", "broker"):
            values = np.asarray(times[(kind, where)])
            row[where] = {q: round(float(np.percentile(values, p)), 3)
                          for q, p in (("p50", 50), ("p90", 90), ("p99", 99))}
        row["extra_p50_ms"] = round(row["broker"]["p50"] - row["direct"]["p50"], 3)
        out[kind] = row
    return out


# -- 3. the shared state ---------------------------------------------------------------------------


def edit_throughput(endpoint: str, maps: list, seconds: float, clients: int = 4, inflight: int = 16) -> dict:
    """Closed loop of one-cell ``update``s (alternately solid and free, on cells spread over
    the map) through the broker: ``clients`` DEALERs with ``inflight`` each outstanding,
    for ``seconds``; then every worker's ``stats``: its state's lag and what it applied."""
    name, width, height = maps[0]["name"], maps[0]["width"], maps[0]["height"]
    counts, errors, reply_ms = [0] * clients, [0] * clients, [[] for _ in range(clients)]
    stop_at = time.monotonic() + seconds

    def drive(k: int) -> None:
        with zmq.Context() as context, context.socket(zmq.DEALER) as sock:
            sock.linger = 0
            sock.connect(endpoint)
            sent_at = {}
            rid = k << 32
            for _ in range(inflight):
                rid += 1
                sent_at[rid] = _send_update(sock, rid, name, width, height)
            while sent_at:
                if not sock.poll(RECEIVE_TIMEOUT_MS, zmq.POLLIN):
                    raise RuntimeError("an update got no reply within 10 s")
                reply = msgpack.unpackb(sock.recv_multipart()[-1], raw=False)
                began = sent_at.pop(reply["id"])
                if reply.get("ok"):
                    counts[k] += 1
                    reply_ms[k].append((time.perf_counter() - began) * 1000.0)
                else:
                    errors[k] += 1
                if time.monotonic() < stop_at:
                    rid += 1
                    sent_at[rid] = _send_update(sock, rid, name, width, height)

    began = time.perf_counter()
    drivers = [threading.Thread(target=drive, args=(k,)) for k in range(clients)]
    for driver in drivers:
        driver.start()
    for driver in drivers:
        driver.join()
    elapsed = time.perf_counter() - began
    time.sleep(0.3)
    workers = {}
    with zmq.Context() as context, context.socket(zmq.DEALER) as sock:
        sock.linger = 0
        sock.connect(endpoint)
        for i in range(50):
            reply = _ask(sock, {"id": i, "op": "stats"})
            workers[reply["worker"]] = reply["state"]
    latencies = np.concatenate([np.asarray(ms) for ms in reply_ms if ms]) if sum(counts) else np.zeros(1)
    return {
        "updates": sum(counts), "errors": sum(errors), "seconds": round(elapsed, 3), "clients": clients,
        "inflight": inflight, "updates_per_s": round(sum(counts) / elapsed, 1),
        "reply_p50_ms": round(float(np.percentile(latencies, 50)), 3),
        "reply_p99_ms": round(float(np.percentile(latencies, 99)), 3),
        "workers": {w: {"applied": s["applied"], "lag_p50_ms": s["lag_ms"]["p50"], "lag_p99_ms": s["lag_ms"]["p99"],
                        "lag_max_ms": s["lag_ms"]["max"], "crc": s["crc"].get(name)}
                    for w, s in sorted(workers.items())},
    }


def paced_lag(endpoint: str, maps: list, rate: float, count: int) -> dict:
    """``count`` one-cell ``update``s sent at ``rate`` a second (open loop: each goes out
    on time whatever the replies do), then every worker's ``stats``: the lag of these
    entries when the state is not saturated (``count`` >= the 4096 the lag covers)."""
    name, width, height = maps[0]["name"], maps[0]["width"], maps[0]["height"]
    errors = 0
    with zmq.Context() as context, context.socket(zmq.DEALER) as sock:
        sock.linger = 0
        sock.connect(endpoint)
        began = time.perf_counter()
        sent = answered = 0
        while answered < count:
            due = began + sent / rate
            if sent < count and time.perf_counter() >= due:
                _send_update(sock, (1 << 40) + sent, name, width, height)
                sent += 1
                continue
            wait_ms = max(0, int((due - time.perf_counter()) * 1000)) if sent < count else RECEIVE_TIMEOUT_MS
            if sock.poll(wait_ms, zmq.POLLIN):
                reply = msgpack.unpackb(sock.recv_multipart()[-1], raw=False)
                answered += 1
                errors += not reply.get("ok")
            elif sent >= count:
                raise RuntimeError("an update got no reply within 10 s")
        elapsed = time.perf_counter() - began
        time.sleep(0.3)
        workers = {}
        for i in range(50):
            reply = _ask(sock, {"id": i, "op": "stats"})
            workers[reply["worker"]] = reply["state"]["lag_ms"]
    return {"rate": rate, "updates": count, "errors": errors, "achieved_per_s": round(count / elapsed, 1),
            "workers": {w: lag for w, lag in sorted(workers.items())}}


def _send_update(sock, rid: int, name: str, width: int, height: int) -> float:
    cell = [(rid * 7919) % width, (rid * 104729) % height]
    sock.send_multipart([b"", msgpack.packb({"id": rid, "op": "update", "map": name, "cells": [cell],
                                             "solid": rid % 2 == 0})])
    return time.perf_counter()


# -- 4. failover ---------------------------------------------------------------------------------


def failover(folder: Path, maps: list, signum: int, before_s: float, after_s: float, timeout_s: float = 0.5) -> dict:
    """Three workers, 8 DEALERs x 4 requests in flight; ``signum`` to one worker after
    ``before_s``. A request unanswered after ``timeout_s`` is resent on the same socket."""
    trips = TripSource(maps, LoadConfig(), random.Random(11))
    with Cluster(folder, 3) as cluster, zmq.Context() as context:
        socks = []
        poller = zmq.Poller()
        for _ in range(8):
            sock = context.socket(zmq.DEALER)
            sock.linger = 0
            sock.connect(cluster.front)
            socks.append(sock)
            poller.register(sock, zmq.POLLIN)
        pending: dict = {}  # id -> [socket, body, last sent, first sent]
        next_id = [0]
        timed_out_sent_at, latencies, done_at = [], [], []

        def send(sock, rid=None):
            now = time.perf_counter()
            if rid is None:
                next_id[0] += 1
                rid = next_id[0]
                pending[rid] = [sock, msgpack.packb({"id": rid, **trips.next()}), now, now]
            entry = pending[rid]
            entry[2] = now
            sock.send_multipart([b"", entry[1]])

        t0 = time.perf_counter()
        for sock in socks:
            for _ in range(4):
                send(sock)
        signalled = None
        end = t0 + before_s + after_s
        while time.perf_counter() < end + 3.0 and (pending or time.perf_counter() < end):
            now = time.perf_counter()
            if signalled is None and now - t0 >= before_s:
                os.kill(cluster.workers[0].process.pid, signum)
                signalled = now
            for sock, _ in poller.poll(10):
                while True:
                    try:
                        frames = sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    rid = msgpack.unpackb(frames[-1], raw=False)["id"]
                    entry = pending.pop(rid, None)
                    if entry is None:
                        continue  # the late first answer to a request already resent and answered
                    done = time.perf_counter()
                    latencies.append(done - entry[3])
                    done_at.append(done - t0)
                    if done < end:
                        send(sock)
            now = time.perf_counter()
            for rid, entry in list(pending.items()):
                if now - entry[2] > timeout_s:
                    timed_out_sent_at.append(entry[2] - signalled if signalled else entry[2] - t0)
                    send(entry[0], rid)
        done_at = np.asarray(done_at)
        before = np.count_nonzero(done_at < before_s) / before_s
        after = np.count_nonzero((done_at >= before_s) & (done_at < before_s + after_s)) / after_s
        window = (round(min(timed_out_sent_at), 3), round(max(timed_out_sent_at), 3)) if timed_out_sent_at else None
        return {"signal": signal.Signals(signum).name, "replies": len(latencies), "lost": len(pending),
                "resent": len(timed_out_sent_at), "resent_window_s": window,
                "replies_per_s_before": round(before, 1), "replies_per_s_after": round(after, 1),
                "max_latency_ms": round(max(latencies) * 1000.0, 1)}


# -- output ----------------------------------------------------------------------------------------


def report(results: dict) -> str:
    lines = [results["machine"]]
    if "throughput" in results:
        lines += _report_paths(results)
    lines += _report_state(results)
    if "failover" in results:
        lines += _report_failover(results)
    return "\n".join(lines)


def _report_paths(results: dict) -> list:
    lines = [""]
    t = results["throughput_config"]
    lines.append(f"1. throughput: closed loop, {t['clients']} clients x {t['inflight']} in flight "
                 f"({t['threads']} load threads), {t['rounds']} rounds of {t['seconds']:g} s per setup, taking turns")
    lines.append(f"   {'workload':<11} {'setup':<28} {'replies/s':>10} {'rounds min..max':>16} {'vs plain':>9} "
                 f"{'p50 ms':>7} {'p99 ms':>7}  lost")
    for row in results["throughput"]:
        low, high = row["rounds_min_max"]
        lines.append(f"   {row['workload']:<11} {row['setup']:<28} {row['replies_per_s']:>10,.0f} "
                     f"{f'{low:,}..{high:,}':>16} {row['vs_plain']:>9.2f} {row['p50_ms']:>7.2f} "
                     f"{row['p99_ms']:>7.2f}  {row['lost']}")
    hop = results["hop"]
    lines += ["", f"2. one proxy hop: one request in flight, {results['hop_n']} round trips each (ms)"]
    for kind, row in hop.items():
        d, b = row["direct"], row["broker"]
        lines.append(f"   {kind:<5} direct p50 {d['p50']:.3f} p99 {d['p99']:.3f} | via broker p50 {b['p50']:.3f} "
                     f"p99 {b['p99']:.3f} | extra at p50 {row['extra_p50_ms']:+.3f}")
    return lines


def _report_state(results: dict) -> list:
    lines = []
    edits = results["edits"]
    lines += ["", f"3. shared state on Redis (appendfsync {results['appendfsync']}): one-cell updates through the "
                  f"broker to 2 workers, {edits['clients']} clients x {edits['inflight']} in flight for "
                  f"{edits['seconds']:g} s",
              f"   {edits['updates_per_s']:,.0f} updates/s (target >= {TARGET_UPDATES_PER_S:,}: "
              f"{'met' if edits['updates_per_s'] >= TARGET_UPDATES_PER_S else 'NOT met'}), {edits['errors']} errors, "
              f"reply p50 {edits['reply_p50_ms']:.2f} ms, p99 {edits['reply_p99_ms']:.2f} ms"]
    worst = max((row["lag_p99_ms"] for row in edits["workers"].values()), default=float("nan"))
    for worker, row in edits["workers"].items():
        lines.append(f"   {worker}: applied up to {row['applied']}, lag from acceptance p50 {row['lag_p50_ms']:.2f} "
                     f"ms, p99 {row['lag_p99_ms']:.2f} ms, max {row['lag_max_ms']:.2f} ms, map crc {row['crc']}")
    lines.append(f"   lag p99 at saturation, the slower worker: {worst:.2f} ms (target <= {TARGET_LAG_P99_MS:g} ms: "
                 f"{'met' if worst <= TARGET_LAG_P99_MS else 'NOT met'})")
    paced = results["edits_paced"]
    worst_paced = max(lag["p99"] for lag in paced["workers"].values())
    lines.append(f"   at {paced['rate']:,.0f} updates/s ({paced['updates']:,} sent, {paced['errors']} errors), lag from "
                 "acceptance: " + "; ".join(f"{w} p50 {lag['p50']:.2f} ms, p99 {lag['p99']:.2f} ms"
                                            for w, lag in paced["workers"].items()))
    lines.append(f"   lag p99 at that rate, the slower worker: {worst_paced:.2f} ms (target <= {TARGET_LAG_P99_MS:g} ms: "
                 f"{'met' if worst_paced <= TARGET_LAG_P99_MS else 'NOT met'})")
    shared = {row["workload"]: row for row in results.get("throughput", ()) if row["setup"].endswith("(--state)")}
    for workload, row in shared.items():
        plain = next(r for r in results["throughput"] if r["workload"] == workload and r["setup"] == "broker + 2 workers")
        lines.append(f"   paths, {workload}: {row['replies_per_s']:,.0f} replies/s with --state, "
                     f"{plain['replies_per_s']:,.0f} without ({row['replies_per_s'] / plain['replies_per_s']:.2f}x; "
                     "target: unchanged within noise)")
    return lines


def _report_failover(results: dict) -> list:
    lines = ["", "4. failover: 3 workers, 8 x 4 in flight, resend after 0.5 s without a reply"]
    for row in results["failover"]:
        window = row["resent_window_s"]
        shown = f"sent {window[0]:+.3f} .. {window[1]:+.3f} s from the signal" if window else "none"
        lines.append(f"   {row['signal']:<8} resent {row['resent']:>4} ({shown}); lost {row['lost']}; replies/s "
                     f"{row['replies_per_s_before']:,.0f} before, {row['replies_per_s_after']:,.0f} after; "
                     f"max latency {row['max_latency_ms']:.0f} ms")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--movingai", type=Path, default=DEFAULT_MOVINGAI, help="the Moving AI benchmark folder")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds of load per round and setup (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per setup (default 3)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--inflight", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2, help="load generator threads (default 2)")
    parser.add_argument("--hops", type=int, default=2000, help="round trips per endpoint and kind (default 2000)")
    parser.add_argument("--quick", action="store_true", help="1 round of 1.5 s, 500 hops")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    parser.add_argument("--appendfsync", choices=("always", "everysec", "no"), default="everysec",
                        help="Redis's AOF fsync policy for section 3 (default everysec)")
    parser.add_argument("--edit-seconds", type=float, default=5.0, help="seconds of updates in section 3 (default 5)")
    parser.add_argument("--paced-rate", type=float, default=1000.0,
                        help="updates a second of section 3's paced run, whose lag is read (default 1000)")
    parser.add_argument("--state-only", action="store_true", help="section 3 alone (without its path comparison)")
    add_write_docs(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.rounds, args.hops, args.edit_seconds = 1.5, 1, 500, 2.0

    import pathserver

    results = {
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
                   f"pyzmq {zmq.__version__} (libzmq {zmq.zmq_version()}), pathserver {pathserver.__version__}",
        "throughput_config": {"clients": args.clients, "inflight": args.inflight, "threads": args.threads,
                              "rounds": args.rounds,
                              "seconds": args.seconds},
        "hop_n": args.hops,
        "appendfsync": args.appendfsync,
    }
    with tempfile.TemporaryDirectory(prefix="pathserver-scale-") as tmp:
        folder = Path(tmp) / "maps"
        folder.mkdir()
        den = args.movingai / DEN
        if den.is_file():
            shutil.copy(den, folder / "den520d.map")
        else:
            print(f"bench/scale.py: {den} not found, using the sample maps", file=sys.stderr)
            shutil.copy(REPO / "maps" / "example.map", folder / "example.map")
        redis_dir = Path(tmp) / "redis"
        redis_dir.mkdir()
        if args.state_only:
            with RedisServer(redis_dir, args.appendfsync) as state, Cluster(folder, 2, state.url) as cluster:
                maps = fetch_maps(cluster.front)
                results["edits"] = edit_throughput(cluster.front, maps, args.edit_seconds)
                results["edits_paced"] = paced_lag(cluster.front, maps, args.paced_rate, PACED_UPDATES)
            return _print(results, args)
        with ExitStack() as stack:
            plain = stack.enter_context(SpawnedServer(folder))
            endpoints = {"plain server": plain.endpoint}
            for n in WORKER_COUNTS:
                cluster = stack.enter_context(Cluster(folder, n))
                endpoints[f"broker + {n} worker" + ("s" if n > 1 else "")] = cluster.front
            state = stack.enter_context(RedisServer(redis_dir, args.appendfsync))
            endpoints["broker + 2 workers (--state)"] = stack.enter_context(Cluster(folder, 2, state.url)).front
            maps = fetch_maps(plain.endpoint)
            results["throughput"] = throughput(endpoints, maps, args.seconds, args.rounds, args.clients, args.inflight,
                                               args.threads)
            results["hop"] = hop_latency(plain.endpoint, endpoints["broker + 1 worker"], maps, args.hops)
            results["edits"] = edit_throughput(endpoints["broker + 2 workers (--state)"], maps, args.edit_seconds)
            results["edits_paced"] = paced_lag(endpoints["broker + 2 workers (--state)"], maps, args.paced_rate,
                                               PACED_UPDATES)
        results["failover"] = [failover(folder, maps, signal.SIGKILL, 1.5, 3.0),
                               failover(folder, maps, signal.SIGSTOP, 1.5, 4.5)]
    return _print(results, args)


def _print(results: dict, args) -> int:
    print(json.dumps(results) if args.json else report(results))
    if args.write_docs:
        write_section("scale", "```\n" + report(results) + "\n```")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
