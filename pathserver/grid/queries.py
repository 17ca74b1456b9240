"""The queries games make beyond one path: :func:`reachable` (movement range),
:func:`distance_field` (a Dijkstra map), :func:`next_steps` (steering many units on one
field) and :func:`check_block` (would placing this cut the way?).

Each is unit-size aware and exact, on find_path's graph: the per-unit-size layer's
passability (the whole footprint must fit), the map's terrain costs, the ``diagonal``
rule and ``max_climb``; ``traversal`` picks a unit class's view of the map and
``avoid`` / ``avoid_cost`` add blockers for one request (see
:func:`pathserver.grid.search.find_path`). Options are checked by the rules of
:mod:`pathserver.options`, once per call, then one kernel runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pathserver.core import status as st
from pathserver.core.components import nearest_with_label
from pathserver.core.cut import NOT_STANDING, cut_pieces
from pathserver.core.dijkstra import count_in_components, field, field_whole, leave_costs, reach, ring_size
from pathserver.core.goals import snap_goals
from pathserver.core.steer import LOOKAHEAD_CELL, LOOKAHEAD_LOS, UNKNOWN, next_steps as steer
from pathserver.errors import (
    GoalBlockedError,
    NonFiniteError,
    OutOfBoundsError,
    RequestError,
    StartBlockedError,
    TooLargeError,
)
from pathserver.grid import floor_points, linked
from pathserver.grid.avoid import Avoided, blocker_boxes
from pathserver.grid.gridmap import GridMap
from pathserver.grid.linked import Grids, grids_of
from pathserver.grid.prepared import (
    NO_BOXES,
    avoid_boxes,
    cell_of,
    cells_of,
    checked,
    prepared_call,
    traversal_rules,
    unit_boxes,
    workspace,
)
from pathserver.grid.values import python_value
from pathserver.options import ALGORITHM, AVOID, AVOID_COST, BUDGET, DIAGONAL, GOALS, LOOKAHEAD, MAX_AVOID, MAX_CLIMB
from pathserver.options import MAX_COST, MAX_GOALS, REGION, SNAP, UNIT_SIZE
from pathserver.options import Avoid, number_rows

_LOOKAHEADS = {"cell": LOOKAHEAD_CELL, "los": LOOKAHEAD_LOS}
#: Below this share of the map, a field's region is counted first so the search can stop
#: once the region is done; past it the count costs more than it saves.
_COUNT_REGION_SHARE = 0.25


def _grids(gridmap: GridMap, unit_size, snap, diagonal, max_climb, traversal) -> Grids:
    rules = traversal_rules(gridmap, traversal)
    # algorithm "astar": these queries never jump, so the layer needs no JPS bitmaps.
    call = prepared_call(gridmap, unit_size, rules,
                         {SNAP.name: snap, DIAGONAL.name: diagonal, MAX_CLIMB.name: max_climb, ALGORITHM.name: "astar"})
    return grids_of(call, rules)


def _avoided(grids: Grids, boxes, avoid_cost) -> Avoided:
    call = grids.call
    boxes, unit_w, unit_h = unit_boxes(call, boxes)
    return Avoided(call.cells, call.cost_index, call.cost_table, grids.uniform, unit_w, unit_h, boxes, avoid_cost)


def _required(option, value):
    value = checked(option, value)
    if value is None:
        raise RequestError(f"'{option.name}' is required", at=option.name)
    return value


def _sources(cells, comps, goals: np.ndarray, snap: bool, call) -> np.ndarray:
    """int64 node ids of the goals, each snapped to the nearest cell the unit can stand
    on (GoalBlockedError at ``goals[i]`` without ``snap``); goals with no cell left to go
    to are left out."""
    snapped = np.empty(goals.shape, dtype=np.int64)
    placed = snap_goals(cells, comps, goals, 1 if snap else 0, snapped, call.diagonal)
    if placed < len(goals):
        blocked = int(np.argmax(snapped[:, 0] < 0))
        if not snap:
            x, y = goals[blocked].tolist()
            raise GoalBlockedError(
                f"goals[{blocked}] ({x}, {y}) is blocked for a {call.size[0]}x{call.size[1]} unit",
                at=f"goals[{blocked}]")
        snapped = snapped[snapped[:, 0] >= 0]
    return snapped[:, 1] * cells.shape[1] + snapped[:, 0]


# -- reachable ------------------------------------------------------------------------


class Reach(NamedTuple):
    """What :func:`reachable` returns: ``cells`` int32 (n, 2) grid ``(x, y)``, cheapest
    first (the start, after snapping, first at cost 0), and ``costs`` float32 (n,), the
    cheapest cost from the start to each."""

    cells: np.ndarray
    costs: np.ndarray


def reachable(
    gridmap: GridMap,
    start,
    budget,
    unit_size=1,
    *,
    snap: bool = True,
    diagonal: str = "no_corner_cutting",
    max_climb: float | None = None,
    avoid=None,
    avoid_cost: float | None = None,
    traversal=None,
) -> Reach:
    """The movement range: every cell the unit can reach from ``start`` for at most
    ``budget`` (a number >= 0; costs within 1e-9 of it count), cheapest first.

    Options as :func:`pathserver.grid.search.find_path`: a start the unit cannot stand on
    snaps (else StartBlockedError); with ``avoid`` the start may lie on an avoided cell.
    Dijkstra from the start, stopped at the budget (:func:`pathserver.core.dijkstra.reach`).
    On a map with floors or links the links count (:mod:`pathserver.grid.linked`) and on
    one of several floors ``cells`` are ``(x, y, floor)``.

    >>> m = GridMap.from_ascii('''
    ... ...
    ... .#.
    ... ''')
    >>> cells, costs = reachable(m, (0, 0), 2)
    >>> cells.tolist(), costs.tolist()
    ([[0, 0], [1, 0], [0, 1], [2, 0]], [0.0, 1.0, 1.0, 2.0])
    """
    budget = _required(BUDGET, budget)
    grids = _grids(gridmap, unit_size, snap, diagonal, max_climb, traversal)
    if gridmap.linked:
        return Reach(*linked.reachable(gridmap, grids, start, budget, floor_points.avoid_boxes(gridmap, avoid),
                                       checked(AVOID_COST, avoid_cost)))
    boxes = avoid_boxes(gridmap, avoid)
    avoid_cost = checked(AVOID_COST, avoid_cost)
    call = grids.call
    sx, sy = cell_of(start, "start", gridmap)
    if call.cells[sy, sx] == 0:
        if not call.snap:
            raise StartBlockedError(f"start ({sx}, {sy}) is blocked for a {call.size[0]}x{call.size[1]} unit",
                                    at="start")
        found, sx, sy = nearest_with_label(call.cells, call.comps, sx, sy, 0, max(gridmap.width, gridmap.height), grids.diagonal)
        if found != 0:
            raise StartBlockedError("no cell of this map can hold a unit of this size", at=UNIT_SIZE.name)
    ws = workspace(call.n)
    avoided = _avoided(grids, boxes, avoid_cost)
    with avoided as (cells, cost_index, cost_table, uniform):
        avoided.release(sx, sy)
        count = reach(cells, cost_index, cost_table, uniform, call.heights, grids.use_heights, call.climb,
                      grids.diagonal, sx, sy, budget, ws.work_float, ws.work_int)
        nodes = ws.work_int[0, :count].copy()
        costs = ws.work_float[0][nodes].astype(np.float32)
    width = gridmap.width
    out = np.empty((count, 2), dtype=np.int32)
    np.remainder(nodes, width, out=out[:, 0])
    np.floor_divide(nodes, width, out=out[:, 1])
    return Reach(out, costs)


# -- distance fields ------------------------------------------------------------------


def _region(gridmap: GridMap, region) -> np.ndarray:
    window = checked(REGION, region)
    if window is None:
        return np.array([0, 0, gridmap.width, gridmap.floor_height], dtype=np.int64)
    x, y, w, h = window
    # On a map with floors, a window of one floor (the same on every floor).
    if x < 0 or y < 0 or x + w > gridmap.width or y + h > gridmap.floor_height:
        raise OutOfBoundsError(f"region {list(window)} is not inside the map ({gridmap.width}x"
                               f"{gridmap.floor_height})", at=REGION.name)
    return np.array([x, y, x + w, y + h], dtype=np.int64)


_NO_STEPS = np.zeros(1, dtype=np.int32)


def _compute_field(gridmap, grids: Grids, goals, boxes, avoid_cost, max_cost, region, out,
                   steps=_NO_STEPS) -> None:
    """Run the field kernel (and the avoided anchors' values) into ``out`` (float64 of the
    region's shape, filled with inf); ``steps`` (int32 (H * W,), UNKNOWN) receives the
    cells' best steps where the whole-map kernel runs."""
    call = grids.call
    ws = workspace(call.n)
    limit = math.inf if max_cost is None else max_cost
    avoided = _avoided(grids, boxes, avoid_cost)
    with avoided as (cells, cost_index, cost_table, uniform):
        sources = _sources(cells, call.comps, goals, call.snap, call)
        targets = -1
        area = int((region[2] - region[0]) * (region[3] - region[1]))
        # Components say how many cells of the region can reach a goal, unless cells are
        # cut off in ways they do not see (solid avoided cells, climbs).
        if not avoided.blocking and not grids.use_heights and area < _COUNT_REGION_SHARE * call.n:
            targets = int(count_in_components(cells, call.comps, sources, region))
        ring = ring_size(cost_table, uniform)
        whole = (ring > 0 and max_cost is None and region[0] == 0 and region[1] == 0
                 and region[2] == gridmap.width and region[3] == gridmap.height)
        if whole:
            closed = np.zeros(call.n, dtype=np.uint8)
            whole = field_whole(cells, cost_index, cost_table, uniform, call.heights, grids.use_heights, call.climb,
                                grids.diagonal, sources, ring, out, closed, steps, int(steps is not _NO_STEPS)) >= 0
            if not whole:  # a bucket overflowed: start again the general way
                out.fill(np.inf)
                if steps is not _NO_STEPS:
                    steps.fill(UNKNOWN)
        if not whole:
            field(cells, cost_index, cost_table, uniform, call.heights, grids.use_heights, call.climb, grids.diagonal,
                  sources, limit, region, targets, out, ws.work_float, ws.work_int)
        if avoided.blocking:
            if whole:
                values, marks, settled = out.ravel(), closed, 1
            else:
                values, marks, settled = ws.work_float[0], ws.work_int[3], ws.work_int[3, -1] + 1
            leave_costs(cells, call.cells, cost_index, cost_table, uniform, call.heights, grids.use_heights,
                        call.climb, grids.diagonal, avoided.boxes, avoided.unit_w, avoided.unit_h, limit, region,
                        out, values, marks, settled)
            # A goal on avoided cells snapped off them, but a unit standing on it is there.
            gx, gy = goals[:, 0], goals[:, 1]
            there = (call.cells[gy, gx] != 0) & (cells[gy, gx] == 0)
            there &= (gx >= region[0]) & (gx < region[2]) & (gy >= region[1]) & (gy < region[3])
            out[gy[there] - region[1], gx[there] - region[0]] = 0.0


def distance_field(
    gridmap: GridMap,
    goals,
    unit_size=1,
    *,
    max_cost: float | None = None,
    region=None,
    snap: bool = True,
    diagonal: str = "no_corner_cutting",
    max_climb: float | None = None,
    avoid=None,
    avoid_cost: float | None = None,
    traversal=None,
) -> np.ndarray:
    """The Dijkstra map: float32 (h, w), indexed ``[y, x]``, each cell's cost to the
    nearest of ``goals`` (up to 4096 ``(x, y)``), exactly as find_path would price the
    cheapest path from it; ``+inf`` where the unit cannot stand or reach a goal, or the
    cost passes ``max_cost``.

    region: ``(x, y, w, h)`` inside the map, the window returned (the whole map by
    default); its values stay exact, paths may leave it. max_cost bounds the work. Goals
    snap as find_path's ``goal`` (GoalBlockedError at ``goals[i]`` without ``snap``).
    With ``avoid`` a cell whose footprint overlaps an avoided cell holds the cost of
    leaving it (a unit there may leave; none may enter). Other options as find_path.

    One backward Dijkstra from all the goals at once, with a bucket queue
    (:func:`pathserver.core.dijkstra.field`). On a map with floors or links, over the
    links too (a link a -> b gives a the value of b plus its cost), goals and avoided
    cells may carry a floor, and on a map of several floors the result is float32
    (floors, h, w), the region on each floor, floor 0 first.

    >>> m = GridMap.from_ascii('''
    ... ...
    ... .#.
    ... ''')
    >>> distance_field(m, [(2, 1)]).tolist()
    [[3.0, 2.0, 1.0], [4.0, inf, 0.0]]
    """
    if gridmap.linked:
        return _field_linked(gridmap, goals, unit_size, max_cost, region, snap, diagonal, max_climb, avoid,
                             avoid_cost, traversal)
    goals = _required(GOALS, goals)
    max_cost = checked(MAX_COST, max_cost)
    grids = _grids(gridmap, unit_size, snap, diagonal, max_climb, traversal)
    boxes = avoid_boxes(gridmap, avoid)
    avoid_cost = checked(AVOID_COST, avoid_cost)
    window = _region(gridmap, region)
    goal_cells = cells_of(goals, GOALS.name, gridmap)
    out = np.full((int(window[3] - window[1]), int(window[2] - window[0])), np.inf)
    _compute_field(gridmap, grids, goal_cells, boxes, avoid_cost, max_cost, window, out)
    return out.astype(np.float32)


def _field_linked(gridmap, goals, unit_size, max_cost, region, snap, diagonal, max_climb, avoid, avoid_cost,
                  traversal) -> np.ndarray:
    """distance_field on a map with floors or links: float32 (floors, h, w) of the region
    on each floor, floor 0 first ((h, w) on a map of one floor)."""
    if goals is None:
        raise RequestError(f"'{GOALS.name}' is required", at=GOALS.name)
    max_cost = checked(MAX_COST, max_cost)
    grids = _grids(gridmap, unit_size, snap, diagonal, max_climb, traversal)
    boxes = floor_points.avoid_boxes(gridmap, avoid)
    avoid_cost = checked(AVOID_COST, avoid_cost)
    window = _region(gridmap, region)
    grid, _, _ = linked.field(gridmap, grids, goals, boxes, avoid_cost, max_cost)
    return linked.field_window(gridmap, grid, window)


# -- steering -------------------------------------------------------------------------


@dataclass(eq=False)
class SteeringField:
    """A distance field kept for :func:`next_steps` (in the map's cache), with the grids
    it was computed on (the layer's own, or private copies when the request avoided cells)
    and the per-cell answers of :mod:`pathserver.core.steer` worked out so far."""

    layer_key: tuple
    field: np.ndarray
    cells: np.ndarray
    cost_index: np.ndarray
    cost_table: np.ndarray
    uniform: int
    following: np.ndarray
    sights: np.ndarray | None = None
    #: On a map with links: int64 (H * W,), the link's target where a cell's cheapest way
    #: is a link, -1 elsewhere (see pathserver.grid.linked.steering).
    jumps: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        own = self.field.nbytes + self.following.nbytes + (self.sights.nbytes if self.sights is not None else 0)
        own += self.jumps.nbytes if self.jumps is not None else 0
        return own + sum(a.nbytes for a in (self.cells, self.cost_index) if a.flags.owndata)

    def sighted(self) -> np.ndarray:
        if self.sights is None:
            self.sights = np.full(self.field.size, UNKNOWN, dtype=np.int32)
        return self.sights


_NO_SIGHTS = np.full(1, UNKNOWN, dtype=np.int32)


def _positions(gridmap: GridMap, positions) -> np.ndarray:
    """int64 (n, 2): the cell of each unit position (grid units, floored)."""
    try:
        xy = np.asarray(positions, dtype=np.float64)
    except (TypeError, ValueError):
        raise RequestError("positions must be an (n, 2) array of numbers", at="positions") from None
    if xy.ndim != 2 or xy.shape[1] != 2:
        if xy.size == 0:
            return np.zeros((0, 2), dtype=np.int64)
        raise RequestError(f"positions must be an (n, 2) array of numbers, got shape {xy.shape}", at="positions")
    finite = np.isfinite(xy).all(axis=1)
    if not finite.all():
        i = int(np.argmin(finite))
        raise NonFiniteError(f"positions[{i}] must be finite, got {xy[i].tolist()}", at=f"positions[{i}]")
    return cells_of(xy, "positions", gridmap)


def next_steps(
    gridmap: GridMap,
    goals,
    unit_size,
    positions,
    *,
    lookahead: str = "cell",
    max_cost: float | None = None,
    snap: bool = True,
    diagonal: str = "no_corner_cutting",
    max_climb: float | None = None,
    avoid=None,
    avoid_cost: float | None = None,
    traversal=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Steer many units of one size to the nearest of ``goals``: for each position
    (``positions``: (n, 2) grid ``(x, y)``, floats allowed), where to head and what is left.

    Returns ``(steps, remaining)``: steps float64 (n, 2), the grid cell ``(x, y)`` to head
    for (whole numbers; a cell's centre is ``(x + 0.5, y + 0.5)``), and remaining float32
    (n,), the cost from the unit's cell to the nearest goal, ``+inf`` where it cannot
    reach one (or past ``max_cost``). A unit on a goal, or unable to reach one, gets its
    own cell. lookahead: ``"cell"`` the neighbouring cell downhill (a step of an optimal
    path); ``"los"`` the farthest turn of that descent (up to 64 steps on) the unit sees
    clearly, crossing no dearer terrain than the descent (else the first step). Fields are
    cached with the map (the last 8); other options as :func:`distance_field`. With floors
    or links, positions may be ``(x, y, floor)``, steps are (n, 3) on several floors, and a
    unit whose cheapest way is a link at its cell gets the link's other end.

    >>> m = GridMap.from_ascii('''
    ... .....
    ... .##..
    ... ''')
    >>> units = [(0, 1), (0.5, 0.2), (4, 1)]
    >>> steps, remaining = next_steps(m, [(4, 1)], 1, units)
    >>> steps.tolist(), [round(r, 3) for r in remaining.tolist()]
    ([[0.0, 0.0], [1.0, 0.0], [4.0, 1.0]], [5.414, 4.414, 0.0])
    >>> next_steps(m, [(4, 1)], 1, units, lookahead="los")[0].tolist()
    [[0.0, 0.0], [3.0, 0.0], [4.0, 1.0]]
    """
    goals = goals if gridmap.linked and goals is not None else _required(GOALS, goals)
    lookahead_code = _LOOKAHEADS[checked(LOOKAHEAD, lookahead) or "cell"]
    max_cost = checked(MAX_COST, max_cost)
    grids = _grids(gridmap, unit_size, snap, diagonal, max_climb, traversal)
    call = grids.call
    if gridmap.linked:
        boxes = floor_points.avoid_boxes(gridmap, avoid)
        avoid_cost = checked(AVOID_COST, avoid_cost)
        units = linked.unit_cells(gridmap, positions)
        key = ("steer", call.layer_key, call.mode, call.climb,
               floor_points.stacked_cells(gridmap, goals, GOALS.name, minimum=1).tobytes(), boxes.tobytes(), avoid_cost,
               max_cost)
        entry = gridmap.layers.field(key)
        if entry is None:
            entry = _steering_field_linked(gridmap, grids, goals, boxes, avoid_cost, max_cost)
            gridmap.layers.keep_field(key, entry)
        return linked.steps(gridmap, grids, entry, units, lookahead_code,
                            entry.sighted() if lookahead_code == LOOKAHEAD_LOS else _NO_SIGHTS)
    avoid_checked = checked(AVOID, avoid)
    avoid_cost = checked(AVOID_COST, avoid_cost)
    units = _positions(gridmap, positions)
    key = ("steer", call.layer_key, call.mode, call.climb, tuple(map(tuple, goals)),
           None if avoid_checked is None else avoid_checked.key(), avoid_cost,
           max_cost)
    entry = gridmap.layers.field(key)
    if entry is None:
        entry = _steering_field(gridmap, grids, goals, avoid_checked, avoid_cost, max_cost)
        gridmap.layers.keep_field(key, entry)
    steps = np.empty((units.shape[0], 2), dtype=np.float64)
    remaining = np.empty(units.shape[0], dtype=np.float32)
    sights = entry.sighted() if lookahead_code == LOOKAHEAD_LOS else _NO_SIGHTS
    steer(entry.cells, entry.cost_index, entry.cost_table, entry.uniform, call.heights, grids.use_heights, call.climb,
          grids.diagonal, entry.field, units, lookahead_code, entry.following, sights, steps, remaining)
    return steps, remaining


def _steering_field(gridmap, grids: Grids, goals, avoid_checked, avoid_cost, max_cost) -> SteeringField:
    call = grids.call
    boxes = NO_BOXES if avoid_checked is None else blocker_boxes(gridmap, avoid_checked)
    goal_cells = cells_of(goals, GOALS.name, gridmap)
    out = np.full((gridmap.height, gridmap.width), np.inf)
    # Each cell's step, where the field's search records it (the rest worked out on use).
    following = np.full(out.size, UNKNOWN, dtype=np.int32)
    _compute_field(gridmap, grids, goal_cells, boxes, avoid_cost, max_cost,
                   np.array([0, 0, gridmap.width, gridmap.height], dtype=np.int64), out, following)
    out.setflags(write=False)
    # Steering needs the grids the field saw: with avoided cells, copies of them.
    with _avoided(grids, boxes, avoid_cost) as (cells, cost_index, cost_table, uniform):
        if cells is not call.cells:
            cells = _frozen_copy(cells)
        if cost_index is not call.cost_index:
            cost_index = _frozen_copy(cost_index)
    return SteeringField(call.layer_key, out, cells, cost_index, cost_table, int(uniform), following)


def _steering_field_linked(gridmap, grids: Grids, goals, boxes, avoid_cost, max_cost) -> SteeringField:
    call = grids.call
    grid, sources, links = linked.field(gridmap, grids, goals, boxes, avoid_cost, max_cost)
    grid.setflags(write=False)
    with linked.Request(gridmap, grids, boxes, avoid_cost) as request:
        cells, cost_index, cost_table, uniform = request.cells, request.cost_index, request.cost_table, request.uniform
        following, jumps = linked.steering(gridmap, grids, grid, sources, links, cells, cost_index, cost_table,
                                           uniform)
        if cells is not call.cells:
            cells = _frozen_copy(cells)
        if cost_index is not call.cost_index:
            cost_index = _frozen_copy(cost_index)
    return SteeringField(call.layer_key, grid, cells, cost_index, cost_table, int(uniform), following, jumps=jumps)


def _frozen_copy(array: np.ndarray) -> np.ndarray:
    copy = np.array(array)
    copy.setflags(write=False)
    return copy


# -- would placing this cut the way? ----------------------------------------------------


def check_block(
    gridmap: GridMap,
    rects=(),
    cells=(),
    unit_size=1,
    points=(),
    *,
    snap: bool = True,
    diagonal: str = "no_corner_cutting",
    traversal=None,
) -> list[tuple[int, int]]:
    """Would making ``rects`` ``(x, y, w, h)`` and ``cells`` ``(x, y)`` solid (what
    ``gridmap.edit(rects, cells, solid=True)`` would do; the map is not changed) cut any
    of ``points`` off from each other for a unit of ``unit_size``?

    Returns the pairs ``(i, j)``, ``i < j``, of points connected now and not after, in
    order: a point the placement would cover (the unit could no longer stand there) is cut
    off from every point it was connected to. Points the unit cannot stand on snap to the
    nearest cell it can (with ``snap=False`` they connect to nothing and appear in no
    pair). Connectivity is the components' (``diagonal="always"``: corners may be cut;
    climbs are not considered); ``traversal`` as find_path. On a map with floors or links,
    cells ``(x, y, floor)``, rectangles ``(x, y, w, h, floor)`` and points may carry a
    floor, and two points are joined when a way (links included, one-way ones their way)
    leads from either to the other. How it decides: :func:`pathserver.core.cut.cut_pieces`.

    >>> m = GridMap.from_ascii('''
    ... .....
    ... ##.##
    ... .....
    ... ''')
    >>> check_block(m, cells=[(2, 1)], points=[(0, 0), (4, 0), (0, 2)])
    [(0, 2), (1, 2)]
    """
    if gridmap.linked:
        grids = _grids(gridmap, unit_size, snap, diagonal, None, traversal)
        return linked.check_block(gridmap, grids, floor_points.cell_boxes(gridmap, cells, rects, "cells", "rects", "rects"),
                                  points)
    cells_rows = number_rows(python_value(cells), 2, "cells", "[x, y]")
    rect_rows = number_rows(python_value(rects), 4, "rects", "[x, y, w, h]")
    if len(cells_rows) + len(rect_rows) > MAX_AVOID:
        raise TooLargeError(f"{len(cells_rows) + len(rect_rows)} cells and rectangles; at most {MAX_AVOID}",
                            at="rects")
    for i, (_, _, w, h) in enumerate(rect_rows):
        if w <= 0 or h <= 0:
            raise RequestError(f"rectangle width and height must be > 0, got {w} x {h}", at=f"rects[{i}]")
    point_rows = number_rows(python_value(points), 2, "points", "[x, y]")
    if len(point_rows) > MAX_GOALS:
        raise TooLargeError(f"{len(point_rows)} points; at most {MAX_GOALS}", at="points")
    grids = _grids(gridmap, unit_size, snap, diagonal, None, traversal)
    call = grids.call
    if not point_rows:
        return []
    spots = cells_of(point_rows, "points", gridmap)
    if call.snap:
        snapped = np.empty(spots.shape, dtype=np.int64)
        snap_goals(call.cells, call.comps, spots, 1, snapped, call.diagonal)
        # No cell holds the unit at all: nothing is connected, nothing can be cut.
        spots = np.where(snapped >= 0, snapped, spots)
    boxes = blocker_boxes(gridmap, Avoid.of_rows(cells_rows, rect_rows))
    before = np.zeros(len(spots), dtype=np.int64)
    pieces = np.empty(len(spots), dtype=np.int64)
    unit_w, unit_h = call.size
    # How cells join: 4-connected, 8 with corners cut, or a hex map's six neighbours.
    eight = 1 if grids.diagonal == st.DIAGONAL_ALWAYS else grids.diagonal if grids.diagonal >= st.DIAGONAL_HEX else 0
    block, first, offsets, targets, node_cells = gridmap.pieces(gridmap.layer_for(unit_w, unit_h, grids.rules),
                                                                  eight)
    cut_pieces(call.cells, call.comps, block, first, offsets, targets, node_cells, eight, *unit_boxes(call, boxes),
               spots, before, pieces)
    pairs = []
    for component in np.unique(before[before > 0]):
        members = np.flatnonzero(before == component)
        if len(members) < 2:
            continue
        piece = pieces[members]
        i, j = np.triu_indices(len(members), k=1)
        cut = (piece[i] != piece[j]) | (piece[i] == NOT_STANDING) | (piece[j] == NOT_STANDING)
        pairs.extend(zip(members[i[cut]].tolist(), members[j[cut]].tolist()))
    pairs.sort()
    return pairs
