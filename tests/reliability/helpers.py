"""Shared pieces of the reliability tests: maps drawn as rows, a real ``pathserver serve``
subprocess, a DEALER whose every send and receive has a timeout, /proc readings of the server
process, reply checks, and the figures table printed at the end of the run.

Everything talks to 127.0.0.1 only. Long variants read their sizes from environment
variables (see ``docs/reliability.md``) or run under ``--slow``.
"""

from __future__ import annotations

import math
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import msgpack
import zmq

from pathserver.errors import WIRE_CODES
from pathserver.protocol.codec import DEFAULT_LIMITS, decode_request, peek_id
from grids import ARENA, SPLIT, movingai, write_map  # noqa: F401 - re-exported to the tests
from sockets import RECV_TIMEOUT_MS, Dealer

ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"pathserver ready on (tcp://127\.0\.0\.1:\d+) \((\d+) maps?\)")
#: A cold numba cache (another engineer just edited a kernel) compiles for a while.
READY_TIMEOUT_S = 240.0

#: Figures measured by the tests, printed by ``conftest.pytest_terminal_summary``.
FIGURES: dict[str, list[str]] = {}


def record(section: str, line: str) -> None:
    """Keep one line of figures for the end-of-run table (and print it now, for ``-s``)."""
    FIGURES.setdefault(section, []).append(line)
    print(f"[{section}] {line}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


# -- maps ------------------------------------------------------------------------------


def write_atomically(path: Path, text: str) -> None:
    """A hidden temporary file, then ``os.replace``: a watcher never sees half a file."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(text)
    os.replace(temp, path)


def open_rows(width: int, height: int, seed: int = 7, share: float = 0.15) -> list[str]:
    """A random map: ``share`` of the cells blocked, the border row 0 kept open."""
    import random

    rng = random.Random(seed)
    rows = []
    for y in range(height):
        rows.append("".join("@" if y > 0 and rng.random() < share else "." for _ in range(width)))
    return rows


def small_maps(folder: Path) -> Path:
    """The maps the fuzz and table tests aim at: tiny and odd shapes, costs, heights,
    a world transform, and a 64x64 random map for load."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_map(folder, "arena", ARENA)
    write_map(folder, "split", SPLIT)
    write_map(folder, "dot", ["."])
    write_map(folder, "line", ["........"])
    write_map(folder, "column", ["."] * 6)
    write_map(folder, "walled", ["@@@", "@@@"])
    (folder / "hills.map").write_text(movingai(["..~~..@.", ".@@~~...", "........", "~~~@@...", "........"]))
    (folder / "hills.json").write_text(
        '{"origin": [-2.5, 1.0], "cell_size": 0.5, "cost_legend": {"~": 3.0},'
        ' "heights": [[0,0,1,2,3,4,5,6],[0,0,1,2,3,4,5,6],[0,1,2,3,4,5,6,7],[0,1,2,3,4,5,6,7],[9,9,9,9,9,9,9,9]]}'
    )
    write_map(folder, "open64", open_rows(64, 64))
    return folder


SMALL_MAP_NAMES = ("arena", "split", "dot", "line", "column", "walled", "hills", "open64")


# -- sockets ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def host_port(endpoint: str) -> tuple[str, int]:
    host, port = endpoint.rsplit("/", 1)[1].rsplit(":", 1)
    return host, int(port)


def ask_once(endpoint: str, request: dict, timeout_ms: int = RECV_TIMEOUT_MS) -> dict:
    """One request on a fresh DEALER of its own context (safe from any thread)."""
    context = zmq.Context()
    try:
        dealer = Dealer(context, endpoint)
        try:
            return dealer.ask(request, timeout_ms)
        finally:
            dealer.close()
    finally:
        context.term()


def timed_ping(endpoint: str, timeout_ms: int = RECV_TIMEOUT_MS) -> float:
    """Seconds from connecting a new client to its ``ping`` reply."""
    started = time.perf_counter()
    reply = ask_once(endpoint, {"id": 1, "op": "ping"}, timeout_ms)
    assert reply == {"id": 1, "ok": True, "protocol": 1}
    return time.perf_counter() - started


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.02, what: str = "condition"):
    """Poll ``predicate`` until it returns something truthy; fail at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout} s")
        time.sleep(interval)


# -- the server as a process -------------------------------------------------------------


class ServerProcess:
    """``python -m pathserver serve --maps DIR --bind tcp://127.0.0.1:PORT`` with the CLI's
    own defaults (heartbeats, handshake timeout, one worker per core). ``start()`` waits
    for the ready line; ``kill()`` is SIGKILL; ``stop()`` is SIGINT, then SIGKILL."""

    def __init__(self, maps_dir: Path, port: int = 0, *, threads: int | None = None):
        self.maps_dir = Path(maps_dir)
        self.port = port
        self.threads = threads
        self.process: subprocess.Popen | None = None
        self.endpoint: str | None = None
        self.starts = 0
        self._stderr = tempfile.TemporaryFile()

    @property
    def pid(self) -> int:
        return self.process.pid

    def start(self, timeout: float = READY_TIMEOUT_S) -> float:
        """Start the process; returns the seconds until its ready line."""
        args = [sys.executable, "-m", "pathserver", "serve", "--maps", str(self.maps_dir),
                "--bind", f"tcp://127.0.0.1:{self.port}"]
        if self.threads:
            args += ["--threads", str(self.threads)]
        started = time.monotonic()
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self._stderr,
                                        stdin=subprocess.DEVNULL, text=True, cwd=str(ROOT),
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        lines: queue.Queue = queue.Queue()
        process = self.process

        def read_stdout():
            for line in process.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read_stdout, name="server-stdout", daemon=True).start()
        deadline = started + timeout
        while True:
            try:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                raise AssertionError(f"no ready line within {timeout} s; stderr:\n{self.stderr_tail()}") from None
            if line is None:
                raise AssertionError(f"server exited ({process.wait(10)}) before ready; stderr:\n{self.stderr_tail()}")
            match = READY.search(line)
            if match:
                self.endpoint = match.group(1)
                if not self.port:
                    self.port = host_port(self.endpoint)[1]
                self.starts += 1
                return time.monotonic() - started

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        if self.alive:
            self.process.send_signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(10)

    def stop(self) -> None:
        if self.alive:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def close(self) -> None:
        self.stop()
        self._stderr.close()

    def stderr_text(self) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def stderr_tail(self, lines: int = 30) -> str:
        return "\n".join(self.stderr_text().splitlines()[-lines:])

    def fd_count(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def rss_kb(self) -> int:
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def stats(self) -> dict:
        return ask_once(self.endpoint, {"id": 1, "op": "stats"})


# -- reply checks -------------------------------------------------------------------------

#: Text that must never reach a client: tracebacks and the server's own file layout.
LEAKS = ("Traceback", 'File "', str(ROOT), "site-packages", tempfile.gettempdir() + "/")


def _has_leak(value) -> str | None:
    if isinstance(value, str):
        for leak in LEAKS:
            if leak in value:
                return leak
    elif isinstance(value, dict):
        for item in value.values():
            found = _has_leak(item)
            if found:
                return found
    elif isinstance(value, list):
        for item in value:
            found = _has_leak(item)
            if found:
                return found
    return None


def expected_id(body: bytes):
    """``(ids the reply may carry)`` for a request body: the int id when the body decodes
    with the server's limits, else what the server's own ``peek_id`` can read (or nil)."""
    try:
        obj = decode_request(body, DEFAULT_LIMITS)
    except Exception:
        return {None, peek_id(body)}
    value = obj.get("id")
    return {value} if type(value) is int else {None}


def check_reply(body: bytes, reply_bytes: bytes, *, ids=None) -> dict:
    """Assert a reply is well formed: a map starting ``id, ok``; an error carries a known
    code that is not ``internal`` (that is a server bug), and nothing leaks a traceback or
    a server path. Returns the decoded reply."""
    reply = msgpack.unpackb(reply_bytes, raw=False, strict_map_key=False)
    assert isinstance(reply, dict), reply
    assert list(reply)[:2] == ["id", "ok"], reply
    assert reply["id"] in (expected_id(body) if ids is None else ids), (reply, body)
    leak = _has_leak({k: v for k, v in reply.items() if k != "path"})
    if reply["ok"]:
        results = reply.get("results")
        for result in results or ():
            if not result["ok"]:
                assert result["error"]["code"] in WIRE_CODES and result["error"]["code"] != "internal", result
    else:
        error = reply["error"]
        assert list(error) == ["code", "message", "at"], reply
        assert error["code"] in WIRE_CODES, reply
        assert error["code"] != "internal", (reply, body)
        assert type(reply["retryable"]) is bool
        assert ("retry_after_ms" in reply) == (error["code"] == "overloaded"), reply
    # Messages may quote what the client sent (a map name); only flag leaks the body lacks.
    if leak is not None:
        assert leak.encode() in body, (leak, reply)
    return reply


def fd_settled(server: ServerProcess, limit: int, timeout: float) -> int:
    """Wait until the server holds at most ``limit`` descriptors; returns the count."""
    deadline = time.monotonic() + timeout
    while True:
        count = server.fd_count()
        if count <= limit or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


def percentile(values, q: float) -> float:
    values = sorted(values)
    if not values:
        return math.nan
    k = min(len(values) - 1, max(0, int(math.ceil(q / 100.0 * len(values))) - 1))
    return values[k]
