"""The search of a path on a map with floors or links (issue #35): JPS+ with the links'
sources as jump points (:mod:`pathserver.core.links_jps`) where JPS+ qualifies, else A*
over the grid and the links (:mod:`pathserver.core.links`).

JPS+ qualifies as it does on maps without links: uniform terrain cost, diagonal
``no_corner_cutting``, the octile estimate, no ``max_climb``, and no ``max_expansions``
(where a budget stops a search depends on the algorithm, and A* was the first to answer
on these maps); ``algorithm="astar"`` keeps A*. The jump table (8 bytes a cell) is built
on first use, once per map generation, unit layer and traversal rule set, and kept
while the map is; the layer's goal bounds are built in the background as on maps
without links, and read once in place (the same costs; among equally short paths the
one taken may change then, as it does there).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from pathserver.core import status as st
from pathserver.core.jpsplus import fits as jump_table_fits, jump_table_stops
from pathserver.core.jit import bound
from pathserver.core.links_jps import link_rows, path_links
from pathserver.grid.gridmap import GridMap
from pathserver.grid.layers import JUMP_TABLE_MAX_CELLS, readonly
from pathserver.grid.prepared import (
    CALL_DEFAULTS,
    NO_BOUND_ROWS,
    NO_BOUNDS,
    SMOOTHING,
    PathResult,
    PreparedCall,
    prepared_call,
    workspace,
)
from pathserver.options import ALGORITHM, SMOOTH


@dataclass(eq=False)
class LinkJumps:
    """JPS+'s arrays for one layer of a map with links.

    table: int8 (H * W, 8), :func:`pathserver.core.jpsplus.jump_table_stops` of the
    layer's cells with the links' sources as stops. sources: int64 (E,), the nodes
    ``y * W + x`` links leave, each once. rows: :func:`pathserver.core.links_jps.link_rows`.
    stride: the rows of a floor and the blocked one after it. layer: the unit's layer,
    whose goal bounds (of the grid without links, built in the background on the maps
    that get them) the search reads once they are in place; bounds: those, read-only
    (as the empty ones: the kernel's argument types stay the same), once read. kernel:
    :func:`pathserver.core.links_jps.path_links` bound to this layer's argument types
    (see :func:`pathserver.core.jit.bound`) once it has run, else None.
    """

    table: np.ndarray
    sources: np.ndarray
    rows: tuple
    stride: int
    layer: object
    bounds: tuple = (NO_BOUND_ROWS, NO_BOUNDS)
    kernel: object = None


# Per map generation (weakly: a map no longer in use drops them), by the prepared call's
# layer key, which holds the unit's size and the traversal rules; and by ("fast", unit
# size) what fast_path needs, or None where it does not answer.
_kept: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def jps_qualifies(call: PreparedCall, algorithm) -> bool:
    """Whether a path for ``call`` (prepared with A*) searches with JPS+."""
    mode = call.mode
    return (algorithm != "astar" and call.budget == 0 and (mode >> st.MODE_UNIFORM) & 1 == 1
            and (mode >> st.MODE_USE_HEIGHTS) & 1 == 0
            and (mode >> st.MODE_DIAGONAL) & st.DIAGONAL_MASK == st.DIAGONAL_NO_CORNER_CUTTING
            and (mode >> st.MODE_HEURISTIC) & st.HEURISTIC_MASK == st.HEURISTIC_OCTILE
            and call.n <= JUMP_TABLE_MAX_CELLS and jump_table_fits(call.height, call.width))


def link_jumps(gridmap: GridMap, call: PreparedCall, rules: tuple | None) -> LinkJumps:
    """The :class:`LinkJumps` of ``call``'s layer under ``rules`` (built on first use)."""
    by_layer = _kept.get(gridmap)
    jumps = None if by_layer is None else by_layer.get(call.layer_key)
    if jumps is not None:
        return jumps
    entries = gridmap.link_arrays(rules)[4]
    sources = (entries[:, 1].astype(np.int64) * gridmap.width + entries[:, 0].astype(np.int64))
    stops = np.zeros(call.n, dtype=np.uint8)
    stops[sources] = 1
    table = jump_table_stops(call.cells, stops)
    rows = link_rows(call.cells, call.comps, sources, *gridmap.link_arrays(rules)[:3])
    for array in (table, sources, *rows):
        array.setflags(write=False)
    layer = gridmap.layer_for(*call.size, rules)
    gridmap.start_bounds(layer)
    jumps = LinkJumps(table, sources, rows, gridmap.floor_rows, layer)
    with _lock:
        _kept.setdefault(gridmap, {})[call.layer_key] = jumps
    return jumps


def _run(jumps: LinkJumps, call: PreparedCall, first, to, cost, ids, sx, sy, gx, gy, smooth, floors, ws) -> tuple:
    """:func:`pathserver.core.links_jps.path_links` for ``call`` on ``jumps``' layer: the
    one place its arguments are written."""
    if jumps.bounds[0] is NO_BOUND_ROWS:
        built = jumps.layer.bounds()
        if built is not None:
            jumps.bounds = tuple(readonly(array.view()) for array in built)
    args = (call.cells, call.comps, jumps.table, sx, sy, gx, gy, call.budget, first, to, cost, ids, jumps.sources,
            *jumps.rows, *jumps.bounds, smooth, jumps.stride, floors, ws.work_float, ws.work_int)
    kernel = jumps.kernel
    if kernel is None:
        kernel = jumps.kernel = bound(path_links, args)
    return kernel(*args)


def jump_search(gridmap: GridMap, call: PreparedCall, rules: tuple | None, sx: int, sy: int, gx: int, gy: int,
                ws) -> tuple:
    """JPS+ from (sx, sy) to (gx, gy), cells of the stacked grid the unit stands on, where
    :func:`jps_qualifies`: ``(found, cost, expanded, path, taken)``, ``path`` int32 (n, 2)
    the unsmoothed stacked cells, ``taken`` int64 (m, 2) ``[i, link]``."""
    first, to, cost, ids, _ = gridmap.link_arrays(rules)
    status, expanded, total, _, path, taken = _run(link_jumps(gridmap, call, rules), call, first, to, cost, ids,
                                                    sx, sy, gx, gy, st.SMOOTH_NONE, 1, ws)
    return status == st.SEARCH_FOUND, float(total), int(expanded), path, taken


# find_path's defaults but smooth, as the options' own objects (find_path passes these
# very objects for an option left alone).
_DEFAULTS = tuple((name, value) for name, value in CALL_DEFAULTS.items() if name != SMOOTH.name)


def _fast_entry(gridmap: GridMap, unit_size: int):
    """What :func:`fast_path` needs for ``unit_size`` at the default options, or None
    where JPS+ does not qualify; kept on the map."""
    key = ("fast", unit_size)
    by_layer = _kept.get(gridmap)
    if by_layer is not None and key in by_layer:
        return by_layer[key]
    call = prepared_call(gridmap, unit_size, None, {**CALL_DEFAULTS, ALGORITHM.name: "astar"})
    entry = None
    if jps_qualifies(call, ALGORITHM.python_default):
        first, to, cost, ids, _ = gridmap.link_arrays(None)
        entry = (call, link_jumps(gridmap, call, None), first, to, cost, ids, call.cells, gridmap.width,
                 gridmap.floor_height, gridmap.floor_rows, gridmap.floors)
    with _lock:
        _kept.setdefault(gridmap, {})[key] = entry
    return entry


def _point(point, width: int, floor_height: int, floor_rows: int, floors: int, cells):
    """A point ``(x, y)`` or ``(x, y, floor)`` of Python ints on the map and standable, as
    its stacked ``(x, y)``; None for anything else (the general way checks it)."""
    kind = point.__class__
    if kind is not tuple and kind is not list:
        return None
    if len(point) == 2:
        x, y = point
        floor = 0
    elif len(point) == 3:
        x, y, floor = point
    else:
        return None
    if x.__class__ is not int or y.__class__ is not int or floor.__class__ is not int:
        return None
    if not (0 <= x < width and 0 <= y < floor_height and 0 <= floor < floors):
        return None
    y += floor * floor_rows
    if cells[y, x] == 0:
        return None
    return x, y


def fast_path(gridmap: GridMap, start, goal, unit_size, given: dict, traversal):
    """find_path's answer on a map with floors or links for the common call, in one
    kernel call: one goal, an int unit size, no traversal, every option at its default
    but ``smooth``, endpoints of Python ints the unit stands on, and JPS+ qualifying.
    None for any other call: the general way (find_path_linked) answers it, alike."""
    if traversal is not None or goal is None or unit_size.__class__ is not int:
        return None
    for name, value in _DEFAULTS:
        if given[name] is not value:
            return None
    smooth = given[SMOOTH.name]
    if smooth.__class__ is not str or smooth not in SMOOTHING:
        return None
    entry = _fast_entry(gridmap, unit_size)
    if entry is None:
        return None
    call, jumps, first, to, cost, ids, cells, width, floor_height, floor_rows, floors = entry
    source = _point(start, width, floor_height, floor_rows, floors, cells)
    target = _point(goal, width, floor_height, floor_rows, floors, cells)
    if source is None or target is None:
        return None
    status, expanded, total, length, points, taken = _run(
        jumps, call, first, to, cost, ids, source[0], source[1], target[0], target[1], SMOOTHING[smooth], floors,
        workspace(call.n))
    return PathResult("found" if status == st.SEARCH_FOUND else "no_path", points, total, length, int(expanded),
                      _answer(start, floors), _answer(goal, floors), generation=gridmap.generation, algorithm="jps+",
                      links=taken)


def _answer(point, floors: int) -> tuple:
    """An endpoint as the general way's answer gives it: ``(x, y, floor)`` on a map of
    several floors, ``(x, y)`` on one."""
    return (point[0], point[1], point[2] if len(point) == 3 else 0) if floors > 1 else (point[0], point[1])
