"""The public search API: :func:`find_path` and :func:`find_paths`.

Validates once (:mod:`pathserver.grid.prepared`, by the rules of :mod:`pathserver.options`,
the wire's), then hands plain arrays to one compiled kernel
(:func:`pathserver.core.query.solve`), which trusts what it is given. Many goals, avoided
cells and traversal rules go the way of :mod:`pathserver.grid.avoid_search`.
"""

from __future__ import annotations

import os
import time
import threading
from concurrent.futures import ThreadPoolExecutor

from pathserver.core import status as st
from pathserver.errors import PathserverError, RequestError
from pathserver.grid import avoid_search, floor_points, linked
from pathserver.grid.avoid_search import find_path_more
from pathserver.grid.gridmap import GridMap
from pathserver.grid.link_jumps import fast_path
from pathserver.grid.prepared import (
    CALL_DEFAULTS,
    SMOOTHING,
    NO_OVERLAY,
    STATUS_NAMES,
    PathResult,
    cell_of,
    checked,
    endpoint_cell,
    new_workspace,
    prepare_call,
    prepared_call,
    raise_for,
    run_solve,
    thread_local,
    traversal_rules,
    workspace,
)
from pathserver.grid.values import python_value
from pathserver.options import ALGORITHM, AVOID_COST, DIAGONAL, GOALS, SMOOTH, WEIGHT

# find_path's defaults, the options' own objects: a call that leaves them alone passes
# these very objects, which the prepared call's lookup tests by identity.
_SMOOTH, _WEIGHT, _DIAGONAL, _ALGORITHM = (option.python_default for option in (SMOOTH, WEIGHT, DIAGONAL, ALGORITHM))


def _call_options(given: dict) -> dict:
    """The options of a prepared call (:data:`CALL_DEFAULTS`' names, their order) out of
    find_path's ``locals()``: its keywords are named as the options are."""
    return {name: given[name] for name in CALL_DEFAULTS}


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
    coordinates are floored to their cell. Returns a :class:`PathResult`; "no path" is a
    result, not an error.

    The options are the wire's, checked by the same rules (the table in docs/protocol.md,
    ``pathserver options``, each defined once in :mod:`pathserver.options`): a value the
    wire refuses is refused here too, with the same code, message and ``at``. None means
    an option's default; numpy values count as the Python values they hold. How ``auto``
    picks A*, JPS or JPS+, and how ``avoid`` is searched round: docs/design.md.

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
    if gridmap.linked:
        return find_path_linked(gridmap, start, goal, unit_size, _call_options(locals()), traversal, goals, avoid,
                                avoid_cost)
    if goal is None or goals is not None or avoid is not None or avoid_cost is not None or traversal is not None:
        return find_path_more(gridmap, start, goal, unit_size, _call_options(locals()), goals, avoid, avoid_cost,
                              traversal)
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
        call = prepare_call(gridmap, key, unit_size, _call_options(locals()))
    (_, layer_key, width, height, n, cells, _, jump_bits, jump_table, cost_index, cost_table, _, _, mode, _, budget,
     algorithm_name, generation, _, _, bound_rows, bounds, _) = call.fields
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

    # prepared.workspace() written out: one call less in the per-call overhead bench/core.py times.
    try:
        ws = thread_local.workspace
        if ws.n < n:
            ws = new_workspace(n)
    except AttributeError:  # this thread's first search
        ws = new_workspace(n)
    status, flags, count, cost, length, expanded, sx, sy, gx, gy = run_solve(
        None, call, ws, cells, jump_bits, jump_table, cells, cost_index, cost_table, sx, sy, gx, gy, mode, budget,
        bound_rows, bounds, NO_OVERLAY)
    if status > st.QUERY_NO_PATH:
        raise_for(status, call, sx, sy, gx, gy)
    return PathResult(
        STATUS_NAMES[status], ws.answer[:count].copy("K"), cost, length, expanded, (sx, sy), (gx, gy), flags,
        generation, algorithm_name,
    )



def find_path_linked(gridmap: GridMap, start, goal, unit_size, given: dict, traversal, goals=None, avoid=None,
                     avoid_cost=None) -> PathResult:
    """find_path on a map with floors or links (:func:`pathserver.grid.linked.find_path`):
    points ``(x, y)`` or ``(x, y, floor)``, every option but the algorithm (always A*);
    smoothing keeps both ends of every link."""
    if goals is not None and goal is not None:
        raise RequestError("pass goal or goals, not both", at=GOALS.name)
    if goals is None and goal is None:
        raise RequestError("find_path needs a goal (or goals)", at="goal")
    if goals is None and avoid is None and avoid_cost is None:
        # The common call (one goal, the defaults but smooth) in one kernel call: JPS+.
        fast = fast_path(gridmap, start, goal, unit_size, given, traversal)
        if fast is not None:
            return fast
    rules = None if traversal is None else traversal_rules(gridmap, traversal)
    call = prepared_call(gridmap, unit_size, rules, {**given, ALGORITHM.name: "astar"})
    boxes = floor_points.avoid_boxes(gridmap, avoid)
    avoid_cost = None if avoid_cost is None else checked(AVOID_COST, avoid_cost)
    smooth = SMOOTHING[python_value(given[SMOOTH.name]) or SMOOTH.python_default]
    return linked.find_path(gridmap, linked.grids_of(call, rules), start, goal, goals, boxes, avoid_cost, smooth,
                            python_value(given[ALGORITHM.name]))


def find_path_within(gridmap: GridMap, start, goal, unit_size, budget: int, *, avoid=None,
                     **options) -> PathResult | None:
    """``find_path(gridmap, start, goal, unit_size, avoid=avoid, **options)`` if its own
    search (the same call: JPS+ where find_path runs JPS+) finds the answer within
    ``budget`` expansions; else None, and then only find_path itself answers. An answer
    is find_path's: the same search, stopped early or not at all (a search expands the
    same nodes in the same order with or without a budget it does not reach). The
    server's loop answers short trips itself this way."""
    if avoid is not None:
        return avoid_search.find_path_within(gridmap, start, goal, unit_size, budget, avoid=avoid, **options)
    given = dict(CALL_DEFAULTS)
    given.update(options)
    call = prepared_call(gridmap, unit_size, None, given)
    sx, sy = endpoint_cell(start, "start", gridmap)
    gx, gy = endpoint_cell(goal, "goal", gridmap)
    mode, own = call.mode, call.budget
    if not own or own > budget:
        own = budget  # stopped at the budget: a partial answer would not be find_path's
        mode &= ~(1 << st.MODE_ALLOW_PARTIAL)
    ws = workspace(call.n)
    status, flags, count, cost, length, expanded, sx, sy, gx, gy = run_solve(
        None, call, ws, call.cells, call.jump_bits, call.jump_table, call.cells, call.cost_index, call.cost_table,
        sx, sy, gx, gy, mode, own, call.bound_rows, call.bounds, NO_OVERLAY)
    if status == st.QUERY_SEARCH_LIMIT and own != call.budget:
        return None
    if status == st.QUERY_NO_PATH and mode != call.mode:
        return None  # find_path gives the partial path to the nearest reachable cell: a search of its own
    if status > st.QUERY_NO_PATH:
        raise_for(status, call, sx, sy, gx, gy)
    return PathResult(STATUS_NAMES[status], ws.answer[:count].copy("K"), cost, length, expanded, (sx, sy), (gx, gy),
                      flags, call.generation, call.algorithm)


#: find_paths times this many queries in turn before it decides how to answer the rest.
PROBE_QUERIES = 8
#: Queries quicker than this (s, on average) are answered in turn, slower ones over all cores
#: (bench/batch_threads.py: threads win from about this on den520d and Boston_0_512).
THREADS_FROM_S = 6e-6
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 2, thread_name_prefix="pathserver-batch")
        return _pool


def find_paths(gridmap: GridMap, starts, goals, unit_size=1, *, errors: str = "raise", **options) -> list:
    """Many queries on one map: quick ones in turn, slower ones spread over all cores (the
    kernels release the GIL; a few queries timed first decide).

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
        raise RequestError(f"{len(starts)} starts but {len(goals)} goals", at=GOALS.name)

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
    # The first queries in turn, timed: threads pay only for searches long enough that the
    # kernel's time without the GIL outweighs their handing over of it (bench/godot_astar.py).
    # Spread over the batch, which may be sorted by length.
    step = max(1, n // PROBE_QUERIES)
    probed = range(0, min(n, step * PROBE_QUERIES), step)
    results: list = [None] * n
    began = time.perf_counter()
    for i in probed:
        results[i] = one(i)
    rest = [i for i in range(n) if i % step or i >= probed.stop]
    if time.perf_counter() - began < len(probed) * THREADS_FROM_S:
        for i in rest:
            results[i] = one(i)
        return results
    chunks = [rest[k::workers] for k in range(workers)]
    for chunk, answers in zip(chunks, _executor().map(lambda c: [one(i) for i in c], chunks)):
        for i, answer in zip(chunk, answers):
            results[i] = answer
    return results
