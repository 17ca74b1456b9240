"""Terrain costs as a small index per cell into the map's table of distinct costs: exact
answers however many distinct costs a map has, and edits that keep the index right."""

import math

import numpy as np
import pytest

import naive
from pathserver import GridMap, find_path


def footprint_max(cost, unit_w, unit_h):
    """The highest cost under each cell's footprint, clipped to the map (brute force)."""
    height, width = cost.shape
    out = np.empty_like(cost)
    for y in range(height):
        for x in range(width):
            out[y, x] = max(cost[cy, cx] for cx, cy in naive.footprint_cells(x, y, unit_w, unit_h)
                            if 0 <= cx < width and 0 <= cy < height)
    return out


def assert_index_matches(m: GridMap):
    assert not m.uniform_cost
    assert (m.cost_table == np.unique(m.cost_table)).all()  # sorted, distinct
    assert (m.cost_table[m.cost_index] == m.cost).all()
    assert not m.cost_index.flags.writeable and not m.cost_table.flags.writeable


def assert_matches_dijkstra(m: GridMap, rng, queries, units=(1, 2), near=None):
    """find_path against Dijkstra on the layer's footprint costs; ``near``: goals within
    that many cells of the start (the reference is slow on big maps)."""
    for unit in units:
        uw, uh = (unit, unit) if isinstance(unit, int) else unit
        layer = m.layer(unit)
        assert (layer.cost == footprint_max(m.cost, uw, uh)).all()
        cells = np.argwhere(layer.passable)
        for _ in range(queries):
            (sy, sx), (gy, gx) = cells[rng.choice(len(cells), 2, replace=False)]
            if near is not None:
                close = cells[(abs(cells - (sy, sx)) <= near).all(axis=1)]
                gy, gx = close[rng.integers(len(close))]
            start, goal = (int(sx), int(sy)), (int(gx), int(gy))
            expected = naive.dijkstra(layer.passable, start, goal, cost=layer.cost)
            for smooth in ("none", "los"):
                r = find_path(m, start, goal, unit, smooth=smooth)
                if math.isinf(expected):
                    assert r.status == "no_path"
                    continue
                assert r.cost == pytest.approx(expected, abs=1e-9)
                if smooth == "none":
                    assert naive.path_cost(r.path.tolist(), layer.cost) == pytest.approx(expected, abs=1e-9)


def test_a_few_costs_index_with_one_byte_a_cell():
    rng = np.random.default_rng(11)
    m = GridMap(naive.random_grid(rng, 20, 16, 0.2), rng.choice([1.0, 2.5, 7.0], size=(16, 20)))
    assert_index_matches(m)
    assert m.cost_index.dtype == np.uint8 and m.cost_table.tolist() == [1.0, 2.5, 7.0]
    assert m.layer(3).cost_index.dtype == np.uint8 and m.layer(3).cost_table is m.cost_table
    components = m.layer(1).cells.nbytes + m.layer(1).comps.nbytes
    assert m.layer(1).nbytes == components  # the 1x1 layer shares the map's index
    components = m.layer(2).cells.nbytes + m.layer(2).comps.nbytes
    assert m.layer(2).nbytes == components + 16 * 20  # plus its own byte a cell


def test_uniform_maps_share_one_read_only_placeholder():
    a = GridMap(np.ones((5, 6), dtype=bool))
    b = GridMap.from_ascii("....\n.#..\n")
    for m in (a, b):
        assert m.uniform_cost and m.cost_index.shape == (1, 1) and m.cost_table.tolist() == [1.0]
        assert not m.cost_index.flags.writeable and not m.cost_table.flags.writeable
        assert m.layer(2).cost_index is m.cost_index
        assert (m.layer(2).cost == 1.0).all() and m.layer(2).cost.shape == m.walkable.shape
    assert a.cost_index is b.cost_index
    # Same dtypes as a map with terrain costs: one compiled version of the kernels.
    costly = GridMap.from_ascii("..2.\n.#..\n")
    assert costly.cost_index.dtype == a.cost_index.dtype and costly.cost_table.dtype == a.cost_table.dtype


@pytest.mark.parametrize("side, distinct, dtype", [(40, 300, np.uint16), (280, 75_000, np.uint32)])
def test_many_distinct_costs_widen_the_index_and_stay_exact(side, distinct, dtype):
    rng = np.random.default_rng(distinct)
    walkable = naive.random_grid(rng, side, side, 0.05)
    # Costs that differ in their last bits too: quantising them would change answers.
    values = 1.0 + rng.permutation(distinct) / 97.0 + 1e-12
    cost = values[rng.permutation(side * side) % distinct].reshape(side, side)
    m = GridMap(walkable, cost)
    assert_index_matches(m)
    assert m.cost_index.dtype == dtype
    narrower = np.uint8 if dtype == np.uint16 else np.uint16
    assert len(np.unique(m.cost[m.walkable])) > np.iinfo(narrower).max + 1  # walkable cells alone need it
    big = side > 100
    assert_matches_dijkstra(m, rng, queries=3 if big else 15, units=(1, 2, (3, 2)), near=12 if big else None)


def test_edit_with_a_new_cost_value_keeps_the_index_exact():
    rng = np.random.default_rng(12)
    m = GridMap(naive.random_grid(rng, 18, 14, 0.15), rng.choice([1.0, 3.0, 8.0], size=(14, 18)))
    m.layer(2)  # cached on the old generation: must not leak into the new one
    edited = m.edit(rects=[(4, 3, 6, 5)], cost=5.5)  # between existing costs: indices above it shift
    assert_index_matches(edited)
    assert edited.cost_table.tolist() == [1.0, 3.0, 5.5, 8.0]
    assert (edited.cost[3:8, 4:10][edited.walkable[3:8, 4:10]] == 5.5).all()
    fresh = GridMap(edited.walkable, edited.cost)
    assert (fresh.cost_index == edited.cost_index).all() and (fresh.cost_table == edited.cost_table).all()
    assert_matches_dijkstra(edited, rng, queries=10)
    # The old generation is untouched.
    assert_index_matches(m)
    assert m.cost_table.tolist() == [1.0, 3.0, 8.0]
    # A value above every cost, one below all but 1, and cells made solid (their cost
    # resets to 1).
    again = edited.edit(cells=[(0, 0), (17, 13)], cost=20.0).edit(rects=[(10, 0, 3, 3)], cost=1.25)
    again = again.edit(rects=[(0, 10, 5, 4)], solid=True)
    assert_index_matches(again)
    assert {1.25, 20.0} <= set(again.cost_table.tolist())
    assert_matches_dijkstra(again, rng, queries=10)


def test_edit_of_a_map_without_cost_one():
    # No cell costs 1 until an edit makes one solid: 1.0 joins the table at index 0.
    m = GridMap(np.ones((6, 6), dtype=bool), np.full((6, 6), 2.0))
    assert m.cost_table.tolist() == [2.0]
    edited = m.edit(cells=[(2, 2)], solid=True)
    assert_index_matches(edited)
    assert edited.cost_table.tolist() == [1.0, 2.0]
    assert find_path(edited, (0, 0), (5, 0)).cost == 10.0
    # An edit back to cost 1 everywhere makes the map uniform again.
    flat = edited.edit(rects=[(0, 0, 6, 6)], cost=1.0)
    assert flat.uniform_cost and flat.cost_index.shape == (1, 1)


def test_edits_past_256_costs_widen_the_index():
    m = GridMap(np.ones((20, 20), dtype=bool), np.full((20, 20), 2.0))
    for i in range(300):
        m = m.edit(cells=[(i % 20, (i // 20) % 20)], cost=3.0 + i / 8)
        if i in (253, 254, 255, 299):
            assert_index_matches(m)
    assert m.cost_index.dtype == np.uint16 and len(m.cost_table) == 301
    assert_matches_dijkstra(m, np.random.default_rng(13), queries=5)


def test_stale_costs_are_dropped_when_the_table_outgrows_its_index():
    # Each edit overwrites the previous one's cell: the table keeps the stale costs until
    # it would need a wider index, then it is rebuilt from the costs still in use.
    m = GridMap(np.ones((8, 8), dtype=bool), np.full((8, 8), 2.0))
    for i in range(300):
        m = m.edit(cells=[(3, 3)], cost=3.0 + i)
        assert (m.cost_table[m.cost_index] == m.cost).all()
    assert m.cost_index.dtype == np.uint8
    assert len(m.cost_table) < 256 and {2.0, 302.0} <= set(m.cost_table.tolist())
    assert find_path(m, (2, 3), (3, 3)).cost == 302.0


@pytest.mark.parametrize("seed", range(6))
def test_a_run_of_edits_at_once_leaves_the_cells_the_edits_one_by_one_leave(seed):
    rng = np.random.default_rng(seed)
    walkable = rng.random((12, 16)) > 0.2
    cost = None if seed % 2 else rng.integers(1, 5, walkable.shape).astype(float)
    one_by_one = batched = GridMap(walkable, cost)
    changes = []
    for _ in range(25):
        x, y = int(rng.integers(-2, 16)), int(rng.integers(-2, 12))
        boxes = [(x, y, int(rng.integers(1, 5)), int(rng.integers(1, 4)))]
        solid = [None, True, False][int(rng.integers(3))]
        new_cost = float(rng.integers(1, 6)) if solid is None or rng.random() < 0.3 else None
        changes.append((boxes, solid, new_cost))
        one_by_one = one_by_one.edit(rects=boxes, solid=solid, cost=new_cost)
    batched = batched.edit_many(changes)
    assert np.array_equal(batched.walkable, one_by_one.walkable)
    assert np.array_equal(batched.cost, one_by_one.cost)
    assert np.array_equal(batched.clearance, one_by_one.clearance)
    assert batched.uniform_cost == one_by_one.uniform_cost
    if not batched.uniform_cost:
        assert_index_matches(batched)
