"""pathserver's default search against Warthog's JPS, side by side on Moving AI maps.

    WARTHOG_BIN=/path/to/warthog-jps python bench/warthog.py
    python bench/warthog.py --warthog /path/to/warthog-jps --rounds 5 --json warthog.json
    python bench/warthog.py                  # no Warthog build: prints how to make one, skips

Warthog (ShortestPathLab's C++ library) is the reference for speed on grids. Its JPS
program reads a Moving AI scenario file and prints one line per problem with the
nanoseconds its search took. This script writes the same bucket-spread problems that
``bench/core.py`` draws (200 per map, seed 0) to a temporary scenario file, runs the
program on it with ``jps2`` (online JPS, block-based jumps and intercardinal pruning)
and ``jps2+`` (the same with jump tables precomputed when the map loads), and answers
the same problems in this process with pathserver's ``find_path`` with its defaults
(``algorithm="auto"``, the straight-line shortcut). The engines take turns round by
round (the order rotates). Two figures per engine: its lowest round mean, and the mean
of each problem's fastest time over the rounds, the steadier one on a busy machine
(where a few preempted queries make a round's mean); bench/README.md has the measurement.

What is timed per query:
  Warthog     the program's own per-problem figure: its search alone, from its open
              list's reset until the search ends. Outside it: reading the map, building
              jps2+'s jump tables, turning the scenario's (x, y) into its ids, walking
              the parent pointers into a path, printing. The process's wall time minus
              the searches is shown apart, as "outside the timer".
  pathserver  the Python call ``find_path(gridmap, start, goal)`` until it returns a
              PathResult with every cell of the path: the call, checks, search and
              result. Loading the map, its first query (which builds the unit-size
              layer) and waiting for the layer's jump table (JPS+'s, built in the
              background; jps2+ builds its own when the map loads) and, on maps small
              enough for them, its goal bounds (seconds, see the set-up table) happen
              before the clock starts. Each round of pathserver runs right after a Warthog process
              has filled the CPU's caches with its own data, where Warthog starts its
              searches with the map and tables it has just built in them; so before
              each timed round pathserver answers, untimed, as many other problems of
              the map (the next seed's), which brings its map, table and search arrays
              back into the caches without touching the timed problems' own answers
              (``--no-warm-up`` leaves it out).

Both must solve the same problem: 8-connected, costs 1 and sqrt(2), no corner cutting
(the Moving AI rule, Warthog's only rule). Every answer's length is checked against the
scenario's optimal length.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _movingai as movingai  # noqa: E402
from _docs import add_argument as add_write_docs, cpu_name, write_section  # noqa: E402

MAPS = ("den520d", "brc202d", "Aftershock", "Boston_0_512", "32room_000", "maze512-32-0")
WARTHOG_ALGORITHMS = ("jps2", "jps2+")
PATHSERVER = "pathserver auto"
ENV_VAR = "WARTHOG_BIN"
#: Warthog prints costs with C++'s default stream precision, 6 significant digits.
WARTHOG_PRINTED_RELATIVE = 1e-5
RUN_TIMEOUT_S = 300

BUILD_STEPS = f"""\
How to build Warthog's JPS program (checked with warthog-jps 0.5.1, commit 44afdd4, and
warthog-core at f379ef2; needs cmake >= 3.13 and a C++20 compiler, e.g. g++ 12):

    apt-get install -y cmake g++ git
    git clone https://github.com/ShortestPathLab/warthog-jps
    cd warthog-jps
    git submodule update --init      # extern/warthog-core; without it cmake fetches it
    cmake -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-march=native -B build
    cmake --build build -j
    export {ENV_VAR}=$PWD/build/warthog-jps

then run this script again (or pass --warthog PATH). -march=native compiles Warthog for
this CPU, as numba compiles pathserver's kernels; without it jps2 was 5 to 20% slower here.
(Warthog's own -DWARTHOG_INTRIN_ALL=ON did not compile with g++ 12.) The program's algorithms are named
jps, jps2 (alias jpsP), jps+ and jps2+ (alias jpsP+); this bench runs jps2 and jps2+."""


@dataclass
class EngineRun:
    """One engine on one map: the mean per query of each round, and what it answered."""

    name: str
    round_means_us: list = field(default_factory=list)
    outside_ms: list = field(default_factory=list)  # Warthog: process wall time minus searches
    fastest_ns: list | None = None  # per problem, its fastest time over the rounds
    costs: list | None = None  # per problem, from the last round
    expanded: list | None = None  # nodes expanded per problem, from the last round
    algorithms: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def best_us(self) -> float | None:
        return min(self.round_means_us) if self.round_means_us and not self.error else None

    @property
    def fastest_mean_us(self) -> float | None:
        return statistics.fmean(self.fastest_ns) / 1000 if self.fastest_ns and not self.error else None

    def add_round(self, times_ns: list) -> None:
        self.round_means_us.append(statistics.fmean(times_ns) / 1000)
        self.fastest_ns = list(times_ns) if self.fastest_ns is None else list(map(min, self.fastest_ns, times_ns))


def find_binary(argument: str | None) -> Path | None:
    """--warthog, else $WARTHOG_BIN; None when neither names a file."""
    value = argument or os.environ.get(ENV_VAR)
    if not value:
        return None
    return Path(value).expanduser()


def write_scenario(path: Path, map_path: Path, shape: tuple, problems: list) -> None:
    """The problems as a Moving AI "version 1" scenario file (tab-separated)."""
    height, width = shape
    lines = ["version 1"]
    for p in problems:
        lines.append(f"{p.bucket}\t{map_path.name}\t{width}\t{height}\t{p.sx}\t{p.sy}\t{p.gx}\t{p.gy}\t{p.optimal!r}")
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def run_warthog(binary: Path, algorithm: str, scen: Path, map_path: Path, count: int) -> tuple[list, list, list, float]:
    """Run the program once: (nanos, cost and nodes expanded per problem, wall seconds)."""
    t0 = time.perf_counter()
    done = subprocess.run([str(binary), "--alg", algorithm, "--scen", str(scen), "--map", str(map_path)],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"warthog --alg {algorithm} exited {done.returncode}: {tail[0]}")
    lines = done.stdout.splitlines()
    header = lines[0].split("\t")
    try:
        at_id, at_nanos, at_cost = header.index("id"), header.index("nanos"), header.index("pcost")
        at_expanded = header.index("expanded")
    except ValueError:
        raise RuntimeError(f"warthog's output header is not the expected one: {lines[0]!r}") from None
    nanos = [0] * count
    costs = [None] * count
    expanded = [0] * count
    seen = 0
    for line in lines[1:]:
        fields = line.split("\t")
        if len(fields) != len(header):
            continue
        i = int(fields[at_id])
        nanos[i] = int(fields[at_nanos])
        costs[i] = float(fields[at_cost])
        expanded[i] = int(fields[at_expanded])
        seen += 1
    if seen != count:
        raise RuntimeError(f"warthog --alg {algorithm} answered {seen} of {count} problems")
    return nanos, costs, expanded, wall


def pathserver_round(find_path, gridmap, problems: list) -> tuple[list, list]:
    """Every problem through ``find_path`` with its defaults: (ns per call, results)."""
    times = []
    results = []
    gc.disable()  # as timeit does: a collection would land on whichever query was running
    try:
        for p in problems:
            t0 = time.perf_counter_ns()
            result = find_path(gridmap, (p.sx, p.sy), (p.gx, p.gy))
            times.append(time.perf_counter_ns() - t0)
            results.append(result)
    finally:
        gc.enable()
    return times, results


def check_lengths(run: EngineRun, problems: list, walkable: np.ndarray, paths: list | None) -> dict:
    """How many of ``run``'s answers have the scenario's optimal length. For pathserver the
    path itself is walked too (valid steps, no corner cut) and its length must equal its cost."""
    correct = 0
    wrong = []
    for i, p in enumerate(problems):
        cost = run.costs[i] if run.costs else None
        ok = cost is not None and cost != float("inf")
        if ok and paths is not None:
            walked = movingai.path_length(paths[i], walkable, (p.sx, p.sy), (p.gx, p.gy))
            ok = walked is not None and abs(walked - cost) <= 1e-9 * max(1.0, walked)
        tolerance = p.tolerance
        if paths is None:
            tolerance += WARTHOG_PRINTED_RELATIVE * max(1.0, p.optimal)
        if ok and abs(cost - p.optimal) <= tolerance:
            correct += 1
        else:
            wrong.append({"problem": i, "start": [p.sx, p.sy], "goal": [p.gx, p.gy], "optimal": p.optimal,
                          "answered": cost})
    return {"correct": correct, "wrong": wrong[:5]}


def warm_up() -> None:
    """Compile (or load from numba's cache) the map building and search kernels on a tiny
    map, so the first map's load and first query show their own cost, not the JIT's."""
    from pathserver import GridMap
    from pathserver.grid.search import find_path

    tiny = np.ones((8, 8), dtype=bool)
    tiny[3, 1:6] = False
    gridmap = GridMap(tiny)
    for algorithm in ("astar", "jps", "auto"):
        find_path(gridmap, (0, 0), (7, 5), algorithm=algorithm)


def bench_map(name: str, map_path: Path, binary: Path, queries: int, rounds: int, seed: int,
              scratch: Path, warm_caches: bool = True) -> dict:
    from pathserver import GridMap
    from pathserver.grid.search import find_path

    walkable = movingai.read_walkable(map_path)
    scenarios = movingai.read_scenarios(map_path, walkable)
    problems = movingai.bucket_spread(scenarios, queries, seed)
    scen = scratch / f"{name}.map.scen"
    write_scenario(scen, map_path, walkable.shape, problems)

    t0 = time.perf_counter()
    gridmap = GridMap.load(map_path)
    load_ms = (time.perf_counter() - t0) * 1000
    if gridmap.walkable.shape != walkable.shape or not (gridmap.walkable == walkable).all():
        raise SystemExit(f"{map_path}: GridMap.load disagrees with the bench's reader about walkable cells")
    t0 = time.perf_counter()
    find_path(gridmap, (problems[0].sx, problems[0].sy), (problems[0].gx, problems[0].gy))
    first_ms = (time.perf_counter() - t0) * 1000
    wait = getattr(gridmap.layer(1), "wait_jump_table", None)
    if wait is not None:
        wait()
    # JPS+'s goal bounds, on maps small enough for them: built in the background too.
    t0 = time.perf_counter()
    wait = getattr(gridmap.layer(1), "wait_bounds", None)
    bounds_ms = (time.perf_counter() - t0) * 1000 if wait is not None and wait() else None
    others = movingai.bucket_spread(scenarios, queries, seed + 1) if warm_caches else []

    runs = {algorithm: EngineRun(f"warthog {algorithm}") for algorithm in WARTHOG_ALGORITHMS}
    runs[PATHSERVER] = EngineRun(PATHSERVER)
    order = [*WARTHOG_ALGORITHMS, PATHSERVER]
    paths = None
    for r in range(rounds):
        for k in range(len(order)):
            engine = order[(r + k) % len(order)]
            run = runs[engine]
            if run.error:
                continue
            try:
                if engine == PATHSERVER:
                    for p in others:  # untimed: the caches as Warthog's own start leaves them
                        find_path(gridmap, (p.sx, p.sy), (p.gx, p.gy))
                    times, results = pathserver_round(find_path, gridmap, problems)
                    run.add_round(times)
                    run.costs = [res.cost if res.status == "found" else None for res in results]
                    run.expanded = [res.expanded for res in results]
                    paths = [res.path if res.status == "found" else None for res in results]
                    run.algorithms = {}
                    for res in results:
                        run.algorithms[res.algorithm] = run.algorithms.get(res.algorithm, 0) + 1
                else:
                    nanos, costs, run.expanded, wall = run_warthog(binary, engine, scen, map_path, len(problems))
                    run.add_round(nanos)
                    run.outside_ms.append(wall * 1000 - sum(nanos) / 1e6)
                    run.costs = costs
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
                run.error = f"{type(error).__name__}: {error}"

    engines = []
    for engine in order:
        run = runs[engine]
        checked = check_lengths(run, problems, walkable, paths if engine == PATHSERVER else None) \
            if not run.error else {"correct": 0, "wrong": []}
        engines.append({
            "engine": run.name,
            "best_mean_us": run.best_us,
            "round_means_us": run.round_means_us,
            "fastest_mean_us": run.fastest_mean_us,
            "outside_timer_ms": min(run.outside_ms) if run.outside_ms else None,
            "correct": checked["correct"],
            "wrong": checked["wrong"],
            "algorithms": run.algorithms or None,
            "expanded_mean": statistics.fmean(run.expanded) if run.expanded else None,
            "error": run.error,
        })
    by = {e["engine"]: e for e in engines}
    ours = by[PATHSERVER]["best_mean_us"]
    ours_fastest = by[PATHSERVER]["fastest_mean_us"]
    ratios = {}
    fastest_ratios = {}
    for algorithm in WARTHOG_ALGORITHMS:
        theirs = by[f"warthog {algorithm}"]["best_mean_us"]
        ratios[algorithm] = ours / theirs if ours and theirs else None
        theirs = by[f"warthog {algorithm}"]["fastest_mean_us"]
        fastest_ratios[algorithm] = ours_fastest / theirs if ours_fastest and theirs else None
    return {
        "map": name,
        "file": str(map_path),
        "width": int(walkable.shape[1]),
        "height": int(walkable.shape[0]),
        "queries": len(problems),
        "pathserver_load_ms": load_ms,
        "pathserver_first_query_ms": first_ms,
        "pathserver_bounds_ms": bounds_ms,
        "engines": engines,
        "ratio_pathserver_over": ratios,
        "fastest_ratio_pathserver_over": fastest_ratios,
    }


def fmt(value, spec: str) -> str:
    if value is None:
        return "-".rjust(int(spec.split(".")[0] or 0))
    return format(value, spec)


def print_report(report: dict) -> None:
    meta = report["meta"]
    print(f"pathserver against Warthog JPS  {meta['when']}")
    print(f"  warthog: {meta['warthog']}")
    print(f"  load average before the run: {meta['load_before']}, after: {meta['load_after']}")
    print(f"  {meta['cpu']}, {meta['cpus']} CPUs; {meta['queries']} bucket-spread queries per map (seed "
          f"{meta['seed']}), {meta['rounds']} rounds, engines alternating.")
    print("  Warthog: its own per-query search time (map load, jps2+ precompute, path extraction and output")
    print("  excluded). pathserver: the whole Python call find_path(gridmap, start, goal) with its defaults")
    print("  (algorithm auto, straight-line shortcut), returning every cell of the path.")
    if meta.get("warm_caches"):
        print("  Before each pathserver round: the next seed's problems, untimed (the caches as Warthog's own")
        print("  start leaves them; --no-warm-up times it straight after Warthog's process).")
    print()
    print("Each engine's lowest round mean:")
    head = (f"  {'map':<14}{'jps2 us':>9}{'jps2+ us':>10}{'ps auto us':>12}{'ps/jps2':>9}{'ps/jps2+':>10}"
            f"  {'optimal (jps2 / jps2+ / ps)':<28}ran")
    print(head)
    for m in report["maps"]:
        by = {e["engine"]: e for e in m["engines"]}
        j, jp, ps = by["warthog jps2"], by["warthog jps2+"], by[PATHSERVER]
        ratio = m["ratio_pathserver_over"]
        n = m["queries"]
        optimal = f"{j['correct']} / {jp['correct']} / {ps['correct']} of {n}"
        ran = ", ".join(f"{k} {v}" for k, v in sorted((ps["algorithms"] or {}).items()))
        print(f"  {m['map']:<14}{fmt(j['best_mean_us'], '9.1f')}{fmt(jp['best_mean_us'], '10.1f')}"
              f"{fmt(ps['best_mean_us'], '12.1f')}{fmt(ratio['jps2'], '8.2f')}x{fmt(ratio['jps2+'], '9.2f')}x"
              f"  {optimal:<28}{ran}")
        for e in m["engines"]:
            if e["error"]:
                print(f"    {e['engine']} FAILED: {e['error']}")
            for w in e["wrong"]:
                print(f"    {e['engine']} not optimal: {w}")
    print("\n  ratio = pathserver's time / Warthog's: below 1.00x pathserver is faster.")
    print("\nThe same with each problem's fastest time over the rounds (mean of per-problem minima): a")
    print("check on the table above when the machine is busy, where a long round is more often preempted.")
    print(f"  {'map':<14}{'jps2 us':>9}{'jps2+ us':>10}{'ps auto us':>12}{'ps/jps2':>9}{'ps/jps2+':>10}"
          f"  {'expanded: jps2 / ps':<20}{'us per expanded: jps2 / ps':<26}")
    for m in report["maps"]:
        by = {e["engine"]: e for e in m["engines"]}
        ratio = m["fastest_ratio_pathserver_over"]
        j, ps = by["warthog jps2"], by[PATHSERVER]
        expanded = f"{fmt(j['expanded_mean'], '.0f')} / {fmt(ps['expanded_mean'], '.0f')}"
        per_node = "-"
        if j["expanded_mean"] and ps["expanded_mean"] and j["fastest_mean_us"] and ps["fastest_mean_us"]:
            per_node = (f"{j['fastest_mean_us'] / j['expanded_mean']:.2f} / "
                        f"{ps['fastest_mean_us'] / ps['expanded_mean']:.2f}")
        print(f"  {m['map']:<14}{fmt(j['fastest_mean_us'], '9.1f')}"
              f"{fmt(by['warthog jps2+']['fastest_mean_us'], '10.1f')}{fmt(ps['fastest_mean_us'], '12.1f')}"
              f"{fmt(ratio['jps2'], '8.2f')}x{fmt(ratio['jps2+'], '9.2f')}x  {expanded:<20}{per_node}")
    print("  expanded: mean nodes expanded per problem, as each engine counts them (jps2+ expands the")
    print("  same nodes as jps2; its tables make each jump cheaper).")
    print("\nSet-up, outside the per-query figures (ms):")
    print(f"  {'map':<14}{'jps2 outside timer':>20}{'jps2+ outside timer':>21}{'ps load':>9}{'ps 1st query':>14}"
          f"{'ps goal bounds':>16}")
    for m in report["maps"]:
        by = {e["engine"]: e for e in m["engines"]}
        print(f"  {m['map']:<14}{fmt(by['warthog jps2']['outside_timer_ms'], '20.1f')}"
              f"{fmt(by['warthog jps2+']['outside_timer_ms'], '21.1f')}"
              f"{m['pathserver_load_ms']:9.1f}{m['pathserver_first_query_ms']:14.1f}"
              f"{fmt(m.get('pathserver_bounds_ms'), '16.0f')}")
    print("  Warthog's 'outside the timer' = process wall time minus its searches: start, map load, jps2+'s")
    print("  jump tables, path extraction, output. pathserver's load = GridMap.load; its first query builds")
    print("  the unit-size layer; its goal bounds (maps small enough for them, - where none) are built")
    print("  in the background after it, and waited for before the clock starts.")


def markdown(report: dict) -> str:
    """docs/performance.md's table: each problem's fastest time over the rounds (steady on a busy
    machine), with the ratios of the lowest round means beside them."""
    lines = ["| map | Warthog jps2 (µs) | Warthog jps2+ (µs) | pathserver auto (µs) | auto / jps2 | auto / jps2+ "
             "| lowest round means: auto / jps2, auto / jps2+ |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for m in report["maps"]:
        by = {e["engine"]: e for e in m["engines"]}
        fastest = m["fastest_ratio_pathserver_over"]
        ratio = m["ratio_pathserver_over"]
        lines.append(f"| {m['map']} | {fmt(by['warthog jps2']['fastest_mean_us'], '.1f')} | "
                     f"{fmt(by['warthog jps2+']['fastest_mean_us'], '.1f')} | "
                     f"{fmt(by[PATHSERVER]['fastest_mean_us'], '.1f')} | "
                     f"{fmt(fastest['jps2'], '.2f')} | {fmt(fastest['jps2+'], '.2f')} | "
                     f"{fmt(ratio['jps2'], '.2f')}, {fmt(ratio['jps2+'], '.2f')} |")
    return "\n".join(lines)


def load_average() -> str:
    try:
        return ", ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warthog", help=f"Warthog's JPS program (default: ${ENV_VAR})")
    parser.add_argument("--movingai", type=Path, default=movingai.DEFAULT_MOVINGAI,
                        help="folder of Moving AI .map + .map.scen files (default: %(default)s)")
    parser.add_argument("--maps", default=",".join(MAPS), help="comma-separated map names (default: %(default)s)")
    parser.add_argument("--queries", type=int, default=200, help="problems per map (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=10, help="rounds per engine (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="problem selection seed (default: %(default)s)")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument("--markdown", action="store_true", help="also print the table of docs/performance.md")
    add_write_docs(parser)
    parser.add_argument("--no-warm-up", action="store_true",
                        help="time pathserver's rounds straight after Warthog's process, caches cold")
    args = parser.parse_args(argv)

    binary = find_binary(args.warthog)
    if binary is None or not binary.is_file() or not os.access(binary, os.X_OK):
        why = f"{binary} is not an executable file" if binary else f"no --warthog and no ${ENV_VAR}"
        print(BUILD_STEPS)
        print(f"\nwarthog: skipped ({why})")
        return 0

    available = movingai.find_maps(args.movingai)
    names = [n for n in args.maps.split(",") if n]
    missing = [n for n in names if n not in available]
    if missing:
        print(f"maps not found under {args.movingai}: {', '.join(missing)}", file=sys.stderr)
        return 2

    from pathserver import kernel_cache

    kernel_cache.configure()
    warm_up()
    report = {"meta": {
        "when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "warthog": str(binary),
        "cpu": cpu_name(),
        "cpus": os.cpu_count(),
        "queries": args.queries,
        "rounds": args.rounds,
        "seed": args.seed,
        "warm_caches": not args.no_warm_up,
        "load_before": load_average(),
    }, "maps": []}
    with tempfile.TemporaryDirectory(prefix="pathserver-warthog-") as scratch:
        for name in names:
            report["maps"].append(bench_map(name, available[name], binary, args.queries, args.rounds, args.seed,
                                            Path(scratch), warm_caches=not args.no_warm_up))
    report["meta"]["load_after"] = load_average()
    print_report(report)
    if args.markdown:
        print()
        print(markdown(report))
    if args.write_docs:
        write_section("warthog", markdown(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    failed = any(e["error"] or e["correct"] != m["queries"] for m in report["maps"] for e in m["engines"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
