"""The JPS+ tables in the per-unit-size cache: built in the background, used by
``algorithm="auto"`` once built, carried across edits where the edit did not reach."""

import math

import numpy as np
import pytest

import naive
from pathserver import GridMap, find_path
from pathserver.core.jpsplus import jump_table
from pathserver.grid import layers

OPEN = """
..............................
..............................
..............................
..............................
..........########............
..............................
..............................
..............................
..............................
..............................
"""


@pytest.fixture(autouse=True)
def small_maps_get_tables(monkeypatch):
    """These tests' maps are small: let them have tables (the default spares maps below
    128 x 128, where a table gains little)."""
    monkeypatch.setattr(layers, "JUMP_TABLE_MIN_CELLS", 0)


def built(m, unit=1):
    """The map's layer for ``unit`` with its jump table built (waits for the thread)."""
    layer = m.layer(unit)
    assert layer.wait_jump_table(timeout=60)
    return layer


def _built_random_maps(rng, count, sides, units):
    """(map, unit, the unit's passable grid, its free cells as (y, x) rows) for ``count``
    random maps of sides in ``sides`` and each of ``units``, the layer's jump table built,
    and its goal bounds (built after the table, in the background: a search before and one
    after them expand different nodes)."""
    for _ in range(count):
        width, height = int(rng.integers(*sides)), int(rng.integers(*sides))
        m = GridMap(naive.random_grid(rng, width, height, float(rng.uniform(0.0, 0.2))))
        for unit in units:
            passable = naive.passable_for_unit(m.walkable, unit, unit)
            free = np.argwhere(passable)
            if len(free) < 2:
                continue
            find_path(m, tuple(free[0][::-1].tolist()), tuple(free[-1][::-1].tolist()), unit)
            built(m, unit).wait_bounds(timeout=60)
            yield m, unit, passable, free


def test_auto_uses_the_table_once_built_and_jps_scans_online():
    m = GridMap.from_ascii(OPEN)
    first = find_path(m, (0, 0), (29, 9))
    assert first.algorithm in ("jps", "jps+")  # the online search answers while it builds
    layer = built(m)
    # The waiting call got the table in place: still one prepared call, now JPS+.
    assert [c.algorithm for c in m.layers.prepared_calls()] == ["jps+"]
    r = find_path(m, (0, 0), (29, 9))
    assert r.algorithm == "jps+"
    assert r.cost == pytest.approx(first.cost)
    assert find_path(m, (0, 0), (29, 9), algorithm="jps").algorithm == "jps"
    # A budget's partial answer depends on the algorithm: it must not change when the
    # table lands, so a search with one scans online.
    assert find_path(m, (0, 0), (29, 9), max_expansions=1000).algorithm == "jps"
    assert (layer.jump_table() == jump_table(layer.cells)).all()
    assert layer.jump_table().nbytes == layer.cells.size * 8 and layer.nbytes > layer.jump_table().nbytes


def test_auto_runs_astar_on_a_maze_until_the_table_lands_then_jps_plus():
    walkable = np.ones((21, 21), dtype=bool)
    walkable[1::2, :] = False
    walkable[1::4, 0] = True
    walkable[3::4, -1] = True
    m = GridMap(walkable)
    assert m.layer(1).open_share < 0.5
    first = find_path(m, (0, 0), (20, 20))
    assert first.algorithm == "astar"
    built(m)
    r = find_path(m, (0, 0), (20, 20))
    assert (r.algorithm, r.cost, r.path.tolist()) == ("jps+", first.cost, first.path.tolist())


def test_no_table_is_built_for_astar_or_a_map_too_small_or_too_large(monkeypatch):
    m = GridMap.from_ascii(OPEN)
    find_path(m, (0, 0), (29, 9), algorithm="astar")
    assert not m.layer(1).wait_jump_table(timeout=0)
    for limit in ("JUMP_TABLE_MIN_CELLS", "JUMP_TABLE_MAX_CELLS"):
        monkeypatch.setattr(layers, limit, 1000 if limit.endswith("MIN_CELLS") else 10)
        m = GridMap.from_ascii(OPEN)
        assert find_path(m, (0, 0), (29, 9)).algorithm == "jps"
        assert not m.layer(1).wait_jump_table(timeout=0)
        monkeypatch.undo()
        monkeypatch.setattr(layers, "JUMP_TABLE_MIN_CELLS", 0)
    monkeypatch.setattr(layers, "JUMP_TABLE_MAX_CELLS", 10)
    m = GridMap.from_ascii(OPEN)
    assert find_path(m, (0, 0), (29, 9)).algorithm == "jps"
    assert not m.layer(1).wait_jump_table(timeout=0)
    assert find_path(m, (0, 0), (29, 9)).algorithm == "jps"


def test_auto_with_tables_matches_dijkstra_for_unit_sizes_1_to_3():
    rng = np.random.default_rng(21)
    used = {1: 0, 2: 0, 3: 0}
    for _ in range(40):
        width, height = int(rng.integers(8, 30)), int(rng.integers(8, 30))
        m = GridMap(naive.random_grid(rng, width, height, float(rng.uniform(0.0, 0.06))))
        for unit in (1, 2, 3):
            passable = naive.passable_for_unit(m.walkable, unit, unit)
            free = np.argwhere(passable)
            if len(free) < 2:
                continue
            find_path(m, tuple(free[0][::-1].tolist()), tuple(free[-1][::-1].tolist()), unit)
            built(m, unit)  # on clutter too: auto answers with A* until it lands
            for _ in range(3):
                (sy, sx), (gy, gx) = free[rng.choice(len(free), 2, replace=False)]
                expected = naive.dijkstra(passable, (int(sx), int(sy)), (int(gx), int(gy)))
                r = find_path(m, (int(sx), int(sy)), (int(gx), int(gy)), unit, line_of_sight=False)
                if math.isinf(expected):
                    assert r.status == "no_path"
                    continue
                assert r.algorithm == "jps+"
                used[unit] += 1
                assert r.cost == pytest.approx(expected, abs=1e-9)
                path = [tuple(p) for p in r.path.tolist()]
                assert naive.path_is_valid(passable, path)
    assert min(used.values()) >= 10


def test_an_edit_updates_the_table_where_it_reached():
    rng = np.random.default_rng(22)
    walkable = np.ones((30, 40), dtype=bool)
    walkable[8:10, 5:30] = False
    walkable[15:25, 20] = False
    walkable[rng.integers(30, size=12), rng.integers(40, size=12)] = False
    m = GridMap(walkable)
    for unit in (1, 2, 3):
        find_path(m, (0, 0), (39, 29), unit, snap=True)
        built(m, unit)
    edited = m.edit(rects=[(10, 5, 4, 3)], solid=True).edit(cells=[(30, 20)], solid=False)
    assert set(edited._jump_seeds) == {(1, 1), (2, 2), (3, 3)}
    for unit in (1, 2, 3):
        find_path(edited, (0, 0), (39, 29), unit, snap=True)
        layer = built(edited, unit)
        assert (layer.jump_table() == jump_table(layer.cells)).all()
        assert (layer.cells != 0).sum() == naive.passable_for_unit(edited.walkable, unit, unit).sum()
    assert edited._jump_seeds == {}
    passable = naive.passable_for_unit(edited.walkable, 2, 2)
    free = np.argwhere(passable)
    for _ in range(20):
        (sy, sx), (gy, gx) = free[rng.choice(len(free), 2, replace=False)]
        expected = naive.dijkstra(passable, (int(sx), int(sy)), (int(gx), int(gy)))
        r = find_path(edited, (int(sx), int(sy)), (int(gx), int(gy)), 2, line_of_sight=False, allow_partial=True)
        assert r.algorithm == "jps+"
        if not math.isinf(expected):
            assert r.cost == pytest.approx(expected, abs=1e-9)


def test_an_edit_that_changes_no_passability_keeps_the_table():
    m = GridMap.from_ascii(OPEN)
    find_path(m, (0, 0), (29, 9))
    before = built(m).jump_table()
    edited = m.edit(cells=[(1, 1)], cost=3.0)
    find_path(edited, (0, 0), (29, 9))
    assert not edited.layer(1).wait_jump_table(timeout=0) or edited.layer(1).jump_table() is before
    solid = m.edit(cells=[(0, 4)], solid=True).edit(cells=[(0, 4)], solid=False)
    find_path(solid, (0, 0), (29, 9))
    assert built(solid).jump_table() is before


def test_avoid_runs_jps_plus_with_the_answers_of_astar():
    # The request's own blockers: JPS+ on the layer's table (the path without them,
    # mended round them), else the online JPS on the layer's bitmaps with them laid on,
    # against A* on the same blockers (every option that reaches the search: snapping
    # goals off avoided cells, a start on them, smoothing, partial answers).
    rng = np.random.default_rng(22)
    used = 0
    online = 0
    for m, unit, passable, free in _built_random_maps(rng, 30, (8, 30), (1, 2, 3)):
        width, height = m.width, m.height
        for _ in range(4):
            (sy, sx), (gy, gx) = free[rng.choice(len(free), 2, replace=False)]
            avoid = {"cells": [(int(x), int(y)) for x, y in zip(rng.integers(0, width, 12),
                                                                    rng.integers(0, height, 12))],
                     "rects": [(int(rng.integers(width)), int(rng.integers(height)), 2, 3)]}
            options = {"smooth": str(rng.choice(["none", "corners", "los"])),
                       "allow_partial": bool(rng.integers(2)), "line_of_sight": bool(rng.integers(2))}
            start, goal = (int(sx), int(sy)), (int(gx), int(gy))
            r = find_path(m, start, goal, unit, avoid=avoid, **options)
            a = find_path(m, start, goal, unit, avoid=avoid, algorithm="astar", **options)
            assert (r.status, r.goal, r.start) == (a.status, a.goal, a.start)
            assert r.cost == pytest.approx(a.cost, abs=1e-9)
            assert r.algorithm in ("jps+", "jps")
            used += r.status == "found" and r.expanded > 0
            online += r.algorithm == "jps"
            if r.status == "found" and options["smooth"] == "none":
                solid = naive.covered(m.walkable.shape, avoid["cells"], avoid["rects"])
                blocked = passable & ~naive.overlapping(solid, unit, unit)
                blocked[start[1], start[0]] = passable[start[1], start[0]]
                assert naive.path_is_valid(blocked, [tuple(p) for p in r.path.tolist()])
    assert used >= 50 and online >= 10, (used, online)


def test_avoided_cells_off_the_path_leave_the_plain_answer():
    # With avoided cells, JPS+ first searches the grid without them: when that path steps
    # on none of them it is the answer (the same path and expansions as without avoid);
    # when detours of its cost go round them, the path so mended; else the online JPS on
    # the bitmaps with them laid on answers (a path around them, A*'s cost).
    rng = np.random.default_rng(23)
    kept = rerouted = mended = searched = 0
    for m, unit, passable, free in _built_random_maps(rng, 40, (12, 40), (1, 2)):
        for _ in range(4):
            (sy, sx), (gy, gx) = free[rng.choice(len(free), 2, replace=False)]
            start, goal = (int(sx), int(sy)), (int(gx), int(gy))
            plain = find_path(m, start, goal, unit, line_of_sight=False)
            if plain.status != "found" or len(plain.path) < 4:
                continue
            route = {tuple(p) for p in plain.path.tolist()}
            # An avoided cell blocks the anchors whose footprint covers it, and the corners
            # of the diagonal steps beside them.
            near = {(x + dx, y + dy) for x, y in route for dx in range(-1, unit + 1) for dy in range(-1, unit + 1)}
            far = [c for c in map(tuple, np.argwhere(m.walkable)[:, ::-1].tolist()) if c not in near]
            if far:
                picked = [far[i] for i in rng.choice(len(far), min(len(far), 8), replace=False)]
                r = find_path(m, start, goal, unit, avoid={"cells": picked}, line_of_sight=False)
                assert r.path.tolist() == plain.path.tolist() and r.expanded == plain.expanded
                kept += 1
            middle = plain.path[len(plain.path) // 2].tolist()
            r = find_path(m, start, goal, unit, avoid={"cells": [middle]}, line_of_sight=False)
            a = find_path(m, start, goal, unit, avoid={"cells": [middle]}, algorithm="astar", line_of_sight=False)
            assert r.status == a.status
            if r.status == "found":
                assert r.cost == pytest.approx(a.cost, abs=1e-9) and r.expanded > plain.expanded
                assert tuple(middle) not in {tuple(p) for p in r.path.tolist()}
                rerouted += 1
                mended += r.cost == plain.cost and r.algorithm == "jps+"
                searched += r.cost > plain.cost and r.algorithm == "jps"
    assert kept >= 40 and rerouted >= 40 and mended >= 10 and searched >= 10, (mended, searched)


def _same_answer(quick, general):
    """Both PathResults alike in every field, or both the same error (code, message, at)."""
    if isinstance(general, Exception):
        assert (type(quick), str(quick), quick.at) == (type(general), str(general), general.at)
        return
    assert quick is not None and general is not None or quick is general
    if general is not None:
        assert quick.path.tolist() == general.path.tolist()
        for field in ("status", "cost", "length", "expanded", "start", "goal", "flags", "generation", "algorithm",
                      "goal_index"):
            assert getattr(quick, field) == getattr(general, field), field


def test_avoided_cells_as_arrays_take_the_quick_way_to_the_general_ways_answers(monkeypatch):
    # Cells and rectangles as numpy rows (as the server hands them on) on a call JPS+
    # answers: one kernel lays them (Avoided.laid), then JPS+ and its mending, and after a
    # cut it cannot mend the search round them, on the laid grid; anything not plainly
    # so (a number not finite, an empty rectangle, a goal on them, endpoints not plain
    # ints) the general way. The same answers and errors as the lists give (the general
    # way, checked against A* by the tests above), through find_path and
    # find_path_within, in each dtype and order; the thread's copy of the grid as the
    # layer's after each.
    from pathserver.grid import avoid as avoid_module
    from pathserver.grid.avoid import Avoided
    from pathserver.grid.avoid_search import find_path_within

    laid = {"quick": 0, "refused": 0, "last": False}
    real = Avoided.laid.__func__

    def counted(cls, *args):
        avoided = real(cls, *args)
        laid["quick" if avoided is not None else "refused"] += 1
        laid["last"] = avoided is not None
        return avoided

    monkeypatch.setattr(Avoided, "laid", classmethod(counted))
    rng = np.random.default_rng(25)
    kinds = {"jps+": 0, "jps": 0}
    for m, unit, passable, free in _built_random_maps(rng, 30, (10, 36), (1, 2, 3)):
        width, height = m.width, m.height
        for _ in range(5):
            (sy, sx), (gy, gx) = free[rng.choice(len(free), 2, replace=False)]
            start, goal = (int(sx), int(sy)), (int(gx), int(gy))
            count = int(rng.choice([1, 6, 30]))
            cells = np.stack([rng.integers(-2, width + 2, count), rng.integers(-2, height + 2, count)], axis=1)
            if rng.integers(3) == 0:  # some on the plain path
                plain = find_path(m, start, goal, unit, smooth="none").path
                if len(plain) > 2:
                    cells[: min(count, 3)] = plain[rng.integers(1, len(plain) - 1, size=min(count, 3))]
            rects = np.array([[rng.uniform(0, width), rng.uniform(0, height), rng.uniform(0.5, 3), rng.uniform(0.5, 3)]])
            roll = int(rng.integers(8))
            if roll == 0:
                cells = cells.astype(np.float64)
                cells[rng.integers(count), rng.integers(2)] = rng.choice([np.nan, np.inf])  # refused alike
            elif roll == 1:
                rects[0, 2] = 0.0  # an empty rectangle: refused alike
            elif roll == 2:
                cells[0] = goal  # the goal on them: snaps off them (the general way)
            elif roll == 3:
                cells[0] = start  # the start on them: it may leave
            avoid = {"cells": cells.tolist()}
            if rng.integers(2):
                avoid["rects"] = rects.tolist()
            options = {"smooth": str(rng.choice(["none", "corners", "los"])), "line_of_sight": bool(rng.integers(2)),
                       "allow_partial": bool(rng.integers(2)), "snap": bool(rng.integers(4))}
            as_arrays = {"cells": np.asarray(cells, dtype=rng.choice([np.int32, np.int64, np.float32, np.float64])
                                             if roll != 0 else np.float64)}
            if rng.integers(2):
                as_arrays["cells"] = np.asfortranarray(as_arrays["cells"])
            if "rects" in avoid:
                as_arrays["rects"] = rects

            def both(call):
                answers = []
                for given in (avoid, as_arrays):  # the lists first: they keep the call
                    try:
                        answers.append(call(given))
                    except Exception as error:  # noqa: BLE001 - compared below
                        answers.append(error)
                return answers

            laid["last"] = False
            general, quick = both(lambda a: find_path(m, start, goal, unit, avoid=a, **options))
            _same_answer(quick, general)
            if laid["last"] and not isinstance(quick, Exception):  # answered the quick way
                kinds[quick.algorithm] += 1
            general, quick = both(lambda a: find_path_within(m, start, goal, unit, 40, avoid=a, **options))
            _same_answer(quick, general)
            for scratch in avoid_module._local.scratch.values():  # the thread's copies lifted clean
                source = scratch.source()
                assert source is None or np.array_equal(scratch.cells, source)
    assert laid["quick"] >= 300 and laid["refused"] >= 40 and kinds["jps+"] >= 60 and kinds["jps"] >= 30, (laid, kinds)


def test_a_path_the_cells_cut_beyond_mending_is_searched_round_the_cells_near_the_cuts(monkeypatch):
    # A cut no detour of the path's cost mends: JPS+ on a relaxation (the grid with only
    # the avoided anchors near the cuts blocked, under their overlay), round by round, its
    # path mended round the others; cells on the way (many cuts) go straight to the search
    # round all of them. Every answer A*'s cost, legal on the blocked grid, the start's
    # snap kept, the algorithm "jps" (the table alone would say "jps+").
    from pathserver.grid.avoid import Avoided

    counts = {"relaxed": 0, "all": 0}

    def counted(name, key):
        method = getattr(Avoided, name)

        def wrapper(self, *args):
            counts[key] += 1
            return method(self, *args)

        monkeypatch.setattr(Avoided, name, wrapper)

    counted("relax", "relaxed")
    counted("overlay", "all")
    rng = np.random.default_rng(24)
    answers = {"relaxed": 0, "all": 0}
    for m, unit, passable, free in _built_random_maps(rng, 40, (16, 40), (1, 2, 3)):
        for _ in range(4):
            (sy, sx), (gy, gx) = free[rng.choice(len(free), 2, replace=False)]
            start, goal = (int(sx), int(sy)), (int(gx), int(gy))
            plain = find_path(m, start, goal, unit, line_of_sight=False, smooth="none")
            if plain.status != "found" or len(plain.path) < 6:
                continue
            # A few cells on the path and beside it, or many along it.
            along = plain.path[rng.integers(1, len(plain.path) - 1, size=int(rng.choice([2, 12])))]
            cells = (along + rng.integers(-1, 2, size=along.shape)).tolist()
            if rng.integers(2):
                # A start the unit cannot stand on: snapped, and the flag kept.
                walls = np.argwhere(~passable)
                if len(walls):
                    start = tuple(int(v) for v in walls[rng.integers(len(walls))][::-1])
            before = dict(counts)
            options = {"line_of_sight": False, "smooth": str(rng.choice(["none", "los"]))}
            r = find_path(m, start, goal, unit, avoid={"cells": cells}, **options)
            a = find_path(m, start, goal, unit, avoid={"cells": cells}, algorithm="astar", **options)
            assert (r.status, r.start, r.goal, r.start_snapped) == (a.status, a.start, a.goal, a.start_snapped)
            assert r.cost == pytest.approx(a.cost, abs=1e-9)
            if r.status == "found" and options["smooth"] == "none":
                solid = naive.covered(m.walkable.shape, cells)
                blocked = passable & ~naive.overlapping(solid, unit, unit)
                blocked[r.start[1], r.start[0]] = passable[r.start[1], r.start[0]]
                assert naive.path_is_valid(blocked, [tuple(p) for p in r.path.tolist()])
            if counts["relaxed"] > before["relaxed"]:
                answers["all" if counts["all"] > before["all"] else "relaxed"] += 1
                assert r.algorithm == "jps"
    assert answers["relaxed"] >= 20 and answers["all"] >= 10, answers


def test_the_quick_way_on_many_threads_gives_each_request_its_own_cells():
    # Each thread lays a request's cells on its own copy of the grid, its own boxes too:
    # requests with different cells at once, through find_paths' threads and a pool of
    # our own, each get the answer they get alone.
    from concurrent.futures import ThreadPoolExecutor

    from pathserver import find_paths

    rng = np.random.default_rng(26)
    m = GridMap(naive.random_grid(rng, 48, 40, 0.1))
    free = np.argwhere(naive.passable_for_unit(m.walkable, 1, 1))[:, ::-1]
    trips = [tuple(map(tuple, free[rng.choice(len(free), 2, replace=False)].tolist())) for _ in range(40)]
    find_path(m, *trips[0])
    built(m).wait_bounds(timeout=60)
    walls = [{"cells": free[rng.choice(len(free), 30, replace=False)].astype(np.int32)} for _ in range(6)]
    for wall in walls:  # the lists first: the general way keeps the call the quick way reads
        find_path(m, *trips[0], avoid={"cells": wall["cells"].tolist()})
    alone = {(k, t): find_path(m, *trip, avoid=wall) for k, wall in enumerate(walls) for t, trip in enumerate(trips)}
    assert any(r.algorithm == "jps" for r in alone.values()) and any(r.algorithm == "jps+" for r in alone.values())

    def run(k):
        return [find_path(m, *trip, avoid=walls[k]) for trip in trips]

    with ThreadPoolExecutor(max_workers=4) as pool:
        for k, answers in zip(range(6), pool.map(run, range(6))):
            for t, answer in enumerate(answers):
                assert answer.path.tolist() == alone[(k, t)].path.tolist() and answer.cost == alone[(k, t)].cost
    for k, wall in enumerate(walls):
        results = find_paths(m, [s for s, _ in trips] * 3, [g for _, g in trips] * 3, avoid=wall)
        assert [r.path.tolist() for r in results] == [alone[(k, t % len(trips))].path.tolist() for t in range(120)]
