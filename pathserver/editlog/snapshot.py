"""The shared state's maps as this server holds them: the overlay of each edited map, the
uploads it serves and up to which entry each was loaded whole; the snapshot they are
loaded from when a server starts (or falls behind a trim) and compacted into."""

from __future__ import annotations

import logging
import threading
import time

import msgpack
import redis

from pathserver.editlog.connection import COMPACTOR, SNAPSHOT, STREAM, UPLOAD_IDS, UPLOADS, seq_of
from pathserver.errors import UnknownMapError
from pathserver.grid.gridmap import GridMap
from pathserver.grid.overlay import Overlay, map_crc

log = logging.getLogger("pathserver.state")

_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class Snapshot:
    """The overlays and uploads of ``registry``'s shared maps, read from and written to
    Redis through ``client``. ``lock``: one change at a time (the reader's, a reload's
    re-application); ``stand``: map -> the id up to which it was loaded whole, entries of
    it up to there are skipped. ``counts``: the state's counters; ``token()``: a fresh
    token (the compactor lock's owner); ``build_upload(fields)``: the GridMap of a
    put_map's fields. A map file that (re)loads gets its edits back on top of it."""

    def __init__(self, registry, client: redis.Redis, *, counts: dict, token, build_upload=None):
        self.registry, self.client, self.counts, self.token = registry, client, counts, token
        self.build_upload = build_upload
        self.lock = threading.RLock()
        self.stand: dict[str, tuple] = {}
        self._overlays: dict[str, Overlay] = {}
        self._bases: dict[str, str] = {}  # uploaded map -> the stream id of its put
        self._crcs: dict[str, tuple] = {}
        self._unlock_script = client.register_script(_UNLOCK)
        self._chained = registry.on_event
        registry.on_event = self._on_registry_event

    def overlay(self, name: str, gridmap: GridMap) -> Overlay:
        """The overlay of map ``name`` (``gridmap``'s size), made empty the first time."""
        overlay = self._overlays.get(name)
        if overlay is None:
            overlay = self._overlays[name] = Overlay.empty(gridmap.height, gridmap.width, self._bases.get(name, ""))
        return overlay

    def apply_put(self, name: str, text: str, token: str, prebuilt: dict) -> GridMap:
        """Serve the upload the put ``text`` stored, if it is still the stored one;
        ``prebuilt[token]``: (GridMap, load_ms) of our own put, not built again."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hget(UPLOADS, name)
        pipe.hget(UPLOAD_IDS, name)
        body, stored = pipe.execute()
        if body is None or stored is None:
            self.stand[name] = seq_of(text)
            raise UnknownMapError(f"map {name!r} was dropped before its upload {text} was applied here", at="map")
        stored = stored.decode()
        return self._serve_upload(name, stored, body, prebuilt.get(token) if stored == text else None)

    def _serve_upload(self, name: str, stored: str, body: bytes, prebuilt=None) -> GridMap:
        """Serve the upload stored as ``stored`` (its put's id): built from ``body``
        unless ``prebuilt`` holds it; entries of ``name`` up to ``stored`` are then skipped."""
        if prebuilt is None:
            if self.build_upload is None:
                raise RuntimeError("this server cannot build uploaded maps (no build_upload)")
            started = time.perf_counter()
            gridmap = self.build_upload(msgpack.unpackb(body, raw=False))
            load_ms = (time.perf_counter() - started) * 1000.0
        else:
            gridmap, load_ms = prebuilt
        self._overlays.pop(name, None)
        stored_map = self.registry.put_map(name, gridmap, load_ms=load_ms, bounded=False)
        self._bases[name] = stored
        self.stand[name] = seq_of(stored)
        return stored_map

    def apply_drop(self, name: str, seq: tuple) -> int | None:
        """Drop the upload ``name`` (entry ``seq``); the generation dropped, if served."""
        # The overlay first: a map file of that name loads as the upload goes, without it.
        self._overlays.pop(name, None)
        self._bases.pop(name, None)
        self.stand[name] = seq
        return self.registry.drop_map(name)

    def load(self) -> str:
        """Load the snapshot and the stored uploads (at one moment: one transaction) and
        stand where they do; returns the snapshot's id, where the stream is read from."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(SNAPSHOT)
        pipe.hgetall(UPLOADS)
        pipe.hgetall(UPLOAD_IDS)
        snapshot, uploads, upload_ids = pipe.execute()
        since = (snapshot.get(b"id") or b"0-0").decode()
        ids = {name.decode(): value.decode() for name, value in upload_ids.items()}
        with self.lock:
            served = {row["name"] for row in self.registry.info() if row["source"] == "upload"}
            for name in sorted(served - set(ids)):
                self.apply_drop(name, seq_of(since))
            for raw_name, body in uploads.items():
                name = raw_name.decode()
                if name in ids and self._bases.get(name) != ids[name]:
                    try:
                        self._serve_upload(name, ids[name], body)
                    except Exception as exc:
                        log.warning("stored upload %r not served here: %s", name, exc)
            for key, value in snapshot.items():
                if not key.startswith(b"map:"):
                    continue
                name, overlay = key[4:].decode(), Overlay.from_bytes(value)
                if overlay.base != ids.get(name, ""):
                    continue  # edits of an upload replaced since: its entries follow
                self._overlays[name] = overlay
                if overlay.base:
                    self.stand[name] = max(self.stand.get(name, (0, 0)), seq_of(since))
                self._put_back(name)
        return since

    def _put_back(self, name: str) -> None:
        """Serve map ``name`` with its overlay's cells set (caller holds ``lock``)."""
        overlay = self._overlays.get(name)
        if overlay is None:
            return
        try:
            self.registry.replace(name, overlay.apply_to)
        except UnknownMapError:
            pass  # its file is not (yet) here: put back when it loads

    def _on_registry_event(self, event: dict) -> None:
        """A map file (re)loaded: its edits go back on top of it."""
        if event["event"] == "loaded" and event["name"] in self._overlays:
            with self.lock:
                if self._bases.get(event["name"]) is None:
                    self._put_back(event["name"])
        if self._chained is not None:
            self._chained(event)

    def compact(self, since: str) -> None:
        """Write every overlay as the snapshot at ``since`` (the id they reflect: the
        caller, the reader, applies nothing meanwhile), then trim the stream to the
        previous snapshot's id: a server that loaded that one, or applied past it, still
        finds its next entry. One server at a time (the compactor lock)."""
        owner = self.token()
        if not self.client.set(COMPACTOR, owner, nx=True, px=30_000):
            return
        try:
            with self.lock:
                blobs = {f"map:{name}": overlay.to_bytes() for name, overlay in self._overlays.items()}
            with self.client.pipeline(transaction=True) as pipe:
                pipe.watch(SNAPSHOT)
                previous = pipe.hget(SNAPSHOT, "id")
                if previous is not None and seq_of(previous) >= seq_of(since):
                    return
                pipe.multi()
                pipe.delete(SNAPSHOT)
                pipe.hset(SNAPSHOT, mapping={"id": since, **blobs})
                pipe.execute()
            if previous is not None:
                self.client.xtrim(STREAM, minid=previous.decode(), approximate=False)
            self.counts["compactions"] += 1
            log.info("shared state compacted: snapshot at %s (%d maps), stream trimmed before %s", since,
                     len(blobs), previous.decode() if previous else "nothing")
        except redis.WatchError:
            pass  # another server wrote a snapshot meanwhile
        finally:
            self._unlock_script(keys=[COMPACTOR], args=[owner])

    def map_crcs(self) -> dict:
        """A CRC of each shared map (edited or uploaded), for ``stats``."""
        crcs = {}
        for name in sorted(set(self._overlays) | set(self._bases)):
            try:
                gridmap = self.registry.get(name)
            except UnknownMapError:
                continue
            cached = self._crcs.get(name)
            if cached is None or cached[0] is not gridmap:
                cached = self._crcs[name] = (gridmap, f"{map_crc(gridmap):08x}")
            crcs[name] = cached[1]
        return crcs
