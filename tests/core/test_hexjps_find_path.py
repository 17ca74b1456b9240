"""find_path on hex maps of uniform cost runs hex JPS (pathserver.core.hexjps): every
answer against Dijkstra on the hex graph of the unit's standable cells (Red Blob Games'
offset tables, pathserver.hexes), in all four layouts, unit sizes 1 and 2, walls from
none to 40%; and where it does not run."""

from __future__ import annotations

import heapq
from pathlib import Path

import numpy as np
import pytest

from pathserver import GridMap
from pathserver.grid import prepared
from pathserver.grid.search import find_path
from pathserver.hexes import LAYOUTS, neighbours

MOVINGAI = Path(__file__).resolve().parents[3] / "shared" / "movingai"
DEN520D = next(MOVINGAI.rglob("den520d.map"), None) if MOVINGAI.is_dir() else None


def standable(walkable, layout, size):
    """Where a unit of ``size`` stands: every cell within hex distance size - 1 walkable
    and on the map."""
    height, width = walkable.shape
    ok = np.zeros(walkable.shape, dtype=bool)
    for y in range(height):
        for x in range(width):
            ring, seen = [(x, y)], {(x, y)}
            for _ in range(size - 1):
                ring = [n for c in ring for n in neighbours(layout, *c) if n not in seen]
                seen.update(ring)
            ok[y, x] = all(0 <= cx < width and 0 <= cy < height and walkable[cy, cx] for cx, cy in seen)
    return ok


def dijkstra(ok, layout, start):
    height, width = ok.shape
    dist = np.full(ok.shape, np.inf)
    dist[start[1], start[0]] = 0.0
    heap = [(0.0, start)]
    while heap:
        d, (x, y) = heapq.heappop(heap)
        if d > dist[y, x]:
            continue
        for nx, ny in neighbours(layout, x, y):
            if 0 <= nx < width and 0 <= ny < height and ok[ny, nx] and d + 1 < dist[ny, nx]:
                dist[ny, nx] = d + 1
                heapq.heappush(heap, (d + 1, (nx, ny)))
    return dist


def check(result, ok, layout, start, goal, expected):
    if np.isinf(expected):
        assert not result.found
        return
    assert result.found and result.algorithm == "jps"
    assert abs(result.cost - expected) < 1e-9, (start, goal, result.cost, expected)
    path = [tuple(p) for p in result.path.tolist()]
    assert path[0] == start and path[-1] == goal and len(path) == expected + 1
    for a, b in zip(path, path[1:]):
        assert b in neighbours(layout, *a) and ok[b[1], b[0]], (a, b)


@pytest.fixture
def everywhere(monkeypatch):
    """Hex JPS on every hex map of uniform cost, clutter too (auto leaves it to A* there)."""
    monkeypatch.setattr(prepared, "HEX_JPS_MIN_OPEN_SHARE", 0.0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_random_maps_are_exact(layout, everywhere):
    rng = np.random.default_rng(100 + LAYOUTS.index(layout))
    for trial in range(24):
        width, height = (int(v) for v in rng.integers(5, 41, 2))
        walkable = rng.random((height, width)) >= (0.0, 0.1, 0.2, 0.3, 0.4)[trial % 5]
        size = 1 + trial % 2
        gridmap = GridMap(walkable, shape="hex", layout=layout)
        ok = standable(walkable, layout, size)
        cells = np.argwhere(ok)
        if len(cells) < 2:
            continue
        for start_yx in cells[rng.choice(len(cells), min(3, len(cells)), replace=False)]:
            start = (int(start_yx[1]), int(start_yx[0]))
            dist = dijkstra(ok, layout, start)
            for goal_yx in cells[rng.choice(len(cells), min(12, len(cells)), replace=False)]:
                goal = (int(goal_yx[1]), int(goal_yx[0]))
                result = find_path(gridmap, start, goal, size, smooth="none", snap=False, line_of_sight=False)
                check(result, ok, layout, start, goal, dist[goal[1], goal[0]])


def test_weighted_maps_heights_and_budgets_keep_astar():
    walkable = np.ones((12, 12), dtype=bool)
    cost = np.ones((12, 12))
    cost[5, 5] = 3.0
    assert find_path(GridMap(walkable, cost, shape="hex", layout="odd-r"), (0, 0), (11, 11)).algorithm == "astar"
    gridmap = GridMap(walkable, shape="hex", layout="odd-r")
    assert find_path(gridmap, (0, 0), (11, 11), line_of_sight=False).algorithm == "jps"
    assert find_path(gridmap, (0, 0), (11, 11), max_expansions=1000).algorithm == "astar"
    assert find_path(gridmap, (0, 0), (11, 11), algorithm="astar").algorithm == "astar"


def test_corridors_keep_astar():
    walkable = np.zeros((21, 21), dtype=bool)
    walkable[::2, :] = True  # one-cell corridors, joined at alternate ends
    walkable[1::4, -1] = walkable[3::4, 0] = True
    assert find_path(GridMap(walkable, shape="hex", layout="odd-r"), (0, 0), (0, 20)).algorithm == "astar"


def test_avoided_cells_are_searched_round():
    walkable = np.ones((10, 10), dtype=bool)
    gridmap = GridMap(walkable, shape="hex", layout="even-q")
    result = find_path(gridmap, (0, 5), (9, 5), avoid={"cells": [(x, 5) for x in range(1, 9)]}, smooth="none")
    path = [tuple(p) for p in result.path.tolist()]
    assert result.found and not any(y == 5 for x, y in path[1:-1])
    ok = walkable.copy()
    ok[5, 1:9] = False
    assert result.cost == dijkstra(ok, "even-q", (0, 5))[5, 9]


@pytest.mark.skipif(DEN520D is None, reason="no Moving AI maps")
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_moving_ai_map_agrees_with_astar(layout):
    lines = DEN520D.read_text().splitlines()
    rows = lines[lines.index("map") + 1:]
    walkable = np.array([[c in ".G" for c in row] for row in rows])
    gridmap = GridMap(walkable, shape="hex", layout=layout)
    rng = np.random.default_rng(5)
    free = np.argwhere(walkable)
    for (sy, sx), (gy, gx) in free[rng.choice(len(free), (8, 2))]:
        start, goal = (int(sx), int(sy)), (int(gx), int(gy))
        fast = find_path(gridmap, start, goal, smooth="none", line_of_sight=False)
        slow = find_path(gridmap, start, goal, smooth="none", algorithm="astar")
        assert fast.status == slow.status and fast.cost == slow.cost, (start, goal)
        if fast.found:
            assert fast.algorithm == "jps" and len(fast.path) == fast.cost + 1


@pytest.mark.parametrize("layout", ["even-r", "odd-q"])
def test_edits_get_a_table_of_their_own(layout):
    rng = np.random.default_rng(9)
    walkable = rng.random((24, 30)) >= 0.05
    gridmap = GridMap(walkable.copy(), shape="hex", layout=layout)
    for _ in range(4):
        start, goal = (0, 0), (29, 23)
        walkable[0, 0] = walkable[23, 29] = True
        gridmap = gridmap.edit(cells=[start, goal], solid=False)
        result = find_path(gridmap, start, goal, smooth="none", line_of_sight=False)
        check(result, walkable, layout, start, goal, dijkstra(walkable, layout, start)[goal[1], goal[0]])
        # A wall across the middle with a gap somewhere else each time.
        x = int(rng.integers(5, 25))
        gap = int(rng.integers(0, 24))
        walkable[:, x] = False
        walkable[gap, x] = True
        gridmap = gridmap.edit(rects=[(x, 0, 1, 24)], solid=True).edit(cells=[(x, gap)], solid=False)
