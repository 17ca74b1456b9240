"""Each copy of ``solve`` (``pathserver.core.query.solver``) answers what the general one
does, and compiles only its own search: a first path in a new program compiles one loop."""

import os
import subprocess
import sys

import numpy as np
import pytest

from pathserver import GridMap, find_path
from pathserver.core import query, status as st
from pathserver.grid.prepared import prepared_call, workspace
from naive import random_grid


def _mode(algorithm, uniform=1, diagonal=st.DIAGONAL_NO_CORNER_CUTTING, heuristic=st.HEURISTIC_OCTILE, heights=0):
    return st.pack_mode(diagonal, heuristic, st.SMOOTH_NONE, algorithm, 1, 0, 1, uniform, heights)


@pytest.mark.parametrize("mode, copy", [
    (_mode(st.ALGORITHM_ASTAR), "solve_astar_uniform"),
    (_mode(st.ALGORITHM_ASTAR, uniform=0), "solve_astar_weighted"),
    (_mode(st.ALGORITHM_ASTAR, diagonal=st.DIAGONAL_NEVER), "solve_astar_any"),
    (_mode(st.ALGORITHM_ASTAR, heuristic=st.HEURISTIC_EUCLIDEAN), "solve_astar_any"),
    (_mode(st.ALGORITHM_ASTAR, heights=1), "solve_astar_any"),
    (_mode(st.ALGORITHM_JPS), "solve_jps"),
])
def test_the_copy_follows_the_mode(mode, copy):
    cells = np.ones((4, 4), dtype=np.uint8)
    assert query.solver(mode, np.zeros((0, 8), dtype=np.int8), cells) is getattr(query, copy)


def test_a_built_table_runs_jps_plus_and_avoided_cells_under_online_jps_the_general_copy():
    cells = np.ones((4, 4), dtype=np.uint8)
    table = np.zeros((16, 8), dtype=np.int8)
    assert query.solver(_mode(st.ALGORITHM_JPS), table, cells) is query.solve_plus
    assert query.solver(_mode(st.ALGORITHM_JPS) | 1 << st.MODE_AVOIDING, table[:0], cells) is query.solve
    relaxed = _mode(st.ALGORITHM_ASTAR) | 1 << st.MODE_AVOIDING | 1 << st.MODE_RELAXED
    assert query.solver(relaxed, table[:0], cells) is query.solve


@pytest.mark.parametrize("seed", range(4))
def test_every_copy_answers_what_the_general_one_does(seed):
    rng = np.random.default_rng(seed)
    walkable = random_grid(rng, 24, 20, 0.3)
    cost = rng.integers(1, 4, size=walkable.shape).astype(np.float64)
    for gridmap in (GridMap(walkable), GridMap(walkable, cost)):
        for _ in range(20):
            free = np.argwhere(walkable)
            (sy, sx), (gy, gx) = free[rng.integers(len(free), size=2)]
            for options in ({"algorithm": "astar"}, {"algorithm": "astar", "diagonal": "never"}, {}):
                if options == {} and gridmap.cost is not None and not np.all(gridmap.cost == 1):
                    continue
                result = find_path(gridmap, (int(sx), int(sy)), (int(gx), int(gy)), line_of_sight=False,
                                   smooth="none", **options)
                general = _general_answer(gridmap, (int(sx), int(sy)), (int(gx), int(gy)), options)
                assert (result.status, round(result.cost, 9), result.path.tolist()) == general


def _general_answer(gridmap, start, goal, options):
    """The same query through ``query.solve``, the copy that holds every search."""
    given = {"smooth": "none", "line_of_sight": False, **options}
    call = prepared_call(gridmap, 1, None, given)
    ws = workspace(call.n)
    status, _, count, cost, *_ = query.solve(
        call.cells, call.comps, call.jump_bits, call.jump_table, call.cells, call.cost_index, call.cost_table,
        call.heights, call.climb, start[0], start[1], goal[0], goal[1], call.mode, call.weight, call.budget,
        ws.work_float, ws.work_int, call.landmarks, call.bound_rows, call.bounds, np.zeros(0, dtype=np.uint64),
    )
    names = {st.QUERY_FOUND: "found", st.QUERY_PARTIAL: "partial", st.QUERY_NO_PATH: "no_path"}
    return names[status], round(cost, 9), ws.answer[:count].tolist()


@pytest.mark.parametrize("algorithm, unused", [
    ("astar", "query.solve query.solve_jps query.solve_plus jps.jps jpsplus.jps_plus astar.search_weighted "
              "astar.search_any"),
    ("jps", "query.solve query.solve_astar_uniform query.solve_plus jpsplus.jps_plus astar.astar "
            "astar.search_uniform astar.search_weighted astar.search_any"),
])
def test_a_first_path_compiles_its_own_search_only_and_the_next_program_loads_it(tmp_path, algorithm, unused):
    code = (
        "import numpy as np\n"
        "from pathserver import GridMap, find_path\n"
        "from pathserver.core import astar, jps, jpsplus, query\n"
        "gridmap = GridMap(np.ones((8, 8), dtype=bool))\n"
        f"find_path(gridmap, (0, 0), (7, 5), algorithm={algorithm!r}, line_of_sight=False)\n"
        f"print([name for name in {unused.split()!r} if eval(name).signatures])\n"
        "print(sum(sum(getattr(query, name).stats.cache_misses.values()) for name in query.COPIES))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=110)
            for _ in range(2)]
    assert [run.returncode for run in runs] == [0, 0], runs[-1].stderr
    assert [run.stdout.split("\n")[:2] for run in runs] == [["[]", "1"], ["[]", "0"]]
