"""The JPS kernel against Dijkstra (tests/naive.py) and the Moving AI optimal lengths.

One workspace serves all the searches of a test, so stale stamps from earlier queries
are always present.
"""

import math

import numpy as np
import pytest

import naive
from pathserver.core.astar import trace_path
from pathserver.core.jps import jps, jump_bitmaps
from pathserver.core.status import SEARCH_BUDGET, SEARCH_FOUND, SEARCH_NO_PATH
from pathserver.maps.scen import load_scen

MOVINGAI_MAPS = ["dao/den520d", "sc1/Aftershock", "street/Boston_0_512", "room/32room_000"]
MOVINGAI_PROBLEMS = 30


class Workspace:
    """Search arrays for grids of up to ``cells`` cells and the pass counter."""

    def __init__(self, cells):
        self.g = np.empty(cells, np.float64)
        self.parent = np.empty(cells, np.int32)
        self.stamp = np.zeros(cells, np.int32)
        self.heap_nodes = np.empty(cells, np.int32)
        self.heap_f = np.empty(cells, np.float64)
        self.heap_h = np.empty(cells, np.float64)
        self.heap_pos = np.empty(cells, np.int32)
        self.pass_id = 0

    def search(self, passable, start, goal, bitmaps=None, weight=1.0, max_expansions=0):
        """(status, end_node, expanded, pass_id) of one search; the arrays keep its state."""
        if bitmaps is None:
            bitmaps = jump_bitmaps(passable)
        self.pass_id += 2
        status, end, expanded = jps(
            passable, bitmaps, start[0], start[1], goal[0], goal[1], weight, max_expansions,
            self.g, self.parent, self.stamp, self.pass_id,
            self.heap_nodes, self.heap_f, self.heap_h, self.heap_pos,
        )
        return status, end, expanded, self.pass_id

    def path(self, passable, start, end):
        width = passable.shape[1]
        return [tuple(p) for p in trace_path(self.parent, width, start[1] * width + start[0], end).tolist()]


def grid(text):
    """uint8 passability from ASCII ('#' blocked), plus the 'S' and 'G' cells as (x, y)."""
    rows = text.strip().split()
    passable = np.array([[c != "#" for c in row] for row in rows], dtype=np.uint8)
    marks = {c: (x, y) for y, row in enumerate(rows) for x, c in enumerate(row) if c in "SG"}
    return passable, marks.get("S"), marks.get("G")


def check_against_dijkstra(ws, passable, start, goal):
    expected = naive.dijkstra(passable, start, goal)
    status, end, _, _ = ws.search(passable, start, goal)
    if expected == math.inf:
        assert status == SEARCH_NO_PATH
        return
    assert status == SEARCH_FOUND
    assert end == goal[1] * passable.shape[1] + goal[0]
    assert abs(ws.g[end] - expected) < 1e-9
    path = ws.path(passable, start, end)
    assert path[0] == start and path[-1] == goal
    assert naive.path_is_valid(passable, path)
    assert abs(naive.path_cost(path) - expected) < 1e-9


def random_queries(rng, passable, count):
    free = np.argwhere(passable)
    for _ in range(count if len(free) else 0):
        (sy, sx), (gy, gx) = free[rng.integers(len(free), size=2)]
        yield (int(sx), int(sy)), (int(gx), int(gy))


def test_costs_match_dijkstra_on_random_grids():
    rng = np.random.default_rng(0)
    ws = Workspace(40 * 40)
    for _ in range(250):
        width, height = int(rng.integers(5, 41)), int(rng.integers(5, 41))
        passable = naive.random_grid(rng, width, height, rng.uniform(0.0, 0.45)).astype(np.uint8)
        for start, goal in random_queries(rng, passable, 3):
            check_against_dijkstra(ws, passable, start, goal)
    assert ws.pass_id > 1000


def test_costs_match_dijkstra_for_unit_sizes():
    rng = np.random.default_rng(1)
    ws = Workspace(40 * 40)
    for _ in range(60):
        width, height = int(rng.integers(5, 41)), int(rng.integers(5, 41))
        walkable = naive.random_grid(rng, width, height, rng.uniform(0.0, 0.2))
        unit_w, unit_h = (int(v) for v in rng.integers(1, 4, size=2))
        passable = naive.passable_for_unit(walkable, unit_w, unit_h)
        for start, goal in random_queries(rng, passable, 3):
            check_against_dijkstra(ws, passable, start, goal)


def test_scans_longer_than_a_word():
    # Lines of more than 64 cells: the bitmap scans cross words and line boundaries.
    rng = np.random.default_rng(2)
    ws = Workspace(150 * 150)
    for width, height in [(64, 66), (130, 70), (70, 150), (150, 2)]:
        passable = naive.random_grid(rng, width, height, 0.08).astype(np.uint8)
        for start, goal in random_queries(rng, passable, 4):
            check_against_dijkstra(ws, passable, start, goal)


def test_diagonal_may_not_cut_a_corner():
    passable, start, goal = grid(
        """
        S#
        #G
        """
    )
    ws = Workspace(passable.size)
    assert ws.search(passable, start, goal)[0] == SEARCH_NO_PATH
    passable, start, goal = grid(
        """
        S.
        #G
        """
    )
    status, end, _, _ = ws.search(passable, start, goal)
    assert status == SEARCH_FOUND
    assert ws.g[end] == 2.0
    assert ws.path(passable, start, end) == [(0, 0), (1, 0), (1, 1)]


def test_goal_in_the_middle_of_a_jump():
    ws = Workspace(100)
    passable, start, goal = grid("S...G....")
    status, end, expanded, _ = ws.search(passable, start, goal)
    assert (status, expanded, ws.g[end]) == (SEARCH_FOUND, 1, 4.0)
    # On the diagonal, and on a straight scan made from a diagonal step.
    passable = np.ones((10, 10), dtype=np.uint8)
    status, end, expanded, _ = ws.search(passable, (0, 0), (5, 5))
    assert (status, expanded) == (SEARCH_FOUND, 1)
    assert abs(ws.g[end] - 5 * math.sqrt(2)) < 1e-12
    status, end, expanded, _ = ws.search(passable, (0, 0), (3, 8))
    assert (status, expanded) == (SEARCH_FOUND, 2)  # the start, then (3, 3)
    assert ws.parent[end] == 3 * 10 + 3
    assert abs(ws.g[end] - (3 * math.sqrt(2) + 5)) < 1e-12


def test_start_equal_to_goal():
    passable, start, _ = grid(
        """
        .#.
        .S.
        """
    )
    ws = Workspace(passable.size)
    status, end, expanded, _ = ws.search(passable, start, start)
    assert (status, end, expanded, ws.g[end]) == (SEARCH_FOUND, 4, 0, 0.0)
    assert ws.path(passable, start, end) == [start]


def test_jump_points_are_on_lines_and_the_forced_corner_is_one():
    passable, start, goal = grid(
        """
        S.....
        ####..
        .....G
        """
    )
    ws = Workspace(passable.size)
    status, end, _, _ = ws.search(passable, start, goal)
    assert status == SEARCH_FOUND
    width = passable.shape[1]
    node, points = end, [end]
    while node != start[1] * width + start[0]:
        node = ws.parent[node]
        points.append(node)
    xy = [(n % width, n // width) for n in reversed(points)]
    for (x0, y0), (x1, y1) in zip(xy, xy[1:]):
        assert x0 == x1 or y0 == y1 or abs(x1 - x0) == abs(y1 - y0)
    assert (4, 0) in xy  # forced: (4, 1) is reachable from the start only through (4, 0)
    assert abs(ws.g[end] - naive.dijkstra(passable, start, goal)) < 1e-12


def assert_ends_at_nearest_closed(ws, passable, start, goal, end, expanded, pass_id):
    width = passable.shape[1]
    closed = np.flatnonzero(ws.stamp[: passable.size] == pass_id + 1)
    assert closed.size == expanded
    assert end in closed
    dx = np.abs(closed % width - goal[0])
    dy = np.abs(closed // width - goal[1])
    octile = np.maximum(dx, dy) + (math.sqrt(2) - 1) * np.minimum(dx, dy)
    assert octile[closed == end][0] == octile.min()
    path = ws.path(passable, start, end)
    assert naive.path_is_valid(passable, path)
    assert abs(naive.path_cost(path) - ws.g[end]) < 1e-9


def test_budget_stops_at_the_closed_node_nearest_the_goal():
    rng = np.random.default_rng(3)
    ws = Workspace(40 * 40)
    hits = 0
    for _ in range(40):
        passable = naive.random_grid(rng, 40, 40, 0.3).astype(np.uint8)
        for start, goal in random_queries(rng, passable, 2):
            status, end, expanded, pass_id = ws.search(passable, start, goal, max_expansions=3)
            assert expanded <= 3
            if status == SEARCH_BUDGET:
                hits += 1
                assert expanded == 3
                assert_ends_at_nearest_closed(ws, passable, start, goal, end, expanded, pass_id)
    assert hits > 20


def test_no_path_reports_the_nearest_closed_node():
    passable, start, goal = grid(
        """
        S..#..#...
        .#.#..#.G.
        ...#..#...
        """
    )
    ws = Workspace(passable.size)
    status, end, expanded, pass_id = ws.search(passable, start, goal)
    assert status == SEARCH_NO_PATH
    assert expanded > 1
    assert_ends_at_nearest_closed(ws, passable, start, goal, end, expanded, pass_id)


def test_weight_trades_cost_for_a_valid_path():
    rng = np.random.default_rng(4)
    ws = Workspace(40 * 40)
    for _ in range(30):
        passable = naive.random_grid(rng, 40, 40, 0.25).astype(np.uint8)
        for start, goal in random_queries(rng, passable, 2):
            expected = naive.dijkstra(passable, start, goal)
            status, end, _, _ = ws.search(passable, start, goal, weight=2.0)
            if expected == math.inf:
                assert status == SEARCH_NO_PATH
                continue
            path = ws.path(passable, start, end)
            assert naive.path_is_valid(passable, path)
            assert abs(naive.path_cost(path) - ws.g[end]) < 1e-9
            assert expected - 1e-9 <= ws.g[end] <= 2.0 * expected + 1e-9


def test_jump_bitmaps_take_about_a_byte_per_cell():
    passable = np.ones((512, 512), dtype=np.uint8)
    assert jump_bitmaps(passable).nbytes <= 1.01 * passable.size


def read_movingai_map(path):
    lines = path.read_text().replace("\r", "").split("\n")
    height = int(lines[1].split()[1])
    width = int(lines[2].split()[1])
    return np.array([[c in ".GS" for c in row[:width]] for row in lines[4 : 4 + height]], dtype=np.uint8)


@pytest.mark.parametrize("name", MOVINGAI_MAPS)
def test_movingai_optimal_lengths(movingai_dir, name):
    passable = read_movingai_map(movingai_dir / f"{name}.map")
    bitmaps = jump_bitmaps(passable)
    problems = [
        p for p in load_scen(movingai_dir / f"{name}.map.scen")
        if passable[p.start[1], p.start[0]] and passable[p.goal[1], p.goal[0]]
    ]
    ws = Workspace(passable.size)
    for i in np.linspace(0, len(problems) - 1, MOVINGAI_PROBLEMS).round().astype(int):
        problem = problems[i]
        status, end, _, _ = ws.search(passable, problem.start, problem.goal, bitmaps=bitmaps)
        assert status == SEARCH_FOUND
        # The street scenarios print 8 decimals but were summed with sqrt(2) taken as
        # 1.414213562, which drifts by up to 4e-10 per diagonal step.
        tolerance = problem.precision + 1e-9 * problem.optimal_length
        assert abs(ws.g[end] - problem.optimal_length) <= tolerance, (name, problem)
