"""Request values as the Python API takes them, checked by the wire's rules: numpy values
as the Python values they hold (:func:`python_value`), rows of numbers as a float64 array
(:func:`number_array`), a point as its cell (:func:`floor_cell`), a unit size as ``(w,
h)`` (:func:`normalize_unit_size`) and how far its footprint reaches
(:func:`footprint_offsets`; footprints are laid out in :mod:`pathserver.grid.gridmap`),
and an edit's ``solid`` / ``cost`` (:func:`check_edit`).
"""

from __future__ import annotations

import math
from itertools import chain

import numpy as np

from pathserver.errors import BadUnitSizeError, OutOfBoundsError, RequestError
from pathserver.options import UNIT_SIZE


def footprint_offsets(unit_w: int, unit_h: int) -> tuple[int, int]:
    """How far the footprint reaches left and up from the unit's cell."""
    return (unit_w - 1) // 2, (unit_h - 1) // 2


_PLAIN = frozenset((int, float, bool, str, type(None)))
_SEQUENCES = frozenset((tuple, list))


def python_value(value):
    """numpy scalars and arrays as the Python values they hold (``.tolist()``), in a tuple,
    list or dict too; anything else as it is. The Python API takes numpy values wherever
    the wire takes numbers, bools or strings, and then checks them by the wire's rules."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if type(value) is tuple or type(value) is list:
        # Points and rectangles of plain numbers, the common case, are checked by C loops
        # over type sets: walking 100 goals one by one cost more than searching them.
        kinds = set(map(type, value))
        if kinds <= _PLAIN:
            return value
        if kinds <= _SEQUENCES and set(map(type, (v for row in value for v in row))) <= _PLAIN:
            return value
        return type(value)(map(python_value, value))
    if type(value) is dict:
        return {key: python_value(item) for key, item in value.items()}
    return value


def number_array(rows, width: int) -> np.ndarray:
    """float64 (n, width) of ``rows`` (a numpy array, or rows of ``width`` numbers as
    :func:`pathserver.options.number_rows` checks them); numbers past float's range become
    +-1e300, off any map. (``np.fromiter`` over the flattened rows is quicker than
    ``np.asarray`` on a sequence of tuples.)"""
    if isinstance(rows, np.ndarray):
        return rows.astype(np.float64, copy=False).reshape(-1, width)
    try:
        return np.fromiter(chain.from_iterable(rows), dtype=np.float64, count=len(rows) * width).reshape(-1, width)
    except OverflowError:
        return np.array([[min(max(v, -1e300), 1e300) for v in row] for row in rows], dtype=np.float64).reshape(
            -1, width)


def floor_cell(x, y, at: str | None = None) -> tuple[int, int]:
    """The cell that the point ``(x, y)`` (Python ints or floats, in grid units) falls
    in: each coordinate floored. OutOfBoundsError (at ``at``) for a non-finite one, which
    only a far-off world point brings here: the callers refuse NaN and infinities."""
    try:
        return math.floor(x), math.floor(y)
    except (OverflowError, ValueError):  # infinite, NaN
        raise OutOfBoundsError("coordinates are too far outside the map", at=at) from None




def normalize_unit_size(unit_size, width: int | None = None, height: int | None = None) -> tuple[int, int]:
    """``unit_size`` as ``(w, h)``: an int ``k`` means ``(k, k)``; None means 1.

    Checked by the wire's rule (:mod:`pathserver.options`: ints >= 1, whole floats, numpy
    values as the numbers they hold), which raises RequestError for a value of the wrong
    type and BadUnitSizeError for a size below 1 or not whole; and, given the map's size,
    BadUnitSizeError for a footprint larger than the map.
    """
    if type(unit_size) is int and unit_size >= 1 and (width is None or unit_size <= min(width, height)):
        return unit_size, unit_size
    w, h = UNIT_SIZE.check(python_value(unit_size)) or (1, 1)
    if width is not None and height is not None and (w > width or h > height):
        raise BadUnitSizeError(
            f"unit_size {w}x{h} is larger than the map ({width}x{height})", at=UNIT_SIZE.name
        )
    return w, h


def check_edit(solid: bool | None, cost: float | None) -> None:
    """RequestError unless an edit's ``solid`` / ``cost`` make an edit (see GridMap.edit)."""
    if solid is None and cost is None:
        raise RequestError("an edit needs solid or cost", at="solid")
    if cost is not None and not (math.isfinite(cost) and cost >= 1.0):
        raise RequestError("cost must be finite and >= 1", at="cost")
