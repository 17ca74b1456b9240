"""JPS+ over a grid and its links (pathserver.core.links_jps, through find_path) against
the reference (tests/naive_links.py): 1 to 3 floors, one-way and two-way links of costs 0
to 20 (teleporters of cost 0 among them), unit sizes 1 to 3, traversal rules barring or
multiplying link tags; and against A* over the links on Moving AI maps."""

import math

import numpy as np
import pytest

import naive
import naive_links
from conftest import MOVINGAI
from pathserver import GridMap
from pathserver.core.jpsplus import jump_table, jump_table_stops
from pathserver.grid.search import find_path

TAG_NAMES = {"ladder": 1, "door": 2}
RULES = (None, {"ladder": None}, {"door": 3.5}, {"ladder": 2.0, "door": None})


def world(rng, floors, height, width, blocked, count):
    """Uniform-cost floors and ``count`` random links, about a third of them costing 0."""
    walkable = np.stack([rng.random((height, width)) > blocked for _ in range(floors)])
    # Blocked bars too: long straight and diagonal runs, where JPS+ jumps far.
    for f in range(floors):
        walkable[f, rng.integers(height), 1:-1] = False
    links = naive_links.random_links(rng, floors, width, height, walkable, count, tags=tuple(TAG_NAMES))
    for link in links:
        if rng.random() < 0.3:
            link["cost"] = 0.0
    gridmap = GridMap(walkable, tags=np.zeros(walkable.shape, dtype=np.uint8), tag_names=TAG_NAMES, floors=floors,
                      links=links)
    return walkable, links, gridmap


def as_triples(result, floors):
    return [tuple(p) if floors > 1 else (*p, 0) for p in result.path.tolist()]


@pytest.mark.parametrize("floors", [1, 2, 3])
@pytest.mark.parametrize("seed", range(3))
def test_jps_with_links_is_exact(floors, seed):
    rng = np.random.default_rng(100 * floors + seed)
    over_links = 0
    for trial in range(4):
        height, width = int(rng.integers(8, 24)), int(rng.integers(8, 24))
        walkable, links, gridmap = world(rng, floors, height, width, rng.choice([0.1, 0.3]), int(rng.integers(1, 12)))
        unit = 1 + (seed + trial) % 3
        rules = RULES[trial]
        passable = [naive.passable_for_unit(w, unit, unit) for w in walkable]
        costs = [np.ones((height, width)) for _ in range(floors)]
        points = [(int(x), int(y), f) for f in range(floors) for y, x in np.argwhere(passable[f])]
        if len(points) < 2:
            continue
        for _ in range(3):
            start = points[rng.integers(len(points))]
            expected = naive_links.costs_from(passable, costs, links, start, rules)
            for goal in (points[i] for i in rng.choice(len(points), min(6, len(points)), replace=False)):
                want = expected.get(goal, math.inf)
                result = find_path(gridmap, start, goal, unit, smooth="none", traversal=rules)
                assert result.algorithm == "jps+", (result, gridmap.linked, trial, unit)
                assert result.found == math.isfinite(want), (start, goal, want)
                if not result.found:
                    continue
                assert result.cost == pytest.approx(want, rel=1e-9, abs=1e-9), (start, goal)
                path = as_triples(result, floors)
                assert path[0] == start and path[-1] == goal
                steps = {int(i): int(k) for i, k in result.links.tolist()}
                assert naive_links.path_is_valid(passable, links, path, steps, rules)
                # The cells' own cost: each step's length, each link's cost.
                walked = sum(math.dist(a[:2], b[:2]) for i, (a, b) in enumerate(zip(path, path[1:])) if i not in steps)
                taken = sum(_link_cost(links, k, rules) for k in steps.values())
                assert walked + taken == pytest.approx(want, rel=1e-9, abs=1e-9)
                over_links += len(steps) > 0
    assert over_links > 0  # the links were taken, not only walked past


def _link_cost(links, k, rules):
    tag = links[k].get("tag")
    return float(links[k]["cost"]) * (rules[tag] if rules and tag in rules else 1.0)


def test_a_link_source_on_a_diagonal_is_a_jump_point():
    # Open floors: the diagonal from the start runs over the ladder's foot, which a
    # diagonal scan must stop on (no wall makes it a jump point).
    walkable = np.ones((2, 12, 12), dtype=bool)
    links = [{"from": [4, 4], "to": [11, 0, 1], "cost": 0}]
    gridmap = GridMap(walkable, floors=2, links=links)
    result = find_path(gridmap, (0, 0), (11, 3, 1), smooth="none")
    assert result.algorithm == "jps+"
    assert result.cost == pytest.approx(4 * math.sqrt(2) + 3)
    assert result.path.tolist()[4:6] == [[4, 4, 0], [11, 0, 1]]
    assert result.links.tolist() == [[4, 0]]


def test_a_teleporter_beats_the_walk_on_one_floor():
    # Plain octile would overestimate here: the zero-cost link is the way.
    walkable = np.ones((20, 40), dtype=bool)
    links = [{"from": [1, 10], "to": [38, 10], "cost": 0, "two_way": False}]
    gridmap = GridMap(walkable, links=links)
    result = find_path(gridmap, (0, 10), (39, 10), smooth="none")
    assert result.algorithm == "jps+" and result.cost == pytest.approx(2.0)
    back = find_path(gridmap, (39, 10), (0, 10), smooth="none")
    assert back.cost == pytest.approx(39.0) and back.links.tolist() == []


def test_a_floor_no_link_reaches_has_no_path():
    walkable = np.ones((3, 6, 6), dtype=bool)
    gridmap = GridMap(walkable, floors=3, links=[{"from": [0, 0], "to": [5, 5, 1], "cost": 1}])
    assert find_path(gridmap, (0, 0), (2, 2, 2)).status == "no_path"
    assert find_path(gridmap, (3, 3), (2, 2, 1)).cost == pytest.approx(1 + 3 * math.sqrt(2) + 3 * math.sqrt(2))


def test_a_budget_or_astar_keeps_astar():
    walkable = np.ones((2, 8, 8), dtype=bool)
    gridmap = GridMap(walkable, floors=2, links=[{"from": [0, 0], "to": [7, 7, 1], "cost": 2}])
    assert find_path(gridmap, (3, 3), (6, 6, 1), algorithm="astar").algorithm == "astar"
    assert find_path(gridmap, (3, 3), (6, 6, 1), max_expansions=1000).algorithm == "astar"
    assert find_path(gridmap, (3, 3), (6, 6, 1)).algorithm == "jps+"


def test_stops_only_add_jump_points():
    rng = np.random.default_rng(7)
    cells = (rng.random((30, 40)) > 0.3).astype(np.uint8)
    assert np.array_equal(jump_table_stops(cells, np.zeros(0, dtype=np.uint8)), jump_table(cells))
    # On an open row a straight move east stops on the stop and nowhere before it.
    open_cells = np.ones((5, 20), dtype=np.uint8)
    stops = np.zeros(100, dtype=np.uint8)
    stops[2 * 20 + 15] = 1
    table = jump_table_stops(open_cells, stops)
    assert table[2 * 20 + 3, 0] == 12
    assert jump_table(open_cells)[2 * 20 + 3, 0] <= 0


@pytest.mark.parametrize("count", [16, 256])
def test_jps_with_links_matches_astar_on_den520d(count):
    path = MOVINGAI / "dao" / "den520d.map"
    if not path.is_file():
        pytest.skip(f"{path} is absent (the Moving AI maps live in ../shared)")
    walkable = GridMap.load(path).walkable
    rng = np.random.default_rng(count)
    floors = np.stack([walkable, walkable])
    free = np.argwhere(walkable)
    links = []
    for _ in range(count):
        (ay, ax), (by, bx) = free[rng.integers(len(free), size=2)]
        links.append({"from": [int(ax), int(ay), 0], "to": [int(bx), int(by), 1], "cost": float(rng.integers(0, 21)),
                      "two_way": bool(rng.random() < 0.8)})
    gridmap = GridMap(floors, floors=2, links=links)
    _matches_astar(gridmap, free, rng, 20)


def _matches_astar(gridmap, free, rng, trips):
    """JPS+ and A* over the links agree on ``trips`` random trips between floors 0 and
    1, before and after the goal bounds are in place."""
    trips = [(free[rng.integers(len(free))], free[rng.integers(len(free))], int(rng.integers(2))) for _ in range(trips)]
    for bounded in (False, True):
        if bounded:
            assert gridmap.layer(1).wait_bounds(timeout=300)
        over_links = 0
        for (sy, sx), (gy, gx), floor in trips:
            for goal in ((int(gx), int(gy), 0), (int(gx), int(gy), 1)):
                start = (int(sx), int(sy), floor)
                plus = find_path(gridmap, start, goal, smooth="none")
                astar = find_path(gridmap, start, goal, smooth="none", algorithm="astar")
                assert plus.algorithm == "jps+" and astar.algorithm == "astar"
                assert plus.found == astar.found
                if plus.found:
                    assert plus.cost == pytest.approx(astar.cost, rel=1e-9)
                    over_links += len(plus.links) > 0
        assert over_links > 0


@pytest.mark.parametrize("seed", range(2))
def test_jps_with_links_and_goal_bounds_matches_astar(seed):
    # Large enough for goal bounds (pathserver.grid.layers.JUMP_TABLE_MIN_CELLS): rooms
    # and clutter on two floors, one-way and two-way links of costs 0 to 20.
    rng = np.random.default_rng(seed)
    height, width = 90, 100
    walkable = rng.random((2, height, width)) > 0.08
    for f in range(2):
        for _ in range(12):
            y, x = rng.integers(height), rng.integers(width)
            if rng.random() < 0.5:
                walkable[f, y, max(0, x - 30):x + 30] = False
            else:
                walkable[f, max(0, y - 30):y + 30, x] = False
    links = naive_links.random_links(rng, 2, width, height, walkable, 16, tags=tuple(TAG_NAMES))
    gridmap = GridMap(walkable, tags=np.zeros(walkable.shape, dtype=np.uint8), tag_names=TAG_NAMES, floors=2,
                      links=links)
    free = np.argwhere(walkable[0] & walkable[1])
    _matches_astar(gridmap, free, rng, 40)


@pytest.mark.parametrize("smooth", ["none", "corners", "los"])
def test_the_common_call_answers_as_the_general_way(smooth):
    # find_path's one-kernel way (every option at its default but smooth) and the general
    # one (here taken by a weight equal to the default but not its very object) agree.
    rng = np.random.default_rng(5)
    walkable, links, gridmap = world(rng, 2, 30, 40, 0.15, 8)
    points = [(int(x), int(y), f) for f in range(2) for y, x in np.argwhere(walkable[f])]
    for _ in range(40):
        a, b = (points[i] for i in rng.choice(len(points), 2, replace=False))
        fast = find_path(gridmap, a, b, smooth=smooth)
        general = find_path(gridmap, list(a), b, smooth=smooth, weight=float("1"))
        assert fast.algorithm == general.algorithm == "jps+"
        assert (fast.status, fast.cost, fast.length, fast.expanded) == (general.status, general.cost, general.length,
                                                                        general.expanded)
        assert fast.path.tolist() == general.path.tolist() and fast.links.tolist() == general.links.tolist()
        assert fast.path.dtype == general.path.dtype and fast.links.dtype == general.links.dtype
