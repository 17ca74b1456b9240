"""Landmarks: a stronger estimate for A* on maps with terrain costs (ALT: A*, landmarks and
the triangle inequality; Goldberg & Harrelson 2005).

For a few landmark cells ``L`` whose exact costs to and from every cell are kept, the
triangle inequality bounds the cost from ``n`` to the goal ``t`` from below twice over:

    cost(n, t) >= cost(n, L) - cost(t, L)        cost(n, t) >= cost(L, t) - cost(L, n)

The best of these over the landmarks, and of the octile bound, is the estimate: consistent,
so A* stays exact without reopening nodes.

The table (:func:`landmark_table`): float32 (H * W, 2 K), a cell's row ``[to L0, from L0,
to L1, from L1, ...]``, ``inf`` where there is no way, every value shrunk by a share that
keeps the estimate consistent under float32's rounding. A* reads it with
:func:`pathserver.core.astar.landmark_bound`. It is built on find_path's graph with
diagonals that never cut corners, no climb limit and the layer's terrain, and serves any
request whose graph has no more moves and no cheaper ones; on a hex map, on its six
neighbours (no other option changes a hex map's moves). Why it stays exact, and how
the landmarks are picked: docs/design.md, "Landmarks".
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.astar import min_cost
from pathserver.core.dijkstra import field, reach

#: Landmarks in a table: 128 bytes a cell. On maps with terrain costs 16 cut A*'s
#: expansions further than 8 or 4 do, and the table is built in the background
#: (bench/weighted.py prints A*'s expansions with them).
LANDMARKS = 16
#: A table whose values had to shrink by more than this share (costs so large, or steps
#: so cheap, that float32 cannot hold them finely enough) is not kept.
LEAST_SCALE = 0.9


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _farthest(costs, otherwise):
    """The node with the highest finite cost (the first of equals), else ``otherwise``."""
    found = otherwise
    far = -1.0
    for v in range(costs.shape[0]):
        if costs[v] < np.inf and costs[v] > far:
            far = costs[v]
            found = v
    return found


@njit(cache=True, nogil=True)
def landmark_table(cells, cost_index, cost_table, uniform, seed, count, out, work_float, work_int, diagonal):
    """Fill ``out`` (float32 (H * W, 2 * count)) with the costs to and from ``count``
    landmarks picked farthest first from the standable node ``seed``, scaled as the
    module docstring says, on the graph of ``diagonal``'s moves (DIAGONAL_NO_CORNER_CUTTING,
    or a hex map's layout). work_float, work_int: a workspace (:func:`pathserver.core.
    query.solve`'s). Returns (the landmarks' node ids, int64 (count,), repeated when fewer
    cells are reachable from ``seed``; the scale ``1 - d``: below :data:`LEAST_SCALE` the
    table is too coarse to keep)."""
    height, width = cells.shape
    n = height * width
    heights = np.zeros((1, 1), dtype=np.float32)
    region = np.array([0, 0, width, height], dtype=np.int64)
    to_cost = np.empty((height, width), dtype=np.float64)
    nearest = np.full(n, np.inf)  # each cell's lowest cost to the landmarks picked
    chosen = np.empty(count, dtype=np.int64)
    # The first landmark: the farthest cell from the seed.
    to_cost[:] = np.inf
    sources = np.array([seed], dtype=np.int64)
    field(cells, cost_index, cost_table, uniform, heights, 0, 0.0, diagonal, sources, np.inf, region, -1, to_cost,
          work_float, work_int)
    flat = to_cost.ravel()
    landmark = _farthest(flat, seed)
    largest = 0.0
    for k in range(count):
        chosen[k] = landmark
        to_cost[:] = np.inf
        sources[0] = landmark
        field(cells, cost_index, cost_table, uniform, heights, 0, 0.0, diagonal, sources, np.inf, region, -1,
              to_cost, work_float, work_int)
        for v in range(n):
            out[v, 2 * k] = flat[v]
            out[v, 2 * k + 1] = np.inf
            if flat[v] < nearest[v]:
                nearest[v] = flat[v]
            if flat[v] < np.inf and flat[v] > largest:
                largest = flat[v]
        y = landmark // width
        settled = reach(cells, cost_index, cost_table, uniform, heights, 0, 0.0, diagonal, landmark - y * width, y,
                        np.inf, work_float, work_int)
        g = work_float[0]
        for i in range(settled):
            v = work_int[0, i]
            out[v, 2 * k + 1] = g[v]
            if g[v] > largest:
                largest = g[v]
        # The next: the reachable cell whose nearest landmark is farthest.
        landmark = _farthest(nearest, landmark)
    scale = 1.0 - 4.0 * largest * 2.0 ** -24 / min_cost(cost_table, uniform)
    for v in range(n):
        for j in range(2 * count):
            out[v, j] = out[v, j] * scale
    return chosen, scale
