"""The public search API: :func:`find_path` and :func:`find_paths`.

Validates once here, by the rules of :mod:`pathserver.options` (the wire's), then hands
plain arrays to one compiled kernel (:func:`pathserver.core.query.solve`, or for many
goals :func:`pathserver.core.goals.solve_goals`), which trusts what it is given.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from pathserver.core import status as st
from pathserver.core.bounds import ROW as BOUNDS_ROW
from pathserver.core.goals import snap_goals, solve_goals
from pathserver.core.jit import bound
from pathserver.core.query import answer_view, solver
from pathserver.errors import (
    GoalBlockedError,
    NonFiniteError,
    OutOfBoundsError,
    PathserverError,
    RequestError,
    SearchLimitError,
    StartBlockedError,
)
from pathserver.grid.avoid import Avoided, blocker_boxes, laid_rows
from pathserver.grid.gridmap import GridMap
from pathserver.grid.values import floor_cell, normalize_unit_size, number_array, python_value
from pathserver.options import BY_NAME, SEARCH_OPTIONS, plain_number_array

# The kernel's code for each choice of the enum options (tests/test_options.py checks
# that these name exactly the choices pathserver.options defines).
DIAGONALS = {"no_corner_cutting": st.DIAGONAL_NO_CORNER_CUTTING, "never": st.DIAGONAL_NEVER, "always": st.DIAGONAL_ALWAYS}
HEURISTICS = {
    "octile": st.HEURISTIC_OCTILE,
    "euclidean": st.HEURISTIC_EUCLIDEAN,
    "manhattan": st.HEURISTIC_MANHATTAN,
    "chebyshev": st.HEURISTIC_CHEBYSHEV,
}
SMOOTHING = {"none": st.SMOOTH_NONE, "corners": st.SMOOTH_CORNERS, "los": st.SMOOTH_LOS}
#: ``algorithm="auto"`` picks the online JPS only where open ground dominates: on random
#: clutter and 1-wide mazes every cell is a jump point and JPS only adds scanning
#: overhead. (Once a layer's JPS+ table is built, auto runs JPS+ on any of them.)
JPS_MIN_OPEN_SHARE = 0.5

_STATUS_NAMES = {st.QUERY_FOUND: "found", st.QUERY_PARTIAL: "partial", st.QUERY_NO_PATH: "no_path"}
# Read-only like the cached layers' arrays: numba compiles one specialisation per
# writeability, and a second compile of solve() costs seconds.
_NO_HEIGHTS = np.zeros((1, 1), dtype=np.float32)
_NO_HEIGHTS.setflags(write=False)
_NO_JUMP_BITS = np.zeros(0, dtype=np.uint64)
_NO_JUMP_BITS.setflags(write=False)
_NO_JUMP_TABLE = np.zeros((0, 8), dtype=np.int8)
_NO_JUMP_TABLE.setflags(write=False)
_NO_LANDMARKS = np.zeros((1, 0), dtype=np.float32)
_NO_LANDMARKS.setflags(write=False)
_NO_BOUND_ROWS = np.zeros(0, dtype=np.int32)
_NO_BOUND_ROWS.setflags(write=False)
_NO_BOUNDS = np.zeros((0, BOUNDS_ROW), dtype=np.int16)
_NO_BOUNDS.setflags(write=False)
#: No overlay: JPS+ reads its table alone (see pathserver.core.relay).
_NO_OVERLAY = np.zeros(0, dtype=np.uint64)
_NO_OVERLAY.setflags(write=False)


@dataclass(slots=True)
class PathResult:
    """The answer to one path query.

    status: ``"found"``, ``"partial"`` (the path ends at the reachable cell nearest the
        goal) or ``"no_path"``.
    path: int32 (n, 2) grid ``(x, y)`` waypoints, start and end included; every cell for
        ``smooth="none"``, fewer for ``"corners"`` and ``"los"``; empty for no_path.
    cost: the cost of the underlying cell path (straight step 1, diagonal sqrt(2), times
        the terrain cost of each cell entered); for ``smooth="none"`` exactly the cost of
        ``path``. length: the Euclidean length of ``path`` in cells.
    expanded: nodes the search expanded (0 when the straight line was taken).
    start, goal: the endpoints after snapping; start_snapped / goal_snapped say whether
        snapping moved them. line_of_sight: the straight line was clear, no search ran.
        (All three read ``flags``, the kernel's FLAG_* bits.)
    generation: the map generation the answer was computed on. algorithm: the engine
        chosen, ``"astar"``, ``"jps"`` or ``"jps+"``; with line_of_sight set none ran.
    goal_index: with ``goals``, the index of the goal the path leads to (the cheapest
        reachable; with a partial path the one it approaches), None when there is none;
        None for a single ``goal``.
    """

    status: str
    path: np.ndarray
    cost: float
    length: float
    expanded: int
    start: tuple[int, int]
    goal: tuple[int, int]
    flags: int = 0
    generation: int = 0
    algorithm: str = "astar"
    goal_index: int | None = None

    @property
    def found(self) -> bool:
        return self.status == "found"

    @property
    def start_snapped(self) -> bool:
        return bool(self.flags & st.FLAG_START_SNAPPED)

    @property
    def goal_snapped(self) -> bool:
        return bool(self.flags & st.FLAG_GOAL_SNAPPED)

    @property
    def line_of_sight(self) -> bool:
        return bool(self.flags & st.FLAG_LINE_OF_SIGHT)


class _Workspace:
    """Search arrays for one thread, reused across queries (see :func:`solve`)."""

    __slots__ = ("n", "work_float", "work_int", "answer")

    def __init__(self, n: int):
        self.n = n
        # Five rows: the last two are JPS+'s node records (pathserver.core.jpsplus), whose
        # stamps start at zero like work_int's; one more column than cells for its
        # bookkeeping.
        self.work_float = np.zeros((5, n + 1), dtype=np.float64)
        self.work_int = np.zeros((4, n + 1), dtype=np.int32)
        # Where solve() leaves its points. Copied out with copy("K"): the same C-ordered
        # copy of a C-ordered slice, a third faster than copy()'s default order.
        self.answer = answer_view(self.work_int)


_local = threading.local()


def _new_workspace(n: int) -> _Workspace:
    # One workspace per thread, for the largest map it has searched: a smaller map uses
    # a prefix of the same arrays.
    ws = _Workspace(n)
    _local.workspace = ws
    return ws


def workspace(n: int) -> _Workspace:
    """This thread's search arrays, for a map of ``n`` cells or more."""
    try:
        ws = _local.workspace
        if ws.n < n:
            ws = _new_workspace(n)
    except AttributeError:  # this thread's first search
        ws = _new_workspace(n)
    return ws


def _plain_arrays(option, value):
    """``value`` when it is an array option's value given as numpy arrays that pass as
    they are (points, or avoided cells and rectangles), else None: checked without walking
    them number by number. Anything else, refusals included, goes the general way."""
    if option.kind == "points":
        if plain_number_array(value, 2) and option.min <= len(value) <= option.max:
            return value
    elif option.kind == "cells" and type(value) is dict and value.keys() <= {"cells", "rects"}:
        cells = value.get("cells")
        rects = value.get("rects")
        if ((cells is None or plain_number_array(cells, 2)) and (rects is None or plain_number_array(rects, 4))
                and (cells is not None or rects is not None)):
            cells = () if cells is None else cells
            rects = () if rects is None else rects
            if len(cells) + len(rects) <= option.max and (not len(rects) or bool((rects[:, 2:] > 0).all())):
                return cells, rects
    return None


def checked(option, value):
    """``option.check(value)`` with numpy values counting as the Python values they hold:
    arrays of points or of avoided cells pass as they are when plainly valid, another
    array is converted first, anything else only when the plain check refuses it (the
    conversion walks the value, which for 100 goals costs more than searching them)."""
    if isinstance(value, (np.ndarray, dict)):
        plain = _plain_arrays(option, value)
        if plain is not None:
            return plain
    if isinstance(value, np.ndarray):
        return option.check(value.tolist())
    try:
        return option.check(value)
    except RequestError:
        plain = python_value(value)
        if plain is value:
            raise
        return option.check(plain)


def cells_of(points, name: str, gridmap: GridMap) -> np.ndarray:
    """int64 (K, 2): the cell of each of ``points`` (checked by :mod:`pathserver.options`:
    finite numbers), floored; OutOfBoundsError at ``name[i]`` for the first off the map."""
    xy = np.floor(number_array(points, 2))
    outside = (xy[:, 0] < 0) | (xy[:, 0] >= gridmap.width) | (xy[:, 1] < 0) | (xy[:, 1] >= gridmap.height)
    if outside.any():
        i = int(np.argmax(outside))
        raise OutOfBoundsError(
            f"{name}[{i}] ({xy[i, 0]:.0f}, {xy[i, 1]:.0f}) is outside the map ({gridmap.width}x{gridmap.height})",
            at=f"{name}[{i}]",
        )
    return xy.astype(np.int64, copy=False)


def cell_of(point, name: str, gridmap: GridMap) -> tuple[int, int]:
    """The cell of a start or goal that the inline check in find_path did not take."""
    try:
        px, py = point
    except (TypeError, ValueError):
        raise RequestError(f"{name} must be a pair (x, y)", at=name) from None
    px, py = python_value(px), python_value(py)
    for i, v in enumerate((px, py)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise RequestError(f"{name} coordinates must be numbers", at=f"{name}[{i}]")
        if isinstance(v, float) and not math.isfinite(v):
            raise NonFiniteError(f"{name} coordinates must be finite, got {v}", at=f"{name}[{i}]")
    x, y = floor_cell(px, py, name)
    if not (0 <= x < gridmap.width and 0 <= y < gridmap.height):
        raise OutOfBoundsError(
            f"{name} ({x}, {y}) is outside the map ({gridmap.width}x{gridmap.height})", at=name
        )
    return x, y


class PreparedCall:
    """What :func:`find_path` hands the kernel for one map, unit size and option set:
    everything but the endpoints, checked and worked out once and kept in the map's
    :class:`~pathserver.grid.cache.LayerCache` under the call's raw options.

    size: ``(unit_w, unit_h)``; layer_key: the key of the layer it holds in the map's
    cache (the size, and the traversal rules if any). width, height: the map's; n: their
    product, the workspace length. cells, comps, jump_bits, jump_table, cost_index,
    cost_table, heights, climb: the kernel's arrays and climb limit (jump_table: the
    layer's JPS+ table when ``algorithm="auto"`` runs JPS and it is built, else empty). mode: the packed option bits
    (``status.pack_mode``). weight: float >= 1. budget: max_expansions, 0 for no limit.
    algorithm: ``"astar"``, ``"jps"`` or ``"jps+"``, what runs. generation: the map's. snap: the
    checked ``snap``, for the error of a blocked start.

    Read the fields by name (``call.budget``). ``fields`` holds them all as one plain
    tuple in the order of :attr:`FIELDS`, which find_path unpacks: Python unpacks an exact
    tuple in one step, but a NamedTuple or a slotted class field by field, which costs
    0.1 µs more a call (a thirtieth of a short find_path).
    """

    FIELDS = ("size", "layer_key", "width", "height", "n", "cells", "comps", "jump_bits", "jump_table", "cost_index",
              "cost_table", "heights", "climb", "mode", "weight", "budget", "algorithm", "generation", "snap",
              "landmarks", "bound_rows", "bounds", "kernel")
    __slots__ = ("fields",)

    def __init__(self, **fields):
        fields.setdefault("kernel", None)
        if fields.keys() != set(self.FIELDS):
            raise TypeError(f"PreparedCall takes exactly the fields {', '.join(self.FIELDS)}")
        self.fields = tuple(fields[name] for name in self.FIELDS)

    def bind(self, args):
        """``solve`` bound to the types of ``args`` (this call's arrays, a workspace's and
        the endpoints as ints: the same types on every call), kept as the field
        ``kernel`` (None until the first call): see :func:`pathserver.core.jit.bound`."""
        kernel = bound(solver(args[13], args[3], args[0]), args)
        self.fields = self.fields[:-1] + (kernel,)
        return kernel

    def with_table(self, kind: str, table) -> "PreparedCall":
        """This call with its layer's ``table``, just built: ``"jump_table"``, running
        JPS+ on it; ``"landmarks"``, A* estimating with them; ``"bounds"`` (rows, boxes),
        JPS+ skipping what they rule out."""
        fields = dict(zip(self.FIELDS, self.fields))
        if kind == "jump_table":
            fields.update(jump_table=table, algorithm="jps+", mode=self.mode | (1 << st.MODE_ALGORITHM))
        elif kind == "bounds":
            fields.update(bound_rows=table[0], bounds=table[1])
        else:
            fields.update(landmarks=table)
        fields.update(kernel=None)
        return PreparedCall(**fields)

    def __repr__(self) -> str:
        return f"PreparedCall(size={self.size}, algorithm={self.algorithm!r}, mode={self.mode})"


for _index, _name in enumerate(PreparedCall.FIELDS):
    setattr(PreparedCall, _name, property(lambda call, _index=_index: call.fields[_index]))
del _index, _name


# find_path's defaults, the options' own objects: a call that leaves them alone passes
# these very objects, which the prepared call's lookup tests by identity.
_SMOOTH, _WEIGHT, _DIAGONAL, _ALGORITHM = (BY_NAME[name].python_default
                                           for name in ("smooth", "weight", "diagonal", "algorithm"))


def find_path(
    gridmap: GridMap,
    start,
    goal=None,
    unit_size=1,
    *,
    smooth: str = _SMOOTH,
    snap: bool = True,
    allow_partial: bool = False,
    max_expansions: int | None = None,
    heuristic: str | None = None,
    weight: float = _WEIGHT,
    diagonal: str = _DIAGONAL,
    max_climb: float | None = None,
    algorithm: str = _ALGORITHM,
    line_of_sight: bool = True,
    goals=None,
    avoid=None,
    avoid_cost: float | None = None,
    traversal=None,
) -> PathResult:
    """Find a path for a unit of ``unit_size`` (int ``k`` or ``(w, h)`` cells) from grid
    cell ``start = (x, y)`` to ``goal``, or to the cheapest reachable of ``goals``. Float
    coordinates are floored to their cell.

    The options are checked by the wire's rules (:mod:`pathserver.options`; ``pathserver
    options`` lists them): a value the wire refuses is refused here too, with the same
    code, message and ``at``. None means an option's default; numpy values count as the
    Python values they hold.

    smooth: ``"none"`` every cell, ``"corners"`` where the direction changes, ``"los"``
        string-pulled with line-of-sight checks valid for the unit's footprint.
    snap: a start or goal the unit cannot stand on moves to the nearest cell it can
        (else StartBlockedError / GoalBlockedError).
    allow_partial: an unreachable goal yields the path to the reachable cell nearest it
        (an other-component goal is detected without searching either way).
    max_expansions: node budget, an int >= 1; hitting it gives a partial path with
        allow_partial, otherwise SearchLimitError. None: no limit.
    heuristic: ``"octile"`` (default for 8 directions), ``"manhattan"`` (default for 4),
        ``"euclidean"``, ``"chebyshev"``; weight >= 1 trades optimality for speed.
    diagonal: ``"no_corner_cutting"`` (a diagonal needs both orthogonal neighbours open,
        the Moving AI rule), ``"never"`` (4-connected), ``"always"`` (corners may be cut).
    max_climb: a finite number >= 0; with a heights layer, steps climbing more than this
        are blocked. None: no limit.
    algorithm: ``"auto"``, ``"astar"`` or ``"jps"`` (JPS needs uniform cost, no
        max_climb, and the no-corner-cutting rule; "auto" uses it where it pays). On
        terrain costs A* estimates with the layer's landmarks once they are built (see
        :mod:`pathserver.core.landmarks`): the same costs, fewer expansions.
    line_of_sight: try the straight line first (taken only when provably optimal).
    goals: up to 4096 ``(x, y)`` instead of ``goal``: one search finds the cheapest
        reachable goal (``goal_index`` says which; each goal snaps as ``goal`` does, goals
        in other components are skipped; ``allow_partial`` with none reachable ends nearest
        one). One search back from all the goals to the start: JPS+ where the request
        with one goal would run it, else A* (see :mod:`pathserver.core.goals`).
    avoid: ``{"cells": [(x, y), ...], "rects": [(x, y, w, h), ...]}`` solid for this
        request alone (the map and its caches are untouched): the unit's footprint may not
        overlap them, but a unit whose start overlaps them may leave; a goal on them snaps
        off them. avoid_cost: a number >= 1: the avoided cells are not blocked, but
        entering a cell whose footprint overlaps one costs at least this much a step.
        With ``avoid`` alone, where the request without would run JPS+: JPS+ without the
        avoided cells, that path mended round them at its cost (``algorithm`` "jps+"),
        else JPS+ round those near where it steps on them, or round all of them, scanning
        near them (``"jps"``); elsewhere A*; with ``avoid_cost``, A*.
    traversal: a unit class the map defines (``"boat"``) or rules ``{tag: None | number
        >= 1}`` for the map's tagged cells: None blocks a tag, a number multiplies the
        cost of its cells (see :class:`~pathserver.grid.gridmap.GridMap`).

    >>> m = GridMap.from_ascii('''
    ... .....
    ... .##..
    ... .....
    ... ''')
    >>> r = find_path(m, (0, 1), (4, 1))
    >>> r.status, round(r.cost, 3), r.path.tolist()
    ('found', 5.414, [[0, 1], [0, 2], [1, 2], [2, 2], [3, 2], [4, 1]])
    >>> r = find_path(m, (0, 1), goals=[(4, 1), (1, 2)])
    >>> r.goal_index, r.goal, r.cost
    (1, (1, 2), 2.0)
    """
    if goal is None or goals is not None or avoid is not None or avoid_cost is not None or traversal is not None:
        return _find_path_more(gridmap, start, goal, unit_size, {
            "smooth": smooth, "allow_partial": allow_partial, "snap": snap, "max_expansions": max_expansions,
            "heuristic": heuristic, "weight": weight, "diagonal": diagonal, "max_climb": max_climb,
            "algorithm": algorithm, "line_of_sight": line_of_sight,
        }, goals, avoid, avoid_cost, traversal)
    # Everything but the endpoints is checked once per map and option set, and kept as a
    # PreparedCall: the common call is a dict lookup, two bounds checks and the kernel.
    # The key holds every option (tests/test_options.py checks that each one counts) and
    # the type of each whose values of another type can compare equal to a valid value
    # yet be invalid (True == 1, 1.0 == 1); an enum's strings need none.
    if (unit_size.__class__ is int and smooth is _SMOOTH and snap is True and allow_partial is False
            and max_expansions is None and heuristic is None and weight is _WEIGHT and diagonal is _DIAGONAL
            and max_climb is None and algorithm is _ALGORITHM and line_of_sight is True):
        # Every option at its default, passed as the signature's own objects (or not at
        # all): the key is the int size alone, a key no call with options can have.
        key = unit_size
    else:
        size_type = type(unit_size)
        if size_type is tuple:  # (2, True) == (2, 1)
            size_type = (tuple, *map(type, unit_size))
        key = (
            unit_size, size_type, smooth, allow_partial, type(allow_partial), snap, type(snap), max_expansions,
            type(max_expansions), heuristic, weight, type(weight), diagonal, max_climb, type(max_climb), algorithm,
            line_of_sight, type(line_of_sight),
        )
    layers = gridmap.layers
    try:
        call = layers.lookup(key)
    except TypeError:  # an unhashable value: validation names it, or it is never kept
        call = None
    if call is None:
        call = _prepare(gridmap, key, unit_size, {
            "smooth": smooth, "allow_partial": allow_partial, "snap": snap, "max_expansions": max_expansions,
            "heuristic": heuristic, "weight": weight, "diagonal": diagonal, "max_climb": max_climb,
            "algorithm": algorithm, "line_of_sight": line_of_sight,
        })
    (_, layer_key, width, height, n, cells, comps, jump_bits, jump_table, cost_index, cost_table, heights, climb,
     mode, weight_value, budget, algorithm_name, generation, _, landmarks, bound_rows, bounds, kernel) = call.fields
    try:
        layers.touch(layer_key)  # the layer's recency, for the LRU
    except KeyError:
        layers.forget(key)

    # Pairs of two in-bounds ints take the inline path (written out twice: a helper call
    # per endpoint costs a tenth of the whole call); cell_of checks everything else.
    try:
        sx, sy = start
    except (TypeError, ValueError):
        sx, sy = cell_of(start, "start", gridmap)  # raises
    if type(sx) is not int or type(sy) is not int or not (0 <= sx < width and 0 <= sy < height):
        sx, sy = cell_of((sx, sy), "start", gridmap)
    try:
        gx, gy = goal
    except (TypeError, ValueError):
        gx, gy = cell_of(goal, "goal", gridmap)  # raises
    if type(gx) is not int or type(gy) is not int or not (0 <= gx < width and 0 <= gy < height):
        gx, gy = cell_of((gx, gy), "goal", gridmap)

    try:
        ws = _local.workspace
        if ws.n < n:
            ws = _new_workspace(n)
    except AttributeError:  # this thread's first search
        ws = _new_workspace(n)
    if kernel is None:
        kernel = call.bind((
            cells, comps, jump_bits, jump_table, cells, cost_index, cost_table, heights, climb, sx, sy, gx,
            gy, mode, weight_value, budget, ws.work_float, ws.work_int, landmarks, bound_rows, bounds, _NO_OVERLAY,
        ))
    status, flags, count, cost, length, expanded, sx, sy, gx, gy = kernel(
        cells, comps, jump_bits, jump_table, cells, cost_index, cost_table, heights, climb, sx, sy, gx, gy,
        mode, weight_value, budget, ws.work_float, ws.work_int, landmarks, bound_rows, bounds, _NO_OVERLAY,
    )
    if status > st.QUERY_NO_PATH:
        _raise_for(status, call, sx, sy, gx, gy)
    return PathResult(
        _STATUS_NAMES[status], ws.answer[:count].copy("K"), cost, length, expanded, (sx, sy), (gx, gy), flags,
        generation, algorithm_name,
    )


def _raise_for(status: int, call: PreparedCall, sx: int, sy: int, gx: int, gy: int, goal_at: str = "goal"):
    unit_w, unit_h = call.size
    if status == st.QUERY_START_BLOCKED:
        if call.snap:
            raise StartBlockedError("no cell of this map can hold a unit of this size", at="unit_size")
        raise StartBlockedError(f"start ({sx}, {sy}) is blocked for a {unit_w}x{unit_h} unit", at="start")
    if status == st.QUERY_GOAL_BLOCKED:
        raise GoalBlockedError(f"{goal_at} ({gx}, {gy}) is blocked for a {unit_w}x{unit_h} unit", at=goal_at)
    if status == st.QUERY_SEARCH_LIMIT:
        raise SearchLimitError(
            f"max_expansions={call.budget} reached before the goal; pass allow_partial=True for a partial path",
            at="max_expansions",
        )


def _prepare(gridmap: GridMap, key, unit_size, given: dict, rules: tuple | None = None) -> PreparedCall:
    """Check everything but the endpoints (``given``: the other options by name, as
    passed; ``rules``: the traversal rule set, from ``GridMap.traversal_rules``) and work
    out what the kernel gets; kept in the map's cache under ``key`` for the next call
    alike."""
    unit_w, unit_h = normalize_unit_size(unit_size, gridmap.width, gridmap.height)
    options = {}
    for option in SEARCH_OPTIONS:
        if option.name != "unit_size":
            value = option.check(python_value(given[option.name]))
            options[option.name] = option.python_default if value is None else value
    diagonal_code = DIAGONALS[options["diagonal"]]
    if options["heuristic"] is None:
        heuristic_code = st.HEURISTIC_MANHATTAN if diagonal_code == st.DIAGONAL_NEVER else st.HEURISTIC_OCTILE
    else:
        heuristic_code = HEURISTICS[options["heuristic"]]
    max_expansions = options["max_expansions"]
    # Far beyond any map's node count: "no limit" in effect, and within the kernel's int64.
    budget = 0 if max_expansions is None else min(max_expansions, 2**62)
    use_heights = 0
    climb = 0.0
    heights = _NO_HEIGHTS
    if options["max_climb"] is not None and gridmap.heights is not None:
        use_heights = 1
        climb = options["max_climb"]
        heights = gridmap.heights
    layer = gridmap.layer_for(unit_w, unit_h, rules)
    cells, comps = layer.cells8() if diagonal_code == st.DIAGONAL_ALWAYS else (layer.cells, layer.comps)
    jps_ok = (
        layer.uniform and use_heights == 0 and diagonal_code == st.DIAGONAL_NO_CORNER_CUTTING
        and heuristic_code == st.HEURISTIC_OCTILE
    )
    if options["algorithm"] == "jps":
        if not jps_ok:
            raise RequestError(
                "algorithm 'jps' needs uniform terrain cost, no max_climb, diagonal "
                "'no_corner_cutting' and the octile heuristic; use 'astar' or 'auto'",
                at="algorithm",
            )
        use_jps = True
    else:
        use_jps = options["algorithm"] == "auto" and jps_ok and layer.open_share >= JPS_MIN_OPEN_SHARE
    # "auto" runs JPS+ once the layer's jump table is built (in the background, started
    # here), on any grid JPS qualifies for, clutter and mazes included (it beat A* there
    # too: 1.6x on random512-40-0, 2x on maze512-1-0, 9x on 8room_000); until then the
    # choice above answers. "jps" always scans online, and so does a search with a
    # budget: where a budget cuts it short depends on the algorithm, and the answer must
    # not change when the table lands. The table is read before its build is started:
    # the first call on a layer does not use it whatever the build's speed, so a one-off
    # query's answer is deterministic.
    table = None
    awaiting = options["algorithm"] == "auto" and jps_ok and budget == 0
    if awaiting:
        table = layer.jump_table()
        awaiting = gridmap.start_jump_table(layer)
    # A* on terrain costs estimates with the layer's landmarks once they are built (in the
    # background, started here), on a graph with no more moves than theirs (corners never
    # cut), where no budget or partial answer depends on the order of expansions: the
    # answer's cost is the same, and so the first call's answer. Read before the build is
    # started, as the jump table is.
    landmarks = _NO_LANDMARKS
    wants_landmarks = (not layer.uniform and budget == 0 and not options["allow_partial"]
                       and diagonal_code != st.DIAGONAL_ALWAYS)
    if wants_landmarks:
        built = layer.landmarks()
        landmarks = _NO_LANDMARKS if built is None else built
        wants_landmarks = gridmap.start_landmarks(layer)
    # JPS+ skips the directions its goal bounds rule out once they are built (on small
    # maps, in the background after the jump table), under the same rule: no budget or
    # partial answer depends on the order of expansions.
    bounds = (_NO_BOUND_ROWS, _NO_BOUNDS)
    wants_bounds = awaiting and not options["allow_partial"]
    if wants_bounds:
        built = layer.bounds()
        bounds = bounds if built is None else built
        wants_bounds = gridmap.start_bounds(layer)
    mode = st.pack_mode(
        diagonal_code, heuristic_code, SMOOTHING[options["smooth"]],
        st.ALGORITHM_JPS if use_jps or table is not None else st.ALGORITHM_ASTAR, options["snap"],
        options["allow_partial"], options["line_of_sight"], layer.uniform, use_heights,
    )
    call = PreparedCall(
        size=(unit_w, unit_h), layer_key=layer.key, width=gridmap.width, height=gridmap.height, n=gridmap.width * gridmap.height,
        cells=cells, comps=comps, jump_bits=layer.jump_bits() if use_jps and table is None else _NO_JUMP_BITS,
        jump_table=_NO_JUMP_TABLE if table is None else table,
        cost_index=layer.cost_index, cost_table=layer.cost_table, heights=heights, climb=climb, mode=mode,
        weight=options["weight"], budget=budget,
        algorithm="jps+" if table is not None else "jps" if use_jps else "astar",
        generation=gridmap.generation, snap=options["snap"], landmarks=landmarks, bound_rows=bounds[0],
        bounds=bounds[1],
    )
    gridmap.layers.keep(key, call)
    if awaiting and table is None:
        gridmap.layers.await_table(layer.key, key)
        built = layer.jump_table()
        if built is not None:
            # Built since it was read, maybe before this call was noted as waiting.
            gridmap.layers.table_built(layer.key, built)
    if wants_landmarks and landmarks is _NO_LANDMARKS:
        gridmap.layers.await_table(layer.key, key, "landmarks")
        built = layer.landmarks()
        if built is not None:
            gridmap.layers.landmarks_built(layer.key, built)
    if wants_bounds and bounds[0] is _NO_BOUND_ROWS:
        gridmap.layers.await_table(layer.key, key, "bounds")
        built = layer.bounds()
        if built is not None:
            gridmap.layers.table_built(layer.key, built, "bounds")
    return call


# -- many goals, avoided cells, traversal rules --------------------------------------

_GOALS = BY_NAME["goals"]
_AVOID = BY_NAME["avoid"]
_AVOID_COST = BY_NAME["avoid_cost"]
_TRAVERSAL = BY_NAME["traversal"]


#: The options of a prepared call but the unit's size, at their defaults.
_CALL_DEFAULTS = {option.name: option.python_default for option in SEARCH_OPTIONS if option.name != "unit_size"}


def prepared_call(gridmap: GridMap, unit_size, rules: tuple | None, given: dict,
                  prepare: bool = True) -> PreparedCall | None:
    """The prepared call of ``find_path`` for ``unit_size``, traversal ``rules`` and the
    options in ``given`` (raw values by name; the others at their defaults), checked and
    kept in the map's cache like find_path's own (the queries of
    :mod:`pathserver.grid.queries` use it for the unit's grids and their options).
    prepare=False: only a call already kept, else None (nothing checked)."""
    options = dict(_CALL_DEFAULTS)
    options.update(given)
    size_type = type(unit_size)
    if size_type is tuple:
        size_type = (tuple, *map(type, unit_size))
    # Every value with its type: True == 1 and 1.0 == 1, but only one of each is valid.
    # The names are those of _CALL_DEFAULTS, in its order (update keeps it).
    values = tuple(options.values())
    key = ("call", unit_size, size_type, rules, values, tuple(map(type, values)))
    layers = gridmap.layers
    try:
        call = layers.lookup(key)
    except TypeError:
        call = None
    if call is None:
        if not prepare:
            return None
        call = _prepare(gridmap, key, unit_size, options, rules)
    try:
        layers.touch(call.layer_key)
    except KeyError:
        layers.forget(key)
    return call


def traversal_rules(gridmap: GridMap, traversal) -> tuple | None:
    """``traversal`` checked by the options' rule, as the map's rule set (None: none)."""
    return gridmap.traversal_rules(checked(_TRAVERSAL, traversal))


def avoid_boxes(gridmap: GridMap, avoid) -> np.ndarray:
    """``avoid`` checked by the options' rule, as boxes clipped to the map (maybe none)."""
    value = checked(_AVOID, avoid)
    return blocker_boxes(gridmap, value if value is not None else ((), ()))


def find_path_within(gridmap: GridMap, start, goal, unit_size, budget: int, *, avoid,
                     **options) -> PathResult | None:
    """``find_path(gridmap, start, goal, unit_size, avoid=avoid, **options)`` if it is
    the JPS+ path without the avoided cells, mended round them (see :func:`solve`),
    found within ``budget`` expansions; else None, and then only the call itself answers.
    What it answers is what the call answers: the same search, stopped early or not at
    all. (The server's loop answers short trips itself this way.)"""
    given = dict(_CALL_DEFAULTS)
    given.update(options)
    return _find_path_more(gridmap, start, goal, unit_size, given, None, avoid, None, None, budget)


def _find_path_more(gridmap: GridMap, start, goal, unit_size, given: dict, goals, avoid, avoid_cost,
                    traversal, give_up: int = 0) -> PathResult | None:
    """find_path with ``goals``, ``avoid`` / ``avoid_cost`` or ``traversal``: checks those,
    then runs solve (one goal) or solve_goals on the unit's grids with the avoided cells
    laid on (``avoid`` alone as numpy rows: :func:`_find_path_avoiding` first). give_up >
    0: see :func:`find_path_within`."""
    if avoid is not None and goals is None and avoid_cost is None and traversal is None:
        answer = _find_path_avoiding(gridmap, start, goal, unit_size, given, avoid, give_up)
        if answer is not _GENERAL:
            return answer
    if goals is not None and goal is not None:
        raise RequestError("pass goal or goals, not both", at="goals")
    if goals is None and goal is None:
        raise RequestError("find_path needs a goal (or goals)", at="goal")
    if goals is not None:
        goals = checked(_GOALS, goals)
    boxes = avoid_boxes(gridmap, avoid)
    if avoid_cost is not None:
        avoid_cost = checked(_AVOID_COST, avoid_cost)
    rules = None if traversal is None else traversal_rules(gridmap, traversal)
    call = prepared_call(gridmap, unit_size, rules, given)
    ((unit_w, unit_h), _, _, _, n, call_cells, comps, jump_bits, jump_table, call_index, call_table, heights, climb,
     mode, weight, budget, algorithm_name, _, _, landmarks, bound_rows, bounds, _) = call.fields
    call_mode = mode
    sx, sy = _endpoint(start, "start", gridmap)
    avoiding = len(boxes) > 0
    if avoiding or goals is not None and len(goals) > 1:
        if python_value(given["algorithm"]) == "jps":
            raise RequestError("algorithm 'jps' takes one goal and no avoid; use 'astar' or 'auto'", at="algorithm")
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
            jump_table = _NO_JUMP_TABLE
    if give_up and not mode & (1 << st.MODE_AVOIDING):
        return None
    if avoiding and avoid_cost is not None:
        mode &= ~(1 << st.MODE_UNIFORM)
    ws = workspace(n)
    avoided = Avoided(call_cells, call_index, call_table, (call_mode >> st.MODE_UNIFORM) & 1, unit_w, unit_h, boxes,
                      avoid_cost)
    if goals is None:
        targets = np.array([_endpoint(goal, "goal", gridmap)], dtype=np.int64)
        goal_name = "goal"
    else:
        targets = cells_of(goals, "goals", gridmap)
        goal_name = "goals"
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
            status, flags, count, cost, length, expanded, sx, sy, gx, gy = solver(mode, jump_table, cells)(
                cells, comps, jump_bits, jump_table, call_cells, cost_index, cost_table, heights, climb,
                sx, sy, gx, gy, mode, weight, give_up or budget, ws.work_float, ws.work_int, landmarks, bound_rows,
                bounds, _NO_OVERLAY,
            )
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
                cells, comps, jump_table, cost_index, cost_table, heights, climb, sx, sy, targets, mode, weight,
                budget, ws.work_float, ws.work_int, snapped, bound_rows, bounds,
            )
            gx, gy = snapped[chosen].tolist() if chosen >= 0 else (-1, -1)
    if moved is not None and chosen >= 0:
        if moved[chosen]:
            flags |= st.FLAG_GOAL_SNAPPED
        chosen = int(index[chosen])
    if status > st.QUERY_NO_PATH:
        if status == st.QUERY_GOAL_BLOCKED:
            gx, gy = given_targets[chosen].tolist()
        _raise_for(status, call, sx, sy, gx, gy, "goal" if goals is None else f"goals[{chosen}]")
    goal_index = None if goals is None or chosen < 0 else int(chosen)
    return PathResult(_STATUS_NAMES[status], points, cost, length, expanded, (sx, sy), (gx, gy), flags,
                      call.generation, algorithm_name, goal_index)


def _round_the_cells(avoided: Avoided, call: PreparedCall, cells, gridmap: GridMap, rules, jump_bits, mode: int,
                     budget: int, ws: _Workspace, answer: tuple) -> tuple:
    """After solve's QUERY_UNMENDED (``answer``, its path left in ``ws``) inside
    ``avoided`` (``cells``: the grid it hands on, the cells laid): JPS+ round the avoided
    cells near where that path steps on them, its path mended round the others; after
    RELAX_ROUNDS, round all of them. Each reads the layer's table where the cells it goes
    round change nothing and scans the layer's stop bitmaps (``jump_bits``, made on first
    need) with them laid on where they do (no goal bounds: those are the grid's without
    them). Returns solve's last answer, with the first one's snaps and every round's
    expansions."""
    status, flags, count, cost, length, expanded, sx, sy, gx, gy = answer
    ((unit_w, unit_h), _, _, _, _, _, comps, _, jump_table, cost_index, cost_table, heights, climb, _, weight, _, _, _,
     _, landmarks, _, _, _) = call.fields
    snapped = flags & (st.FLAG_START_SNAPPED | st.FLAG_GOAL_SNAPPED)
    spent = expanded
    if not jump_bits.size:  # JPS+ ran: the bitmaps, made on first need
        jump_bits = gridmap.layer_for(unit_w, unit_h, rules).jump_bits()
    for _ in range(RELAX_ROUNDS):
        relaxation = avoided.relax(ws.answer[:count], jump_bits) if count else None
        if relaxation is None:
            break
        grid, bits, overlay = relaxation
        status, flags, count, cost, length, expanded, sx, sy, gx, gy = solver(mode, jump_table, cells)(
            cells, comps, bits, jump_table, grid, cost_index, cost_table, heights, climb, sx, sy, gx, gy,
            mode, weight, budget, ws.work_float, ws.work_int, landmarks, _NO_BOUND_ROWS, _NO_BOUNDS, overlay,
        )
        spent += expanded
        if status != st.QUERY_UNMENDED:
            break
    if status == st.QUERY_UNMENDED:
        bits, overlay = avoided.overlay(jump_bits)
        status, flags, count, cost, length, expanded, sx, sy, gx, gy = solver(mode & ~(1 << st.MODE_RELAXED),
                                                                              jump_table, cells)(
            cells, comps, bits, jump_table, cells, cost_index, cost_table, heights, climb, sx, sy, gx, gy,
            mode & ~(1 << st.MODE_RELAXED), weight, budget, ws.work_float, ws.work_int, landmarks,
            _NO_BOUND_ROWS, _NO_BOUNDS, overlay,
        )
        spent += expanded
    return status, flags | snapped, count, cost, length, spent, sx, sy, gx, gy


#: :func:`_find_path_avoiding`'s answer where the general way must answer.
_GENERAL = object()

_AVOID_KEYS = frozenset(("cells", "rects"))
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
    if type(avoid) is not dict or not avoid.keys() <= _AVOID_KEYS:
        return _GENERAL
    cells = laid_rows(avoid.get("cells"), "cells")
    rects = laid_rows(avoid.get("rects"), "rects")
    if cells is None or rects is None or not 0 < len(cells) + len(rects) <= _AVOID.max:
        return _GENERAL
    call = prepared_call(gridmap, unit_size, None, given, prepare=False)
    if call is None:
        return _GENERAL
    ((unit_w, unit_h), _, width, height, n, call_cells, comps, jump_bits, jump_table, cost_index, cost_table, heights,
     climb, mode, weight, budget, algorithm_name, generation, _, landmarks, bound_rows, bounds, kernel) = call.fields
    if algorithm_name != "jps+":
        return _GENERAL
    try:
        sx, sy = start
        gx, gy = goal
    except (TypeError, ValueError):
        return _GENERAL
    if (type(sx) is not int or type(sy) is not int or type(gx) is not int or type(gy) is not int
            or not (0 <= sx < width and 0 <= sy < height and 0 <= gx < width and 0 <= gy < height)):
        return _GENERAL
    avoided = Avoided.laid(call_cells, cost_index, cost_table, (mode >> st.MODE_UNIFORM) & 1, unit_w, unit_h, cells,
                           rects, (sx, sy), (gx, gy))
    if avoided is None:
        return _GENERAL
    ws = workspace(n)
    mode |= _AVOID_MODE
    with avoided as (laid, _, _, _):
        args = (laid, comps, jump_bits, jump_table, call_cells, cost_index, cost_table, heights, climb, sx, sy, gx,
                gy, mode, weight, give_up or budget, ws.work_float, ws.work_int, landmarks, bound_rows, bounds,
                _NO_OVERLAY)
        if kernel is None:
            kernel = call.bind(args)
        answer = kernel(*args)
        if answer[0] == st.QUERY_UNMENDED:
            if give_up:
                return None
            answer = _round_the_cells(avoided, call, laid, gridmap, None, jump_bits, mode, budget, ws, answer)
            algorithm_name = "jps"
    status, flags, count, cost, length, expanded, sx, sy, gx, gy = answer
    if status > st.QUERY_NO_PATH:
        _raise_for(status, call, sx, sy, gx, gy)
    return PathResult(_STATUS_NAMES[status], ws.answer[:count].copy("K"), cost, length, expanded, (sx, sy), (gx, gy),
                      flags, generation, algorithm_name)


#: Relaxed rounds (:meth:`~pathserver.grid.avoid.Avoided.relax`) before a request's
#: search round all its avoided cells at once.
RELAX_ROUNDS = 3

_NO_POINTS = np.empty((0, 2), dtype=np.int32)
_NO_POINTS.setflags(write=False)


def _endpoint(point, name: str, gridmap: GridMap) -> tuple[int, int]:
    """The cell of a start or goal: a pair of in-bounds ints as it is, else by cell_of."""
    try:
        x, y = point
    except (TypeError, ValueError):
        return cell_of(point, name, gridmap)  # raises
    if type(x) is not int or type(y) is not int or not (0 <= x < gridmap.width and 0 <= y < gridmap.height):
        return cell_of((x, y), name, gridmap)
    return x, y


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
    snap_goals(cells, call.comps, targets, 1 if call.snap else 0, snapped)
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


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 2, thread_name_prefix="pathserver-batch")
        return _pool


def find_paths(gridmap: GridMap, starts, goals, unit_size=1, *, errors: str = "raise", **options) -> list:
    """Many queries on one map, spread over all cores (the kernels release the GIL).

    starts, goals: sequences of ``(x, y)`` of equal length (or (n, 2) arrays).
    errors: ``"raise"`` raises the first error; ``"return"`` puts the PathserverError in
    that query's slot instead. Other options: as :func:`find_path`.
    Returns a list of PathResult in the order of the inputs.
    """
    if errors not in ("raise", "return"):
        raise RequestError("errors must be 'raise' or 'return'", at="errors")
    starts = list(starts)
    goals = list(goals)
    if len(starts) != len(goals):
        raise RequestError(f"{len(starts)} starts but {len(goals)} goals", at="goals")

    def one(i: int):
        try:
            return find_path(gridmap, starts[i], goals[i], unit_size, **options)
        except PathserverError as error:
            if errors == "raise":
                raise
            return error

    n = len(starts)
    workers = os.cpu_count() or 2
    if n < 2 * workers:
        return [one(i) for i in range(n)]
    chunks = [range(k, n, workers) for k in range(workers)]
    results: list = [None] * n
    for chunk, answers in zip(chunks, _executor().map(lambda c: [one(i) for i in c], chunks)):
        for i, answer in zip(chunk, answers):
            results[i] = answer
    return results
