"""The queries beyond one path, each answered by its function of
:mod:`pathserver.grid.queries` on the request's points in grid units."""

from __future__ import annotations

import numpy as np

from pathserver import arrays
from pathserver.errors import TooLargeError
from pathserver.grid import queries
from pathserver.options import GOALS, REGION
from pathserver.protocol.replies import ok_reply
from pathserver.protocol.requests import QueryRequest
from pathserver.server.spaces import endpoint, grid_points


#: Most cells one ``field`` reply holds (a 4096 x 4096 map: 64 MiB of float32).
MAX_FIELD_CELLS = 4096 * 4096


def _grid_args(request: QueryRequest, gridmap) -> dict:
    """The request's keyword arguments, its points turned into grid units."""
    args = dict(request.args)
    space = request.space
    if "start" in args:
        args["start"] = endpoint(gridmap, args["start"], space, "start")
    for key in (GOALS.name, "positions", "points", "cells"):
        if key in args:
            args[key] = grid_points(gridmap, args[key], space, key)
    if "rects" in args and space == "world" and args["rects"]:
        rects = args["rects"]
        moved = gridmap.world_rects_to_grid([rect[:4] for rect in rects])
        args["rects"] = [(*rect, *given[4:]) for rect, given in zip(moved.tolist(), rects)]
    return args


def _reply(request: QueryRequest, gridmap, **fields) -> dict:
    return ok_reply(request.id, {"map": request.map, "gen": gridmap.generation, **fields})


def handle_reachable(request: QueryRequest, registry) -> dict:
    gridmap = registry.get(request.map)
    cells, costs = queries.reachable(gridmap, **_grid_args(request, gridmap))
    return _reply(request, gridmap, cells=arrays.to_bin(cells, arrays.INT32), costs=arrays.to_bin(costs, arrays.FLOAT32))


def handle_field(request: QueryRequest, registry) -> dict:
    gridmap = registry.get(request.map)
    args = _grid_args(request, gridmap)
    x, y, w, h = args.get(REGION.name) or (0, 0, gridmap.width, gridmap.floor_height)
    if w * h * gridmap.floors > MAX_FIELD_CELLS:
        raise TooLargeError(f"a field of {w} x {h} cells; at most {MAX_FIELD_CELLS} in one reply (ask for a "
                            "'region')", at=REGION.name)
    cost = queries.distance_field(gridmap, **args)
    floors = {"floors": gridmap.floors} if gridmap.floors > 1 else {}
    return _reply(request, gridmap, width=int(w), height=int(h), origin=[int(x), int(y)], **floors,
                  cost=arrays.to_bin(cost, arrays.FLOAT32))


def handle_next_steps(request: QueryRequest, registry) -> dict:
    """``steps`` as the positions came: a bin of float32 pairs for a bin, else arrays."""
    gridmap = registry.get(request.map)
    steps, remaining = queries.next_steps(gridmap, **_grid_args(request, gridmap))
    if request.space == "world":
        world = gridmap.grid_to_world(steps[:, :2])
        steps = world if steps.shape[1] == 2 else np.column_stack((world, steps[:, 2]))
    if request.packed:
        shown = arrays.to_bin(steps, arrays.FLOAT32)
    else:
        shown = (steps if request.space == "world" else steps.astype(np.int64)).tolist()
    return _reply(request, gridmap, steps=shown, remaining=arrays.to_bin(remaining, arrays.FLOAT32))


def handle_check_block(request: QueryRequest, registry) -> dict:
    gridmap = registry.get(request.map)
    pairs = queries.check_block(gridmap, **_grid_args(request, gridmap))
    return _reply(request, gridmap, disconnected=[list(pair) for pair in pairs])
