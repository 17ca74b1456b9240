"""Hex JPS (pathserver.core.hexjps) against slow, obviously correct references: its
pruning rules derived from their definition for every wall round a cell, its jump table
against a scan cell by cell, and its paths against breadth-first search on the hex graph
(Red Blob Games' offset tables, pathserver.hexes), in all four layouts."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from pathserver.core import status as st
from pathserver.core.hexjps import (
    DIRECTION_Q,
    DIRECTION_R,
    hex_jps,
    hex_jump_table,
    hex_path_steps,
    successors,
    trace_hex_into,
)
from pathserver.hexes import DIRECTIONS, LAYOUTS, from_axial, neighbours, to_axial

CODES = {"odd-r": st.DIAGONAL_HEX_ODD_R, "even-r": st.DIAGONAL_HEX_EVEN_R, "odd-q": st.DIAGONAL_HEX_ODD_Q,
         "even-q": st.DIAGONAL_HEX_EVEN_Q}


def test_directions_go_round_the_hexagon():
    assert tuple(zip(DIRECTION_Q, DIRECTION_R)) == DIRECTIONS
    for d in range(6):
        # d + 1 is d turned by 60 degrees: their difference is d + 2.
        turn = (DIRECTION_Q[(d + 1) % 6] - DIRECTION_Q[d], DIRECTION_R[(d + 1) % 6] - DIRECTION_R[d])
        assert turn == DIRECTIONS[(d + 2) % 6]


def canonical_successors(incoming: int, blocked: int) -> int:
    """The directions worth taking from n, entered from p = n - incoming, when the
    neighbours of n in the directions of ``blocked`` are walls: every free neighbour m of
    n but those reached from p without n by a path no longer than p -> n -> m, of two
    equally long ones the one with the even ("primary") step first. Searched over n's
    six neighbours (every shortest way from p to a cell within two steps of it that
    misses n runs through them)."""
    ring = [DIRECTIONS[d] for d in range(6)]
    free = {ring[d] for d in range(6) if not (blocked >> d) & 1}
    p = (-DIRECTIONS[incoming][0], -DIRECTIONS[incoming][1])
    free.add(p)  # the cell the step came from
    bits = 0
    for d in range(6):
        m = ring[d]
        if m not in free or m == p:
            continue
        # Breadth-first from p over the free ring cells (n itself, (0, 0), left out),
        # keeping each cell's paths as sequences of step directions.
        paths = {p: [()]}
        queue = deque([p])
        while queue:
            cell = queue.popleft()
            for step, (dq, dr) in enumerate(DIRECTIONS):
                nxt = (cell[0] + dq, cell[1] + dr)
                if nxt not in free:
                    continue
                if nxt not in paths:
                    paths[nxt] = [path + (step,) for path in paths[cell]]
                    queue.append(nxt)
                elif len(paths[nxt][0]) == len(paths[cell][0]) + 1:
                    paths[nxt] += [path + (step,) for path in paths[cell]]
        through_n = (incoming, d)
        kept = True
        for other in paths.get(m, []):
            if len(other) < 2:
                kept = False
            elif len(other) == 2 and tuple(s & 1 for s in other) < tuple(s & 1 for s in through_n):
                kept = False
        if kept:
            bits |= 1 << d
    return bits


@pytest.mark.parametrize("incoming", range(6))
def test_pruning_rules_follow_from_their_definition(incoming):
    for blocked in range(64):
        if (blocked >> ((incoming + 3) % 6)) & 1:
            continue  # the cell the step came from is free
        expected = canonical_successors(incoming, blocked)
        got = successors(incoming, blocked)
        if incoming % 2 == 0:
            got &= ~blocked  # the search finds a primary successor blocked by jumping
        assert got == expected, (incoming, bin(blocked), bin(got), bin(expected))


def free_at(walkable, layout, q, r):
    x, y = from_axial(layout, q, r)
    height, width = walkable.shape
    return 0 <= x < width and 0 <= y < height and bool(walkable[y, x])


def forced_turn(walkable, layout, q, r, s):
    blocked = sum(1 << d for d in range(6) if not free_at(walkable, layout, q + DIRECTIONS[d][0],
                                                          r + DIRECTIONS[d][1]))
    return canonical_successors(s, blocked) & ~(1 << s) != 0


def scan(walkable, layout, x, y, d):
    """The jump distance from (x, y) toward d, cell by cell (hex_jump_table's meaning)."""
    q, r = to_axial(layout, x, y)
    dq, dr = DIRECTIONS[d]
    k = 0
    while free_at(walkable, layout, q + (k + 1) * dq, r + (k + 1) * dr):
        k += 1
        cq, cr = q + k * dq, r + k * dr
        if d % 2:
            if forced_turn(walkable, layout, cq, cr, d):
                return k
        else:
            for side in ((d + 1) % 6, (d + 5) % 6):
                if scan(walkable, layout, *from_axial(layout, cq, cr), side) > 0:
                    return k
    return -k


@pytest.mark.parametrize("layout", LAYOUTS)
def test_jump_table_matches_a_scan_cell_by_cell(layout):
    rng = np.random.default_rng(7 + LAYOUTS.index(layout))
    for density in (0.0, 0.1, 0.3):
        walkable = rng.random((9, 11)) >= density
        table = hex_jump_table(walkable.view(np.uint8), CODES[layout]).reshape(9, 11, 6)
        for y in range(9):
            for x in range(11):
                if not walkable[y, x]:
                    continue
                for d in range(6):
                    assert table[y, x, d] == scan(walkable, layout, x, y, d), (layout, density, x, y, d)


def bfs(walkable, layout, start):
    height, width = walkable.shape
    dist = np.full(walkable.shape, -1)
    dist[start[1], start[0]] = 0
    queue = deque([start])
    while queue:
        x, y = queue.popleft()
        for nx, ny in neighbours(layout, x, y):
            if 0 <= nx < width and 0 <= ny < height and walkable[ny, nx] and dist[ny, nx] < 0:
                dist[ny, nx] = dist[y, x] + 1
                queue.append((nx, ny))
    return dist


def search(walkable, table, layout, start, goal, ws):
    """hex_jps and its path: (status, cells or None, cost, expanded)."""
    height, width = walkable.shape
    g, parent, stamp, keys, tags, pos, directions, passes = ws
    passes[0] += 2
    status, end, expanded = hex_jps(walkable.view(np.uint8), table, CODES[layout], *start, *goal, 1.0, 0, g,
                                    parent, stamp, int(passes[0]), keys, tags, pos, directions)
    if status != st.SEARCH_FOUND:
        return status, None, 0.0, expanded
    begin = start[1] * width + start[0]
    steps = hex_path_steps(parent, width, CODES[layout], begin, end)
    out = np.empty((steps + 1, 2), dtype=np.int32)
    trace_hex_into(out, parent, width, CODES[layout], begin, end, steps + 1)
    return status, out, g[end], expanded


def workspace(n):
    """g, parent, stamp, the heap's keys, tags and positions, directions, the pass id."""
    return [np.zeros(n + 1), np.zeros(n + 1, np.int32), np.zeros(n + 1, np.int32), np.zeros(n + 1),
            np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int32), np.zeros(n + 1, np.int64), np.zeros(1, np.int64)]


def check_path(path, walkable, layout, start, goal, steps):
    cells = [tuple(p) for p in path.tolist()]
    assert cells[0] == tuple(start) and cells[-1] == tuple(goal)
    assert len(cells) == steps + 1
    for a, b in zip(cells, cells[1:]):
        assert b in neighbours(layout, *a), (a, b)
        assert walkable[b[1], b[0]]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_paths_are_as_short_as_breadth_first_search(layout):
    rng = np.random.default_rng(LAYOUTS.index(layout))
    for trial in range(40):
        width, height = rng.integers(3, 40, 2)
        walkable = rng.random((height, width)) >= rng.choice([0.0, 0.1, 0.2, 0.3, 0.4])
        if trial % 5 == 0:  # long walls with gaps: many forced turns
            for y in range(1, height - 1, 3):
                walkable[y, :] = False
                walkable[y, rng.integers(0, width, 2)] = True
        table = hex_jump_table(walkable.view(np.uint8), CODES[layout])
        ws = workspace(width * height)
        free = np.argwhere(walkable)
        if len(free) < 2:
            continue
        for start_yx in free[rng.choice(len(free), min(4, len(free)), replace=False)]:
            start = (int(start_yx[1]), int(start_yx[0]))
            dist = bfs(walkable, layout, start)
            for goal_yx in free[rng.choice(len(free), min(15, len(free)), replace=False)]:
                goal = (int(goal_yx[1]), int(goal_yx[0]))
                status, path, cost, _ = search(walkable, table, layout, start, goal, ws)
                expected = dist[goal[1], goal[0]]
                if expected < 0:
                    assert status == st.SEARCH_NO_PATH, (layout, trial, start, goal)
                    continue
                assert status == st.SEARCH_FOUND, (layout, trial, start, goal)
                assert abs(cost - expected) < 1e-9, (layout, trial, start, goal, cost, expected)
                check_path(path, walkable, layout, start, goal, expected)


def test_open_ground_expands_few_nodes():
    walkable = np.ones((40, 40), dtype=bool)
    table = hex_jump_table(walkable.view(np.uint8), CODES["odd-r"])
    status, path, cost, expanded = search(walkable, table, "odd-r", (2, 3), (35, 30), workspace(1600))
    assert status == st.SEARCH_FOUND and cost == bfs(walkable, "odd-r", (2, 3))[30, 35]
    assert expanded <= 3
