"""The search of a path on a map with floors or links (issue #35): JPS+ with the links'
sources as jump points (:mod:`pathserver.core.links_jps`) where JPS+ qualifies, else A*
over the grid and the links (:mod:`pathserver.core.links`).

JPS+ qualifies as it does on maps without links: uniform terrain cost, diagonal
``no_corner_cutting``, the octile estimate, no ``max_climb``, and no ``max_expansions``
(where a budget stops a search depends on the algorithm, and A* was the first to answer
on these maps); ``algorithm="astar"`` keeps A*. The jump table (8 bytes a cell) is built
on first use, once per map generation, unit layer and traversal rule set, and kept
while the map is.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from pathserver.core import status as st
from pathserver.core.jpsplus import fits as jump_table_fits, jump_cost, jump_table_stops
from pathserver.core.links import astar_links, trace_links
from pathserver.core.links_jps import jps_links, link_exits, trace_link_jumps
from pathserver.grid.gridmap import GridMap
from pathserver.grid.layers import JUMP_TABLE_MAX_CELLS
from pathserver.grid.prepared import PreparedCall, workspace


@dataclass(frozen=True, eq=False)
class LinkJumps:
    """JPS+'s arrays for one layer of a map with links.

    table: int8 (H * W, 8), :func:`pathserver.core.jpsplus.jump_table_stops` of the
    layer's cells with the links' sources as stops. sources: int64 (E,), the nodes
    ``y * W + x`` links leave, each once.
    """

    table: np.ndarray
    sources: np.ndarray


# Per map generation (weakly: a map no longer in use drops them), by the prepared call's
# layer key, which holds the unit's size and the traversal rules.
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
    for array in (table, sources):
        array.setflags(write=False)
    jumps = LinkJumps(table, sources)
    with _lock:
        _kept.setdefault(gridmap, {})[call.layer_key] = jumps
    return jumps


@dataclass(frozen=True, eq=False)
class LinkedPath:
    """A search's answer on a map with links: ``found``; ``cells`` int32 (n, 2) of the
    stacked grid, both ends included; ``links`` int64 (m, 2) ``[i, id]`` (the move from
    ``cells[i]`` is link ``id``); ``cost``; ``expanded``; ``algorithm`` (``"jps+"`` or
    ``"astar"``)."""

    found: bool
    cells: np.ndarray
    links: np.ndarray
    cost: float
    expanded: int
    algorithm: str


def search_linked(gridmap: GridMap, call: PreparedCall, rules: tuple | None, algorithm, sx: int, sy: int, gx: int,
                  gy: int) -> LinkedPath:
    """The cheapest way from (sx, sy) to (gx, gy), cells of the stacked grid standable for
    ``call``'s unit (checked by the caller), over the grid and the links under ``rules``.
    algorithm: the request's ``algorithm`` (``"astar"`` keeps A*)."""
    first, to, cost, ids, entries = gridmap.link_arrays(rules)
    ws = workspace(call.n)
    width = gridmap.width
    if jps_qualifies(call, algorithm):
        jumps = link_jumps(gridmap, call, rules)
        exits, groups = link_exits(call.cells, call.comps, gx, gy, jumps.sources, first, to, cost)
        status, end, expanded = jps_links(call.cells, call.comps, jumps.table, sx, sy, gx, gy, call.budget, first, to,
                                          cost, exits, groups, ws.work_float, ws.work_int)
        if status != st.SEARCH_FOUND:
            return LinkedPath(False, None, None, 0.0, int(expanded), "jps+")
        path, taken = trace_link_jumps(ws.work_float, ws.work_int, ids, width, sy * width + sx, end)
        return LinkedPath(True, path, taken, float(jump_cost(ws.work_float, end)), int(expanded), "jps+")
    mode = call.mode
    status, end, expanded = astar_links(
        call.cells, call.cost_index, call.cost_table, (mode >> st.MODE_UNIFORM) & 1, call.diagonal,
        (mode >> st.MODE_HEURISTIC) & st.HEURISTIC_MASK, sx, sy, gx, gy, call.budget, first, to, cost, entries,
        ws.work_float, ws.work_int)
    if status != st.SEARCH_FOUND:
        return LinkedPath(False, None, None, 0.0, int(expanded), "astar")
    path, taken = trace_links(ws.work_int[0], first, ids, width, sy * width + sx, end)
    return LinkedPath(True, path, taken, float(ws.work_float[0][end]), int(expanded), "astar")
