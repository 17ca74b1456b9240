"""The tables a unit layer builds in the background, each once, on a thread of its own:
JPS+'s jump table (:func:`jump_table_of`), A*'s landmarks (:func:`landmarks_of`) and
JPS+'s goal bounds (:func:`bounds_of`, one build at a time in the process:
:class:`BoundsBuilds`), and the exit hook that stops a goal bounds build as the program
ends. Which layers get which table, :class:`~pathserver.grid.layers.UnitLayer` decides.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref

import numpy as np

from pathserver.core.bounds import ROW as BOUNDS_ROW
from pathserver.core.bounds import bound_rows, fill_bounds, legal_moves
from pathserver.core.jpsplus import jump_table, update_jump_table
from pathserver.core.landmarks import LANDMARKS, LEAST_SCALE, landmark_table
from pathserver.core.status import DIAGONAL_NO_CORNER_CUTTING

#: JPS+'s goal bounds (:mod:`pathserver.core.bounds`) take a flood of the map from each
#: jump point: kept where that is at most this many cells in all (jump points times
#: passable cells; docs/design.md says how long that takes, bench/warthog.py measures
#: it). Which layers ask for a build: :meth:`~pathserver.grid.layers.UnitLayer.
#: start_bounds`.
BOUNDS_MAX_WORK = 1 << 28
#: A build checks between floods of about this many cells whether its layer is still in
#: use, and stops if not.
BOUNDS_CHUNK_WORK = 1 << 21


class Background:
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


def jump_table_of(cells: np.ndarray, seed) -> np.ndarray:
    """The JPS+ jump table of ``cells``: updated from ``seed``, ``(cells, table)`` of an
    earlier generation of the same shape, where there is one, else built whole."""
    if seed is not None and seed[0].shape == cells.shape:
        table, _ = update_jump_table(cells, seed[0], seed[1])
        return table
    return jump_table(cells)


# Set as the interpreter starts to exit (before it joins the threads left running): a goal
# bounds build then stops at its next check instead of holding the exit up for seconds.
_exiting = threading.Event()
# threading's own hook (concurrent.futures uses it); atexit's runs only after the join.
getattr(threading, "_register_atexit", atexit.register)(_exiting.set)


class BoundsBuilds:
    """The goal bounds builds of the process, one at a time (each takes seconds of a
    core): a layer asking while another's runs waits its turn, first come first served,
    and is passed over if it is no longer in use by then. Holds layers by weak reference
    only. A layer (:class:`~pathserver.grid.layers.UnitLayer`) tells whether its build
    started (``bounds_started``) and starts it when its turn comes (``build_bounds``)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running = False
        self._waiting: list = []

    def ask(self, layer, on_built) -> None:
        with self._lock:
            if layer.bounds_started or any(ref() is layer for ref, _ in self._waiting):
                return
            if self._running:
                self._waiting.append((weakref.ref(layer), on_built))
                return
            self._running = self._start(layer, on_built)

    def waiting(self, layer) -> bool:
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
    def _start(layer, on_built) -> bool:
        # Under the lock: a layer is waiting or started, never neither in between. The
        # build thread takes the lock only as it ends.
        return layer.build_bounds(on_built)


bounds_builds = BoundsBuilds()


def bounds_of(cells: np.ndarray, alive) -> tuple | None:
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
        bounds_builds.done()


def landmarks_of(layer) -> np.ndarray | None:
    """A*'s landmarks on ``layer`` (a :class:`~pathserver.grid.layers.UnitLayer`), or
    None: no cell to stand on, or costs float32 cannot hold finely enough (see
    :data:`~pathserver.core.landmarks.LEAST_SCALE`)."""
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
                              table, work_float, work_int, layer.hex or DIAGONAL_NO_CORNER_CUTTING)
    return table if scale >= LEAST_SCALE else None
