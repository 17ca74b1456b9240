"""Each small kernel against a brute-force reference."""

import math

import numpy as np
import pytest

import naive
from pathserver.core.clearance import compute_clearance, footprint_cost, index_costs
from pathserver.core.components import block_labels, component_at, label_components, nearest_with_label
from pathserver.core.lines import line_is_optimal, segment_clear, straight_grid_path
from pathserver.grid.gridmap import GridMap
from pathserver.grid.layers import global_labels
from pathserver.grid.prepared import DIAGONALS

NO_HEIGHTS = np.zeros((1, 1), dtype=np.float32)
# What uniform maps pass for cost_index / cost_table (never read when uniform is 1).
NO_COST_INDEX = np.zeros((1, 1), dtype=np.uint8)
NO_COST_TABLE = np.ones(1)
NO_LANDMARKS = np.zeros((1, 0), dtype=np.float32)


def brute_clearance(walkable):
    height, width = walkable.shape
    out = np.zeros((height, width), dtype=np.int64)
    for y in range(height):
        for x in range(width):
            k = 0
            while y + k < height and x + k < width and walkable[y : y + k + 1, x : x + k + 1].all():
                k += 1
            out[y, x] = k
    return out


def test_clearance_matches_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(60):
        walkable = naive.random_grid(rng, int(rng.integers(1, 30)), int(rng.integers(1, 30)), rng.uniform(0, 0.5))
        clearance = np.zeros(walkable.shape, dtype=np.uint16)
        compute_clearance(walkable.view(np.uint8), clearance, 0, 0, walkable.shape[1], walkable.shape[0])
        assert (clearance == brute_clearance(walkable)).all()


def test_edit_reannotates_like_a_fresh_load():
    rng = np.random.default_rng(1)
    for _ in range(100):
        m = GridMap(naive.random_grid(rng, 30, 20, 0.15))
        x, y = int(rng.integers(-2, 30)), int(rng.integers(-2, 20))
        edited = m.edit(rects=[(x, y, int(rng.integers(1, 6)), int(rng.integers(1, 6)))], solid=bool(rng.integers(2)))
        assert (edited.clearance == brute_clearance(edited.walkable)).all()


def test_components_match_flood_fill():
    rng = np.random.default_rng(2)
    for _ in range(60):
        passable = naive.random_grid(rng, 25, 25, rng.uniform(0.2, 0.6)).astype(np.uint8)
        labels = np.empty(passable.shape, dtype=np.int32)
        n = label_components(passable, 0, labels)
        expected, count = naive.components(passable)
        assert n == count
        # Same partition: labels correspond one to one.
        pairs = set(zip(labels[passable == 1].tolist(), expected[passable == 1].tolist()))
        assert len(pairs) == count
        assert (labels[passable == 0] == 0).all()


@pytest.mark.parametrize("eight", [0, 1])
def test_components_are_numbered_in_the_order_of_their_first_cell(eight):
    rng = np.random.default_rng(12 + eight)
    grids = [naive.random_grid(rng, int(rng.integers(1, 50)), int(rng.integers(1, 50)), rng.uniform(0.05, 0.8))
             for _ in range(150)]
    grids += [np.indices((33, 40)).sum(axis=0) % 2 == 0, np.ones((1, 70), bool), np.zeros((5, 5), bool),
              np.eye(20, dtype=bool), np.eye(20, dtype=bool)[::-1]]
    # Spirals and combs: runs that join far from where they start.
    comb = np.zeros((30, 31), bool)
    comb[::2, :] = True
    comb[:, 0] = True
    grids.append(comb)
    grids.append(comb[::-1, ::-1])
    for walkable in grids:
        passable = walkable.astype(np.uint8)
        labels = np.full(passable.shape, -7, dtype=np.int32)  # every cell must be written
        count = label_components(passable, eight, labels)
        expected, expected_count = (naive.components8 if eight else naive.components)(passable)
        assert count == expected_count
        assert (labels == expected).all()


def test_the_tiled_transpose_is_the_transpose():
    from pathserver.core.jps import _transposed

    rng = np.random.default_rng(3)
    for height, width in [(1, 1), (1, 130), (130, 1), (64, 64), (65, 129), (200, 77)]:
        grid = rng.integers(0, 256, size=(height, width)).astype(np.uint8)
        out = _transposed(grid)
        assert out.flags.c_contiguous and (out == grid.T).all()


def test_eight_connected_components_join_diagonals():
    passable = np.array([[1, 0], [0, 1]], dtype=np.uint8)
    labels = np.empty(passable.shape, dtype=np.int32)
    assert label_components(passable, 0, labels) == 2
    assert label_components(passable, 1, labels) == 1


def block_form(labels):
    """The block-local form of int32 component labels numbered 1..n."""
    count = int(labels.max(initial=0))
    cells = np.empty(labels.shape, dtype=np.uint8)
    comps = block_labels(labels, count, cells)
    return cells, comps


def test_block_labels_round_trip_to_the_global_ids():
    rng = np.random.default_rng(4)
    grids = [naive.random_grid(rng, int(rng.integers(1, 60)), int(rng.integers(1, 60)), rng.uniform(0.1, 0.7))
             for _ in range(60)]
    # The worst case for a block: a checkerboard, 128 components in each 16 x 16 block.
    grids.append((np.indices((40, 37)).sum(axis=0) % 2 == 0))
    for walkable in grids:
        passable = walkable.astype(np.uint8)
        labels = np.empty(passable.shape, dtype=np.int32)
        label_components(passable, 0, labels)
        cells, comps = block_form(labels)
        assert ((cells != 0) == (passable != 0)).all()
        assert (global_labels(cells, comps) == labels).all()
        height, width = labels.shape
        for y in range(height):
            for x in range(width):
                assert component_at(cells, comps, x, y) == labels[y, x]
        # Local indices count the distinct components of each block from 1.
        for by in range(0, height, 16):
            for bx in range(0, width, 16):
                block = labels[by : by + 16, bx : bx + 16]
                assert cells[by : by + 16, bx : bx + 16].max(initial=0) == len(np.unique(block[block > 0]))
    assert cells.max() == 128


def test_nearest_with_label_is_the_euclidean_nearest():
    rng = np.random.default_rng(3)
    for _ in range(200):
        size = int(rng.integers(5, 40))
        labels = (rng.random((size, size)) < 0.1).astype(np.int32) * rng.integers(1, 4, size=(size, size)).astype(np.int32)
        x, y = int(rng.integers(size)), int(rng.integers(size))
        want = int(rng.integers(0, 4))
        cells, comps = block_form(labels)
        status, bx, by = nearest_with_label(cells, comps, x, y, want, size, 0)
        found = [(cx, cy) for cy in range(size) for cx in range(size)
                 if labels[cy, cx] and (want == 0 or labels[cy, cx] == want)]
        if not found:
            assert status == 1
            continue
        best = min((cx - x) ** 2 + (cy - y) ** 2 for cx, cy in found)
        assert status == 0 and (bx - x) ** 2 + (by - y) ** 2 == best and (want == 0 or labels[by, bx] == want)


@pytest.mark.parametrize("distinct", [8, 300])
def test_index_costs_finds_each_cost_in_the_table(distinct):
    rng = np.random.default_rng(distinct)
    values = 1.0 + rng.random(distinct) * 50
    cost = rng.choice(values, size=(40, 40))
    table = np.unique(cost)
    dtype = np.uint8 if len(table) <= 256 else np.uint16
    index = np.zeros(cost.shape, dtype=dtype)
    assert index_costs(cost, table, index, 0, 0, 40, 40) == 0
    assert (table[index] == cost).all()
    assert (index == np.searchsorted(table, cost)).all()
    # Only the box is written; a value missing from the table is reported.
    boxed = np.zeros(cost.shape, dtype=dtype)
    index_costs(cost, table, boxed, 3, 5, 17, 9)
    assert (boxed[5:9, 3:17] == index[5:9, 3:17]).all() and boxed.sum() == boxed[5:9, 3:17].sum()
    assert index_costs(cost, table[1:], index, 0, 0, 40, 40) == 1


@pytest.mark.parametrize("distinct", [8, 300])
def test_footprint_cost_is_the_max_under_the_footprint(distinct):
    rng = np.random.default_rng(4)
    cost = (1.0 + rng.integers(0, distinct, size=(24, 26)) / 7).astype(np.float64)
    table = np.unique(cost)
    index = np.searchsorted(table, cost).astype(np.uint8 if len(table) <= 256 else np.uint16)
    for unit_w, unit_h in ((3, 2), (1, 4), (2, 2), (5, 5)):
        out = np.empty_like(index)
        footprint_cost(index, unit_w, unit_h, (unit_w - 1) // 2, (unit_h - 1) // 2, out)
        for y in range(24):
            for x in range(26):
                cells = [(cx, cy) for cx, cy in naive.footprint_cells(x, y, unit_w, unit_h)
                         if 0 <= cx < 26 and 0 <= cy < 24]
                assert table[out[y, x]] == max(cost[cy, cx] for cx, cy in cells)


def test_straight_grid_path_is_octile_optimal_and_connected():
    rng = np.random.default_rng(5)
    for _ in range(300):
        sx, sy, gx, gy = (int(v) for v in rng.integers(-20, 20, size=4))
        for four in (0, 1):
            path = straight_grid_path(sx, sy, gx, gy, four).tolist()
            assert path[0] == [sx, sy] and path[-1] == [gx, gy]
            steps = [(b[0] - a[0], b[1] - a[1]) for a, b in zip(path[:-1], path[1:])]
            assert all(max(abs(dx), abs(dy)) == 1 and (not four or abs(dx) + abs(dy) == 1) for dx, dy in steps)
            length = naive.path_cost(path)
            dx, dy = abs(gx - sx), abs(gy - sy)
            expected = dx + dy if four else max(dx, dy) + (math.sqrt(2) - 1) * min(dx, dy)
            assert length == np.float64(expected) or abs(length - expected) < 1e-9



@pytest.mark.parametrize("diagonal", ["no_corner_cutting", "never", "always"])
def test_line_is_optimal_is_the_line_walked(diagonal):
    # line_is_optimal walks straight_grid_path's line without building it: True exactly
    # when every step of that line is a legal move (naive.path_is_valid) into a cell of
    # cost 1, on random grids with terrain costs.
    rng = np.random.default_rng(11)
    seen = set()
    for _ in range(60):
        passable = naive.random_grid(rng, 24, 20, 0.15)
        cost = np.where(rng.random(passable.shape) < 0.05, 2.0, 1.0)
        cost_table, cost_index = np.unique(cost, return_inverse=True)
        cost_index = cost_index.reshape(cost.shape).astype(np.uint8)
        free = np.argwhere(passable)
        for _ in range(20):
            (sy, sx), (gy, gx) = free[rng.integers(len(free), size=2)]
            four = diagonal == "never"
            line = straight_grid_path(sx, sy, gx, gy, four).tolist()
            for uniform in (1, 0):
                expected = naive.path_is_valid(passable, line, diagonal) and (
                    uniform or all(cost[y, x] == 1.0 for x, y in line[1:]))
                got = line_is_optimal(sx, sy, gx, gy, four, passable.astype(np.uint8), cost_index, cost_table,
                                      uniform, NO_HEIGHTS, 0, 0.0, DIAGONALS[diagonal])
                assert got == expected, (sx, sy, gx, gy, uniform)
                seen.add(got)
    assert seen == {True, False}

def _touches(x0, y0, x1, y1, cx, cy):
    """Whether the segment between cell centres meets the closed square of cell (cx, cy),
    by exact Liang-Barsky clipping in rationals."""
    from fractions import Fraction as F

    ax, ay = F(2 * x0 + 1, 2), F(2 * y0 + 1, 2)
    dx, dy = F(x1 - x0), F(y1 - y0)
    lo, hi = F(0), F(1)
    for p, q in ((-dx, ax - cx), (dx, cx + 1 - ax), (-dy, ay - cy), (dy, cy + 1 - ay)):
        if p == 0:
            if q < 0:
                return False
        elif p < 0:
            lo = max(lo, q / p)
        else:
            hi = min(hi, q / p)
    return lo <= hi


def test_segment_clear_matches_exact_geometry():
    # A clear segment meets only open cells, counting a cell whose corner it passes
    # exactly through: that is the no-corner-cutting rule for straight lines.
    rng = np.random.default_rng(6)
    for _ in range(300):
        passable = (rng.random((12, 12)) > 0.15).astype(np.uint8)
        x0, y0, x1, y1 = (int(v) for v in rng.integers(0, 12, size=4))
        if not passable[y0, x0]:
            continue
        clear = segment_clear(passable, NO_COST_INDEX, NO_COST_TABLE, 1, 1.0, NO_HEIGHTS, 0, 0.0, 0, x0, y0, x1, y1)
        expected = all(
            passable[cy, cx] or not _touches(x0, y0, x1, y1, cx, cy) for cy in range(12) for cx in range(12)
        )
        assert clear == expected, (x0, y0, x1, y1)



def test_astar_agrees_with_dijkstra():
    from pathserver.core.astar import astar, trace_path

    rng = np.random.default_rng(8)
    n = 30 * 30
    g, heap_keys, heap_tags = np.empty(n), np.empty(n), np.empty(n, np.int64)
    parent, heap_pos = np.empty(n, np.int32), np.empty(n, np.int32)
    stamp = np.zeros(n, np.int32)
    pass_id = 2
    for _ in range(150):
        passable = naive.random_grid(rng, 30, 30, rng.uniform(0, 0.4)).astype(np.uint8)
        cells = np.argwhere(passable)
        if len(cells) < 2:
            continue
        (sy, sx), (gy, gx) = (tuple(int(v) for v in c) for c in cells[rng.choice(len(cells), 2, replace=False)])
        expected = naive.dijkstra(passable, (sx, sy), (gx, gy))
        status, end, _ = astar(passable, NO_COST_INDEX, NO_COST_TABLE, 1, NO_HEIGHTS, 0, 0.0, sx, sy, gx, gy, 0, 0,
                               1.0, 0, g, parent, stamp, pass_id, heap_keys, heap_tags, heap_pos, NO_LANDMARKS)
        pass_id += 2
        if math.isinf(expected):
            assert status == 1
            continue
        assert status == 0
        assert g[end] == pytest.approx(expected, abs=1e-9)
        path = trace_path(parent, 30, sy * 30 + sx, end).tolist()
        assert naive.path_is_valid(passable, [tuple(p) for p in path])


def test_astar_with_costs_heights_and_each_rule_agrees_with_dijkstra():
    # Every copy of the A* loop (uniform octile, weighted octile, any other option set):
    # terrain costs, a table whose cheapest cost is above 1 (h scaled by it), heights with
    # a climb limit, and each diagonal rule with an admissible heuristic.
    from pathserver.core.astar import astar, trace_path
    from pathserver.core.status import (
        DIAGONAL_ALWAYS, DIAGONAL_NEVER, DIAGONAL_NO_CORNER_CUTTING, HEURISTIC_CHEBYSHEV, HEURISTIC_EUCLIDEAN,
        HEURISTIC_MANHATTAN, HEURISTIC_OCTILE,
    )

    rules = [
        ("no_corner_cutting", DIAGONAL_NO_CORNER_CUTTING, HEURISTIC_OCTILE),
        ("no_corner_cutting", DIAGONAL_NO_CORNER_CUTTING, HEURISTIC_EUCLIDEAN),
        ("always", DIAGONAL_ALWAYS, HEURISTIC_CHEBYSHEV),
        ("always", DIAGONAL_ALWAYS, HEURISTIC_OCTILE),
        ("never", DIAGONAL_NEVER, HEURISTIC_MANHATTAN),
    ]
    rng = np.random.default_rng(21)
    width, height = 23, 17
    n = width * height
    g, heap_keys, heap_tags = np.empty(n), np.empty(n), np.empty(n, np.int64)
    parent, heap_pos = np.empty(n, np.int32), np.empty(n, np.int32)
    stamp = np.zeros(n, np.int32)
    pass_id = 2
    for trial in range(120):
        passable = naive.random_grid(rng, width, height, rng.uniform(0, 0.35)).astype(np.uint8)
        if trial % 4 == 0:
            passable[:] = 1
        kind = trial % 3
        if kind == 0:
            cost = np.ones((height, width))
        elif kind == 1:
            cost = rng.integers(1, 5, size=(height, width)).astype(np.float64)
        else:
            cost = rng.uniform(2.0, 6.0, size=(height, width))
        cost_table = np.unique(cost)
        cost_index = np.searchsorted(cost_table, cost).astype(np.uint16)
        uniform = 1 if kind == 0 else 0
        use_heights = trial % 2
        heights = rng.uniform(0, 3, size=(height, width)).astype(np.float32) if use_heights else NO_HEIGHTS
        climb = 1.5
        cells = np.argwhere(passable)
        if len(cells) < 2:
            continue
        (sy, sx), (gy, gx) = (tuple(int(v) for v in c) for c in cells[rng.choice(len(cells), 2, replace=False)])
        for name, diagonal, heuristic in rules:
            expected = naive.dijkstra(passable, (sx, sy), (gx, gy), name, cost=cost,
                                      heights=heights if use_heights else None, max_climb=climb if use_heights else None)
            status, end, _ = astar(passable, cost_index, cost_table, uniform, heights, use_heights, climb, sx, sy, gx, gy,
                                   diagonal, heuristic, 1.0, 0, g, parent, stamp, pass_id, heap_keys, heap_tags, heap_pos,
                                   NO_LANDMARKS)
            pass_id += 2
            if math.isinf(expected):
                assert status == 1
                continue
            assert status == 0
            assert g[end] == pytest.approx(expected, rel=1e-12), (trial, name)
            path = [tuple(p) for p in trace_path(parent, width, sy * width + sx, end).tolist()]
            assert naive.path_is_valid(passable, path, name, heights if use_heights else None,
                                       climb if use_heights else None)
