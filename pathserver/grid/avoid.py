"""A request's avoided cells (``avoid``, ``avoid_cost``), without touching the shared map.

The kernels read a unit's grids (``cells``: where it can stand, ``cost_index``: what
entering costs). For one request, :class:`Avoided` lays the avoided cells on this
thread's private copies of them (:mod:`pathserver.core.avoid`: the anchors whose footprint
would overlap an avoided cell become solid, or with ``avoid_cost`` that dear), hands the
copies to the kernels, and lifts the cells again. A copy is made once per thread and
layer (the last :data:`SCRATCH_LIMIT` kept) and then costs only the avoided area per
request, so a few hundred avoided cells cost a request little, whatever the map's size.

The copies are handed to the kernels through read-only views, as the cached layers' own
arrays are: numba compiles one specialisation per writeability, and a second one of the
search costs seconds.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from pathserver.core.avoid import block_anchors, boxes_from, lay_cells, price_anchors, restore_anchors
from pathserver.core.relay import lay_avoided, lift_avoided, new_overlay
from pathserver.core.repair import MANY_CUTS, RELAX_FULL, RELAX_RADIUS, relax
from pathserver.floors import check_floor_column
from pathserver.options import AVOID, Avoid

#: How many layers' copies one thread keeps (least recently used dropped).
SCRATCH_LIMIT = 4

_NO_BOXES = np.zeros((0, 4), dtype=np.int64)


def blocker_boxes(gridmap, avoid: Avoid) -> np.ndarray:
    """A checked ``avoid`` as int64 (K, 4) boxes ``x0, y0, x1, y1`` (ends excluded)
    clipped to the map, empty ones left out. Float coordinates cover the cells they
    touch: a cell ``(x, y)`` is the cell the point falls in, a rectangle every cell it
    overlaps."""
    if not len(avoid.cells) and not len(avoid.rects):
        return _NO_BOXES
    # A map of one floor: a floor given must be 0 (maps of several take pathserver.grid.linked's way).
    for floors, key, column in ((avoid.cell_floors, "cells", 2), (avoid.rect_floors, "rects", 4)):
        if floors is not None:
            check_floor_column(floors, gridmap.floors, f"{AVOID.name}.{key}", column)
    return boxes_from(avoid.cells, avoid.rects, float(gridmap.width), float(gridmap.height))


class _Scratch:
    """One thread's writable copy of one layer's ``cells`` (and, made on first need, of
    its cost index), equal to the originals between requests."""

    __slots__ = ("source", "cells", "cells_view", "indexes", "bits", "relaxed")

    def __init__(self, cells: np.ndarray):
        self.source = weakref.ref(cells)
        self.cells = cells.copy()
        self.cells_view = _readonly_view(self.cells)
        # (source index id, dtype) -> (source index, writable copy, read-only view)
        self.indexes: dict = {}
        # (source bitmaps, writable copy, read-only view) of JPS's bitmaps, made on need
        self.bits = None
        # (writable copy, read-only view) of the cells, for a relaxation (made on need)
        self.relaxed = None

    def relaxation(self) -> tuple:
        """(copy, view) of the layer's cells for :meth:`Avoided.relax` to block some of
        the avoided anchors in (equal to the layer's between requests)."""
        if self.relaxed is None:
            copy = self.source().copy()
            self.relaxed = (copy, _readonly_view(copy))
        return self.relaxed

    def bitmaps(self, source: np.ndarray) -> tuple:
        """(copy, view) of JPS's bitmaps of the cells (``source``: the layer's)."""
        if self.bits is None or self.bits[0] is not source:
            copy = source.copy()
            self.bits = (source, copy, _readonly_view(copy))
        return self.bits[1], self.bits[2]

    def index(self, cost_index: np.ndarray, uniform: bool, dtype) -> tuple:
        """(source, copy, view) of the cost index (all zeros for a uniform map, whose
        layer has only a placeholder), widened to ``dtype``."""
        key = (None if uniform else id(cost_index), np.dtype(dtype).str)
        entry = self.indexes.get(key)
        if entry is None:
            if uniform:
                source = np.zeros(self.cells.shape, dtype=dtype)
            else:
                source = cost_index.astype(dtype, copy=dtype != cost_index.dtype)
            source = _readonly_view(source) if source is cost_index else _readonly(source)
            copy = np.array(source)
            entry = (source, copy, _readonly_view(copy))
            self.indexes[key] = entry
        return entry


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _readonly_view(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.setflags(write=False)
    return view


_local = threading.local()


#: Words of JPS's bitmaps one request notes as changed (past them, lifting copies all).
LOG_WORDS = 1 << 15


def _log() -> np.ndarray:
    """This thread's log of the bitmap words a request changed."""
    log = getattr(_local, "log", None)
    if log is None:
        log = _local.log = np.zeros(LOG_WORDS, dtype=np.int64)
    return log


def _overlay(height: int, width: int) -> np.ndarray:
    """This thread's overlay (:mod:`pathserver.core.relay`) for an H x W grid, its marks
    clear between requests."""
    kept = getattr(_local, "overlay", None)
    if kept is None or kept[0] != (height, width):
        kept = _local.overlay = ((height, width), new_overlay(height, width))
    return kept[1]


def _touched(cells: int) -> np.ndarray:
    """This thread's marks of the cells a laying has done (all clear between requests),
    for grids of up to ``cells`` cells."""
    touched = getattr(_local, "touched", None)
    if touched is None or touched.shape[0] * 64 < cells:
        touched = _local.touched = np.zeros((cells + 63) >> 6, dtype=np.uint64)
    return touched


#: The most avoided anchors the relaxed rounds of one request block one by one
#: (:meth:`Avoided.relax`; past them, all the avoided cells are laid at once).
RELAX_ANCHORS = 4096


def _relax_boxes() -> np.ndarray:
    """This thread's boxes of the anchors a request's relaxed rounds blocked."""
    boxes = getattr(_local, "relax_boxes", None)
    if boxes is None:
        boxes = _local.relax_boxes = np.zeros((RELAX_ANCHORS, 4), dtype=np.int64)
    return boxes


def _scratch(cells: np.ndarray) -> _Scratch:
    kept = getattr(_local, "scratch", None)
    if kept is None:
        kept = _local.scratch = {}
    scratch = kept.pop(id(cells), None)
    if scratch is None or scratch.source() is not cells:
        scratch = _Scratch(cells)
    kept[id(cells)] = scratch  # most recently used last
    while len(kept) > SCRATCH_LIMIT:
        del kept[next(iter(kept))]
    return scratch


def _lay(cells, grid, bitmaps, boxes, unit_w, unit_h) -> tuple:
    """``(laid, bitmaps, overlay)``: the boxes' anchors, blocked in ``grid``, laid on this
    thread's copy of the layer's JPS ``bitmaps`` (the layer's ``cells`` key the copy) and
    its overlay; ``laid`` the arguments of :func:`~pathserver.core.relay.lift_avoided`
    that undo it, the other two read-only views."""
    copy, view = _scratch(cells).bitmaps(bitmaps)
    log = _log()
    overlay = _overlay(*grid.shape)
    count = lay_avoided(copy, grid, boxes, unit_w, unit_h, _touched(grid.size), overlay, log)
    return (copy, bitmaps, overlay, log, count), view, _readonly_view(overlay)


def _lay_boxes(rows: int) -> np.ndarray:
    """This thread's room for the boxes of :meth:`Avoided.laid` (at least ``rows``)."""
    boxes = getattr(_local, "lay_boxes", None)
    if boxes is None or boxes.shape[0] < rows:
        boxes = _local.lay_boxes = np.zeros((max(rows, 256), 4), dtype=np.int64)
    return boxes


class _Relaxation:
    """A request's relaxed rounds so far (:meth:`Avoided.relax`): this thread's copy of the
    layer's grid with some avoided anchors blocked and its read-only view, how many
    anchors the thread's boxes hold, and the laying of them (bitmaps and overlay) while
    one is in place."""

    __slots__ = ("grid", "grid_view", "source_grid", "anchors", "laid")

    def __init__(self, grid, grid_view, source_grid):
        self.grid, self.grid_view, self.source_grid = grid, grid_view, source_grid
        self.anchors = 0
        self.laid = None


class Avoided:
    """``with Avoided(...) as (cells, cost_index, cost_table, uniform):`` the unit's grids
    with the avoided cells laid on (as the kernels take them), lifted on leaving.

    cells, cost_index, cost_table, uniform: the layer's (``uniform`` a bool).
    unit_w, unit_h: the unit's size. boxes: from :func:`blocker_boxes` (may be empty: then
    the grids are handed on as they are). avoid_cost: None blocks the avoided anchors;
    a number >= 1 makes entering them cost at least that instead. Inside the ``with``,
    :meth:`release` gives the start its own value back (a unit may leave where it stands).
    """

    __slots__ = ("grids", "unit_w", "unit_h", "boxes", "avoid_cost", "_undo", "_laid", "_relaxed")

    def __init__(self, cells, cost_index, cost_table, uniform, unit_w, unit_h, boxes, avoid_cost):
        self.grids = (cells, cost_index, cost_table, bool(uniform))
        self.unit_w = unit_w
        self.unit_h = unit_h
        self.boxes = boxes
        self.avoid_cost = avoid_cost
        self._undo = None
        self._laid = None
        self._relaxed = None

    @classmethod
    def laid(cls, cells, cost_index, cost_table, uniform, unit_w, unit_h, avoid: Avoid, start,
             goal) -> "Avoided | None":
        """The quick way in: a checked ``avoid``'s cells and rectangles blocked for a unit
        going from ``start`` to ``goal`` by one kernel call
        (:func:`pathserver.core.avoid.lay_cells`), the start freed (as :meth:`release`
        does): an Avoided whose ``with`` finds them laid, or None (nothing laid) where the
        goal is not free with them laid or none is on the map (the caller's general way
        snaps and lays then)."""
        if avoid.cell_floors is not None or avoid.rect_floors is not None:
            return None  # points with floors: the general way moves them onto their floors
        scratch = _scratch(cells)
        rows, rects = avoid.cells, avoid.rects
        boxes = _lay_boxes(rows.shape[0] + rects.shape[0])
        count = lay_cells(scratch.cells, cells, rows, rects, unit_w, unit_h, *start, *goal, boxes)
        if count <= 0:  # refused, or all off the map: the general way searches as without them
            return None
        avoided = cls(cells, cost_index, cost_table, uniform, unit_w, unit_h, boxes[:count], None)
        avoided._undo = (scratch.cells, cells)
        return avoided

    @property
    def blocking(self) -> bool:
        """Whether avoided anchors are solid (not merely dear) in the grids handed on."""
        return self.avoid_cost is None and len(self.boxes) > 0

    def __enter__(self) -> tuple:
        cells, cost_index, cost_table, uniform = self.grids
        if len(self.boxes) == 0:
            return self.grids
        scratch = _scratch(cells)
        if self._undo is not None:  # laid already (:meth:`laid`)
            return scratch.cells_view, cost_index, cost_table, uniform
        if self.avoid_cost is None:
            block_anchors(scratch.cells, self.boxes, self.unit_w, self.unit_h)
            self._undo = (scratch.cells, scratch.source())
            return scratch.cells_view, cost_index, cost_table, uniform
        # avoid_cost: one more entry in the cost table, the index of the anchors pointing
        # at it (the table need not stay sorted: the searches only look costs up).
        table = _readonly(np.append(cost_table if not uniform else np.ones(1), self.avoid_cost))
        slot = table.shape[0] - 1
        dtype = cost_index.dtype if not uniform else np.uint8
        while slot > np.iinfo(dtype).max:
            dtype = np.uint16 if dtype == np.uint8 else np.uint32
        source, copy, view = scratch.index(cost_index, uniform, dtype)
        price_anchors(copy, source, cost_table, uniform, self.boxes, self.unit_w, self.unit_h, slot,
                      float(self.avoid_cost))
        self._undo = (copy, source)
        return cells, view, table, False

    def release(self, x: int, y: int) -> None:
        """Inside the ``with``: cell ``(x, y)`` (the start) standable again if the unit
        could stand there before its anchors were blocked."""
        if self._undo is not None and self.avoid_cost is None:
            grid, source = self._undo
            grid[y, x] = source[y, x]

    def relax(self, path: np.ndarray, bitmaps: np.ndarray) -> tuple | None:
        """Inside the ``with``, the avoided cells blocking (after :meth:`release`): a
        relaxation of the grid handed on that the cell path ``path``, found on the last
        relaxation (the layer's own grid at first), no longer walks through: blocks the
        avoided anchors near where ``path`` steps on them
        (:func:`pathserver.core.repair.relax`) in this thread's copy of the layer's grid.
        Returns ``(grid, bitmaps, overlay)``: the relaxation and the laying of its
        anchors on the layer's JPS ``bitmaps`` (as :meth:`overlay`), read-only views; or
        None when ``path`` is cut in more than ``MANY_CUTS`` places (the cells lie on its
        way: search round all of them) or past :data:`RELAX_ANCHORS` anchors. Undone on
        leaving, or by :meth:`overlay`."""
        grid, source = self._undo
        state = self._relaxed
        if state is None:
            state = self._relaxed = _Relaxation(*_scratch(self.grids[0]).relaxation(), source)
        self._lift(state)
        boxes = _relax_boxes()
        last = relax(path, len(path), grid, state.grid, RELAX_RADIUS, MANY_CUTS, boxes, state.anchors)
        if last < 0:
            if last == RELAX_FULL:
                state.anchors = len(boxes)
            return None
        state.anchors = last
        state.laid, bits, overlay = _lay(self.grids[0], state.grid, bitmaps, boxes[:last], 1, 1)
        return state.grid_view, bits, overlay

    def overlay(self, bitmaps: np.ndarray) -> tuple:
        """Inside the ``with``, the avoided cells blocking (after :meth:`release`):
        ``(bitmaps, overlay)`` for JPS+ to search the grid handed on with the layer's
        table (:func:`pathserver.core.jpsplus.jps_plus`): the layer's JPS ``bitmaps`` with
        the avoided cells laid on (their stops only) and where that changed them
        (:mod:`pathserver.core.relay`), on this thread's copies, lifted on leaving; both
        read-only. Undoes :meth:`relax`."""
        self._unrelax()
        grid, _ = self._undo
        self._laid, bits, overlay = _lay(self.grids[0], grid, bitmaps, self.boxes, self.unit_w, self.unit_h)
        return bits, overlay

    @staticmethod
    def _lift(state) -> None:
        if state.laid is not None:
            lift_avoided(*state.laid)
            state.laid = None

    def _unrelax(self) -> None:
        """Undo :meth:`relax`: the copies of the layer's grid and bitmaps equal it again."""
        state = self._relaxed
        if state is None:
            return
        self._relaxed = None
        self._lift(state)
        restore_anchors(state.grid, state.source_grid, _relax_boxes()[:state.anchors], 1, 1)

    def __exit__(self, *exc) -> None:
        self._unrelax()
        if self._laid is not None:
            lift_avoided(*self._laid)
            self._laid = None
        if self._undo is not None:
            grid, source = self._undo
            self._undo = None
            restore_anchors(grid, source, self.boxes, self.unit_w, self.unit_h)
