"""A map's cells on the wire: the bins of ``put_map`` and ``get_map`` <-> numpy arrays, in
one place for the server's handlers and the Python client (this module imports no numba).

Every layer is row-major from the top-left, cell ``(x, y)`` at index ``y * width + x``, and
its arrays are indexed ``[y, x]``:

- ``cells``: one byte a cell, ``0`` blocked, ``1..255`` walkable with that terrain cost;
- ``costs`` (optional): little-endian float32 a cell, the exact terrain costs of walkable
  cells (each finite and >= 1), overriding the bytes of ``cells``; ignored on blocked cells
  on the way in, ``0`` there on the way out;
- ``heights`` (optional): little-endian float32 a cell, finite;
- ``tags`` (optional): one byte a cell, stored with the map.

Going out (``get_map``, and the client's ``put_map``), a walkable cell's byte is its cost
rounded to the nearest int (halves up) and clamped to ``1..255``, and ``costs`` is sent only
when those bytes cannot say every cost: some cost is not a whole number, or above 255.
So a map whose costs are whole numbers up to 255 travels as one byte a cell, and a map read
with ``get_map`` and uploaded again with ``put_map`` is the same map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pathserver.errors import NonFiniteError, RequestError
from pathserver.options import REGION, wire_type

#: The largest width and height ``put_map`` takes.
MAX_SIDE = 4096
#: Bytes a cell of each layer takes on the wire.
LAYER_BYTES = {"cells": 1, "costs": 4, "heights": 4, "tags": 1}
_FLOAT32_LE = np.dtype("<f4")


@dataclass(frozen=True, eq=False)
class MapCells:
    """The cells of a map, or of a region of one, as numpy arrays indexed ``[y, x]``.

    walkable: bool (h, w).
    cost: float64 (h, w), the terrain cost of entering each walkable cell (values on
        blocked cells mean nothing); None when every walkable cell costs 1. See
        :attr:`cost_grid` for one array with ``inf`` on blocked cells.
    heights: float32 (h, w) or None; tags: uint8 (h, w) or None.

    What ``get_map`` says besides (the client's :meth:`from_reply`; defaults otherwise):
    name, gen (the map's generation), map_size (the whole map's ``(width, height)``),
    region (``(x, y, w, h)``, the cells these arrays cover), origin and cell_size (the
    whole map's world transform: cell ``(x, y)``'s centre is ``origin + (x + 0.5, y + 0.5)
    * cell_size``), tag_names (``{name: tag value}``) and classes (``{class: {tag name:
    None | multiplier}}``), the names of the ``tags`` layer's values and the map's unit
    classes (None: none; ``put_map`` sends them, ``get_map`` returns them), shape and
    layout (a hex map's: :mod:`pathserver.hexes`; its cell_size may be a tile size ``(w,
    h)``), floors and links (issue #35: the arrays then hold the ``floors`` layers one under
    another, floor 0 first, ``floors * h`` rows; links a :class:`pathserver.floors.Links`
    or None).

    ``pathserver.GridMap.from_cells(cells)`` makes a map to search in process from it.
    """

    walkable: np.ndarray
    cost: np.ndarray | None = None
    heights: np.ndarray | None = None
    tags: np.ndarray | None = None
    origin: tuple = (0.0, 0.0)
    cell_size: float | tuple = 1.0
    name: str | None = None
    gen: int | None = None
    map_size: tuple | None = None
    region: tuple | None = None
    tag_names: dict | None = None
    classes: dict | None = None
    shape: str = "square"
    layout: str | None = None
    floors: int = 1
    links: object = None

    @property
    def width(self) -> int:
        return self.walkable.shape[1]

    @property
    def height(self) -> int:
        return self.walkable.shape[0]

    @property
    def cells(self) -> np.ndarray:
        """uint8 (h, w): the ``cells`` bytes (0 blocked, else the cost rounded, 1..255)."""
        if self.cost is None:
            return self.walkable.view(np.uint8).copy()
        rounded = np.clip(np.floor(self.cost + 0.5), 1.0, 255.0)
        return np.where(self.walkable, rounded, 0.0).astype(np.uint8)

    @property
    def cost_grid(self) -> np.ndarray:
        """float64 (h, w): each cell's terrain cost, ``inf`` where blocked; what
        ``Client.put_map`` takes as a float array."""
        cost = np.ones(self.walkable.shape) if self.cost is None else self.cost.astype(np.float64)
        cost[~self.walkable] = np.inf
        return cost

    def needs_costs(self) -> bool:
        """Whether the ``cells`` bytes cannot say every walkable cell's cost (a cost not
        whole, or above 255): then ``costs`` goes on the wire too."""
        if self.cost is None:
            return False
        relevant = self.cost[self.walkable]
        return bool(np.any((relevant > 255.0) | (relevant != np.floor(relevant))))

    # -- to the wire ---------------------------------------------------------------------

    def to_wire(self, with_costs: bool | None = None) -> dict:
        """The layers as bins: ``{"cells", "costs"?, "heights"?, "tags"?}``, in that order.
        ``with_costs``: send ``costs`` or not; None decides by :meth:`needs_costs` (a
        region of a map passes the whole map's answer, as ``get_map`` does)."""
        wire = {"cells": self.cells.tobytes()}
        if with_costs if with_costs is not None else self.needs_costs():
            cost = np.ones(self.walkable.shape) if self.cost is None else self.cost
            wire["costs"] = np.where(self.walkable, cost, 0.0).astype(_FLOAT32_LE).tobytes()
        if self.heights is not None:
            wire["heights"] = np.ascontiguousarray(self.heights, dtype=_FLOAT32_LE).tobytes()
        if self.tags is not None:
            wire["tags"] = np.ascontiguousarray(self.tags, dtype=np.uint8).tobytes()
        return wire

    # -- from the wire -------------------------------------------------------------------

    @classmethod
    def from_wire(cls, width: int, height: int, cells, costs=None, heights=None, tags=None, **about) -> "MapCells":
        """The layers of a ``width x height`` map (or region) from their bins, checked as
        ``put_map`` checks them: RequestError / NonFiniteError ``at`` the layer's name.
        The arrays are read-only views of the bins where the bytes allow it (``cells``,
        ``heights``, ``tags``). ``about``: the metadata fields, as they are."""
        count = width * height
        cell_bytes = _layer(cells, "cells", count, required=True)
        cell_bytes = np.frombuffer(cell_bytes, dtype=np.uint8).reshape(height, width)
        walkable = cell_bytes != 0
        cost = None
        if costs is not None:
            values = np.frombuffer(_layer(costs, "costs", count), dtype=_FLOAT32_LE).reshape(height, width)
            relevant = values[walkable]
            if not np.all(np.isfinite(relevant)):
                x, y = _first_cell(walkable & ~np.isfinite(values))
                raise NonFiniteError(f"'costs' must be finite on walkable cells; cell ({x}, {y}) is "
                                     f"{values[y, x]}", at="costs")
            if relevant.size and relevant.min() < 1.0:
                x, y = _first_cell(walkable & (values < 1.0))
                raise RequestError(f"'costs' must be >= 1 on walkable cells; cell ({x}, {y}) is {values[y, x]}",
                                   at="costs")
            cost = values.astype(np.float64)
        elif count and cell_bytes.max() > 1:
            cost = cell_bytes.astype(np.float64)
        height_values = None
        if heights is not None:
            height_values = np.frombuffer(_layer(heights, "heights", count), dtype=_FLOAT32_LE)
            height_values = height_values.reshape(height, width)
            if not np.all(np.isfinite(height_values)):
                x, y = _first_cell(~np.isfinite(height_values))
                raise NonFiniteError(f"'heights' must be finite; cell ({x}, {y}) is {height_values[y, x]}",
                                     at="heights")
        tag_values = None
        if tags is not None:
            tag_values = np.frombuffer(_layer(tags, "tags", count), dtype=np.uint8).reshape(height, width)
        return cls(walkable, cost, height_values, tag_values, **about)

    @classmethod
    def from_reply(cls, reply: dict) -> "MapCells":
        """A ``get_map`` reply's cells and what it says about the map."""
        x, y, w, h = reply[REGION.name]
        return cls.from_wire(
            w, h * reply.get("floors", 1), reply["cells"], reply.get("costs"), reply.get("heights"), reply.get("tags"),
            origin=tuple(reply["origin"]), cell_size=reply["cell_size"], name=reply["map"], gen=reply["gen"],
            map_size=(reply["width"], reply["height"]), region=(x, y, w, h), tag_names=reply.get("tag_names"),
            classes=reply.get("classes"), shape=reply.get("shape", "square"), layout=reply.get("layout"),
            floors=reply.get("floors", 1), links=reply.get("links"),
        )

    # -- from the caller's arrays --------------------------------------------------------

    @classmethod
    def from_arrays(cls, walkable_or_costs, costs=None, heights=None, tags=None) -> "MapCells":
        """A map from numpy arrays indexed ``[y, x]``, as ``Client.put_map`` takes them.

        walkable_or_costs: bool: walkable cells (cost 1 each, or ``costs``'); an integer
            dtype: the ``cells`` bytes (0 blocked, 1..255 walkable with that cost); a float
            dtype: each cell's cost, ``inf`` meaning blocked, every other value finite and
            >= 1 (0, NaN or negative costs are refused rather than guessed at).
        costs: float, the exact costs of walkable cells (finite, >= 1; ignored on blocked
            cells), with a bool or integer first array only.
        heights: float, finite. tags: integers 0..255.

        Raises ValueError (naming a bad cell) or TypeError before anything is sent.
        """
        first = np.asarray(walkable_or_costs)
        if first.ndim != 2:
            raise ValueError(f"a map is a 2-D array indexed [y, x], got shape {first.shape}")
        shape = first.shape
        kind = first.dtype.kind
        if kind == "b":
            walkable, cost = first.astype(bool), None
        elif kind in "iu":
            _check_bytes(first, "the cells array")
            walkable = first != 0
            cost = first.astype(np.float64) if first.size and first.max() > 1 else None
        elif kind == "f":
            if costs is not None:
                raise ValueError("a float first array already holds the costs: pass costs= only with a bool or "
                                 "integer array")
            walkable = ~np.isposinf(first)
            cost = _checked_costs(first, walkable, "the cost array (inf: blocked)")
        else:
            raise TypeError(f"a map array must be bool, integer or float, got {first.dtype}")
        if costs is not None:
            cost = _checked_costs(_same_shape(costs, shape, "costs"), walkable, "costs")
        if cost is not None and np.all(cost[walkable] == 1.0):
            cost = None
        if heights is not None:
            heights = _same_shape(heights, shape, "heights").astype(np.float32)
            if not np.all(np.isfinite(heights)):
                x, y = _first_cell(~np.isfinite(heights))
                raise ValueError(f"heights must be finite; cell ({x}, {y}) is {heights[y, x]}")
        if tags is not None:
            tags = _same_shape(tags, shape, "tags")
            if tags.dtype.kind not in "iub":
                raise TypeError(f"tags must be integers 0..255, got {tags.dtype}")
            _check_bytes(tags, "tags")
            tags = tags.astype(np.uint8)
        return cls(walkable, cost, heights, tags)


def _layer(value, name: str, count: int, *, required: bool = False) -> bytes:
    """A layer's bin, checked for type and length; RequestError at the layer's name."""
    size = LAYER_BYTES[name]
    what = f"a bin of {count} bytes (width * height)" if size == 1 else \
        f"a bin of {count * size} bytes (width * height little-endian float32)"
    if value is None and required:
        raise RequestError(f"missing field '{name}' ({what})", at=name)
    if type(value) is not bytes:
        raise RequestError(f"'{name}' must be {what}, got {wire_type(value)}", at=name)
    if len(value) != count * size:
        raise RequestError(f"'{name}' must be {what}, got {len(value)} bytes", at=name)
    return value


def _first_cell(mask: np.ndarray) -> tuple[int, int]:
    """``(x, y)`` of the first True cell of ``mask`` in row-major order."""
    y, x = np.unravel_index(int(np.argmax(mask)), mask.shape)
    return int(x), int(y)


def _same_shape(array, shape: tuple, name: str) -> np.ndarray:
    array = np.asarray(array)
    if array.shape != shape:
        raise ValueError(f"{name} has shape {array.shape}, the map {shape}")
    return array


def _check_bytes(array: np.ndarray, name: str) -> None:
    if array.size and (array.min() < 0 or array.max() > 255):
        x, y = _first_cell((array < 0) | (array > 255))
        raise ValueError(f"{name} must hold 0..255; cell ({x}, {y}) is {array[y, x]}")


def _checked_costs(costs, walkable: np.ndarray, name: str) -> np.ndarray:
    """float64 costs; ValueError unless every walkable cell's is finite and >= 1."""
    costs = np.asarray(costs)
    if costs.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be numbers, got {costs.dtype}")
    costs = costs.astype(np.float64)
    bad = walkable & ~(np.isfinite(costs) & (costs >= 1.0))
    if bad.any():
        x, y = _first_cell(bad)
        raise ValueError(f"{name}: each walkable cell's cost must be finite and >= 1; cell ({x}, {y}) is "
                         f"{costs[y, x]}")
    return costs


def check_side(value, name: str) -> int:
    """A ``width`` / ``height``: an int (or a whole float) ``1..MAX_SIDE``; RequestError
    at ``name`` otherwise."""
    if type(value) is float and math.isfinite(value) and value.is_integer():
        value = int(value)
    if type(value) is not int:
        raise RequestError(f"'{name}' must be an int 1..{MAX_SIDE}, got {wire_type(value)}", at=name)
    if not 1 <= value <= MAX_SIDE:
        raise RequestError(f"'{name}' must be 1..{MAX_SIDE} cells, got {value}", at=name)
    return value
