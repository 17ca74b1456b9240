"""This checkout's search speed against another commit's, side by side in one run.

    python bench/against.py 14095f7                 # 3 alternating rounds of each
    python bench/against.py HEAD~5 --rounds 5 --maps den520d,Boston_0_512

For a change that must not cost speed (a restructuring, a compile-time lever): the other
commit is checked out in a temporary git worktree, and each side runs in its own process
with its own empty kernel cache, the sides alternating round by round (a slow spell on a
shared machine hits both). A round answers the same bucket-spread Moving AI problems with
``find_path`` for A* and JPS (``line_of_sight=False``), ``auto`` once the map's tables are
built, and A* on terrain costs, each after an untimed pass (which loads the compiled copies
from the cache); each figure is the fastest round's mean µs a query, and the last column
the ratio this checkout / the other.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAPS = "den520d,Boston_0_512,32room_000"
CASES = ("astar", "jps", "auto", "astar on costs")

#: One side's round, run by ``python -c`` in that side's checkout: prints {case: µs}.
ROUND = r'''
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1] + "/bench")
import _movingai as movingai
from pathserver.grid.gridmap import GridMap
from pathserver.grid.search import find_path

found = movingai.find_maps(movingai.DEFAULT_MOVINGAI)
figures = {}
for name in sys.argv[2].split(","):
    walkable = movingai.read_walkable(found[name])
    problems = movingai.bucket_spread(movingai.read_scenarios(found[name], walkable), int(sys.argv[3]), 0)
    cost = (1 + np.random.default_rng(0).integers(0, 3, size=walkable.shape)).astype(np.float32)
    plain, costly = GridMap(walkable), GridMap(walkable, cost)
    for gridmap in (plain, costly):
        first = problems[0]
        find_path(gridmap, (first.sx, first.sy), (first.gx, first.gy))
        layer = gridmap.layer_for(1, 1)
        layer.wait_jump_table(300)
        layer.wait_bounds(300)
        layer.wait_landmarks(300)
    for case, gridmap, options in (
        ("astar", plain, {"algorithm": "astar", "line_of_sight": False}),
        ("jps", plain, {"algorithm": "jps", "line_of_sight": False}),
        ("auto", plain, {}),
        ("astar on costs", costly, {"algorithm": "astar", "line_of_sight": False}),
    ):
        # A pass untimed first: a fresh process loads each search's compiled copy from the
        # cache on its first call (tens of ms), which is not the search's speed.
        for timed in (False, True):
            began = time.perf_counter()
            for p in problems:
                find_path(gridmap, (p.sx, p.sy), (p.gx, p.gy), **options)
        figures[f"{name} {case}"] = (time.perf_counter() - began) / len(problems) * 1e6
print(json.dumps(figures))
'''


def run_round(checkout: Path, cache: Path, maps: str, queries: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", ROUND, str(checkout), maps, str(queries)], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"a round in {checkout} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", help="the commit to compare with (any git revision)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each side (default: %(default)s)")
    parser.add_argument("--maps", default=MAPS, help="Moving AI maps (default: %(default)s)")
    parser.add_argument("--queries", type=int, default=100, help="problems a map (default: %(default)s)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pathserver-against-") as scratch:
        scratch = Path(scratch)
        other = scratch / "other"
        subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(other), args.other], cwd=ROOT, check=True)
        # The Moving AI maps are found beside the checkout, as in this one.
        (scratch / "shared").symlink_to(ROOT.parent / "shared")
        try:
            best = {"this": {}, "other": {}}
            began = time.perf_counter()
            for _ in range(args.rounds):
                for side, checkout in (("this", ROOT), ("other", other)):
                    for key, value in run_round(checkout, scratch / f"cache-{side}", args.maps, args.queries).items():
                        best[side][key] = min(best[side].get(key, value), value)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, check=False)
    print(f"{'map and search':<28}{'this µs':>10}{args.other + ' µs':>16}{'this / other':>14}")
    for key in best["this"]:
        this, that = best["this"][key], best["other"][key]
        print(f"{key:<28}{this:>10.1f}{that:>16.1f}{this / that:>14.2f}")
    print(f"{args.rounds} rounds a side, the fastest kept; {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
