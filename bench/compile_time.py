"""Where a cold start's compile time goes: each warm-up step of ``pathserver serve``, and
each kernel's own compile time (its callees' taken out), signature by signature, into an
empty numba cache.

    python bench/compile_time.py                 # the steps, then the 25 dearest kernels
    python bench/compile_time.py --top 60 --json compile.json

One process, the steps in the server's order (``pathserver.server.startup``), so a
kernel shared by several steps is charged to the first. numba's compile events give
each compile's start and end; a compile nested in another (a callee typed for its
caller) is taken out of its caller's time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25, help="kernels shown (default: %(default)s)")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args(argv)
    # An empty cache of its own, before numba is imported.
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="pathserver-compile-time-")
    from numba.core import event

    own = defaultdict(float)
    count = defaultdict(int)
    open_compiles = []

    class Compiles(event.Listener):
        def on_start(self, ev):
            dispatcher = ev.data.get("dispatcher")
            name = dispatcher.py_func.__qualname__ if dispatcher is not None else "?"
            open_compiles.append((time.perf_counter(), f"{name}{ev.data.get('args', '')}"))

        def on_end(self, ev):
            began, name = open_compiles.pop()
            seconds = time.perf_counter() - began
            own[name] += seconds
            count[name] += 1
            if open_compiles:
                own[open_compiles[-1][1]] -= seconds

    event.register("numba:compile", Compiles())
    from pathserver.server.startup import warm_steps

    began, began_cpu = time.perf_counter(), time.process_time()
    steps = []
    for name, step in warm_steps():
        started, started_cpu = time.perf_counter(), time.process_time()
        step()
        steps.append((name, time.perf_counter() - started, time.process_time() - started_cpu))
    total, total_cpu = time.perf_counter() - began, time.process_time() - began_cpu
    # CPU seconds too: on a shared machine they move less than the wall clock.
    print(f"{'warm-up step':<78}{'s':>8}{'cpu s':>8}")
    for name, seconds, cpu in steps:
        print(f"{name:<78}{seconds:>8.1f}{cpu:>8.1f}")
    print(f"{'all steps':<78}{total:>8.1f}{total_cpu:>8.1f}")
    print(f"\n{'kernel and signature (own compile time)':<110}{'s':>8}")
    dearest = sorted(own.items(), key=lambda item: -item[1])
    for name, seconds in dearest[:args.top]:
        print(f"{name[:108]:<110}{seconds:>8.2f}")
    print(f"{len(own)} signatures compiled, {sum(count.values())} compiles, python {sys.version.split()[0]}")
    if args.json:
        args.json.write_text(json.dumps({"steps": steps, "total_s": total, "total_cpu_s": total_cpu,
                                         "kernels": [{"signature": n, "seconds": s} for n, s in dearest]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
