"""The queries beyond one path: ``reachable``, ``field``, ``next_steps`` and
``check_block``, each answered by its function of :mod:`pathserver.grid.queries`."""

from __future__ import annotations

import numpy as np

from pathserver import arrays
from pathserver.errors import TooLargeError
from pathserver.grid import queries
from pathserver.options import FUNCTIONS
from pathserver.protocol.replies import ok_reply
from pathserver.protocol.requests import QueryRequest
from pathserver.server.spaces import grid_points


#: Most cells one ``field`` reply holds (a 4096 x 4096 map: 64 MiB of float32).
MAX_FIELD_CELLS = 4096 * 4096


def handle_query(request: QueryRequest, registry) -> dict:
    """``reachable``, ``field``, ``next_steps`` and ``check_block``: the request's points
    turned into grid units, then the op's function of :mod:`pathserver.grid.queries`."""
    gridmap = registry.get(request.map)
    op = request.op
    args = dict(request.args)
    space = request.space
    for key in ("start", "goals", "positions", "points", "cells"):
        if key in args:
            args[key] = grid_points(gridmap, args[key], space)
    if "rects" in args and space == "world" and args["rects"]:
        rects = np.asarray(args["rects"], dtype=np.float64)
        args["rects"] = np.column_stack((grid_points(gridmap, rects[:, :2], space), rects[:, 2:] / gridmap.cell_size))
    if op == "field":
        x, y, w, h = args.get("region") or (0, 0, gridmap.width, gridmap.height)
        if w * h > MAX_FIELD_CELLS:
            raise TooLargeError(f"a field of {w} x {h} cells; at most {MAX_FIELD_CELLS} in one reply (ask for a "
                                "'region')", at="region")
    answer = getattr(queries, FUNCTIONS[op])(gridmap, **args)
    fields = {"map": request.map, "gen": gridmap.generation}
    if op == "reachable":
        cells, costs = answer
        fields.update(cells=arrays.to_bin(cells, arrays.INT32), costs=arrays.to_bin(costs, arrays.FLOAT32))
    elif op == "field":
        fields.update(width=int(w), height=int(h), origin=[int(x), int(y)], cost=arrays.to_bin(answer, arrays.FLOAT32))
    elif op == "next_steps":
        steps, remaining = answer
        if space == "world":
            steps = (steps + 0.5) * gridmap.cell_size + np.asarray(gridmap.origin, dtype=np.float64)
        if request.packed:
            fields["steps"] = arrays.to_bin(steps, arrays.FLOAT32)
        else:
            fields["steps"] = (steps if space == "world" else steps.astype(np.int64)).tolist()
        fields["remaining"] = arrays.to_bin(remaining, arrays.FLOAT32)
    else:
        fields["disconnected"] = [list(pair) for pair in answer]
    return ok_reply(request.id, fields)

