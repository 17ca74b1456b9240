"""repair.mend against the slow references (tests/naive.py): a mended path is legal on
the blocked grid, keeps its ends and its cost, and that cost is the blocked grid's
shortest; a path no detour of its cost goes round, or cut in many places, is left to the
caller. repair.relax blocks exactly the avoided anchors near the steps a path cuts."""

import numpy as np
import pytest

import naive
from core.test_jps import grid
from pathserver.core.repair import MANY_CUTS, RELAX_FULL, RELAX_MANY_CUTS, cut_at, mend, relax


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


def test_a_path_cut_in_many_places_is_left_to_the_caller():
    # Cells every few steps along a path of straight and diagonal steps in turn, in the
    # open: each cut mends (the steps can swap), but past MANY_CUTS of them mend tries none.
    passable = np.ones((24, 48), np.uint8)
    path = [(x, x // 2) for x in range(48)]
    ws = Work(passable.size)
    for cuts in (MANY_CUTS, MANY_CUTS + 1):
        blocked = passable.copy()
        for k in range(cuts):
            x, y = path[5 + 9 * k]
            blocked[y, x] = 0
        mended, out, closed = ws.mend(path, blocked)
        if cuts <= MANY_CUTS:
            assert mended == 1 and naive.path_is_valid(blocked, [tuple(p) for p in out.tolist()])
        else:
            assert (mended, closed, out.tolist()) == (0, 0, [list(p) for p in path])


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


def relaxed_reference(path, passable, relaxed, radius):
    """The anchors relax blocks, in its order: near each illegal step, those ``passable``
    blocks and ``relaxed`` does not."""
    picked = []
    height, width = passable.shape
    for i in range(1, len(path)):
        (px, py), (x, y) = path[i - 1], path[i]
        diagonal = px != x and py != y
        if passable[y, x] and not (diagonal and (not passable[py, x] or not passable[y, px])):
            continue
        for ny in range(max(y - radius, 0), min(y + radius + 1, height)):
            for nx in range(max(x - radius, 0), min(x + radius + 1, width)):
                if not passable[ny, nx] and relaxed[ny, nx] and (nx, ny) not in picked:
                    picked.append((nx, ny))
    return picked


def test_relax_blocks_the_avoided_anchors_near_each_cut_and_nothing_else():
    rng = np.random.default_rng(43)
    seen = {"relaxed": 0, "many cuts": 0, "full": 0}
    for _ in range(150):
        height, width = int(rng.integers(6, 30)), int(rng.integers(6, 30))
        plain = naive.random_grid(rng, width, height, 0.1).astype(np.uint8)
        free = np.argwhere(plain)
        if len(free) < 2:
            continue
        (sy, sx), (gy, gx) = free[rng.choice(len(free), 2, replace=False)]
        path = shortest_path(plain, (int(sx), int(sy)), (int(gx), int(gy)))
        if path is None or len(path) < 3:
            continue
        # The request's avoided anchors, some on the path; the relaxation has some blocked.
        passable = plain.copy()
        for y, x in free[rng.integers(len(free), size=int(rng.integers(1, 12)))]:
            passable[y, x] = 0
        for x, y in [path[i] for i in rng.integers(1, len(path) - 1, size=int(rng.integers(0, 4)))]:
            passable[y, x] = 0
        relaxed = plain.copy()
        was = np.argwhere((passable == 0) & (plain != 0))
        for y, x in was[rng.integers(len(was), size=len(was) // 3)] if len(was) else ():
            if (int(x), int(y)) not in path:
                relaxed[y, x] = 0
        radius = int(rng.integers(0, 4))
        cuts = sum(cut_at(np.array(path, np.int32), i, passable) for i in range(1, len(path)))
        expected = relaxed_reference(path, passable, relaxed, radius)
        room = int(rng.choice([len(expected) + 5, max(len(expected) - 1, 0)]))
        max_cuts = int(rng.choice([1, 100]))
        boxes = np.full((room + 2, 4), -7, np.int64)
        before = relaxed.copy()
        n = relax(np.array(path, np.int32), len(path), passable, relaxed, radius, max_cuts, boxes[:room], 1)
        if cuts > max_cuts:
            assert n == RELAX_MANY_CUTS and (relaxed == before).all()
            seen["many cuts"] += 1
            continue
        changed = [(int(x), int(y)) for y, x in np.argwhere(relaxed != before)]
        if n == RELAX_FULL:
            # Full: the first room - 1 (past the one box given as used) are blocked and noted.
            assert len(expected) > room - 1
            noted = [tuple(b[:2]) for b in boxes[1:room].tolist()]
            assert noted == expected[:room - 1] and sorted(changed) == sorted(noted)
            seen["full"] += 1
            continue
        assert n == 1 + len(expected)
        assert [tuple(b) for b in boxes[1:n].tolist()] == [(x, y, x + 1, y + 1) for x, y in expected]
        assert sorted(changed) == sorted(expected) and not relaxed[tuple(np.array(expected).T[::-1])].any() \
            if expected else not changed
        assert (boxes[0] == -7).all() and (boxes[room:] == -7).all()
        seen["relaxed"] += 1
    assert min(seen.values()) >= 5, seen
