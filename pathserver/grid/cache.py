"""The per-unit-size cache of one map generation: :class:`LayerCache`.

A :class:`~pathserver.grid.gridmap.GridMap` owns one (``gridmap.layers``). It keeps

- the :class:`~pathserver.grid.gridmap.UnitLayer` of each unit size used lately, at most
  ``limit`` of them, the least recently used evicted first;
- ``find_path``'s prepared calls (``pathserver.grid.search.PreparedCall``), keyed by the
  raw options of a call: each holds the arrays of one layer, so every eviction drops
  them all, and none outlives its layer in the cache.

Thread-safe: searches on many threads share one map. Lookups take no lock (single dict
operations are atomic under the GIL); building and evicting do.

``find_path``'s hot path uses :attr:`LayerCache.lookup` and :attr:`LayerCache.touch`,
which are the dicts' own methods, bound once: a Python method around them added 0.1 µs
to a find_path call of 3 µs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

#: How many prepared calls (distinct unit size + option combinations) a map keeps; past
#: it they are all dropped and prepared again as used.
CALLS_LIMIT = 256


class LayerCache:
    """The layers by ``(unit_w, unit_h)`` and the prepared calls by key.

    limit: how many unit sizes are kept (at least 1).

    lookup(key): the prepared call kept under ``key``, or None; TypeError for an
        unhashable key (a list unit size: never kept).
    touch(size): count a use of the layer of ``size`` for the LRU; KeyError when another
        thread evicted it meanwhile (then :meth:`forget` the call that holds it: it is
        still valid for the call in hand, and the next call alike prepares again).
    """

    def __init__(self, limit: int):
        self.limit = max(1, int(limit))
        self._layers: OrderedDict = OrderedDict()
        # Cleared, never replaced: lookup is bound to it.
        self._calls: dict = {}
        self.lookup = self._calls.get
        self.touch = self._layers.move_to_end
        self._lock = threading.Lock()
        # One builder at a time: two threads asking for a new size at once build it once.
        self._build_lock = threading.Lock()

    def layer(self, unit_w: int, unit_h: int, build):
        """The layer for a ``unit_w x unit_h`` unit (sizes already checked), made by
        ``build(unit_w, unit_h)`` on first use; counts as a use for the LRU."""
        key = (unit_w, unit_h)
        layer = self._layers.get(key)
        if layer is not None:
            try:
                self._layers.move_to_end(key)
            except KeyError:  # evicted since the get: only its recency is lost
                pass
            return layer
        with self._build_lock:
            layer = self._layers.get(key)
            if layer is None:
                layer = build(unit_w, unit_h)
            with self._lock:
                self._layers[key] = layer
                self._layers.move_to_end(key)
                while len(self._layers) > self.limit:
                    self._layers.popitem(last=False)
                    self._calls.clear()
        return layer

    def sizes(self) -> list[tuple[int, int]]:
        """The cached unit sizes, least recently used first."""
        with self._lock:
            return list(self._layers)

    def keep(self, key, call) -> None:
        """Keep ``call`` (which holds the layer of size ``call.size``) under ``key`` for
        the next call alike. An unhashable key (a list unit size) is not kept."""
        calls = self._calls
        if len(calls) >= CALLS_LIMIT:
            calls.clear()
        try:
            calls[key] = call
        except TypeError:
            return
        if call.size not in self._layers:  # evicted meanwhile: it must not outlive it
            calls.pop(key, None)

    def forget(self, key) -> None:
        """Drop the call kept under ``key``, if any (see ``touch``)."""
        self._calls.pop(key, None)

    def prepared_calls(self) -> list:
        """The prepared calls kept now (their sizes are among :meth:`sizes`)."""
        return list(self._calls.values())
