"""The kernels of the queries beyond one path, called directly, against tests/naive.py
(the searches themselves are checked through their wrappers in tests/grid/test_queries.py)."""

import numpy as np
import pytest

import naive
from pathserver import GridMap
from pathserver.core.avoid import (
    LAY_GOAL_BLOCKED,
    LAY_NOT_PLAIN,
    block_anchors,
    lay_cells,
    price_anchors,
    restore_anchors,
)
from pathserver.core.cut import block_pieces
from pathserver.core.dijkstra import _field_buckets, _field_heap, field_whole, ring_size
from pathserver.core.goals import goal_boxes
from pathserver.grid.prepared import workspace


def _boxes(rng, width, height, count):
    boxes = []
    for _ in range(count):
        x0, y0 = int(rng.integers(0, width)), int(rng.integers(0, height))
        boxes.append((x0, y0, min(width, x0 + int(rng.integers(1, 4))), min(height, y0 + int(rng.integers(1, 4)))))
    return np.array(boxes, dtype=np.int64).reshape(-1, 4)


@pytest.mark.parametrize("unit", [(1, 1), (2, 2), (3, 2), (1, 3)])
def test_blocked_anchors_are_those_whose_footprint_overlaps_and_restore_undoes_them(unit):
    rng = np.random.default_rng(sum(unit))
    for _ in range(40):
        width, height = int(rng.integers(3, 20)), int(rng.integers(3, 20))
        cells = (rng.random((height, width)) > 0.2).astype(np.uint8)
        boxes = _boxes(rng, width, height, int(rng.integers(0, 4)))
        solid = naive.covered((height, width), rects=[(x0, y0, x1 - x0, y1 - y0) for x0, y0, x1, y1 in boxes])
        grid = cells.copy()
        block_anchors(grid, boxes, *unit)
        assert np.array_equal(grid, np.where(naive.overlapping(solid, *unit), 0, cells))
        restore_anchors(grid, cells, boxes, *unit)
        assert np.array_equal(grid, cells)
        index = rng.integers(0, 3, size=(height, width)).astype(np.uint8)
        table = np.array([1.0, 2.0, 9.0, 4.0])  # slot 3 holds the avoid cost, 4
        priced = index.copy()
        price_anchors(priced, index, table, 0, boxes, *unit, 3, 4.0)
        expected = np.where(naive.overlapping(solid, *unit) & (table[index] < 4.0), 3, index)
        assert np.array_equal(priced, expected)


@pytest.mark.parametrize("unit", [(1, 1), (2, 2), (3, 2)])
def test_lay_cells_blocks_what_the_floored_cells_and_rectangles_cover_but_the_start(unit):
    # The quick way's one kernel: the anchors whose footprint overlaps a cell a point
    # falls in or a cell a rectangle overlaps (math.floor / math.ceil, clipped), cleared;
    # the start its own again; refused with the grid untouched for a number not finite,
    # a rectangle not wider and taller than 0, or the goal (not the start) left unfree.
    import math

    rng = np.random.default_rng(10 + sum(unit))
    outcomes = {"laid": 0, LAY_NOT_PLAIN: 0, LAY_GOAL_BLOCKED: 0}
    for _ in range(300):
        width, height = int(rng.integers(3, 16)), int(rng.integers(3, 16))
        source = (rng.random((height, width)) > 0.2).astype(np.uint8)
        k, r = int(rng.integers(0, 6)), int(rng.integers(0, 3))
        points = np.stack([rng.uniform(-2, width + 2, k), rng.uniform(-2, height + 2, k)], axis=1)
        rects = np.stack([rng.uniform(-2, width + 1, r), rng.uniform(-2, height + 1, r), rng.uniform(0.2, 4, r),
                          rng.uniform(0.2, 4, r)], axis=1)
        if rng.integers(8) == 0 and len(points):
            points[rng.integers(len(points)), rng.integers(2)] = rng.choice([np.nan, np.inf, -np.inf])
        if rng.integers(8) == 0 and len(rects):
            rects[rng.integers(len(rects)), 2 + rng.integers(2)] = rng.choice([0.0, -1.0])
        (sy, sx), (gy, gx) = rng.integers(0, [height, width], size=(2, 2))
        if rng.integers(6) == 0:
            gx, gy = sx, sy
        grid = source.copy()
        boxes = np.zeros((len(points) + len(rects), 4), dtype=np.int64)
        answer = lay_cells(grid, source, points, rects, *unit, int(sx), int(sy), int(gx), int(gy), boxes)
        if not (np.isfinite(points).all() and np.isfinite(rects).all() and (rects[:, 2:] > 0).all()):
            assert answer == LAY_NOT_PLAIN and np.array_equal(grid, source)
            outcomes[answer] += 1
            continue
        solid = np.zeros((height, width), dtype=bool)
        for x, y in points:
            if 0 <= x < width and 0 <= y < height:
                solid[math.floor(y), math.floor(x)] = True
        for x, y, w, h in rects:
            solid[max(0, math.floor(y)):max(0, math.ceil(y + h)), max(0, math.floor(x)):max(0, math.ceil(x + w))] = True
        expected = np.where(naive.overlapping(solid, *unit), 0, source)
        expected[sy, sx] = source[sy, sx]
        if expected[gy, gx] == 0 and (gx, gy) != (sx, sy):
            assert answer == LAY_GOAL_BLOCKED and np.array_equal(grid, source)
            outcomes[answer] += 1
            continue
        assert answer >= 0 and np.array_equal(grid, expected)
        outcomes["laid"] += 1
        restore_anchors(grid, source, boxes[:answer], *unit)
        assert np.array_equal(grid, source)
    assert min(outcomes.values()) >= 20, outcomes


@pytest.mark.parametrize("eight", [0, 1])
def test_block_pieces_are_the_components_of_each_block(eight):
    rng = np.random.default_rng(eight)
    label = naive.components8 if eight else naive.components
    for _ in range(20):
        width, height = int(rng.integers(1, 50)), int(rng.integers(1, 50))
        cells = (rng.random((height, width)) > 0.45).astype(np.uint8)
        pieces, first = block_pieces(cells, eight)
        assert np.array_equal(pieces != 0, cells != 0)
        per_row = (width + 15) // 16
        for by in range(0, height, 16):
            for bx in range(0, width, 16):
                block = cells[by:by + 16, bx:bx + 16]
                expected, count = label(block)
                got = pieces[by:by + 16, bx:bx + 16]
                b = (by // 16) * per_row + bx // 16
                assert first[b + 1] - first[b] == count
                # The same partition: each expected piece has one label, and vice versa.
                pairs = {(int(e), int(g)) for e, g in zip(expected.ravel(), got.ravel()) if e}
                assert len(pairs) == count == len({g for _, g in pairs})


def test_goal_boxes_hold_every_goal():
    rng = np.random.default_rng(3)
    for n in (1, 5, 16, 17, 100, 1000):
        points = rng.integers(0, 500, size=(n, 2))
        boxes = goal_boxes(points, n, 16)
        assert len(boxes) == min(n, 16)
        inside = ((points[:, None, 0] >= boxes[None, :, 0]) & (points[:, None, 0] <= boxes[None, :, 2])
                  & (points[:, None, 1] >= boxes[None, :, 1]) & (points[:, None, 1] <= boxes[None, :, 3]))
        assert inside.any(axis=1).all()


@pytest.mark.parametrize("uniform", [0, 1])
@pytest.mark.parametrize("diagonal", [0, 1, 2])
def test_the_bucket_queues_and_the_heap_agree_with_dijkstra(diagonal, uniform):
    # uniform: every cost 1, which field_whole reads without its cost table (and, with
    # corners not cut, away from the border without testing bounds).
    names = {0: "no_corner_cutting", 1: "never", 2: "always"}
    rng = np.random.default_rng(10 + diagonal + 3 * uniform)
    for _ in range(30):
        width, height = int(rng.integers(3, 25)), int(rng.integers(3, 25))
        walkable = naive.random_grid(rng, width, height, 0.25)
        m = GridMap(walkable) if uniform else GridMap(walkable, rng.choice([1.0, 1.5, 3.0], size=(height, width)))
        layer = m.layer(1)
        standable = np.flatnonzero(layer.cells.ravel())
        if not len(standable):
            continue
        sources = rng.choice(standable, size=min(3, len(standable)), replace=False).astype(np.int64)
        ring = ring_size(layer.cost_table, uniform)
        assert ring >= np.ceil(np.sqrt(2) * (1 if uniform else layer.cost_table.max())) + 1
        region = np.array([0, 0, width, height], dtype=np.int64)
        ws = workspace(m.width * m.height)
        heights = np.zeros((1, 1), dtype=np.float32)
        outs = []
        for kernel in (_field_buckets, _field_heap):
            out = np.full((height, width), np.inf)
            extra = (ring,) if kernel is _field_buckets else ()
            kernel(layer.cells, layer.cost_index, layer.cost_table, uniform, heights, 0, 0.0, diagonal, sources,
                   np.inf, region, -1, out, ws.work_float, ws.work_int, *extra)
            outs.append(out)
        out = np.full((height, width), np.inf)
        steps = np.full(width * height, -2, dtype=np.int32)
        field_whole(layer.cells, layer.cost_index, layer.cost_table, uniform, heights, 0, 0.0, diagonal, sources, ring,
                    out, np.zeros(width * height, dtype=np.uint8), steps, 1)
        outs.append(out)
        # Each recorded step is a move of the graph that its cell's value came through.
        moves = {(a, b): w for a, b, w in naive.edges(layer.passable, names[diagonal], layer.cost)}
        for node in np.flatnonzero(np.isfinite(out.ravel())):
            here = (int(node % width), int(node // width))
            if steps[node] == -1:
                assert out.ravel()[node] == 0
                continue
            there = (int(steps[node] % width), int(steps[node] // width))
            assert out[there[1], there[0]] + moves[here, there] == out[here[1], here[0]]
        graph = naive.edges(layer.passable, names[diagonal], layer.cost)
        expected = np.full((height, width), np.inf)
        goals = [(int(s % width), int(s // width)) for s in sources]
        for (x, y), d in naive.costs_to(graph, goals).items():
            expected[y, x] = d
        for out in outs:
            assert np.array_equal(np.isinf(out), np.isinf(expected))
            assert np.allclose(out[np.isfinite(out)], expected[np.isfinite(expected)], rtol=1e-12)


@pytest.mark.parametrize("eight", [0, 1])
def test_the_piece_graph_joins_pieces_touching_across_block_borders(eight):
    from pathserver.core.cut import piece_graph

    rng = np.random.default_rng(20 + eight)
    for _ in range(10):
        width, height = int(rng.integers(1, 60)), int(rng.integers(1, 60))
        cells = (rng.random((height, width)) > 0.4).astype(np.uint8)
        pieces, first = block_pieces(cells, eight)
        offsets, targets, node_cells = piece_graph(pieces, first, eight)
        per_row = (width + 15) // 16

        def node(x, y):
            return int(first[(y // 16) * per_row + x // 16] + pieces[y, x] - 1)

        expected = set()
        for y in range(height):
            for x in range(width):
                if not cells[y, x]:
                    continue
                for dx in (-1, 0, 1):
                    for dy in (-1, 0, 1):
                        nx, ny = x + dx, y + dy
                        if (dx, dy) == (0, 0) or (dx and dy and not eight):
                            continue
                        if 0 <= nx < width and 0 <= ny < height and cells[ny, nx] and (nx // 16, ny // 16) != (
                                x // 16, y // 16):
                            expected.add((node(x, y), node(nx, ny)))
        got = {(i, int(t)) for i in range(len(offsets) - 1) for t in targets[offsets[i]:offsets[i + 1]]}
        assert got == expected
        for i, (x, y) in enumerate(node_cells.tolist()):
            assert node(x, y) == i


@pytest.mark.parametrize("eight", [0, 1])
def test_pieces_updated_after_an_edit_equal_a_fresh_build(eight):
    from pathserver.core.cut import piece_graph, update_pieces

    rng = np.random.default_rng(40 + eight)
    for _ in range(40):
        width, height = int(rng.integers(1, 80)), int(rng.integers(1, 80))
        before = (rng.random((height, width)) > rng.uniform(0.1, 0.5)).astype(np.uint8)
        after = before.copy()
        for _ in range(int(rng.integers(0, 4))):
            x, y = int(rng.integers(width)), int(rng.integers(height))
            after[y:y + int(rng.integers(1, 6)), x:x + int(rng.integers(1, 6))] = rng.integers(0, 2)
        old = block_pieces(before, eight)
        old = (*old, *piece_graph(*old, eight))
        fresh = block_pieces(after, eight)
        fresh = (*fresh, *piece_graph(*fresh, eight))
        updated = update_pieces(after, before, *old, eight)
        for got, expected in zip(updated, fresh):
            assert np.array_equal(got, expected)
