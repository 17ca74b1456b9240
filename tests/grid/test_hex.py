"""Hex maps against a slow, obviously correct reference: Dijkstra on the hex graph, with
the six neighbours of Red Blob Games' offset tables, in all four layouts, unit sizes 1 to
3, terrain costs, tags and edits."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest

import naive

from pathserver import GridMap
from pathserver.errors import BadUnitSizeError, MapLoadError, RequestError
from pathserver.grid.overlay import Overlay
from pathserver.grid.queries import distance_field, next_steps, reachable
from pathserver.grid.search import find_path, find_paths
# Red Blob Games' offset tables, written out in pathserver.hexes independently of the
# kernels' direction bits.
from pathserver.hexes import LAYOUTS, neighbours


def ball(layout, x, y, radius):
    """The cells within hex distance ``radius`` of (x, y), by breadth-first steps."""
    seen = {(x, y)}
    ring = [(x, y)]
    for _ in range(radius):
        ring = [n for c in ring for n in neighbours(layout, *c) if n not in seen]
        seen.update(ring)
    return seen


def over_balls(values, layout, size, fold):
    """``fold`` of each cell's footprint's values (the cells within hex distance
    ``size - 1``, off-map ones as None)."""
    height, width = values.shape
    out = np.empty(values.shape, dtype=values.dtype)
    for y in range(height):
        for x in range(width):
            out[y, x] = fold(values[cy, cx] if 0 <= cx < width and 0 <= cy < height else None
                             for cx, cy in ball(layout, x, y, size - 1))
    return out


def standable(walkable, layout, size):
    return over_balls(walkable, layout, size, lambda cells: all(c is not None and c for c in cells))


def enter_cost(cost, layout, size):
    """The highest cost within the unit's footprint, as the unit pays to enter a cell."""
    return over_balls(cost, layout, size, lambda costs: max(c for c in costs if c is not None))


def dijkstra(walkable, cost, layout, size, sources, back=False):
    """Cost from the nearest source to every cell (inf where unreachable); ``back``: from
    every cell to the nearest source (a step pays for the cell it enters)."""
    height, width = walkable.shape
    ok = standable(walkable, layout, size)
    entry = enter_cost(cost, layout, size)
    dist = np.full(walkable.shape, np.inf)
    heap = []
    for x, y in sources:
        if ok[y, x]:
            dist[y, x] = 0.0
            heap.append((0.0, x, y))
    heapq.heapify(heap)
    while heap:
        d, x, y = heapq.heappop(heap)
        if d > dist[y, x]:
            continue
        for nx, ny in neighbours(layout, x, y):
            if 0 <= nx < width and 0 <= ny < height and ok[ny, nx]:
                nd = d + (entry[y, x] if back else entry[ny, nx])
                if nd < dist[ny, nx] - 1e-12:
                    dist[ny, nx] = nd
                    heapq.heappush(heap, (nd, nx, ny))
    return dist


def random_map(rng, layout, width=14, height=11, costs=True):
    walkable = rng.random((height, width)) > 0.25
    cost = np.where(rng.random((height, width)) < 0.3, rng.integers(2, 6, (height, width)), 1).astype(float)
    if not costs:
        cost = None
    return GridMap(walkable, cost, shape="hex", layout=layout), walkable, (np.ones_like(walkable, float) if cost is None else cost)


def assert_valid_path(path, gridmap, walkable, cost, layout, size):
    ok = standable(walkable, layout, size)
    entry = enter_cost(cost, layout, size)
    total = 0.0
    for (x0, y0), (x1, y1) in zip(path[:-1], path[1:]):
        assert (x1, y1) in neighbours(layout, x0, y0), (path, (x0, y0), (x1, y1))
        assert ok[y1, x1]
        total += entry[y1, x1]
    return total


@pytest.mark.parametrize("layout", LAYOUTS)
def test_paths_are_exact(layout):
    rng = np.random.default_rng(LAYOUTS.index(layout))
    for trial in range(12):
        gridmap, walkable, cost = random_map(rng, layout, costs=trial % 2 == 1)
        size = 1 + trial % 3
        ok = standable(walkable, layout, size)
        cells = np.argwhere(ok)
        if len(cells) < 2:
            continue
        for _ in range(6):
            (sy, sx), (gy, gx) = cells[rng.choice(len(cells), 2, replace=False)]
            expected = dijkstra(walkable, cost, layout, size, [(sx, sy)])[gy, gx]
            result = find_path(gridmap, (int(sx), int(sy)), (int(gx), int(gy)), size, smooth="none", snap=False)
            if math.isinf(expected):
                assert not result.found
                continue
            assert result.found
            path = [tuple(p) for p in result.path.tolist()]
            assert path[0] == (sx, sy) and path[-1] == (gx, gy)
            assert assert_valid_path(path, gridmap, walkable, cost, layout, size) == pytest.approx(expected)
            assert result.cost == pytest.approx(expected)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_fields_reach_and_steps_are_exact(layout):
    rng = np.random.default_rng(10 + LAYOUTS.index(layout))
    for trial in range(6):
        gridmap, walkable, cost = random_map(rng, layout, costs=trial % 2 == 0)
        size = 1 + trial % 3
        cells = np.argwhere(standable(walkable, layout, size))
        if len(cells) < 3:
            continue
        goals = [(int(x), int(y)) for y, x in cells[rng.choice(len(cells), 2, replace=False)]]
        expected = dijkstra(walkable, cost, layout, size, goals, back=True)
        field = distance_field(gridmap, goals, size, snap=False)
        finite = np.isfinite(expected)
        assert np.array_equal(np.isfinite(field), finite)
        assert np.allclose(field[finite], expected[finite])
        start = goals[0]
        budget = 6.0
        reach = dijkstra(walkable, cost, layout, size, [start])
        got = reachable(gridmap, start, budget, size)
        want = {(int(x), int(y)) for y, x in np.argwhere(reach <= budget + 1e-9)}
        assert {tuple(c) for c in got.cells.tolist()} == want
        # Each step goes downhill on the reference field by the cost of the cell entered.
        spots = [(int(x), int(y)) for y, x in cells[:8]]
        steps, remaining = next_steps(gridmap, goals, size, spots)
        entry = enter_cost(cost, layout, size)
        for (x, y), step in zip(spots, steps.astype(int).tolist()):
            if not np.isfinite(expected[y, x]) or expected[y, x] == 0:
                continue
            nx, ny = step
            assert (nx, ny) in neighbours(layout, x, y)
            assert expected[ny, nx] + entry[ny, nx] == pytest.approx(expected[y, x])


def test_hex_map_is_checked():
    walkable = np.ones((5, 5), bool)
    with pytest.raises(MapLoadError) as error:
        GridMap(walkable, shape="hex")
    assert error.value.at == "layout"
    with pytest.raises(MapLoadError) as error:
        GridMap(walkable, shape="hex", layout="odd-x")
    assert error.value.at == "layout"
    with pytest.raises(MapLoadError) as error:
        GridMap(walkable, shape="round")
    assert error.value.at == "shape"
    gridmap = GridMap(walkable, shape="hex", layout="odd-r")
    with pytest.raises(RequestError) as error:
        find_path(gridmap, (0, 0), (4, 4), diagonal="never")
    assert error.value.at == "diagonal"
    with pytest.raises(BadUnitSizeError):
        find_path(gridmap, (2, 2), (2, 2), (1, 2))
    with pytest.raises(BadUnitSizeError):
        find_path(gridmap, (2, 2), (2, 2), 4)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_smoothing_keeps_hex_lines(layout):
    rng = np.random.default_rng(20 + LAYOUTS.index(layout))
    gridmap, walkable, cost = random_map(rng, layout, width=20, height=16, costs=False)
    cells = np.argwhere(walkable)
    for _ in range(20):
        (sy, sx), (gy, gx) = cells[rng.choice(len(cells), 2, replace=False)]
        every = find_path(gridmap, (int(sx), int(sy)), (int(gx), int(gy)), smooth="none", snap=False)
        if not every.found:
            continue
        corners = find_path(gridmap, (int(sx), int(sy)), (int(gx), int(gy)), smooth="corners", snap=False)
        assert corners.cost == pytest.approx(every.cost)
        # Corners keep the turns of the every-cell path: one straight hex run between each two.
        assert len(corners.path) <= len(every.path)
        assert every.length == pytest.approx(len(every.path) - 1)


def test_edits_and_batches():
    walkable = np.ones((9, 9), bool)
    gridmap = GridMap(walkable, shape="hex", layout="even-q")
    edited = gridmap.edit(rects=[(4, 0, 1, 8)], solid=True)
    expected = dijkstra(edited.walkable, np.ones((9, 9)), "even-q", 1, [(0, 0)])[0, 8]
    assert find_path(edited, (0, 0), (8, 0), smooth="none").cost == pytest.approx(expected)
    results = find_paths(edited, [(0, 0), (1, 1)], [(8, 0), (8, 8)])
    for result, (start, goal) in zip(results, [((0, 0), (8, 0)), ((1, 1), (8, 8))]):
        reference = dijkstra(edited.walkable, np.ones((9, 9)), "even-q", 1, [start])
        assert result.cost == pytest.approx(reference[goal[1], goal[0]])


def test_an_overlay_put_back_keeps_the_hex_grid():
    """The shared state puts a map file's recorded edits back onto it when it reloads
    (:mod:`pathserver.grid.overlay`): the map stays the hex map the file is."""
    gridmap = GridMap(np.ones((4, 5), bool), shape="hex", layout="even-q", cell_size=(32.0, 28.0))
    edited = gridmap.edit(cells=[(2, 1)], solid=True)
    overlay = Overlay.empty(4, 5)
    overlay.record(edited, [(2, 1, 1, 1)])
    restored = overlay.apply_to(gridmap, 7)
    assert (restored.shape, restored.layout, restored.hex) == ("hex", "even-q", gridmap.hex)
    assert restored.cell_size == (32.0, 28.0) and (restored.walkable == edited.walkable).all()


def hex_components(layout):
    """naive.flood's labelling with the hex layout's neighbours."""
    return lambda passable: naive.flood(passable, lambda x, y: neighbours(layout, x, y))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_goals_avoid_and_tags_are_exact(layout):
    rng = np.random.default_rng(30 + LAYOUTS.index(layout))
    for trial in range(8):
        size = 1 + trial % 3
        height, width = 12, 13
        walkable = rng.random((height, width)) > 0.2
        cost = np.where(rng.random((height, width)) < 0.3, 3.0, 1.0)
        tags = np.where(rng.random((height, width)) < 0.2, 1, 0).astype(np.uint8)
        gridmap = GridMap(walkable, cost, tags=tags, tag_names={"water": 1}, shape="hex", layout=layout)
        cells = np.argwhere(standable(walkable, layout, size))
        if len(cells) < 4:
            continue
        picks = cells[rng.choice(len(cells), 4, replace=False)]
        (sy, sx), goals = picks[0], [(int(x), int(y)) for y, x in picks[1:]]
        start = (int(sx), int(sy))
        # Many goals: the cheapest of them.
        reference = dijkstra(walkable, cost, layout, size, [start])
        best = min(reference[y, x] for x, y in goals)
        result = find_path(gridmap, start, goals=goals, unit_size=size, smooth="none", snap=False)
        assert result.found == math.isfinite(best)
        if result.found:
            assert result.cost == pytest.approx(best)
        # Avoided cells: no footprint may overlap them.
        avoid = [(int(x), int(y)) for y, x in np.argwhere(walkable)[rng.choice(int(walkable.sum()), 5)]]
        if start in avoid:
            continue
        open_cells = walkable.copy()
        for x, y in avoid:
            open_cells[y, x] = False
        goal = goals[0]
        expected = dijkstra(open_cells, cost, layout, size, [start])[goal[1], goal[0]]
        ok = standable(open_cells, layout, size)
        if ok[goal[1], goal[0]] and ok[start[1], start[0]]:
            result = find_path(gridmap, start, goal, size, smooth="none", snap=False, avoid={"cells": avoid})
            assert result.found == math.isfinite(expected)
            if result.found:
                assert result.cost == pytest.approx(expected)
                ok = standable(open_cells, layout, size)
                assert all(ok[y, x] for x, y in result.path.tolist()[1:])
        # Traversal: water blocked, then dearer.
        dry = walkable & (tags == 0)
        expected = dijkstra(dry, cost, layout, size, [start])[goal[1], goal[0]]
        if standable(dry, layout, size)[start[1], start[0]] and standable(dry, layout, size)[goal[1], goal[0]]:
            result = find_path(gridmap, start, goal, size, smooth="none", snap=False, traversal={"water": None})
            assert result.found == math.isfinite(expected)
            if result.found:
                assert result.cost == pytest.approx(expected)
        wet = np.where(tags == 1, cost * 2, cost)
        expected = dijkstra(walkable, wet, layout, size, [start])[goal[1], goal[0]]
        result = find_path(gridmap, start, goal, size, smooth="none", snap=False, traversal={"water": 2})
        assert result.found == math.isfinite(expected)
        if result.found:
            assert result.cost == pytest.approx(expected)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_check_block_is_exact(layout):
    from pathserver.grid.queries import check_block

    rng = np.random.default_rng(40 + LAYOUTS.index(layout))
    for trial in range(10):
        size = 1 + trial % 2
        walkable = rng.random((20, 22)) > 0.3
        gridmap = GridMap(walkable, shape="hex", layout=layout)
        ok = standable(walkable, layout, size)
        cells = np.argwhere(ok)
        if len(cells) < 6:
            continue
        points = [(int(x), int(y)) for y, x in cells[rng.choice(len(cells), 6, replace=False)]]
        solid = [(int(x), int(y)) for y, x in np.argwhere(walkable)[rng.choice(int(walkable.sum()), 4)]]
        after = walkable.copy()
        for x, y in solid:
            after[y, x] = False
        expected = naive.cut_pairs(ok, standable(after, layout, size), points, label=hex_components(layout))
        assert check_block(gridmap, cells=solid, unit_size=size, points=points, snap=False) == expected


@pytest.mark.parametrize("layout", LAYOUTS)
def test_los_smoothing_keeps_to_clear_hex_lines(layout):
    from pathserver.core.lines import straight_grid_path
    from pathserver.core.status import DIAGONAL_HEX

    code = DIAGONAL_HEX + LAYOUTS.index(layout)
    rng = np.random.default_rng(50 + LAYOUTS.index(layout))
    gridmap, walkable, cost = random_map(rng, layout, width=24, height=18, costs=False)
    for size in (1, 2):
        ok = standable(walkable, layout, size)
        cells = np.argwhere(ok)
        for _ in range(15):
            (sy, sx), (gy, gx) = cells[rng.choice(len(cells), 2, replace=False)]
            every = find_path(gridmap, (int(sx), int(sy)), (int(gx), int(gy)), size, smooth="none", snap=False)
            los = find_path(gridmap, (int(sx), int(sy)), (int(gx), int(gy)), size, smooth="los", snap=False)
            assert every.found == los.found
            if not los.found:
                continue
            points = los.path.tolist()
            assert points[0] == [sx, sy] and points[-1] == [gx, gy]
            for a, b in zip(points[:-1], points[1:]):
                line = straight_grid_path(a[0], a[1], b[0], b[1], code).tolist()
                assert line[0] == a and line[-1] == b
                for (x0, y0), (x1, y1) in zip(line[:-1], line[1:]):
                    assert (x1, y1) in neighbours(layout, x0, y0)
                assert all(ok[y, x] for x, y in line)


def test_partial_and_snapping():
    walkable = np.ones((9, 9), bool)
    walkable[:, 4] = False
    gridmap = GridMap(walkable, shape="hex", layout="odd-r")
    result = find_path(gridmap, (0, 4), (8, 4), allow_partial=True, smooth="none")
    assert result.status == "partial"
    # The partial path ends on the reachable cell nearest the goal by hex distance.
    x, y = result.path[-1].tolist()
    assert x == 3
    snapped = find_path(gridmap, (4, 4), (0, 0), smooth="none")
    assert snapped.found and snapped.path[0].tolist() in ([3, 4], [5, 4], [3, 3], [3, 5], [4, 3], [4, 5])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_kernels_draw_hex_lines_as_pathserver_hexes_does(layout):
    from pathserver.core.lines import straight_grid_path
    from pathserver.core.status import DIAGONAL_HEX
    from pathserver.hexes import hex_line

    rng = np.random.default_rng(60 + LAYOUTS.index(layout))
    for _ in range(200):
        (x0, y0), (x1, y1) = rng.integers(0, 30, (2, 2)).tolist()
        drawn = straight_grid_path(x0, y0, x1, y1, DIAGONAL_HEX + LAYOUTS.index(layout))
        assert drawn.tolist() == hex_line(layout, (x0, y0), (x1, y1)).tolist()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_avoid_cost_prices_the_footprints_over_avoided_cells(layout):
    rng = np.random.default_rng(70 + LAYOUTS.index(layout))
    for trial in range(6):
        size = 1 + trial % 3
        gridmap, walkable, cost = random_map(rng, layout)
        cells = np.argwhere(standable(walkable, layout, size))
        if len(cells) < 2:
            continue
        avoid = [(int(x), int(y)) for y, x in np.argwhere(walkable)[rng.choice(int(walkable.sum()), 4)]]
        marked = np.zeros(walkable.shape, bool)
        for x, y in avoid:
            marked[y, x] = True
        # Entering an anchor whose footprint covers an avoided cell costs at least 6.
        near = over_balls(marked, layout, size, lambda cells: any(c for c in cells if c is not None))
        priced = np.where(near, np.maximum(enter_cost(cost, layout, size), 6.0), enter_cost(cost, layout, size))
        (sy, sx), (gy, gx) = cells[rng.choice(len(cells), 2, replace=False)]
        start, goal = (int(sx), int(sy)), (int(gx), int(gy))
        # The anchors' own prices, searched as a size-1 unit on the cells this unit stands on.
        ok = standable(walkable, layout, size)
        expected = dijkstra(ok, priced, layout, 1, [start])[gy, gx]
        result = find_path(gridmap, start, goal, size, smooth="none", snap=False, avoid={"cells": avoid},
                           avoid_cost=6.0)
        assert result.found == math.isfinite(expected)
        if result.found:
            assert result.cost == pytest.approx(expected)


@pytest.mark.parametrize("layout", ["odd-r", "even-q"])
def test_landmarks_keep_hex_paths_exact(layout):
    """A hex map of 128 x 128 cells or more gets A*'s landmarks, uniform or not."""
    rng = np.random.default_rng(80 + LAYOUTS.index(layout))
    walkable = rng.random((130, 130)) > 0.3
    for costs in (False, True):
        cost = np.where(rng.random(walkable.shape) < 0.3, 3.0, 1.0) if costs else np.ones(walkable.shape)
        gridmap = GridMap(walkable, cost if costs else None, shape="hex", layout=layout)
        cells = np.argwhere(walkable)
        (sy, sx), (gy, gx) = cells[0], cells[-1]
        find_path(gridmap, (int(sx), int(sy)), (int(gx), int(gy)))  # starts the build
        layer = gridmap.layer_for(1, 1)
        assert layer.wait_landmarks(120.0) and layer.landmarks() is not None
        for _ in range(4):
            (sy, sx), (gy, gx) = cells[rng.choice(len(cells), 2, replace=False)]
            expected = dijkstra(walkable, cost, layout, 1, [(int(sx), int(sy))])[gy, gx]
            result = find_path(gridmap, (int(sx), int(sy)), (int(gx), int(gy)), smooth="none")
            assert result.found == math.isfinite(expected)
            if result.found:
                assert result.cost == pytest.approx(expected)
