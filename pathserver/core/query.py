"""One whole path query in one compiled call: snap the endpoints, reject an unreachable
goal by its component, take the straight line when it is clear, search, fall back to a
partial path, and smooth. One dispatch from Python keeps the per-call overhead small.
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.astar import (
    astar,
    next_pass_id,
    path_steps,
    search_any,
    search_uniform,
    search_weighted,
    trace_path_into,
)
from pathserver.core.components import component_at, nearest_with_label
from pathserver.core.hexjps import hex_jps, hex_path_steps, trace_hex_into
from pathserver.core.jps import jps
from pathserver.core.jpsplus import jps_plus, jump_cost, jump_path_steps, trace_jumps_into
from pathserver.core.lines import (
    finish_in_place,
    line_is_optimal,
    path_cost,
    polyline_length,
    straight_line_into,
)
from pathserver.core.moves import diagonal_step, line_kind
from pathserver.core.repair import mend
from pathserver.core.status import (
    ALGORITHM_JPS,
    DIAGONAL_HEX,
    DIAGONAL_MASK,
    DIAGONAL_NO_CORNER_CUTTING,
    FLAG_BUDGET_HIT,
    FLAG_GOAL_SNAPPED,
    FLAG_LINE_OF_SIGHT,
    FLAG_OTHER_COMPONENT,
    FLAG_START_SNAPPED,
    HEURISTIC_MASK,
    HEURISTIC_OCTILE,
    MODE_ALGORITHM,
    MODE_ALLOW_PARTIAL,
    MODE_AVOIDING,
    MODE_DIAGONAL,
    MODE_HEURISTIC,
    MODE_LINE_OF_SIGHT,
    MODE_RELAXED,
    MODE_SMOOTH,
    MODE_SNAP,
    MODE_UNIFORM,
    MODE_USE_HEIGHTS,
    QUERY_FOUND,
    QUERY_GOAL_BLOCKED,
    QUERY_NO_PATH,
    QUERY_PARTIAL,
    QUERY_SEARCH_LIMIT,
    QUERY_START_BLOCKED,
    QUERY_UNMENDED,
    SEARCH_BUDGET,
    SEARCH_FOUND,
    SEARCH_NO_PATH,
    SMOOTH_NONE,
)


def answer_view(work_int):
    """Where :func:`solve` writes its answer's points: rows 1 and 2 of the workspace's
    work_int (free once a search is done) as int32 (N + 1, 2) pairs, a view.
    ``answer_view(w)[:count]`` are the points of solve's answer, until the workspace's
    next search."""
    m = work_int.shape[1]
    return work_int.reshape(-1)[m:3 * m].reshape(m, 2)


#: :func:`answer_view` compiled, for solve (the same function: one layout).
answer_cells = njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)(answer_view)


#: What a copy of :func:`solve` searches with (see :func:`solver`): one of A*'s three
#: loops (:mod:`pathserver.core.astar`), online JPS, JPS+ on the layer's table, any of
#: them as ``mode`` and ``jump_table`` say, or hex JPS (:mod:`pathserver.core.hexjps`).
SOLVE_ASTAR_UNIFORM = 0
SOLVE_ASTAR_WEIGHTED = 1
SOLVE_ASTAR_ANY = 2
SOLVE_JPS = 3
SOLVE_PLUS = 4
SOLVE_ANY = 5
SOLVE_HEX = 6


def _solver(kind, name):
    """A copy of :func:`solve` compiled for one ``kind`` of search: numba prunes the
    branches on ``kind`` before typing, so a copy compiles only its own search."""

    def solve(
        cells,
        comps,
        jump_bits,
        jump_table,
        plain_cells,
        cost_index,
        cost_table,
        heights,
        max_climb,
        sx,
        sy,
        gx,
        gy,
        mode,
        weight,
        max_expansions,
        work_float,
        work_int,
        landmarks,
        bound_rows,
        bounds,
        overlay,
    ):
        """Answer one path query; start and goal must be in bounds (the wrapper checks).

        cells, comps: the unit's components (:mod:`pathserver.core.components`; uint8 (H, W)
        cells, nonzero where its footprint fits, the grid every search reads). jump_bits:
        :func:`pathserver.core.jps.jump_bitmaps` of ``cells``; jump_table:
        :func:`pathserver.core.jpsplus.jump_table` of it, or an empty (0, 8) array (with a
        table, JPS runs as JPS+); in ``solve_hex``, :func:`pathserver.core.hexjps.hex_jump_table`
        as int8 (2 * H * W, 6). With MODE_AVOIDING, ``cells`` holds a request's avoided
        cells blocked; with MODE_RELAXED too, JPS+ searches ``plain_cells``, a relaxation
        (the grid before, or it with some avoided anchors blocked), and QUERY_UNMENDED says
        its path did not mend on ``cells``; otherwise ``plain_cells`` is ``cells``. overlay:
        uint64, empty, or with ``jump_bits`` the laying of blocked anchors
        (:func:`pathserver.core.relay.lay_avoided`) JPS+ reads the table under. cost_index,
        cost_table, heights, max_climb, weight, max_expansions, landmarks: as in
        :func:`astar`. mode: the other options, :func:`pathserver.core.status.pack_mode`.
        bound_rows, bounds: JPS+'s goal bounds of ``plain_cells`` (empty arrays for none).
        work_float float64 (5, N), work_int int32 (4, N + 1), N >= H * W (JPS+ needs N > H *
        W): the workspace, zeroed once when allocated, never cleared between calls. Its
        rows, and the calls in turn with avoided cells: docs/design.md, "The path query".
        Returns (status, flags, count, cost, length, expanded, sx, sy, gx, gy): a QUERY_*
        status, FLAG_* bits, the count of waypoints (0 for no path; QUERY_UNMENDED's: the
        unmended path's cells) left in ``answer_cells(work_int)[:count]``, the cell path's
        cost, the waypoints' Euclidean length, nodes expanded, and the endpoints after
        snapping. It allocates nothing (it compiles without reference counting).
        """
        diagonal = (mode >> MODE_DIAGONAL) & DIAGONAL_MASK
        heuristic = (mode >> MODE_HEURISTIC) & HEURISTIC_MASK
        smooth = (mode >> MODE_SMOOTH) & 3
        algorithm = (mode >> MODE_ALGORITHM) & 1
        snap = (mode >> MODE_SNAP) & 1
        allow_partial = (mode >> MODE_ALLOW_PARTIAL) & 1
        line_of_sight = (mode >> MODE_LINE_OF_SIGHT) & 1
        uniform = (mode >> MODE_UNIFORM) & 1
        use_heights = (mode >> MODE_USE_HEIGHTS) & 1
        avoiding = (mode >> MODE_AVOIDING) & 1
        passable = cells
        height, width = cells.shape
        pass_id = next_pass_id(work_int)
        stamp = work_int[3]
        g = work_float[0]
        heap_f = work_float[1]
        heap_h = work_float[2]
        parent = work_int[0]
        heap_nodes = work_int[1]
        heap_pos = work_int[2]
        flags = 0
        radius = height if height > width else width
        if passable[sy, sx] == 0:
            if snap == 0:
                return QUERY_START_BLOCKED, flags, 0, 0.0, 0.0, 0, sx, sy, gx, gy
            found, nx, ny = nearest_with_label(cells, comps, sx, sy, 0, radius, diagonal)
            if found != 0:
                return QUERY_START_BLOCKED, flags, 0, 0.0, 0.0, 0, sx, sy, gx, gy
            sx = nx
            sy = ny
            flags |= FLAG_START_SNAPPED
        if passable[gy, gx] == 0:
            if snap == 0:
                return QUERY_GOAL_BLOCKED, flags, 0, 0.0, 0.0, 0, sx, sy, gx, gy
            found, nx, ny = nearest_with_label(cells, comps, gx, gy, 0, radius, diagonal)
            gx = nx
            gy = ny
            flags |= FLAG_GOAL_SNAPPED

        # The target actually searched for: the goal, or with allow_partial and a goal in
        # another component, the cell of the start's component nearest to the goal.
        tx = gx
        ty = gy
        start_label = component_at(cells, comps, sx, sy)
        if component_at(cells, comps, gx, gy) != start_label:
            flags |= FLAG_OTHER_COMPONENT
            if allow_partial == 0:
                return QUERY_NO_PATH, flags, 0, 0.0, 0.0, 0, sx, sy, gx, gy
            found, tx, ty = nearest_with_label(cells, comps, gx, gy, start_label, radius, diagonal)

        reached = QUERY_FOUND if (tx == gx and ty == gy) else QUERY_PARTIAL
        four = line_kind(diagonal)
        out = answer_cells(work_int)
        one_start = work_int[1, :0]  # jps_plus's sources: none, the search starts at (sx, sy)
        corners = work_float[1].view(np.int64)  # pull_in_place's scratch: the heap's row, free after a search
        if line_of_sight != 0:
            if line_is_optimal(sx, sy, tx, ty, four, passable, cost_index, cost_table, uniform, heights, use_heights,
                               max_climb, diagonal):
                count = straight_line_into(out, sx, sy, tx, ty, four)
                cost = path_cost(out[:count], cost_index, cost_table, uniform, diagonal)
                count = finish_in_place(out, count, smooth, corners, passable, cost_index, cost_table, uniform, heights,
                                        use_heights, max_climb, diagonal)
                return (
                    reached, flags | FLAG_LINE_OF_SIGHT, count, cost, polyline_length(out[:count], diagonal), 0, sx, sy, gx, gy,
                )

        relaxed = avoiding & (mode >> MODE_RELAXED)
        plus = algorithm == ALGORITHM_JPS and jump_table.shape[0] == height * width and work_float.shape[1] > height * width
        # With avoided cells: other units stand somewhere on the map, mostly off this path.
        # Searching the grid without them no path is dearer, so its path is the answer if it
        # steps on none of their cells or detours of its own cost go round them
        # (repair.mend); else the caller searches round all of them, under the overlay.
        # Two call sites on purpose: with one, LLVM inlines jps_plus into this function and
        # the search runs slower (bench/profile.py shows it in solve's fixed part); with two
        # it keeps one out-of-line copy.
        # Under an overlay, plain_cells is the grid searched (the blocked one, or a
        # relaxation); without one, jps_plus is compiled with none of the overlay's code.
        # Each test on ``kind`` is a constant in a copy (see _solver): numba drops a branch
        # whose test is false, and every branch after one whose test is true, so each copy
        # types its own search alone.
        if kind == SOLVE_HEX:
            # The table's int16 entries, passed as int8 rows: the type every copy takes.
            status, end, expanded = hex_jps(
                passable, jump_table.reshape(-1).view(np.int16), diagonal, sx, sy, tx, ty, weight, max_expansions,
                g, parent, stamp, pass_id, heap_f, heap_h.view(np.int64), heap_pos, work_float[3].view(np.int64),
            )
        elif (kind == SOLVE_PLUS or kind == SOLVE_ANY) and plus and overlay.shape[0] > 0:
            status, end, expanded = jps_plus(
                plain_cells, jump_table, sx, sy, tx, ty, weight, max_expansions, work_float, pass_id, one_start,
                bound_rows, bounds, jump_bits, overlay,
            )
        elif (kind == SOLVE_PLUS or kind == SOLVE_ANY) and plus and max_expansions > 0 and relaxed == 0:
            status, end, expanded = jps_plus(
                passable, jump_table, sx, sy, tx, ty, weight, max_expansions, work_float, pass_id, one_start,
                bound_rows, bounds, None, None,
            )
        elif kind == SOLVE_PLUS or (kind == SOLVE_ANY and plus):
            status, end, expanded = jps_plus(
                plain_cells, jump_table, sx, sy, tx, ty, weight, max_expansions, work_float, pass_id, one_start,
                bound_rows, bounds, None, None,
            )
        elif kind == SOLVE_JPS or (kind == SOLVE_ANY and algorithm == ALGORITHM_JPS):
            status, end, expanded = jps(
                passable, jump_bits, sx, sy, tx, ty, weight, max_expansions,
                g, parent, stamp, pass_id, heap_nodes, heap_f, heap_h, heap_pos,
            )
        else:
            # A*'s heap: keys in heap_f's row, tags in heap_h's (8 bytes an entry as well).
            loop_args = (
                passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, sx, sy, tx, ty,
                diagonal, heuristic, weight, max_expansions,
                g, parent, stamp, pass_id, heap_f, heap_h.view(np.int64), heap_pos, landmarks,
            )
            # The loop by name, not held in the closure: numba keys its cache on what a
            # closure holds, and a dispatcher pickles differently in every process.
            if kind == SOLVE_ASTAR_UNIFORM:
                status, end, expanded = search_uniform(*loop_args)
            elif kind == SOLVE_ASTAR_WEIGHTED:
                status, end, expanded = search_weighted(*loop_args)
            elif kind == SOLVE_ASTAR_ANY:
                status, end, expanded = search_any(*loop_args)
            else:
                status, end, expanded = astar(*loop_args)
        if relaxed != 0 and status != SEARCH_FOUND:
            # No path (or a give-up budget reached, see the docstring): the caller decides.
            return QUERY_UNMENDED, flags, 0, 0.0, 0.0, expanded, sx, sy, gx, gy
        if (kind == SOLVE_ANY or kind == SOLVE_PLUS) and algorithm == ALGORITHM_JPS and status == SEARCH_NO_PATH \
                and allow_partial != 0 and avoiding != 0:
            # No way around the avoided cells. The partial answer ends on the reachable cell
            # nearest the goal, which a search closing only jump points may not have seen:
            # A* closes every one (without avoided cells the components answer this), in a
            # pass of its own.
            plus = False
            pass_id = next_pass_id(work_int)
            status, end, more = astar(
                passable, cost_index, cost_table, uniform, heights, use_heights, max_climb, sx, sy, tx, ty,
                diagonal, heuristic, weight, max_expansions,
                g, parent, stamp, pass_id, heap_f, heap_h.view(np.int64), heap_pos, landmarks,
            )
            expanded += more
        if status != SEARCH_FOUND:
            if status == SEARCH_BUDGET:
                flags |= FLAG_BUDGET_HIT
            if allow_partial == 0:
                if status == SEARCH_BUDGET:
                    return QUERY_SEARCH_LIMIT, flags, 0, 0.0, 0.0, expanded, sx, sy, gx, gy
                return QUERY_NO_PATH, flags, 0, 0.0, 0.0, expanded, sx, sy, gx, gy
            reached = QUERY_PARTIAL
        start_node = sy * width + sx
        if kind == SOLVE_HEX:
            straight = hex_path_steps(parent, width, diagonal, start_node, end)
            diagonals = 0
            count = straight + 1
            trace_hex_into(out, parent, width, diagonal, start_node, end, count)
            end_cost = g[end]
        elif (kind == SOLVE_PLUS or kind == SOLVE_ANY) and plus:
            straight, diagonals = jump_path_steps(work_float, width, start_node, end)
            count = straight + diagonals + 1
            trace_jumps_into(out, work_float, width, start_node, end, count)
            end_cost = jump_cost(work_float, end)
        else:
            straight, diagonals = path_steps(parent, width, start_node, end)
            count = straight + diagonals + 1
            trace_path_into(out, parent, width, start_node, end, count)
            end_cost = g[end]  # before mend: its detours use g's row
        if (kind == SOLVE_PLUS or kind == SOLVE_ANY) and relaxed != 0:
            mended, closed = mend(out, count, passable, work_float, work_int, max_expansions)
            expanded += closed
            if mended == 0:
                # The path, as far as mended, stays in out: where the caller blocks more.
                return QUERY_UNMENDED, flags, count, 0.0, 0.0, expanded, sx, sy, gx, gy
        if smooth == SMOOTH_NONE:
            # Every cell: polyline_length's sum, from the jump points (not a pass over the cells).
            length = straight + diagonals * diagonal_step(diagonal)
        else:
            count = finish_in_place(out, count, smooth, corners, passable, cost_index, cost_table, uniform, heights,
                                    use_heights, max_climb, diagonal)
            length = polyline_length(out[:count], diagonal)
        return reached, flags, count, end_cost if end != start_node else 0.0, length, expanded, sx, sy, gx, gy

    solve.__name__ = solve.__qualname__ = name
    return njit(cache=True, nogil=True, **NO_REFCOUNT)(solve)


solve = _solver(SOLVE_ANY, "solve")
solve_astar_uniform = _solver(SOLVE_ASTAR_UNIFORM, "solve_astar_uniform")
solve_astar_weighted = _solver(SOLVE_ASTAR_WEIGHTED, "solve_astar_weighted")
solve_astar_any = _solver(SOLVE_ASTAR_ANY, "solve_astar_any")
solve_jps = _solver(SOLVE_JPS, "solve_jps")
solve_plus = _solver(SOLVE_PLUS, "solve_plus")
solve_hex = _solver(SOLVE_HEX, "solve_hex")
#: The copies :func:`solver` hands to Python callers, by name.
COPIES = ("solve_astar_uniform", "solve_astar_weighted", "solve_astar_any", "solve_jps", "solve_plus", "solve_hex")


def solver(mode: int, jump_table, cells):
    """The copy of :func:`solve` that answers a call with this ``mode`` and
    ``jump_table`` on ``cells``, with the same answer: a first path compiles its own
    search only. A* picks its loop as :func:`pathserver.core.astar.astar` does; JPS+ runs
    where the table is built. Online JPS takes no avoided cells (the callers search round
    them with A* or JPS+): ``solve`` answers such a call all the same. Hex JPS runs on a
    hex map given its table (never with avoided cells: the callers pass none then)."""
    if (mode >> MODE_DIAGONAL) & DIAGONAL_MASK >= DIAGONAL_HEX and jump_table.shape[0] > 0 \
            and not (mode >> MODE_AVOIDING) & 1:
        return solve_hex
    if (mode >> MODE_ALGORITHM) & 1 == ALGORITHM_JPS:
        if jump_table.shape[0] == cells.shape[0] * cells.shape[1]:
            return solve_plus
        return solve if (mode >> MODE_AVOIDING) & 1 else solve_jps
    if (mode >> MODE_AVOIDING) & (mode >> MODE_RELAXED) & 1:
        return solve
    if (mode >> MODE_USE_HEIGHTS) & 1 or (mode >> MODE_DIAGONAL) & DIAGONAL_MASK != DIAGONAL_NO_CORNER_CUTTING \
            or (mode >> MODE_HEURISTIC) & HEURISTIC_MASK != HEURISTIC_OCTILE:
        return solve_astar_any
    return solve_astar_uniform if (mode >> MODE_UNIFORM) & 1 else solve_astar_weighted
