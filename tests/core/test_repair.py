"""repair.mend against the slow references (tests/naive.py): a mended path is legal on
the blocked grid, keeps its ends and its cost, and that cost is the blocked grid's
shortest; a path no detour of its cost goes round is left to the caller."""

import numpy as np
import pytest

import naive
from core.test_jps import grid
from pathserver.core.repair import cut_at, mend


class Work:
    """solve()'s workspace for grids of up to ``cells`` cells (zeroed, as allocated)."""

    def __init__(self, cells):
        self.work_float = np.zeros((5, cells + 1), np.float64)
        self.work_int = np.zeros((4, cells + 1), np.int32)

    def mend(self, path, passable, limit=0):
        out = np.array(path, dtype=np.int32).reshape(-1, 2)
        mended, closed = mend(out, len(out), passable, self.work_float, self.work_int, limit)
        return mended, out, closed


def shortest_path(passable, start, goal):
    """A shortest cell path (naive's moves and costs), or None: back from the goal, each
    step to a cell whose cost plus the move's is the cell's."""
    graph = naive.edges(passable)
    dist = naive.costs_from(graph, start)
    if goal not in dist:
        return None
    into = {}
    for a, b, w in graph:
        into.setdefault(b, []).append((a, w))
    path = [goal]
    while path[-1] != start:
        cell = path[-1]
        path.append(next(a for a, w in into[cell] if a in dist and abs(dist[a] + w - dist[cell]) < 1e-9))
    return path[::-1]


def test_a_cell_on_a_diagonal_path_mends_and_a_corridor_does_not():
    passable, start, goal = grid("""
        S.........
        ..........
        ..........
        ..........
        .........G
    """)
    path = [(i, i) for i in range(5)] + [(x, 4) for x in range(5, 10)]
    blocked = passable.copy()
    blocked[2, 2] = 0
    ws = Work(passable.size)
    mended, out, closed = ws.mend(path, blocked)
    assert mended == 1 and closed > 0
    cells = [tuple(p) for p in out.tolist()]
    assert cells[0] == start and cells[-1] == goal and (2, 2) not in cells
    assert naive.path_is_valid(blocked, cells)
    assert naive.path_cost(cells) == pytest.approx(naive.path_cost(path), abs=1e-12)
    # Given up past a limit on the nodes its detours close.
    assert ws.mend(path, blocked, limit=closed - 1)[0] == 0 and ws.mend(path, blocked, limit=closed)[0] == 1
    # Nothing cut: nothing searched, the path as it was.
    mended, out, closed = ws.mend(path, passable)
    assert (mended, closed, out.tolist()) == (1, 0, [list(p) for p in path])

    corridor, start, goal = grid("""
        ##########
        S........G
        ##########
    """)
    path = [(x, 1) for x in range(10)]
    blocked = corridor.copy()
    blocked[1, 5] = 0
    assert ws.mend(path, blocked)[0] == 0


def test_a_diagonal_step_past_a_blocked_corner_is_a_cut():
    passable = np.ones((3, 3), np.uint8)
    path = np.array([(0, 0), (1, 1), (2, 2)], np.int32)
    assert not cut_at(path, 1, passable)
    passable[0, 1] = 0  # a side of the first diagonal step
    assert cut_at(path, 1, passable) and not cut_at(path, 2, passable)


def test_mended_paths_are_shortest_on_the_blocked_grid():
    rng = np.random.default_rng(41)
    ws = Work(40 * 40)
    outcomes = {"kept": 0, "mended": 0, "left": 0}
    for _ in range(120):
        height, width = int(rng.integers(6, 40)), int(rng.integers(6, 40))
        passable = naive.random_grid(rng, width, height, float(rng.choice([0.0, 0.1, 0.25]))).astype(np.uint8)
        free = np.argwhere(passable)
        if len(free) < 2:
            continue
        (sy, sx), (gy, gx) = free[rng.choice(len(free), 2, replace=False)]
        start, goal = (int(sx), int(sy)), (int(gx), int(gy))
        path = shortest_path(passable, start, goal)
        if path is None or len(path) < 3:
            continue
        blocked = passable.copy()
        # Some cells on the path, some anywhere: the ends stay open.
        on_path = [path[i] for i in rng.integers(1, len(path) - 1, size=int(rng.integers(0, 3)))]
        anywhere = [tuple(c[::-1]) for c in free[rng.integers(len(free), size=int(rng.integers(0, 8)))]]
        for x, y in on_path + anywhere:
            blocked[y, x] = 0
        blocked[sy, sx] = blocked[gy, gx] = 1
        cut = any(cut_at(np.array(path, np.int32), i, blocked) for i in range(1, len(path)))
        mended, out, _ = ws.mend(path, blocked)
        best = naive.dijkstra(blocked, start, goal)
        if mended:
            cells = [tuple(p) for p in out.tolist()]
            assert cells[0] == start and cells[-1] == goal
            assert naive.path_is_valid(blocked, cells)
            assert naive.path_cost(cells) == pytest.approx(naive.path_cost(path), abs=1e-9)
            assert naive.path_cost(cells) == pytest.approx(best, abs=1e-9)
            outcomes["mended" if cut else "kept"] += 1
        else:
            assert cut
            outcomes["left"] += 1
    assert min(outcomes.values()) >= 10, outcomes
