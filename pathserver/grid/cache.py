"""The per-unit-size cache of one map generation, :class:`LayerCache`, and the arrays its
links give under each traversal rule set, :class:`MadeOnce`.

A :class:`~pathserver.grid.gridmap.GridMap` owns one (``gridmap.layers``). It keeps

- the :class:`~pathserver.grid.layers.UnitLayer` of each unit size (and traversal rule
  set) used lately, at most ``limit`` of them, the least recently used evicted first;
  keyed ``(unit_w, unit_h)``, or ``(unit_w, unit_h, rules)`` under a rule set;
- the map as each of the last :data:`TERRAINS_LIMIT` rule sets sees it (its walkable
  cells, clearance and costs: what the rule set's layers are built from);
- ``find_path``'s prepared calls (``pathserver.grid.prepared.PreparedCall``), keyed by the
  raw options of a call: each holds the arrays of one layer, so every eviction drops
  them all, and none outlives its layer in the cache;
- the distance fields ``next_steps`` steers on, the last :data:`FIELDS_LIMIT` (and at most
  :data:`FIELD_BYTES_LIMIT` bytes of them), each dropped with its layer.

Thread-safe: searches on many threads share one map. Lookups take no lock (single dict
operations are atomic under the GIL); building and evicting do.

``find_path``'s hot path uses :attr:`LayerCache.lookup` and :attr:`LayerCache.touch`,
which are the dicts' own methods, bound once: a Python method around them would add a
call to every find_path (``bench/core.py`` shows the short searches' cost).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

#: How many prepared calls (distinct unit size + option combinations) a map keeps; past
#: it they are all dropped and prepared again as used.
CALLS_LIMIT = 256
#: How many traversal rule sets' terrains a map keeps (each a clearance grid and costs).
TERRAINS_LIMIT = 4
#: How many steering fields a map keeps, and how many bytes of them at most.
FIELDS_LIMIT = 8
FIELD_BYTES_LIMIT = 256 * 1024 * 1024
#: How many arrays derived from a map's links (per traversal rule set) it keeps.
LINKS_LIMIT = 16


class MadeOnce:
    """Values made once per key, the last ``limit`` kept (the oldest made dropped first):
    what a map's links give under each traversal rule set, which a request picks freely."""

    def __init__(self, limit: int | None = None):
        self.limit = LINKS_LIMIT if limit is None else limit
        self._values: dict = {}
        self._lock = threading.Lock()

    def get(self, key, make):
        """The value of ``key``, ``make()`` the first time (and after it was dropped)."""
        found = self._values.get(key)
        if found is None:
            found = make()
            with self._lock:
                while len(self._values) >= self.limit:
                    del self._values[next(iter(self._values))]
                self._values[key] = found
        return found

    def __len__(self) -> int:
        return len(self._values)


class LayerCache:
    """The layers by ``(unit_w, unit_h)`` and the prepared calls by key.

    limit: how many unit sizes are kept (at least 1).

    lookup(key): the prepared call kept under ``key``, or None; TypeError for an
        unhashable key (a list unit size: never kept).
    touch(layer_key): count a use of that layer for the LRU; KeyError when another
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
        self._terrains: OrderedDict = OrderedDict()
        # Its own lock: a layer is built (under _build_lock) from its rule set's terrain.
        self._terrain_lock = threading.Lock()
        self._fields: OrderedDict = OrderedDict()
        self._field_bytes = 0
        # Keys of the prepared calls waiting for a table of their layer, by (layer key,
        # "jump_table" or "landmarks").
        self._awaiting: dict = {}

    def layer(self, unit_w: int, unit_h: int, build, rules=None):
        """The layer for a ``unit_w x unit_h`` unit (sizes already checked) under the
        traversal ``rules`` (a canonical tuple, None for the map's own terrain), made by
        ``build(unit_w, unit_h, rules)`` on first use; counts as a use for the LRU."""
        key = (unit_w, unit_h) if rules is None else (unit_w, unit_h, rules)
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
                layer = build(unit_w, unit_h, rules)
            with self._lock:
                self._layers[key] = layer
                self._layers.move_to_end(key)
                while len(self._layers) > self.limit:
                    evicted, _ = self._layers.popitem(last=False)
                    self._calls.clear()
                    for field_key in [k for k, entry in self._fields.items() if entry.layer_key == evicted]:
                        self._field_bytes -= self._fields.pop(field_key).nbytes
        return layer

    def terrain(self, rules, build):
        """The map as the traversal ``rules`` see it, made by ``build(rules)`` on first use
        and kept for the last :data:`TERRAINS_LIMIT` rule sets (its layers hold their own
        references, so an evicted terrain's layers stay valid)."""
        terrain = self._terrains.get(rules)
        if terrain is not None:
            try:
                self._terrains.move_to_end(rules)
            except KeyError:
                pass
            return terrain
        with self._terrain_lock:
            terrain = self._terrains.get(rules)
            if terrain is None:
                terrain = build(rules)
            with self._lock:
                self._terrains[rules] = terrain
                self._terrains.move_to_end(rules)
                while len(self._terrains) > TERRAINS_LIMIT:
                    self._terrains.popitem(last=False)
        return terrain

    def field(self, key):
        """The steering field kept under ``key`` (counts as a use), or None."""
        entry = self._fields.get(key)
        if entry is not None:
            try:
                self._fields.move_to_end(key)
            except KeyError:
                pass
        return entry

    def keep_field(self, key, entry) -> None:
        """Keep a steering field (an object with ``layer_key`` and ``nbytes``) under
        ``key``, dropping the least recently used past the limits; not kept when its layer
        was evicted meanwhile."""
        with self._lock:
            if entry.layer_key not in self._layers:
                return
            previous = self._fields.pop(key, None)
            if previous is not None:
                self._field_bytes -= previous.nbytes
            self._fields[key] = entry
            self._field_bytes += entry.nbytes
            while len(self._fields) > 1 and (len(self._fields) > FIELDS_LIMIT
                                             or self._field_bytes > FIELD_BYTES_LIMIT):
                _, dropped = self._fields.popitem(last=False)
                self._field_bytes -= dropped.nbytes

    def fields(self) -> list:
        """The keys of the steering fields kept now, least recently used first."""
        with self._lock:
            return list(self._fields)

    def sizes(self) -> list[tuple]:
        """The keys of the cached layers (unit sizes, with their rule set where there is
        one), least recently used first."""
        with self._lock:
            return list(self._layers)

    def keep(self, key, call) -> None:
        """Keep ``call`` (which holds the layer kept under ``call.layer_key``) under ``key``
        for the next call alike. An unhashable key (a list unit size) is not kept."""
        calls = self._calls
        if len(calls) >= CALLS_LIMIT:
            calls.clear()
        try:
            calls[key] = call
        except TypeError:
            return
        if call.layer_key not in self._layers:  # evicted meanwhile: it must not outlive it
            calls.pop(key, None)

    def await_table(self, layer_key, key, kind: str = "jump_table") -> None:
        """Note that the call kept under ``key`` runs without the table ``kind`` of the
        layer kept under ``layer_key`` (``"jump_table"``: the online JPS until JPS+'s is
        built; ``"landmarks"``: A* without them) until it is built (see
        :meth:`table_built`). An unhashable key (never kept) is not noted."""
        try:
            hash(key)
        except TypeError:
            return
        with self._lock:
            self._awaiting.setdefault((layer_key, kind), []).append(key)

    def table_built(self, layer_key, table, kind: str = "jump_table") -> None:
        """The table ``kind`` of a layer is built: each call awaiting it is replaced by
        the same call carrying it (``call.with_table``), in place, so the count and keys
        of the kept calls do not change. Safe to call more than once."""
        with self._lock:
            for key in self._awaiting.pop((layer_key, kind), ()):
                call = self._calls.get(key)
                if call is not None:
                    self._calls[key] = call.with_table(kind, table)

    def landmarks_built(self, layer_key, landmarks) -> None:
        """A layer's landmarks are in place: :meth:`table_built` for them."""
        self.table_built(layer_key, landmarks, "landmarks")

    def cached_layers(self) -> list:
        """The cached layers, least recently used first."""
        with self._lock:
            return list(self._layers.values())

    def forget(self, key) -> None:
        """Drop the call kept under ``key``, if any (see ``touch``)."""
        self._calls.pop(key, None)

    def prepared_calls(self) -> list:
        """The prepared calls kept now (their sizes are among :meth:`sizes`)."""
        return list(self._calls.values())
