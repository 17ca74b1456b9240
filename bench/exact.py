"""Every scenario of every Moving AI map through ``find_path`` with its defaults
(algorithm="auto", once the map's JPS+ table is built, and its goal bounds where it gets
them), each cost checked against the
scenario's optimal length and each path walked cell by cell by the bench's own checker.

    PYTHONPATH=$PWD python bench/exact.py [--maps den520d,brc202d]

Prints one line per map (problems, how many were optimal, what ran) and exits 1 on any
mismatch.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import _movingai as movingai


def main(argv=None) -> int:
    from pathserver import GridMap, find_path

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--movingai", type=Path, default=movingai.DEFAULT_MOVINGAI)
    parser.add_argument("--maps", help="comma-separated map names (default: all)")
    args = parser.parse_args(argv)
    maps = movingai.find_maps(args.movingai)
    names = args.maps.split(",") if args.maps else sorted(maps)
    bad_total = 0
    total = 0
    for name in names:
        walkable = movingai.read_walkable(maps[name])
        problems = movingai.read_scenarios(maps[name], walkable)
        gridmap = GridMap.load(maps[name])
        find_path(gridmap, (problems[0].sx, problems[0].sy), (problems[0].gx, problems[0].gy))
        gridmap.layer(1).wait_jump_table(timeout=300)
        bounds = gridmap.layer(1).wait_bounds(timeout=600)
        t0 = time.perf_counter()
        bad = 0
        algorithms: dict = {}
        for p in problems:
            r = find_path(gridmap, (p.sx, p.sy), (p.gx, p.gy))
            algorithms[r.algorithm] = algorithms.get(r.algorithm, 0) + 1
            length = movingai.path_length(r.path, walkable, (p.sx, p.sy), (p.gx, p.gy))
            if (r.status != "found" or length is None or abs(length - p.optimal) > p.tolerance
                    or abs(r.cost - p.optimal) > p.tolerance):
                bad += 1
        seconds = time.perf_counter() - t0
        print(f"{name:22} {len(problems):6} problems  optimal {len(problems) - bad:6}  wrong {bad}  "
              f"{algorithms}{' with goal bounds' if bounds else ''}  {seconds:.1f} s")
        bad_total += bad
        total += len(problems)
    print(f"all: {total} problems, {total - bad_total} optimal, {bad_total} wrong")
    return 1 if bad_total else 0


if __name__ == "__main__":
    sys.exit(main())
