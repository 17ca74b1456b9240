"""Grid and world coordinates on the wire: a request's points become cells here, and a
search's cells become the reply's points here, for every op."""

from __future__ import annotations

import math

import numpy as np

from pathserver.errors import OutOfBoundsError
from pathserver.grid.values import floor_cell
from pathserver.protocol.replies import PathAnswer


def grid_points(gridmap, points, space: str):
    """Points in ``space`` as grid units (the functions floor them to cells)."""
    if space == "grid" or len(points) == 0:
        # An empty list (check_block's cells when it gives only rects) has no pairs to move.
        return points
    return gridmap.world_to_grid(points)


def point_cell(gridmap, point, space: str, name: str) -> tuple[int, int]:
    """A wire point -> the grid cell containing it (float grid coordinates are floored)."""
    if space == "world":
        cx, cy = gridmap.world_to_cell(*point, at=name)
    else:
        cx, cy = floor_cell(*point, name)
    if not gridmap.in_bounds(cx, cy):
        shown = f"({point[0]}, {point[1]})" + (f" = cell ({cx}, {cy})" if space == "world" else "")
        raise OutOfBoundsError(
            f"{name} {shown} is outside the map: cells 0..{gridmap.width - 1} x 0..{gridmap.height - 1}", at=name
        )
    return cx, cy


def covered_cells(gridmap, x: float, y: float, w: float, h: float, at: str) -> tuple[int, int, int, int]:
    """The cell rectangle ``(x, y, w, h)`` a rectangle in grid units overlaps, clipped to
    the map; OutOfBoundsError when nothing of it lies on the map."""
    if not all(math.isfinite(v) for v in (x, y, x + w, y + h)):
        raise OutOfBoundsError("rectangle is too far outside the map", at=at)
    x0, y0 = max(math.floor(x), 0), max(math.floor(y), 0)
    x1, y1 = min(math.ceil(x + w), gridmap.width), min(math.ceil(y + h), gridmap.height)
    if x0 >= x1 or y0 >= y1:
        raise OutOfBoundsError(
            f"rectangle lies outside the map ({gridmap.width}x{gridmap.height} cells)", at=at
        )
    return x0, y0, x1 - x0, y1 - y0


def path_answer(gridmap, space: str, result, many: bool = False) -> PathAnswer:
    """A PathResult as the protocol's PathAnswer, coordinates in ``space``: cells become
    world points here, as world points become cells in :func:`point_cell`. many: the request
    gave ``goals`` (the answer says which was reached)."""
    if space == "world":
        path = gridmap.grid_to_world(result.path)
        start = list(gridmap.cell_to_world(*result.start))
        goal = list(gridmap.cell_to_world(*result.goal))
        if gridmap.hex:
            # Hexagons need not be regular: the waypoints' own length in the world.
            length = float(np.hypot(*np.diff(path, axis=0).T).sum())
        else:
            length = float(result.length) * gridmap.cell_size
    else:
        path = result.path
        sx, sy = result.start
        gx, gy = result.goal
        start = [int(sx), int(sy)]
        goal = [int(gx), int(gy)]
        length = float(result.length)
    # Positional, in PathAnswer's field order: keywords cost more on every reply.
    return PathAnswer(result.status, path, float(result.cost), length, int(result.expanded), start, goal,
                      result.start_snapped, result.goal_snapped, result.generation,
                      None if not many else -1 if result.goal_index is None else result.goal_index)

