"""A* side by side with python-tcod, on Moving AI maps as they are and with terrain costs.

    python bench/weighted.py                          # the default maps, 100 queries, 5 rounds
    python bench/weighted.py --maps den520d --queries 200 --rounds 7 --terrain weighted

For each map and terrain (``uniform``: the map as it is; ``weighted``: the same walls with
integer terrain costs 1-4 laid in 8x8 patches, seeded), pathserver's
``find_path(m, start, goal, algorithm="astar", line_of_sight=False)`` (on terrain costs
with the layer's landmarks, built before the clock starts) and tcod's exact
no-corner-cutting ``CustomGraph`` pathfinder (the graph of bench/core.py, its edge costs
100000 / 141421 times the cost of the cell entered) answer the same bucket-spread scenario
problems. They take turns in rounds (the order alternates), each round answering every
problem once; an engine's figure is its smallest mean over the rounds, the least disturbed
by the rest of a shared machine. ``x tcod`` is tcod's figure over pathserver's. The clock
is the thread's CPU time by default (``--clock cpu``: both engines answer on this thread,
and time the machine gives other processes is not counted), or ``--clock wall``.

Exactness: every pathserver path is checked to be a legal cell path (no corner cutting)
whose recomputed cost equals the reported cost; on uniform maps that cost must be the
scenario's optimal length, on weighted maps it must be no more than tcod's path costs
(recomputed exactly) and within tcod's rounding of sqrt(2) (2.6e-6 relative) of it.
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
import time
from pathlib import Path

import numpy as np

from pathserver import kernel_cache

kernel_cache.configure()

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _movingai as movingai  # noqa: E402
import _tcod as tcod_graph  # noqa: E402

DEFAULT_MAPS = ("den520d", "Aftershock", "Boston_0_512", "32room_000", "maze512-1-0", "random512-10-0")
SQRT2 = math.sqrt(2.0)
#: tcod's integer diagonal 141421 / 100000 is short of sqrt(2) by this much, relatively.
TCOD_ROUNDING = 2.6e-6


def terrain_costs(walkable: np.ndarray, seed: int) -> np.ndarray:
    """int (H, W) terrain costs 1-4 (1 the most common) in 8x8 patches; 1 on walls."""
    rng = np.random.default_rng(seed)
    height, width = walkable.shape
    coarse = rng.choice(np.array([1, 1, 1, 2, 3, 4]), size=(height // 8 + 1, width // 8 + 1))
    cost = np.kron(coarse, np.ones((8, 8), dtype=np.int64))[:height, :width]
    return np.where(walkable, cost, 1).astype(np.int64)


class Tcod:
    name = "tcod"

    def __init__(self, walkable: np.ndarray, cost: np.ndarray):
        import tcod.path

        node_cost = np.where(walkable, cost, 0).astype(np.int32)  # 0 marks a blocked cell
        self.pathfinder = tcod_graph.pathfinder(tcod.path, walkable, node_cost)

    def query(self, p):
        pathfinder = self.pathfinder
        pathfinder.clear()
        pathfinder.add_root((p.sy, p.sx))
        return pathfinder.path_to((p.gy, p.gx))

    @staticmethod
    def path(raw):
        return np.asarray(raw)[:, ::-1]


class Pathserver:
    name = "pathserver"

    def __init__(self, gridmap):
        from pathserver import find_path

        self.find_path = find_path
        self.gridmap = gridmap

    def query(self, p):
        return self.find_path(self.gridmap, (p.sx, p.sy), (p.gx, p.gy), algorithm="astar", line_of_sight=False)

    @staticmethod
    def path(raw):
        return raw.path if raw.status == "found" else None


def path_cost(path, walkable: np.ndarray, cost: np.ndarray, start, goal) -> float | None:
    """The exact cost of ``path`` ((x, y) rows): straight 1, diagonal sqrt(2), times the
    cost of the cell entered; None unless it is a legal no-corner-cutting path."""
    if movingai.path_length(path, walkable, start, goal) is None:
        return None
    path = np.asarray(path, dtype=np.int64)
    xs, ys = path[:, 0], path[:, 1]
    diagonal = (np.diff(xs) != 0) & (np.diff(ys) != 0)
    entered = cost[ys[1:], xs[1:]].astype(np.float64)
    return float(np.sum(np.where(diagonal, SQRT2, 1.0) * entered))


def bench_map(name: str, path: Path, terrain: str, queries: int, rounds: int, seed: int, clock) -> dict:
    from pathserver import GridMap

    walkable = movingai.read_walkable(path)
    problems = movingai.bucket_spread(movingai.read_scenarios(path, walkable), queries, seed)
    if terrain == "weighted":
        cost = terrain_costs(walkable, seed)
        gridmap = GridMap(walkable, cost=cost.astype(np.float64), name=name)
    else:
        cost = np.ones(walkable.shape, dtype=np.int64)
        gridmap = GridMap(walkable, name=name)
    engines = [Pathserver(gridmap), Tcod(walkable, cost)]
    for engine in engines:  # untimed: per-map lazy set-up and any compile
        for problem in problems[:3]:
            engine.query(problem)
    # On terrain costs the layer's landmarks are built in the background from the first
    # call on (its JPS+ table, on a uniform map, likewise): timed once in place, as a
    # server answers after its first seconds on a map.
    landmarks = gridmap.layer(1).wait_landmarks(300)

    best = {e.name: math.inf for e in engines}
    answers = {e.name: None for e in engines}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(rounds):
            order = engines if r % 2 == 0 else engines[::-1]
            for engine in order:
                query = engine.query
                got = []
                total = 0
                for problem in problems:
                    t0 = clock()
                    raw = query(problem)
                    total += clock() - t0
                    got.append(raw)
                best[engine.name] = min(best[engine.name], total / len(problems) / 1000)
                answers[engine.name] = got
                gc.collect()
    finally:
        if gc_was_enabled:
            gc.enable()

    exact = 0
    wrong = []
    expanded = 0
    for i, problem in enumerate(problems):
        start, goal = (problem.sx, problem.sy), (problem.gx, problem.gy)
        result = answers["pathserver"][i]
        expanded += result.expanded
        mine = path_cost(Pathserver.path(result), walkable, cost, start, goal)
        theirs = path_cost(Tcod.path(answers["tcod"][i]), walkable, cost, start, goal)
        ok = mine is not None and abs(mine - result.cost) <= 1e-9 * max(1.0, mine)
        if terrain == "uniform":
            ok = ok and abs(mine - problem.optimal) <= problem.tolerance
        else:
            ok = ok and theirs is not None and mine <= theirs + 1e-9 * theirs
            ok = ok and theirs - mine <= TCOD_ROUNDING * theirs
        if ok:
            exact += 1
        else:
            wrong.append((start, goal, result.cost, mine, theirs))
    return {
        "map": name, "terrain": terrain, "queries": len(problems),
        "pathserver_us": best["pathserver"], "tcod_us": best["tcod"],
        "ratio": best["tcod"] / best["pathserver"], "exact": exact, "wrong": wrong[:3],
        "expanded": expanded / len(problems), "landmarks": landmarks,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--movingai", type=Path, default=movingai.DEFAULT_MOVINGAI)
    parser.add_argument("--maps", default=",".join(DEFAULT_MAPS), help="comma-separated map names")
    parser.add_argument("--terrain", choices=("uniform", "weighted", "both"), default="both")
    parser.add_argument("--queries", type=int, default=100, help="problems per map (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per engine (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="the thread's CPU time or wall time (default: %(default)s)")
    args = parser.parse_args(argv)

    maps = movingai.find_maps(args.movingai)
    terrains = ("uniform", "weighted") if args.terrain == "both" else (args.terrain,)
    clock = time.thread_time_ns if args.clock == "cpu" else time.perf_counter_ns
    print(f"A* vs tcod: {args.queries} queries per map, {args.rounds} alternating rounds, minimum mean per engine"
          f" ({args.clock} time)")
    print(f"{'map':<16}{'terrain':<10}{'pathserver us':>14}{'tcod us':>10}{'x tcod':>8}{'exact':>9}{'expanded':>10}"
          "  landmarks")
    failed = False
    for name in args.maps.split(","):
        if name not in maps:
            raise SystemExit(f"no map {name!r} with a .scen under {args.movingai}")
        for terrain in terrains:
            row = bench_map(name, maps[name], terrain, args.queries, args.rounds, args.seed, clock)
            print(f"{row['map']:<16}{row['terrain']:<10}{row['pathserver_us']:>14.1f}{row['tcod_us']:>10.1f}"
                  f"{row['ratio']:>7.2f}x{row['exact']:>5}/{row['queries']:<3}{row['expanded']:>10.0f}"
                  f"  {'yes' if row['landmarks'] else 'no'}", flush=True)
            for start, goal, reported, mine, theirs in row["wrong"]:
                failed = True
                print(f"    NOT EXACT {start}->{goal}: reported {reported}, path {mine}, tcod {theirs}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
