"""What a load test may bring along: a server of its own (:class:`SpawnedServer`,
``--spawn``) and map files rewritten under load (:class:`Rewriter`).

``--rewrites-per-s`` (with ``--spawn``) rewrites the served map files while the load runs,
on a temporary copy of the ``--maps`` folder: alternately an atomic save (a temp file
renamed over the map) and an in-place write, with the same content, so every rewrite makes
the server reload and swap in a new generation under load. The summary counts the rewrites
and the server's ``reloads_ok`` / ``reloads_failed``.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pathserver.loadtest.plan import LoadTestError

READY_LINE = re.compile(r"pathserver ready on (\S+) \((\d+) maps?\)")


def stop_process(process: subprocess.Popen, first: int = signal.SIGTERM, grace_s: float = 10.0) -> None:
    """Stop ``process`` if it still runs: the signal ``first`` (SIGTERM where a platform
    has no such signal), then SIGKILL after ``grace_s`` seconds; waits for its exit."""
    if process.poll() is not None:
        return
    try:
        process.send_signal(first)
    except (ValueError, OSError):  # no SIGINT for subprocesses on Windows
        process.terminate()
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(grace_s)


class Rewriter(threading.Thread):
    """Rewrites the served map files at ``per_s`` a second until ``finish()``: atomic
    saves and in-place writes in turn, each with the file's own bytes."""

    def __init__(self, maps_dir: Path, maps: list[dict], per_s: float, stop: threading.Event):
        super().__init__(name="loadtest-rewriter", daemon=True)
        files = [Path(maps_dir) / m["file"] for m in maps if m.get("file")]
        self.contents = [(path, path.read_bytes()) for path in files if path.is_file()]
        if not self.contents:
            raise LoadTestError(f"no served map file to rewrite in {maps_dir}")
        self.interval = 1.0 / per_s
        self.stop_event = stop
        self.done = threading.Event()
        self.written = 0

    def run(self) -> None:
        next_at = time.monotonic()
        while not (self.done.is_set() or self.stop_event.is_set()):
            path, content = self.contents[self.written % len(self.contents)]
            if self.written % 2 == 0:
                temp = path.with_name(f".{path.name}.loadtest.tmp")
                temp.write_bytes(content)
                os.replace(temp, path)
            else:
                with open(path, "r+b") as handle:
                    handle.write(content)
                    handle.truncate()
            self.written += 1
            next_at += self.interval
            self.done.wait(max(0.0, next_at - time.monotonic()))

    def finish(self) -> None:
        self.done.set()
        if self.is_alive():
            self.join(5)


class SpawnedServer:
    """``python -m pathserver serve --maps DIR --bind tcp://127.0.0.1:0`` in a subprocess,
    up once its ready line names the endpoint; stopped with SIGINT (then killed)."""

    def __init__(self, maps_dir: Path, timeout: float = 120.0, extra_args: tuple = ()):
        self.maps_dir = Path(maps_dir)
        self.timeout = timeout
        self.extra_args = tuple(extra_args)
        self.process: subprocess.Popen | None = None
        self.endpoint: str | None = None
        self.n_maps: int | None = None
        self._stderr = None

    def __enter__(self) -> "SpawnedServer":
        if not self.maps_dir.is_dir():
            raise LoadTestError(f"--maps {self.maps_dir} is not a folder")
        self._stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pathserver", "serve", "--maps", str(self.maps_dir),
             "--bind", "tcp://127.0.0.1:0", *self.extra_args],
            stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL, text=True,
        )
        lines: queue.Queue = queue.Queue()

        def read_stdout():
            for line in self.process.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read_stdout, name="loadtest-spawn-stdout", daemon=True).start()
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self._fail(f"the server printed no ready line within {self.timeout:g} s")
            if line is None:
                self._fail(f"the server exited with status {self.process.wait()} before it was ready")
            match = READY_LINE.search(line)
            if match:
                self.endpoint, self.n_maps = match.group(1), int(match.group(2))
                return self

    def _fail(self, message: str):
        tail = self._stderr_tail()
        self.__exit__(None, None, None)
        raise LoadTestError(message + (f"; its stderr ends:\n{tail}" if tail else ""))

    def _stderr_tail(self, lines: int = 15) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return "\n".join(self._stderr.read().decode(errors="replace").splitlines()[-lines:])

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            stop_process(self.process, signal.SIGINT, 5.0)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


