"""Benchmark the server, side by side in one run:

1. throughput: a bare pyzmq ROUTER echo server vs pathserver answering short paths on
   ``den520d``, driven by the same closed-loop load (``pathserver.loadtest``) over loopback;
   the ratio is what docs/performance.md quotes (target >= 60% of the echo rate);
2. the seed design's scenario: 180 units on ``den520d`` asking at once from one client,
   as one ``paths`` call and as 180 pipelined ``path`` calls, end to end (target <= 16 ms,
   one 60 fps frame);
3. reload latency: a 512x512 map rewritten atomically (temp file + rename) in the served
   folder, timed from the rename until ``maps`` reports the new generation (target <= 300 ms).

    python bench/server.py                 # about 30 s
    python bench/server.py --quick --json  # shorter, one JSON object on stdout

Maps come from the Moving AI folder (``--movingai``, default ../shared/movingai beside the
repo) and are copied into a temporary folder the spawned server serves; nothing is written
into the repository. Both servers run as subprocesses, the load generator in this process:
on a machine with few cores they all compete for them, so read the ratio, not the rates.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import msgpack
import numpy as np
import zmq

from pathserver import kernel_cache

# First, before anything imports the kernels: numba picks their cache folder then.
kernel_cache.configure()

from pathserver.loadtest import LoadConfig, SpawnedServer, run_load  # noqa: E402
from pathserver.maps.scen import load_scen  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import add_argument as add_write_docs, write_section  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MOVINGAI = REPO.parent / "shared" / "movingai"
DEN = Path("dao") / "den520d.map"
RELOAD_MAP = Path("bg512") / "AR0011SR.map"
UNITS = 180
RECEIVE_TIMEOUT_MS = 10_000

TARGET_RATIO = 0.60
TARGET_FRAME_MS = 16.0
TARGET_RELOAD_MS = 300.0

ECHO_SERVER = r"""
import sys, zmq
context = zmq.Context()
router = context.socket(zmq.ROUTER)
router.linger = 0
router.bind("tcp://127.0.0.1:*")
print(router.getsockopt_string(zmq.LAST_ENDPOINT), flush=True)
while True:
    router.send_multipart(router.recv_multipart())
"""


@contextmanager
def echo_server():
    """A bare pyzmq ROUTER that sends every message back as it came, in a subprocess."""
    process = subprocess.Popen([sys.executable, "-c", ECHO_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        endpoint = process.stdout.readline().strip()
        if not endpoint.startswith("tcp://"):
            raise RuntimeError(f"the echo server did not start (exit status {process.poll()})")
        yield endpoint
    finally:
        process.kill()
        process.wait(5)


def _recv(sock, what: str):
    if not sock.poll(RECEIVE_TIMEOUT_MS, zmq.POLLIN):
        raise RuntimeError(f"no reply to {what} within {RECEIVE_TIMEOUT_MS / 1000:g} s")
    return msgpack.unpackb(sock.recv_multipart()[-1], raw=False)


# -- 1. throughput ---------------------------------------------------------------------------------


def throughput(pathserver_endpoint: str, short_scen: Path, seconds: float, clients: int, inflight: int) -> dict:
    """The same closed-loop load against the echo server and pathserver; a 1 s warm-up on
    each first (connections up, the per-size layer built)."""

    def load(endpoint, maps, duration):
        config = LoadConfig(endpoint=endpoint, clients=clients, inflight=inflight, duration=duration,
                            scen=short_scen, grace=2.0, seed=1)
        summary = run_load(config, maps=maps)
        summary.pop("_latencies")
        return summary

    with zmq.Context() as context, context.socket(zmq.DEALER) as sock:
        sock.linger = 0
        sock.connect(pathserver_endpoint)
        sock.send(msgpack.packb({"id": 1, "op": "maps"}))
        maps = _recv(sock, "maps")["maps"]
    with echo_server() as endpoint:
        load(endpoint, maps, 1.0)
        echo = load(endpoint, maps, seconds)
    load(pathserver_endpoint, maps, 1.0)
    served = load(pathserver_endpoint, maps, seconds)
    return {
        "clients": clients,
        "inflight": inflight,
        "seconds": seconds,
        "echo": _brief(echo),
        "pathserver": _brief(served),
        "ratio": round(served["throughput_rps"] / echo["throughput_rps"], 3) if echo["throughput_rps"] else None,
    }


def _brief(summary: dict) -> dict:
    keys = ("requests", "replies", "lost", "unmatched", "throughput_rps", "latency_ms", "statuses")
    out = {k: summary[k] for k in keys}
    out["errors"] = summary["errors"]
    return out


# -- 2. 180 units ----------------------------------------------------------------------------------


def units_scenario(endpoint: str, problems: list, rounds: int, unit_size) -> dict:
    """End-to-end ms for 180 requests: one ``paths`` call, and 180 pipelined ``path``
    calls (all sent, then all received), alternating, after two warm-up rounds each."""
    batch_ms, pipelined_ms = [], []
    statuses: dict = {}
    with zmq.Context() as context, context.socket(zmq.DEALER) as sock:
        sock.linger = 0
        sock.connect(endpoint)
        next_id = 1000
        for round_index in range(rounds + 2):
            began = time.perf_counter()
            sock.send(msgpack.packb({
                "id": next_id, "op": "paths", "map": "den520d", "unit_size": unit_size,
                "requests": [{"start": list(s), "goal": list(g)} for s, g in problems],
            }))
            reply = _recv(sock, "paths")
            elapsed = (time.perf_counter() - began) * 1000.0
            if not reply.get("ok") or reply["id"] != next_id or len(reply["results"]) != len(problems):
                raise RuntimeError(f"bad paths reply: {str(reply)[:300]}")
            next_id += 1
            if round_index >= 2:
                batch_ms.append(elapsed)
                for result in reply["results"]:
                    key = result.get("status") or result["error"]["code"]
                    statuses[key] = statuses.get(key, 0) + 1

            began = time.perf_counter()
            first = next_id
            for s, g in problems:
                sock.send(msgpack.packb({"id": next_id, "op": "path", "map": "den520d", "start": list(s),
                                         "goal": list(g), "unit_size": unit_size}))
                next_id += 1
            waiting = set(range(first, next_id))
            while waiting:
                reply = _recv(sock, "pipelined path")
                waiting.remove(reply["id"])
            elapsed = (time.perf_counter() - began) * 1000.0
            if round_index >= 2:
                pipelined_ms.append(elapsed)
    return {"units": len(problems), "unit_size": unit_size, "rounds": rounds,
            "paths_call_ms": _spread(batch_ms), "pipelined_ms": _spread(pipelined_ms), "statuses": statuses}


def _spread(values: list) -> dict:
    array = np.asarray(values, dtype=np.float64)
    return {"min": round(float(array.min()), 2), "median": round(float(np.median(array)), 2),
            "p90": round(float(np.percentile(array, 90)), 2), "max": round(float(array.max()), 2)}


# -- 3. reload -------------------------------------------------------------------------------------


def reload_latency(endpoint: str, folder: Path, source: Path, rounds: int) -> dict:
    """Rewrite ``folder/reload512.map`` atomically ``rounds`` times, each a different map
    (a block of the source map's walls moved), timing rename -> new generation served."""
    lines = source.read_text().splitlines()
    header, rows = lines[:4], lines[4:]
    target = folder / "reload512.map"
    latencies, writes = [], []
    with zmq.Context() as context, context.socket(zmq.DEALER) as sock:
        sock.linger = 0
        sock.connect(endpoint)
        next_id = [1]

        def generation():
            sock.send(msgpack.packb({"id": next_id[0], "op": "maps"}))
            next_id[0] += 1
            for entry in _recv(sock, "maps")["maps"]:
                if entry["name"] == "reload512":
                    return entry.get("gen", entry.get("generation"))
            return None

        before = generation()
        if before is None:
            raise RuntimeError("the server does not serve reload512")
        for round_index in range(rounds):
            edited = list(rows)
            # A different 8x8 block walled up each round: a new map every time.
            y0 = 16 + 8 * round_index
            for y in range(y0, y0 + 8):
                edited[y] = edited[y][:16] + "@" * 8 + edited[y][24:]
            text = "\n".join(header + edited) + "\n"
            temporary = folder / f".reload512.{round_index}.tmp"
            began_write = time.perf_counter()
            temporary.write_text(text)
            renamed = time.perf_counter()
            os.replace(temporary, target)
            writes.append((renamed - began_write) * 1000.0)
            deadline = renamed + 10.0
            while True:
                now_generation = generation()
                if now_generation is not None and now_generation != before:
                    latencies.append((time.perf_counter() - renamed) * 1000.0)
                    before = now_generation
                    break
                if time.perf_counter() > deadline:
                    raise RuntimeError("the new generation was not served within 10 s")
                time.sleep(0.002)
            time.sleep(0.2)
    return {"rounds": rounds, "size": "512x512", "rename_to_served_ms": _spread(latencies),
            "file_write_ms": _spread(writes)}


# -- the report ------------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def report(results: dict) -> str:
    lines = [f"pathserver bench/server.py: {results['machine']}"]
    t = results["throughput"]
    lines.append(f"\n1. throughput, closed loop, {t['clients']} clients x {t['inflight']} in flight, "
                 f"{t['seconds']:g} s each, short den520d scenario problems (buckets 0-2)")
    for label, key in (("bare pyzmq ROUTER echo", "echo"), ("pathserver path", "pathserver")):
        s = t[key]
        lines.append(f"   {label:<24} {s['throughput_rps']:>9,.0f} replies/s   p50 {s['latency_ms']['p50']:.2f} ms"
                     f"   p99 {s['latency_ms']['p99']:.2f} ms   lost {s['lost']}")
    if t["ratio"] is not None:
        lines.append(f"   ratio                    {100 * t['ratio']:>8.0f} %         target >= "
                     f"{100 * TARGET_RATIO:.0f}%   {verdict(t['ratio'] >= TARGET_RATIO)}")
    u = results["units"]
    lines.append(f"\n2. {u['units']} units on den520d at once (unit size {u['unit_size']}), one client, "
                 f"{u['rounds']} rounds after 2 warm-up")
    for label, key in (("one paths call", "paths_call_ms"), (f"{u['units']} pipelined path calls", "pipelined_ms")):
        s = u[key]
        lines.append(f"   {label:<24} median {s['median']:>7.2f} ms   p90 {s['p90']:.2f}   min {s['min']:.2f}   "
                     f"max {s['max']:.2f}   target <= {TARGET_FRAME_MS:g} ms   "
                     f"{verdict(s['median'] <= TARGET_FRAME_MS)}")
    answers = ", ".join(f"{k} {v // u['rounds']}" for k, v in sorted(u["statuses"].items()))
    lines.append(f"   answers per round: {answers}")
    r = results["reload"]
    s = r["rename_to_served_ms"]
    lines.append(f"\n3. reload of a {r['size']} map, atomic rename, {r['rounds']} rounds")
    lines.append(f"   rename -> new generation  median {s['median']:>7.2f} ms   p90 {s['p90']:.2f}   max {s['max']:.2f}   "
                 f"target <= {TARGET_RELOAD_MS:g} ms   {verdict(s['max'] <= TARGET_RELOAD_MS)}")
    lines.append(f"   (writing the file itself: median {r['file_write_ms']['median']:.2f} ms)")
    return "\n".join(lines)


def markdown(results: dict) -> str:
    """The three measurements as docs/performance.md's table."""
    t, u, r = results["throughput"], results["units"], results["reload"]
    lines = ["| measurement | pathserver | reference | target | result |", "|---|---:|---:|---|---|"]
    if t["ratio"] is not None:
        lines.append(f"| short den520d paths, {t['clients']} clients × {t['inflight']} in flight, replies/s "
                     f"| {t['pathserver']['throughput_rps']:,.0f} | {t['echo']['throughput_rps']:,.0f} (a bare pyzmq "
                     f"ROUTER echo server) | ≥ {100 * TARGET_RATIO:.0f}% of the echo | {100 * t['ratio']:.0f}%: "
                     f"{verdict(t['ratio'] >= TARGET_RATIO)} |")
    for label, key in ((f"{u['units']} units on den520d, one `paths` call", "paths_call_ms"),
                       (f"{u['units']} units on den520d, {u['units']} pipelined `path` calls", "pipelined_ms")):
        s = u[key]
        lines.append(f"| {label} (median of {u['rounds']} rounds) | {s['median']:.1f} ms | | ≤ {TARGET_FRAME_MS:g} ms "
                     f"| {verdict(s['median'] <= TARGET_FRAME_MS)} |")
    s = r["rename_to_served_ms"]
    lines.append(f"| hot reload of a {r['size']} map, atomic rename to the new generation served (median; max) "
                 f"| {s['median']:.0f} ms; {s['max']:.0f} ms | | ≤ {TARGET_RELOAD_MS:g} ms (max) "
                 f"| {verdict(s['max'] <= TARGET_RELOAD_MS)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--movingai", type=Path, default=DEFAULT_MOVINGAI, help="the Moving AI benchmark folder")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds of load per server (default 5)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--inflight", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=30, help="rounds of the 180-unit scenario (default 30)")
    parser.add_argument("--reloads", type=int, default=10, help="reload rounds (default 10)")
    parser.add_argument("--unit", type=int, default=1, help="unit size in the 180-unit scenario (default 1)")
    parser.add_argument("--quick", action="store_true", help="1.5 s of load, 10 rounds, 5 reloads")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    add_write_docs(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.rounds, args.reloads = 1.5, 10, 5
    den, reload_source = args.movingai / DEN, args.movingai / RELOAD_MAP
    for path in (den, reload_source):
        if not path.is_file():
            print(f"bench/server.py: {path} not found (give --movingai)", file=sys.stderr)
            return 2

    scenarios = load_scen(den.with_name(den.name + ".scen"))
    rng = np.random.default_rng(180)
    chosen = rng.choice(len(scenarios), size=min(UNITS, len(scenarios)), replace=False)
    problems = [(scenarios[i].start, scenarios[i].goal) for i in sorted(chosen)]

    import pathserver
    import zmq as zmq_module

    results = {"machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
                          f"pyzmq {zmq_module.__version__} (libzmq {zmq_module.zmq_version()}), "
                          f"pathserver {pathserver.__version__}"}
    with tempfile.TemporaryDirectory(prefix="pathserver-bench-") as tmp:
        folder = Path(tmp) / "maps"
        folder.mkdir()
        shutil.copy(den, folder / "den520d.map")
        shutil.copy(reload_source, folder / "reload512.map")
        short_scen = Path(tmp) / "short.scen"
        short_lines = ["version 1"] + [
            f"{s.bucket}\tden520d.map\t{s.width}\t{s.height}\t{s.start[0]}\t{s.start[1]}\t{s.goal[0]}\t{s.goal[1]}"
            f"\t{s.optimal_length}"
            for s in scenarios if s.bucket <= 2
        ]
        short_scen.write_text("\n".join(short_lines) + "\n")
        with SpawnedServer(folder) as server:
            results["throughput"] = throughput(server.endpoint, short_scen, args.seconds, args.clients, args.inflight)
            results["units"] = units_scenario(server.endpoint, problems, args.rounds, args.unit)
            results["reload"] = reload_latency(server.endpoint, folder, reload_source, args.reloads)
    if args.json:
        print(json.dumps(results))
    else:
        print(report(results))
    if args.write_docs:
        write_section("server", markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
