"""The public search API: :func:`find_path` and :func:`find_paths`.

Validates once here, by the rules of :mod:`pathserver.options` (the wire's), then hands
plain arrays to one compiled kernel (:func:`pathserver.core.query.solve`), which trusts
what it is given.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from pathserver.core import status as st
from pathserver.core.query import solve
from pathserver.errors import (
    GoalBlockedError,
    NonFiniteError,
    OutOfBoundsError,
    PathserverError,
    RequestError,
    SearchLimitError,
    StartBlockedError,
)
from pathserver.grid.gridmap import GridMap, floor_cell, normalize_unit_size, python_value
from pathserver.options import SEARCH_OPTIONS

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
#: ``algorithm="auto"`` picks JPS only where open ground dominates: on random clutter and
#: 1-wide mazes every cell is a jump point and JPS only adds scanning overhead.
JPS_MIN_OPEN_SHARE = 0.5

_STATUS_NAMES = {st.QUERY_FOUND: "found", st.QUERY_PARTIAL: "partial", st.QUERY_NO_PATH: "no_path"}
# Read-only like the cached layers' arrays: numba compiles one specialisation per
# writeability, and a second compile of solve() costs seconds.
_NO_HEIGHTS = np.zeros((1, 1), dtype=np.float32)
_NO_HEIGHTS.setflags(write=False)
_NO_JUMP_BITS = np.zeros(0, dtype=np.uint64)
_NO_JUMP_BITS.setflags(write=False)


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
    generation: the map generation the answer was computed on. algorithm: what ran.
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

    __slots__ = ("n", "work_float", "work_int")

    def __init__(self, n: int):
        self.n = n
        self.work_float = np.empty((3, n), dtype=np.float64)
        self.work_int = np.zeros((4, n + 1), dtype=np.int32)


_local = threading.local()


def _new_workspace(n: int) -> _Workspace:
    # One workspace per thread, for the largest map it has searched: a smaller map uses
    # a prefix of the same arrays.
    ws = _Workspace(n)
    _local.workspace = ws
    return ws


def _cell(point, name: str, gridmap: GridMap) -> tuple[int, int]:
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

    size: ``(unit_w, unit_h)``, the layer it holds. width, height: the map's; n: their
    product, the workspace length. cells, comps, jump_bits, cost_index, cost_table,
    heights, climb: the kernel's arrays and climb limit. mode: the packed option bits
    (``status.pack_mode``). weight: float >= 1. budget: max_expansions, 0 for no limit.
    algorithm: ``"astar"`` or ``"jps"``, what runs. generation: the map's. snap: the
    checked ``snap``, for the error of a blocked start.

    Read the fields by name (``call.budget``). ``fields`` holds them all as one plain
    tuple in the order of :attr:`FIELDS`, which find_path unpacks: Python unpacks an exact
    tuple in one step, but a NamedTuple or a slotted class field by field, which costs
    0.1 µs more a call (a thirtieth of a short find_path).
    """

    FIELDS = ("size", "width", "height", "n", "cells", "comps", "jump_bits", "cost_index", "cost_table", "heights",
              "climb", "mode", "weight", "budget", "algorithm", "generation", "snap")
    __slots__ = ("fields",)

    def __init__(self, **fields):
        if fields.keys() != set(self.FIELDS):
            raise TypeError(f"PreparedCall takes exactly the fields {', '.join(self.FIELDS)}")
        self.fields = tuple(fields[name] for name in self.FIELDS)

    def __repr__(self) -> str:
        return f"PreparedCall(size={self.size}, algorithm={self.algorithm!r}, mode={self.mode})"


for _index, _name in enumerate(PreparedCall.FIELDS):
    setattr(PreparedCall, _name, property(lambda call, _index=_index: call.fields[_index]))
del _index, _name


def find_path(
    gridmap: GridMap,
    start,
    goal,
    unit_size=1,
    *,
    smooth: str = "none",
    snap: bool = True,
    allow_partial: bool = False,
    max_expansions: int | None = None,
    heuristic: str | None = None,
    weight: float = 1.0,
    diagonal: str = "no_corner_cutting",
    max_climb: float | None = None,
    algorithm: str = "auto",
    line_of_sight: bool = True,
) -> PathResult:
    """Find a path for a unit of ``unit_size`` (int ``k`` or ``(w, h)`` cells) from grid
    cell ``start = (x, y)`` to ``goal``. Float coordinates are floored to their cell.

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
        max_climb, and the no-corner-cutting rule; "auto" uses it where it pays).
    line_of_sight: try the straight line first (taken only when provably optimal).

    >>> m = GridMap.from_ascii('''
    ... .....
    ... .##..
    ... .....
    ... ''')
    >>> r = find_path(m, (0, 1), (4, 1))
    >>> r.status, round(r.cost, 3), r.path.tolist()
    ('found', 5.414, [[0, 1], [0, 2], [1, 2], [2, 2], [3, 2], [4, 1]])
    """
    # Everything but the endpoints is checked once per map and option set, and kept as a
    # PreparedCall: the common call is a dict lookup, two bounds checks and the kernel.
    # The key holds every option (tests/test_options.py checks that each one counts) and
    # the type of each whose values of another type can compare equal to a valid value
    # yet be invalid (True == 1, 1.0 == 1); an enum's strings need none.
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
    (size, width, height, n, cells, comps, jump_bits, cost_index, cost_table, heights, climb, mode, weight_value,
     budget, algorithm_name, generation, _) = call.fields
    try:
        layers.touch(size)  # the layer's recency, for the LRU
    except KeyError:
        layers.forget(key)

    # Tuples or lists (as decoded from the wire) of two in-bounds ints take the inline
    # path (written out twice: a helper call per endpoint costs a tenth of the whole
    # call); _cell handles everything else.
    kind = type(start)
    if (kind is tuple or kind is list) and len(start) == 2 and type(start[0]) is int and type(start[1]) is int:
        sx, sy = start
        if not (0 <= sx < width and 0 <= sy < height):
            sx, sy = _cell(start, "start", gridmap)
    else:
        sx, sy = _cell(start, "start", gridmap)
    kind = type(goal)
    if (kind is tuple or kind is list) and len(goal) == 2 and type(goal[0]) is int and type(goal[1]) is int:
        gx, gy = goal
        if not (0 <= gx < width and 0 <= gy < height):
            gx, gy = _cell(goal, "goal", gridmap)
    else:
        gx, gy = _cell(goal, "goal", gridmap)

    try:
        ws = _local.workspace
        if ws.n < n:
            ws = _new_workspace(n)
    except AttributeError:  # this thread's first search
        ws = _new_workspace(n)
    status, flags, points, cost, length, expanded, sx, sy, gx, gy = solve(
        cells, comps, jump_bits, cost_index, cost_table, heights, climb, sx, sy, gx, gy, mode, weight_value, budget,
        ws.work_float, ws.work_int,
    )
    if status > st.QUERY_NO_PATH:
        _raise_for(status, call, sx, sy, gx, gy)
    return PathResult(
        _STATUS_NAMES[status], points, cost, length, expanded, (sx, sy), (gx, gy), flags, generation, algorithm_name,
    )


def _raise_for(status: int, call: PreparedCall, sx: int, sy: int, gx: int, gy: int):
    unit_w, unit_h = call.size
    if status == st.QUERY_START_BLOCKED:
        if call.snap:
            raise StartBlockedError("no cell of this map can hold a unit of this size", at="unit_size")
        raise StartBlockedError(f"start ({sx}, {sy}) is blocked for a {unit_w}x{unit_h} unit", at="start")
    if status == st.QUERY_GOAL_BLOCKED:
        raise GoalBlockedError(f"goal ({gx}, {gy}) is blocked for a {unit_w}x{unit_h} unit", at="goal")
    if status == st.QUERY_SEARCH_LIMIT:
        raise SearchLimitError(
            f"max_expansions={call.budget} reached before the goal; pass allow_partial=True for a partial path",
            at="max_expansions",
        )


def _prepare(gridmap: GridMap, key, unit_size, given: dict) -> PreparedCall:
    """Check everything but the endpoints (``given``: the other options by name, as
    passed) and work out what the kernel gets; kept in the map's cache under ``key`` for
    the next call alike."""
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
    layer = gridmap.layer_for(unit_w, unit_h)
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
    mode = st.pack_mode(
        diagonal_code, heuristic_code, SMOOTHING[options["smooth"]],
        st.ALGORITHM_JPS if use_jps else st.ALGORITHM_ASTAR, options["snap"], options["allow_partial"],
        options["line_of_sight"], layer.uniform, use_heights,
    )
    call = PreparedCall(
        size=(unit_w, unit_h), width=gridmap.width, height=gridmap.height, n=gridmap.width * gridmap.height,
        cells=cells, comps=comps, jump_bits=layer.jump_bits() if use_jps else _NO_JUMP_BITS,
        cost_index=layer.cost_index, cost_table=layer.cost_table, heights=heights, climb=climb, mode=mode,
        weight=options["weight"], budget=budget, algorithm="jps" if use_jps else "astar",
        generation=gridmap.generation, snap=options["snap"],
    )
    gridmap.layers.keep(key, call)
    return call


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
