"""Grid and world coordinates on the wire: a request's points become cells here, and a
search's cells become the reply's points here, for every op."""

from __future__ import annotations

import math

import numpy as np

from pathserver.errors import OutOfBoundsError
from pathserver.floors import check_floor, check_floor_column
from pathserver.grid.values import floor_cell
from pathserver.protocol.replies import PathAnswer


def grid_points(gridmap, points, space: str, name: str = "points"):
    """Points in ``space`` as grid units (the functions floor them to cells). A point is
    ``[x, y]`` or ``[x, y, floor]`` (:func:`point_floors`): on a map of several floors
    the grid API gets triples, elsewhere pairs."""
    if len(points) == 0:
        # An empty list (check_block's cells when it gives only rects) has no pairs to move.
        return points
    floors = point_floors(gridmap, points, name)
    if floors is None and space == "grid":
        return points
    xy = np.array([point[:2] for point in points], dtype=np.float64) if floors is not None else points
    if space == "world":
        xy = gridmap.world_to_grid(xy)
    return xy if gridmap.floors == 1 else np.column_stack((np.asarray(xy, dtype=np.float64), floors))


def point_floors(gridmap, points, name: str):
    """The floor of each of ``points`` (a floor 0 for a pair) when any has one or the map
    has several floors, else None; OutOfBoundsError at ``name[i][2]`` for a floor the map
    does not have, RequestError for one that is not a whole number."""
    if isinstance(points, np.ndarray):
        if points.shape[1] == 2 and gridmap.floors == 1:
            return None
        return np.zeros(len(points)) if points.shape[1] == 2 else check_floor_column(points[:, 2], gridmap.floors,
                                                                                     name, 2)
    if gridmap.floors == 1 and all(len(point) == 2 for point in points):
        return None
    return check_floor_column(np.array([point[2] if len(point) > 2 else 0 for point in points]), gridmap.floors,
                              name, 2)


def endpoint(gridmap, point, space: str, name: str):
    """A request's ``start`` / ``goal`` as the grid API takes it: on a map of several
    floors ``(x, y, floor)`` with ``x, y`` its cell, elsewhere ``(x, y)`` in grid units
    (the cell in world space); a floor the map does not have is refused here."""
    floor = check_floor(point[2], gridmap.floors, f"{name}[2]") if len(point) > 2 else 0
    if gridmap.floors == 1:
        return point_cell(gridmap, point[:2], space, name) if space == "world" else point[:2]
    x, y = point_cell(gridmap, point[:2], space, name)
    return x, y, floor


def point_cell(gridmap, point, space: str, name: str) -> tuple[int, int]:
    """A wire point -> the grid cell containing it (float grid coordinates are floored)."""
    if space == "world":
        cx, cy = gridmap.world_to_cell(*point, at=name)
    else:
        cx, cy = floor_cell(*point, name)
    if not (0 <= cx < gridmap.width and 0 <= cy < gridmap.floor_height):
        shown = f"({point[0]}, {point[1]})" + (f" = cell ({cx}, {cy})" if space == "world" else "")
        raise OutOfBoundsError(
            f"{name} {shown} is outside the map: cells 0..{gridmap.width - 1} x 0..{gridmap.floor_height - 1}",
            at=name)
    return cx, cy


def covered_cells(gridmap, x: float, y: float, w: float, h: float, at: str) -> tuple[int, int, int, int]:
    """The cell rectangle ``(x, y, w, h)`` a rectangle in grid units overlaps, clipped to
    the map (one floor of it); OutOfBoundsError when nothing of it lies on the map."""
    if not all(math.isfinite(v) for v in (x, y, x + w, y + h)):
        raise OutOfBoundsError("rectangle is too far outside the map", at=at)
    x0, y0 = max(math.floor(x), 0), max(math.floor(y), 0)
    x1, y1 = min(math.ceil(x + w), gridmap.width), min(math.ceil(y + h), gridmap.floor_height)
    if x0 >= x1 or y0 >= y1:
        raise OutOfBoundsError(
            f"rectangle lies outside the map ({gridmap.width}x{gridmap.floor_height} cells)", at=at
        )
    return x0, y0, x1 - x0, y1 - y0


def path_answer(gridmap, space: str, result, many: bool = False) -> PathAnswer:
    """A PathResult as the protocol's PathAnswer, coordinates in ``space``: cells become
    world points here, as world points become cells in :func:`point_cell`. many: the request
    gave ``goals`` (the answer says which was reached). On a map of several floors the
    points are ``(x, y, floor)``; on a map with floors or links the answer has ``links``."""
    links = result.links
    start, goal = list(result.start), list(result.goal)
    if gridmap.floors > 1:
        start, goal = start + [0] * (3 - len(start)), goal + [0] * (3 - len(goal))
    if space == "world":
        path = result.path
        floors = path.shape[1] == 3
        if floors:
            path = np.column_stack((gridmap.grid_to_world(path[:, :2]), path[:, 2]))
        else:
            path = gridmap.grid_to_world(path)
        start = list(gridmap.cell_to_world(*start[:2])) + [float(v) for v in start[2:]]
        goal = list(gridmap.cell_to_world(*goal[:2])) + [float(v) for v in goal[2:]]
        if gridmap.hex or links is not None:
            # Hexagons need not be regular: the waypoints' own length in the world, the
            # moves over links left out (as in the grid length).
            steps = np.hypot(*np.diff(path[:, :2], axis=0).T)
            if links is not None and len(links):
                steps[links[:, 0]] = 0.0
            length = float(steps.sum())
        else:
            length = float(result.length) * gridmap.cell_size
    else:
        path = result.path
        start = [int(v) for v in start]
        goal = [int(v) for v in goal]
        length = float(result.length)
    # Positional, in PathAnswer's field order: keywords cost more on every reply.
    return PathAnswer(result.status, path, float(result.cost), length, int(result.expanded), start, goal,
                      result.start_snapped, result.goal_snapped, result.generation,
                      None if not many else -1 if result.goal_index is None else result.goal_index,
                      None if links is None else links.tolist())
