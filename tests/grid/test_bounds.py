"""JPS+'s goal bounds on a layer (pathserver.core.bounds): built in the background on
uniform maps as loaded, taken by the prepared calls they fit once in place, and the
answers those calls give cost what they did before, with fewer expansions."""

import gc

import numpy as np
import pytest

import naive
from pathserver import GridMap, find_path
from pathserver.grid import builds, layers


@pytest.fixture(autouse=True)
def small_maps_get_tables(monkeypatch):
    monkeypatch.setattr(layers, "JUMP_TABLE_MIN_CELLS", 0)


def _rooms(rng, width, height):
    walkable = naive.random_grid(rng, width, height, float(rng.uniform(0.05, 0.3)))
    return GridMap(walkable)


def _bounds_of_calls(m):
    return sorted(len(c.bound_rows) > 0 for c in m.layers.prepared_calls())


def _ready(m, unit=1):
    free = np.argwhere(naive.passable_for_unit(m.walkable, unit, unit))
    first = tuple(int(v) for v in free[0][::-1])
    find_path(m, first, first, unit)
    layer = m.layer(unit)
    assert layer.wait_jump_table(60)
    return layer, free


def test_paths_with_bounds_cost_what_they_did_with_fewer_expansions():
    rng = np.random.default_rng(5)
    compared = fewer = spent = spent_before = 0
    for _ in range(10):
        m = _rooms(rng, int(rng.integers(20, 48)), int(rng.integers(20, 48)))
        for unit in (1, 2):
            passable = naive.passable_for_unit(m.walkable, unit, unit)
            if passable.sum() < 2:
                continue
            layer, free = _ready(m, unit)
            trips = [tuple(tuple(int(v) for v in free[i][::-1]) for i in rng.choice(len(free), 2, replace=False))
                     for _ in range(8)]
            before = [find_path(m, s, g, unit, smooth="none", line_of_sight=False) for s, g in trips]
            assert layer.wait_bounds(60)
            for (start, goal), old in zip(trips, before):
                new = find_path(m, start, goal, unit, smooth="none", line_of_sight=False)
                assert new.status == old.status and new.algorithm == "jps+"
                if new.status != "found":
                    continue
                assert new.cost == pytest.approx(old.cost, abs=1e-9)
                assert new.cost == pytest.approx(naive.dijkstra(passable, start, goal), abs=1e-9)
                assert naive.path_is_valid(passable, [tuple(p) for p in new.path.tolist()])
                compared += 1
                fewer += new.expanded < old.expanded
                spent += new.expanded
                spent_before += old.expanded
    # A node reached later at a dearer cost (its shortest way in skipped: it leads nowhere
    # near the goal) may open others: a search can expand a node or two more, not many.
    assert compared >= 80 and fewer >= compared // 4 and spent < 0.9 * spent_before, (compared, fewer, spent,
                                                                                       spent_before)


def test_bounds_go_only_where_the_order_of_expansions_does_not_show():
    m = _rooms(np.random.default_rng(1), 40, 40)
    layer, _ = _ready(m)
    assert layer.wait_bounds(60)
    find_path(m, (0, 0), (39, 39))
    find_path(m, (0, 0), (39, 39), allow_partial=True)
    find_path(m, (0, 0), (39, 39), max_expansions=10**6)
    find_path(m, (0, 0), (39, 39), algorithm="jps")
    # The first call waited for them; the others, by budget, partial answer or the
    # online search, never do.
    assert _bounds_of_calls(m) == [False, False, False, True]


def test_an_edited_map_gets_none_and_a_layer_too_costly_none():
    m = _rooms(np.random.default_rng(2), 40, 40)
    layer, _ = _ready(m)
    edited = m.edit(cells=[(3, 3)], solid=True)
    find_path(edited, (0, 0), (39, 39))
    assert not edited.start_bounds(edited.layer(1))
    assert not edited.layer(1).wait_bounds(1)
    assert layer.wait_bounds(60)


def test_a_layer_past_the_work_limit_keeps_none(monkeypatch):
    monkeypatch.setattr(builds, "BOUNDS_MAX_WORK", 10)
    m = _rooms(np.random.default_rng(3), 40, 40)
    layer, _ = _ready(m)
    assert not layer.wait_bounds(60)
    assert layer.bounds() is None and _bounds_of_calls(m) == [False]


def test_builds_run_one_at_a_time_in_turn_and_skip_layers_no_longer_used(monkeypatch):
    rng = np.random.default_rng(4)
    first, second, third = (_rooms(rng, 40, 40) for _ in range(3))
    gate = builds.bounds_builds
    with gate._lock:  # hold the builds: each map's first query queues its layer
        gate._running = True
    try:
        for m in (first, second, third):
            find_path(m, (0, 0), (39, 39))
        assert all(gate.waiting(m.layer(1)) for m in (first, second, third))
        del m, third
        gc.collect()
    finally:
        gate.done()
    assert first.layer(1).wait_bounds(60) and second.layer(1).wait_bounds(60)
    assert not gate._waiting and not gate._running
    # Each call waiting for its layer's bounds got them.
    assert _bounds_of_calls(first) == [True] and _bounds_of_calls(second) == [True]


def test_a_build_running_at_exit_does_not_hold_the_program_up(tmp_path):
    # A build of a minute or more (limits raised for it), running as the program ends.
    import subprocess
    import sys
    import textwrap
    import time

    script = tmp_path / "exit.py"
    script.write_text(textwrap.dedent("""
        import time
        import numpy as np
        from pathserver import GridMap, find_path
        from pathserver.grid import builds
        builds.BOUNDS_MAX_WORK = 1 << 40
        walkable = np.random.default_rng(0).random((384, 384)) > 0.2
        m = GridMap(walkable)
        find_path(m, (0, 0), (383, 383))
        layer = m.layer(1)
        layer.wait_jump_table(60)
        assert not layer.wait_bounds(0.5)
        print("exiting", flush=True)
    """))
    started = time.monotonic()
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "exiting" in out.stdout, out.stderr
    assert time.monotonic() - started < 15


def test_many_goals_with_bounds_find_the_cheapest_as_before():
    rng = np.random.default_rng(6)
    compared = fewer = 0
    for _ in range(6):
        m = _rooms(rng, int(rng.integers(24, 48)), int(rng.integers(24, 48)))
        passable = naive.passable_for_unit(m.walkable, 1, 1)
        layer, free = _ready(m)
        # Starts in the top-left quarter, goals in the bottom-right one: long searches.
        near = free[(free[:, 0] < m.height // 4) & (free[:, 1] < m.width // 4)]
        far = free[(free[:, 0] >= m.height // 2) & (free[:, 1] >= m.width // 2)]
        cell = lambda rows: tuple(int(v) for v in rows[rng.integers(len(rows))][::-1])  # noqa: E731
        trips = [(cell(near), [cell(far) for _ in range(4)]) for _ in range(4)]
        before = [find_path(m, s, goals=g, line_of_sight=False) for s, g in trips]
        assert layer.wait_bounds(60)
        for (start, goals), old in zip(trips, before):
            new = find_path(m, start, goals=goals, line_of_sight=False)
            assert new.status == old.status and new.algorithm == "jps+"
            if new.status != "found":
                continue
            best = min(naive.dijkstra(passable, start, g) for g in goals)
            assert new.cost == pytest.approx(old.cost, abs=1e-9) and new.cost == pytest.approx(best, abs=1e-9)
            compared += 1
            fewer += new.expanded < old.expanded
    assert compared >= 15 and fewer >= compared // 4, (compared, fewer)
