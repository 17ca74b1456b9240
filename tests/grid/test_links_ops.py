"""Every op but the one-goal path on maps with floors and links, against the reference
(tests/naive_links.py): many goals, avoided cells (on link ends too), avoid_cost, partial
paths, snapping, the distance field, steering, reachable with avoid, check_block, and
edits and new links. Random maps of 1 to 3 floors, one-way and two-way links of costs 0
to 20, unit sizes 1 to 3, link tags under traversal rules."""

import math

import numpy as np
import pytest

import naive
import naive_links
from pathserver import GridMap
from pathserver.errors import GoalBlockedError, OutOfBoundsError, SearchLimitError, StartBlockedError
from pathserver.grid.queries import check_block, distance_field, next_steps, reachable
from pathserver.grid.search import find_path, find_paths

RULES = [None, {"ladder": None}, {"door": 2.0}, {"ladder": 3.0, "door": None}]


def world(rng, floors, height=8, width=10, links=10):
    walkable, cost, wired = naive_links.random_floors(rng, floors, height, width, links)
    tags = np.zeros(walkable.shape, dtype=np.uint8)
    gridmap = GridMap(walkable, cost, tags=tags, tag_names={"ladder": 1, "door": 2}, floors=floors, links=wired)
    return walkable, cost, wired, gridmap


def standable(passable):
    return [(int(x), int(y), f) for f, p in enumerate(passable) for y, x in np.argwhere(p)]


def triples(points, floors):
    return [tuple(p) if floors > 1 else (*p, 0) for p in np.asarray(points).tolist()]


def pick(rng, points, k):
    return [points[i] for i in rng.choice(len(points), min(k, len(points)), replace=False)]


def link_ends(links):
    return [naive_links.point(link[end]) for link in links for end in ("from", "to")]


def cases(seed, floors, count):
    """``count`` random cases: (rng, walkable, cost, links, gridmap, unit, rules,
    passable, costs, points) with at least a few standable points."""
    rng = np.random.default_rng(seed)
    made = 0
    while made < count:
        walkable, cost, links, gridmap = world(rng, floors)
        unit = 1 + made % 3
        passable, costs = naive_links.floors_for_unit(walkable, cost, unit)
        points = standable(passable)
        if len(points) < 12:
            continue
        yield rng, walkable, cost, links, gridmap, unit, RULES[made % len(RULES)], passable, costs, points
        made += 1


@pytest.mark.parametrize("floors", [1, 2, 3])
def test_many_goals_and_avoid_are_exact(floors):
    for rng, _, _, links, gridmap, unit, rules, passable, costs, points in cases(floors, floors, 5):
        ends = [p for p in link_ends(links) if passable[p[2]][p[1], p[0]]]
        for trial in range(6):
            start = pick(rng, points, 1)[0]
            avoid_cells = [tuple(p) for p in pick(rng, ends, min(2, len(ends)))] + [tuple(pick(rng, points, 1)[0])]
            avoid_cost = 4.0 if trial % 3 == 2 else None
            avoided = naive_links.avoided_anchors(passable, unit, avoid_cells)
            free = [p for p in points if not avoided[p[2]][p[1], p[0]] and p != start]
            if not free:
                continue
            goals = pick(rng, free, min(3, len(free)))
            moves = naive_links.graph(passable, costs, links, rules, avoided=avoided, avoid_cost=avoid_cost)
            reach = naive.costs_from(moves, start)
            expected = min((reach.get(g, math.inf) for g in goals), default=math.inf)
            avoid = {"cells": [list(c) for c in avoid_cells]}
            result = find_path(gridmap, start, goals=goals, unit_size=unit, smooth="none", traversal=rules,
                               avoid=avoid, avoid_cost=avoid_cost)
            assert result.found == math.isfinite(expected), (start, goals, expected)
            if not result.found:
                assert result.goal_index is None
                continue
            assert result.cost == pytest.approx(expected)
            assert reach[goals[result.goal_index]] == pytest.approx(expected)
            path = triples(result.path, gridmap.floors)
            assert path[0] == start and path[-1] == goals[result.goal_index]
            steps = {int(i): int(k) for i, k in result.links.tolist()}
            assert naive_links.path_is_valid(passable, links, path, steps, rules)
            if avoid_cost is None:
                entered = path[1:]
                assert not any(avoided[p[2]][p[1], p[0]] for p in entered)
            # One goal the same way, and the batch as find_path.
            one = find_path(gridmap, start, goals[0], unit, smooth="none", traversal=rules, avoid=avoid,
                            avoid_cost=avoid_cost)
            assert one.found == math.isfinite(reach.get(goals[0], math.inf))
            if one.found:
                assert one.cost == pytest.approx(reach[goals[0]])
            batch = find_paths(gridmap, [start, start], [goals[0], goals[-1]], unit, smooth="none",
                               traversal=rules, avoid=avoid, avoid_cost=avoid_cost)
            assert batch[0].cost == one.cost and batch[0].path.tolist() == one.path.tolist()


@pytest.mark.parametrize("floors", [1, 2])
def test_partial_paths_end_nearest_the_goal(floors):
    for rng, _, _, links, gridmap, unit, rules, passable, costs, points in cases(20 + floors, floors, 4):
        moves = naive_links.graph(passable, costs, links, rules)
        for _ in range(6):
            start, goal = pick(rng, points, 2)
            reach = naive.costs_from(moves, start)
            result = find_path(gridmap, start, goal, unit, smooth="none", traversal=rules, allow_partial=True)
            path = triples(result.path, gridmap.floors)
            if goal in reach:
                assert result.status == "found" and result.cost == pytest.approx(reach[goal])
                continue
            assert result.status == "partial"
            end = path[-1]
            assert naive_links.nearness(end, [goal]) == min(naive_links.nearness(p, [goal]) for p in reach)
            assert result.cost == pytest.approx(reach[end])
            steps = {int(i): int(k) for i, k in result.links.tolist()}
            assert naive_links.path_is_valid(passable, links, path, steps, rules)


def test_max_expansions_stops_the_search():
    gridmap = GridMap(np.ones((2, 8, 10), bool), floors=2, links=[{"from": [9, 7], "to": [0, 0, 1], "cost": 1}])
    start, goal = (0, 0, 0), (9, 7, 1)
    with pytest.raises(SearchLimitError):
        find_path(gridmap, start, goal, max_expansions=5)
    partial = find_path(gridmap, start, goal, max_expansions=5, allow_partial=True, smooth="none")
    assert partial.status == "partial" and len(partial.path) >= 1
    assert find_path(gridmap, start, goal, max_expansions=10_000).cost == pytest.approx(2 * (7 * math.sqrt(2) + 2) + 1)


def test_snapping_stays_on_the_floor():
    walkable = np.ones((2, 3, 5), bool)
    walkable[1, 1, 2] = False
    walkable[0, 1, 2] = False
    gridmap = GridMap(walkable, floors=2, links=[{"from": [0, 0], "to": [0, 0, 1], "cost": 1}])
    result = find_path(gridmap, (2, 1, 0), (2, 1, 1), smooth="none")
    assert result.found and result.start_snapped and result.goal_snapped
    assert result.start[2] == 0 and result.goal[2] == 1
    assert result.path[0].tolist()[2] == 0 and result.path[-1].tolist()[2] == 1
    with pytest.raises(StartBlockedError):
        find_path(gridmap, (2, 1, 0), (2, 1, 1), snap=False)
    with pytest.raises(GoalBlockedError):
        find_path(gridmap, (0, 1, 0), (2, 1, 1), snap=False)
    with pytest.raises(OutOfBoundsError) as error:
        find_path(gridmap, (0, 1, 2), (2, 1, 1))
    assert error.value.at == "start[2]"


@pytest.mark.parametrize("floors", [1, 2, 3])
def test_distance_field_is_exact(floors):
    for rng, walkable, _, links, gridmap, unit, rules, passable, costs, points in cases(40 + floors, floors, 4):
        ends = [p for p in link_ends(links) if passable[p[2]][p[1], p[0]]]
        avoid_cells = [tuple(pick(rng, ends, 1)[0])] if ends else []
        for avoid_cost in (None, 5.0):
            avoided = naive_links.avoided_anchors(passable, unit, avoid_cells)
            free = [p for p in points if not avoided[p[2]][p[1], p[0]]]
            if len(free) < 2:
                continue
            goals = pick(rng, free, 2)
            moves = naive_links.graph(passable, costs, links, rules, avoided=avoided, avoid_cost=avoid_cost)
            expected = naive.costs_to(moves, goals)
            got = distance_field(gridmap, goals, unit, traversal=rules, avoid={"cells": [list(c) for c in avoid_cells]},
                                 avoid_cost=avoid_cost)
            got = got.reshape(floors, *walkable.shape[1:])
            for f in range(floors):
                for y in range(walkable.shape[1]):
                    for x in range(walkable.shape[2]):
                        want = expected.get((x, y, f), math.inf)
                        assert got[f, y, x] == pytest.approx(want, rel=1e-5), ((x, y, f), want)
            # A region is the same window of every floor; max_cost bounds it.
            window = distance_field(gridmap, goals, unit, traversal=rules, region=(2, 1, 5, 4), max_cost=6.0,
                                    avoid={"cells": [list(c) for c in avoid_cells]}, avoid_cost=avoid_cost)
            window = window.reshape(floors, 4, 5)
            whole = np.where(got <= 6.0 + 1e-6, got, np.inf)[:, 1:5, 2:7]
            np.testing.assert_allclose(window, whole, rtol=1e-5)


@pytest.mark.parametrize("floors", [1, 2, 3])
def test_next_steps_follow_the_field_and_take_links(floors):
    for rng, walkable, _, links, gridmap, unit, rules, passable, costs, points in cases(50 + floors, floors, 6):
        ends = [p for p in link_ends(links) if passable[p[2]][p[1], p[0]]]
        avoid_cells = [tuple(p) for p in pick(rng, ends, 1)] if rng.random() < 0.5 else []
        avoided = naive_links.avoided_anchors(passable, unit, avoid_cells)
        goals = pick(rng, [p for p in points if not avoided[p[2]][p[1], p[0]]], 2)
        moves = naive_links.graph(passable, costs, links, rules, avoided=avoided)
        field = naive.costs_to(moves, goals)
        by_source: dict = {}
        for a, b, w in moves:
            by_source.setdefault(a, []).append((b, w))
        units = pick(rng, points, 12)
        given = [list(u) if floors > 1 else list(u[:2]) for u in units]
        avoid = {"cells": [list(c) for c in avoid_cells]}
        steps, remaining = next_steps(gridmap, goals, unit, given, traversal=rules, avoid=avoid)
        sighted, _ = next_steps(gridmap, goals, unit, given, traversal=rules, lookahead="los", avoid=avoid)
        for u, step, left, seen in zip(units, triples(steps.astype(int), floors), remaining.tolist(),
                                       triples(sighted.astype(int), floors)):
            want = field.get(u, math.inf)
            assert left == pytest.approx(want, rel=1e-5)
            if want == 0 or want == math.inf:
                assert step == u and seen == u
                continue
            # A step of an optimal way: a move (a link's, maybe) whose cost plus the rest is the value.
            assert any(b == step and w + field.get(b, math.inf) == pytest.approx(want, rel=1e-6)
                       for b, w in by_source[u]), (u, step)
            over_link = step[2] != u[2] or not any(b == step for b, _ in by_source[u] if b[2] == u[2]) or \
                abs(step[0] - u[0]) > 1 or abs(step[1] - u[1]) > 1
            if over_link:
                assert seen == step  # the lookahead never looks past a link
            else:
                assert seen[2] == u[2]


@pytest.mark.parametrize("floors", [1, 2])
def test_reachable_with_avoid_is_exact(floors):
    for rng, _, _, links, gridmap, unit, rules, passable, costs, points in cases(60 + floors, floors, 4):
        ends = [p for p in link_ends(links) if passable[p[2]][p[1], p[0]]]
        avoid_cells = [tuple(p) for p in pick(rng, ends, min(2, len(ends)))]
        start = pick(rng, points, 1)[0]
        for avoid_cost in (None, 3.0):
            avoided = naive_links.avoided_anchors(passable, unit, avoid_cells)
            moves = naive_links.graph(passable, costs, links, rules, avoided=avoided, avoid_cost=avoid_cost)
            expected = {p: c for p, c in naive.costs_from(moves, start).items() if c <= 9.0 + 1e-9}
            got = reachable(gridmap, start, 9.0, unit, traversal=rules, avoid={"cells": [list(c) for c in avoid_cells]},
                            avoid_cost=avoid_cost)
            cells = triples(got.cells, gridmap.floors)
            assert set(cells) == set(expected)
            for cell, cost in zip(cells, got.costs.tolist()):
                assert cost == pytest.approx(expected[cell], rel=1e-5)


@pytest.mark.parametrize("floors", [1, 2, 3])
def test_check_block_counts_links(floors):
    for rng, walkable, _, links, gridmap, unit, rules, passable, _, points in cases(70 + floors, floors, 5):
        for _ in range(3):
            spots = pick(rng, points, 5)
            place = pick(rng, points + link_ends(links), 3)
            rect = (int(rng.integers(0, 8)), int(rng.integers(0, 6)), 2, int(rng.integers(1, 4)),
                    int(rng.integers(0, floors)))
            covered = naive_links.avoided_anchors(passable, unit, place, [rect])
            after = [p & ~c for p, c in zip(passable, covered)]
            expected = naive_links.joined_pairs(passable, after, links, spots, rules)
            given = [list(p) for p in place]
            got = check_block(gridmap, rects=[rect], cells=given, unit_size=unit, points=[list(p) for p in spots],
                              traversal=rules)
            assert got == expected, (spots, place, rect)


def test_edits_land_on_their_floor_and_links_can_be_replaced():
    rng = np.random.default_rng(80)
    walkable, cost, links, gridmap = world(rng, 3)
    edited = gridmap.edit(rects=[(1, 6, 4, 5, 1)], cells=[(0, 0, 2), (3, 3)], solid=True)
    expected = walkable.copy()
    expected[1, 6:8, 1:5] = False  # clipped to the floor: nothing spills onto floor 2
    expected[2, 0, 0] = False
    expected[0, 3, 3] = False
    assert edited.floors == 3 and edited.links is gridmap.links
    stacked = edited.walkable.reshape(-1, 10)
    for f in range(3):
        np.testing.assert_array_equal(stacked[f * 9:f * 9 + 8], expected[f])
        if f:
            assert not stacked[f * 9 - 1].any()
    replaced = edited.with_links(links[:3])
    assert replaced.generation == edited.generation + 1 and len(replaced.links) == 3
    np.testing.assert_array_equal(replaced.walkable, edited.walkable)
    for unit in (1, 2):
        passable, costs = naive_links.floors_for_unit(expected, cost, unit)
        points = standable(passable)
        for rules in (None, {"ladder": None}):
            moves = naive_links.graph(passable, costs, links[:3], rules)
            for _ in range(4):
                start, goal = pick(rng, points, 2)
                want = naive.costs_from(moves, start).get(goal, math.inf)
                got = find_path(replaced, start, goal, unit, traversal=rules, smooth="none")
                assert got.found == math.isfinite(want)
                if got.found:
                    assert got.cost == pytest.approx(want)
    assert len(replaced.edit(links=[]).links) == 0


@pytest.mark.parametrize("diagonal", ["never", "always"])
def test_other_diagonal_rules(diagonal):
    for rng, walkable, _, links, gridmap, unit, rules, passable, costs, points in cases(90, 2, 4):
        moves = naive_links.graph(passable, costs, links, rules, diagonal=diagonal)
        goals = pick(rng, points, 2)
        expected = naive.costs_to(moves, goals)
        got = distance_field(gridmap, goals, unit, traversal=rules, diagonal=diagonal)
        for f in range(2):
            for y in range(walkable.shape[1]):
                for x in range(walkable.shape[2]):
                    assert got[f, y, x] == pytest.approx(expected.get((x, y, f), math.inf), rel=1e-5)
        for _ in range(4):
            start, goal = pick(rng, points, 2)
            want = naive.costs_from(moves, start).get(goal, math.inf)
            result = find_path(gridmap, start, goal, unit, traversal=rules, diagonal=diagonal, smooth="none")
            assert result.found == math.isfinite(want)
            if result.found:
                assert result.cost == pytest.approx(want)
        spots = pick(rng, points, 5)
        place = pick(rng, points, 3)
        covered = naive_links.avoided_anchors(passable, unit, place)
        after = [p & ~c for p, c in zip(passable, covered)]
        expected = naive_links.joined_pairs(passable, after, links, spots, rules,
                                            "always" if diagonal == "always" else "never")
        got = check_block(gridmap, cells=[list(p) for p in place], unit_size=unit, points=[list(p) for p in spots],
                          traversal=rules, diagonal=diagonal)
        assert got == expected


@pytest.mark.parametrize("layout", ["odd-r", "even-r", "odd-q", "even-q"])
def test_hex_floors_keep_their_neighbours(layout):
    # Each floor of a hex map moves as a map of that floor alone: a floor's rows keep their
    # parity in the stacked grid (two blocked rows between floors where one would not).
    rng = np.random.default_rng(95)
    for height in (4, 5):
        walkable = rng.random((3, height, 6)) > 0.2
        gridmap = GridMap(walkable, floors=3, shape="hex", layout=layout)
        edited = gridmap.edit(cells=[(0, 0, 2)], solid=False)
        assert edited.floor_height == height and edited.floor_rows == gridmap.floor_rows
        for f in range(3):
            alone = GridMap(walkable[f], shape="hex", layout=layout)
            goals = [(int(x), int(y)) for y, x in np.argwhere(walkable[f])[:2]]
            expected = distance_field(alone, goals)
            got = distance_field(gridmap, [(*g, f) for g in goals])[f]
            np.testing.assert_array_equal(got, expected)


def test_points_with_floors_are_checked():
    from pathserver.errors import NonFiniteError, RequestError

    gridmap = GridMap(np.ones((2, 4, 5), bool), floors=2, links=[{"from": [0, 0], "to": [0, 0, 1], "cost": 1}])
    refusals = [
        (lambda: find_path(gridmap, (0, 0), goals=[(1, 1), (1, 1, 2)]), OutOfBoundsError, "goals[1][2]"),
        (lambda: find_path(gridmap, (0, 0), goals=[(1, 9, 1)]), OutOfBoundsError, "goals[0]"),
        (lambda: find_path(gridmap, (0, 0), (1, 1, 0.5)), RequestError, "goal[2]"),
        (lambda: find_path(gridmap, (0, 0), (1, 1), avoid={"cells": [[1, math.nan]]}), NonFiniteError,
         "avoid.cells[0][1]"),
        (lambda: find_path(gridmap, (0, 0), (1, 1), avoid={"rects": [[0, 0, 0, 1, 1]]}), RequestError,
         "avoid.rects[0]"),
        (lambda: distance_field(gridmap, [(1, 1, 1)], region=(0, 0, 5, 5)), OutOfBoundsError, "region"),
        (lambda: next_steps(gridmap, [(1, 1)], 1, [(0, 0, 3)]), OutOfBoundsError, "positions[0][2]"),
        (lambda: check_block(gridmap, rects=[(0, 0, 1, 1, 1)], points=[(0, 0, 2)]), OutOfBoundsError, "points[0][2]"),
        (lambda: gridmap.edit(rects=[(0, 0, 1, 1, 2)], solid=True), OutOfBoundsError, "rects"),
        (lambda: gridmap.with_links([{"from": [0, 0], "to": [9, 0], "cost": 1}]), OutOfBoundsError, "links[0].to"),
        (lambda: gridmap.with_links([{"from": [0, 0], "to": [1, 0], "cost": 1, "tag": "lift"}]), RequestError,
         "links[0].tag"),
    ]
    for call, error, at in refusals:
        with pytest.raises(error) as raised:
            call()
        assert raised.value.at == at
    # An avoided rectangle on floor 1 blocks only floor 1's cells, and the link's end there.
    blocked = find_path(gridmap, (1, 0), (0, 0, 1), avoid={"rects": [[0, 0, 1, 1, 1]]})
    assert blocked.status == "no_path"
    assert find_path(gridmap, (1, 0), (1, 0, 1), avoid={"rects": [[1, 1, 1, 1, 1]]}).found


def test_rule_sets_past_the_link_cache_keep_their_answers(monkeypatch):
    # A request may send any traversal rules: what the links give under each is kept for
    # the last LINKS_LIMIT rule sets only, and a dropped one is made again, the same.
    from pathserver.grid import cache

    monkeypatch.setattr(cache, "LINKS_LIMIT", 3)
    rng = np.random.default_rng(11)
    _, _, _, gridmap = world(rng, 2)
    start, goal = (0, 0), (9, 7, 1)
    rule_sets = [{"door": 1.0 + k / 4} for k in range(8)]
    first = [find_path(gridmap, start, goal, 1, smooth="none", traversal=rules, allow_partial=True)
             for rules in rule_sets]
    again = [find_path(gridmap, start, goal, 1, smooth="none", traversal=rules, allow_partial=True)
             for rules in rule_sets]
    assert [r.cost for r in first] == [r.cost for r in again]
    made = cache.MadeOnce(3)
    for k in range(8):
        assert made.get(k, lambda k=k: k * 10) == k * 10
        assert len(made) <= 3
    assert made.get(7, lambda: "made again") == 70 and made.get(0, lambda: "made again") == "made again"
