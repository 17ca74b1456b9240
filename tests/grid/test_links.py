"""find_path on maps with floors and links against the reference (tests/naive_links.py):
1 to 3 floors, random one-way and two-way links of costs 0 to 20, unit sizes 1 and 2,
terrain costs, link tags under traversal rules, and smoothing that keeps link ends."""

import math

import numpy as np
import pytest

import naive_links
from pathserver import GridMap
from pathserver.grid.search import find_path


def world(rng, floors, height=9, width=11):
    walkable, cost, links = naive_links.random_floors(rng, floors, height, width, 10)
    tags = np.zeros(walkable.shape, dtype=np.uint8)
    gridmap = GridMap(walkable, cost, tags=tags, tag_names={"ladder": 1, "door": 2}, floors=floors, links=links)
    return walkable, cost, links, gridmap


@pytest.mark.parametrize("floors", [1, 2, 3])
def test_paths_with_floors_and_links_are_exact(floors):
    rng = np.random.default_rng(floors)
    for trial in range(4):
        walkable, cost, links, gridmap = world(rng, floors)
        unit = 1 + trial % 2
        passable, costs = naive_links.floors_for_unit(walkable, cost, unit)
        rules = {"ladder": None} if trial == 3 else {"door": 2.0} if trial == 2 else None
        points = [(int(x), int(y), f) for f in range(floors) for y, x in np.argwhere(passable[f])]
        for _ in range(8):
            a, b = (points[i] for i in rng.choice(len(points), 2, replace=False))
            expected = naive_links.cost(passable, costs, links, a, b, rules)
            result = find_path(gridmap, a, b, unit, smooth="none", traversal=rules)
            assert result.found == math.isfinite(expected), (a, b, expected)
            if not result.found:
                continue
            assert result.cost == pytest.approx(expected)
            path = [tuple(p) if floors > 1 else (*p, 0) for p in result.path.tolist()]
            assert path[0] == a and path[-1] == b
            steps = {int(i): int(k) for i, k in result.links.tolist()}
            assert naive_links.path_is_valid(passable, links, path, steps, rules)
            for smooth in ("corners", "los"):
                smoothed = find_path(gridmap, a, b, unit, smooth=smooth, traversal=rules)
                assert smoothed.cost == pytest.approx(expected)
                kept = [tuple(p) if floors > 1 else (*p, 0) for p in smoothed.path.tolist()]
                # Both ends of every link taken stay waypoints.
                for i, k in smoothed.links.tolist():
                    link = links[k]
                    ends = {naive_links.point(link["from"]), naive_links.point(link["to"])}
                    assert {kept[i], kept[i + 1]} == ends


@pytest.mark.parametrize("floors", [1, 2])
def test_reachable_with_floors_and_links_is_exact(floors):
    from pathserver.grid.queries import reachable

    rng = np.random.default_rng(10 + floors)
    for trial in range(4):
        walkable, cost, links, gridmap = world(rng, floors)
        unit = 1 + trial % 2
        passable, costs = naive_links.floors_for_unit(walkable, cost, unit)
        rules = {"door": None} if trial == 1 else None
        points = [(int(x), int(y), f) for f in range(floors) for y, x in np.argwhere(passable[f])]
        start = points[rng.integers(len(points))]
        budget = 9.0
        expected = {p: c for p, c in naive_links.costs_from(passable, costs, links, start, rules).items()
                    if c <= budget + 1e-9}
        got = reachable(gridmap, start, budget, unit, traversal=rules)
        cells = [tuple(c) if floors > 1 else (*c, 0) for c in got.cells.tolist()]
        assert set(cells) == set(expected)
        for cell, value in zip(cells, got.costs.tolist()):
            assert value == pytest.approx(expected[cell], rel=1e-6)
