"""The checked call: what :func:`~pathserver.grid.search.find_path` hands a kernel for one
map, unit size and option set, all but the endpoints, checked once by the rules of
:mod:`pathserver.options` and kept in the map's cache (:class:`PreparedCall`); the
answer's record (:class:`PathResult`) and each thread's search arrays (:func:`workspace`).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from pathserver.core import status as st
from pathserver.core.avoid import hex_anchors
from pathserver.core.bounds import ROW as BOUNDS_ROW
from pathserver.core.jit import bound
from pathserver.core.query import answer_view, solver
from pathserver.errors import (
    BadUnitSizeError,
    GoalBlockedError,
    NonFiniteError,
    OutOfBoundsError,
    RequestError,
    SearchLimitError,
    StartBlockedError,
)
from pathserver.grid.avoid import blocker_boxes
from pathserver.grid.gridmap import GridMap
from pathserver.grid.values import floor_cell, normalize_unit_size, number_array, python_value
from pathserver.options import ALGORITHM, AVOID, DIAGONAL, HEURISTIC, MAX_CLIMB, MAX_EXPANSIONS, SEARCH_OPTIONS, SMOOTH
from pathserver.options import split_floor
from pathserver.floors import check_floor_column
from pathserver.options import SNAP, TRAVERSAL, UNIT_SIZE, plain_number_array

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
#: The same for hex JPS against A* with landmarks on a hex map of uniform cost
#: (bench/hex.py on Moving AI maps): 1.5x to 80x faster from an open share of 0.4 up,
#: even on random512-40-0 (0.02), 3x slower in maze512-1-0's corridors (0).
HEX_JPS_MIN_OPEN_SHARE = 0.2

STATUS_NAMES = {st.QUERY_FOUND: "found", st.QUERY_PARTIAL: "partial", st.QUERY_NO_PATH: "no_path"}
# Read-only like the cached layers' arrays: numba compiles one specialisation per
# writeability, and a second compile of solve() costs seconds.
_NO_HEIGHTS = np.zeros((1, 1), dtype=np.float32)
_NO_HEIGHTS.setflags(write=False)
_NO_JUMP_BITS = np.zeros(0, dtype=np.uint64)
_NO_JUMP_BITS.setflags(write=False)
NO_JUMP_TABLE = np.zeros((0, 8), dtype=np.int8)
NO_JUMP_TABLE.setflags(write=False)
_NO_LANDMARKS = np.zeros((1, 0), dtype=np.float32)
_NO_LANDMARKS.setflags(write=False)
NO_BOUND_ROWS = np.zeros(0, dtype=np.int32)
NO_BOUND_ROWS.setflags(write=False)
NO_BOUNDS = np.zeros((0, BOUNDS_ROW), dtype=np.int16)
NO_BOUNDS.setflags(write=False)
#: No overlay: JPS+ reads its table alone (see pathserver.core.relay).
NO_OVERLAY = np.zeros(0, dtype=np.uint64)
NO_OVERLAY.setflags(write=False)
NO_BOXES = np.zeros((0, 4), dtype=np.int64)
NO_BOXES.setflags(write=False)


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
    #: On a map with links: int64 (m, 2) ``[i, link]``, the move from ``path[i]`` to
    #: ``path[i + 1]`` is that link (its index in the map's list); None elsewhere.
    links: np.ndarray | None = None

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


class Workspace:
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


thread_local = threading.local()


def new_workspace(n: int) -> Workspace:
    # One workspace per thread, for the largest map it has searched: a smaller map uses
    # a prefix of the same arrays.
    ws = Workspace(n)
    thread_local.workspace = ws
    return ws


def workspace(n: int) -> Workspace:
    """This thread's search arrays, for a map of ``n`` cells or more."""
    try:
        ws = thread_local.workspace
        if ws.n < n:
            ws = new_workspace(n)
    except AttributeError:  # this thread's first search
        ws = new_workspace(n)
    return ws


def _plain_arrays(option, value):
    """``value`` when it is a points option's value given as a numpy array that passes as
    it is, else None: checked without walking it number by number. Anything else,
    refusals included, goes the general way (``avoid``'s own check takes numpy arrays)."""
    if option.kind == "points":
        if plain_number_array(value, 2) and option.min <= len(value) <= option.max:
            return value
    return None


def checked(option, value):
    """``option.check(value)`` with numpy values counting as the Python values they hold:
    arrays of points pass as they are when plainly valid, another
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
    """int64 (K, 2): the cell of each of ``points`` (``[x, y]`` or ``[x, y, floor]``,
    checked by :mod:`pathserver.options`: finite numbers), floored, in the floors' stacked
    grid; OutOfBoundsError at ``name[i]`` for the first off the map (``name[i][2]`` for a
    floor the map does not have)."""
    rows, floors = split_floor(points, 2)
    xy = np.floor(number_array(rows, 2))
    height = gridmap.floor_height
    outside = (xy[:, 0] < 0) | (xy[:, 0] >= gridmap.width) | (xy[:, 1] < 0) | (xy[:, 1] >= height)
    if outside.any():
        i = int(np.argmax(outside))
        raise OutOfBoundsError(
            f"{name}[{i}] ({xy[i, 0]:.0f}, {xy[i, 1]:.0f}) is outside the map ({gridmap.width}x{height})",
            at=f"{name}[{i}]",
        )
    if floors is not None:
        _, xy[:, 1] = gridmap.stacked(0, xy[:, 1], check_floor_column(floors, gridmap.floors, name, 2))
    return xy.astype(np.int64, copy=False)


def cell_of(point, name: str, gridmap: GridMap) -> tuple[int, int]:
    """The cell of a start or goal that the inline check in find_path did not take."""
    try:
        px, py = point
    except (TypeError, ValueError):
        raise RequestError(f"{name} must be a pair (x, y)", at=name) from None
    if type(px) is float and type(py) is float and 0.0 <= px < gridmap.width and 0.0 <= py < gridmap.height:
        # The wire's usual point (engines send floats): finite and in bounds, so int() floors.
        return int(px), int(py)
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


def endpoint_cell(point, name: str, gridmap: GridMap) -> tuple[int, int]:
    """The cell of a start or goal: a pair of in-bounds ints as it is, else by cell_of."""
    try:
        x, y = point
    except (TypeError, ValueError):
        return cell_of(point, name, gridmap)  # raises
    if type(x) is not int or type(y) is not int or not (0 <= x < gridmap.width and 0 <= y < gridmap.height):
        return cell_of((x, y), name, gridmap)
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
    tuple in one step, but a NamedTuple or a slotted class field by field, a cost
    ``bench/core.py``'s short searches show.
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

    @property
    def diagonal(self) -> int:
        """The call's moves as the kernels take them: a DIAGONAL_* code (a hex map's layout
        on one)."""
        return (self.mode >> st.MODE_DIAGONAL) & st.DIAGONAL_MASK

    def __repr__(self) -> str:
        return f"PreparedCall(size={self.size}, algorithm={self.algorithm!r}, mode={self.mode})"


for _index, _name in enumerate(PreparedCall.FIELDS):
    setattr(PreparedCall, _name, property(lambda call, _index=_index: call.fields[_index]))
del _index, _name


def run_solve(kernel, call: PreparedCall, ws: Workspace, cells, jump_bits, jump_table, grid, cost_index, cost_table,
              sx: int, sy: int, gx: int, gy: int, mode: int, budget: int, bound_rows, bounds, overlay) -> tuple:
    """Run :func:`pathserver.core.query.solve` for ``call`` on the grids given (``grid``: the
    one JPS+'s table was built for) and ``ws``: the one place its arguments are written.
    kernel: a compiled copy of solve, or None for the call's own (bound on first use,
    :meth:`PreparedCall.bind`). Returns solve's ``(status, flags, count, cost, length,
    expanded, sx, sy, gx, gy)``; the path is in ``ws.answer[:count]``."""
    (_, _, _, _, _, _, comps, _, _, _, _, heights, climb, _, weight, _, _, _, _, landmarks, _, _, own) = call.fields
    args = (cells, comps, jump_bits, jump_table, grid, cost_index, cost_table, heights, climb, sx, sy, gx, gy, mode,
            weight, budget, ws.work_float, ws.work_int, landmarks, bound_rows, bounds, overlay)
    if kernel is None:
        kernel = own if own is not None else call.bind(args)
    return kernel(*args)


def raise_for(status: int, call: PreparedCall, sx: int, sy: int, gx: int, gy: int, goal_at: str = "goal"):
    unit_w, unit_h = call.size
    if status == st.QUERY_START_BLOCKED:
        if call.snap:
            raise StartBlockedError("no cell of this map can hold a unit of this size", at=UNIT_SIZE.name)
        raise StartBlockedError(f"start ({sx}, {sy}) is blocked for a {unit_w}x{unit_h} unit", at="start")
    if status == st.QUERY_GOAL_BLOCKED:
        raise GoalBlockedError(f"{goal_at} ({gx}, {gy}) is blocked for a {unit_w}x{unit_h} unit", at=goal_at)
    if status == st.QUERY_SEARCH_LIMIT:
        raise SearchLimitError(
            f"max_expansions={call.budget} reached before the goal; pass allow_partial=True for a partial path",
            at=MAX_EXPANSIONS.name,
        )


#: The options a hex map fixes: its moves and their estimate.
HEX_FIXED = (DIAGONAL, HEURISTIC)


def check_hex_unit(unit_w: int, unit_h: int, gridmap: GridMap) -> None:
    """BadUnitSizeError unless a hex map takes a unit of this size: one size k (the hex
    ball of radius k - 1), no wider or taller than the map (2k - 1 cells)."""
    if unit_w != unit_h:
        raise BadUnitSizeError(f"a unit on a hex map has one size k (the cells within hex distance k - 1), "
                               f"got {unit_w}x{unit_h}", at=UNIT_SIZE.name)
    if 2 * unit_w - 1 > min(gridmap.width, gridmap.height):
        raise BadUnitSizeError(f"unit_size {unit_w} covers {2 * unit_w - 1} cells across, more than the map's "
                               f"{gridmap.width}x{gridmap.height}", at=UNIT_SIZE.name)


def prepare_call(gridmap: GridMap, key, unit_size, given: dict, rules: tuple | None = None) -> PreparedCall:
    """Check everything but the endpoints (``given``: the other options by name, as
    passed; ``rules``: the traversal rule set, from ``GridMap.traversal_rules``) and work
    out what the kernel gets; kept in the map's cache under ``key`` for the next call
    alike."""
    unit_w, unit_h = normalize_unit_size(unit_size, gridmap.width, gridmap.height)
    options = {}
    for option in SEARCH_OPTIONS:
        if option is not UNIT_SIZE:
            value = option.check(python_value(given[option.name]))
            options[option.name] = option.python_default if value is None else value
            if gridmap.hex and value not in (None, option.python_default) and option in HEX_FIXED:
                raise RequestError(f"{option.name} does not apply to hex maps: a hex cell has six neighbours, "
                                   "each a step of 1, estimated by the hex distance", at=option.name)
    if gridmap.hex:
        check_hex_unit(unit_w, unit_h, gridmap)
        diagonal_code = gridmap.hex
        heuristic_code = st.HEURISTIC_HEX + gridmap.hex - st.DIAGONAL_HEX
    else:
        diagonal_code = DIAGONALS[options[DIAGONAL.name]]
        if options[HEURISTIC.name] is None:
            heuristic_code = st.HEURISTIC_MANHATTAN if diagonal_code == st.DIAGONAL_NEVER else st.HEURISTIC_OCTILE
        else:
            heuristic_code = HEURISTICS[options[HEURISTIC.name]]
    max_expansions = options[MAX_EXPANSIONS.name]
    # Far beyond any map's node count: "no limit" in effect, and within the kernel's int64.
    budget = 0 if max_expansions is None else min(max_expansions, 2**62)
    use_heights = 0
    climb = 0.0
    heights = _NO_HEIGHTS
    if options[MAX_CLIMB.name] is not None and gridmap.heights is not None:
        use_heights = 1
        climb = options[MAX_CLIMB.name]
        heights = gridmap.heights
    layer = gridmap.layer_for(unit_w, unit_h, rules)
    cells, comps = layer.cells8() if diagonal_code == st.DIAGONAL_ALWAYS else (layer.cells, layer.comps)
    jps_ok = (
        layer.uniform and use_heights == 0 and diagonal_code == st.DIAGONAL_NO_CORNER_CUTTING
        and heuristic_code == st.HEURISTIC_OCTILE
    )
    if options[ALGORITHM.name] == "jps":
        if gridmap.hex:
            raise RequestError("algorithm 'jps' is for square maps; on a hex map 'auto' runs hex JPS where every "
                               "cost is 1, else A*", at=ALGORITHM.name)
        if not jps_ok:
            raise RequestError(
                "algorithm 'jps' needs uniform terrain cost, no max_climb, diagonal "
                "'no_corner_cutting' and the octile heuristic; use 'astar' or 'auto'",
                at=ALGORITHM.name,
            )
        use_jps = True
    else:
        use_jps = options[ALGORITHM.name] == "auto" and jps_ok and layer.open_share >= JPS_MIN_OPEN_SHARE
    # "auto" runs JPS+ once the layer's jump table is built (in the background, started
    # here), on any grid JPS qualifies for, clutter and mazes included (it beats A* there
    # too: bench/core.py); until then the
    # choice above answers. "jps" always scans online, and so does a search with a
    # budget: where a budget cuts it short depends on the algorithm, and the answer must
    # not change when the table lands. The table is read before its build is started:
    # the first call on a layer does not use it whatever the build's speed, so a one-off
    # query's answer is deterministic.
    table = None
    awaiting = options[ALGORITHM.name] == "auto" and jps_ok and budget == 0
    # Hex maps of uniform cost run hex JPS (pathserver.core.hexjps) on their layer's table,
    # built now if need be, under "auto", as JPS+ does: no budget (where one cuts a search
    # short depends on the algorithm), no heights, and open ground enough to pay.
    hex_table = None
    if (gridmap.hex and options[ALGORITHM.name] == "auto" and use_heights == 0 and budget == 0
            and layer.open_share >= HEX_JPS_MIN_OPEN_SHARE):
        hex_table = layer.hex_jump_table()
    if awaiting:
        table = layer.jump_table()
        awaiting = gridmap.start_jump_table(layer)
    # A* on terrain costs, and on any hex map, estimates with the layer's landmarks once
    # they are built (in the background, started here), on a graph with no more moves than
    # theirs (corners never cut; a hex map's six neighbours), where no budget or partial answer depends on the order of expansions: the
    # answer's cost is the same, and so the first call's answer. Read before the build is
    # started, as the jump table is.
    landmarks = _NO_LANDMARKS
    wants_landmarks = ((not layer.uniform or layer.hex) and budget == 0 and not options["allow_partial"]
                       and diagonal_code in (st.DIAGONAL_NO_CORNER_CUTTING, layer.hex))
    if wants_landmarks:
        built = layer.landmarks()
        landmarks = _NO_LANDMARKS if built is None else built
        wants_landmarks = gridmap.start_landmarks(layer)
    # JPS+ skips the directions its goal bounds rule out once they are built (on small
    # maps, in the background after the jump table), under the same rule: no budget or
    # partial answer depends on the order of expansions.
    bounds = (NO_BOUND_ROWS, NO_BOUNDS)
    wants_bounds = awaiting and not options["allow_partial"]
    if wants_bounds:
        built = layer.bounds()
        bounds = bounds if built is None else built
        wants_bounds = gridmap.start_bounds(layer)
    mode = st.pack_mode(
        diagonal_code, heuristic_code, SMOOTHING[options[SMOOTH.name]],
        st.ALGORITHM_JPS if use_jps or table is not None else st.ALGORITHM_ASTAR, options[SNAP.name],
        options["allow_partial"], options["line_of_sight"], layer.uniform, use_heights,
    )
    call = PreparedCall(
        size=(unit_w, unit_h), layer_key=layer.key, width=gridmap.width, height=gridmap.height, n=gridmap.width * gridmap.height,
        cells=cells, comps=comps, jump_bits=layer.jump_bits() if use_jps and table is None else _NO_JUMP_BITS,
        jump_table=hex_table if hex_table is not None else NO_JUMP_TABLE if table is None else table,
        cost_index=layer.cost_index, cost_table=layer.cost_table, heights=heights, climb=climb, mode=mode,
        weight=options["weight"], budget=budget,
        algorithm="jps+" if table is not None else "jps" if use_jps or hex_table is not None else "astar",
        generation=gridmap.generation, snap=options[SNAP.name], landmarks=landmarks, bound_rows=bounds[0],
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
    if wants_bounds and bounds[0] is NO_BOUND_ROWS:
        gridmap.layers.await_table(layer.key, key, "bounds")
        built = layer.bounds()
        if built is not None:
            gridmap.layers.table_built(layer.key, built, "bounds")
    return call


# -- many goals, avoided cells, traversal rules --------------------------------------



#: The options of a prepared call but the unit's size, at their defaults.
CALL_DEFAULTS = {option.name: option.python_default for option in SEARCH_OPTIONS if option is not UNIT_SIZE}


def prepared_call(gridmap: GridMap, unit_size, rules: tuple | None, given: dict,
                  prepare: bool = True) -> PreparedCall | None:
    """The prepared call of ``find_path`` for ``unit_size``, traversal ``rules`` and the
    options in ``given`` (raw values by name; the others at their defaults), checked and
    kept in the map's cache like find_path's own (the queries of
    :mod:`pathserver.grid.queries` use it for the unit's grids and their options).
    prepare=False: only a call already kept, else None (nothing checked)."""
    options = dict(CALL_DEFAULTS)
    options.update(given)
    size_type = type(unit_size)
    if size_type is tuple:
        size_type = (tuple, *map(type, unit_size))
    # Every value with its type: True == 1 and 1.0 == 1, but only one of each is valid.
    # The names are those of CALL_DEFAULTS, in its order (update keeps it).
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
        call = prepare_call(gridmap, key, unit_size, options, rules)
    try:
        layers.touch(call.layer_key)
    except KeyError:
        layers.forget(key)
    return call


def unit_boxes(call: PreparedCall, boxes: np.ndarray) -> tuple:
    """``(boxes, unit_w, unit_h)``: avoided ``boxes`` as the kernels lay them for the
    unit of ``call`` (they block the anchors whose footprint overlaps them). On a square
    map, as they are with the unit's size; on a hex map, a unit of size k's anchors there,
    the cells within hex distance k - 1 (:func:`pathserver.core.avoid.hex_anchors`),
    laid as a 1 x 1 unit's."""
    unit_w, unit_h = call.size
    if call.diagonal < st.DIAGONAL_HEX or unit_w == 1 or not len(boxes):
        return boxes, unit_w, unit_h
    return hex_anchors(boxes, call.diagonal, unit_w - 1, call.width, call.height), 1, 1


def traversal_rules(gridmap: GridMap, traversal) -> tuple | None:
    """``traversal`` checked by the options' rule, as the map's rule set (None: none)."""
    return gridmap.traversal_rules(checked(TRAVERSAL, traversal))


def avoid_boxes(gridmap: GridMap, avoid) -> np.ndarray:
    """``avoid`` checked by the options' rule, as boxes clipped to the map (maybe none)."""
    value = checked(AVOID, avoid)
    return NO_BOXES if value is None else blocker_boxes(gridmap, value)

