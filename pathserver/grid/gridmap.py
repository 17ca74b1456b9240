"""The map model: walkable cells, terrain costs, heights, a world transform, and the
per-unit-size cache built on one clearance annotation.

Grids are numpy arrays indexed ``[y, x]``; coordinates in the API are ``(x, y)``.
A :class:`GridMap` is an immutable snapshot: :meth:`GridMap.edit` returns a new map with
the next ``generation`` and re-annotates clearance only in the region the edit can reach.

Footprints. A unit of size ``w x h`` standing at cell ``(x, y)`` covers columns
``x - (w - 1) // 2 .. x + w // 2`` and rows ``y - (h - 1) // 2 .. y + h // 2``: centred
on its cell for odd sizes; for even sizes the cell is the upper-left one of the four
central cells (the unit's centre is that cell's lower-right corner).

Unit classes. An optional tag layer (uint8, 0 = untagged) names kinds of ground
(``tag_names``: ``{"water": 1, "forest": 2}``); a request's ``traversal`` rules (``{"water":
None, "forest": 3.0}``: None blocks the tag, a number >= 1 multiplies its cells' cost) or
one of the map's named rule sets (``classes``: ``{"boat": {"land": None}}``) make the unit
see another map. Each rule set gets its own walkable cells, clearance and costs
(:class:`~pathserver.grid.layers.Terrain`) and per-unit-size layers, cached like the
map's own.

The layers and what they are built from are in :mod:`pathserver.grid.layers`, the tables
they build in the background in :mod:`pathserver.grid.builds`, and the checks of request
values (unit sizes, points, edits) in :mod:`pathserver.grid.values`.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pathserver.core.clearance import compute_clearance, hex_clearance
from pathserver.errors import MapLoadError, OutOfBoundsError, RequestError
from pathserver.hexes import cell_at, world_centre
from pathserver.grid.cache import LayerCache, MadeOnce
from pathserver.grid.links import check_floors, check_links, floor_rows, link_arrays
from pathserver.grid.layers import (
    UNIFORM_COST_INDEX,
    UNIFORM_COST_TABLE,
    Terrain,
    UnitLayer,
    build_cost_index,
    build_layer,
    build_terrain,
    edit_cost_index,
    readonly,
)
from pathserver.grid.map_values import (
    check_tags, checked_cost, checked_heights, checked_world, hex_code, hex_region, stack_layers,
)
from pathserver.grid.values import check_edit, floor_cell, normalize_unit_size
from pathserver.options import TRAVERSAL, quoted

#: Maps larger than this many cells are refused before anything is allocated.
MAX_CELLS = 64 * 1024 * 1024
#: How many unit sizes one map generation keeps cached (least recently used evicted).
DEFAULT_CACHE_SIZES = 8


# The map file formats (pathserver.maps) build GridMaps, so they sit above the model, and
# the model imports none of them, not even lazily: GridMap.load / save reach them through
# this slot, which pathserver.maps fills when it is imported.
_FILE_FORMATS: dict = {}


def register_file_formats(load, save) -> None:
    """Called by :mod:`pathserver.maps.formats` with its ``load_map(path, **kwargs)`` and
    ``save_map(gridmap, path)``: what :meth:`GridMap.load` and :meth:`GridMap.save` call."""
    _FILE_FORMATS.update(load=load, save=save)


def _file_formats(verb: str):
    try:
        return _FILE_FORMATS[verb]
    except KeyError:
        raise RuntimeError(
            f"GridMap.{verb} needs the map file formats: import pathserver.maps first "
            "(`from pathserver import GridMap` does)"
        ) from None


class EditSeeds(NamedTuple):
    """What :meth:`GridMap.edit_many` hands the generation it makes (a map made with one
    is an edit: it gets no goal bounds, see :data:`~pathserver.grid.layers.
    BOUNDS_MAX_CELLS`), so that it redoes only what the edit reached.

    clearance: the new clearance, recomputed only where the edit can reach.
    cost_edit: on a map with terrain costs, ``(cost_table, cost_index, box)`` of the
        previous generation and the box ``(x0, y0, x1, y1)`` the edit touched (None: no
        cell); None on a uniform one.
    jump: the JPS+ tables of the previous generation by layer key, as ``(cells,
        table)``: a layer's table is then updated where the edit reached instead of built
        from scratch.
    pieces: likewise check_block's pieces, as ``(cells, {eight: pieces})``.
    landmarks: A*'s landmarks, handed on as they are by an edit that only blocks cells
        (no cost falls, no move is added: every bound they give stays a consistent lower
        bound); empty after any other edit.
    """

    clearance: np.ndarray
    cost_edit: tuple | None
    jump: dict
    pieces: dict
    landmarks: dict


class GridMap:
    """An immutable grid map snapshot.

    walkable: bool (H, W), indexed ``[y, x]``.
    cost: float64 (H, W) terrain cost of entering each cell, every value >= 1 and finite
        (blocked cells' cost is ignored); None means uniform cost 1.
    cost_index, cost_table: the same costs as the kernels read them, ``cost[y, x] ==
        cost_table[cost_index[y, x]]``: cost_table float64 (K,) the distinct costs sorted
        ascending, cost_index uint8 (H, W) (uint16 / uint32 past 256 / 65536 distinct
        costs). On a uniform map they are (1, 1) / (1,) placeholders, never read.
    heights: float32 (H, W) optional per-cell height (a request's ``max_climb`` blocks
        steeper steps); None means flat.
    origin: world position of the corner of cell (0, 0); cell_size: world size of a cell.
        A cell's centre in world units is ``origin + (x + 0.5, y + 0.5) * cell_size``.
    shape: ``"square"`` or ``"hex"``; layout: a hex map's offset layout (``"odd-r"``,
        ``"even-r"``, ``"odd-q"``, ``"even-q"``: Red Blob Games' offset coordinates), None
        on a square map. A hex cell has six neighbours, each step of length 1, and a unit
        of size k covers every cell within hex distance k - 1 of its own. ``hex``: the
        kernels' code of the layout, 0 on a square map.
    tags: uint8 (H, W) optional kinds of ground, 0 untagged; tag_names: ``{name: value}``
        (values 1..255); classes: named traversal rule sets, ``{"boat": {"land": None,
        "shallows": 2.0}}`` (None blocks a tag, a number >= 1 multiplies its cost). A
        request's ``traversal`` is one of the classes' names or such rules.
    """

    def __init__(
        self,
        walkable,
        cost=None,
        heights=None,
        *,
        origin=(0.0, 0.0),
        cell_size: float = 1.0,
        name: str | None = None,
        generation: int = 0,
        cache_sizes: int = DEFAULT_CACHE_SIZES,
        tags=None,
        tag_names: dict | None = None,
        classes: dict | None = None,
        shape: str = "square",
        layout: str | None = None,
        floors: int = 1,
        links=None,
        _edit: EditSeeds | None = None,
    ):
        self.hex = hex_code(shape, layout)
        self.shape = shape
        self.layout = layout
        try:
            self.floors = check_floors(floors)
        except RequestError as exc:
            raise MapLoadError(exc.message, at=exc.at) from None
        walkable, cost, heights, tags, self.floor_height = stack_layers(walkable, cost, heights, tags, self.floors,
                                                                         layout)
        #: The stacked grid's rows from one floor's first row to the next's.
        self.floor_rows = floor_rows(self.floor_height, layout)
        if walkable.ndim != 2 or walkable.shape[0] < 1 or walkable.shape[1] < 1:
            raise MapLoadError(f"walkable must be a non-empty 2-D array, got shape {walkable.shape}")
        if walkable.size > MAX_CELLS:
            raise MapLoadError(f"map of {walkable.shape[1]}x{walkable.shape[0]} cells exceeds {MAX_CELLS} cells")
        self.walkable = readonly(np.ascontiguousarray(walkable, dtype=bool))
        self.height, self.width = self.walkable.shape
        self.cost, self.uniform_cost = checked_cost(self.walkable, cost)
        if self.uniform_cost:
            self.cost_index, self.cost_table = UNIFORM_COST_INDEX, UNIFORM_COST_TABLE
        elif _edit is not None and _edit.cost_edit is not None:
            # An edit of a map with terrain costs: its previous table, index and the box
            # the edit touched.
            table, index, box = _edit.cost_edit
            if box is None:
                self.cost_table, self.cost_index = table, index
            else:
                self.cost_table, self.cost_index = edit_cost_index(self.cost, table, index, box)
        else:
            self.cost_table, self.cost_index = build_cost_index(self.cost)
        self.heights = checked_heights(self.walkable, heights)
        self.origin, self.cell_size = checked_world(origin, cell_size, self.hex)
        self.name = name
        self.generation = int(generation)
        self._walkable_u8 = readonly(self.walkable.view(np.uint8))
        if _edit is None:
            clearance = np.zeros(self.walkable.shape, dtype=np.uint16)
            if self.hex:
                hex_clearance(self._walkable_u8, self.hex, clearance)
            else:
                compute_clearance(self._walkable_u8, clearance, 0, 0, self.width, self.height)
        else:
            clearance = _edit.clearance
        self.clearance = readonly(clearance)
        self.tags, self.tag_names, self.classes = check_tags(tags, tag_names, classes, self.walkable.shape)
        self.links = self._checked_links(links)
        #: Whether the map has more than one floor or any link (issue #35): an attribute,
        #: as find_path reads it on every call.
        self.linked = self.floors > 1 or len(self.links) > 0
        self._link_cache = MadeOnce()
        #: The layers of the unit sizes used lately and find_path's prepared calls.
        self.layers = LayerCache(cache_sizes)
        # What the generation this one was edited from handed on (see EditSeeds), by
        # layer key; each seed is used once.
        if _edit is None:
            self._jump_seeds, self._piece_seeds, self._landmark_seeds = {}, {}, {}
        else:
            self._jump_seeds = dict(_edit.jump)
            self._piece_seeds = dict(_edit.pieces)
            self._landmark_seeds = dict(_edit.landmarks)
        # Made by edit(): no goal bounds (see EditSeeds).
        self._edited = _edit is not None

    # -- construction helpers -------------------------------------------------------

    @classmethod
    def from_ascii(cls, text: str, **kwargs) -> "GridMap":
        """A map from rows of characters: ``#``, ``@``, ``T``, ``W``, ``O`` are blocked,
        anything else walkable; digits 2-9 on a walkable cell set its terrain cost."""
        rows = [line.strip() for line in text.strip("\n").splitlines() if line.strip()]
        width = max(len(r) for r in rows)
        walkable = np.ones((len(rows), width), dtype=bool)
        cost = np.ones((len(rows), width), dtype=np.float64)
        for y, row in enumerate(rows):
            for x, ch in enumerate(row.ljust(width, "#")):
                if ch in "#@TWO":
                    walkable[y, x] = False
                elif ch.isdigit() and ch not in "01":
                    cost[y, x] = float(ch)
        if (cost != 1.0).any():
            kwargs.setdefault("cost", cost)
        return cls(walkable, **kwargs)

    @classmethod
    def from_cells(cls, cells, **kwargs) -> "GridMap":
        """A map from the layers the wire carries: ``cells`` is a
        :class:`pathserver.protocol.cells.MapCells` (what ``put_map`` reads, what
        ``Client.get_map`` returns), or anything with its ``walkable``, ``cost``,
        ``heights``, ``tags``, ``origin``, ``cell_size`` and ``region``. The cells of a
        region get the world transform of that region (cell (0, 0) of the new map is the
        region's corner). Keywords override those and go to the constructor
        (``origin=``, ``cell_size=``, ``name=``, ...)."""
        origin, cell_size = cells.origin, cells.cell_size
        shape, layout = getattr(cells, "shape", "square"), getattr(cells, "layout", None)
        if cells.region is not None and shape == "hex":
            origin, layout = hex_region(layout, origin, cell_size, cells.region[0], cells.region[1])
        elif cells.region is not None:
            x, y = cells.region[0], cells.region[1]
            origin = (origin[0] + x * cell_size, origin[1] + y * cell_size)
        floors = getattr(cells, "floors", 1)
        kwargs = {"origin": origin, "cell_size": cell_size,
                  "tag_names": getattr(cells, "tag_names", None), "classes": getattr(cells, "classes", None),
                  "shape": shape, "layout": layout, "floors": floors, "links": getattr(cells, "links", None),
                  **kwargs}
        layers = [cells.walkable, cells.cost, cells.heights, cells.tags]
        if floors > 1:  # the floors one under another -> (floors, h, w)
            layers = [None if layer is None else layer.reshape(floors, -1, layer.shape[-1]) for layer in layers]
        walkable, cost, heights, tags = layers
        return cls(walkable, cost, heights, tags=tags, **kwargs)

    @classmethod
    def load(cls, path, **kwargs) -> "GridMap":
        """Load a map file: Moving AI ``.map``, ``.png``, or Tiled JSON (``.tmj``/``.json``),
        with its optional sidecar. Raises MapLoadError naming the file and the reason.

        :func:`pathserver.maps.load_map` under another name (see :func:`register_file_formats`).
        """
        return _file_formats("load")(Path(path), **kwargs)

    def save(self, path) -> None:
        """Write the map in the format its extension names (``.map``, ``.png``, ``.tmj``):
        :func:`pathserver.maps.save_map` under another name."""
        _file_formats("save")(self, Path(path))

    # -- the world transform --------------------------------------------------------

    def world_to_cell(self, wx: float, wy: float, at: str | None = None) -> tuple[int, int]:
        """The cell containing world point ``(wx, wy)`` (maybe off the map); see
        :func:`floor_cell` for ``at``. On a hex map, the hexagon containing it
        (:func:`pathserver.hexes.cell_at`)."""
        if self.hex:
            floor_cell(wx, wy, at)  # the checks of a point (finite, in range)
            return cell_at(self.layout, wx, wy, self.origin, self.cell_size)
        return floor_cell((wx - self.origin[0]) / self.cell_size, (wy - self.origin[1]) / self.cell_size, at)

    def cell_to_world(self, x: float, y: float) -> tuple[float, float]:
        """The world position of the centre of cell ``(x, y)`` (on a hex map, its hexagon's:
        :func:`pathserver.hexes.world_centre`, as Godot's ``map_to_local``)."""
        if self.hex:
            return world_centre(self.layout, int(x), int(y), self.origin, self.cell_size)
        return (
            self.origin[0] + (x + 0.5) * self.cell_size,
            self.origin[1] + (y + 0.5) * self.cell_size,
        )

    def world_to_grid(self, points) -> np.ndarray:
        """float64 world points (pairs, in an array of any shape) in grid units, which floor
        to the cells holding them: ``(p - origin) / cell_size``; on a hex map, the centre
        (cell + 0.5) of the hexagon containing each."""
        xy = np.asarray(points, dtype=np.float64)
        if not self.hex:
            return (xy - np.asarray(self.origin, dtype=np.float64)) / self.cell_size
        x, y = cell_at(self.layout, xy[..., 0], xy[..., 1], self.origin, self.cell_size)
        return np.stack((x, y), axis=-1).astype(np.float64) + 0.5

    def world_rects_to_grid(self, rects) -> np.ndarray:
        """float64 (n, 4) world rectangles ``(x, y, w, h)`` in grid units: on a hex map, from
        the cell holding the top-left corner to the one holding the bottom-right."""
        rects = np.asarray(rects, dtype=np.float64).reshape(-1, 4)
        if not self.hex:
            return np.column_stack((self.world_to_grid(rects[:, :2]), rects[:, 2:] / self.cell_size))
        low = self.world_to_grid(rects[:, :2]) - 0.5
        high = self.world_to_grid(rects[:, :2] + rects[:, 2:]) - 0.5
        return np.column_stack((np.minimum(low, high), np.abs(high - low) + 1.0))

    def grid_to_world(self, cells) -> np.ndarray:
        """float64 (n, 2): the world centres of the cells ``(x, y)`` (int (n, 2))."""
        cells = np.asarray(cells).reshape(-1, 2)
        if not self.hex:
            return (cells.astype(np.float64) + 0.5) * self.cell_size + np.asarray(self.origin, dtype=np.float64)
        x, y = world_centre(self.layout, cells[:, 0].astype(np.int64), cells[:, 1].astype(np.int64), self.origin,
                            self.cell_size)
        return np.column_stack((x, y)).astype(np.float64)

    def stacked(self, x: int, y: int, floor: int = 0) -> tuple[int, int]:
        """Cell ``(x, y)`` of ``floor`` in the stacked grid (floors one under another, a
        blocked row between each two)."""
        return x, floor * self.floor_rows + y

    def unstacked(self, x: int, y: int) -> tuple[int, int, int]:
        """A stacked grid cell as ``(x, y, floor)``."""
        return x, y % self.floor_rows, y // self.floor_rows

    def link_arrays(self, rules: tuple | None = None) -> tuple:
        """The links as the kernels take them under the traversal ``rules`` (cached):
        :func:`pathserver.grid.links.link_arrays`."""
        def make():
            values = dict(rules or ())
            multipliers = {name: values.get(value, 1.0) for name, value in self.tag_names.items()}
            return link_arrays(self.links, multipliers, self.floor_rows, self.width, self.width * self.height)

        return self.link_cached(rules, make)

    def link_cached(self, key, make):
        """``make()``, made once for this generation under ``key`` (what its links give)."""
        return self._link_cache.get(key, make)

    def in_bounds(self, x: int, y: int) -> bool:
        return 0 <= x < self.width and 0 <= y < self.height

    # -- the per-unit-size cache ----------------------------------------------------

    def layer(self, unit_size=1, traversal=None) -> UnitLayer:
        """The cached :class:`UnitLayer` for a footprint (under a unit class or traversal
        rules, see :meth:`traversal_rules`), built on first use (thread-safe)."""
        rules = None if traversal is None else self.traversal_rules(TRAVERSAL.check(traversal))
        return self.layer_for(*normalize_unit_size(unit_size, self.width, self.height), rules)

    def layer_for(self, unit_w: int, unit_h: int, rules: tuple | None = None) -> UnitLayer:
        """:meth:`layer` for a size already validated by ``normalize_unit_size`` and rules
        from :meth:`traversal_rules`."""
        return self.layers.layer(unit_w, unit_h, self._build_layer, rules)

    def traversal_rules(self, traversal, at: str = TRAVERSAL.name) -> tuple | None:
        """A request's ``traversal`` (as :mod:`pathserver.options` checks it: a class name,
        or ``((tag name, multiplier or None), ...)``) as this map's rule set: ``((tag value,
        multiplier or None), ...)`` sorted by value, leaving out multipliers of 1; None
        when it changes nothing (no rules, or none but 1s). RequestError at ``at`` for a
        class or tag the map does not have."""
        if traversal is None:
            return None
        if isinstance(traversal, str):
            if traversal not in self.classes:
                known = ", ".join(map(repr, self.classes)) or "none"
                raise RequestError(f"unknown unit class {quoted(traversal)}; this map's classes: {known}", at=at)
            traversal = tuple(sorted(self.classes[traversal].items()))
        rules = []
        for tag, multiplier in traversal:
            if tag not in self.tag_names:
                known = ", ".join(map(repr, self.tag_names)) or "none"
                raise RequestError(f"unknown tag {quoted(tag)}; this map's tags: {known}", at=f"{at}.{tag}")
            if multiplier != 1.0:
                rules.append((self.tag_names[tag], multiplier))
        return tuple(sorted(rules)) or None

    def terrain(self, rules: tuple | None = None) -> Terrain:
        """The map as the rule set ``rules`` (from :meth:`traversal_rules`) sees it, cached."""
        if rules is None:
            return Terrain(self._walkable_u8, self.clearance, self.cost_index, self.cost_table, self.uniform_cost,
                           self.hex)
        return self.layers.terrain(rules, self._build_terrain)

    def _build_terrain(self, rules: tuple) -> Terrain:
        return build_terrain(self.walkable, self.cost, self.tags, rules, self.hex)

    def start_jump_table(self, layer: UnitLayer) -> bool:
        """Start building ``layer``'s JPS+ table in the background (once; from the
        previous generation's table where this map is an edit); when it is in place the
        prepared calls waiting for it get it (:meth:`LayerCache.table_built`). False
        when the layer gets none (see :meth:`UnitLayer.start_jump_table`)."""
        layers = self.layers
        return layer.start_jump_table(lambda: layers.table_built(layer.key, layer.jump_table()),
                                      self._jump_seeds.pop(layer.key, None))

    def start_landmarks(self, layer: UnitLayer) -> bool:
        """Start picking ``layer``'s landmarks in the background (once); when they are in
        place the prepared calls waiting for them get them (:meth:`LayerCache.
        landmarks_built`). False when the layer gets none (see :meth:`UnitLayer.
        start_landmarks`)."""
        layers = self.layers
        return layer.start_landmarks(lambda: layers.landmarks_built(layer.key, layer.landmarks()),
                                     self._landmark_seeds.pop(layer.key, None))

    def start_bounds(self, layer: UnitLayer) -> bool:
        """Start building ``layer``'s goal bounds in the background (once; none on an
        edited generation); when they are in place the prepared calls waiting for them get
        them (:meth:`LayerCache.table_built`). False when the layer gets none (see
        :meth:`UnitLayer.start_bounds`)."""
        if self._edited:
            return False
        # Weak references: the build must not keep a map or layer no longer in use.
        layers = weakref.ref(self.layers)
        of_layer = weakref.ref(layer)
        key = layer.key

        def on_built():
            cache, built = layers(), of_layer()
            if cache is not None and built is not None:
                cache.table_built(key, built.bounds(), "bounds")

        return layer.start_bounds(on_built)

    def pieces(self, layer: UnitLayer, eight: int) -> tuple:
        """``layer.pieces(eight)``, updated from the generation this one was edited from
        where that built them (see :meth:`UnitLayer.pieces`)."""
        seed = None
        kept = self._piece_seeds.get(layer.key)
        if kept is not None and eight in kept[1]:
            seed = (kept[0], kept[1][eight])
        arrays = layer.pieces(eight, seed)
        if seed is not None:
            kept[1].pop(eight, None)
        return arrays

    def _seeds_for_edit(self, kept: dict, of_layer) -> dict:
        """What an edit of this map hands on by layer key: ``of_layer(layer)`` of each
        cached layer where not None, and the seeds in ``kept`` it got and has not used, at
        most ``cache_sizes`` of them."""
        seeds = dict(kept)
        for layer in self.layers.cached_layers():
            seed = of_layer(layer)
            if seed is not None:
                seeds.pop(layer.key, None)
                seeds[layer.key] = seed
        return dict(list(seeds.items())[-self.layers.limit:])

    def cached_sizes(self) -> list[tuple[int, int]]:
        """The unit sizes whose layers are cached, least recently used first."""
        return self.layers.sizes()

    def _build_layer(self, unit_w: int, unit_h: int, rules: tuple | None = None) -> UnitLayer:
        return build_layer(self.terrain(rules), unit_w, unit_h, rules)

    # -- edits ------------------------------------------------------------------------

    def edit(self, rects=(), cells=(), *, solid: bool | None = None, cost: float | None = None,
             links=None) -> "GridMap":
        """A new generation with rectangles ``(x, y, w, h)`` and/or cells ``(x, y)`` set
        solid (``solid=True``), free (``solid=False``), and/or given a terrain ``cost``; on
        a map with floors, ``(x, y, w, h, floor)`` and ``(x, y, floor)`` edit that floor
        (floor 0 without one). ``links``: the map's new links (as ``put_map`` takes them,
        ``[]`` for none), replacing the old; None keeps them.

        Parts of rectangles outside the map (their floor) are clipped. Clearance is
        recomputed only in the region the edit can influence (up and left of it, as far
        as the largest square that can reach it).
        """
        boxes = [tuple(int(v) for v in r) for r in rects]
        boxes += [(int(c[0]), int(c[1]), 1, 1, *(int(v) for v in c[2:])) for c in cells]
        # Links alone: no change of cells to check.
        only_links = links is not None and not boxes and solid is None and cost is None
        return self.edit_many([] if only_links else [(boxes, solid, cost)], links=links)

    def with_links(self, links) -> "GridMap":
        """The next generation with ``links`` (as ``put_map`` takes them, ``[]`` for none)
        in place of this one's, its cells as they are (``update {"links": [...]}``)."""
        return self.edit_many([], links=links)

    def floor_top(self, floor) -> int:
        """The stacked grid's row of ``floor``'s first row (OutOfBoundsError at ``rects``
        for a floor the map does not have): where an edit ``(x, y, w, h, floor)`` lands."""
        if not 0 <= floor < self.floors:
            raise OutOfBoundsError(f"floor {floor} is not one of the map's floors 0..{self.floors - 1}", at="rects")
        return self.stacked(0, 0, floor)[1]

    def edit_many(self, changes, links=None) -> "GridMap":
        """One new generation holding the edits ``changes``, ``(boxes, solid, cost)`` each
        with ``boxes`` cell rectangles ``(x, y, w, h)`` (or ``(x, y, w, h, floor)``, clipped
        to that floor), applied in order: the cells end as :meth:`edit` called once
        per change leaves them (a cell made solid costs 1, as the constructor has it), for
        one copy of the arrays and one clearance update. ``links``: as :meth:`edit`."""
        for _, solid, cost in changes:
            check_edit(solid, cost)
        if links is not None:
            links = check_links(links, self.floors, self.width, self.floor_height, tag_names=self.tag_names)
        walkable = self.walkable.copy()
        costed = any(cost is not None for _, _, cost in changes)
        new_cost = None if (not costed and self.uniform_cost) else self.cost.copy()
        x0, y0, x1, y1 = self.width, self.height, 0, 0
        width, floor_height = self.width, self.floor_height
        for boxes, solid, cost in changes:
            for edited in boxes:
                top = 0
                try:
                    bx, by, bw, bh = edited
                except ValueError:  # (x, y, w, h, floor)
                    bx, by, bw, bh, floor = edited
                    top = self.floor_top(floor)
                if bw < 1 or bh < 1:
                    raise RequestError(f"rectangle {bx, by, bw, bh} has no area", at="rects")
                # Clipped to its floor: nothing spills onto the rows between floors.
                cx0, cy0 = max(bx, 0), max(by, 0)
                cx1, cy1 = min(bx + bw, width), min(by + bh, floor_height)
                if cx0 >= cx1 or cy0 >= cy1:
                    continue
                if top:
                    cy0 += top
                    cy1 += top
                box = slice(cy0, cy1), slice(cx0, cx1)
                if solid is not None:
                    walkable[box] = not solid
                if new_cost is not None:
                    if cost is not None:
                        new_cost[box] = cost
                    # What the constructor does between two single edits: blocked cells cost 1.
                    new_cost[box] = np.where(walkable[box], new_cost[box], 1.0)
                x0, y0, x1, y1 = min(x0, cx0), min(y0, cy0), max(x1, cx1), max(y1, cy1)
        solid = all(change[1] is True for change in changes)  # only walls added: landmarks stay valid
        clearance = self.clearance.copy()
        if x0 < x1 and self.hex:
            # A hex edit reaches as far as the distances it changes: all of them, at worst.
            hex_clearance(walkable.view(np.uint8), self.hex, clearance)
        elif x0 < x1:
            # A square reaching into the edited box starts at most `reach` cells up/left.
            reach = int(max(self.clearance.max(initial=0), x1 - x0, y1 - y0)) + 1
            compute_clearance(walkable.view(np.uint8), clearance, max(0, x0 - reach), max(0, y0 - reach), x1, y1)
        cost_edit = None
        if not self.uniform_cost:
            # Cells change cost only inside the box: set to `cost`, or reset to 1 when
            # made solid (the constructor's rule for blocked cells).
            cost_edit = (self.cost_table, self.cost_index, (x0, y0, x1, y1) if x0 < x1 else None)
        return GridMap(
            walkable,
            new_cost,
            self.heights,
            origin=self.origin,
            cell_size=self.cell_size,
            name=self.name,
            generation=self.generation + 1,
            cache_sizes=self.layers.limit,
            tags=self.tags,
            tag_names=self.tag_names,
            classes=self.classes,
            shape=self.shape,
            layout=self.layout,
            floors=self.floors,
            links=self.links if links is None else links,
            _edit=EditSeeds(
                clearance,
                cost_edit,
                jump=self._seeds_for_edit(self._jump_seeds, UnitLayer.table_seed),
                pieces=self._seeds_for_edit(
                    {key: seed for key, seed in self._piece_seeds.items() if seed[1]}, UnitLayer.pieces_seed),
                landmarks=self._seeds_for_edit(self._landmark_seeds, UnitLayer.landmarks) if solid else {},
            ),
        )

    def _checked_links(self, links):
        """``links`` checked against this map (floors, size, tag names) as Links."""
        try:
            return check_links(links, self.floors, self.width, self.floor_height, tag_names=self.tag_names)
        except RequestError as exc:
            raise MapLoadError(exc.message, at=exc.at) from None

    def with_generation(self, generation: int) -> "GridMap":
        """The same map content stamped with another generation number (used by reloads)."""
        clone = GridMap.__new__(GridMap)
        clone.__dict__.update(self.__dict__)
        clone.generation = int(generation)
        clone.layers = LayerCache(self.layers.limit)
        return clone

    def __repr__(self) -> str:
        return f"GridMap(name={self.name!r}, {self.width}x{self.height}, generation={self.generation})"
