"""Per-query speed of the kernels compiled for a portable CPU target against host-tuned ones.

    python bench/cpu_target.py                          # host, generic, x86-64-v2, x86-64-v3
    python bench/cpu_target.py --targets host,generic --rounds 5 --queries 300

A bundle (``pathserver bundle``) ships kernels compiled at build time, so they must run
on any player's CPU of the same family: numba's ``NUMBA_CPU_NAME=generic`` (no
instruction beyond the family's baseline), or a baseline level such as ``x86-64-v2``
(SSE4.2, POPCNT; every x86-64 CPU since about 2009). This script measures what that costs.

numba picks its CPU target once per process, so each target runs in its own child
process (its own numba cache folder, compiled once, untimed); the children answer the
same bucket-spread Moving AI problems as ``bench/core.py`` (A* and JPS with
``line_of_sight=False``, and the defaults), and the rounds rotate the targets' order so a
slow spell on a shared machine lands on all of them. Each row is the median over rounds
of a round's mean µs per query; the ratio column is against the host-tuned row. Every
target's paths must cost the same as the host's, else the run fails.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DEFAULT_MAPS = ("den520d", "Aftershock", "Boston_0_512", "32room_000")
ENGINES = (("A*", "astar", False), ("JPS", "jps", False), ("auto", "auto", True))


def target_env(target: str) -> dict:
    """The environment that makes numba compile for ``target`` ("host": numba's default).
    A named CPU gets an explicit empty feature list: numba would otherwise add the host's
    own features (AVX-512 here), and the code would be neither portable nor what the name says."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("NUMBA_CPU_")}
    if target != "host":
        env["NUMBA_CPU_NAME"] = target
        env["NUMBA_CPU_FEATURES"] = ""
    return env


def child(args) -> int:
    """One target: load the maps, warm up, time every problem with every engine."""
    sys.path.insert(0, str(BENCH))
    import _movingai as movingai

    from pathserver import GridMap, find_path

    found = movingai.find_maps(args.movingai)
    out = {}
    for name in args.maps.split(","):
        path = found[name]
        walkable = movingai.read_walkable(path)
        problems = movingai.bucket_spread(movingai.read_scenarios(path, walkable), args.queries, args.seed)
        gridmap = GridMap.load(path)
        for label, algorithm, line_of_sight in ENGINES:
            for p in problems[:3]:
                find_path(gridmap, (p.sx, p.sy), (p.gx, p.gy), algorithm=algorithm, line_of_sight=line_of_sight)
        times = {label: [] for label, _, _ in ENGINES}
        costs = {label: [] for label, _, _ in ENGINES}
        gc.disable()
        try:
            for i, p in enumerate(problems):
                for k in range(len(ENGINES)):
                    label, algorithm, line_of_sight = ENGINES[(i + k) % len(ENGINES)]
                    t0 = time.perf_counter_ns()
                    result = find_path(gridmap, (p.sx, p.sy), (p.gx, p.gy), algorithm=algorithm,
                                       line_of_sight=line_of_sight)
                    times[label].append(time.perf_counter_ns() - t0)
                    costs[label].append(round(result.cost, 6))
        finally:
            gc.enable()
        out[name] = {label: {"mean_us": statistics.fmean(times[label]) / 1000, "costs": costs[label]}
                     for label in times}
    print(json.dumps(out))
    return 0


def run_target(target: str, cache_dir: str, args) -> dict:
    env = target_env(target)
    env["NUMBA_CACHE_DIR"] = cache_dir
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", "--maps", args.maps, "--queries",
         str(args.queries), "--seed", str(args.seed), "--movingai", str(args.movingai)],
        env=env, capture_output=True, text=True, cwd=cache_dir,
    )
    if done.returncode != 0:
        raise SystemExit(f"target {target} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default="host,generic,x86-64-v2,x86-64-v3",
                        help="comma-separated CPU targets; 'host' is numba's default (default %(default)s)")
    parser.add_argument("--maps", default=",".join(DEFAULT_MAPS), help="Moving AI map names (default %(default)s)")
    parser.add_argument("--queries", type=int, default=200, help="problems per map (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="timed runs per target (default 3)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--movingai", type=Path, default=ROOT.parent / "shared" / "movingai")
    parser.add_argument("--json", type=Path, help="write every figure as JSON here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)

    targets = args.targets.split(",")
    if "host" not in targets:
        targets.insert(0, "host")
    with tempfile.TemporaryDirectory(prefix="pathserver-cpu-") as scratch:
        caches = {target: str(Path(scratch) / target) for target in targets}
        for folder in caches.values():
            Path(folder).mkdir()
        print(f"compiling for {', '.join(targets)} (untimed) ...", file=sys.stderr, flush=True)
        for target in targets:
            run_target(target, caches[target], argparse.Namespace(**{**vars(args), "queries": 3}))
        rounds = {target: [] for target in targets}
        for r in range(args.rounds):
            order = targets[r % len(targets):] + targets[:r % len(targets)]
            for target in order:
                rounds[target].append(run_target(target, caches[target], args))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    maps = args.maps.split(",")
    labels = [label for label, _, _ in ENGINES]
    host_costs = rounds["host"][0]
    for target in targets:
        for name in maps:
            for label in labels:
                if rounds[target][0][name][label]["costs"] != host_costs[name][label]["costs"]:
                    raise SystemExit(f"{target} {label} on {name}: path costs differ from the host-tuned kernels'")
    table = {target: {name: {label: statistics.median(run[name][label]["mean_us"] for run in rounds[target])
                             for label in labels} for name in maps} for target in targets}
    print(f"CPU: {platform.machine()}, host target {host_cpu()}; {args.queries} queries a map, "
          f"median of {args.rounds} rounds; mean µs per query (ratio: target / host)")
    header = f"{'map':<14}{'engine':<7}" + "".join(f"{t:>20}" for t in targets)
    print(header)
    for name in maps:
        for label in labels:
            host = table["host"][name][label]
            cells = "".join(f"{table[t][name][label]:>11.1f} ({table[t][name][label] / host:4.2f}x)" for t in targets)
            print(f"{name:<14}{label:<7}{cells}")
    print("geometric mean ratio over maps and engines: " + ", ".join(
        f"{t} {geomean([table[t][n][e] / table['host'][n][e] for n in maps for e in labels]):.3f}x"
        for t in targets))
    if args.json:
        args.json.write_text(json.dumps({"targets": targets, "table": table}, indent=2))
    return 0


def geomean(values: list[float]) -> float:
    return statistics.geometric_mean(values)


def host_cpu() -> str:
    try:
        import llvmlite.binding as ll

        return ll.get_host_cpu_name()
    except Exception:  # noqa: BLE001 - only a label
        return platform.processor() or "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
