"""The JPS+ kernels against the slow references (tests/naive.py): the jump table
against distances walked cell by cell, its update after edits against a fresh build, and
the search against Dijkstra and the online JPS."""

import math

import numpy as np

import naive
from core.test_jps import Workspace, grid
from core.test_relay import random_boxes
from pathserver.core.avoid import block_anchors
from pathserver.core.bounds import ROW
from pathserver.core.jps import jump_bitmaps
from pathserver.core.jpsplus import (
    DIRECTION_X,
    DIRECTION_Y,
    SAT,
    SAT_STEP,
    jps_plus,
    jump_cost,
    jump_parent,
    jump_stamp,
    jump_table,
    trace_jumps,
    update_jump_table,
)
from pathserver.core.relay import lay_avoided, new_overlay, overlay_columns, overlay_rows
from pathserver.core.status import SEARCH_BUDGET, SEARCH_FOUND, SEARCH_NO_PATH

ONE_START = np.zeros(0, dtype=np.int32)  # no sources: the search starts at its (sx, sy)
NO_ROWS = np.zeros(0, dtype=np.int32)  # and no goal bounds
NO_BOUNDS = np.zeros((0, ROW), dtype=np.int16)


def random_queries(rng, passable, count):
    free = np.argwhere(passable)
    for _ in range(count if len(free) else 0):
        (sy, sx), (gy, gx) = free[rng.integers(len(free), size=2)]
        yield (int(sx), int(sy)), (int(gx), int(gy))


class PlusWorkspace:
    """solve()'s work_float for grids of up to ``cells`` cells, searching with JPS+."""

    def __init__(self, cells):
        self.work_float = np.zeros((5, cells + 1), np.float64)
        self.pass_id = 0

    def stamp(self, node):
        return jump_stamp(self.work_float, node)

    def cost(self, node):
        return jump_cost(self.work_float, node)

    def parent(self, node):
        return jump_parent(self.work_float, node)

    def search(self, passable, start, goal, table=None, weight=1.0, max_expansions=0, overlay=None):
        """JPS+ on ``table`` (built here when None); with ``overlay``, (bitmaps, overlay)
        from relay.lay_avoided, the table that of the grid before the overlay's cells."""
        if table is None:
            table = jump_table(passable)
        bitmaps, marks = (None, None) if overlay is None else overlay
        self.pass_id += 2
        status, end, expanded = jps_plus(
            passable, table, start[0], start[1], goal[0], goal[1], weight, max_expansions,
            self.work_float, self.pass_id, ONE_START, NO_ROWS, NO_BOUNDS, bitmaps, marks,
        )
        return status, end, expanded, self.pass_id

    def path(self, passable, start, end):
        width = passable.shape[1]
        return [tuple(p) for p in trace_jumps(self.work_float, width, start[1] * width + start[0], end).tolist()]


def test_directions_are_the_references():
    assert list(zip(DIRECTION_X, DIRECTION_Y)) == naive.JUMP_DIRECTIONS


def test_table_matches_distances_walked_cell_by_cell():
    rng = np.random.default_rng(10)
    for _ in range(60):
        width, height = int(rng.integers(1, 16)), int(rng.integers(1, 16))
        walkable = naive.random_grid(rng, width, height, rng.uniform(0.0, 0.5))
        unit = int(rng.integers(1, 4))
        passable = naive.passable_for_unit(walkable, unit, unit)
        table = jump_table(passable)
        assert table.dtype == np.int8 and table.shape == (width * height, 8)
        assert (table == stored(naive.jump_distances(passable))).all()


def stored(distances):
    """True distances as the table stores them: past 126 steps, SAT."""
    return np.where(np.abs(distances) > SAT_STEP, SAT, distances)


def test_long_lines_saturate_and_read_on():
    # Straight runs of up to 300 cells (the reference walks them; diagonals stay short).
    rng = np.random.default_rng(16)
    for width, height in [(300, 3), (3, 300), (260, 4)]:
        passable = naive.random_grid(rng, width, height, 0.01).astype(np.uint8)
        table = jump_table(passable)
        assert (table == SAT).any()
        assert (table == stored(naive.jump_distances(passable))).all()
    # Long diagonals: the search against Dijkstra on open ground with a few walls.
    ws = PlusWorkspace(300 * 300)
    for size, walls in ((140, True), (300, False)):
        passable = np.ones((size, size), dtype=np.uint8)
        passable[7, 5] = 0
        if walls:
            passable[rng.integers(size, size=6), rng.integers(size, size=6)] = 0
            passable[size // 2, 10 : size - 10] = 0
        table = jump_table(passable)
        assert (table[:, :4] == SAT).any()
        assert walls or (table[:, 4:] == SAT).any()
        for start, goal in [((0, 0), (size - 1, size - 1)), ((size - 1, 0), (0, size - 1)), ((3, 1), (size - 2, 130)),
                            ((1, size - 1), (size - 1, 2)), ((0, 5), (139, 5))]:
            check_against_dijkstra(ws, passable, start, goal)
        for start, goal in random_queries(rng, passable, 6):
            check_against_dijkstra(ws, passable, start, goal)


def test_update_after_edits_matches_a_fresh_build():
    rng = np.random.default_rng(11)
    for _ in range(80):
        width, height = int(rng.integers(2, 30)), int(rng.integers(2, 30))
        before = naive.random_grid(rng, width, height, rng.uniform(0.0, 0.4)).astype(np.uint8)
        after = before.copy()
        x, y = int(rng.integers(width)), int(rng.integers(height))
        w, h = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        after[y : y + h, x : x + w] = rng.integers(0, 2)
        old = jump_table(before)
        table, changed = update_jump_table(after, before, old)
        assert changed == int((before != after).sum())
        assert (table == jump_table(after)).all()
        if changed == 0:
            assert table is old
        else:
            assert (old == jump_table(before)).all()  # the old table is left alone


def check_against_dijkstra(ws, passable, start, goal, table=None, overlay=None):
    """JPS+ (under ``overlay`` too) finds Dijkstra's cost and a valid path."""
    expected = naive.dijkstra(passable, start, goal)
    status, end, _, _ = ws.search(passable, start, goal, table, overlay=overlay)
    if expected == math.inf:
        assert status == SEARCH_NO_PATH
        return
    assert status == SEARCH_FOUND
    assert abs(ws.cost(end) - expected) < 1e-9
    path = ws.path(passable, start, end)
    assert path[0] == start and path[-1] == goal
    assert naive.path_is_valid(passable, path)
    assert abs(naive.path_cost(path) - expected) < 1e-9


def test_costs_match_dijkstra_for_unit_sizes_1_to_3():
    rng = np.random.default_rng(12)
    ws = PlusWorkspace(40 * 40)
    for _ in range(200):
        width, height = int(rng.integers(3, 41)), int(rng.integers(3, 41))
        walkable = naive.random_grid(rng, width, height, rng.uniform(0.0, 0.45))
        unit = int(rng.integers(1, 4))
        passable = naive.passable_for_unit(walkable, unit, unit)
        for start, goal in random_queries(rng, passable, 3):
            check_against_dijkstra(ws, passable, start, goal)


def laid(passable, blocked, boxes, unit, log_size=1 << 12):
    """(bitmaps, overlay): relay.lay_avoided on the grid before's jump_bitmaps."""
    bits = jump_bitmaps(passable)
    overlay = new_overlay(*passable.shape)
    touched = np.zeros((passable.size + 63) // 64, dtype=np.uint64)
    lay_avoided(bits, blocked, boxes, unit, unit, touched, overlay, np.zeros(log_size, dtype=np.int64))
    return bits, overlay


def test_the_overlay_searches_the_blocked_grid_as_its_own_table_does():
    # A request's avoided cells: the grid before's table, and its bitmaps with them laid
    # on, search the blocked grid as JPS+ on a table built for it does (the same nodes
    # expanded), at Dijkstra's costs; a log too short to note every changed word too.
    rng = np.random.default_rng(22)
    ws = PlusWorkspace(48 * 48)
    over = PlusWorkspace(48 * 48)
    found = 0
    for trial in range(160):
        width, height = int(rng.integers(4, 49)), int(rng.integers(4, 49))
        walkable = naive.random_grid(rng, width, height, rng.uniform(0.0, 0.3))
        unit = int(rng.integers(1, 4))
        passable = naive.passable_for_unit(walkable, unit, unit).astype(np.uint8)
        boxes = random_boxes(rng, width, height, int(rng.integers(0, 25)))
        blocked = passable.copy()
        block_anchors(blocked, boxes, unit, unit)
        overlay = laid(passable, blocked, boxes, unit, 2 if trial % 10 == 0 else 1 << 12)
        before, after = jump_table(passable), jump_table(blocked)
        for start, goal in random_queries(rng, blocked, 3):
            status, _, expanded, _ = ws.search(blocked, start, goal, after)
            assert over.search(blocked, start, goal, before, overlay=overlay)[::2] == (status, expanded)
            check_against_dijkstra(over, blocked, start, goal, before, overlay)
            found += status == SEARCH_FOUND
    assert found > 200


def test_an_overlay_that_misses_a_change_is_caught():
    # The comparisons above fail when the overlay says less than what changed: with no
    # line redone, the table of the grid before is read everywhere.
    rng = np.random.default_rng(23)
    over = PlusWorkspace(48 * 48)
    wrong = 0
    for _ in range(60):
        width, height = int(rng.integers(8, 49)), int(rng.integers(8, 49))
        passable = naive.random_grid(rng, width, height, 0.15).astype(np.uint8)
        boxes = random_boxes(rng, width, height, 20)
        blocked = passable.copy()
        block_anchors(blocked, boxes, 1, 1)
        bits, overlay = laid(passable, blocked, boxes, 1)
        rows, columns = overlay_rows(height, width), overlay_columns(height, width)
        overlay[rows:columns] = [0] * (height + 1) + [width] * height + [0] * height  # no row redone
        overlay[columns:] = [0] * (width + 1) + [height] * width + [0] * width  # no column
        for start, goal in random_queries(rng, blocked, 3):
            status, end, _, _ = over.search(blocked, start, goal, jump_table(passable), overlay=(bits, overlay))
            expected = naive.dijkstra(blocked, start, goal)
            path_ok = status == SEARCH_FOUND and naive.path_is_valid(blocked, over.path(blocked, start, end))
            wrong += (expected == math.inf) != (status == SEARCH_NO_PATH) or (
                status == SEARCH_FOUND and (not path_ok or abs(over.cost(end) - expected) > 1e-9))
    assert wrong >= 10


def test_goal_stops_a_straight_and_a_diagonal_move():
    ws = PlusWorkspace(100)
    passable, start, goal = grid("S...G....")
    status, end, expanded, _ = ws.search(passable, start, goal)
    assert (status, expanded, ws.cost(end)) == (SEARCH_FOUND, 1, 4.0)
    passable = np.ones((10, 10), dtype=np.uint8)
    status, end, expanded, _ = ws.search(passable, (0, 0), (5, 5))
    assert (status, expanded) == (SEARCH_FOUND, 1)
    # The turn onto the goal's column, (3, 3), is no node: the goal's parent is the start
    # and the way between them runs diagonal first.
    status, end, expanded, _ = ws.search(passable, (0, 0), (3, 8))
    assert (status, expanded) == (SEARCH_FOUND, 1)
    assert ws.parent(end) == 0
    assert abs(ws.cost(end) - (3 * math.sqrt(2) + 5)) < 1e-12
    assert ws.path(passable, (0, 0), end) == [(0, 0), (1, 1), (2, 2), (3, 3), (3, 4), (3, 5), (3, 6), (3, 7), (3, 8)]


def test_no_path_and_budget_end_at_the_nearest_closed_node():
    passable, start, goal = grid(
        """
        S..#...
        ...#...
        ...#..G
        """
    )
    ws = PlusWorkspace(passable.size)
    status, end, expanded, pass_id = ws.search(passable, start, goal)
    assert status == SEARCH_NO_PATH
    width = passable.shape[1]
    closed = [node for node in range(passable.size) if ws.stamp(node) == pass_id + 1]
    assert len(closed) == expanded and end in closed
    octile = [max(abs(v % width - 6), abs(v // width - 2)) + (math.sqrt(2) - 1) * min(
        abs(v % width - 6), abs(v // width - 2)) for v in closed]
    assert octile[closed.index(end)] == min(octile)
    path = ws.path(passable, start, end)
    assert naive.path_is_valid(passable, path)
    passable, start, goal = grid(
        """
        S.#.....#...
        ..#..#..#..#
        ..#..#..#..#
        .....#.....#
        #####.####.G
        """
    )
    ws = PlusWorkspace(passable.size)
    status, end, expanded, _ = ws.search(passable, start, goal, max_expansions=2)
    assert (status, expanded) == (SEARCH_BUDGET, 2)
    assert naive.path_is_valid(passable, ws.path(passable, start, end))
    status, end, expanded, _ = ws.search(passable, start, goal)
    assert status == SEARCH_FOUND and expanded > 2


def test_same_costs_as_the_online_search_on_a_large_grid():
    rng = np.random.default_rng(13)
    passable = naive.random_grid(rng, 150, 120, 0.1).astype(np.uint8)
    ws = PlusWorkspace(passable.size)
    online = Workspace(passable.size)
    table = jump_table(passable)
    bits = jump_bitmaps(passable)
    for start, goal in random_queries(rng, passable, 40):
        status, end, _, _ = ws.search(passable, start, goal, table)
        status_online, end_online, _, _ = online.search(passable, start, goal, bits)
        assert status == status_online
        if status == SEARCH_FOUND:
            assert abs(ws.cost(end) - online.g[end_online]) < 1e-9
            assert naive.path_is_valid(passable, ws.path(passable, start, end))


def test_a_full_open_list_drops_its_stale_entries():
    # The least room the workspace may have (one entry a cell, and one more): on open
    # ground with walls every few cells nodes are improved and pushed again, and the
    # stale entries must make way; the answers stay Dijkstra's.
    rng = np.random.default_rng(14)
    for _ in range(30):
        passable = naive.random_grid(rng, 12, 12, 0.35).astype(np.uint8)
        ws = PlusWorkspace(passable.size)
        for start, goal in random_queries(rng, passable, 4):
            check_against_dijkstra(ws, passable, start, goal)


def test_the_records_are_cleared_when_the_pass_ids_wrap():
    passable, start, goal = grid(
        """
        S.#.....#...
        ..#..#..#..#
        ..#..#..#..#
        .....#.....#
        #####.####.G
        """
    )
    expected = naive.dijkstra(passable, start, goal)
    ws = PlusWorkspace(passable.size)
    ws.pass_id = 998
    ws.search(passable, start, goal)  # closes its jump points with stamp 1001
    ws.pass_id = 0
    ws.search(passable, start, start)  # pass 2: the ids wrapped, the records are cleared
    # Pass 1000 again: the first search's closed stamps must be gone.
    ws.pass_id = 998
    status, end, _, _ = ws.search(passable, start, goal)
    assert status == SEARCH_FOUND and abs(ws.cost(end) - expected) < 1e-9


def test_compacting_the_open_list_keeps_each_open_node_once():
    from pathserver.core.heap import TIE
    from pathserver.core.jpsplus import _compact

    rng = np.random.default_rng(15)
    passable = naive.random_grid(rng, 30, 30, 0.3).astype(np.uint8)
    n = passable.size + 1
    keys = np.zeros(5 * n)
    nodes = keys.view(np.int64)
    words = keys.view(np.int32)
    records = 3 * n
    open_nodes = rng.choice(passable.size, 40, replace=False)
    g = rng.uniform(0, 50, 40)
    gx, gy, width, h_scale = 7, 9, 30, 1.0 + TIE
    heap = []
    for node, cost in zip(open_nodes.tolist(), g.tolist()):
        keys[records + 2 * node] = cost
        words[2 * (records + 2 * node + 1)] = 10  # open in pass 10
        dx, dy = abs(node % width - gx), abs(node // width - gy)
        key = cost + (max(dx, dy) + (math.sqrt(2.0) - 1.0) * min(dx, dy)) * h_scale
        heap += [(key, node), (key + 1.0, node)]  # the current entry and a stale one
    closed = int(np.setdiff1d(np.arange(passable.size), open_nodes)[0])
    words[2 * (records + 2 * closed + 1)] = 11
    heap.append((3.0, closed))
    for i, (key, node) in enumerate(heap):
        keys[n + 2 * i] = key
        nodes[n + 2 * i + 1] = node
    size = _compact(keys, nodes, n, len(heap), words, records, 10, width, gx, gy, h_scale)
    kept = [(keys[n + 2 * i], int(nodes[n + 2 * i + 1])) for i in range(size)]
    assert sorted(node for _, node in kept) == sorted(open_nodes.tolist())
    assert all(kept[(i - 1) // 2][0] <= kept[i][0] for i in range(1, size))
