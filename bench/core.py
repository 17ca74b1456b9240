"""Benchmark pathserver's search against python-tcod and pyastar2d on Moving AI maps.

    python bench/core.py                       # the default maps, 200 queries each
    python bench/core.py --maps den520d,Aftershock --queries 500
    python bench/core.py --all --json out.json --markdown

Every engine answers the same bucket-spread scenario problems, interleaved query by
query (the engine order rotates), so a slow spell on a shared machine hits all of them
alike: read the ratios, not the absolute microseconds. See bench/README.md for what
each figure means.

Engines:
  pathserver A* / JPS   ``find_path(..., algorithm="astar"|"jps", line_of_sight=False)``:
                        the search itself, no straight-line shortcut.
  pathserver auto       ``find_path(...)`` with its defaults (algorithm="auto",
                        line_of_sight=True): what a caller gets out of the box, timed
                        once the map's JPS+ table is built (its build is in prepare_ms).
  tcod                  python-tcod's ``CustomGraph`` + ``Pathfinder`` A*, exact under the
                        same no-corner-cutting rule (integer costs 100000 / 141421).
  pyastar2d             INEXACT: it cuts corners and prices a diagonal like a straight
                        step, so its paths are not the scenario's optimal ones.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pathserver import kernel_cache

# First, before anything imports the kernels: numba picks their cache folder then.
kernel_cache.configure()

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _movingai as movingai  # noqa: E402
import _tcod as tcod_graph  # noqa: E402
from _docs import add_argument as add_write_docs, cpu_name, write_section  # noqa: E402

DEFAULT_MAPS = ("den520d", "Aftershock", "Boston_0_512", "32room_000", "maze512-1-0", "random512-10-0")

#: (engine, minimum speed-up over tcod, maps) from the core issue's benchmark section.
SPEED_TARGETS = (
    ("astar", 4.0, ("den520d", "Aftershock", "Boston_0_512")),
    ("jps", 30.0, ("den520d", "Aftershock", "Boston_0_512", "32room_000")),
)
OVERHEAD_TARGET_US = 5.0
OVERHEAD_CHUNKS = 5
WARM_START_TARGET_S = 1.0


# -- engines ----------------------------------------------------------------------------


@dataclass
class Answer:
    """What an engine returned, decoded after the clock stopped."""

    path: np.ndarray | None  # int (n, 2) of (x, y)
    cost: float | None = None  # the engine's own figure, when it reports one
    expanded: int | None = None
    algorithm: str | None = None


class Engine:
    """One way of answering a query. ``prepare`` does the per-map set-up a user does once;
    ``query`` is the call a user makes per path and is all that is timed; ``decode`` turns
    its return value into an :class:`Answer` afterwards."""

    name = ""
    exact = True
    unavailable: str | None = None

    def prepare(self, walkable: np.ndarray, gridmap) -> None:
        raise NotImplementedError

    def query(self, problem):
        raise NotImplementedError

    def decode(self, raw) -> Answer:
        raise NotImplementedError


class Pathserver(Engine):
    def __init__(self, algorithm: str, line_of_sight: bool, name: str):
        from pathserver import find_path

        self.find_path = find_path
        self.algorithm = algorithm
        self.line_of_sight = line_of_sight
        self.name = name

    def prepare(self, walkable, gridmap):
        self.gridmap = gridmap
        if self.algorithm == "auto":
            # auto's JPS+ tables (and goal bounds) are built in the background on the
            # first query; the bench measures the queries after them (their build counts
            # in prepare_ms).
            self.find_path(gridmap, (0, 0), (0, 0), algorithm="auto", snap=True)
            for waits in ("wait_jump_table", "wait_bounds"):  # the goal bounds: small maps only
                wait = getattr(gridmap.layer(1), waits, None)
                if wait is not None:
                    wait()

    def query(self, p):
        return self.find_path(
            self.gridmap, (p.sx, p.sy), (p.gx, p.gy), algorithm=self.algorithm, line_of_sight=self.line_of_sight
        )

    def decode(self, r):
        return Answer(r.path if r.status == "found" else None, r.cost, r.expanded, r.algorithm)


class Tcod(Engine):
    name = "tcod"

    def __init__(self):
        import tcod.path

        self.tcod_path = tcod.path

    def prepare(self, walkable, gridmap):
        # One Pathfinder per map, cleared per query: as fast as a new one per query
        # (both reset whole-map arrays) and what a user holding a graph would do.
        self.pathfinder = tcod_graph.pathfinder(self.tcod_path, walkable, walkable.astype(np.int8))

    def query(self, p):
        pathfinder = self.pathfinder
        pathfinder.clear()
        pathfinder.add_root((p.sy, p.sx))
        return pathfinder.path_to((p.gy, p.gx))

    def decode(self, path):
        return Answer(path[:, ::-1])


class Pyastar2d(Engine):
    name = "pyastar2d"
    exact = False

    def __init__(self):
        import pyastar2d

        self.astar_path = pyastar2d.astar_path

    def prepare(self, walkable, gridmap):
        self.weights = np.where(walkable, 1.0, np.inf).astype(np.float32)

    def query(self, p):
        return self.astar_path(self.weights, (p.sy, p.sx), (p.gy, p.gx), allow_diagonal=True)

    def decode(self, path):
        return Answer(None if path is None else path[:, ::-1])


def make_engines() -> tuple[list[Engine], list[str]]:
    engines: list[Engine] = [
        Pathserver("astar", False, "pathserver A*"),
        Pathserver("jps", False, "pathserver JPS"),
        Pathserver("auto", True, "pathserver auto"),
    ]
    missing = []
    for make, package in ((Tcod, "tcod"), (Pyastar2d, "pyastar2d")):
        try:
            engines.append(make())
        except Exception as error:  # an absent or broken baseline must not stop the run
            missing.append(f"{package} unavailable ({type(error).__name__}: {error}); pip install tcod pyastar2d")
    return engines, missing


def warm_up_jit(notes: list) -> None:
    """Compile (or load from numba's cache) every kernel before anything is timed, so the
    first map's load time and warm-up do not carry the JIT; start-up is measured apart."""
    from pathserver import GridMap, find_path

    try:
        tiny = GridMap(np.ones((8, 8), dtype=bool))
        for algorithm in ("astar", "jps", "auto"):
            for line_of_sight in (False, True):
                find_path(tiny, (0, 0), (7, 5), algorithm=algorithm, line_of_sight=line_of_sight)
    except Exception as error:
        notes.append(f"pathserver warm-up failed: {describe(error)}")


def load_gridmap(path: Path, walkable: np.ndarray):
    """pathserver's own loader when it imports, else a GridMap built from the bench's reader."""
    from pathserver import GridMap

    try:
        import pathserver.maps.formats  # noqa: F401
    except ImportError:
        return GridMap(walkable, name=path.stem), "bench reader"
    gridmap = GridMap.load(path)
    if gridmap.walkable.shape != walkable.shape or not (gridmap.walkable == walkable).all():
        raise SystemExit(f"{path}: GridMap.load disagrees with the bench's reader about walkable cells")
    return gridmap, "GridMap.load"


# -- one map ----------------------------------------------------------------------------


@dataclass
class EngineStats:
    name: str
    exact: bool
    times_ns: list = field(default_factory=list)
    correct: int = 0
    wrong: int = 0
    no_path: int = 0
    corner_cuts: int = 0
    paths_cutting: int = 0
    cost_disagrees: int = 0
    expanded: list = field(default_factory=list)
    algorithms: dict = field(default_factory=dict)
    error: str | None = None
    prepare_ms: float = 0.0

    @property
    def mean_us(self) -> float | None:
        return statistics.fmean(self.times_ns) / 1000 if self.times_ns and not self.error else None

    @property
    def median_us(self) -> float | None:
        return statistics.median(self.times_ns) / 1000 if self.times_ns and not self.error else None

    def as_dict(self, tcod_mean: float | None) -> dict:
        mean = self.mean_us
        return {
            "engine": self.name,
            "exact": self.exact,
            "mean_us": mean,
            "median_us": self.median_us,
            "speedup_vs_tcod": (tcod_mean / mean) if (tcod_mean and mean) else None,
            "correct": self.correct,
            "wrong": self.wrong,
            "no_path": self.no_path,
            "corner_cuts": self.corner_cuts,
            "paths_cutting_corners": self.paths_cutting,
            "cost_disagrees_with_path": self.cost_disagrees,
            "expanded_mean": statistics.fmean(self.expanded) if self.expanded else None,
            "algorithms": self.algorithms or None,
            "prepare_ms": self.prepare_ms,
            "error": self.error,
        }


def bench_map(name: str, path: Path, engines: list[Engine], queries: int, seed: int) -> dict:
    walkable = movingai.read_walkable(path)
    problems = movingai.bucket_spread(movingai.read_scenarios(path, walkable), queries, seed)
    t0 = time.perf_counter()
    gridmap, loader = load_gridmap(path, walkable)
    load_ms = (time.perf_counter() - t0) * 1000
    stats = {e.name: EngineStats(e.name, e.exact) for e in engines}
    live = []
    for engine in engines:
        try:
            t0 = time.perf_counter()
            engine.prepare(walkable, gridmap)
            # Warm-up, untimed: per-map lazy set-up (pathserver's unit-size layer, tcod's
            # compiled edge rules) and any JIT compile belong to start-up, not to a query.
            for problem in problems[:3]:
                engine.query(problem)
            stats[engine.name].prepare_ms = (time.perf_counter() - t0) * 1000
            live.append(engine)
        except Exception as error:
            stats[engine.name].error = describe(error)

    answers: dict[str, list] = {e.name: [] for e in live}
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as timeit does: a collection would land on whichever engine was running
    try:
        for i, problem in enumerate(problems):
            for k in range(len(live)):
                engine = live[(i + k) % len(live)]
                if stats[engine.name].error:
                    continue
                t0 = time.perf_counter_ns()
                try:
                    raw = engine.query(problem)
                except Exception as error:
                    stats[engine.name].error = describe(error)
                    continue
                stats[engine.name].times_ns.append(time.perf_counter_ns() - t0)
                answers[engine.name].append(raw)
            if i % 50 == 49:
                gc.collect()
    finally:
        if gc_was_enabled:
            gc.enable()

    for engine in live:
        s = stats[engine.name]
        if s.error:
            continue
        for problem, raw in zip(problems, answers[engine.name]):
            check(s, engine.decode(raw), problem, walkable)

    tcod_mean = stats["tcod"].mean_us if "tcod" in stats else None
    layer = gridmap.layer(1)
    return {
        "map": name,
        "file": str(path),
        "width": int(walkable.shape[1]),
        "height": int(walkable.shape[0]),
        "queries": len(problems),
        "buckets": len({p.bucket for p in problems}),
        "open_share": getattr(layer, "open_share", None),
        "loader": loader,
        "load_ms": load_ms,
        "engines": [stats[e.name].as_dict(tcod_mean) for e in engines],
    }


def describe(error: BaseException) -> str:
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in str(error).splitlines()]
    return f"{type(error).__name__}: {next((line for line in lines if line), '')}"[:300]


def check(s: EngineStats, answer: Answer, problem, walkable: np.ndarray) -> None:
    start, goal = (problem.sx, problem.sy), (problem.gx, problem.gy)
    if answer.expanded is not None:
        s.expanded.append(answer.expanded)
    if answer.algorithm is not None:
        s.algorithms[answer.algorithm] = s.algorithms.get(answer.algorithm, 0) + 1
    if answer.path is None or len(answer.path) == 0:
        s.no_path += 1
        return
    cuts = movingai.corner_cuts(answer.path, walkable)
    s.corner_cuts += cuts
    s.paths_cutting += cuts > 0
    length = movingai.path_length(answer.path, walkable, start, goal)
    if length is not None and answer.cost is not None and abs(answer.cost - length) > 1e-6 * max(1.0, length):
        s.cost_disagrees += 1
        length = None
    if length is not None and abs(length - problem.optimal) <= problem.tolerance:
        s.correct += 1
    else:
        s.wrong += 1


# -- start-up and per-call overhead -----------------------------------------------------

_STARTUP_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    t0 = time.perf_counter()
    import pathserver
    from pathserver import GridMap, find_path
    t1 = time.perf_counter()
    sys.path.insert(0, {bench!r})
    import _movingai
    from pathlib import Path
    t_load = time.perf_counter()
    try:
        import pathserver.maps.formats
        m = GridMap.load({map!r})
    except ImportError:
        m = GridMap(_movingai.read_walkable(Path({map!r})))
    t2 = time.perf_counter()
    r = find_path(m, {start!r}, {goal!r})
    t3 = time.perf_counter()
    r2 = find_path(m, {start!r}, {goal!r}, algorithm="astar", line_of_sight=False)
    t4 = time.perf_counter()
    print(json.dumps({{"import_s": t1 - t0, "load_s": t2 - t_load, "first_query_s": t3 - t2,
                      "second_algorithm_s": t4 - t3, "status": r.status, "algorithm": r.algorithm}}))
    """
)


def last_error_line(stderr: str) -> str:
    """The ``SomeError: message`` line of a traceback, without terminal colour codes."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in stderr.splitlines()]
    errors = [line for line in lines if re.match(r"^[\w.]+(Error|Exception)\b", line)]
    return (errors[-1] if errors else (lines[-1] if lines else ""))[:300]


def startup(map_path: Path, problem, warm_runs: int) -> dict:
    """Cold and warm start in fresh interpreters sharing one temporary NUMBA_CACHE_DIR."""
    script = _STARTUP_SCRIPT.format(
        bench=str(Path(__file__).resolve().parent),
        map=str(map_path),
        start=(problem.sx, problem.sy),
        goal=(problem.gx, problem.gy),
    )
    with tempfile.TemporaryDirectory(prefix="pathserver-bench-numba-") as cache_dir:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)

        def run() -> dict:
            t0 = time.perf_counter()
            # Run from the temporary folder, as a user would: with ``-c`` the working
            # directory comes first on sys.path and must not shadow the installed package.
            done = subprocess.run(
                [sys.executable, "-c", script], env=env, cwd=cache_dir, capture_output=True, text=True
            )
            wall = time.perf_counter() - t0
            if done.returncode != 0:
                return {"error": last_error_line(done.stderr) or f"exit status {done.returncode}"}
            out = json.loads(done.stdout.strip().splitlines()[-1])
            out["ready_s"] = out["import_s"] + out["load_s"] + out["first_query_s"]
            out["process_wall_s"] = wall
            return out

        cold = run()
        warm = [run() for _ in range(warm_runs)]
    good = [w for w in warm if "error" not in w]
    summary = dict(min(good, key=lambda w: w["ready_s"])) if good else (warm[0] if warm else {})
    if good:
        summary["ready_s_runs"] = [w["ready_s"] for w in good]
        summary["ready_s"] = statistics.median(summary["ready_s_runs"])
    return {"map": map_path.stem, "cold": cold, "warm": summary}


def overhead(gridmap, calls: int) -> dict:
    """Mean µs per find_path call for a 1-cell trip, line_of_sight on and off, split into
    the Python wrapper, the compiled ``solve`` call (of which unboxing its arguments) and
    the rest (kernel plus boxing the result)."""
    from numba import njit

    from pathserver import find_path

    walkable = gridmap.walkable
    height, width = walkable.shape
    pairs = np.argwhere(walkable[:, :-1] & walkable[:, 1:])
    y, x = (int(v) for v in pairs[len(pairs) // 2])
    start, goal = (x, y), (x + 1, y)
    out: dict = {"start": start, "goal": goal, "calls": calls, "batches": OVERHEAD_CHUNKS}

    try:
        import pathserver.grid.search as search_module
        from pathserver.core.jit import NO_REFCOUNT, bound

        real_bound = search_module.bound  # find_path calls solve's version bound to its types
    except (ImportError, AttributeError):
        search_module = real_bound = bound = None

    def rebind():
        # The prepared calls bind solve again on their next call (through search.bound).
        for call in gridmap.layers.prepared_calls():
            call.fields = call.fields[:-1] + (None,)

    for line_of_sight in (True, False):
        key = "los_on" if line_of_sight else "los_off"
        for _ in range(1000):
            find_path(gridmap, start, goal, line_of_sight=line_of_sight)
        gc.disable()
        try:
            # The calls run in OVERHEAD_CHUNKS equal batches; the fastest batch's mean is the
            # figure (as timeit advises: slower batches measure the machine's other load),
            # the mean over all calls is kept beside it.
            chunk = max(1, calls // OVERHEAD_CHUNKS)
            batches = []
            for _ in range(OVERHEAD_CHUNKS):
                t0 = time.perf_counter_ns()
                for _ in range(chunk):
                    find_path(gridmap, start, goal, line_of_sight=line_of_sight)
                batches.append((time.perf_counter_ns() - t0) / chunk / 1000)
            total = min(batches)
            entry = {"total_us": total, "mean_all_us": statistics.fmean(batches), "batch_means_us": batches}
            if real_bound is not None:
                inside = [0]
                captured = []

                def timed_bound(kernel, args, _inside=inside, _captured=captured):
                    real = real_bound(kernel, args)

                    def timed_solve(*args):
                        if not _captured:
                            _captured.append(args)
                        t = time.perf_counter_ns()
                        result = real(*args)
                        _inside[0] += time.perf_counter_ns() - t
                        return result

                    return timed_solve

                search_module.bound = timed_bound
                rebind()
                try:
                    n = max(1, calls // 5)
                    for _ in range(n):
                        find_path(gridmap, start, goal, line_of_sight=line_of_sight)
                finally:
                    search_module.bound = real_bound
                    rebind()
                solve_us = inside[0] / n / 1000
                args = captured[0]
                # What a bound call costs before the kernel runs: unboxing the arguments
                # (an empty compiled function taking the same ones, bound the same way).
                names = ", ".join(f"a{i}" for i in range(len(args)))
                namespace: dict = {}
                exec(f"def empty({names}):\n    return 0", namespace)
                empty = bound(njit(**NO_REFCOUNT)(namespace["empty"]), args)  # as solve is compiled
                empty(*args)
                t0 = time.perf_counter_ns()
                for _ in range(n):
                    empty(*args)
                dispatch_us = (time.perf_counter_ns() - t0) / n / 1000
                entry.update(
                    solve_us=solve_us,
                    wrapper_us=total - solve_us,
                    dispatch_us=dispatch_us,
                    kernel_and_return_us=solve_us - dispatch_us,
                    solve_args=len(args),
                    solve_array_args=sum(isinstance(a, np.ndarray) for a in args),
                )
            out[key] = entry
        finally:
            gc.enable()
    return out


# -- report -----------------------------------------------------------------------------


def evaluate_targets(maps: list[dict], start: dict | None, calls: dict | None) -> list[dict]:
    by_name = {m["map"]: {e["engine"]: e for e in m["engines"]} for m in maps}
    label = {"astar": "pathserver A*", "jps": "pathserver JPS"}
    targets = []
    for algorithm, need, names in SPEED_TARGETS:
        for name in names:
            entry = by_name.get(name, {}).get(label[algorithm])
            got = entry["speedup_vs_tcod"] if entry else None
            targets.append({
                "target": f"{label[algorithm]} >= {need:g}x tcod on {name}",
                "measured": None if got is None else f"{got:.1f}x",
                "result": "NOT RUN" if got is None else ("PASS" if got >= need else "MISS"),
            })
    for key, text in (("los_on", "line_of_sight on"), ("los_off", "line_of_sight off")):
        got = calls.get(key, {}).get("total_us") if calls else None
        targets.append({
            "target": f"per-call overhead, 1-cell trip, {text} <= {OVERHEAD_TARGET_US:g} us",
            "measured": None if got is None else f"{got:.2f} us",
            "result": "NOT RUN" if got is None else ("PASS" if got <= OVERHEAD_TARGET_US else "MISS"),
        })
    got = start["warm"].get("ready_s") if start and start.get("warm") else None
    targets.append({
        "target": f"warm start (import + load + first query) <= {WARM_START_TARGET_S:g} s",
        "measured": None if got is None else f"{got:.2f} s",
        "result": "NOT RUN" if got is None else ("PASS" if got <= WARM_START_TARGET_S else "MISS"),
    })
    return targets


def fmt(value, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def correctness(e: dict, queries: int) -> str:
    text = f"{e['correct']}/{queries}"
    if e["corner_cuts"]:
        text += f" ({e['paths_cutting_corners']} paths cut corners)"
    if e["cost_disagrees_with_path"]:
        text += f" ({e['cost_disagrees_with_path']} cost!=path)"
    return text


def print_text(report: dict) -> None:
    meta = report["meta"]
    print(f"pathserver core benchmark  {meta['when']}")
    print(f"  {meta['cpu']}, {meta['cpus']} CPUs, Python {meta['python']}, numba {meta['numba']}, "
          f"tcod {meta['tcod']}, pyastar2d {meta['pyastar2d']}")
    print("  A* and JPS run with line_of_sight=False (the search alone); auto runs with its defaults.")
    print("  Times are means over the same queries, interleaved per query; 'x tcod' = tcod time / engine time.")
    for note in meta["notes"]:
        print(f"  NOTE: {note}")
    for m in report["maps"]:
        share = m["open_share"]
        print(f"\n{m['map']}  {m['width']}x{m['height']}, {m['queries']} queries over {m['buckets']} buckets"
              + (f", open share {share:.2f}" if share is not None else "") + f", map load {m['load_ms']:.0f} ms")
        print(f"  {'engine':<17}{'mean us':>10}{'median us':>11}{'x tcod':>8}  {'correct':<22}{'expanded':>10}")
        for e in m["engines"]:
            if e["error"]:
                print(f"  {e['engine']:<17}FAILED: {e['error']}")
                continue
            name = e["engine"] + ("" if e["exact"] else "*")
            chosen = ""
            if e["algorithms"] and e["engine"].endswith("auto"):
                chosen = "  ran " + ", ".join(f"{k} {v}" for k, v in sorted(e["algorithms"].items()))
            print(f"  {name:<17}{fmt(e['mean_us'], '10.1f'):>10}{fmt(e['median_us'], '11.1f'):>11}"
                  f"{fmt(e['speedup_vs_tcod'], '7.1f') + 'x' if e['speedup_vs_tcod'] else '-':>8}  "
                  f"{correctness(e, m['queries']):<22}{fmt(e['expanded_mean'], '10.0f'):>10}{chosen}")
    print("\n  * pyastar2d is inexact (cuts corners, diagonal priced as 1): its 'correct' count is how often it"
          " happens to match.")
    s = report.get("startup")
    if s:
        print(f"\nStart-up ({s['map']}, fresh interpreters, one temporary NUMBA_CACHE_DIR):")
        for kind in ("cold", "warm"):
            r = s[kind]
            if "error" in r:
                print(f"  {kind:<5} FAILED: {r['error']}")
                continue
            extra = f"  (median of {len(r['ready_s_runs'])})" if "ready_s_runs" in r else ""
            print(f"  {kind:<5} ready {r['ready_s']:.2f} s = import {r['import_s']:.2f} + load {r['load_s']:.2f}"
                  f" + first query {r['first_query_s']:.2f}; other algorithm's first query"
                  f" {r['second_algorithm_s']:.3f} s; whole process {r['process_wall_s']:.2f} s{extra}")
    o = report.get("overhead")
    if o:
        print(f"\nPer-call overhead: find_path {o['start']} -> {o['goal']}, {o['calls']} calls in {o['batches']}"
              " batches, mean of the fastest batch (mean of all in brackets):")
        for key, text in (("los_on", "line_of_sight on "), ("los_off", "line_of_sight off")):
            e = o[key]
            line = f"  {text} {e['total_us']:6.2f} us ({e['mean_all_us']:.2f})"
            if "solve_us" in e:
                line += (f" = Python wrapper {e['wrapper_us']:.2f} + solve() {e['solve_us']:.2f}"
                         f"[unboxing {e['solve_args']} args ({e['solve_array_args']} arrays)"
                         f" {e['dispatch_us']:.2f} + kernel and result {e['kernel_and_return_us']:.2f}]")
            print(line)
    print("\nTargets:")
    for t in report["targets"]:
        print(f"  {t['result']:<8} {t['target']:<62} {t['measured'] or ''}")


def markdown(report: dict) -> str:
    engines = ["pathserver A*", "pathserver JPS", "pathserver auto", "tcod", "pyastar2d"]
    short = {"pathserver A*": "A*", "pathserver JPS": "JPS", "pathserver auto": "auto",
             "tcod": "tcod", "pyastar2d": "pyastar2d†"}
    lines = [
        "| map | "
        + " | ".join(f"{short[e]} µs" + ("" if e == "tcod" else " (×tcod)") for e in engines)
        + " | exact: A* / JPS / auto / tcod | pyastar2d† optimal | expanded A* / JPS |",
        "|---|" + "---:|" * len(engines) + "---|---|---|",
    ]
    for m in report["maps"]:
        by = {e["engine"]: e for e in m["engines"]}
        cells = []
        for name in engines:
            e = by.get(name)
            if not e or e["mean_us"] is None:
                cells.append("n/a")
            elif name == "tcod":
                cells.append(f"{e['mean_us']:.0f}")
            else:
                cells.append(f"{e['mean_us']:.0f} ({e['speedup_vs_tcod']:.1f}×)" if e["speedup_vs_tcod"]
                             else f"{e['mean_us']:.0f}")
        n = m["queries"]
        exact = " / ".join(f"{by[k]['correct']}" if k in by and by[k]["mean_us"] else "n/a" for k in engines[:4])
        pya = by.get("pyastar2d")
        pya_text = f"{pya['correct']}/{n}" if pya and pya["mean_us"] else "n/a"
        expanded = " / ".join(fmt(by.get(k, {}).get("expanded_mean"), ".0f") for k in engines[:2])
        lines.append(f"| {m['map']} | " + " | ".join(cells) + f" | {exact} of {n} | {pya_text} | {expanded} |")
    meta = report["meta"]
    lines.append("")
    lines.append(f"{report['maps'][0]['queries'] if report['maps'] else 0} bucket-spread queries per map, "
                 f"mean µs/query, A* and JPS with `line_of_sight=False`, auto with its defaults; "
                 f"{meta['cpu']}, Python {meta['python']}, numba {meta['numba']}, tcod {meta['tcod']}. "
                 "† pyastar2d cuts corners and prices diagonals as 1: not comparable for correctness.")
    s = report.get("startup")
    o = report.get("overhead")
    if s or o:
        lines.append("")
    if s and "error" not in s["cold"] and "error" not in s["warm"]:
        lines.append(f"Start-up (import + load {s['map']} + first query): cold (empty numba cache) "
                     f"{s['cold']['ready_s']:.1f} s, warm (cached kernels) {s['warm']['ready_s']:.2f} s.")
    if o:
        lines.append(f"Per-call overhead, 1-cell trip: {o['los_on']['total_us']:.1f} µs with line_of_sight, "
                     f"{o['los_off']['total_us']:.1f} µs without.")
    lines.append("")
    lines.append("| target | measured | |")
    lines.append("|---|---:|---|")
    for t in report["targets"]:
        lines.append(f"| {t['target']} | {t['measured'] or '-'} | {t['result']} |")
    return "\n".join(lines)


def version(package: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--movingai", type=Path, default=movingai.DEFAULT_MOVINGAI,
                        help="folder of Moving AI .map + .map.scen files (default: %(default)s)")
    parser.add_argument("--maps", help=f"comma-separated map names (default: {','.join(DEFAULT_MAPS)})")
    parser.add_argument("--all", action="store_true", help="every map in the folder")
    parser.add_argument("--queries", type=int, default=200, help="problems per map (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="problem selection seed (default: %(default)s)")
    parser.add_argument("--overhead-calls", type=int, default=100_000,
                        help="calls for the per-call overhead (default: %(default)s; 0 skips)")
    parser.add_argument("--warm-runs", type=int, default=3,
                        help="warm-start processes, median reported (default: %(default)s)")
    parser.add_argument("--no-startup", action="store_true", help="skip the cold/warm start measurement")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the full results as JSON")
    parser.add_argument("--markdown", action="store_true", help="also print the markdown of docs/performance.md")
    add_write_docs(parser)
    args = parser.parse_args(argv)

    available = movingai.find_maps(args.movingai)
    if not available:
        print(f"no Moving AI maps with scenarios under {args.movingai} (use --movingai DIR)", file=sys.stderr)
        return 2
    if args.all:
        names = list(available)
    else:
        names = args.maps.split(",") if args.maps else list(DEFAULT_MAPS)
        unknown = [n for n in names if n not in available]
        if unknown:
            print(f"unknown maps: {', '.join(unknown)}; available: {', '.join(available)}", file=sys.stderr)
            return 2

    engines, notes = make_engines()
    import numba

    report: dict = {
        "meta": {
            "when": time.strftime("%Y-%m-%d %H:%M:%S"),
            "cpu": cpu_name(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numba": numba.__version__,
            "numpy": np.__version__,
            "tcod": version("tcod"),
            "pyastar2d": version("pyastar2d"),
            "queries": args.queries,
            "seed": args.seed,
            "notes": notes,
        },
        "maps": [],
    }
    warm_up_jit(notes)
    for name in names:
        print(f"... {name}", file=sys.stderr, flush=True)
        report["maps"].append(bench_map(name, available[name], engines, args.queries, args.seed))

    probe_name = "den520d" if "den520d" in available else names[0]
    probe_path = available[probe_name]
    probe_walkable = movingai.read_walkable(probe_path)
    if not args.no_startup:
        print("... start-up", file=sys.stderr, flush=True)
        problem = movingai.bucket_spread(movingai.read_scenarios(probe_path, probe_walkable), 1, args.seed)[0]
        report["startup"] = startup(probe_path, problem, args.warm_runs)
    if args.overhead_calls > 0:
        print("... per-call overhead", file=sys.stderr, flush=True)
        try:
            report["overhead"] = overhead(load_gridmap(probe_path, probe_walkable)[0], args.overhead_calls)
        except Exception as error:
            report["meta"]["notes"].append(f"per-call overhead failed: {type(error).__name__}: {error}")
    report["targets"] = evaluate_targets(report["maps"], report.get("startup"), report.get("overhead"))

    print_text(report)
    if args.markdown:
        print("\n" + markdown(report))
    if args.write_docs:
        write_section("core", markdown(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
