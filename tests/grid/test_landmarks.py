"""A* on terrain costs with the layer's landmarks (pathserver.core.landmarks): built in the
background, used by the prepared calls they fit once in place, and the answers those
calls give are exactly Dijkstra's, with fewer expansions."""

import numpy as np
import pytest

import naive
from pathserver import GridMap, find_path
from pathserver.core.landmarks import LANDMARKS
from pathserver.grid import layers


@pytest.fixture(autouse=True)
def small_maps_get_landmarks(monkeypatch):
    monkeypatch.setattr(layers, "LANDMARK_MIN_CELLS", 0)


def _weighted(rng, width, height, heights=False):
    walkable = naive.random_grid(rng, width, height, float(rng.uniform(0.0, 0.25)))
    cost = rng.choice([1.0, 1.0, 2.0, 3.5], size=(height, width))
    extra = {"heights": rng.uniform(0, 3, size=(height, width)).astype(np.float32)} if heights else {}
    return GridMap(walkable, cost, **extra)


def _landmarks_of_call(m):
    return [c.landmarks.shape[1] for c in m.layers.prepared_calls()]


def test_a_star_with_landmarks_answers_what_dijkstra_does():
    rng = np.random.default_rng(71)
    compared = fewer = 0
    for _ in range(12):
        width, height = int(rng.integers(12, 30)), int(rng.integers(12, 30))
        m = _weighted(rng, width, height, heights=True)
        for unit in (1, 2):
            passable = naive.passable_for_unit(m.walkable, unit, unit)
            free = np.argwhere(passable)
            if len(free) < 2:
                continue
            cost = m.layer(unit).cost
            first = tuple(int(v) for v in free[0][::-1])
            find_path(m, first, first, unit)
            assert m.layer(unit).wait_landmarks(60)
            for _ in range(6):
                (sy, sx), (gy, gx) = free[rng.choice(len(free), 2, replace=False)]
                start, goal = (int(sx), int(sy)), (int(gx), int(gy))
                options = {"diagonal": str(rng.choice(["no_corner_cutting", "never"])), "smooth": "none",
                           "line_of_sight": False}
                if rng.integers(2):
                    options["max_climb"] = 1.5
                avoid = None
                if rng.integers(2):
                    avoid = {"cells": [(int(x), int(y)) for y, x in free[rng.choice(len(free), 4)]]}
                    if rng.integers(2):
                        options["avoid_cost"] = float(rng.choice([2.0, 9.0]))
                r = find_path(m, start, goal, unit, avoid=avoid, **options)
                without = find_path(m, start, goal, unit, avoid=avoid, max_expansions=10**9, **options)
                assert r.status == without.status
                if r.status != "found":
                    continue
                assert r.cost == pytest.approx(without.cost, rel=1e-12, abs=1e-9)
                blocked = naive.covered(m.walkable.shape, avoid["cells"]) if avoid and "avoid_cost" not in options \
                    else None
                walk = passable & ~naive.overlapping(blocked, unit, unit) if blocked is not None else passable
                walk = walk.copy()
                walk[start[1], start[0]] = passable[start[1], start[0]]
                climb = options.get("max_climb")
                assert naive.path_is_valid(walk, [tuple(p) for p in r.path.tolist()], options["diagonal"],
                                           m.heights if climb is not None else None, climb)
                if avoid is None:
                    expected = naive.dijkstra(passable, start, goal, options["diagonal"], cost,
                                              m.heights if climb is not None else None, climb)
                    assert r.cost == pytest.approx(expected, rel=1e-12, abs=1e-9)
                compared += 1
                fewer += r.expanded < without.expanded
    # The budget's own call (max_expansions) runs without landmarks: the expansions say so.
    assert compared >= 60 and fewer >= compared // 3, (compared, fewer)


def test_landmarks_go_only_where_they_keep_the_answer():
    rng = np.random.default_rng(72)
    m = _weighted(rng, 24, 20)
    start, goal = (0, 0), (23, 19)
    find_path(m, start, goal)
    assert m.layer(1).wait_landmarks(60)
    find_path(m, start, goal)
    assert _landmarks_of_call(m) == [2 * LANDMARKS]  # the call that waited got them in place
    for options in ({"max_expansions": 50, "allow_partial": True}, {"allow_partial": True},
                    {"diagonal": "always"}, {"max_expansions": 10**6}):
        before = len(m.layers.prepared_calls())
        find_path(m, start, goal, **options)
        calls = m.layers.prepared_calls()
        assert len(calls) == before + 1 and calls[-1].landmarks.shape[1] == 0, options
    uniform = GridMap(np.ones((20, 20), dtype=bool))
    find_path(uniform, (0, 0), (19, 19), algorithm="astar")
    assert not uniform.layer(1).wait_landmarks(0.1)


def test_an_edit_that_only_blocks_keeps_the_landmarks_and_one_that_opens_builds_anew():
    rng = np.random.default_rng(73)
    m = _weighted(rng, 30, 24)
    find_path(m, (0, 0), (29, 23))
    assert m.layer(1).wait_landmarks(60)
    table = m.layer(1).landmarks()
    blocked = m.edit(rects=[(10, 0, 2, 20)], solid=True)
    opened = m.edit(rects=[(3, 3, 4, 4)], solid=False)
    for edited, kept in ((blocked, True), (opened, False)):
        find_path(edited, (0, 0), (29, 23))
        assert edited.layer(1).wait_landmarks(60)
        assert (edited.layer(1).landmarks() is table) == kept
        passable = naive.passable_for_unit(edited.walkable, 1, 1)
        free = np.argwhere(passable)
        for _ in range(15):
            (sy, sx), (gy, gx) = free[rng.choice(len(free), 2, replace=False)]
            r = find_path(edited, (int(sx), int(sy)), (int(gx), int(gy)), line_of_sight=False)
            expected = naive.dijkstra(passable, (int(sx), int(sy)), (int(gx), int(gy)), cost=edited.layer(1).cost)
            if r.status == "found":
                assert r.cost == pytest.approx(expected, rel=1e-12, abs=1e-9)
            else:
                assert expected == np.inf
