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
(:class:`Terrain`) and per-unit-size layers, cached like the map's own.
"""

from __future__ import annotations

import atexit
import math
import os
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pathserver.core.bounds import MAX_SIDE as BOUNDS_MAX_SIDE
from pathserver.core.bounds import ROW as BOUNDS_ROW
from pathserver.core.bounds import bound_rows, fill_bounds, legal_moves
from pathserver.core.clearance import compute_clearance, footprint_cost, footprint_passable, index_costs
from pathserver.core.components import BLOCK, BLOCK_SHIFT, block_labels, label_components
from pathserver.core.cut import block_pieces, piece_graph, update_pieces
from pathserver.core.jps import jump_bitmaps
from pathserver.core.jpsplus import fits as jump_table_fits
from pathserver.core.jpsplus import jump_table, update_jump_table
from pathserver.core.landmarks import LANDMARKS, LEAST_SCALE, landmark_table
from pathserver.errors import MapLoadError, RequestError
from pathserver.grid.cache import LayerCache
from pathserver.grid.values import check_edit, floor_cell, footprint_offsets, normalize_unit_size
from pathserver.options import BY_NAME, quoted

#: Maps larger than this many cells are refused before anything is allocated.
MAX_CELLS = 64 * 1024 * 1024
#: How many unit sizes one map generation keeps cached (least recently used evicted).
DEFAULT_CACHE_SIZES = 8
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
#: JPS+'s goal bounds (:mod:`pathserver.core.bounds`) take a flood of the map from each
#: jump point: built where that is at most this many cells in all, about 30 ns each on one
#: core (den520d: 888 jump points times 28,178 passable cells, 0.6 s; 32room_000: 814
#: times 240,671, 6 s), on maps of up to
#: BOUNDS_MAX_CELLS cells that get a jump table, as loaded: an edited map's generations
#: get none (any edit may change where shortest paths start). One build runs at a time
#: (see _BoundsBuilds).
BOUNDS_MAX_WORK = 1 << 28
BOUNDS_MAX_CELLS = 1024 * 1024
#: A build checks between floods of about this many cells whether its layer is still in
#: use, and stops if not.
BOUNDS_CHUNK_WORK = 1 << 21

# What uniform-cost maps pass as cost_index / cost_table: the kernels never read them
# there. Read-only and of the common dtypes (uint8 index, float64 table) like the real
# ones, so numba compiles one specialisation of the kernels for both kinds of map.
_UNIFORM_COST_INDEX = np.zeros((1, 1), dtype=np.uint8)
_UNIFORM_COST_INDEX.setflags(write=False)
_UNIFORM_COST_TABLE = np.ones(1, dtype=np.float64)
_UNIFORM_COST_TABLE.setflags(write=False)


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
    rules: the traversal rule set the layer is built under (see
        :meth:`GridMap.traversal_rules`), None for the map's own terrain; ``key`` is its
        key in the map's :class:`~pathserver.grid.cache.LayerCache`.
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
    _pieces: dict = field(default_factory=dict)
    _table: "_Background" = field(default_factory=lambda: _Background())
    _landmarks: "_Background" = field(default_factory=lambda: _Background())
    _bounds: "_Background" = field(default_factory=lambda: _Background())

    @property
    def key(self) -> tuple:
        return (self.unit_w, self.unit_h) if self.rules is None else (self.unit_w, self.unit_h, self.rules)

    @property
    def cost(self) -> np.ndarray:
        """float64 (H, W): the terrain cost the unit pays to enter each cell, the highest
        under its footprint (a new read-only array on each call: the layer keeps indices)."""
        if self.uniform:
            return _readonly(np.ones(self.cells.shape, dtype=np.float64))
        return _readonly(self.cost_table[self.cost_index])

    @property
    def passable(self) -> np.ndarray:
        """uint8 (H, W): 1 where the unit can stand (a new array on each call)."""
        return (self.cells != 0).view(np.uint8)

    @property
    def labels(self) -> np.ndarray:
        """int32 (H, W): the global component id of each cell (1..n_components), 0 where
        the unit cannot stand. A new array on each call: the layer keeps the one-byte
        block-local form."""
        return _global_labels(self.cells, self.comps)

    def jump_bits(self) -> np.ndarray:
        """The bitmaps JPS scans (about a byte a cell), built on first use."""
        if not self._jump_bits:
            bits = jump_bitmaps(self.cells)
            bits.setflags(write=False)
            self._jump_bits.append(bits)
        return self._jump_bits[0]

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
        self._table.start(lambda: _jump_table_of(cells, seed), on_built, "pathserver-jump-table")
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
        layer gets none: uniform cost (JPS answers there), or fewer than
        :data:`LANDMARK_MIN_CELLS` or more than :data:`LANDMARK_MAX_CELLS` cells."""
        if self.uniform or not LANDMARK_MIN_CELLS <= self.cells.size <= LANDMARK_MAX_CELLS:
            return False
        self._landmarks.start((lambda: seed) if seed is not None else (lambda: _landmarks_of(self)), on_built,
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
        :class:`_BoundsBuilds`). False when this layer gets none: terrain costs, or a map
        outside the jump table's sizes or past :data:`BOUNDS_MAX_CELLS` (the build itself
        keeps none past :data:`BOUNDS_MAX_WORK`)."""
        height, width = self.cells.shape
        if (not self.uniform or not JUMP_TABLE_MIN_CELLS <= height * width <= BOUNDS_MAX_CELLS
                or max(height, width) > BOUNDS_MAX_SIDE):
            return False
        _bounds_builds.ask(self, on_built)
        return True

    def _build_bounds(self, on_built) -> bool:
        """Start the goal bounds build (see :class:`_BoundsBuilds`); False if it was."""
        cells = self.cells
        alive = weakref.ref(self)  # the build holds no reference that keeps the layer
        return self._bounds.start(lambda: _bounds_of(cells, alive), on_built, "pathserver-goal-bounds")

    def wait_bounds(self, timeout: float | None = None) -> bool:
        """Block until the goal bounds are in place (True), or ``timeout`` seconds pass,
        none are kept or no build was asked for (False). A build waiting its turn is
        waited for."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._bounds.started and _bounds_builds.waiting(self):
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
            self._pieces[eight] = tuple(_readonly(a) for a in arrays)
        return self._pieces[eight]

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
        lazy += sum(a.nbytes for arrays in self._pieces.values() for a in arrays)
        for table in (self._table.table, self._landmarks.table, *(self._bounds.table or ())):
            if table is not None:
                lazy += table.nbytes
        return self.cells.nbytes + self.comps.nbytes + own_cost + lazy


class _Background:
    """One table of a layer (its JPS+ jump distances, its landmarks) and its one build on
    a background thread.

    table: None until built (then read-only; a build may also yield None: nothing to
    keep). The build thread sets it, then calls ``on_built`` (which hands it to the map's
    prepared calls waiting for it)."""

    __slots__ = ("table", "_started", "_done", "_lock")

    def __init__(self):
        self.table = None
        self._started = False
        self._done = threading.Event()
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._started

    def start(self, build, on_built, name: str) -> bool:
        """Run ``build()`` (returning the table, a tuple of arrays, or None) on a new
        thread, once: False when it was started before."""
        with self._lock:
            if self._started:
                return False
            self._started = True
        # Not a daemon: a build that is compiling its kernel when the program ends is
        # waited for (LLVM torn down under a compile aborts the interpreter).
        threading.Thread(target=self._build, args=(build, on_built), name=name).start()
        return True

    def _build(self, build, on_built) -> None:
        try:
            table = build()
            if table is not None:
                for array in table if isinstance(table, tuple) else (table,):
                    array.setflags(write=False)
                self.table = table
                if on_built is not None:
                    on_built()
        finally:
            self._done.set()

    def wait(self, timeout: float | None) -> bool:
        if not self._started:
            return False
        return self._done.wait(timeout) and self.table is not None


def _jump_table_of(cells: np.ndarray, seed) -> np.ndarray:
    if seed is not None and seed[0].shape == cells.shape:
        table, _ = update_jump_table(cells, seed[0], seed[1])
        return table
    return jump_table(cells)


# Set as the interpreter starts to exit (before it joins the threads left running): a goal
# bounds build then stops at its next check instead of holding the exit up for seconds.
_exiting = threading.Event()
# threading's own hook (concurrent.futures uses it); atexit's runs only after the join.
getattr(threading, "_register_atexit", atexit.register)(_exiting.set)


class _BoundsBuilds:
    """The goal bounds builds of the process, one at a time (each takes seconds of a
    core): a layer asking while another's runs waits its turn, first come first served,
    and is passed over if it is no longer in use by then. Holds layers by weak reference
    only."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running = False
        self._waiting: list = []

    def ask(self, layer: UnitLayer, on_built) -> None:
        with self._lock:
            if layer._bounds.started or any(ref() is layer for ref, _ in self._waiting):
                return
            if self._running:
                self._waiting.append((weakref.ref(layer), on_built))
                return
            self._running = self._start(layer, on_built)

    def waiting(self, layer: UnitLayer) -> bool:
        """Whether ``layer``'s build is waiting its turn."""
        with self._lock:
            return any(ref() is layer for ref, _ in self._waiting)

    def done(self) -> None:
        """A build ended (on its thread): start the next waiting layer still in use."""
        with self._lock:
            self._running = False
            while self._waiting and not self._running:
                ref, on_built = self._waiting.pop(0)
                layer = ref()
                if layer is not None:
                    self._running = self._start(layer, on_built)

    @staticmethod
    def _start(layer: UnitLayer, on_built) -> bool:
        # Under the lock: a layer is waiting or started, never neither in between. The
        # build thread takes the lock only as it ends.
        return layer._build_bounds(on_built)


_bounds_builds = _BoundsBuilds()


def _bounds_of(cells: np.ndarray, alive) -> tuple | None:
    """The goal bounds of ``cells`` (``(rows, boxes)``), or None: too much work, the
    layer (``alive()``) no longer in use, or the program exiting. Starts the next build
    waiting when it ends."""
    try:
        try:  # behind the queries: this thread alone, on Linux
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        except (AttributeError, OSError):
            pass
        n = cells.size
        rows = np.empty(n, dtype=np.int32)
        nodes = np.empty(n, dtype=np.int32)
        count = int(bound_rows(cells, rows, nodes))
        passable = int(np.count_nonzero(cells))
        if count == 0 or count * passable > BOUNDS_MAX_WORK:
            return None
        boxes = np.empty((count, BOUNDS_ROW), dtype=np.int16)
        moves = np.empty(n, dtype=np.uint8)
        legal_moves(cells, moves)
        steps = np.empty(n, dtype=np.int64)
        marks = np.zeros(n, dtype=np.int32)
        buckets = np.empty((3, n + 1), dtype=np.int32)
        chunk = max(1, BOUNDS_CHUNK_WORK // max(passable, 1))
        for lo in range(0, count, chunk):
            if alive() is None or _exiting.is_set():
                return None
            fill_bounds(moves, cells.shape[1], nodes, lo, min(lo + chunk, count), boxes, steps, marks, buckets)
        return rows, boxes
    finally:
        _bounds_builds.done()


def _landmarks_of(layer: "UnitLayer") -> np.ndarray | None:
    standable = np.flatnonzero(layer.cells.ravel())
    if not len(standable):
        return None
    # A workspace of its own: the build runs beside the searches.
    n = layer.cells.size
    work_float = np.zeros((5, n + 1), dtype=np.float64)
    work_int = np.zeros((4, n + 1), dtype=np.int32)
    table = np.empty((n, 2 * LANDMARKS), dtype=np.float32)
    # Seeded in the largest component: the landmarks serve the most cells there.
    labels = layer.labels.ravel()
    largest = np.bincount(labels[standable]).argmax()
    seed = int(standable[np.argmax(labels[standable] == largest)])
    _, scale = landmark_table(layer.cells, layer.cost_index, layer.cost_table, int(layer.uniform), seed, LANDMARKS,
                              table, work_float, work_int)
    return table if scale >= LEAST_SCALE else None


def _components(passable: np.ndarray, eight: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(cells, comps, count)``: the components of ``passable`` in block-local form,
    read-only."""
    labels = np.empty(passable.shape, dtype=np.int32)
    count = int(label_components(passable, eight, labels))
    cells = np.empty(passable.shape, dtype=np.uint8)
    comps = block_labels(labels, count, cells)
    return _readonly(cells), _readonly(comps), count


def _global_labels(cells: np.ndarray, comps: np.ndarray) -> np.ndarray:
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


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _index_dtype(distinct: int):
    """The narrowest unsigned dtype indexing a table of ``distinct`` entries. Costs stay
    exact: more than 256 distinct costs widen the index (a second compiled version of
    the kernels) rather than quantise them."""
    if distinct <= 1 << 8:
        return np.uint8
    if distinct <= 1 << 16:
        return np.uint16
    return np.uint32


def _build_cost_index(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cost_table, cost_index) for a whole float64 cost grid, both read-only."""
    # Read-only before the call, as in _edit_cost_index: one compiled index_costs.
    table = _readonly(np.unique(cost))
    index = np.empty(cost.shape, dtype=_index_dtype(table.shape[0]))
    index_costs(cost, table, index, 0, 0, cost.shape[1], cost.shape[0])
    return table, _readonly(index)


def _edit_cost_index(cost: np.ndarray, table: np.ndarray, index: np.ndarray, box) -> tuple[np.ndarray, np.ndarray]:
    """(cost_table, cost_index) for ``cost``, which differs from the grid ``table[index]``
    describes only inside ``box = (x0, y0, x1, y1)``: the box is re-indexed, and a cost
    the table lacks is merged in (shifting the indices above it). Entries no cell uses
    any more stay until the table outgrows its dtype, when it is rebuilt from scratch."""
    x0, y0, x1, y1 = box
    new_values = np.setdiff1d(np.unique(cost[y0:y1, x0:x1]), table, assume_unique=True)
    if new_values.size:
        merged = np.union1d(table, new_values)
        if merged.shape[0] > np.iinfo(index.dtype).max + 1:
            return _build_cost_index(cost)
        remap = np.searchsorted(merged, table).astype(index.dtype)
        index = remap[index]
        table = _readonly(merged)
    else:
        index = index.copy()
    index_costs(cost, table, index, x0, y0, x1, y1)
    return table, _readonly(index)


@dataclass(frozen=True)
class Terrain:
    """The map as one traversal rule set sees it: uint8 (H, W) ``walkable`` (the map's,
    less the cells of blocked tags), uint16 ``clearance`` of it, and the costs
    (``cost_index`` / ``cost_table`` / ``uniform`` as on :class:`GridMap`, multiplied per
    tag). What that rule set's unit layers are built from."""

    walkable: np.ndarray
    clearance: np.ndarray
    cost_index: np.ndarray
    cost_table: np.ndarray
    uniform: bool


def _check_tags(tags, tag_names, classes, shape) -> tuple:
    """``(tags, tag_names, classes)`` checked for a map of ``shape``: tags uint8 (H, W)
    read-only or None; tag_names ``{name: value}``, values 1..255 and distinct; classes
    ``{name: {tag name: None | multiplier >= 1}}`` naming only known tags."""
    if tags is not None:
        tags = np.asarray(tags)
        if tags.shape != shape:
            raise MapLoadError(f"tags has shape {tags.shape}, walkable has {shape}", at="tags")
        if tags.dtype.kind not in "biu" or (tags.size and (tags.min() < 0 or tags.max() > 255)):
            raise MapLoadError("tags must be integers 0..255 (0: untagged)", at="tags")
        tags = _readonly(np.ascontiguousarray(tags, dtype=np.uint8))
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
        _clearance: np.ndarray | None = None,
        _cost_edit: tuple | None = None,
        _jump_seeds: dict | None = None,
        _piece_seeds: dict | None = None,
        _landmark_seeds: dict | None = None,
        _edited: bool = False,
    ):
        walkable = np.asarray(walkable)
        if walkable.ndim != 2 or walkable.shape[0] < 1 or walkable.shape[1] < 1:
            raise MapLoadError(f"walkable must be a non-empty 2-D array, got shape {walkable.shape}")
        if walkable.size > MAX_CELLS:
            raise MapLoadError(f"map of {walkable.shape[1]}x{walkable.shape[0]} cells exceeds {MAX_CELLS} cells")
        self.walkable = _readonly(np.ascontiguousarray(walkable, dtype=bool))
        self.height, self.width = self.walkable.shape
        if cost is None:
            self.cost = _readonly(np.ones(self.walkable.shape, dtype=np.float64))
            self.uniform_cost = True
        else:
            cost = np.ascontiguousarray(cost, dtype=np.float64)
            if cost.shape != self.walkable.shape:
                raise MapLoadError(f"cost has shape {cost.shape}, walkable has {self.walkable.shape}")
            relevant = cost[self.walkable]
            if not np.all(np.isfinite(relevant)) or (relevant.size and relevant.min() < 1.0):
                raise MapLoadError("terrain costs of walkable cells must be finite and >= 1")
            cost = np.where(self.walkable, cost, 1.0)
            self.cost = _readonly(cost)
            self.uniform_cost = bool(np.all(cost == 1.0))
        if self.uniform_cost:
            self.cost_index, self.cost_table = _UNIFORM_COST_INDEX, _UNIFORM_COST_TABLE
        elif _cost_edit is not None:
            # An edit of a map with terrain costs: its previous table, index and the box
            # the edit touched.
            table, index, box = _cost_edit
            if box is None:
                self.cost_table, self.cost_index = table, index
            else:
                self.cost_table, self.cost_index = _edit_cost_index(self.cost, table, index, box)
        else:
            self.cost_table, self.cost_index = _build_cost_index(self.cost)
        if heights is None:
            self.heights = None
        else:
            heights = np.ascontiguousarray(heights, dtype=np.float32)
            if heights.shape != self.walkable.shape:
                raise MapLoadError(f"heights has shape {heights.shape}, walkable has {self.walkable.shape}")
            if not np.all(np.isfinite(heights)):
                raise MapLoadError("heights must be finite")
            self.heights = _readonly(heights)
        ox, oy = origin
        self.origin = (float(ox), float(oy))
        self.cell_size = float(cell_size)
        if not (math.isfinite(self.cell_size) and self.cell_size > 0) or not all(map(math.isfinite, self.origin)):
            raise MapLoadError("cell_size must be finite and > 0, origin finite")
        self.name = name
        self.generation = int(generation)
        self._walkable_u8 = _readonly(self.walkable.view(np.uint8))
        if _clearance is None:
            clearance = np.zeros(self.walkable.shape, dtype=np.uint16)
            compute_clearance(self._walkable_u8, clearance, 0, 0, self.width, self.height)
        else:
            clearance = _clearance
        self.clearance = _readonly(clearance)
        self.tags, self.tag_names, self.classes = _check_tags(tags, tag_names, classes, self.walkable.shape)
        #: The layers of the unit sizes used lately and find_path's prepared calls.
        self.layers = LayerCache(cache_sizes)
        # The JPS+ tables of the generation this one was edited from, by layer key, as
        # (cells, table): a layer's table is then updated where the edit reached instead
        # of built from scratch.
        self._jump_seeds = dict(_jump_seeds or {})
        # Likewise check_block's pieces, as (cells, {eight: pieces}); and A*'s landmarks,
        # handed on as they are by an edit that only blocks cells (no cost falls, no move
        # is added: every bound they give stays a consistent lower bound).
        self._piece_seeds = dict(_piece_seeds or {})
        self._landmark_seeds = dict(_landmark_seeds or {})
        # Made by edit(): no goal bounds (see BOUNDS_MAX_WORK).
        self._edited = _edited

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
        if cells.region is not None:
            x, y = cells.region[0], cells.region[1]
            origin = (origin[0] + x * cell_size, origin[1] + y * cell_size)
        kwargs = {"origin": origin, "cell_size": cell_size, "tags": cells.tags,
                  "tag_names": getattr(cells, "tag_names", None), "classes": getattr(cells, "classes", None), **kwargs}
        return cls(cells.walkable, cells.cost, cells.heights, **kwargs)

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
        :func:`floor_cell` for ``at``."""
        return floor_cell((wx - self.origin[0]) / self.cell_size, (wy - self.origin[1]) / self.cell_size, at)

    def cell_to_world(self, x: float, y: float) -> tuple[float, float]:
        """The world position of the centre of cell ``(x, y)``."""
        return (
            self.origin[0] + (x + 0.5) * self.cell_size,
            self.origin[1] + (y + 0.5) * self.cell_size,
        )

    def in_bounds(self, x: int, y: int) -> bool:
        return 0 <= x < self.width and 0 <= y < self.height

    # -- the per-unit-size cache ----------------------------------------------------

    def layer(self, unit_size=1, traversal=None) -> UnitLayer:
        """The cached :class:`UnitLayer` for a footprint (under a unit class or traversal
        rules, see :meth:`traversal_rules`), built on first use (thread-safe)."""
        rules = None if traversal is None else self.traversal_rules(BY_NAME["traversal"].check(traversal))
        return self.layer_for(*normalize_unit_size(unit_size, self.width, self.height), rules)

    def layer_for(self, unit_w: int, unit_h: int, rules: tuple | None = None) -> UnitLayer:
        """:meth:`layer` for a size already validated by ``normalize_unit_size`` and rules
        from :meth:`traversal_rules`."""
        return self.layers.layer(unit_w, unit_h, self._build_layer, rules)

    def traversal_rules(self, traversal, at: str = "traversal") -> tuple | None:
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
            return Terrain(self._walkable_u8, self.clearance, self.cost_index, self.cost_table, self.uniform_cost)
        return self.layers.terrain(rules, self._build_terrain)

    def _build_terrain(self, rules: tuple) -> Terrain:
        blocked = [value for value, multiplier in rules if multiplier is None]
        multipliers = np.ones(256, dtype=np.float64)
        for value, multiplier in rules:
            if multiplier is not None:
                multipliers[value] = multiplier
        walkable = self.walkable & ~np.isin(self.tags, blocked) if blocked else self.walkable
        walkable_u8 = _readonly(np.ascontiguousarray(walkable).view(np.uint8))
        clearance = np.zeros(self.walkable.shape, dtype=np.uint16)
        compute_clearance(walkable_u8, clearance, 0, 0, self.width, self.height)
        cost = np.where(walkable, self.cost * multipliers[self.tags], 1.0)
        if bool(np.all(cost == 1.0)):
            return Terrain(walkable_u8, _readonly(clearance), _UNIFORM_COST_INDEX, _UNIFORM_COST_TABLE, True)
        table, index = _build_cost_index(cost)
        return Terrain(walkable_u8, _readonly(clearance), index, table, False)

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

    @staticmethod
    def _table_seed(layer: UnitLayer) -> tuple | None:
        table = layer.jump_table()
        return None if table is None else (layer.cells, table)

    @staticmethod
    def _landmarks_seed(layer: UnitLayer) -> np.ndarray | None:
        return layer.landmarks()

    @staticmethod
    def _pieces_seed(layer: UnitLayer) -> tuple | None:
        return (layer.cells, dict(layer._pieces)) if layer._pieces else None

    def cached_sizes(self) -> list[tuple[int, int]]:
        """The unit sizes whose layers are cached, least recently used first."""
        return self.layers.sizes()

    def _build_layer(self, unit_w: int, unit_h: int, rules: tuple | None = None) -> UnitLayer:
        terrain = self.terrain(rules)
        off_x, off_y = footprint_offsets(unit_w, unit_h)
        passable = np.empty(self.walkable.shape, dtype=np.uint8)
        n_passable = footprint_passable(terrain.clearance, unit_w, unit_h, off_x, off_y, passable)
        cells, comps, n_components = _components(passable, eight=0)
        if (unit_w == 1 and unit_h == 1) or terrain.uniform:
            cost_index = terrain.cost_index
        else:
            cost_index = np.empty(self.walkable.shape, dtype=terrain.cost_index.dtype)
            footprint_cost(terrain.cost_index, unit_w, unit_h, off_x, off_y, cost_index)
            _readonly(cost_index)
        return UnitLayer(
            unit_w, unit_h, cells, comps, n_components, int(n_passable),
            cost_index, terrain.cost_table, terrain.uniform, _open_share(passable, n_passable), [], [], rules,
        )

    # -- edits ------------------------------------------------------------------------

    def edit(self, rects=(), cells=(), *, solid: bool | None = None, cost: float | None = None) -> "GridMap":
        """A new generation with rectangles ``(x, y, w, h)`` and/or cells ``(x, y)`` set
        solid (``solid=True``), free (``solid=False``), and/or given a terrain ``cost``.

        Parts of rectangles outside the map are clipped. Clearance is recomputed only in
        the region the edit can influence (up and left of it, as far as the largest
        square that can reach it).
        """
        boxes = [tuple(int(v) for v in r) for r in rects] + [(int(x), int(y), 1, 1) for x, y in cells]
        return self.edit_many([(boxes, solid, cost)])

    def edit_many(self, changes) -> "GridMap":
        """One new generation holding the edits ``changes``, ``(boxes, solid, cost)`` each
        with ``boxes`` cell rectangles ``(x, y, w, h)``, applied in order: the cells end
        as :meth:`edit` called once per change leaves them (a cell made solid costs 1, as
        the constructor has it), for one copy of the arrays and one clearance update."""
        for _, solid, cost in changes:
            check_edit(solid, cost)
        walkable = self.walkable.copy()
        costed = any(cost is not None for _, _, cost in changes)
        new_cost = None if (not costed and self.uniform_cost) else self.cost.copy()
        x0, y0, x1, y1 = self.width, self.height, 0, 0
        for boxes, solid, cost in changes:
            for bx, by, bw, bh in boxes:
                if bw < 1 or bh < 1:
                    raise RequestError(f"rectangle {bx, by, bw, bh} has no area", at="rects")
                cx0, cy0 = max(bx, 0), max(by, 0)
                cx1, cy1 = min(bx + bw, self.width), min(by + bh, self.height)
                if cx0 >= cx1 or cy0 >= cy1:
                    continue
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
        if x0 < x1:
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
            _clearance=clearance,
            _cost_edit=cost_edit,
            _jump_seeds=self._seeds_for_edit(self._jump_seeds, self._table_seed),
            _landmark_seeds=self._seeds_for_edit(self._landmark_seeds, self._landmarks_seed) if solid else None,
            _piece_seeds=self._seeds_for_edit(
                {key: seed for key, seed in self._piece_seeds.items() if seed[1]}, self._pieces_seed),
            _edited=True,
        )

    def with_generation(self, generation: int) -> "GridMap":
        """The same map content stamped with another generation number (used by reloads)."""
        clone = GridMap.__new__(GridMap)
        clone.__dict__.update(self.__dict__)
        clone.generation = int(generation)
        clone.layers = LayerCache(self.layers.limit)
        return clone

    def __repr__(self) -> str:
        return f"GridMap(name={self.name!r}, {self.width}x{self.height}, generation={self.generation})"
