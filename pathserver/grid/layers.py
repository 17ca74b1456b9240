"""The per-unit-size layers of a map and what they are built from: a :class:`Terrain` (the
map as one traversal rule set sees it: :func:`build_terrain`), a :class:`UnitLayer` for
each footprint size on it (:func:`build_layer`: where the unit can stand, its components
in block-local form, the footprint's costs as an index into the map's cost table), and
the tables a layer builds in the background once asked (:mod:`pathserver.grid.builds`).
The cost index of a whole grid and of an edit: :func:`build_cost_index`,
:func:`edit_cost_index`.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field

import numpy as np

from pathserver.core.bounds import MAX_SIDE as BOUNDS_MAX_SIDE
from pathserver.core.clearance import (
    compute_clearance,
    footprint_cost,
    footprint_passable,
    hex_clearance,
    hex_footprint_cost,
    index_costs,
)
from pathserver.core.components import BLOCK, BLOCK_SHIFT, block_labels, label_components
from pathserver.core.cut import block_pieces, piece_graph, update_pieces
from pathserver.core.hexjps import fits as hex_table_fits, hex_jump_table
from pathserver.core.jps import jump_bitmaps
from pathserver.core.jpsplus import fits as jump_table_fits
from pathserver.grid.builds import Background, bounds_builds, bounds_of, jump_table_of, landmarks_of
from pathserver.grid.values import footprint_offsets

#: Maps of more cells than this get no JPS+ jump table (8 bytes a cell and unit size:
#: 32 MB at this size); their searches scan online.
JUMP_TABLE_MAX_CELLS = 4 * 1024 * 1024
#: Nor do maps of fewer cells than this: their searches take microseconds anyway, and
#: their answers stay those of the first query (a table landing mid-session may pick
#: another of several equally short paths).
JUMP_TABLE_MIN_CELLS = 128 * 128
#: The maps whose layers with terrain costs get A*'s landmarks: not the small ones, where
#: A* is quick anyway, nor past 512 x 512 cells (128 bytes a cell: 32 MiB a layer there,
#: each cached unit size its own).
LANDMARK_MIN_CELLS = 128 * 128
LANDMARK_MAX_CELLS = 512 * 512
#: JPS+'s goal bounds are built on maps of up to this many cells that get a jump table,
#: as loaded: an edited map's generations get none (any edit may change where shortest
#: paths start). The build keeps none past :data:`~pathserver.grid.builds.
#: BOUNDS_MAX_WORK`, and one runs at a time (see :class:`~pathserver.grid.builds.
#: BoundsBuilds`).
BOUNDS_MAX_CELLS = 1024 * 1024

# What uniform-cost maps pass as cost_index / cost_table: the kernels never read them
# there. Read-only and of the common dtypes (uint8 index, float64 table) like the real
# ones, so numba compiles one specialisation of the kernels for both kinds of map.
UNIFORM_COST_INDEX = np.zeros((1, 1), dtype=np.uint8)
UNIFORM_COST_INDEX.setflags(write=False)
UNIFORM_COST_TABLE = np.ones(1, dtype=np.float64)
UNIFORM_COST_TABLE.setflags(write=False)


def readonly(array: np.ndarray) -> np.ndarray:
    """``array``, made read-only."""
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class UnitLayer:
    """What one footprint size needs, built once per map generation.

    cells, comps: the 4-connected components of the cells where the unit can stand (its
        whole footprint walkable) in block-local form (see
        :mod:`pathserver.core.components`): uint8 (H, W), 0 where the unit cannot
        stand, else the cell's component among those of its 16 x 16 block, plus a small
        int32 table to the global ids. These are the components under both the
        no-corner-cutting and the 4-connected rules, and the kernels read ``cells`` as
        the passability grid too (nonzero = the unit can stand there): one byte a cell
        answers both. :attr:`labels` expands it to one global id a cell.
    cost_index: unsigned integer (H, W), the highest terrain cost under the footprint at
        each cell as an index into cost_table (the map's own index grid for 1x1 units);
        uint8 unless the map has more than 256 distinct costs. On uniform maps both are
        (1, 1) / (1,) placeholders the kernels never read. See :attr:`cost`.
    cost_table: float64 (K,), the map's distinct costs, sorted ascending (shared).
    uniform: every cost is 1.
    open_share: the share of passable cells whose eight neighbours are all passable; JPS
        pays off where this is high (open ground), not on clutter or 1-wide corridors.
    hex: the map's hex layout code (:attr:`~pathserver.grid.gridmap.GridMap.hex`), 0 on a
        square map.
    rules: the traversal rule set the layer is built under (see
        :meth:`~pathserver.grid.gridmap.GridMap.traversal_rules`), None for the map's own
        terrain; ``key`` is its key in the map's :class:`~pathserver.grid.cache.LayerCache`.
    """

    unit_w: int
    unit_h: int
    cells: np.ndarray
    comps: np.ndarray
    n_components: int
    n_passable: int
    cost_index: np.ndarray
    cost_table: np.ndarray
    uniform: bool
    open_share: float
    _cells8: list
    _jump_bits: list
    rules: tuple | None = None
    hex: int = 0
    _pieces: dict = field(default_factory=dict)
    _table: Background = field(default_factory=Background)
    _landmarks: Background = field(default_factory=Background)
    _bounds: Background = field(default_factory=Background)
    _hex_table: list = field(default_factory=list)

    @property
    def key(self) -> tuple:
        return (self.unit_w, self.unit_h) if self.rules is None else (self.unit_w, self.unit_h, self.rules)

    @property
    def cost(self) -> np.ndarray:
        """float64 (H, W): the terrain cost the unit pays to enter each cell, the highest
        under its footprint (a new read-only array on each call: the layer keeps indices)."""
        if self.uniform:
            return readonly(np.ones(self.cells.shape, dtype=np.float64))
        return readonly(self.cost_table[self.cost_index])

    @property
    def passable(self) -> np.ndarray:
        """uint8 (H, W): 1 where the unit can stand (a new array on each call)."""
        return (self.cells != 0).view(np.uint8)

    @property
    def labels(self) -> np.ndarray:
        """int32 (H, W): the global component id of each cell (1..n_components), 0 where
        the unit cannot stand. A new array on each call: the layer keeps the one-byte
        block-local form."""
        return global_labels(self.cells, self.comps)

    def jump_bits(self) -> np.ndarray:
        """The bitmaps JPS scans (about a byte a cell), built on first use."""
        if not self._jump_bits:
            bits = jump_bitmaps(self.cells)
            bits.setflags(write=False)
            self._jump_bits.append(bits)
        return self._jump_bits[0]

    def hex_jump_table(self) -> np.ndarray | None:
        """Hex JPS's jump distances of :attr:`cells` (:func:`pathserver.core.hexjps.
        hex_jump_table`), their int16 bytes as int8 (2 * H * W, 6), the type of
        :meth:`jump_table`'s table: built on first use (O(H * W), 12 bytes a cell). None
        where hex JPS does not run: a square map, terrain costs, or a map past
        :data:`JUMP_TABLE_MAX_CELLS` cells."""
        if not self._hex_table:
            height, width = self.cells.shape
            if (not self.hex or not self.uniform or height * width > JUMP_TABLE_MAX_CELLS
                    or not hex_table_fits(height, width)):
                return None
            table = hex_jump_table(self.cells, self.hex).view(np.int8).reshape(-1, 6)
            self._hex_table.append(readonly(table))
        return self._hex_table[0]

    def jump_table(self) -> np.ndarray | None:
        """The JPS+ jump distances of :attr:`cells` (:func:`pathserver.core.jpsplus.
        jump_table`, int8 (H * W, 8)) once built, else None (see
        :meth:`start_jump_table`)."""
        return self._table.table

    def start_jump_table(self, on_built=None, seed: tuple | None = None) -> bool:
        """Start building the jump table on a background thread, once (later calls do
        nothing): the online search answers meanwhile. ``on_built()`` runs on that thread
        once the table is in place. ``seed``: ``(cells, table)`` of an earlier generation
        of this layer, from which only what changed is redone. False when this layer
        gets no table (a map of fewer than :data:`JUMP_TABLE_MIN_CELLS` or more than
        :data:`JUMP_TABLE_MAX_CELLS` cells)."""
        height, width = self.cells.shape
        if not JUMP_TABLE_MIN_CELLS <= height * width <= JUMP_TABLE_MAX_CELLS or not jump_table_fits(height, width):
            return False
        cells = self.cells
        self._table.start(lambda: jump_table_of(cells, seed), on_built, "pathserver-jump-table")
        return True

    def wait_jump_table(self, timeout: float | None = None) -> bool:
        """Block until the jump table is built (True), or ``timeout`` seconds pass or no
        build was started (False)."""
        return self._table.wait(timeout)

    def landmarks(self) -> np.ndarray | None:
        """A*'s landmarks on this layer's graph (:func:`pathserver.core.landmarks.
        landmark_table`, float32 (H * W, 2 * LANDMARKS)) once built, else None (see
        :meth:`start_landmarks`)."""
        return self._landmarks.table

    def start_landmarks(self, on_built=None, seed: np.ndarray | None = None) -> bool:
        """Start picking landmarks and measuring their costs on a background thread, once:
        A* answers without them meanwhile. ``on_built()`` runs on that thread once they
        are in place. ``seed``: the landmarks of an earlier generation of this layer that
        an edit which only blocked cells left valid, taken as they are. False when this
        layer gets none: uniform cost on a square map (JPS answers there), or fewer than
        :data:`LANDMARK_MIN_CELLS` or more than :data:`LANDMARK_MAX_CELLS` cells. A hex
        map's layers get them uniform or not: A* answers there."""
        if (self.uniform and not self.hex) or not LANDMARK_MIN_CELLS <= self.cells.size <= LANDMARK_MAX_CELLS:
            return False
        self._landmarks.start((lambda: seed) if seed is not None else (lambda: landmarks_of(self)), on_built,
                              "pathserver-landmarks")
        return True

    def wait_landmarks(self, timeout: float | None = None) -> bool:
        """Block until the landmarks are in place (True), or ``timeout`` seconds pass, none
        are kept or no build was started (False)."""
        return self._landmarks.wait(timeout)

    def bounds(self) -> tuple | None:
        """JPS+'s goal bounds on this layer's cells, ``(rows, boxes)`` of
        :mod:`pathserver.core.bounds`, once built, else None (see :meth:`start_bounds`)."""
        return self._bounds.table

    def start_bounds(self, on_built=None) -> bool:
        """Start building the goal bounds on a background thread (at a lower priority),
        once: JPS+ answers without them meanwhile. ``on_built()`` runs on that thread once
        they are in place; while another layer's build runs, this one waits its turn (see
        :class:`~pathserver.grid.builds.BoundsBuilds`). False when this layer gets none:
        terrain costs, or a map outside the jump table's sizes or past
        :data:`BOUNDS_MAX_CELLS` (the build itself keeps none past
        :data:`~pathserver.grid.builds.BOUNDS_MAX_WORK`)."""
        height, width = self.cells.shape
        if (not self.uniform or not JUMP_TABLE_MIN_CELLS <= height * width <= BOUNDS_MAX_CELLS
                or max(height, width) > BOUNDS_MAX_SIDE):
            return False
        bounds_builds.ask(self, on_built)
        return True

    @property
    def bounds_started(self) -> bool:
        """Whether the goal bounds build has started (see :meth:`build_bounds`)."""
        return self._bounds.started

    def build_bounds(self, on_built) -> bool:
        """Start the goal bounds build now: what :class:`~pathserver.grid.builds.
        BoundsBuilds` calls when this layer's turn comes (ask with :meth:`start_bounds`).
        False if it was started before."""
        cells = self.cells
        alive = weakref.ref(self)  # the build holds no reference that keeps the layer
        return self._bounds.start(lambda: bounds_of(cells, alive), on_built, "pathserver-goal-bounds")

    def wait_bounds(self, timeout: float | None = None) -> bool:
        """Block until the goal bounds are in place (True), or ``timeout`` seconds pass,
        none are kept or no build was asked for (False). A build waiting its turn is
        waited for."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._bounds.started and bounds_builds.waiting(self):
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return self._bounds.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def pieces(self, eight: int, seed: tuple | None = None) -> tuple:
        """``(pieces, first, offsets, targets, cells)``: :func:`pathserver.core.cut.
        block_pieces` of the cells the unit can stand on, 4-connected (8-connected with
        ``eight``), and their :func:`~pathserver.core.cut.piece_graph`, built on first use
        (what ``check_block`` searches). ``seed``: ``(cells, pieces)`` of this layer in an
        earlier generation, from which only the blocks an edit changed are redone."""
        if eight not in self._pieces:
            if seed is not None:
                arrays = update_pieces(self.cells, seed[0], *seed[1], eight)
            else:
                pieces, first = block_pieces(self.cells, eight)
                arrays = (pieces, first, *piece_graph(pieces, first, eight))
            self._pieces[eight] = tuple(readonly(a) for a in arrays)
        return self._pieces[eight]

    def table_seed(self) -> tuple | None:
        """``(cells, table)`` for the next generation's :meth:`start_jump_table`, once
        the jump table is built; else None."""
        table = self.jump_table()
        return None if table is None else (self.cells, table)

    def pieces_seed(self) -> tuple | None:
        """``(cells, {eight: pieces})`` of the pieces built so far, for the next
        generation's :meth:`pieces`; None before any."""
        return (self.cells, dict(self._pieces)) if self._pieces else None

    def cells8(self) -> tuple[np.ndarray, np.ndarray]:
        """``(cells, comps)`` for the components when diagonals may cut corners
        (8-connected), built on first use."""
        if not self._cells8:
            cells, comps, _ = _components(self.passable, eight=1)
            self._cells8.append((cells, comps))
        return self._cells8[0]

    @property
    def nbytes(self) -> int:
        """Bytes this size holds of its own (the map's cost index and table are shared,
        not counted)."""
        # Sizes above 1x1 on a map with terrain costs hold their own footprint cost index.
        own_cost = self.cost_index.nbytes if (self.unit_w * self.unit_h > 1 and not self.uniform) else 0
        lazy = sum(c.nbytes + t.nbytes for c, t in self._cells8) + sum(a.nbytes for a in self._jump_bits)
        lazy += sum(a.nbytes for a in self._hex_table)
        lazy += sum(a.nbytes for arrays in self._pieces.values() for a in arrays)
        for table in (self._table.table, self._landmarks.table, *(self._bounds.table or ())):
            if table is not None:
                lazy += table.nbytes
        return self.cells.nbytes + self.comps.nbytes + own_cost + lazy


@dataclass(frozen=True)
class Terrain:
    """The map as one traversal rule set sees it: uint8 (H, W) ``walkable`` (the map's,
    less the cells of blocked tags), uint16 ``clearance`` of it, and the costs
    (``cost_index`` / ``cost_table`` / ``uniform`` as on
    :class:`~pathserver.grid.gridmap.GridMap`, multiplied per tag). What that rule set's
    unit layers are built from. hex: the hex map's layout code (the clearance then the
    hex distance to a blocked cell: :func:`pathserver.core.clearance.hex_clearance`), 0
    on a square map."""

    walkable: np.ndarray
    clearance: np.ndarray
    cost_index: np.ndarray
    cost_table: np.ndarray
    uniform: bool
    hex: int = 0


def _components(passable: np.ndarray, eight: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(cells, comps, count)``: the components of ``passable`` in block-local form,
    read-only."""
    labels = np.empty(passable.shape, dtype=np.int32)
    count = int(label_components(passable, eight, labels))
    cells = np.empty(passable.shape, dtype=np.uint8)
    comps = block_labels(labels, count, cells)
    return readonly(cells), readonly(comps), count


def global_labels(cells: np.ndarray, comps: np.ndarray) -> np.ndarray:
    """int32 (H, W): the global component id of each cell of the block-local ``(cells,
    comps)`` (see :attr:`UnitLayer.labels`), 0 where ``cells`` is 0."""
    height, width = cells.shape
    per_row = (width + BLOCK - 1) >> BLOCK_SHIFT
    block = (np.arange(height) >> BLOCK_SHIFT)[:, None] * per_row + (np.arange(width) >> BLOCK_SHIFT)[None, :]
    local = cells.astype(np.int64)
    slot = np.where(local > 0, comps[block] + local - 1, 0)
    return np.where(local > 0, comps[slot], 0).astype(np.int32)


def _open_share(passable: np.ndarray, n_passable: int) -> float:
    if n_passable == 0:
        return 0.0
    padded = np.pad(passable, 1)
    height, width = passable.shape
    interior = passable.astype(bool)
    for dy in (0, 1, 2):
        for dx in (0, 1, 2):
            interior &= padded[dy : dy + height, dx : dx + width].astype(bool)
    return float(interior.sum()) / n_passable


def _index_dtype(distinct: int):
    """The narrowest unsigned dtype indexing a table of ``distinct`` entries. Costs stay
    exact: more than 256 distinct costs widen the index (a second compiled version of
    the kernels) rather than quantise them."""
    if distinct <= 1 << 8:
        return np.uint8
    if distinct <= 1 << 16:
        return np.uint16
    return np.uint32


def build_cost_index(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cost_table, cost_index) for a whole float64 cost grid, both read-only."""
    # Read-only before the call, as in edit_cost_index: one compiled index_costs.
    table = readonly(np.unique(cost))
    index = np.empty(cost.shape, dtype=_index_dtype(table.shape[0]))
    index_costs(cost, table, index, 0, 0, cost.shape[1], cost.shape[0])
    return table, readonly(index)


def edit_cost_index(cost: np.ndarray, table: np.ndarray, index: np.ndarray, box) -> tuple[np.ndarray, np.ndarray]:
    """(cost_table, cost_index) for ``cost``, which differs from the grid ``table[index]``
    describes only inside ``box = (x0, y0, x1, y1)``: the box is re-indexed, and a cost
    the table lacks is merged in (shifting the indices above it). Entries no cell uses
    any more stay until the table outgrows its dtype, when it is rebuilt from scratch."""
    x0, y0, x1, y1 = box
    new_values = np.setdiff1d(np.unique(cost[y0:y1, x0:x1]), table, assume_unique=True)
    if new_values.size:
        merged = np.union1d(table, new_values)
        if merged.shape[0] > np.iinfo(index.dtype).max + 1:
            return build_cost_index(cost)
        remap = np.searchsorted(merged, table).astype(index.dtype)
        index = remap[index]
        table = readonly(merged)
    else:
        index = index.copy()
    index_costs(cost, table, index, x0, y0, x1, y1)
    return table, readonly(index)


def build_terrain(walkable: np.ndarray, cost: np.ndarray, tags: np.ndarray, rules: tuple, hex_layout: int = 0) -> Terrain:
    """The map of ``walkable`` cells, ``cost`` and ``tags`` as the rule set ``rules`` (from
    :meth:`~pathserver.grid.gridmap.GridMap.traversal_rules`, not None) sees it, on a hex
    map of ``hex_layout`` (0: square)."""
    blocked = [value for value, multiplier in rules if multiplier is None]
    multipliers = np.ones(256, dtype=np.float64)
    for value, multiplier in rules:
        if multiplier is not None:
            multipliers[value] = multiplier
    walkable = walkable & ~np.isin(tags, blocked) if blocked else walkable
    walkable_u8 = readonly(np.ascontiguousarray(walkable).view(np.uint8))
    height, width = walkable.shape
    clearance = np.zeros(walkable.shape, dtype=np.uint16)
    if hex_layout:
        hex_clearance(walkable_u8, hex_layout, clearance)
    else:
        compute_clearance(walkable_u8, clearance, 0, 0, width, height)
    cost = np.where(walkable, cost * multipliers[tags], 1.0)
    if bool(np.all(cost == 1.0)):
        return Terrain(walkable_u8, readonly(clearance), UNIFORM_COST_INDEX, UNIFORM_COST_TABLE, True, hex_layout)
    table, index = build_cost_index(cost)
    return Terrain(walkable_u8, readonly(clearance), index, table, False, hex_layout)


def build_layer(terrain: Terrain, unit_w: int, unit_h: int, rules: tuple | None = None) -> UnitLayer:
    """The :class:`UnitLayer` of a ``unit_w x unit_h`` footprint on ``terrain`` (the map
    as the rule set ``rules`` sees it)."""
    shape = terrain.walkable.shape
    if terrain.hex:
        # A hex unit of size k (unit_w == unit_h) stands where every cell within hex
        # distance k - 1 is walkable and on the map.
        passable = (terrain.clearance >= unit_w).view(np.uint8)
        n_passable = int(np.count_nonzero(passable))
    else:
        off_x, off_y = footprint_offsets(unit_w, unit_h)
        passable = np.empty(shape, dtype=np.uint8)
        n_passable = footprint_passable(terrain.clearance, unit_w, unit_h, off_x, off_y, passable)
    cells, comps, n_components = _components(passable, eight=terrain.hex)
    if (unit_w == 1 and unit_h == 1) or terrain.uniform:
        cost_index = terrain.cost_index
    elif terrain.hex:
        cost_index = np.empty(shape, dtype=terrain.cost_index.dtype)
        hex_footprint_cost(terrain.cost_index, terrain.hex, unit_w - 1, cost_index)
        readonly(cost_index)
    else:
        cost_index = np.empty(shape, dtype=terrain.cost_index.dtype)
        footprint_cost(terrain.cost_index, unit_w, unit_h, off_x, off_y, cost_index)
        readonly(cost_index)
    return UnitLayer(
        unit_w, unit_h, cells, comps, n_components, int(n_passable),
        cost_index, terrain.cost_table, terrain.uniform, _open_share(passable, n_passable), [], [], rules,
        terrain.hex,
    )
