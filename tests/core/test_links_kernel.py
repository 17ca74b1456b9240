"""pathserver.core.links' A* over a grid and its links against the reference
(tests/naive_links.py): floors stacked with a blocked row between them, one-way and
two-way links of costs 0 to 20, square and hex moves."""

import math

import numpy as np
import pytest

import naive
import naive_links
from pathserver.core.links import astar_links, field_links, link_steps, reach_links, search_links, trace_links
from pathserver.core.status import DIAGONAL_NO_CORNER_CUTTING, HEURISTIC_OCTILE, SEARCH_FOUND
from pathserver.core.steer import NOWHERE, UNKNOWN


def stacked(floors):
    """Floors (H, W) each into one grid, a blocked row between each two."""
    height, width = floors[0].shape
    grid = np.zeros((len(floors) * (height + 1) - 1, width), dtype=floors[0].dtype)
    for f, layer in enumerate(floors):
        grid[f * (height + 1):f * (height + 1) + height] = layer
    return grid


def csr(links, floors, height, width):
    """link_first, link_to, link_cost, link_id and entries of the links on the stacked grid."""
    def node(p):
        return (p[2] * (height + 1) + p[1]) * width + p[0]

    moves = []
    for index, link in enumerate(links):
        a, b = naive_links.point(link["from"]), naive_links.point(link["to"])
        moves.append((node(a), node(b), link["cost"], index))
        if link.get("two_way", True):
            moves.append((node(b), node(a), link["cost"], index))
    moves.sort(key=lambda m: m[0])
    first = np.zeros((floors * (height + 1) - 1) * width + 1, dtype=np.int64)
    for source, *_ in moves:
        first[source + 1] += 1
    first = np.cumsum(first)
    cheapest = {}
    for source, _, cost, _ in moves:
        cheapest[source] = min(cost, cheapest.get(source, math.inf))
    entries = np.array([(v % width, v // width, c) for v, c in sorted(cheapest.items())],
                       dtype=np.float64).reshape(-1, 3)
    return (first, np.array([m[1] for m in moves], dtype=np.int64), np.array([m[2] for m in moves], dtype=np.float64),
            np.array([m[3] for m in moves], dtype=np.int64), entries)


@pytest.mark.parametrize("seed", range(6))
def test_astar_with_links_is_exact(seed):
    rng = np.random.default_rng(seed)
    floors, height, width = 3, 9, 11
    walkable = [rng.random((height, width)) > 0.25 for _ in range(floors)]
    cost = [np.where(rng.random((height, width)) < 0.3, 3.0, 1.0) for _ in range(floors)]
    links = naive_links.random_links(rng, floors, width, height, walkable, 12)
    cells = stacked([w.astype(np.uint8) for w in walkable])
    grid_cost = stacked(cost)
    grid_cost[cells == 0] = 1.0
    table = np.unique(grid_cost)
    index = np.searchsorted(table, grid_cost).astype(np.uint8)
    first, to, link_cost, link_id, entries = csr(links, floors, height, width)
    n = cells.size
    work_float = np.zeros((5, n + 1))
    work_int = np.zeros((4, n + 1), dtype=np.int32)
    points = [(x, y, f) for f in range(floors) for y, x in np.argwhere(walkable[f])]
    for _ in range(10):
        a, b = (points[i] for i in rng.choice(len(points), 2, replace=False))
        expected = naive_links.cost([w.astype(np.uint8) for w in walkable], cost, links, a, b)
        sx, sy = a[0], a[2] * (height + 1) + a[1]
        gx, gy = b[0], b[2] * (height + 1) + b[1]
        status, end, _ = astar_links(cells, index, table, 0, DIAGONAL_NO_CORNER_CUTTING, HEURISTIC_OCTILE, sx, sy,
                                     gx, gy, 0, first, to, link_cost, entries, work_float, work_int)
        assert (status == SEARCH_FOUND) == math.isfinite(expected), (a, b, expected)
        if status != SEARCH_FOUND:
            continue
        assert work_float[0][end] == pytest.approx(expected)
        path, taken = trace_links(work_int[0], first, link_id, width, sy * width + sx, end)
        triples = [(int(x), int(y) % (height + 1), int(y) // (height + 1)) for x, y in path]
        assert triples[0] == a and triples[-1] == b
        assert naive_links.path_is_valid([w.astype(np.uint8) for w in walkable], links, triples,
                                         {int(i): int(k) for i, k in taken})


def grids(rng, floors, height, width):
    walkable = [rng.random((height, width)) > 0.25 for _ in range(floors)]
    cost = [np.where(rng.random((height, width)) < 0.3, 3.0, 1.0) for _ in range(floors)]
    heights = [rng.integers(0, 3, (height, width)).astype(np.float32) for _ in range(floors)]
    cells = stacked([w.astype(np.uint8) for w in walkable])
    grid_cost = stacked(cost)
    grid_cost[cells == 0] = 1.0
    table = np.unique(grid_cost)
    index = np.searchsorted(table, grid_cost).astype(np.uint8)
    return walkable, cost, heights, cells, table, index


@pytest.mark.parametrize("seed", range(4))
def test_search_to_many_goals_with_climbs_is_exact(seed):
    rng = np.random.default_rng(100 + seed)
    floors, height, width = 3, 9, 11
    walkable, cost, heights, cells, table, index = grids(rng, floors, height, width)
    links = naive_links.random_links(rng, floors, width, height, walkable, 12)
    first, to, link_cost, link_id, entries = csr(links, floors, height, width)
    n = cells.size
    work_float = np.zeros((5, n + 1))
    work_int = np.zeros((4, n + 1), dtype=np.int32)
    passable = [w.astype(np.uint8) for w in walkable]
    max_climb = 1.0
    moves = naive_links.graph(passable, cost, links, heights=heights, max_climb=max_climb)
    points = [(x, y, f) for f in range(floors) for y, x in np.argwhere(walkable[f])]
    for _ in range(8):
        start, *goals = (points[i] for i in rng.choice(len(points), 4, replace=False))
        reach = naive.costs_from(moves, start)
        expected = min(reach.get(g, math.inf) for g in goals)
        nodes = np.unique([(g[2] * (height + 1) + g[1]) * width + g[0] for g in goals]).astype(np.int64)
        status, end, _, _ = search_links(cells, index, table, 0, stacked(heights), 1, max_climb,
                                         DIAGONAL_NO_CORNER_CUTTING, HEURISTIC_OCTILE, height + 1, start[0],
                                         start[2] * (height + 1) + start[1], nodes, 0, 0, first, to, link_cost,
                                         entries, work_float, work_int)
        assert (status == SEARCH_FOUND) == math.isfinite(expected)
        if status == SEARCH_FOUND:
            assert end in nodes and work_float[0][end] == pytest.approx(expected)


@pytest.mark.parametrize("seed", range(4))
def test_field_with_links_is_exact(seed):
    rng = np.random.default_rng(200 + seed)
    floors, height, width = 2, 8, 10
    walkable, cost, heights, cells, table, index = grids(rng, floors, height, width)
    links = naive_links.random_links(rng, floors, width, height, walkable, 10)
    first, to, link_cost, _, _ = csr(links, floors, height, width)
    # The links reversed: those entering each node, from their sources.
    sources = np.searchsorted(first, np.arange(len(to)), side="right") - 1
    order = np.argsort(to, kind="stable")
    back_first = np.concatenate(([0], np.cumsum(np.bincount(to, minlength=cells.size))))
    passable = [w.astype(np.uint8) for w in walkable]
    moves = naive_links.graph(passable, cost, links, heights=heights, max_climb=1.0)
    points = [(x, y, f) for f in range(floors) for y, x in np.argwhere(walkable[f])]
    goals = [points[i] for i in rng.choice(len(points), 3, replace=False)]
    expected = naive.costs_to(moves, goals)
    n = cells.size
    out = np.full(n, np.inf)
    nodes = np.array([(g[2] * (height + 1) + g[1]) * width + g[0] for g in goals], dtype=np.int64)
    field_links(cells, index, table, 0, stacked(heights), 1, 1.0, DIAGONAL_NO_CORNER_CUTTING, nodes, math.inf,
                back_first, sources[order], link_cost[order], out, np.zeros((5, n + 1)),
                np.zeros((4, n + 1), dtype=np.int32))
    for (x, y, f) in [(x, y, f) for f in range(floors) for y in range(height) for x in range(width)]:
        assert out[(f * (height + 1) + y) * width + x] == pytest.approx(expected.get((x, y, f), math.inf))


@pytest.mark.parametrize("seed", range(3))
def test_reach_with_links_and_climbs_is_exact(seed):
    rng = np.random.default_rng(300 + seed)
    floors, height, width = 2, 8, 10
    walkable, cost, heights, cells, table, index = grids(rng, floors, height, width)
    links = naive_links.random_links(rng, floors, width, height, walkable, 10)
    first, to, link_cost, _, _ = csr(links, floors, height, width)
    moves = naive_links.graph([w.astype(np.uint8) for w in walkable], cost, links, heights=heights, max_climb=1.0)
    points = [(x, y, f) for f in range(floors) for y, x in np.argwhere(walkable[f])]
    start = points[rng.integers(len(points))]
    n = cells.size
    work_float = np.zeros((5, n + 1))
    work_int = np.zeros((4, n + 1), dtype=np.int32)
    count = reach_links(cells, index, table, 0, stacked(heights), 1, 1.0, DIAGONAL_NO_CORNER_CUTTING, start[0],
                        start[2] * (height + 1) + start[1], 8.0, first, to, link_cost, work_float, work_int)
    got = {(int(v % width), int(v // width % (height + 1)), int(v // width // (height + 1))): work_float[0][v]
           for v in work_int[0, :count]}
    expected = {p: c for p, c in naive.costs_from(moves, start).items() if c <= 8.0 + 1e-9}
    assert got.keys() == expected.keys()
    for p, c in expected.items():
        assert got[p] == pytest.approx(c)


@pytest.mark.parametrize("seed", range(3))
def test_link_steps_mark_the_sources_whose_cheapest_way_is_a_link(seed):
    rng = np.random.default_rng(400 + seed)
    floors, height, width = 2, 8, 10
    walkable, cost, _, cells, table, index = grids(rng, floors, height, width)
    links = naive_links.random_links(rng, floors, width, height, walkable, 12)
    first, to, link_cost, _, _ = csr(links, floors, height, width)
    passable = [w.astype(np.uint8) for w in walkable]
    moves = naive_links.graph(passable, cost, links)
    points = [(x, y, f) for f in range(floors) for y, x in np.argwhere(walkable[f])]
    goals = [points[i] for i in rng.choice(len(points), 2, replace=False)]
    expected = naive.costs_to(moves, goals)

    def node(p):
        return (p[2] * (height + 1) + p[1]) * width + p[0]

    field = np.full(cells.shape, np.inf)
    for p, c in expected.items():
        field.reshape(-1)[node(p)] = c
    n = cells.size
    sources = np.unique(np.searchsorted(first, np.arange(len(to)), side="right") - 1)
    following = np.full(n, UNKNOWN, dtype=np.int32)
    jumps = np.full(n, -1, dtype=np.int64)
    no_heights = np.zeros((1, 1), dtype=np.float32)
    link_steps(cells, index, table, 0, no_heights, 0, 0.0, DIAGONAL_NO_CORNER_CUTTING, field,
               np.unique([node(g) for g in goals]).astype(np.int64), first, to, link_cost, sources, following, jumps)
    # The grid's moves alone (each floor's), then the links'.
    grid_of: dict = {}
    for f, floor in enumerate(passable):
        for a, b, w in naive.edges(floor, cost=cost[f]):
            grid_of.setdefault((*a, f), []).append(w + expected.get((*b, f), math.inf))
    link_moves = naive_links.link_moves(links)
    for source in sources.tolist():
        p = (source % width, source // width % (height + 1), source // width // (height + 1))
        by_link = min((c + expected.get(b, math.inf) for b, c, _ in link_moves.get(p, ())
                       if passable[b[2]][b[1], b[0]]), default=math.inf)
        by_grid = min(grid_of.get(p, [math.inf]))
        marked = jumps[source] >= 0
        if p in goals or expected.get(p, math.inf) == math.inf:
            assert not marked
        elif marked:
            assert by_link < by_grid and following[source] == NOWHERE
            target = int(jumps[source])
            t = (target % width, target // width % (height + 1), target // width // (height + 1))
            assert any(b == t and c + expected.get(b, math.inf) == pytest.approx(by_link)
                       for b, c, _ in link_moves[p])
        else:
            assert by_grid <= by_link + 1e-9
    if seed == 0:
        assert (jumps >= 0).any()  # this map has sources whose cheapest way is a link
