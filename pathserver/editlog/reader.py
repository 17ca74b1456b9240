"""The shared state's reader, one thread: it loads the snapshot, reads the stream in order
with blocking reads, applies each entry to the registry and tells whoever waits for it
(a handler's change, the socket loop's submitted edits and ``after`` requests)."""

from __future__ import annotations

import collections
import logging
import threading
import time

import msgpack
import redis

from pathserver.editlog.connection import (
    HOUSEKEEPING_S, LAG_WINDOW, READ_BLOCK_MS, READ_COUNT, STREAM, seq_of, shown_url,
)
from pathserver.editlog.snapshot import Snapshot
from pathserver.errors import AfterTimeoutError
from pathserver.grid.gridmap import GridMap
from pathserver.grid.overlay import edit_boxes

log = logging.getLogger("pathserver.state")


class Reader:
    """Applies the stream at ``client`` to ``snapshot``'s maps. ``applied`` (``(ms, n)``)
    and ``applied_text``: the last entry applied here; ``waiting``: token -> who waits for
    that change (its ``set(outcome, seq)`` is called once applied); ``prebuilt``: token ->
    (GridMap, load_ms) of this server's own put; ``on_applied()``: called after each read
    that applied entries. ``caught_up`` is set once what Redis held at the start is
    applied; ``connected``, whether Redis answered the last read."""

    def __init__(self, client: redis.Redis, snapshot: Snapshot, *, url: str, counts: dict, on_applied,
                 after_timeout_s: float, compact_entries: int):
        self.client, self.snapshot, self.registry = client, snapshot, snapshot.registry
        self.url, self.counts, self.on_applied = url, counts, on_applied
        self.after_timeout_s, self.compact_entries = after_timeout_s, compact_entries
        #: Set once the reader has applied everything Redis held when it started.
        self.caught_up = threading.Event()
        self.connected = False
        self.applied, self.applied_text = (0, 0), "0-0"
        self.progress = threading.Condition()
        self.waiting: dict[str, object] = {}
        self.prebuilt: dict[str, tuple] = {}
        self.lags: collections.deque = collections.deque(maxlen=LAG_WINDOW)

    def reached(self, seq: tuple) -> bool:
        """Whether the entry ``seq`` (``(ms, n)``) is applied here."""
        return self.applied >= seq

    def wait_applied(self, seq: tuple, text: str) -> None:
        """Block until entry ``seq`` is applied here; AfterTimeoutError past the bound."""
        with self.progress:
            if not self.progress.wait_for(lambda: self.applied >= seq, self.after_timeout_s):
                raise AfterTimeoutError(f"entry {text} not applied here within {self.after_timeout_s:g} s (applied "
                                        f"up to {self.applied_text}); retry after 100 ms", retry_after_ms=100,
                                        at="after")

    def run(self, stop: threading.Event) -> None:
        """The reader thread: read and apply until ``stop`` is set, through outages."""
        backoff = 0.05
        checked = 0.0
        waited_since = time.monotonic()
        while not stop.is_set():
            try:
                if not self.caught_up.is_set():
                    self._load()
                    while self._read(block=False) == READ_COUNT:
                        pass
                    self._note_connected(True)
                    self.caught_up.set()
                elif not self.connected:
                    self._check_trimmed()  # back after an outage: is our position still in the stream?
                self._note_connected(True)
                backoff = 0.05
                if time.monotonic() - checked > HOUSEKEEPING_S:
                    # Before reading on: a server that stalled finds out here whether the
                    # stream was trimmed past it meanwhile.
                    checked = time.monotonic()
                    self._housekeeping()
                self._read(block=True)
            except redis.RedisError as exc:
                self._note_connected(False, exc)
                if not self.caught_up.is_set() and time.monotonic() - waited_since > 5.0:
                    waited_since = time.monotonic()
                    log.warning("still waiting for the shared state at %s before taking requests: %s",
                                shown_url(self.url), exc)
                stop.wait(backoff)
                backoff = min(1.0, backoff * 2)
            except Exception:
                log.exception("the shared state's reader failed; retrying")
                stop.wait(0.5)

    def _note_connected(self, connected: bool, exc: Exception | None = None) -> None:
        if connected and not self.connected:
            log.info("shared state %s reachable; applied up to %s", shown_url(self.url), self.applied_text)
        elif not connected and (self.connected or self.counts["resyncs"] == 0 and not self.caught_up.is_set()):
            log.warning("shared state %s unreachable (%s: %s): edits are refused, paths are answered on the maps "
                        "as they are, until it is back", shown_url(self.url), type(exc).__name__, exc)
        self.connected = connected

    def _read(self, *, block: bool) -> int:
        """Apply the next entries (waiting up to READ_BLOCK_MS for one when ``block``);
        returns how many came."""
        reply = self.client.xread({STREAM: self.applied_text}, count=READ_COUNT,
                                  block=READ_BLOCK_MS if block else None)
        entries = [(entry_id.decode(), fields) for _, batch in reply or () for entry_id, fields in batch]
        start = 0
        while start < len(entries):
            # A run of edits of one map is applied as one edit of it (one copy of its arrays).
            end = start + 1
            op, name = entries[start][1].get(b"op"), entries[start][1].get(b"map")
            while op == b"edit" and end < len(entries) and entries[end][1].get(b"op") == op \
                    and entries[end][1].get(b"map") == name:
                end += 1
            if end - start > 1:
                self._apply_edits(entries[start:end])
            else:
                self._apply_entry(*entries[start])
            start = end
        count = len(entries)
        if count:
            with self.progress:
                self.progress.notify_all()
            self.on_applied()
        return count

    def _apply_entry(self, text: str, fields: dict) -> None:
        seq = seq_of(text)
        op, name = fields.get(b"op", b"").decode(), fields.get(b"map", b"").decode()
        token = fields.get(b"token", b"").decode()
        with self.snapshot.lock:
            try:
                skipped = seq <= self.snapshot.stand.get(name, (0, 0))
                if skipped:
                    result = self.registry.get(name) if op != "drop" else None
                elif op == "edit":
                    result = self._apply_edit(name, msgpack.unpackb(fields[b"body"], raw=False))
                elif op == "put":
                    result = self.snapshot.apply_put(name, text, token, self.prebuilt)
                elif op == "drop":
                    result = self.snapshot.apply_drop(name, seq)
                else:
                    raise ValueError(f"unknown op {op!r}")
                self.counts["skipped" if skipped else "changes"] += 1
            except redis.RedisError:
                raise  # not applied: the reader reads this entry again once Redis answers
            except Exception as exc:
                result = exc
                self.counts["failed"] += 1
                if token not in self.waiting:
                    log.warning("entry %s (%s of %r) not applied here: %s", text, op, name, exc)
            self.applied, self.applied_text = seq, text
        waiter = self.waiting.pop(token, None)
        if waiter is not None:
            waiter.set(result, text)
        self._note_lag(time.time(), text)

    def _apply_edits(self, run: list) -> None:
        """Apply a run of edit entries of one map as one edit; entry by entry if that fails."""
        name = run[0][1][b"map"].decode()
        stand = self.snapshot.stand.get(name, (0, 0))
        fresh = [(text, fields) for text, fields in run if seq_of(text) > stand]
        if len(fresh) < len(run):
            for text, fields in run:
                self._apply_entry(text, fields)
            return
        changes = []
        for _, fields in run:
            change = msgpack.unpackb(fields[b"body"], raw=False)
            if change.get("links") is not None:  # a map's new links: entry by entry
                for text, entry in run:
                    self._apply_entry(text, entry)
                return
            changes.append((edit_boxes(change.get("rects") or (), change.get("cells") or ()), change.get("solid"),
                            change.get("cost")))
        with self.snapshot.lock:
            try:
                edited = self.registry.apply_edits(name, changes)
            except Exception:
                edited = None
            else:
                overlay = self.snapshot.overlay(name, edited)
                overlay.record(edited, [box for boxes, _, _ in changes for box in boxes])
                self.counts["changes"] += len(run)
                self.applied, self.applied_text = seq_of(run[-1][0]), run[-1][0]
        if edited is None:
            for text, fields in run:
                self._apply_entry(text, fields)
            return
        now = time.time()
        for text, fields in run:
            waiter = self.waiting.pop(fields.get(b"token", b"").decode(), None)
            if waiter is not None:
                waiter.set(edited, text)
            self._note_lag(now, text)

    def _note_lag(self, now: float, text: str) -> None:
        """The lag from Redis accepting entry ``text`` (its id's milliseconds: Redis's clock,
        this machine's on loopback; rounded down, so a lag reads up to 1 ms long) to now."""
        self.lags.append(now - seq_of(text)[0] / 1000.0)

    def _apply_edit(self, name: str, change: dict) -> GridMap:
        rects, cells, links = change.get("rects") or (), change.get("cells") or (), change.get("links")
        edited = self.registry.apply_edit(name, rects=rects, cells=cells, solid=change.get("solid"),
                                          cost=change.get("cost"), **({} if links is None else {"links": links}))
        overlay = self.snapshot.overlay(name, edited)
        overlay.record(edited, edit_boxes(rects, cells))
        if links is not None:
            overlay.links = links
        return edited

    def _load(self) -> None:
        """Load the snapshot and the uploads; the stream is read from the snapshot's id on."""
        since = self.snapshot.load()
        with self.snapshot.lock:
            if seq_of(since) > self.applied:
                self.applied, self.applied_text = seq_of(since), since

    def _check_trimmed(self) -> bool:
        """Reload from the snapshot if the stream was trimmed past what is applied here."""
        try:
            info = self.client.xinfo_stream(STREAM)
        except redis.ResponseError:
            return False  # no stream yet
        # A trim removes the oldest entries; the entry applied last here is gone with them
        # when the first one left is newer (the newest snapshot is never trimmed past).
        first = info.get("recorded-first-entry-id") or b"0-0"
        if info.get("entries-added", 0) <= info.get("length", 0) or seq_of(first) <= self.applied:
            return False
        log.warning("the shared state's stream was trimmed past what this server applied (%s, the stream now "
                    "starts at %s): reloading from its snapshot", self.applied_text, first.decode())
        self.counts["resyncs"] += 1
        self._load()
        return True

    def _housekeeping(self) -> None:
        if self._check_trimmed():
            return
        try:
            length = self.client.xlen(STREAM)
        except redis.ResponseError:
            return
        if length > self.compact_entries:
            self.snapshot.compact(self.applied_text)
