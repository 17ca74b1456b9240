"""find_path against the slow reference on random grids, and one ASCII test per behaviour."""

import math

import numpy as np
import pytest

import naive
from pathserver import GridMap, find_path, find_paths
from pathserver.grid import search
from pathserver.errors import BadUnitSizeError, GoalBlockedError, NonFiniteError, OutOfBoundsError, RequestError
from pathserver.errors import SearchLimitError, StartBlockedError


def _random_cases(seed, count, unit_sizes):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        width, height = int(rng.integers(4, 24)), int(rng.integers(4, 24))
        walkable = naive.random_grid(rng, width, height, float(rng.uniform(0.0, 0.4)))
        unit = unit_sizes[int(rng.integers(len(unit_sizes)))]
        yield rng, GridMap(walkable), unit


def _endpoints(rng, passable):
    cells = np.argwhere(passable)
    if len(cells) < 2:
        return None
    (sy, sx), (gy, gx) = cells[rng.choice(len(cells), 2, replace=False)]
    return (int(sx), int(sy)), (int(gx), int(gy))


@pytest.mark.parametrize("diagonal", ["no_corner_cutting", "never", "always"])
def test_matches_dijkstra_on_random_grids(diagonal):
    for rng, m, unit in _random_cases(7 + len(diagonal), 120, [1, 2, 3, 4, (2, 1), (1, 3), (3, 2)]):
        uw, uh = (unit, unit) if isinstance(unit, int) else unit
        passable = naive.passable_for_unit(m.walkable, uw, uh)
        assert (m.layer(unit).passable == passable).all()
        ends = _endpoints(rng, passable)
        if ends is None:
            continue
        start, goal = ends
        expected = naive.dijkstra(passable, start, goal, diagonal)
        for algorithm in (["astar", "auto", "jps"] if diagonal == "no_corner_cutting" else ["astar"]):
            r = find_path(m, start, goal, unit, diagonal=diagonal, algorithm=algorithm)
            if math.isinf(expected):
                assert r.status == "no_path" and len(r.path) == 0
                continue
            assert r.status == "found"
            path = [tuple(p) for p in r.path.tolist()]
            assert path[0] == start and path[-1] == goal
            assert naive.path_is_valid(passable, path, diagonal)
            assert r.cost == pytest.approx(expected, abs=1e-9)
            assert naive.path_cost(path) == pytest.approx(expected, abs=1e-9)


def test_terrain_costs_match_dijkstra():
    rng = np.random.default_rng(3)
    for _ in range(80):
        width, height = int(rng.integers(4, 18)), int(rng.integers(4, 18))
        walkable = naive.random_grid(rng, width, height, 0.2)
        cost = rng.choice([1.0, 1.0, 2.0, 5.0], size=(height, width))
        m = GridMap(walkable, cost)
        for unit in (1, 2):
            layer = m.layer(unit)
            ends = _endpoints(rng, layer.passable)
            if ends is None:
                continue
            expected = naive.dijkstra(layer.passable, *ends, cost=layer.cost)
            r = find_path(m, *ends, unit)
            if math.isinf(expected):
                assert r.status == "no_path"
            else:
                assert r.cost == pytest.approx(expected, abs=1e-9)
                assert naive.path_cost(r.path.tolist(), layer.cost) == pytest.approx(expected, abs=1e-9)


def test_big_unit_pays_the_dearest_cell_under_its_footprint():
    m = GridMap.from_ascii("""
        ......
        ......
        ..9...
        ......
    """)
    layer = m.layer(2)
    assert layer.cost[1, 1] == 9.0 and layer.cost[2, 2] == 9.0 and layer.cost[0, 0] == 1.0


def test_heights_block_steep_steps():
    m = GridMap.from_ascii("""
        .....
        .....
        .....
    """)
    heights = np.zeros((3, 5), dtype=np.float32)
    heights[:, 2] = 5.0
    heights[2, 2] = 1.0
    hm = GridMap(m.walkable, heights=heights)
    r = find_path(hm, (0, 0), (4, 0), max_climb=1.5)
    assert r.status == "found"
    assert [2, 2] in r.path.tolist()
    ref = naive.dijkstra(hm.layer(1).passable, (0, 0), (4, 0), heights=heights, max_climb=1.5)
    assert r.cost == pytest.approx(ref)
    assert find_path(hm, (0, 0), (4, 0), max_climb=0.5).status == "no_path"
    assert find_path(hm, (0, 0), (4, 0)).cost == 4.0  # no max_climb: heights ignored


def test_snap_moves_blocked_endpoints_to_the_nearest_standable_cell():
    m = GridMap.from_ascii("""
        .....
        .###.
        .###.
        .....
    """)
    r = find_path(m, (2, 1), (4, 3))
    assert r.start_snapped and r.start == (2, 0)
    assert r.status == "found" and tuple(r.path[0]) == (2, 0)
    with pytest.raises(StartBlockedError) as info:
        find_path(m, (2, 1), (4, 3), snap=False)
    assert info.value.at == "start"
    with pytest.raises(GoalBlockedError):
        find_path(m, (0, 0), (2, 2), snap=False)


def test_unit_size_snapping_uses_the_units_footprint():
    m = GridMap.from_ascii("""
        ..#...
        ..#...
        ......
        ......
    """)
    # A 2x2 unit at (5, 0) would hang off the map's right edge; (4, 0) is the nearest fit.
    r = find_path(m, (0, 0), (5, 0), unit_size=2)
    assert r.status == "found"
    assert r.goal_snapped and r.goal == (4, 0)
    # At (1, 0) its footprint would cover the wall at column 2.
    assert not m.layer(2).passable[0, 1]
    layer = m.layer(2)
    for x, y in r.path.tolist():
        assert layer.passable[y, x]


def test_unreachable_goal_is_rejected_without_searching():
    rows = ["." * 60] * 30 + ["#" * 60] + ["." * 60] * 5
    m = GridMap.from_ascii("\n".join(rows))
    r = find_path(m, (0, 0), (59, 35))
    assert r.status == "no_path" and r.expanded == 0


def test_partial_path_ends_at_the_reachable_cell_nearest_the_goal():
    m = GridMap.from_ascii("""
        ......#...
        ......#...
        ......#...
    """)
    r = find_path(m, (0, 1), (9, 1), allow_partial=True)
    assert r.status == "partial"
    assert tuple(r.path[-1]) == (5, 1)
    assert r.goal == (9, 1)


def test_budget_gives_partial_or_search_limit():
    m = GridMap.from_ascii("\n".join(["." * 40] * 40))
    kwargs = dict(max_expansions=5, line_of_sight=False, algorithm="astar")
    with pytest.raises(SearchLimitError):
        find_path(m, (0, 0), (39, 39), **kwargs)
    r = find_path(m, (0, 0), (39, 39), allow_partial=True, **kwargs)
    assert r.status == "partial" and r.expanded == 5
    assert len(r.path) > 1 and tuple(r.path[0]) == (0, 0)


def test_clear_line_of_sight_skips_the_search():
    m = GridMap.from_ascii("""
        ..........
        ..........
        ..........
        .......#..
    """)
    r = find_path(m, (0, 0), (9, 2))
    assert r.line_of_sight and r.expanded == 0
    assert r.cost == pytest.approx(7 + 2 * math.sqrt(2))
    assert naive.path_is_valid(m.layer(1).passable, [tuple(p) for p in r.path.tolist()])
    blocked = find_path(m, (0, 3), (9, 3))
    assert not blocked.line_of_sight and blocked.expanded > 0


def test_smooth_modes():
    m = GridMap.from_ascii("""
        ..........
        ..........
        ....##....
        ....##....
        ..........
    """)
    every = find_path(m, (0, 3), (9, 2), smooth="none", line_of_sight=False)
    corners = find_path(m, (0, 3), (9, 2), smooth="corners", line_of_sight=False)
    pulled = find_path(m, (0, 3), (9, 2), smooth="los", line_of_sight=False)
    assert len(every.path) > len(corners.path) >= len(pulled.path) >= 2
    assert every.cost == corners.cost == pulled.cost
    assert corners.length == pytest.approx(every.cost)
    assert pulled.length <= corners.length + 1e-9
    cells = set(map(tuple, every.path.tolist()))
    assert set(map(tuple, corners.path.tolist())) <= cells


def test_length_is_the_polylines_and_smoothing_keeps_the_path_in_order():
    # solve() works the length of an every-cell path out from the jump points and
    # smooths in place: the same as the reference functions on the path it returns.
    from pathserver.core.lines import polyline_length
    rng = np.random.default_rng(12)
    m = GridMap(naive.random_grid(rng, 160, 140, 0.25))  # big enough for JPS+ once its table is built
    find_path(m, (0, 0), (1, 1))
    m.layer(1).wait_jump_table(60)
    seen = set()
    for _ in range(60):
        ends = _endpoints(rng, m.layer(1).passable)
        for algorithm in ("auto", "astar", "jps"):
            every = find_path(m, *ends, smooth="none", algorithm=algorithm, line_of_sight=False)
            seen.add(every.algorithm)
            if every.status != "found":
                continue
            assert every.length == polyline_length(every.path, 0)
            steps = np.abs(np.diff(every.path, axis=0)).max(axis=1)
            assert (steps == 1).all()
            cells = every.path.tolist()
            for smooth in ("corners", "los"):
                r = find_path(m, *ends, smooth=smooth, algorithm=algorithm, line_of_sight=False)
                assert r.length == polyline_length(r.path, 0) and r.cost == every.cost
                if smooth == "corners":  # the turning cells of the same path, in order
                    at = [cells.index(p) for p in r.path.tolist()]
                    assert at == sorted(at) and at[0] == 0 and at[-1] == len(cells) - 1
    assert seen == {"jps+", "astar", "jps"}


def test_string_pulling_never_crosses_a_cell_a_big_unit_cannot_stand_on():
    rng = np.random.default_rng(11)
    for _ in range(60):
        walkable = naive.random_grid(rng, 20, 20, 0.12)
        m = GridMap(walkable)
        for unit in (1, 2, 3):
            layer = m.layer(unit)
            ends = _endpoints(rng, layer.passable)
            if ends is None:
                continue
            r = find_path(m, *ends, unit, smooth="los")
            for (x0, y0), (x1, y1) in zip(r.path[:-1].tolist(), r.path[1:].tolist()):
                for t in np.linspace(0.0, 1.0, 200):
                    px, py = x0 + (x1 - x0) * t + 0.5, y0 + (y1 - y0) * t + 0.5
                    cx, cy = int(math.floor(px)), int(math.floor(py))
                    assert layer.passable[cy, cx], (ends, unit, r.path.tolist())


def test_four_connected_and_heuristics():
    m = GridMap.from_ascii("""
        ......
        .####.
        ......
    """)
    r = find_path(m, (0, 0), (5, 2), diagonal="never", line_of_sight=False)
    assert r.cost == 7.0
    assert all(abs(a - c) + abs(b - d) == 1 for (a, b), (c, d) in zip(r.path[:-1].tolist(), r.path[1:].tolist()))
    optimal = find_path(m, (0, 0), (5, 2), line_of_sight=False).cost
    for heuristic in ("octile", "euclidean", "chebyshev"):
        assert find_path(m, (0, 0), (5, 2), heuristic=heuristic, algorithm="astar").cost == pytest.approx(optimal)
    weighted = find_path(m, (0, 0), (5, 2), heuristic="octile", weight=2.0, algorithm="astar")
    assert weighted.status == "found" and weighted.cost <= 2.0 * optimal


def test_corner_cutting_option():
    m = GridMap.from_ascii("""
        .#
        #.
    """)
    assert find_path(m, (0, 0), (1, 1)).status == "no_path"
    r = find_path(m, (0, 0), (1, 1), diagonal="always")
    assert r.status == "found" and r.cost == pytest.approx(math.sqrt(2))


def test_bad_input_is_rejected_with_a_code():
    m = GridMap.from_ascii("....\n....")
    with pytest.raises(OutOfBoundsError) as info:
        find_path(m, (4, 0), (0, 0))
    assert info.value.at == "start"
    with pytest.raises(NonFiniteError):
        find_path(m, (0, float("nan")), (0, 0))
    with pytest.raises(BadUnitSizeError):
        find_path(m, (0, 0), (1, 1), unit_size=0)
    with pytest.raises(BadUnitSizeError):
        find_path(m, (0, 0), (1, 1), unit_size=(5, 1))
    with pytest.raises(RequestError) as info:
        find_path(m, (0, 0), (1, 1), smooth="bezier")
    assert info.value.at == "smooth"
    with pytest.raises(RequestError):
        find_path(GridMap(m.walkable, m.cost * 2), (0, 0), (1, 1), algorithm="jps")
    assert find_path(m, (0.7, 1.2), (3.9, 0.0)).start == (0, 1)


@pytest.mark.parametrize("threads_from_s", [0.0, math.inf], ids=["over threads", "in turn"])
def test_find_paths_batch_matches_single_queries(monkeypatch, threads_from_s):
    # find_paths answers a batch in turn or over threads by how long its first queries
    # take: both ways must give every query's own answer, in order.
    monkeypatch.setattr(search, "THREADS_FROM_S", threads_from_s)
    rng = np.random.default_rng(5)
    m = GridMap(naive.random_grid(rng, 40, 40, 0.25))
    cells = np.argwhere(m.layer(1).passable)[:, ::-1]
    for size in (5, 50):
        starts = cells[rng.integers(len(cells), size=size)]
        goals = cells[rng.integers(len(cells), size=size)]
        batch = find_paths(m, starts, goals)
        for s, g, r in zip(starts, goals, batch):
            single = find_path(m, s, g)
            assert r.cost == single.cost and (r.path == single.path).all()
    mixed = find_paths(m, [(0, 0), (99, 0)] * 3, [(1, 1), (0, 0)] * 3, errors="return")
    assert [type(r) for r in mixed] == [type(find_path(m, (0, 0), (1, 1))), OutOfBoundsError] * 3


def test_edits_make_a_new_generation():
    m = GridMap.from_ascii("....\n....\n....")
    door = m.edit(rects=[(2, 0, 1, 3)], solid=True)
    assert door.generation == m.generation + 1
    r = find_path(door, (0, 1), (3, 1))
    assert r.status == "no_path" and r.generation == door.generation
    assert find_path(m, (0, 1), (3, 1)).status == "found"


def test_unit_size_cache_is_bounded_and_least_recently_used():
    m = GridMap(np.ones((12, 12), dtype=bool), cache_sizes=2)
    for unit in (1, 2, 1):  # size 1 is now the most recently used
        assert find_path(m, (5, 5), (6, 6), unit).found
    assert find_path(m, (5, 5), (6, 6), 3).found  # evicts size 2, not 1
    assert m.cached_sizes() == [(1, 1), (3, 3)]
    # find_path's prepared calls hold layers: none may outlive its eviction.
    assert {call.size for call in m.layers.prepared_calls()} <= set(m.cached_sizes())
    for unit in (1, 3, 1):
        assert find_path(m, (5, 5), (6, 6), unit).found
    assert find_path(m, (5, 5), (6, 6), 2).found  # evicts size 3
    assert m.cached_sizes() == [(1, 1), (2, 2)]
    assert {call.size for call in m.layers.prepared_calls()} <= set(m.cached_sizes())


def test_option_values_that_compare_equal_to_valid_ones_are_still_refused():
    m = GridMap(np.ones((8, 8), dtype=bool))
    assert find_path(m, (0, 0), (7, 7), 1, max_expansions=100).found  # prepared and kept
    # A bool where a size belongs is a wrong type: invalid_request, as on the wire.
    with pytest.raises(RequestError):
        find_path(m, (0, 0), (7, 7), True)  # True == 1
    assert find_path(m, (0, 0), (7, 7), (2, 1)).found
    with pytest.raises(RequestError):
        find_path(m, (0, 0), (7, 7), (2, True))  # (2, True) == (2, 1)
    with pytest.raises(RequestError):
        find_path(m, (0, 0), (7, 7), 1, max_expansions=100.0)  # 100.0 == 100
    with pytest.raises(RequestError):
        find_path(m, (0, 0), (7, 7), 1, weight=True)
    assert find_path(m, (0, 0), (7, 7), [1, 1]).found  # unhashable but valid: not kept, still answered


def test_pass_ids_wrap_before_the_int32_stamps_overflow():
    import pathserver.grid.prepared as prepared
    from pathserver.core.astar import PASS_ID_LIMIT

    m = GridMap.from_ascii("""
        ........
        .####...
        ....#...
        ........
    """)
    expected = find_path(m, (0, 2), (7, 2), line_of_sight=False)
    work_int = prepared.thread_local.workspace.work_int
    last = work_int.shape[1] - 1
    # Stale stamps that would read as "open" or "closed" for the pass ids after the wrap.
    work_int[3, :last] = 3
    work_int[3, last] = PASS_ID_LIMIT - 2
    wrapped = find_path(m, (0, 2), (7, 2), line_of_sight=False)
    assert work_int[3, last] == 2  # wrapped: stamps cleared, counting again from 2
    assert wrapped.cost == expected.cost and wrapped.path.tolist() == expected.path.tolist()
    again = find_path(m, (0, 2), (7, 2), line_of_sight=False)
    assert work_int[3, last] == 4 and again.path.tolist() == expected.path.tolist()
