"""Benchmark `find_path` on a map with floors and links against the same map without.

    python bench/links_speed.py                       # den520d, 200 problems, 3 rounds
    python bench/links_speed.py --map den520d --queries 200 --rounds 5 --json out.json

The map is a Moving AI map stacked as two floors (floor 1 a copy of floor 0), with 0, 16
and 256 random two-way links between the floors (seeded: each joins a random free cell
of floor 0 to one of floor 1, cost 0 to 20). The problems are the map's scenario
problems, spread over the buckets; each starts on floor 0 and ends on floor 0 or on
floor 1 (the same x, y). The baseline is the same problem on the map as loaded (one
floor, no links: find_path's own JPS+, goal bounds built), answered in the same run,
twice: query by query with the variants rotating ("mixed"), and each variant all the
problems in a row ("runs", where the small unlinked search keeps its data in the caches);
each figure is the sum over the problems of each problem's fastest round. Issue #35's
target: with 16 links, a path costs at most 2x the same query without links. The row
"astar_links" is the A* over links that answered every query on a linked map before.

It also checks that maps without links lose nothing: their find_path runs the very
kernel (`pathserver.core.query.solve_plus`) it ran before links existed, on a jump table
equal to `jump_table(cells)`.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

import numpy as np

from pathserver import kernel_cache

kernel_cache.configure()

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _movingai as movingai  # noqa: E402

from pathserver import GridMap, find_path  # noqa: E402
from pathserver.core.jpsplus import jump_table  # noqa: E402

#: The target of issue #35: a path with 16 links costs at most this many times the same
#: query without links.
TARGET_16 = 2.0
LINK_COUNTS = (0, 16, 256)
ORDERS = ("mixed", "runs")


def random_links(walkable: np.ndarray, count: int, seed: int) -> list[dict]:
    """``count`` two-way links, each from a random free cell of floor 0 to a random free
    cell of floor 1 of ``walkable`` stacked twice, costs 0 to 20 (seeded)."""
    rng = np.random.default_rng(seed)
    free = np.argwhere(walkable)
    links = []
    for _ in range(count):
        (ay, ax), (by, bx) = free[rng.integers(len(free), size=2)]
        links.append({"from": [int(ax), int(ay), 0], "to": [int(bx), int(by), 1], "cost": float(rng.integers(0, 21)),
                      "two_way": True})
    return links


def variants(walkable: np.ndarray, seed: int) -> dict:
    """The maps and calls timed: name -> (map, call(problem) -> PathResult)."""
    plain = GridMap(walkable)
    floors = np.stack([walkable, walkable])
    out = {"no links (1 floor)": (plain, lambda m, p: find_path(m, (p.sx, p.sy), (p.gx, p.gy)))}
    for count in LINK_COUNTS:
        linked = GridMap(floors, floors=2, links=random_links(walkable, count, seed + count))
        out[f"{count} links, goal floor 0"] = (linked, lambda m, p: find_path(m, (p.sx, p.sy, 0), (p.gx, p.gy, 0)))
        if count:
            out[f"{count} links, goal floor 1"] = (linked, lambda m, p: find_path(m, (p.sx, p.sy, 0), (p.gx, p.gy, 1)))
        if count == 16:
            out["16 links, goal floor 1, astar_links"] = (
                linked, lambda m, p: find_path(m, (p.sx, p.sy, 0), (p.gx, p.gy, 1), algorithm="astar"))
    return out


def warm(plain: GridMap, timed: dict, problems) -> None:
    """Compile, and build the maps' jump tables and goal bounds (find_path's defaults then
    run JPS+ with them, as a server does once warm)."""
    for gridmap, call in timed.values():
        call(gridmap, problems[0])
    layer = plain.layer(1)
    layer.wait_jump_table(timeout=300)
    layer.wait_bounds(timeout=300)
    # The linked maps' goal bounds (of the stacked grid without links), likewise.
    for gridmap, _ in timed.values():
        gridmap.layer(1).wait_bounds(timeout=300)
    for gridmap, call in timed.values():
        for problem in problems[:5]:
            call(gridmap, problem)


def measure(timed: dict, problems, rounds: int, order: str) -> dict:
    """Each variant's fastest time on each problem (seconds), the collector off.
    order "mixed": query by query, the variants' order rotating (each query finds the
    caches as the others left them, as on a server answering many maps); "runs": each
    variant answers all the problems in a row, a round at a time (its own data stays in
    the caches: the small unlinked search gains most)."""
    names = list(timed)
    best = {name: np.full(len(problems), np.inf) for name in names}

    def one(name, i, problem):
        gridmap, call = timed[name]
        gc.disable()
        began = time.perf_counter()
        call(gridmap, problem)
        spent = time.perf_counter() - began
        gc.enable()
        if spent < best[name][i]:
            best[name][i] = spent

    for r in range(rounds):
        if order == "mixed":
            for i, problem in enumerate(problems):
                shift = (i + r) % len(names)
                for name in names[shift:] + names[:shift]:
                    one(name, i, problem)
        else:
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                for i, problem in enumerate(problems):
                    one(name, i, problem)
    return best


def unlinked_unchanged(plain: GridMap) -> dict:
    """What find_path runs on the map without links, and whether its table is the plain one."""
    from pathserver.core.query import solver

    result = find_path(plain, (0, 0), (0, 0))
    call = [c for c in plain.layers.prepared_calls() if c.size == (1, 1)][0]
    kernel = solver(call.mode, call.jump_table, call.cells)
    layer = plain.layer(1)
    same_table = np.array_equal(layer.jump_table(), jump_table(layer.cells))
    return {"kernel": kernel.__name__, "algorithm": call.algorithm, "table_is_jump_table": bool(same_table),
            "status": result.status}


def path_rows(map_name: str, movingai_dir: Path, queries: int, rounds: int, seed: int) -> dict:
    """The figures, in each order of :func:`measure`: per variant the total over the
    problems (ms), per query (us) and the ratio to the map without links; and
    :func:`unlinked_unchanged`."""
    maps = movingai.find_maps(movingai_dir)
    if map_name not in maps:
        raise SystemExit(f"{map_name}: not found under {movingai_dir}")
    walkable = movingai.read_walkable(maps[map_name])
    problems = movingai.bucket_spread(movingai.read_scenarios(maps[map_name], walkable), queries, seed)
    timed = variants(walkable, seed)
    plain = timed["no links (1 floor)"][0]
    warm(plain, timed, problems)
    rows = {}
    for order in ORDERS:
        best = measure(timed, problems, rounds, order)
        base = best["no links (1 floor)"].sum()
        rows[order] = {name: {"total_ms": 1e3 * times.sum(), "per_query_us": 1e6 * times.mean(),
                              "ratio": times.sum() / base} for name, times in best.items()}
    # Answers agree: the same cost by JPS+ and by A* over the links.
    gridmap = timed["16 links, goal floor 1"][0]
    worst = 0.0
    for p in problems:
        a = find_path(gridmap, (p.sx, p.sy, 0), (p.gx, p.gy, 1))
        b = find_path(gridmap, (p.sx, p.sy, 0), (p.gx, p.gy, 1), algorithm="astar")
        worst = max(worst, abs(a.cost - b.cost) / max(1.0, b.cost))
    return {"map": map_name, "problems": len(problems), "rounds": rounds, "rows": rows,
            "unlinked": unlinked_unchanged(plain), "worst_relative_cost_gap_vs_astar_links": worst}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--movingai", type=Path, default=movingai.DEFAULT_MOVINGAI)
    parser.add_argument("--map", default="den520d")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    figures = path_rows(args.map, args.movingai, args.queries, args.rounds, args.seed)
    print(f"{figures['map']} as 2 floors, {figures['problems']} problems, fastest of {figures['rounds']} rounds")
    ratio = 0.0
    for order in ORDERS:
        rows = figures["rows"][order]
        print(f"\norder {order!r}: "
              f"{'query by query, variants rotating' if order == 'mixed' else 'each variant all problems in a row'}")
        print(f"{'variant':40s} {'total ms':>10s} {'us/query':>10s} {'vs no links':>12s}")
        for name, row in rows.items():
            print(f"{name:40s} {row['total_ms']:10.1f} {row['per_query_us']:10.1f} {row['ratio']:11.2f}x")
        worst = max(rows["16 links, goal floor 0"]["ratio"], rows["16 links, goal floor 1"]["ratio"])
        ratio = max(ratio, worst)
        print(f"target ({order}): 16 links <= {TARGET_16:g}x the query without links: {worst:.2f}x "
              f"{'PASS' if worst <= TARGET_16 else 'FAIL'}")
    unlinked = figures["unlinked"]
    print(f"maps without links: find_path runs {unlinked['kernel']} ({unlinked['algorithm']}), "
          f"jump table == jump_table(cells): {unlinked['table_is_jump_table']}")
    print(f"JPS+ vs astar_links, 16 links, goal floor 1: worst relative cost gap "
          f"{figures['worst_relative_cost_gap_vs_astar_links']:.1e}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0 if ratio <= TARGET_16 else 1


if __name__ == "__main__":
    sys.exit(main())
