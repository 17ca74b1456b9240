"""Path lengths equal the published optimal lengths of the Moving AI benchmark.

A sample of each map's scenarios by default; every scenario of a few maps with --slow.
Skips cleanly when ../shared/movingai is absent.
"""

import numpy as np
import pytest

from pathserver import GridMap, find_path, find_paths
from pathserver.maps.scen import find_map_for_scen, load_scen

SAMPLE = 12
FULL_MAPS = ["arena", "den520d", "Berlin_0_256", "AR0011SR", "icecrown"]


def _problems(scen_path, gridmap, sample):
    problems = [
        p for p in load_scen(scen_path)
        if gridmap.walkable[p.start[1], p.start[0]] and gridmap.walkable[p.goal[1], p.goal[0]]
    ]
    if sample is None or len(problems) <= sample:
        return problems
    # Spread over the buckets: every k-th problem of the file, longest included.
    picks = np.linspace(0, len(problems) - 1, sample).round().astype(int)
    return [problems[i] for i in picks]


def _check(scen_path, sample, algorithms):
    gridmap = GridMap.load(find_map_for_scen(scen_path))
    problems = _problems(scen_path, gridmap, sample)
    assert problems
    for algorithm in algorithms:
        if algorithm == "auto":
            # auto once its JPS+ table is built (started by the first query).
            find_paths(gridmap, [problems[0].start], [problems[0].goal])
            gridmap.layer(1).wait_jump_table(timeout=120)
        results = find_paths(
            gridmap, [p.start for p in problems], [p.goal for p in problems], algorithm=algorithm
        )
        for problem, result in zip(problems, results):
            assert result.status == "found"
            # The street files were computed with sqrt(2) = 1.414213562, which makes their
            # long paths up to ~2e-7 short of the true length: allow 1e-8 relative on top.
            tolerance = problem.precision + 1e-8 * problem.optimal_length
            assert abs(result.cost - problem.optimal_length) <= tolerance, (
                f"{scen_path.name}: {problem.start}->{problem.goal} {algorithm} cost {result.cost}, "
                f"optimal {problem.optimal_length}"
            )


def test_sampled_scenarios_of_every_map_are_optimal(movingai_dir):
    scens = sorted(movingai_dir.rglob("*.map.scen"))
    assert len(scens) == 20
    for scen in scens:
        _check(scen, SAMPLE, ["astar", "jps", "auto"])


def test_icecrown_bad_lines_are_the_three_known_ones(movingai_dir):
    scen = movingai_dir / "wc3maps512" / "icecrown.map.scen"
    gridmap = GridMap.load(find_map_for_scen(scen))
    problems = load_scen(scen)
    assert len(problems) - len(_problems(scen, gridmap, None)) == 3


@pytest.mark.slow
@pytest.mark.parametrize("name", FULL_MAPS)
def test_every_scenario_of_a_few_maps_is_optimal(movingai_dir, name):
    (scen,) = movingai_dir.rglob(f"{name}.map.scen")
    _check(scen, None, ["astar", "jps"])


@pytest.mark.parametrize("name", ["Boston_0_512", "den520d", "maze512-32-0"])
def test_avoided_cells_on_real_maps_cost_what_a_star_finds(movingai_dir, name):
    # A default request with 200 other units' cells, spread over the map or round its own
    # route (JPS+ kept, mended, relaxed or under the overlay of all of them), against A*
    # round the same cells; units 1 and 2, the goal bounds built.
    (scen,) = movingai_dir.rglob(f"{name}.map.scen")
    gridmap = GridMap.load(find_map_for_scen(scen))
    rng = np.random.default_rng(7)
    free = np.argwhere(gridmap.walkable)[:, ::-1]
    for unit in (1, 2):
        find_path(gridmap, tuple(free[0].tolist()), tuple(free[-1].tolist()), unit)
        gridmap.layer(unit).wait_jump_table(timeout=120)
        gridmap.layer(unit).wait_bounds(timeout=120)
    kinds = {"jps+": 0, "jps": 0}
    for i in range(30):
        start, goal = (tuple(free[k].tolist()) for k in rng.integers(len(free), size=2))
        unit = 1 + i % 2
        plain = find_path(gridmap, start, goal, unit)
        if plain.status != "found":
            continue
        if i % 3:
            picked = plain.path[rng.integers(len(plain.path), size=200)]
            cells = picked + rng.integers(-3, 4, size=picked.shape)
        else:
            cells = free[rng.integers(len(free), size=200)]
        avoid = {"cells": cells.astype(np.int32)}
        got = find_path(gridmap, start, goal, unit, avoid=avoid)
        expected = find_path(gridmap, start, goal, unit, avoid=avoid, algorithm="astar")
        assert got.status == expected.status, (start, goal, unit)
        if got.status == "found":
            assert got.cost == pytest.approx(expected.cost, rel=1e-9), (start, goal, unit)
            kinds[got.algorithm] += 1
    assert min(kinds.values()) >= 3, kinds
