"""find_path with many goals, avoided cells or traversal rules: the checks of those, the
avoided cells laid on per-thread copies of the unit's grids (:class:`~pathserver.grid.avoid.Avoided`),
and the searches round them (JPS+ mended round them, relaxed rounds, or A*)."""

from __future__ import annotations

import numpy as np

from pathserver.core import status as st
from pathserver.core.goals import snap_goals, solve_goals
from pathserver.core.query import solver
from pathserver.errors import GoalBlockedError, PathserverError, RequestError
from pathserver.grid.avoid import Avoided
from pathserver.grid.gridmap import GridMap
from pathserver.grid.values import python_value
from pathserver.grid.prepared import (
    CALL_DEFAULTS,
    NO_BOUND_ROWS,
    NO_BOUNDS,
    NO_JUMP_TABLE,
    NO_OVERLAY,
    STATUS_NAMES,
    PathResult,
    PreparedCall,
    Workspace,
    avoid_boxes,
    cell_of,
    cells_of,
    checked,
    endpoint_cell,
    prepared_call,
    raise_for,
    run_solve,
    traversal_rules,
    unit_boxes,
    workspace,
)
from pathserver.options import ALGORITHM, AVOID, AVOID_COST, GOALS, Avoid



def find_path_within(gridmap: GridMap, start, goal, unit_size, budget: int, *, avoid,
                     **options) -> PathResult | None:
    """``find_path(gridmap, start, goal, unit_size, avoid=avoid, **options)`` if it is
    the JPS+ path without the avoided cells, mended round them (see :func:`solve`),
    found within ``budget`` expansions; else None, and then only the call itself answers.
    What it answers is what the call answers: the same search, stopped early or not at
    all. (The server's loop answers short trips itself this way.)"""
    given = dict(CALL_DEFAULTS)
    given.update(options)
    return find_path_more(gridmap, start, goal, unit_size, given, None, avoid, None, None, budget)


def find_path_more(gridmap: GridMap, start, goal, unit_size, given: dict, goals, avoid, avoid_cost,
                    traversal, give_up: int = 0) -> PathResult | None:
    """find_path with ``goals``, ``avoid`` / ``avoid_cost`` or ``traversal``: checks those,
    then runs solve (one goal) or solve_goals on the unit's grids with the avoided cells
    laid on (``avoid`` alone as numpy rows: :func:`_find_path_avoiding` first). give_up >
    0: see :func:`find_path_within`."""
    if avoid is not None and goals is None and avoid_cost is None and traversal is None:
        if type(avoid) is not Avoid:
            try:
                avoid = checked(AVOID, avoid)
            except PathserverError:
                pass  # refused below, after the checks of the rest
        if type(avoid) is Avoid:
            answer = _find_path_avoiding(gridmap, start, goal, unit_size, given, avoid, give_up)
            if answer is not _GENERAL:
                return answer
    if goals is not None and goal is not None:
        raise RequestError("pass goal or goals, not both", at=GOALS.name)
    if goals is None and goal is None:
        raise RequestError("find_path needs a goal (or goals)", at="goal")
    if goals is not None:
        goals = checked(GOALS, goals)
    boxes = avoid_boxes(gridmap, avoid)
    if avoid_cost is not None:
        avoid_cost = checked(AVOID_COST, avoid_cost)
    rules = None if traversal is None else traversal_rules(gridmap, traversal)
    call = prepared_call(gridmap, unit_size, rules, given)
    call_cells, jump_bits, jump_table, mode, budget = call.cells, call.jump_bits, call.jump_table, call.mode, call.budget
    algorithm_name = call.algorithm
    call_mode = mode
    sx, sy = endpoint_cell(start, "start", gridmap)
    avoiding = len(boxes) > 0
    if avoiding or goals is not None and len(goals) > 1:
        if python_value(given[ALGORITHM.name]) == "jps":
            raise RequestError("algorithm 'jps' takes one goal and no avoid; use 'astar' or 'auto'", at=ALGORITHM.name)
        if algorithm_name == "jps+" and not avoiding:
            pass  # many goals: JPS+ back from all of them at once (solve_goals)
        elif algorithm_name == "jps+" and avoid_cost is None and (goals is None or len(goals) == 1):
            # JPS+ on the layer's table: the path without the avoided cells, mended round
            # them at its cost; else (QUERY_UNMENDED) round those near its cuts, then
            # round all of them (below), on the layer's JPS bitmaps.
            mode |= 1 << st.MODE_AVOIDING | 1 << st.MODE_RELAXED
        else:
            # A*: avoided cells with many goals, or dear (avoid_cost) instead of solid.
            mode &= ~(1 << st.MODE_ALGORITHM)
            algorithm_name = "astar"
            jump_table = NO_JUMP_TABLE
    if give_up and not mode & (1 << st.MODE_AVOIDING):
        return None
    if avoiding and avoid_cost is not None:
        mode &= ~(1 << st.MODE_UNIFORM)
    ws = workspace(call.n)
    laid, unit_w, unit_h = unit_boxes(call, boxes)
    avoided = Avoided(call_cells, call.cost_index, call.cost_table, (call_mode >> st.MODE_UNIFORM) & 1, unit_w, unit_h,
                      laid, avoid_cost)
    if goals is None:
        targets = np.array([endpoint_cell(goal, "goal", gridmap)], dtype=np.int64)
        goal_name = "goal"
    else:
        targets = cells_of(goals, GOALS.name, gridmap)
        goal_name = GOALS.name
    given_targets = targets
    index = None
    with avoided as (cells, cost_index, cost_table, _):
        moved = None
        if avoided.blocking:
            # Goals snap off avoided cells, seen from a start that is blocked too, unless
            # the unit already stands on the goal; then the start is freed to leave.
            targets, moved, index = _snap_off(cells, call, targets, (sx, sy), goal_name)
            avoided.release(sx, sy)
        if len(targets) == 0:
            status, flags, points, cost, length, expanded, chosen = st.QUERY_NO_PATH, 0, _NO_POINTS, 0.0, 0.0, 0, -1
            gx, gy = cell_of(goal, "goal", gridmap) if goals is None else (-1, -1)
        elif len(targets) == 1:
            (gx, gy), = targets.tolist()
            status, flags, count, cost, length, expanded, sx, sy, gx, gy = run_solve(
                solver(mode, jump_table, cells), call, ws, cells, jump_bits, jump_table, call_cells, cost_index,
                cost_table, sx, sy, gx, gy, mode, give_up or budget, call.bound_rows, call.bounds, NO_OVERLAY)
            if status == st.QUERY_UNMENDED:
                if give_up:
                    return None
                status, flags, count, cost, length, expanded, sx, sy, gx, gy = _round_the_cells(
                    avoided, call, cells, gridmap, rules, jump_bits, mode, budget, ws,
                    (status, flags, count, cost, length, expanded, sx, sy, gx, gy))
                algorithm_name = "jps"
            points = ws.answer[:count].copy("K")
            chosen = -1 if status == st.QUERY_NO_PATH or status == st.QUERY_START_BLOCKED else 0
        else:
            snapped = np.empty(targets.shape, dtype=np.int32)
            status, flags, points, cost, length, expanded, sx, sy, chosen = solve_goals(
                cells, call.comps, jump_table, cost_index, cost_table, call.heights, call.climb, sx, sy, targets, mode,
                call.weight, budget, ws.work_float, ws.work_int, snapped, call.bound_rows, call.bounds,
            )
            gx, gy = snapped[chosen].tolist() if chosen >= 0 else (-1, -1)
    if moved is not None and chosen >= 0:
        if moved[chosen]:
            flags |= st.FLAG_GOAL_SNAPPED
        chosen = int(index[chosen])
    if status > st.QUERY_NO_PATH:
        if status == st.QUERY_GOAL_BLOCKED:
            gx, gy = given_targets[chosen].tolist()
        raise_for(status, call, sx, sy, gx, gy, "goal" if goals is None else f"goals[{chosen}]")
    goal_index = None if goals is None or chosen < 0 else int(chosen)
    return PathResult(STATUS_NAMES[status], points, cost, length, expanded, (sx, sy), (gx, gy), flags,
                      call.generation, algorithm_name, goal_index)


def _round_the_cells(avoided: Avoided, call: PreparedCall, cells, gridmap: GridMap, rules, jump_bits, mode: int,
                     budget: int, ws: Workspace, answer: tuple) -> tuple:
    """After solve's QUERY_UNMENDED (``answer``, its path left in ``ws``) inside
    ``avoided`` (``cells``: the grid it hands on, the cells laid): JPS+ round the avoided
    cells near where that path steps on them, its path mended round the others; after
    RELAX_ROUNDS, round all of them. Each reads the layer's table where the cells it goes
    round change nothing and scans the layer's stop bitmaps (``jump_bits``, made on first
    need) with them laid on where they do (no goal bounds: those are the grid's without
    them). Returns solve's last answer, with the first one's snaps and every round's
    expansions."""
    status, flags, count, cost, length, expanded, sx, sy, gx, gy = answer
    unit_w, unit_h = call.size
    jump_table, cost_index, cost_table = call.jump_table, call.cost_index, call.cost_table
    snapped = flags & (st.FLAG_START_SNAPPED | st.FLAG_GOAL_SNAPPED)
    spent = expanded
    if not jump_bits.size:  # JPS+ ran: the bitmaps, made on first need
        jump_bits = gridmap.layer_for(unit_w, unit_h, rules).jump_bits()
    for _ in range(RELAX_ROUNDS):
        relaxation = avoided.relax(ws.answer[:count], jump_bits) if count else None
        if relaxation is None:
            break
        grid, bits, overlay = relaxation
        status, flags, count, cost, length, expanded, sx, sy, gx, gy = run_solve(
            solver(mode, jump_table, cells), call, ws, cells, bits, jump_table, grid, cost_index, cost_table,
            sx, sy, gx, gy, mode, budget, NO_BOUND_ROWS, NO_BOUNDS, overlay)
        spent += expanded
        if status != st.QUERY_UNMENDED:
            break
    if status == st.QUERY_UNMENDED:
        bits, overlay = avoided.overlay(jump_bits)
        whole = mode & ~(1 << st.MODE_RELAXED)
        status, flags, count, cost, length, expanded, sx, sy, gx, gy = run_solve(
            solver(whole, jump_table, cells), call, ws, cells, bits, jump_table, cells, cost_index, cost_table,
            sx, sy, gx, gy, whole, budget, NO_BOUND_ROWS, NO_BOUNDS, overlay)
        spent += expanded
    return status, flags | snapped, count, cost, length, spent, sx, sy, gx, gy


#: :func:`_find_path_avoiding`'s answer where the general way must answer.
_GENERAL = object()

_AVOID_MODE = 1 << st.MODE_AVOIDING | 1 << st.MODE_RELAXED


def _find_path_avoiding(gridmap: GridMap, start, goal, unit_size, given: dict, avoid, give_up: int):
    """find_path with ``avoid`` alone the quick way, where all is plainly so: the call
    (``unit_size``, ``given``) already kept and running JPS+, the endpoints pairs of ints
    on the map, ``avoid``'s cells and rectangles numpy rows (as the server hands them on),
    their numbers finite, the goal clear of them. One kernel lays the cells on
    (:meth:`~pathserver.grid.avoid.Avoided.laid`), then JPS+ searches the grid without them
    and mends its path round them, as the general way's first search does, and where
    mending cannot keep its cost searches round them on the same laid grid
    (:func:`_round_the_cells`): the general way's answer, without its checks in Python.
    Anything else: :data:`_GENERAL`. give_up: as :func:`find_path_within` (None past
    it)."""
    if not len(avoid.cells) + len(avoid.rects):
        return _GENERAL
    call = prepared_call(gridmap, unit_size, None, given, prepare=False)
    if call is None:
        return _GENERAL
    algorithm_name = call.algorithm
    if algorithm_name != "jps+":
        return _GENERAL
    try:
        sx, sy = start
        gx, gy = goal
    except (TypeError, ValueError):
        return _GENERAL
    width, height = call.width, call.height
    if (type(sx) is not int or type(sy) is not int or type(gx) is not int or type(gy) is not int
            or not (0 <= sx < width and 0 <= sy < height and 0 <= gx < width and 0 <= gy < height)):
        return _GENERAL
    unit_w, unit_h = call.size
    call_cells, cost_index, cost_table, mode = call.cells, call.cost_index, call.cost_table, call.mode
    avoided = Avoided.laid(call_cells, cost_index, cost_table, (mode >> st.MODE_UNIFORM) & 1, unit_w, unit_h, avoid,
                           (sx, sy), (gx, gy))
    if avoided is None:
        return _GENERAL
    ws = workspace(call.n)
    mode |= _AVOID_MODE
    with avoided as (laid, _, _, _):
        answer = run_solve(None, call, ws, laid, call.jump_bits, call.jump_table, call_cells, cost_index, cost_table,
                           sx, sy, gx, gy, mode, give_up or call.budget, call.bound_rows, call.bounds, NO_OVERLAY)
        if answer[0] == st.QUERY_UNMENDED:
            if give_up:
                return None
            answer = _round_the_cells(avoided, call, laid, gridmap, None, call.jump_bits, mode, call.budget, ws,
                                      answer)
            algorithm_name = "jps"
    status, flags, count, cost, length, expanded, sx, sy, gx, gy = answer
    if status > st.QUERY_NO_PATH:
        raise_for(status, call, sx, sy, gx, gy)
    return PathResult(STATUS_NAMES[status], ws.answer[:count].copy("K"), cost, length, expanded, (sx, sy), (gx, gy),
                      flags, call.generation, algorithm_name)


#: Relaxed rounds (:meth:`~pathserver.grid.avoid.Avoided.relax`) before a request's
#: search round all its avoided cells at once.
RELAX_ROUNDS = 3

_NO_POINTS = np.empty((0, 2), dtype=np.int32)
_NO_POINTS.setflags(write=False)


_ONE_KEPT = (np.zeros(1, dtype=bool), np.arange(1))
for _array in _ONE_KEPT:
    _array.setflags(write=False)


def _snap_off(cells, call: PreparedCall, targets: np.ndarray, start, goal_name: str):
    """``(targets, moved, index)``: the targets the unit can stand on in ``cells``
    (avoided cells blocked, the start too), each moved to the nearest cell it can where it
    cannot (GoalBlockedError without snap), but a target on the start itself; those with
    no cell left to go to are dropped. moved: bool, whether each kept one moved; index:
    each kept one's index among ``targets`` (read-only)."""
    if len(targets) == 1:
        (x, y), = targets.tolist()
        if cells[y, x]:  # the common case: not on an avoided cell
            return (targets, *_ONE_KEPT)
    elif cells[targets[:, 1], targets[:, 0]].all():
        return targets, np.zeros(len(targets), dtype=bool), np.arange(len(targets))
    snapped = np.empty_like(targets)
    snap_goals(cells, call.comps, targets, 1 if call.snap else 0, snapped, call.diagonal)
    at_start = (targets[:, 0] == start[0]) & (targets[:, 1] == start[1])
    snapped[at_start] = targets[at_start]
    placed = snapped[:, 0] >= 0
    if not call.snap and not placed.all():
        unit_w, unit_h = call.size
        blocked = int(np.argmin(placed))
        gx, gy = targets[blocked].tolist()
        name = goal_name if goal_name == "goal" else f"goals[{blocked}]"
        raise GoalBlockedError(f"{name} ({gx}, {gy}) is blocked for a {unit_w}x{unit_h} unit", at=name)
    index = np.flatnonzero(placed)
    return snapped[index], (snapped[index] != targets[index]).any(axis=1), index

