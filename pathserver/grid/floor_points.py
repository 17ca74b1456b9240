"""Points, rectangles and avoided cells on a map with floors (issue #35): rows that may
carry a floor after them, checked once (:func:`rows_with_floors`), laid onto the stacked
grid (:func:`stacked_cells`, :func:`cell_boxes`, :func:`avoid_boxes`) and given back as
an answer names them (:func:`answer_points`).
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from pathserver.core.avoid import boxes_from
from pathserver.core.goals import snap_goals
from pathserver.errors import NonFiniteError, OutOfBoundsError, RequestError, TooLargeError
from pathserver.floors import check_floor_column
from pathserver.grid.gridmap import GridMap
from pathserver.grid.prepared import checked
from pathserver.grid.values import python_value
from pathserver.options import AVOID, MAX_AVOID, MAX_GOALS, Avoid

_NUMBERS = (int, float, np.integer, np.floating)



def rows_with_floors(value, width: int, at: str, shape: str, maximum: int) -> np.ndarray:
    """float64 (n, width + 1): rows of ``width`` numbers (points ``[x, y]``, rectangles ``[x,
    y, w, h]``), each maybe with a floor after them (0 when not), checked: finite numbers,
    whole floors, at most ``maximum`` rows. A numpy array of ``width`` or ``width + 1``
    columns passes as it is."""
    if isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[1] in (width, width + 1):
        rows = value.astype(np.float64)
    else:
        value = python_value(value)
        if not isinstance(value, (list, tuple)):
            raise RequestError(f"'{at}' must be an array of {shape}", at=at)
        lengths = set(map(len, value)) if set(map(type, value)) <= {list, tuple} else None
        if lengths is not None and len(lengths) == 1 and lengths <= {width, width + 1} and \
                set(map(type, chain.from_iterable(value))) <= {int, float}:
            # Plain rows of numbers, the common case: no walk number by number.
            return _with_floor_column(np.array(value, dtype=np.float64), width, at, maximum)
        rows = np.zeros((len(value), width + 1), dtype=np.float64)
        for i, row in enumerate(value):
            if not isinstance(row, (list, tuple)) or len(row) not in (width, width + 1):
                raise RequestError(f"each of '{at}' is {shape} or {shape[:-1]}, floor]", at=f"{at}[{i}]")
            for j, v in enumerate(row):
                if isinstance(v, bool) or not isinstance(v, _NUMBERS):
                    raise RequestError(f"each of '{at}' must be {shape} of numbers", at=f"{at}[{i}][{j}]")
                rows[i, j] = v
    return _with_floor_column(rows, width, at, maximum)


def _with_floor_column(rows: np.ndarray, width: int, at: str, maximum: int) -> np.ndarray:
    if len(rows) > maximum:
        raise TooLargeError(f"{len(rows)} {at}; at most {maximum}", at=at)
    if rows.shape[1] == width:
        rows = np.column_stack((rows, np.zeros(len(rows))))
    bad = ~np.isfinite(rows)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise NonFiniteError(f"'{at}' coordinates must be finite, got {rows[i, j]}", at=f"{at}[{i}][{j}]")
    floors = rows[:, width]
    bad = floors != np.floor(floors)
    if bad.any():
        i = int(np.argmax(bad))
        raise RequestError(f"a floor is a whole number, got {floors[i]}", at=f"{at}[{i}][{width}]")
    return rows


def _floors_of(gridmap: GridMap, rows: np.ndarray, column: int, at: str) -> np.ndarray:
    """int64 (n,): the floor column of ``rows``, each one of the map's (OutOfBoundsError)."""
    return check_floor_column(rows[:, column], gridmap.floors, at, column)


def stacked_cells(gridmap: GridMap, points, at: str, maximum: int = MAX_GOALS, minimum: int = 0) -> np.ndarray:
    """int64 (n, 2): each of ``points`` (``[x, y]`` or ``[x, y, floor]``, grid units,
    floored to their cell) as its cell of the stacked grid; OutOfBoundsError at
    ``at[i]`` for one off its floor."""
    rows = rows_with_floors(points, 2, at, "[x, y]", maximum)
    if len(rows) < minimum:
        raise RequestError(f"'{at}' needs at least {minimum} point", at=at)
    floors = _floors_of(gridmap, rows, 2, at)
    xy = np.floor(rows[:, :2])
    outside = (xy[:, 0] < 0) | (xy[:, 0] >= gridmap.width) | (xy[:, 1] < 0) | (xy[:, 1] >= gridmap.floor_height)
    if outside.any():
        i = int(np.argmax(outside))
        raise OutOfBoundsError(f"{at}[{i}] ({xy[i, 0]:.0f}, {xy[i, 1]:.0f}) is outside the map "
                               f"({gridmap.width}x{gridmap.floor_height})", at=f"{at}[{i}]")
    x, y = gridmap.stacked(xy[:, 0].astype(np.int64), xy[:, 1].astype(np.int64), floors)
    return np.column_stack((x, y))


def stacked_cell(gridmap: GridMap, point, at: str) -> tuple[int, int]:
    """One point as its cell of the stacked grid (see :func:`stacked_cells`)."""
    if type(point) is tuple or type(point) is list:
        # Whole numbers on the map, the common case, without numpy.
        if 2 <= len(point) <= 3 and all(type(v) is int for v in point):
            x, y, *floor = point
            floor = floor[0] if floor else 0
            if 0 <= x < gridmap.width and 0 <= y < gridmap.floor_height and 0 <= floor < gridmap.floors:
                return gridmap.stacked(x, y, floor)
    elif isinstance(point, np.ndarray):
        point = point.tolist()
    if not isinstance(point, (list, tuple)):
        raise RequestError(f"{at} must be [x, y] or [x, y, floor]", at=at)
    try:
        (x, y), = stacked_cells(gridmap, [point], at).tolist()
    except RequestError as error:  # at[0] -> at
        error.at = at if error.at == f"{at}[0]" else error.at.replace(f"{at}[0]", at, 1)
        raise
    return x, y


def answer_points(gridmap: GridMap, cells: np.ndarray) -> np.ndarray:
    """int32 (n, 2) stacked cells as an answer gives them: ``(x, y)`` on a map of one
    floor, ``(x, y, floor)`` on one of several."""
    cells = np.asarray(cells).reshape(-1, 2)
    if gridmap.floors == 1:
        return cells.astype(np.int32)
    out = np.empty((len(cells), 3), dtype=np.int32)
    out[:, 0], out[:, 1], out[:, 2] = gridmap.unstacked(cells[:, 0], cells[:, 1])
    return out


def answer_point(gridmap: GridMap, x: int, y: int) -> tuple:
    """One stacked cell as an answer gives it (see :func:`answer_points`)."""
    return (int(x), int(y)) if gridmap.floors == 1 else tuple(map(int, gridmap.unstacked(x, y)))


def floor_boxes(gridmap: GridMap, boxes: np.ndarray, floors: np.ndarray) -> np.ndarray:
    """int64 (K, 4) stacked boxes ``x0, y0, x1, y1`` of ``boxes`` given on ``floors``
    (clipped to their floor already, as :func:`pathserver.core.avoid.boxes_from` does)."""
    out = np.array(boxes, dtype=np.int64).reshape(-1, 4)
    _, out[:, 1] = gridmap.stacked(0, out[:, 1], floors)
    _, out[:, 3] = gridmap.stacked(0, out[:, 3], floors)
    return out


def avoid_boxes(gridmap: GridMap, avoid) -> np.ndarray:
    """int64 (K, 4) stacked boxes of ``avoid`` (a map ``{cells: [[x, y(, floor)], ...],
    rects: [[x, y, w, h(, floor)], ...]}`` or a checked :class:`pathserver.options.Avoid`),
    each clipped to its floor; empty for None."""
    if avoid is None:
        return np.zeros((0, 4), dtype=np.int64)
    if type(avoid) is Avoid:
        cells, rects = avoid.with_floors()
    else:
        if type(avoid) is not dict:
            checked(AVOID, avoid)  # refuses it with the option's own words
        for key in avoid:
            if key not in ("cells", "rects"):
                raise RequestError(f"'{AVOID.name}' takes 'cells' and 'rects', got {key!r}", at=f"{AVOID.name}.{key}")
        cells, rects = avoid.get("cells"), avoid.get("rects")
    return cell_boxes(gridmap, () if cells is None else cells, () if rects is None else rects,
                      f"{AVOID.name}.cells", f"{AVOID.name}.rects", AVOID.name)


def cell_boxes(gridmap: GridMap, cells, rects, cells_at: str, rects_at: str, at: str) -> np.ndarray:
    """int64 (K, 4) stacked boxes of ``cells`` ``[x, y(, floor)]`` (the cell each falls in)
    and ``rects`` ``[x, y, w, h(, floor)]`` (every cell each overlaps), each clipped to its
    floor: avoided cells, check_block's placement."""
    cells = rows_with_floors(cells, 2, cells_at, "[x, y]", MAX_AVOID)
    rects = rows_with_floors(rects, 4, rects_at, "[x, y, w, h]", MAX_AVOID)
    if len(cells) + len(rects) > MAX_AVOID:
        raise TooLargeError(f"{len(cells) + len(rects)} cells and rectangles; at most {MAX_AVOID}", at=at)
    bad = (rects[:, 2] <= 0) | (rects[:, 3] <= 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise RequestError("rectangle width and height must be > 0", at=f"{rects_at}[{i}]")
    cell_floors = _floors_of(gridmap, cells, 2, cells_at)
    rect_floors = _floors_of(gridmap, rects, 4, rects_at)
    out = []
    for floor in np.unique(np.concatenate((cell_floors, rect_floors))).tolist():
        boxes = boxes_from(np.ascontiguousarray(cells[cell_floors == floor, :2]),
                           np.ascontiguousarray(rects[rect_floors == floor, :4]), float(gridmap.width),
                           float(gridmap.floor_height))
        out.append(floor_boxes(gridmap, boxes, np.full(len(boxes), floor)))
    return np.concatenate(out) if out else np.zeros((0, 4), dtype=np.int64)


def snap_cells(gridmap: GridMap, call, cells, xy: np.ndarray, snap: bool) -> np.ndarray:
    """int64 (K, 2): each stacked cell of ``xy`` where the unit of ``call`` stands in ``cells``, or with
    ``snap`` the nearest such cell of its own floor; ``(-1, -1)`` where none."""
    if cells[xy[:, 1], xy[:, 0]].all():
        return np.array(xy, dtype=np.int64)
    out = np.empty_like(xy, dtype=np.int64)
    rows = gridmap.floor_rows
    floors = xy[:, 1] // rows
    for floor in np.unique(floors).tolist():
        mine = floors == floor
        local = xy[mine].astype(np.int64)
        local[:, 1] -= floor * rows
        snapped = np.empty_like(local)
        # Label 0: any cell, so the block-local components are not read (the floor's rows
        # are a slice of the grid, its blocks not theirs).
        snap_goals(cells[floor * rows:floor * rows + gridmap.floor_height], call.comps, local, 1 if snap else 0,
                   snapped, call.diagonal)
        snapped[:, 1] = np.where(snapped[:, 0] >= 0, snapped[:, 1] + floor * rows, -1)
        out[mine] = snapped
    return out
