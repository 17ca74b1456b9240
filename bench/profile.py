"""Where a default ``find_path`` call's time goes, per map: the Python call around the
kernel, the kernel's fixed costs, and the search, for short and long queries.

For each map, the same bucket-spread scenario problems as bench/core.py; each query runs
in alternating rounds (the minimum per query over the rounds is kept: the machine is
shared) as

  find_path     ``find_path(gridmap, start, goal)`` with its defaults (algorithm="auto")
  solve         the compiled ``solve`` called directly with the prepared call's arrays
                (numba's dispatch, snapping, components, line of sight, search, path)
  search        the search kernel alone (jps, or JPS+ when the layer's tables are built),
                called directly on the same workspace
  empty         find_path for a one-cell trip (the floor every call pays)

and prints, per map and for the short (lower half of buckets) and long queries, the mean
of each and the differences: Python wrapper = find_path - solve, solve's fixed part =
solve - search.

    PYTHONPATH=$PWD python bench/profile.py [--maps den520d,brc202d] [--queries 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path

import numpy as np

import _movingai as movingai

SIX = ("den520d", "brc202d", "Aftershock", "Boston_0_512", "32room_000", "maze512-32-0")


def _timed(fn, args_list, rounds: int) -> np.ndarray:
    """Minimum ns per call of ``fn(*args)`` for each args, over alternating rounds."""
    best = np.full(len(args_list), np.inf)
    for _ in range(rounds):
        for i, args in enumerate(args_list):
            t0 = time.perf_counter_ns()
            fn(*args)
            t = time.perf_counter_ns() - t0
            if t < best[i]:
                best[i] = t
    return best


def profile_map(name: str, path: Path, queries: int, rounds: int, seed: int) -> dict:
    from pathserver import GridMap, find_path
    from pathserver.core.jps import jps
    try:
        from pathserver.core.jpsplus import jps_plus
    except ImportError:  # before JPS+
        jps_plus = None
    from pathserver.core.astar import next_pass_id
    from pathserver.core.query import solve
    from pathserver.grid import prepared

    walkable = movingai.read_walkable(path)
    problems = movingai.bucket_spread(movingai.read_scenarios(path, walkable), queries, seed)
    gridmap = GridMap.load(path)
    find_path(gridmap, (problems[0].sx, problems[0].sy), (problems[0].gx, problems[0].gy))
    for waits in ("wait_jump_table", "wait_bounds"):  # the goal bounds: small maps only
        wait = getattr(gridmap.layer(1), waits, None)
        if wait is not None:
            wait()
    find_path(gridmap, (problems[0].sx, problems[0].sy), (problems[0].gx, problems[0].gy))
    call = next(c for c in gridmap.layers.prepared_calls() if c.size == (1, 1))
    ws = prepared.workspace(call.n)
    fields = dict(zip(call.FIELDS, call.fields))
    fixed = tuple(fields[name] for name in call.FIELDS[call.FIELDS.index("cells"):call.FIELDS.index("mode")])
    one_start = np.zeros(0, dtype=np.int32)  # jps_plus's sources: none, one start
    NO_OVERLAY = np.zeros(0, dtype=np.uint64)  # no avoided cells
    NO_OVERLAY.setflags(write=False)
    fixed = fixed[:4] + (fields["cells"],) + fixed[4:]  # solve's plain_cells: the same grid
    bounds = tuple(fields[name] for name in ("bound_rows", "bounds") if name in fields)
    tail = (fields["mode"], fields["weight"], fields["budget"], ws.work_float, ws.work_int, fields["landmarks"], *bounds,
            NO_OVERLAY)
    cells = fields["cells"]
    g, heap_f, heap_h = ws.work_float[:3]
    parent, heap_nodes, heap_pos, stamp = ws.work_int[0], ws.work_int[1], ws.work_int[2], ws.work_int[3]

    table = fields.get("jump_table")
    plus = table is not None and table.shape[0] == cells.size

    def run_search(sx, sy, gx, gy):
        pass_id = next_pass_id(ws.work_int)
        if plus:
            return jps_plus(cells, table, sx, sy, gx, gy, 1.0, 0, ws.work_float, pass_id, one_start, *bounds,
                            None, None)
        return jps(cells, fields["jump_bits"], sx, sy, gx, gy, 1.0, 0, g, parent, stamp, pass_id,
                   heap_nodes, heap_f, heap_h, heap_pos)

    fp_args = [(gridmap, (p.sx, p.sy), (p.gx, p.gy)) for p in problems]
    solve_args = [(*fixed, p.sx, p.sy, p.gx, p.gy, *tail) for p in problems]
    search_args = [(p.sx, p.sy, p.gx, p.gy) for p in problems]
    pairs = np.argwhere(walkable[:, :-1] & walkable[:, 1:])
    y, x = (int(v) for v in pairs[len(pairs) // 2])
    empty_args = [(gridmap, (x, y), (x + 1, y))] * 50
    gc.disable()
    try:
        t_fp = np.full(len(problems), np.inf)
        t_solve = np.full(len(problems), np.inf)
        t_search = np.full(len(problems), np.inf)
        t_empty = np.full(len(empty_args), np.inf)
        for _ in range(rounds):
            t_fp = np.minimum(t_fp, _timed(find_path, fp_args, 1))
            t_solve = np.minimum(t_solve, _timed(solve, solve_args, 1))
            t_search = np.minimum(t_search, _timed(run_search, search_args, 1))
            t_empty = np.minimum(t_empty, _timed(find_path, empty_args, 1))
    finally:
        gc.enable()
    buckets = np.array([p.bucket for p in problems])
    short = buckets <= np.median(buckets)
    out = {"map": name, "algorithm": call.algorithm, "empty_us": float(t_empty.mean() / 1000)}
    for label, mask in (("all", np.ones_like(short)), ("short", short), ("long", ~short)):
        out[label] = {k: float(v[mask].mean() / 1000) for k, v in
                      (("find_path", t_fp), ("solve", t_solve), ("search", t_search))}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--movingai", type=Path, default=movingai.DEFAULT_MOVINGAI)
    parser.add_argument("--maps", default=",".join(SIX))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    maps = movingai.find_maps(args.movingai)
    print("mean µs/query, minimum per query over alternating rounds; wrapper = find_path - solve, "
          "fixed = solve - search")
    print(f"{'map':14} {'part':6} {'find_path':>9} {'solve':>8} {'search':>8} {'wrapper':>8} {'fixed':>7}  "
          f"empty find_path")
    for name in args.maps.split(","):
        r = profile_map(name, maps[name], args.queries, args.rounds, args.seed)
        for label in ("all", "short", "long"):
            p = r[label]
            print(f"{name if label == 'all' else '':14} {label:6} {p['find_path']:9.2f} {p['solve']:8.2f} "
                  f"{p['search']:8.2f} {p['find_path'] - p['solve']:8.2f} {p['solve'] - p['search']:7.2f}"
                  + (f"  {r['empty_us']:.2f} ({r['algorithm']})" if label == "all" else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
