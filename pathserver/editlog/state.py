"""``RedisState``, a server's handle on the shared state: it makes the parts (the maps'
snapshot, the reader, the writer) from one ``--state`` URL, runs their threads and keeps
the socket that wakes the socket loop when they have something for it."""

from __future__ import annotations

import itertools
import os
import secrets
import socket
import threading

from pathserver.editlog.connection import (
    AFTER_TIMEOUT_S, COMMAND_TIMEOUT_S, COMPACT_ENTRIES, READ_BLOCK_MS, READ_GRACE_S, check_url, connect, shown_url,
)
from pathserver.editlog.reader import Reader
from pathserver.editlog.snapshot import Snapshot
from pathserver.editlog.writer import Writer


class RedisState:
    """A map registry (see ``pathserver.maps.registry``) whose uploads and edits live in
    Redis at ``url`` and reach every server that shares it. Everything but
    ``apply_edit``, ``put_map`` and ``drop_map`` is the wrapped registry's.

    ``identity`` names this server in tokens and logs. ``start()`` starts the reader;
    ``caught_up`` is set once it has applied what Redis held. ``build_upload(fields)``
    makes the GridMap of a put_map's fields (the server's ``map_ops.build_upload``). For
    the socket loop: ``submit_edit``, ``finished()``, ``outstanding()``, ``reached(seq)``,
    ``applied_text()``, ``wake_socket`` (readable when an entry was applied while
    ``notify_applied`` is set, or a submitted edit is done), ``drain_wake()``; for the
    handlers: ``wait_applied(seq, text)``, ``committed_seq()``.
    """

    def __init__(self, registry, url: str, *, identity: str | None = None, build_upload=None,
                 after_timeout_s: float = AFTER_TIMEOUT_S, compact_entries: int = COMPACT_ENTRIES):
        self.registry = registry
        self.url = check_url(url)
        self.identity = identity or f"pid {os.getpid()}"
        self.after_timeout_s = float(after_timeout_s)
        #: Set by the socket loop while requests wait for an ``after``.
        self.notify_applied = False
        self.wake_socket, self._wake_send = socket.socketpair()
        for end in (self.wake_socket, self._wake_send):
            end.setblocking(False)
        self._tokens = itertools.count()
        self._token_head = f"{self.identity}/{secrets.token_hex(4)}/"
        self._counts = {"changes": 0, "failed": 0, "skipped": 0, "refused": 0, "resyncs": 0, "compactions": 0}
        writing = connect(url, COMMAND_TIMEOUT_S)
        reading = connect(url, READ_BLOCK_MS / 1000.0 + READ_GRACE_S)
        self._snapshot = Snapshot(registry, reading, counts=self._counts, token=self._token,
                                  build_upload=build_upload)
        self._reader = Reader(reading, self._snapshot, url=self.url, counts=self._counts,
                              on_applied=self._on_applied, after_timeout_s=self.after_timeout_s,
                              compact_entries=int(compact_entries))
        self._writer = Writer(writing, self._reader, url=self.url, counts=self._counts, token=self._token,
                              wake=self._wake, after_timeout_s=self.after_timeout_s)
        #: Set once the reader has applied everything Redis held when it started.
        self.caught_up = self._reader.caught_up
        # The parts' methods, bound here: no call more on the socket loop's paths.
        writer, reader = self._writer, self._reader
        self.apply_edit, self.submit_edit, self.finished, self.outstanding = (
            writer.apply_edit, writer.submit_edit, writer.finished, writer.outstanding)
        self.put_map, self.drop_map, self.committed_seq = writer.put_map, writer.drop_map, writer.committed_seq
        self.reached, self.wait_applied = reader.reached, reader.wait_applied
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._writer_thread: threading.Thread | None = None

    def __getattr__(self, name):
        if name == "registry":
            raise AttributeError(name)
        return getattr(self.registry, name)

    def _token(self) -> str:
        return self._token_head + str(next(self._tokens))

    def applied_text(self) -> str:
        """The stream id of the entry applied here last."""
        return self._reader.applied_text

    def _on_applied(self) -> None:
        """The reader applied entries: the socket loop looks if it asked, or edits are done."""
        if self.notify_applied or self._writer.done:
            self._wake()

    def _wake(self) -> None:
        try:
            self._wake_send.send(b"\0")
        except OSError:
            pass  # the buffer is full: the loop is waking anyway

    def drain_wake(self) -> None:
        try:
            while self.wake_socket.recv(4096):
                pass
        except OSError:
            pass

    def state_stats(self) -> dict:
        """For ``stats``: where the state is, whether Redis answers, the last entry applied
        here (equal on two servers: the same changes applied), counts, the lag from an
        entry's writer to this server applying it (ms), and a CRC of each shared map."""
        lags = sorted(self._reader.lags)

        def at(q: float) -> float:
            return round(lags[min(len(lags) - 1, int(q * len(lags)))] * 1000.0, 3) if lags else 0.0

        return {"url": shown_url(self.url), "connected": self._reader.connected, "caught_up": self.caught_up.is_set(),
                "applied": self._reader.applied_text, **self._counts,
                "lag_ms": {"p50": at(0.5), "p99": at(0.99), "max": at(1.0)}, "crc": self._snapshot.map_crcs()}

    def start(self) -> None:
        """Start the reader thread (see ``caught_up``) and the writer thread."""
        self._thread = threading.Thread(target=self._reader.run, args=(self._stop,), name="pathserver-state",
                                        daemon=True)
        self._thread.start()
        self._writer_thread = threading.Thread(target=self._writer.run, args=(self._stop,),
                                               name="pathserver-state-writer", daemon=True)
        self._writer_thread.start()

    def close(self) -> None:
        self._stop.set()
        self._writer.close()
        for thread in (self._thread, self._writer_thread):
            if thread is not None:
                thread.join(READ_BLOCK_MS / 1000.0 + 1.0)
        for client in (self._writer.client, self._reader.client):
            client.close()
        self.wake_socket.close()
        self._wake_send.close()
