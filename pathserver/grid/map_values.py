"""What a :class:`~pathserver.grid.gridmap.GridMap` is built from, checked: the shape and
layout (:func:`hex_code`), floors stacked into one grid (:func:`stack_layers`), terrain
costs, heights, the world transform, tags and unit classes. Each check raises MapLoadError
with the field at fault.
"""

from __future__ import annotations

import math

import numpy as np

from pathserver.errors import MapLoadError, RequestError
from pathserver.grid.layers import readonly
from pathserver.grid.links import floor_rows, stack_floors
from pathserver.hexes import LAYOUTS, SHAPES, check_layout, tile_size_of, world_centre
from pathserver.core.status import DIAGONAL_HEX


def hex_code(shape: str, layout: str | None) -> int:
    """The kernels' DIAGONAL_HEX_* code of a hex map's ``layout``, 0 for a square map;
    MapLoadError at ``shape`` / ``layout`` for a shape or layout not known, a hex map
    without a layout or a square map with one."""
    if shape not in SHAPES:
        raise MapLoadError(f"shape must be one of {', '.join(map(repr, SHAPES))}, got {shape!r}", at="shape")
    if shape == "square":
        if layout is not None:
            raise MapLoadError("layout is for hex maps (shape 'hex')", at="layout")
        return 0
    try:
        check_layout(layout)
    except RequestError as exc:
        raise MapLoadError(exc.message, at=exc.at) from None
    # The kernels' codes follow hexes.LAYOUTS' order.
    return DIAGONAL_HEX + LAYOUTS.index(layout)




def check_tags(tags, tag_names, classes, shape) -> tuple:
    """``(tags, tag_names, classes)`` checked for a map of ``shape``: tags uint8 (H, W)
    read-only or None; tag_names ``{name: value}``, values 1..255 and distinct; classes
    ``{name: {tag name: None | multiplier >= 1}}`` naming only known tags."""
    if tags is not None:
        tags = np.asarray(tags)
        if tags.shape != shape:
            raise MapLoadError(f"tags has shape {tags.shape}, walkable has {shape}", at="tags")
        if tags.dtype.kind not in "biu" or (tags.size and (tags.min() < 0 or tags.max() > 255)):
            raise MapLoadError("tags must be integers 0..255 (0: untagged)", at="tags")
        tags = readonly(np.ascontiguousarray(tags, dtype=np.uint8))
    names = {}
    if tag_names is not None and not isinstance(tag_names, dict):
        raise MapLoadError(f"tag_names must map names to values 1..255, got {type(tag_names).__name__}",
                           at="tag_names")
    for name, value in (tag_names or {}).items():
        if not isinstance(name, str) or not name:
            raise MapLoadError(f"tag names must be non-empty strings, got {name!r}", at="tag_names")
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= 255:
            raise MapLoadError(f"tag {name!r} must have a value 1..255, got {value!r}", at=f"tag_names.{name}")
        names[name] = int(value)
    if len(set(names.values())) != len(names):
        raise MapLoadError("two tag names share a value", at="tag_names")
    if names and tags is None:
        raise MapLoadError("tag_names need a tags layer", at="tag_names")
    checked = {}
    if classes is not None and not isinstance(classes, dict):
        raise MapLoadError(f"classes must map names to {{tag: None | multiplier}}, got {type(classes).__name__}",
                           at="classes")
    for unit_class, rules in (classes or {}).items():
        if not isinstance(unit_class, str) or not unit_class or not isinstance(rules, dict):
            raise MapLoadError(f"classes must map names to {{tag: None | multiplier}}, got {unit_class!r}",
                               at="classes")
        for tag, multiplier in rules.items():
            if tag not in names:
                raise MapLoadError(f"class {unit_class!r} names the unknown tag {tag!r}",
                                   at=f"classes.{unit_class}")
            if multiplier is not None and (isinstance(multiplier, bool) or not isinstance(multiplier, (int, float))
                                           or not math.isfinite(multiplier) or multiplier < 1):
                raise MapLoadError(f"class {unit_class!r}: tag {tag!r} takes None or a number >= 1, "
                                   f"got {multiplier!r}", at=f"classes.{unit_class}.{tag}")
        checked[unit_class] = {tag: None if m is None else float(m) for tag, m in rules.items()}
    return tags, names, checked


#: Odd and even swapped: the layout of a region starting on an odd row (column).
_SWAPPED = {"odd-r": "even-r", "even-r": "odd-r", "odd-q": "even-q", "even-q": "odd-q"}


def hex_region(layout: str, origin, cell_size, x: int, y: int) -> tuple:
    """``(origin, layout)`` of the hex map made of a region whose corner is cell ``(x, y)``
    of a map of ``layout``: its cells keep their world centres, and a region starting on an
    odd row (``-r``) or column (``-q``) swaps odd and even."""
    corner = world_centre(layout, x, y, origin, cell_size)
    if (y if layout.endswith("-r") else x) & 1:
        layout = _SWAPPED[layout]
    zero = world_centre(layout, 0, 0, (0.0, 0.0), cell_size)
    return (corner[0] - zero[0], corner[1] - zero[1]), layout


def stack_layers(walkable, cost, heights, tags, floors: int, layout: str | None) -> tuple:
    """``(walkable, cost, heights, tags, floor_height)``: layers of ``floors`` floors,
    (floors, h, w) each, stacked into one grid (:func:`pathserver.grid.links.stack_floors`);
    2-D layers are one floor, or floors already stacked (an edit's arrays), and stay."""
    walkable = np.asarray(walkable)
    if walkable.ndim == 3:
        if walkable.shape[0] != floors:
            raise MapLoadError(f"walkable holds {walkable.shape[0]} floors, floors is {floors}", at="floors")
        floor_height = walkable.shape[1]
        rows = floor_rows(floor_height, layout)
        walkable = stack_floors(walkable, False, rows)
        cost = None if cost is None else stack_floors(np.asarray(cost, dtype=np.float64), 1.0, rows)
        heights = None if heights is None else stack_floors(np.asarray(heights, dtype=np.float32), 0.0, rows)
        tags = None if tags is None else stack_floors(np.asarray(tags), 0, rows)
        return walkable, cost, heights, tags, floor_height
    # (F - 1) * rows + H rows, two blocked rows between floors where floor_rows says so.
    stacked_rows = walkable.shape[0]
    floor_height = (stacked_rows + 1) // floors - 1
    wider = (stacked_rows + 2) // floors - 2
    if (stacked_rows + 2) % floors == 0 and floor_rows(wider, layout) == wider + 2:
        floor_height = wider
    return walkable, cost, heights, tags, floor_height


def checked_cost(walkable: np.ndarray, cost) -> tuple[np.ndarray, bool]:
    """``(cost, uniform)``: float64 costs, read-only, 1 on blocked cells (ones for None),
    and whether all are 1."""
    if cost is None:
        return readonly(np.ones(walkable.shape, dtype=np.float64)), True
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    if cost.shape != walkable.shape:
        raise MapLoadError(f"cost has shape {cost.shape}, walkable has {walkable.shape}")
    relevant = cost[walkable]
    if not np.all(np.isfinite(relevant)) or (relevant.size and relevant.min() < 1.0):
        raise MapLoadError("terrain costs of walkable cells must be finite and >= 1")
    cost = np.where(walkable, cost, 1.0)
    return readonly(cost), bool(np.all(cost == 1.0))


def checked_heights(walkable: np.ndarray, heights) -> np.ndarray | None:
    """float32 heights, finite and read-only, or None."""
    if heights is None:
        return None
    heights = np.ascontiguousarray(heights, dtype=np.float32)
    if heights.shape != walkable.shape:
        raise MapLoadError(f"heights has shape {heights.shape}, walkable has {walkable.shape}")
    if not np.all(np.isfinite(heights)):
        raise MapLoadError("heights must be finite")
    return readonly(heights)


def checked_world(origin, cell_size, hex_map: int) -> tuple:
    """``(origin, cell_size)``: origin a pair of finite floats; cell_size a finite float
    > 0, or on a hex map (``hex_map`` nonzero) maybe a tile size ``(w, h)``."""
    ox, oy = origin
    origin = (float(ox), float(oy))
    if hex_map and not isinstance(cell_size, (int, float)):
        try:
            cell_size = tile_size_of(cell_size)
        except RequestError as exc:
            raise MapLoadError(exc.message, at=exc.at) from None
    else:
        cell_size = float(cell_size)
        if not (math.isfinite(cell_size) and cell_size > 0):
            raise MapLoadError("cell_size must be finite and > 0", at="cell_size")
    if not all(map(math.isfinite, origin)):
        raise MapLoadError("origin must be finite", at="origin")
    return origin, cell_size
