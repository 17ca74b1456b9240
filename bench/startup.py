"""How long ``pathserver serve`` takes to start, cold and warm, side by side in one run.

    python bench/startup.py                 # one cold start, then 3 warm ones
    python bench/startup.py --warm-runs 5 --json startup.json

Cold: a fresh, empty numba cache folder (``NUMBA_CACHE_DIR``), as on a player's machine
the first time: every kernel compiles. Warm: the same folder again, now filled. Each
start is a new process serving the repository's sample maps on a free loopback port;
the script records when the first progress line came (the server says what it is doing
within a second), when the ready line came, and when the first path request was answered.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgpack
import zmq

ROOT = Path(__file__).resolve().parent.parent
READY = re.compile(r"^pathserver ready on (\S+) \(\d+ maps?\)$")
REQUEST = {"id": 1, "op": "path", "map": "example", "start": [1, 1], "goal": [60, 60]}


def start_once(cache_dir: str, maps: Path, timeout: float) -> dict:
    """One server start; the times are seconds from process creation."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "PYTHONUNBUFFERED": "1"}
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "pathserver", "serve", "--maps", str(maps), "--bind", "tcp://127.0.0.1:*"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT,
    )
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ, "out")
    selector.register(process.stderr, selectors.EVENT_READ, "err")
    first_line = endpoint = None
    said = []
    try:
        deadline = began + timeout
        while endpoint is None:
            left = deadline - time.perf_counter()
            events = selector.select(max(0.0, left)) if left > 0 else []
            if not events:
                return {"error": f"no ready line within {timeout:.0f} s"}
            for key, _ in events:
                line = key.fileobj.readline().decode()
                if not line:
                    return {"error": f"the server exited ({process.wait(5)}) before its ready line: "
                                     + " / ".join(said[-3:] + [process.stderr.read().decode().strip()])}
                said.append(line.strip())
                if first_line is None:
                    first_line = time.perf_counter() - began
                match = READY.match(line.strip()) if key.data == "out" else None
                if match:
                    endpoint = match.group(1)
        ready = time.perf_counter() - began
        context = zmq.Context.instance()
        dealer = context.socket(zmq.DEALER)
        dealer.linger = 0
        dealer.sndtimeo = dealer.rcvtimeo = 10_000
        try:
            dealer.connect(endpoint)
            dealer.send_multipart([b"", msgpack.packb(REQUEST)])
            reply = msgpack.unpackb(dealer.recv_multipart()[-1])
        finally:
            dealer.close(linger=0)
        answered = time.perf_counter() - began
        if reply.get("status") != "found":
            return {"error": f"first path answered {reply!r}"}
        return {"first_line_s": first_line, "ready_s": ready, "first_answer_s": answered}
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--maps", type=Path, default=ROOT / "maps", help="maps folder (default: the sample maps)")
    parser.add_argument("--warm-runs", type=int, default=3, help="warm starts; the median is shown (default 3)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a start may take (default 300)")
    parser.add_argument("--json", type=Path, help="write every figure as JSON here")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="pathserver-numba-") as cache_dir:
        cold = start_once(cache_dir, args.maps, args.timeout)
        warm_runs = [start_once(cache_dir, args.maps, args.timeout) for _ in range(args.warm_runs)]
    failed = [run["error"] for run in [cold, *warm_runs] if "error" in run]
    if failed:
        print("startup bench failed: " + "; ".join(failed), file=sys.stderr)
        return 1
    warm = {key: statistics.median(run[key] for run in warm_runs) for key in warm_runs[0]}
    print(f"{'start':<28}{'first line s':>14}{'ready s':>10}{'first path s':>14}")
    for name, run in (("cold (empty numba cache)", cold), (f"warm (median of {len(warm_runs)})", warm)):
        print(f"{name:<28}{run['first_line_s']:>14.2f}{run['ready_s']:>10.2f}{run['first_answer_s']:>14.2f}")
    print(f"cold / warm ready: {cold['ready_s'] / warm['ready_s']:.1f}x")
    if args.json:
        args.json.write_text(json.dumps({"cold": cold, "warm": warm, "warm_runs": warm_runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
