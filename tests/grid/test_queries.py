"""The queries beyond one path (reachable, distance_field, next_steps, check_block, many
goals, avoided cells, traversal rules) against the slow references of tests/naive.py on
random grids, and one small map per behaviour."""

import math

import numpy as np
import pytest

import naive
from pathserver import GridMap, check_block, distance_field, find_path, next_steps, reachable
from pathserver.errors import GoalBlockedError, OutOfBoundsError, RequestError, StartBlockedError, TooLargeError

UNITS = [1, 2, 3, (2, 1), (1, 3)]
DIAGONALS = ["no_corner_cutting", "never", "always"]


def _size(unit):
    return (unit, unit) if isinstance(unit, int) else unit


class Case:
    """A random map, unit and options, with what the references need."""

    def __init__(self, rng, *, costs=True, avoid=True, heights=True, max_side=14):
        width, height = int(rng.integers(3, max_side)), int(rng.integers(3, max_side))
        walkable = naive.random_grid(rng, width, height, float(rng.uniform(0.0, 0.35)))
        cost = rng.choice([1.0, 1.0, 2.0, 5.0], size=(height, width)) if costs and rng.random() < 0.5 else None
        self.heights = None
        self.options = {"diagonal": DIAGONALS[int(rng.integers(3))]}
        if heights and rng.random() < 0.2:
            self.heights = rng.choice([0.0, 1.0, 3.0], size=(height, width)).astype(np.float32)
            self.options["max_climb"] = 1.5
        self.map = GridMap(walkable, cost, self.heights)
        self.unit = UNITS[int(rng.integers(len(UNITS)))]
        uw, uh = _size(self.unit)
        self.passable = naive.passable_for_unit(walkable, uw, uh)
        layer_cost = None if cost is None else naive.footprint_max(np.where(walkable, cost, 1.0), uw, uh)
        self.avoided = None
        self.avoid_cost = None
        if avoid and rng.random() < 0.5:
            cells = [tuple(int(v) for v in rng.integers(0, (width, height))) for _ in range(int(rng.integers(1, 6)))]
            rects = [(int(rng.integers(-1, width)), int(rng.integers(-1, height)), int(rng.integers(1, 4)),
                      int(rng.integers(1, 3)))] if rng.random() < 0.5 else []
            self.options["avoid"] = {"cells": cells, "rects": rects}
            self.avoided = naive.overlapping(naive.covered((height, width), cells, rects), uw, uh)
            if rng.random() < 0.4:
                self.avoid_cost = float(rng.choice([1.0, 3.0, 10.0]))
                self.options["avoid_cost"] = self.avoid_cost
        self.graph = naive.edges(self.passable, self.options["diagonal"], layer_cost, self.heights,
                                 self.options.get("max_climb"), self.avoided, self.avoid_cost)
        self.cells = [(int(x), int(y)) for y, x in np.argwhere(self.passable)]

    def entering(self):
        """The cells a unit may end up on (standable and not avoided-and-blocked)."""
        if self.avoided is None or self.avoid_cost is not None:
            return list(self.cells)
        return [c for c in self.cells if not self.avoided[c[1], c[0]]]


def _cases(seed, count, **kwargs):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        case = Case(rng, **kwargs)
        if case.cells:
            yield rng, case


# -- reachable --------------------------------------------------------------------------


def test_reachable_matches_dijkstra_on_random_grids():
    for rng, case in _cases(1, 150):
        start = case.cells[int(rng.integers(len(case.cells)))]
        budget = float(rng.choice([0.0, 1.0, 2.5, 4.0, 7.0, 30.0]))
        cells, costs = reachable(case.map, start, budget, case.unit, **case.options)
        expected = {c: d for c, d in naive.costs_from(case.graph, start).items() if d <= budget + 1e-9}
        got = {tuple(c): float(d) for c, d in zip(cells.tolist(), costs.tolist())}
        assert set(got) == set(expected)
        for cell, d in expected.items():
            assert got[cell] == pytest.approx(d, rel=1e-6)
        assert tuple(cells[0]) == start and costs[0] == 0.0
        assert np.all(np.diff(costs) >= 0), "cheapest first"
        assert cells.dtype == np.int32 and costs.dtype == np.float32


def test_reachable_snaps_a_blocked_start_and_refuses_it_without_snap():
    m = GridMap.from_ascii("""
        ....
        .##.
        ....
    """)
    cells, costs = reachable(m, (1, 1), 1)
    assert tuple(cells[0]) == (1, 0) and costs[0] == 0
    with pytest.raises(StartBlockedError):
        reachable(m, (1, 1), 1, snap=False)
    with pytest.raises(RequestError) as info:
        reachable(m, (0, 0), None)
    assert info.value.at == "budget"
    with pytest.raises(RequestError) as info:
        reachable(m, (0, 0), -1)
    assert info.value.at == "budget"


def test_reachable_from_an_avoided_cell_may_leave_it():
    m = GridMap(np.ones((3, 5), dtype=bool))
    cells, _ = reachable(m, (0, 1), 2, avoid={"cells": [(0, 1), (1, 1)]}, diagonal="never")
    got = set(map(tuple, cells.tolist()))
    assert (0, 1) in got and (1, 1) not in got and (0, 0) in got and (1, 0) in got


# -- distance fields ------------------------------------------------------------------


def _expected_field(case, goals):
    expected = np.full(case.passable.shape, np.inf)
    for (x, y), d in naive.costs_to(case.graph, goals).items():
        expected[y, x] = d
    return expected


def test_distance_field_matches_reverse_dijkstra_on_random_grids():
    for rng, case in _cases(2, 150):
        ends = case.entering()
        if not ends:
            continue
        goals = [ends[int(i)] for i in rng.integers(len(ends), size=int(rng.integers(1, 4)))]
        got = distance_field(case.map, goals, case.unit, **case.options)
        assert got.dtype == np.float32 and got.shape == case.passable.shape
        expected = _expected_field(case, goals)
        assert np.array_equal(np.isinf(got), np.isinf(expected)), (goals, case.options)
        finite = np.isfinite(expected)
        assert np.allclose(got[finite], expected[finite], rtol=1e-6)


def test_the_field_is_the_cheapest_find_path_from_every_cell():
    for rng, case in _cases(3, 40):
        goals = [case.cells[int(i)] for i in rng.integers(len(case.cells), size=int(rng.integers(1, 3)))]
        got = distance_field(case.map, goals, case.unit, **case.options)
        for x, y in case.cells:
            costs = [find_path(case.map, (x, y), goal, case.unit, algorithm="astar", **case.options)
                     for goal in goals]
            best = min((r.cost for r in costs if r.status == "found"), default=math.inf)
            assert got[y, x] == pytest.approx(best, rel=1e-6), ((x, y), goals, case.options)


def test_region_and_max_cost_are_windows_of_the_whole_field():
    for rng, case in _cases(4, 60, avoid=False):
        goals = [case.cells[int(rng.integers(len(case.cells)))]]
        height, width = case.passable.shape
        whole = distance_field(case.map, goals, case.unit, **case.options)
        x, y = int(rng.integers(width)), int(rng.integers(height))
        w, h = int(rng.integers(1, width - x + 1)), int(rng.integers(1, height - y + 1))
        window = distance_field(case.map, goals, case.unit, region=(x, y, w, h), **case.options)
        assert np.array_equal(window, whole[y:y + h, x:x + w])
        bounded = distance_field(case.map, goals, case.unit, max_cost=3.0, **case.options)
        assert np.array_equal(bounded, np.where(whole <= 3.0 + 1e-9, whole, np.inf))


def test_a_steep_cost_table_takes_the_heap_and_agrees():
    rng = np.random.default_rng(5)
    walkable = naive.random_grid(rng, 12, 10, 0.2)
    cost = rng.choice([1.0, 900.0, 2000.0], size=(10, 12))
    m = GridMap(walkable, cost)
    passable = m.layer(1).passable
    goal = tuple(int(v) for v in np.argwhere(passable)[0][::-1])
    got = distance_field(m, [goal])
    expected = np.full(passable.shape, np.inf)
    for (x, y), d in naive.costs_to(naive.edges(passable, cost=m.cost), [goal]).items():
        expected[y, x] = d
    assert np.allclose(got, expected, rtol=1e-6) and np.array_equal(np.isinf(got), np.isinf(expected))


def test_field_goals_snap_and_refuse_without_snap():
    m = GridMap.from_ascii("""
        .....
        .###.
        .....
    """)
    field = distance_field(m, [(2, 1)], diagonal="never")
    assert field[0, 2] == 0.0  # the nearest standable cell (first found among the nearest)
    with pytest.raises(GoalBlockedError) as info:
        distance_field(m, [(0, 0), (2, 1)], snap=False)
    assert info.value.at == "goals[1]"
    with pytest.raises(OutOfBoundsError) as info:
        distance_field(m, [(0, 0), (9, 1)])
    assert info.value.at == "goals[1]"
    with pytest.raises(OutOfBoundsError) as info:
        distance_field(m, [(0, 0)], region=(3, 0, 3, 1))
    assert info.value.at == "region"


# -- steering -------------------------------------------------------------------------


def test_every_step_goes_downhill_by_exactly_its_cost():
    for rng, case in _cases(6, 120):
        ends = case.entering()
        if not ends:
            continue
        goals = [ends[int(i)] for i in rng.integers(len(ends), size=int(rng.integers(1, 3)))]
        field = _expected_field(case, goals)
        moves = {}
        for a, b, w in case.graph:
            moves[(a, b)] = w
        positions = np.array(case.cells, dtype=np.float64) + rng.uniform(0, 0.99, size=(len(case.cells), 2))
        steps, remaining = next_steps(case.map, goals, case.unit, positions, **case.options)
        for (x, y), step, left in zip(case.cells, steps.tolist(), remaining.tolist()):
            here = field[y, x]
            assert left == pytest.approx(here, rel=1e-6) or (math.isinf(left) and math.isinf(here))
            step = (int(step[0]), int(step[1]))
            if here == 0 or math.isinf(here):
                assert step == (x, y)
                continue
            w = moves.get(((x, y), step))
            assert w is not None, "a legal move"
            assert field[step[1], step[0]] < here
            assert field[step[1], step[0]] + w == pytest.approx(here, rel=1e-9)


def test_line_of_sight_lookahead_heads_along_the_descent_for_what_it_sees():
    from pathserver.core.lines import segment_clear
    from pathserver.core.status import DIAGONAL_ALWAYS, DIAGONAL_NEVER, DIAGONAL_NO_CORNER_CUTTING

    codes = {"no_corner_cutting": DIAGONAL_NO_CORNER_CUTTING, "never": DIAGONAL_NEVER, "always": DIAGONAL_ALWAYS}
    for rng, case in _cases(7, 80, heights=False):
        goals = [case.cells[int(rng.integers(len(case.cells)))]]
        cells = np.array(case.cells, dtype=np.float64)
        near, _ = next_steps(case.map, goals, case.unit, cells, **case.options)
        far, remaining = next_steps(case.map, goals, case.unit, cells, lookahead="los", **case.options)
        step_of = {c: tuple(int(v) for v in s) for c, s in zip(case.cells, near.tolist())}
        # What the unit sees through: the cells it may enter, and their costs.
        grid = case.passable.copy()
        layer = case.map.layer(case.unit)
        cost = layer.cost.copy()
        if case.avoided is not None:
            if case.avoid_cost is None:
                grid[case.avoided] = 0
            else:
                cost = np.where(case.avoided, np.maximum(cost, case.avoid_cost), cost)
        table = np.unique(cost)
        index = np.searchsorted(table, cost).astype(np.uint8)
        no_heights = np.zeros((1, 1), dtype=np.float32)
        for (x, y), target, left in zip(case.cells, far.tolist(), remaining.tolist()):
            target = (int(target[0]), int(target[1]))
            chain = [(x, y)]
            while len(chain) < 66 and step_of.get(chain[-1], chain[-1]) != chain[-1]:
                chain.append(step_of[chain[-1]])
            assert target in chain, "on the descent"
            if not math.isfinite(left) or left == 0:
                assert target == (x, y)
                continue
            at = chain.index(target)
            assert at >= 1
            if at > 1:
                dearest = max(cost[cy, cx] for cx, cy in chain[:at + 1])
                assert segment_clear(grid, index, table, 0, dearest, no_heights, 0, 0.0,
                                     codes[case.options["diagonal"]], x, y, *target), "in clear sight"


def test_a_repeated_call_looks_the_field_up():
    m = GridMap(np.ones((40, 40), dtype=bool))
    units = np.random.default_rng(8).uniform(0, 40, size=(500, 2))
    first = next_steps(m, [(5, 5)], 2, units)
    assert len(m.layers.fields()) == 1
    second = next_steps(m, [(5, 5)], 2, units)
    assert len(m.layers.fields()) == 1
    assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])
    for goal in range(12):
        next_steps(m, [(goal, 0)], 2, units)
    assert len(m.layers.fields()) == 8, "bounded"
    edited = m.edit(cells=[(6, 5)], solid=True)
    assert edited.layers.fields() == [], "a new generation starts afresh"


def test_next_steps_checks_positions():
    m = GridMap(np.ones((5, 5), dtype=bool))
    with pytest.raises(OutOfBoundsError) as info:
        next_steps(m, [(0, 0)], 1, [(1, 1), (5.5, 0)])
    assert info.value.at == "positions[1]"
    with pytest.raises(RequestError) as info:
        next_steps(m, [(0, 0)], 1, [(1, 1), (np.nan, 0)])
    assert info.value.code == "non_finite"
    with pytest.raises(RequestError) as info:
        next_steps(m, [(0, 0)], 1, [(1, 1)], lookahead="far")
    assert info.value.at == "lookahead"


# -- many goals -------------------------------------------------------------------------


def test_many_goals_find_the_cheapest_single_goal_answer():
    for rng, case in _cases(9, 150):
        start = case.cells[int(rng.integers(len(case.cells)))]
        height, width = case.passable.shape
        goals = [tuple(int(v) for v in rng.integers(0, (width, height))) for _ in range(int(rng.integers(2, 30)))]
        options = dict(case.options)
        r = find_path(case.map, start, goals=goals, unit_size=case.unit, **options)
        singles = [find_path(case.map, start, goal, case.unit, **options) for goal in goals]
        found = [s.cost for s in singles if s.status == "found"]
        if not found:
            assert r.status == "no_path" and r.goal_index is None
            continue
        assert r.status == "found"
        assert r.cost == pytest.approx(min(found), rel=1e-9)
        assert singles[r.goal_index].status == "found"
        assert singles[r.goal_index].cost == pytest.approx(r.cost, rel=1e-9)
        assert r.goal == singles[r.goal_index].goal
        path = [tuple(p) for p in r.path.tolist()]
        assert path[0] == r.start and path[-1] == r.goal


def test_many_goals_with_more_goals_than_boxes_stay_exact():
    rng = np.random.default_rng(10)
    walkable = naive.random_grid(rng, 60, 50, 0.3)
    m = GridMap(walkable)
    cells = np.argwhere(m.layer(1).passable)[:, ::-1]
    for _ in range(10):
        start = tuple(cells[int(rng.integers(len(cells)))].tolist())
        goals = [tuple(c) for c in cells[rng.integers(len(cells), size=200)].tolist()]
        r = find_path(m, start, goals=goals, line_of_sight=False)
        expected = naive.costs_from(naive.edges(m.layer(1).passable), start)
        best = min(expected.get(g, math.inf) for g in goals)
        if math.isinf(best):
            assert r.status == "no_path"
        else:
            assert r.cost == pytest.approx(best, rel=1e-9)
            assert expected[tuple(goals[r.goal_index])] == pytest.approx(best, rel=1e-9)


def test_many_goals_run_jps_plus_back_from_all_goals_where_one_goal_would():
    # A map big enough for a jump table: JPS+ from every goal at once, against Dijkstra
    # from the start (units 1 and 2, goals snapped off walls, in other components, repeated).
    rng = np.random.default_rng(11)
    used = 0
    for trial in range(6):
        m = GridMap(naive.random_grid(rng, 140, 130, float(rng.uniform(0.05, 0.3))))
        for unit in (1, 2):
            passable = m.layer(unit).passable
            cells = np.argwhere(passable)[:, ::-1]
            find_path(m, tuple(cells[0].tolist()), tuple(cells[-1].tolist()), unit)
            assert m.layer(unit).wait_jump_table(60)
            expected_from = {}
            for _ in range(4):
                start = tuple(cells[int(rng.integers(len(cells)))].tolist())
                goals = [tuple(c) for c in cells[rng.integers(len(cells), size=int(rng.integers(2, 40)))].tolist()]
                goals += [goals[0], (int(rng.integers(140)), int(rng.integers(130)))]  # a repeat, maybe a wall
                smooth = str(rng.choice(["none", "corners", "los"]))
                r = find_path(m, start, goals=goals, unit_size=unit, line_of_sight=bool(rng.integers(2)),
                              smooth=smooth)
                a = find_path(m, start, goals=goals, unit_size=unit, algorithm="astar", smooth=smooth)
                if start not in expected_from:
                    expected_from[start] = naive.costs_from(naive.edges(passable), start)
                expected = expected_from[start]
                assert r.status == a.status
                if r.status != "found":
                    continue
                assert r.algorithm == "jps+" and r.cost == pytest.approx(a.cost, rel=1e-9)
                assert expected[r.goal] == pytest.approx(r.cost, rel=1e-9)
                assert r.goal == a.goal or expected[a.goal] == pytest.approx(r.cost, rel=1e-9)
                assert tuple(r.path[0]) == r.start and tuple(r.path[-1]) == r.goal
                if smooth == "none":
                    assert naive.path_is_valid(passable, [tuple(p) for p in r.path.tolist()])
                used += r.expanded > 0
    assert used >= 20


def test_goals_in_other_components_are_skipped_and_partial_aims_at_the_nearest():
    m = GridMap.from_ascii("""
        ..#....
        ..#....
        ..#....
    """)
    r = find_path(m, (0, 0), goals=[(6, 2), (1, 2), (4, 0)])
    assert r.goal_index == 1 and r.goal == (1, 2)
    r = find_path(m, (0, 0), goals=[(6, 2), (4, 0)])
    assert r.status == "no_path" and r.goal_index is None and r.expanded == 0
    r = find_path(m, (0, 0), goals=[(6, 2), (4, 1)], allow_partial=True)
    assert r.status == "partial" and r.goal_index == 1 and tuple(r.path[-1]) == (1, 1)
    with pytest.raises(GoalBlockedError) as info:
        find_path(m, (0, 0), goals=[(1, 1), (2, 1)], snap=False)
    assert info.value.at == "goals[1]"
    with pytest.raises(RequestError) as info:
        find_path(m, (0, 0), (1, 1), goals=[(1, 1)])
    assert info.value.at == "goals"
    with pytest.raises(TooLargeError):
        find_path(m, (0, 0), goals=[(1, 1)] * 4097)
    with pytest.raises(RequestError) as info:
        find_path(m, (0, 0), goals=[(1, 1), (1, 1)], algorithm="jps")
    assert info.value.at == "algorithm"


# -- avoided cells --------------------------------------------------------------------


def test_find_path_with_avoided_cells_matches_dijkstra():
    seen = 0
    for rng, case in _cases(11, 200):
        if "avoid" not in case.options:
            continue
        seen += 1
        start = case.cells[int(rng.integers(len(case.cells)))]
        ends = case.entering()
        goal = ends[int(rng.integers(len(ends)))] if ends else start
        expected = naive.costs_from(case.graph, start).get(goal, math.inf)
        for smooth in ("none", "los"):
            r = find_path(case.map, start, goal, case.unit, smooth=smooth, **case.options)
            if math.isinf(expected):
                assert r.status == "no_path"
                continue
            assert r.status == "found" and r.cost == pytest.approx(expected, rel=1e-9)
            if smooth == "none":
                moves = {(a, b) for a, b, _ in case.graph}
                path = [tuple(p) for p in r.path.tolist()]
                assert all((a, b) in moves for a, b in zip(path, path[1:]))
    assert seen > 50


def test_avoid_leaves_the_map_and_its_caches_untouched():
    m = GridMap(np.ones((20, 30), dtype=bool))
    before = find_path(m, (0, 10), (29, 10), 2, smooth="none")
    cells = m.layer(2).cells.copy()
    wall = {"rects": [(15, 0, 1, 18)]}
    around = find_path(m, (0, 10), (29, 10), 2, avoid=wall)
    assert around.cost > before.cost
    assert np.array_equal(m.layer(2).cells, cells)
    again = find_path(m, (0, 10), (29, 10), 2, smooth="none")
    assert again.cost == before.cost and np.array_equal(again.path, before.path)
    assert distance_field(m, [(29, 10)], 2, avoid=wall)[10, 0] == pytest.approx(around.cost)
    assert distance_field(m, [(29, 10)], 2)[10, 0] == pytest.approx(before.cost)


def test_a_goal_on_avoided_cells_snaps_off_them_and_the_start_may_leave():
    m = GridMap(np.ones((3, 6), dtype=bool))
    r = find_path(m, (0, 1), (5, 1), avoid={"cells": [(5, 1), (0, 1)]})
    assert r.status == "found" and r.goal_snapped and r.goal != (5, 1)
    with pytest.raises(GoalBlockedError):
        find_path(m, (0, 1), (5, 1), avoid={"cells": [(5, 1)]}, snap=False)
    dear = find_path(m, (0, 1), (5, 1), avoid={"cells": [(5, 1)]}, avoid_cost=10.0, diagonal="never")
    assert dear.cost == 4 + 10.0


def test_avoid_option_errors():
    m = GridMap(np.ones((4, 4), dtype=bool))
    for avoid, at in ((5, "avoid"), ({"cell": []}, "avoid.cell"), ({"cells": [(1,)]}, "avoid.cells[0]"),
                      ({"rects": [(0, 0, 0, 1)]}, "avoid.rects[0]"), ({"cells": [(1, True)]}, "avoid.cells[0][1]")):
        for call in (lambda: find_path(m, (0, 0), (3, 3), avoid=avoid), lambda: reachable(m, (0, 0), 3, avoid=avoid),
                     lambda: distance_field(m, [(0, 0)], avoid=avoid)):
            with pytest.raises(RequestError) as info:
                call()
            assert info.value.at == at
    with pytest.raises(RequestError) as info:
        find_path(m, (0, 0), (3, 3), avoid={"cells": [(1, 1)]}, avoid_cost=0.5)
    assert info.value.at == "avoid_cost"
    with pytest.raises(RequestError) as info:
        find_path(m, (0, 0), (3, 3), avoid={"cells": [(1, 1)]}, algorithm="jps")
    assert info.value.at == "algorithm"


# -- traversal rules --------------------------------------------------------------------

TAGS = {"water": 1, "forest": 2, "road": 3}


def _tagged(rng, width, height):
    walkable = naive.random_grid(rng, width, height, 0.15)
    tags = rng.choice([0, 0, 1, 2, 3], size=(height, width)).astype(np.uint8)
    cost = rng.choice([1.0, 2.0], size=(height, width))
    return GridMap(walkable, cost, tags=tags, tag_names=TAGS,
                   classes={"boat": {"forest": None, "road": None}, "walker": {"water": None, "forest": 3.0}})


def test_traversal_rules_match_dijkstra_on_the_map_they_make():
    rng = np.random.default_rng(12)
    for _ in range(60):
        m = _tagged(rng, int(rng.integers(4, 14)), int(rng.integers(4, 14)))
        rules = [{"water": None}, {"forest": 3.0, "road": 1.0}, "walker", "boat", {"water": None, "road": 2.5}][
            int(rng.integers(5))]
        named = m.classes[rules] if isinstance(rules, str) else rules
        blocked = np.isin(m.tags, [TAGS[t] for t, v in named.items() if v is None])
        multiplier = np.ones(256)
        for t, v in named.items():
            if v is not None:
                multiplier[TAGS[t]] = v
        unit = UNITS[int(rng.integers(len(UNITS)))]
        uw, uh = _size(unit)
        walkable = m.walkable & ~blocked
        passable = naive.passable_for_unit(walkable, uw, uh)
        assert np.array_equal(m.layer(unit, traversal=rules).passable, passable)
        cost = naive.footprint_max(np.where(walkable, m.cost * multiplier[m.tags], 1.0), uw, uh)
        cells = [(int(x), int(y)) for y, x in np.argwhere(passable)]
        if len(cells) < 2:
            continue
        start, goal = (cells[int(i)] for i in rng.choice(len(cells), 2, replace=False))
        expected = naive.dijkstra(passable, start, goal, cost=cost)
        r = find_path(m, start, goal, unit, traversal=rules)
        assert r.cost == pytest.approx(expected, rel=1e-9) if math.isfinite(expected) else r.status == "no_path"
        field = distance_field(m, [goal], unit, traversal=rules)
        assert field[start[1], start[0]] == pytest.approx(expected, rel=1e-6) or (
            math.isinf(expected) and math.isinf(field[start[1], start[0]]))


def test_traversal_layers_are_cached_per_rule_set_and_bounded():
    m = _tagged(np.random.default_rng(13), 20, 20)
    find_path(m, (0, 0), (19, 19), traversal="walker")
    find_path(m, (0, 0), (19, 19), traversal={"forest": 3.0, "water": None})  # the same rules
    keys = m.cached_sizes()
    assert len([k for k in keys if len(k) == 3]) == 1
    for multiplier in range(2, 12):
        find_path(m, (0, 0), (19, 19), traversal={"road": float(multiplier)})
    assert len(m.cached_sizes()) <= m.layers.limit
    assert find_path(m, (0, 0), (19, 19), traversal={"road": 1.0}).cost == find_path(m, (0, 0), (19, 19)).cost
    edited = m.edit(cells=[(5, 5)], solid=True)
    assert edited.classes == m.classes and np.array_equal(edited.tags, m.tags)


def test_traversal_errors_name_the_class_or_tag():
    m = _tagged(np.random.default_rng(14), 6, 6)
    for traversal, at in (("ship", "traversal"), ({"lava": None}, "traversal.lava"), ({"water": 0.5}, "traversal.water"),
                          (3, "traversal"), ("", "traversal")):
        with pytest.raises(RequestError) as info:
            find_path(m, (0, 0), (5, 5), traversal=traversal)
        assert info.value.at == at, traversal
    plain = GridMap(np.ones((3, 3), dtype=bool))
    with pytest.raises(RequestError):
        reachable(plain, (0, 0), 2, traversal="boat")


# -- would placing this cut the way? ----------------------------------------------------


def test_check_block_matches_a_flood_fill_on_random_grids():
    rng = np.random.default_rng(15)
    for _ in range(200):
        width, height = int(rng.integers(3, 40)), int(rng.integers(3, 40))
        m = GridMap(naive.random_grid(rng, width, height, float(rng.uniform(0.0, 0.4))))
        unit = UNITS[int(rng.integers(len(UNITS)))]
        uw, uh = _size(unit)
        diagonal = DIAGONALS[int(rng.integers(3))]
        before = naive.passable_for_unit(m.walkable, uw, uh)
        cells = [tuple(int(v) for v in rng.integers(0, (width, height))) for _ in range(int(rng.integers(0, 8)))]
        rects = [(int(rng.integers(-2, width)), int(rng.integers(-2, height)), int(rng.integers(1, 6)),
                  int(rng.integers(1, 6))) for _ in range(int(rng.integers(0, 3)))]
        solid = naive.covered((height, width), cells, rects)
        after = naive.passable_for_unit(m.walkable & ~solid, uw, uh)
        standing = [(int(x), int(y)) for y, x in np.argwhere(before)]
        if not standing:
            continue
        points = [standing[int(i)] for i in rng.integers(len(standing), size=int(rng.integers(1, 10)))]
        expected = naive.cut_pairs(before, after, points, eight=diagonal == "always")
        assert check_block(m, rects, cells, unit, points, diagonal=diagonal) == expected, (cells, rects, unit)


def test_check_block_after_edits_updates_the_pieces_it_built_before(monkeypatch):
    # Each generation's pieces come from the one before where that built them: equal to
    # a fresh build's, and the answers to a flood fill's.
    from pathserver.grid import layers

    updates = []
    update = layers.update_pieces
    monkeypatch.setattr(layers, "update_pieces", lambda *args: updates.append(1) or update(*args))
    rng = np.random.default_rng(16)
    for _ in range(20):
        width, height = int(rng.integers(3, 50)), int(rng.integers(3, 50))
        m = GridMap(naive.random_grid(rng, width, height, float(rng.uniform(0.0, 0.3))))
        unit = UNITS[int(rng.integers(len(UNITS)))]
        uw, uh = _size(unit)
        diagonal = DIAGONALS[int(rng.integers(3))]
        eight = 1 if diagonal == "always" else 0
        for _ in range(4):
            standing = [(int(x), int(y)) for y, x in np.argwhere(naive.passable_for_unit(m.walkable, uw, uh))]
            if standing:
                points = [standing[int(i)] for i in rng.integers(len(standing), size=4)]
                cells = [tuple(int(v) for v in rng.integers(0, (width, height))) for _ in range(3)]
                before = naive.passable_for_unit(m.walkable, uw, uh)
                solid = naive.covered((height, width), cells)
                after = naive.passable_for_unit(m.walkable & ~solid, uw, uh)
                expected = naive.cut_pairs(before, after, points, eight=bool(eight))
                assert check_block(m, cells=cells, unit_size=unit, points=points, diagonal=diagonal) == expected
                layer = m.layer(unit)
                fresh = GridMap(m.walkable).layer(unit).pieces(eight)
                assert all(np.array_equal(a, b) for a, b in zip(layer.pieces(eight), fresh))
            x, y = (int(v) for v in rng.integers(0, (width, height)))
            m = m.edit(rects=[(x, y, int(rng.integers(1, 4)), int(rng.integers(1, 4)))], solid=bool(rng.integers(2)))
    assert len(updates) >= 40


def test_check_block_on_a_corridor():
    m = GridMap.from_ascii("""
        ..........
        ####.#####
        ..........
    """)
    points = [(0, 0), (9, 0), (0, 2), (9, 2)]
    assert check_block(m, cells=[(4, 1)], points=points) == [(0, 2), (0, 3), (1, 2), (1, 3)]
    # Row 0 is cut in two, and the gap below leads up into the cut cell only.
    assert check_block(m, cells=[(4, 0)], points=points) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3)]
    assert check_block(m, cells=[(0, 0)], points=points) == [(0, 1), (0, 2), (0, 3)], "a covered point is cut off"
    assert check_block(m, cells=[(7, 0)], points=points, unit_size=1) == [(0, 1), (1, 2), (1, 3)]
    assert check_block(m, rects=[(0, 2, 10, 1)], points=[(0, 0), (9, 0)]) == []
    # A 2x1 unit no longer fits through the 1-wide gap anyway: nothing to cut.
    assert check_block(m, cells=[(4, 1)], unit_size=(2, 1), points=[(0, 0), (0, 2)]) == []
    assert m.layer(1).cells[1, 4] != 0, "the map is unchanged"


def test_check_block_snaps_points():
    m = GridMap.from_ascii("""
        .....
        ##.##
        .....
    """)
    assert check_block(m, cells=[(2, 1)], points=[(0, 1), (0, 2)]) == [(0, 1)]
    assert check_block(m, cells=[(2, 1)], points=[(0, 1), (0, 2)], snap=False) == []


# -- more behaviours ----------------------------------------------------------------------


def test_avoid_on_many_threads_gives_each_request_its_own_blockers():
    from pathserver import find_paths

    m = GridMap(np.ones((30, 40), dtype=bool))
    walls = [{"rects": [(20, 0, 1, 29)]}, {"rects": [(20, 1, 1, 29)]}, None]
    starts = [(0, 15)] * 60
    goals = [(39, 15)] * 60
    expected = {i: find_path(m, (0, 15), (39, 15), avoid=walls[i]).cost for i in range(3)}
    for i, wall in enumerate(walls):
        results = find_paths(m, starts, goals, avoid=wall)
        assert {r.cost for r in results} == {expected[i]}
    assert expected[0] != expected[1] != expected[2]
    assert find_path(m, (0, 15), (39, 15)).cost == 39.0


def test_many_goals_with_a_budget_give_a_partial_path_or_the_search_limit():
    from pathserver.errors import SearchLimitError

    m = GridMap(np.ones((40, 40), dtype=bool))
    goals = [(39, 39), (39, 0)]
    with pytest.raises(SearchLimitError):
        find_path(m, (0, 20), goals=goals, max_expansions=5, line_of_sight=False)
    r = find_path(m, (0, 20), goals=goals, max_expansions=5, allow_partial=True, line_of_sight=False)
    assert r.status == "partial" and tuple(r.path[0]) == (0, 20) and r.goal_index in (0, 1)
    moves = {(a, b) for a, b, _ in naive.edges(m.layer(1).passable)}
    path = [tuple(p) for p in r.path.tolist()]
    assert all((a, b) in moves for a, b in zip(path, path[1:]))


def test_a_units_class_holds_for_every_query():
    m = _tagged(np.random.default_rng(16), 16, 16)
    boat = m.layer(1, traversal="boat").passable
    cells, _ = reachable(m, tuple(np.argwhere(boat)[0][::-1].tolist()), 50, traversal="boat")
    assert all(boat[y, x] for x, y in cells.tolist())
    field = distance_field(m, [tuple(cells[0].tolist())], traversal="boat")
    assert np.isinf(field[boat == 0]).all()
    points = [tuple(c) for c in cells[:5].tolist()]
    assert check_block(m, cells=[], points=points, traversal="boat") == []


def test_a_steering_field_goes_with_its_layer():
    m = GridMap(np.ones((20, 20), dtype=bool), cache_sizes=2)
    next_steps(m, [(0, 0)], 1, [(5, 5)])
    next_steps(m, [(0, 0)], 2, [(5, 5)])
    assert len(m.layers.fields()) == 2
    m.layer(3)  # evicts unit size 1, and its field
    assert len(m.layers.fields()) == 1


def test_numpy_arrays_of_goals_and_avoided_cells_count_as_the_lists_they_hold():
    m = GridMap(np.ones((12, 12), dtype=bool))
    goals = np.array([[11, 11], [0, 11]])
    avoid = {"cells": np.array([[5, 5], [5, 6]]), "rects": np.array([[2.0, 2.0, 3.0, 1.0]])}
    listed = {"cells": [[5, 5], [5, 6]], "rects": [[2.0, 2.0, 3.0, 1.0]]}
    a = find_path(m, (0, 0), goals=goals, avoid=avoid)
    b = find_path(m, (0, 0), goals=goals.tolist(), avoid=listed)
    assert (a.cost, a.goal_index) == (b.cost, b.goal_index)
    assert np.array_equal(distance_field(m, goals, avoid=avoid), distance_field(m, goals.tolist(), avoid=listed))
    steps = next_steps(m, goals, 1, [(3.5, 3.5)], avoid=avoid)
    assert np.array_equal(steps[0], next_steps(m, goals.tolist(), 1, [(3.5, 3.5)], avoid=listed)[0])
    for bad, at in ((np.array([[1.0, np.nan]]), "goals[0][1]"), (np.zeros((0, 2)), "goals"),
                    (np.array([[1, 2, 3, 4]]), "goals[0]"), (np.array([[1, 2, 3]]), "goals[0][2]")):
        with pytest.raises(RequestError) as info:
            distance_field(m, bad)
        assert info.value.at == at
    with pytest.raises(RequestError) as info:
        find_path(m, (0, 0), (5, 5), avoid={"rects": np.array([[1, 1, 0, 2]])})
    assert info.value.at == "avoid.rects[0]"
