"""core.landmarks against the slow references (tests/naive.py): the table holds each
cell's exact costs to and from the landmarks (scaled), the landmarks are picked farthest
first, and the bound A* reads from it is admissible and consistent on the graph and on
graphs with fewer or dearer moves."""

import math

import numpy as np
import pytest

import naive
from pathserver import GridMap
from pathserver.core.astar import landmark_bound
from pathserver.core.landmarks import landmark_table
from pathserver.core.status import DIAGONAL_NO_CORNER_CUTTING


def _layer(rng, width, height):
    walkable = naive.random_grid(rng, width, height, float(rng.uniform(0.0, 0.3)))
    cost = rng.choice([1.0, 1.5, 2.0, 4.0], size=(height, width))
    return GridMap(walkable, cost).layer(1)


def _layers(rng, count, largest):
    """(layer, its standable node ids, width, height) of ``count`` random maps with terrain
    costs and sides below ``largest``, those with at least 4 standable cells."""
    for _ in range(count):
        width, height = int(rng.integers(4, largest)), int(rng.integers(4, largest))
        layer = _layer(rng, width, height)
        standable = np.flatnonzero(layer.cells.ravel())
        if len(standable) >= 4:
            yield layer, standable, width, height


def _table(layer, count, seed):
    n = layer.cells.size
    out = np.empty((n, 2 * count), dtype=np.float32)
    work_float = np.zeros((5, n + 1))
    work_int = np.zeros((4, n + 1), dtype=np.int32)
    chosen, scale = landmark_table(layer.cells, layer.cost_index, layer.cost_table, 0, seed, count, out, work_float,
                                   work_int, DIAGONAL_NO_CORNER_CUTTING)
    return out, chosen, scale


def test_the_table_holds_the_scaled_costs_to_and_from_landmarks_picked_farthest_first():
    rng = np.random.default_rng(61)
    checked = 0
    for layer, standable, width, height in _layers(rng, 25, 18):
        seed = int(rng.choice(standable))
        out, chosen, scale = _table(layer, 3, seed)
        assert 0.999 < scale <= 1.0
        graph = naive.edges(layer.passable, cost=layer.cost)
        cell = lambda v: (int(v % width), int(v // width))  # noqa: E731
        # Farthest first: each landmark the cell of the seed's reach farthest (by its cost to
        # the seed, then to the nearest landmark picked) from what came before.
        # The first: the farthest cell from the seed; each next: the farthest from the
        # landmarks picked (by the cost to the nearest of them).
        farness = naive.costs_to(graph, [cell(seed)])
        for k, landmark in enumerate(chosen):
            assert farness[cell(landmark)] == pytest.approx(max(farness.values()), rel=1e-9)
            to = naive.costs_to(graph, [cell(landmark)])
            came = naive.costs_from(graph, cell(landmark))
            for v in range(width * height):
                for column, costs in ((2 * k, to), (2 * k + 1, came)):
                    expected = costs.get(cell(v), math.inf) * scale
                    assert out[v, column] == pytest.approx(expected, rel=1e-6), (v, column)
            farness = dict(to) if k == 0 else {c: min(d, to.get(c, math.inf)) for c, d in farness.items()}
        checked += 1
    assert checked >= 15


@pytest.mark.parametrize("graph_kind", ["same", "four moves", "dearer"])
def test_the_bound_is_admissible_and_consistent(graph_kind):
    # On the table's own graph, on one with fewer moves (4-connected) and on one with dearer
    # moves (some cells avoided at a price): never above the cost left, and never dropping
    # by more than a move costs.
    rng = np.random.default_rng(62 + len(graph_kind))
    checked = 0
    for layer, standable, width, height in _layers(rng, 20, 16):
        out, _, _ = _table(layer, 4, int(rng.choice(standable)))
        if graph_kind == "four moves":
            graph = naive.edges(layer.passable, "never", layer.cost)
        elif graph_kind == "dearer":
            avoided = rng.random(layer.passable.shape) < 0.2
            graph = naive.edges(layer.passable, cost=layer.cost, avoided=avoided, avoid_cost=6.0)
        else:
            graph = naive.edges(layer.passable, cost=layer.cost)
        for goal in rng.choice(standable, size=3):
            goal = int(goal)
            left = naive.costs_to(graph, [(goal % width, goal // width)])
            bound = {v: landmark_bound(out, v, goal) for v in range(width * height)}
            for (x, y), d in left.items():
                assert bound[y * width + x] <= d + 1e-12
            for (ax, ay), (bx, by), w in graph:
                a, b = ay * width + ax, by * width + bx
                if math.isfinite(bound[b]):
                    assert bound[a] <= w + bound[b] + 1e-12, (a, b, w)
            checked += 1
    assert checked >= 30
