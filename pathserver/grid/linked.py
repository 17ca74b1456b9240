"""Every op on a map with floors or links (issue #35), on the stacked grid
(:func:`pathserver.grid.links.stack_floors`: floor f's rows at ``f * floor_rows``,
blocked rows between floors) with the links added by the kernels of
:mod:`pathserver.core.links`.

Points come as ``(x, y)`` (floor 0) or ``(x, y, floor)``, rectangles as ``(x, y, w, h)`` or
``(x, y, w, h, floor)``; on a map of several floors every point an answer gives is a
triple. A start or goal the unit cannot stand on snaps to the nearest cell it can on its
own floor. ``avoid`` blocks (or with ``avoid_cost`` prices) the unit's anchors over the
avoided cells, as on a map without links, and bars each link with an avoided end. The
quick "another component: no way" check uses the grid's components joined through the
links (both ways: a superset of what the unit can reach, so never a wrong refusal).

>>> from pathserver.grid.search import find_path
>>> from pathserver.grid.queries import distance_field
>>> m = GridMap(np.ones((2, 1, 3), bool), floors=2, links=[{"from": [2, 0], "to": [0, 0, 1], "cost": 5}])
>>> r = find_path(m, (0, 0), (2, 0, 1), smooth="none")
>>> r.path.tolist(), r.cost, r.links.tolist()
([[0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 0, 1], [1, 0, 1], [2, 0, 1]], 9.0, [[2, 0]])
>>> distance_field(m, [(2, 0, 1)]).tolist()
[[[9.0, 8.0, 7.0]], [[2.0, 1.0, 0.0]]]
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from pathserver.core import status as st
from pathserver.core.avoid import block_anchors
from pathserver.core.components import label_components
from pathserver.core.dijkstra import leave_costs
from pathserver.core.lines import finish, polyline_length
from pathserver.core.links import field_links, link_steps, reach_links, search_links, trace_links
from pathserver.core.steer import UNKNOWN, next_steps as steer
from pathserver.errors import GoalBlockedError, SearchLimitError, StartBlockedError
from pathserver.grid.avoid import Avoided
from pathserver.grid.gridmap import GridMap
from pathserver.grid.layers import global_labels
from pathserver.grid.link_jumps import jps_qualifies, jump_search
from pathserver.grid.floor_points import (
    answer_point, answer_points, floor_boxes, snap_cells, stacked_cell, stacked_cells,
)
from pathserver.grid.prepared import PathResult, unit_boxes, workspace
from pathserver.grid.values import python_value
from pathserver.options import GOALS, MAX_EXPANSIONS, UNIT_SIZE

class Grids(NamedTuple):
    """What the kernels read for one request: the prepared call (the unit's layer and the
    checked options), its option codes, and the traversal rules."""

    call: object
    diagonal: int
    uniform: int
    use_heights: int
    rules: tuple | None


def grids_of(call, rules: tuple | None) -> Grids:
    """The :class:`Grids` of a prepared call under traversal ``rules``."""
    mode = call.mode
    return Grids(call, call.diagonal, (mode >> st.MODE_UNIFORM) & 1, (mode >> st.MODE_USE_HEIGHTS) & 1, rules)


# -- the links as one request sees them ----------------------------------------------------


def _sources(first: np.ndarray, count: int) -> np.ndarray:
    """int64 (count,): the node each CSR position of ``first`` leaves from."""
    return np.searchsorted(first, np.arange(count), side="right") - 1


def keep_links(arrays: tuple, keep: np.ndarray) -> tuple:
    """``link_arrays``' tuple with only the links (CSR positions) where ``keep`` is True;
    ``entries`` kept as they are (the cheapest link of each source is still no dearer
    than any left: the estimate stays a consistent lower bound)."""
    first, to, cost, ids, entries = arrays
    removed = np.concatenate(([0], np.cumsum(~keep)))
    return first - removed[first], to[keep], cost[keep], ids[keep], entries


def reversed_links(arrays: tuple) -> tuple:
    """``(back_first, back_to, back_cost)``: the links entering each node, from their
    sources, in CSR form (:func:`pathserver.core.links.field_links`)."""
    first, to, cost = arrays[0], arrays[1], arrays[2]
    sources = _sources(first, len(to))
    order = np.argsort(to, kind="stable")
    back_first = np.zeros(len(first), dtype=np.int64)
    np.add.at(back_first, to + 1, 1)
    return np.cumsum(back_first), np.ascontiguousarray(sources[order]), np.ascontiguousarray(cost[order])


class Request:
    """One request's view of a linked map: the unit's grids with the avoided cells laid on
    (inside ``with``), and the links it may take (barred by traversal, or with an avoided
    end, left out). ``grids``: the request's :class:`Grids`."""

    def __init__(self, gridmap: GridMap, grids, boxes: np.ndarray, avoid_cost):
        self.gridmap = gridmap
        self.grids = grids
        call = grids.call
        laid, unit_w, unit_h = unit_boxes(call, boxes)
        self.avoided = Avoided(call.cells, call.cost_index, call.cost_table, grids.uniform, unit_w, unit_h, laid,
                               avoid_cost)
        self.links = gridmap.link_arrays(grids.rules)

    def __enter__(self):
        cells, cost_index, cost_table, uniform = self.avoided.__enter__()
        self.cells, self.cost_index, self.cost_table, self.uniform = cells, cost_index, cost_table, int(uniform)
        if len(self.avoided.boxes) and len(self.links[1]):
            first, to = self.links[0], self.links[1]
            ends = np.concatenate((_sources(first, len(to)), to))
            if self.avoided.blocking:
                avoided = (self.grids.call.cells.reshape(-1)[ends] != 0) & (cells.reshape(-1)[ends] == 0)
            else:
                # Priced anchors: those whose own cost is dearer keep it, so mark them all.
                marks = np.ones(cells.shape, dtype=np.uint8)
                block_anchors(marks, self.avoided.boxes, self.avoided.unit_w, self.avoided.unit_h)
                avoided = marks.reshape(-1)[ends] == 0
            self.links = keep_links(self.links, ~(avoided[:len(to)] | avoided[len(to):]))
        return self

    def __exit__(self, *exc):
        self.avoided.__exit__(*exc)


def joined_labels(gridmap: GridMap, call, rules) -> np.ndarray:
    """int32 (H, W): the unit's components (of ``call``'s cells) joined through the links
    it may take, both ways; 0 where it cannot stand. Kept per layer and rule."""
    def make():
        labels = global_labels(call.cells, call.comps)
        first, to = gridmap.link_arrays(rules)[:2]
        flat = labels.reshape(-1)
        parent = np.arange(int(labels.max(initial=0)) + 1)

        def root(a):
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for a, b in zip(flat[_sources(first, len(to))].tolist(), flat[to].tolist()):
            if a and b:
                ra, rb = root(a), root(b)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
        roots = np.array([root(a) for a in range(len(parent))], dtype=np.int32)
        joined = roots[labels]
        joined.setflags(write=False)
        return joined

    return gridmap.link_cached(("components", call.layer_key, call.diagonal == st.DIAGONAL_ALWAYS), make)


# -- find_path ---------------------------------------------------------------------------


def _trace_answer(gridmap: GridMap, request: Request, call, ws, start: int, end: int, smooth: int) -> tuple:
    """``(points, links, length)`` of the path the search left in ``ws`` from node
    ``start`` to ``end`` (see :func:`_answer`)."""
    first, _, _, ids, _ = request.links
    path, taken = trace_links(ws.work_int[0], first, ids, gridmap.width, start, end)
    return _answer(gridmap, request, call, path, taken, smooth)


def _answer(gridmap: GridMap, request: Request, call, path: np.ndarray, taken: np.ndarray, smooth: int) -> tuple:
    """``(points, links, length)`` of ``path`` (stacked cells, ``taken`` its links ``[i,
    link]``): smoothed stretch by stretch between links (their ends stay waypoints),
    points as answers give them."""
    mode = call.mode
    pieces, kept, length, begin = [], [], 0.0, 0
    for i, link in [*map(tuple, taken.tolist()), (len(path) - 1, -1)]:
        piece = finish(np.ascontiguousarray(path[begin:i + 1]), request.cells, request.cost_index, request.cost_table,
                       request.uniform, call.heights, (mode >> st.MODE_USE_HEIGHTS) & 1, call.climb, call.diagonal,
                       smooth)
        length += float(polyline_length(piece, call.diagonal))
        pieces.append(piece)
        if link >= 0:
            kept.append((sum(len(p) for p in pieces) - 1, link))
        begin = i + 1
    return (answer_points(gridmap, np.concatenate(pieces)), np.array(kept, dtype=np.int64).reshape(-1, 2),
            length)


def find_path(gridmap: GridMap, grids, start, goal, goals, boxes, avoid_cost, smooth, algorithm=None) -> PathResult:
    """find_path on a linked map (``grids``: the call's :class:`Grids`, its options
    checked; ``boxes``: avoided cells from :func:`avoid_boxes`; ``smooth``: the SMOOTH_*
    code). Many goals: the cheapest reachable wins (``goal_index``). One goal, nothing
    avoided, no partial answer: JPS+ where it qualifies (``algorithm``: the request's;
    :func:`pathserver.grid.link_jumps.jps_qualifies`), else A*."""
    call = grids.call
    mode = call.mode
    allow_partial = (mode >> st.MODE_ALLOW_PARTIAL) & 1
    if goals is None:
        targets = np.array([stacked_cell(gridmap, goal, "goal")], dtype=np.int64)
        goal_name = "goal"
    else:
        targets = stacked_cells(gridmap, goals, GOALS.name, minimum=1)
        goal_name = GOALS.name
    sx, sy, moved_start = start_cell(gridmap, grids, start)
    flags = st.FLAG_START_SNAPPED if moved_start else 0
    jumps = len(targets) == 1 and not allow_partial and not len(boxes) and avoid_cost is None \
        and jps_qualifies(call, algorithm)
    engine = "jps+" if jumps else "astar"
    ws = workspace(call.n)
    with Request(gridmap, grids, boxes, avoid_cost) as request:
        cells = request.cells
        if len(targets) == 1 and cells[targets[0, 1], targets[0, 0]]:
            snapped, placed = targets, _ONE_PLACED  # the common case, without the checks
        else:
            # Goals snap off cells the unit cannot stand on (avoided ones too) but the start's.
            at_start = (targets[:, 0] == sx) & (targets[:, 1] == sy)
            snapped = np.where(at_start[:, None], targets, snap_cells(gridmap, call, cells, targets, call.snap))
            placed = snapped[:, 0] >= 0
        if not call.snap and not placed.all():
            i = int(np.argmin(placed))
            name = goal_name if goals is None else f"goals[{i}]"
            raise GoalBlockedError(f"{name} {answer_point(gridmap, *targets[i])} is blocked for a "
                                   f"{call.size[0]}x{call.size[1]} unit", at=name)
        moved = placed & (snapped != targets).any(axis=1)
        request.avoided.release(sx, sy)
        nodes = snapped[:, 1] * gridmap.width + snapped[:, 0]
        wanted = placed
        if not allow_partial:
            labels = joined_labels(gridmap, call, grids.rules).reshape(-1)
            wanted = placed & (labels[np.where(placed, nodes, 0)] == labels[sy * gridmap.width + sx])
        if not wanted.any() and not allow_partial:
            status, end, best, expanded = st.SEARCH_NO_PATH, -1, -1, 0
            flags |= st.FLAG_OTHER_COMPONENT
        elif jumps:
            found, total, expanded, path, taken = jump_search(gridmap, call, grids.rules, sx, sy,
                                                              int(snapped[0, 0]), int(snapped[0, 1]), ws)
            if not found:
                return PathResult("no_path", np.empty((0, 3 if gridmap.floors > 1 else 2), dtype=np.int32), 0.0,
                                  0.0, expanded, answer_point(gridmap, sx, sy), _goal_point(gridmap, snapped, targets),
                                  flags, gridmap.generation, "jps+", None, np.empty((0, 2), dtype=np.int64))
            if moved[0]:
                flags |= st.FLAG_GOAL_SNAPPED
            points, links, length = _answer(gridmap, request, call, path, taken, smooth)
            return PathResult("found", points, total, length, expanded, answer_point(gridmap, sx, sy),
                              answer_point(gridmap, *snapped[0]), flags, gridmap.generation, "jps+", None, links)
        else:
            first, to, cost, _, entries = request.links
            status, end, best, expanded = search_links(
                cells, request.cost_index, request.cost_table, request.uniform, call.heights,
                (mode >> st.MODE_USE_HEIGHTS) & 1, call.climb, grids.diagonal,
                (mode >> st.MODE_HEURISTIC) & st.HEURISTIC_MASK, gridmap.floor_rows, sx, sy,
                nodes if len(nodes) == 1 else np.unique(nodes[wanted]), call.budget, allow_partial, first, to, cost,
                entries, ws.work_float, ws.work_int)
        if status == st.SEARCH_BUDGET:
            flags |= st.FLAG_BUDGET_HIT
        if status == st.SEARCH_BUDGET and not allow_partial:
            raise SearchLimitError(f"max_expansions={call.budget} reached before the goal; pass allow_partial=True "
                                   "for a partial path", at=MAX_EXPANSIONS.name)
        if status != st.SEARCH_FOUND and not allow_partial:
            return PathResult("no_path", np.empty((0, 3 if gridmap.floors > 1 else 2), dtype=np.int32), 0.0, 0.0,
                              int(expanded), answer_point(gridmap, sx, sy), _goal_point(gridmap, snapped, targets),
                              flags, gridmap.generation, engine, None, np.empty((0, 2), dtype=np.int64))
        if status == st.SEARCH_FOUND:
            chosen = int(np.flatnonzero(wanted & (nodes == end))[0])
            name = "found"
        else:
            end = best
            ey, ex = divmod(end, gridmap.width)
            near = np.where(placed, _nearness(gridmap, grids.diagonal, ex, ey, snapped), np.inf)
            chosen = int(np.argmin(near)) if placed.any() else None
            name = "partial"
        if chosen is not None and moved[chosen]:
            flags |= st.FLAG_GOAL_SNAPPED
        points, links, length = _trace_answer(gridmap, request, call, ws, sy * gridmap.width + sx, end, smooth)
        total = float(ws.work_float[0][end])
    goal_at = snapped[chosen] if chosen is not None else targets[0]
    return PathResult(name, points, total, length, int(expanded), answer_point(gridmap, sx, sy),
                      answer_point(gridmap, *goal_at), flags, gridmap.generation, "astar",
                      None if goals is None else chosen, links)


_ONE_PLACED = np.ones(1, dtype=bool)
_ONE_PLACED.setflags(write=False)


def _goal_point(gridmap: GridMap, snapped: np.ndarray, targets: np.ndarray) -> tuple:
    cell = snapped[0] if snapped[0, 0] >= 0 else targets[0]
    return answer_point(gridmap, int(cell[0]), int(cell[1]))


def _nearness(gridmap: GridMap, diagonal: int, x: int, y: int, cells: np.ndarray) -> np.ndarray:
    """How near (x, y) lies to each of ``cells`` (stacked), as the search's partial answer
    weighs it: squared distance on one floor, inf on another."""
    rows = gridmap.floor_rows
    dx, dy = cells[:, 0] - x, cells[:, 1] - y
    return np.where(cells[:, 1] // rows == y // rows, (dx * dx + dy * dy).astype(np.float64), np.inf)


# -- reachable ---------------------------------------------------------------------------


def start_cell(gridmap: GridMap, grids, start) -> tuple[int, int, bool]:
    """``(x, y, snapped)``: the start's stacked cell, snapped on its floor
    (StartBlockedError without snap), and whether it moved."""
    call = grids.call
    sx, sy = stacked_cell(gridmap, start, "start")
    if call.cells[sy, sx] == 0:
        if not call.snap:
            raise StartBlockedError(f"start {tuple(python_value(start))} is blocked for a {call.size[0]}x"
                                    f"{call.size[1]} unit", at="start")
        (sx, sy), = snap_cells(gridmap, call, call.cells, np.array([[sx, sy]]), True).tolist()
        if sx < 0:
            raise StartBlockedError("no cell of this floor can hold a unit of this size", at=UNIT_SIZE.name)
        return sx, sy, True
    return sx, sy, False


def reachable(gridmap: GridMap, grids, start, budget: float, boxes, avoid_cost) -> tuple[np.ndarray, np.ndarray]:
    """``(cells, costs)`` of reachable on a linked map: int32 (n, 2 or 3), float32 (n,)."""
    call = grids.call
    sx, sy, _ = start_cell(gridmap, grids, start)
    ws = workspace(call.n)
    with Request(gridmap, grids, boxes, avoid_cost) as request:
        request.avoided.release(sx, sy)
        first, to, cost, _, _ = request.links
        count = reach_links(request.cells, request.cost_index, request.cost_table, request.uniform, call.heights,
                            grids.use_heights, call.climb, grids.diagonal, sx, sy, budget, first, to, cost,
                            ws.work_float, ws.work_int)
        nodes = ws.work_int[0, :count].astype(np.int64)
        costs = ws.work_float[0][nodes].astype(np.float32)
    return answer_points(gridmap, np.column_stack((nodes % gridmap.width, nodes // gridmap.width))), costs


# -- distance fields and steering ------------------------------------------------------------


def region_rows(gridmap: GridMap, window: np.ndarray) -> np.ndarray:
    """int64 (F, 4): the region ``x0, y0, x1, y1`` (inside one floor) on every floor, as
    stacked boxes."""
    floors = np.arange(gridmap.floors)
    return floor_boxes(gridmap, np.tile(window, (gridmap.floors, 1)), floors)


def field(gridmap: GridMap, grids, goals, boxes, avoid_cost, max_cost) -> tuple:
    """The distance field of a linked map over the whole stacked grid: ``(out, sources,
    request links)``, out float64 (H, W) (inf where no goal is reached), sources the
    goals' snapped nodes (sorted)."""
    call = grids.call
    targets = stacked_cells(gridmap, goals, GOALS.name, minimum=1)
    ws = workspace(call.n)
    limit = math.inf if max_cost is None else max_cost
    out = np.full(call.n, np.inf)
    with Request(gridmap, grids, boxes, avoid_cost) as request:
        cells = request.cells
        snapped = snap_cells(gridmap, call, cells, targets, call.snap)
        placed = snapped[:, 0] >= 0
        if not call.snap and not placed.all():
            i = int(np.argmin(placed))
            raise GoalBlockedError(f"goals[{i}] {answer_point(gridmap, *targets[i])} is blocked for a "
                                   f"{call.size[0]}x{call.size[1]} unit", at=f"goals[{i}]")
        sources = np.unique(snapped[placed, 1] * gridmap.width + snapped[placed, 0])
        back_first, back_to, back_cost = reversed_links(request.links)
        field_links(cells, request.cost_index, request.cost_table, request.uniform, call.heights, grids.use_heights,
                    call.climb, grids.diagonal, sources, limit, back_first, back_to, back_cost, out, ws.work_float,
                    ws.work_int)
        grid = out.reshape(call.cells.shape)
        avoided = request.avoided
        if avoided.blocking:
            whole = np.array([0, 0, gridmap.width, gridmap.height], dtype=np.int64)
            leave_costs(cells, call.cells, request.cost_index, request.cost_table, request.uniform, call.heights,
                        grids.use_heights, call.climb, grids.diagonal, avoided.boxes, avoided.unit_w,
                        avoided.unit_h, limit, whole, grid, ws.work_float[0], ws.work_int[3], ws.work_int[3, -1] + 1)
            # A goal on avoided cells snapped off them, but a unit standing on it is there.
            gx, gy = targets[:, 0], targets[:, 1]
            there = (call.cells[gy, gx] != 0) & (cells[gy, gx] == 0)
            grid[gy[there], gx[there]] = 0.0
            sources = np.unique(np.concatenate((sources, gy[there] * gridmap.width + gx[there])))
        links = request.links
    return grid, sources, links


def field_window(gridmap: GridMap, grid: np.ndarray, window: np.ndarray) -> np.ndarray:
    """float32 of the region ``window`` (x0, y0, x1, y1) of a stacked field: (h, w) on a
    map of one floor, (floors, h, w) on one of several, floor 0 first."""
    x0, y0, x1, y1 = window.tolist()
    layers = [grid[y0 + y:y1 + y, x0:x1] for y in range(0, gridmap.height, gridmap.floor_rows)]
    out = np.stack(layers).astype(np.float32)
    return out[0] if gridmap.floors == 1 else out


def steering(gridmap: GridMap, grids, field_grid, sources, links, cells, cost_index, cost_table, uniform):
    """``(following, jumps)`` for :func:`steer`: NOWHERE at each link source whose cheapest
    way is a link, and that link's target in ``jumps`` (int64 (N,), -1 elsewhere)."""
    call = grids.call
    following = np.full(call.n, UNKNOWN, dtype=np.int32)
    jumps = np.full(call.n, -1, dtype=np.int64)
    first, to, cost = links[0], links[1], links[2]
    if len(to):
        link_sources = np.unique(_sources(first, len(to)))
        link_steps(cells, cost_index, cost_table, uniform, call.heights, grids.use_heights, call.climb,
                   grids.diagonal, field_grid, sources, first, to, cost, link_sources, following, jumps)
    return following, jumps


def unit_cells(gridmap: GridMap, positions) -> np.ndarray:
    """int64 (n, 2): the stacked cell of each unit position (``(n, 2)`` or ``(n, 3)``)."""
    return stacked_cells(gridmap, positions, "positions", maximum=1 << 62)


def steps(gridmap: GridMap, grids, entry, units: np.ndarray, lookahead: int, sights) -> tuple:
    """``(steps, remaining)`` of next_steps on a linked map, ``entry`` the kept field (its
    ``jumps`` the link steps)."""
    call = grids.call
    out = np.empty((units.shape[0], 2), dtype=np.float64)
    remaining = np.empty(units.shape[0], dtype=np.float32)
    steer(entry.cells, entry.cost_index, entry.cost_table, entry.uniform, call.heights, grids.use_heights, call.climb,
          grids.diagonal, entry.field, units, lookahead, entry.following, sights, out, remaining)
    jump = entry.jumps[units[:, 1] * gridmap.width + units[:, 0]]
    taken = jump >= 0
    out[taken, 0] = jump[taken] % gridmap.width
    out[taken, 1] = jump[taken] // gridmap.width
    if gridmap.floors > 1:
        x, y, floor = gridmap.unstacked(out[:, 0].astype(np.int64), out[:, 1].astype(np.int64))
        out = np.column_stack((x, y, floor)).astype(np.float64)
    return out, remaining


# -- check_block -------------------------------------------------------------------------


def check_block(gridmap: GridMap, grids, boxes: np.ndarray, points) -> list[tuple[int, int]]:
    """check_block on a linked map: the pairs of points joined (a path from either to the
    other, links included) before the placement and not after."""
    call = grids.call
    spots = stacked_cells(gridmap, points, "points")
    if not len(spots):
        return []
    if call.snap:
        snapped = snap_cells(gridmap, call, call.cells, spots, True)
        spots = np.where(snapped >= 0, snapped, spots)
    eight = 1 if grids.diagonal == st.DIAGONAL_ALWAYS else grids.diagonal if grids.diagonal >= st.DIAGONAL_HEX else 0
    before = (call.cells != 0).view(np.uint8)
    after = before.copy()
    laid, unit_w, unit_h = unit_boxes(call, boxes)
    block_anchors(after, laid, unit_w, unit_h)
    first, to = gridmap.link_arrays(grids.rules)[:2]
    sources = _sources(first, len(to))
    joined = []
    for passable in (before, after):
        labels = np.zeros(passable.shape, dtype=np.int32)
        label_components(passable, eight, labels)
        flat = labels.reshape(-1)
        edges: dict = {}
        for a, b in zip(flat[sources].tolist(), flat[to].tolist()):
            if a and b and a != b:
                edges.setdefault(a, set()).add(b)
        mine = flat[spots[:, 1] * gridmap.width + spots[:, 0]]
        unique, index = np.unique(mine, return_inverse=True)
        # reach[u, v]: the component unique[v] is reachable from unique[u] (0: none).
        reach = np.zeros((len(unique), len(unique)), dtype=bool)
        for u, label in enumerate(unique.tolist()):
            if not label:
                continue
            seen, stack = {label}, [label]
            while stack:
                for b in edges.get(stack.pop(), ()):
                    if b not in seen:
                        seen.add(b)
                        stack.append(b)
            reach[u] = np.isin(unique, list(seen))
        both = reach | reach.T
        joined.append(both[index][:, index])
    cut = np.triu(joined[0] & ~joined[1], k=1)
    return list(zip(*(axis.tolist() for axis in np.nonzero(cut))))
