"""Helpers for the scale tests: a broker and worker processes on random loopback ports,
whose ready lines are read with a deadline, their CPU time from /proc, a real
``redis-server`` for the shared state, and a small map of two rooms and a door."""

import os
import random
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time

import redis

from grids import movingai

BROKER_READY = re.compile(r"^pathserver broker ready on (tcp://\S+) \(back (tcp://\S+)\)$")
WORKER_READY = re.compile(r"^pathserver worker (\S+) ready, connected to (tcp://\S+) \((\d+) maps?\)$")
#: A cold numba cache compiles the kernels first; warm, a process is up in about a second.
START_TIMEOUT_S = 120

#: Two rooms joined by one door at (5, 2); Moving AI rows, '@' blocked.
ROOMS = """
.....@.....
.....@.....
...........
.....@.....
.....@.....
"""
DOOR = (5, 2)
WEST, EAST = (0, 2), (10, 2)


def free_ports(count: int = 1) -> int:
    """The first of ``count`` consecutive free loopback ports, below Linux's ephemeral
    range so that outgoing connections do not take them between this check and the bind."""
    for _ in range(200):
        first = random.randrange(20000, 32000 - count)
        probes = []
        try:
            for port in range(first, first + count):
                probe = socket.socket()
                probes.append(probe)
                probe.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for probe in probes:
                probe.close()
    raise RuntimeError(f"no {count} consecutive free loopback ports found")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()  # the name in () may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _env() -> dict:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


class Process:
    """A child process whose stdout lines are read with a deadline."""

    def __init__(self, args: list):
        self.popen = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                      env=_env())
        self.ready_line: str | None = None

    def wait_line(self, pattern: re.Pattern, timeout: float) -> re.Match:
        selector = selectors.DefaultSelector()
        selector.register(self.popen.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise TimeoutError(f"no ready line within {timeout} s from {self.popen.args[:4]}")
                line = self.popen.stdout.readline().decode().rstrip("\n")
                if not line and self.popen.poll() is not None:
                    raise RuntimeError(f"exited with {self.popen.returncode}: {self.popen.stderr.read().decode()}")
                match = pattern.match(line)
                if match:
                    self.ready_line = line
                    return match
        finally:
            selector.close()

    def signal(self, signum) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signum)

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(5)

    def stderr(self) -> str:
        return self.popen.stderr.read().decode(errors="replace")


class RedisServer:
    """A real ``redis-server`` on a free loopback port, its append-only file (fsync on
    every write) in ``folder``: ``start``, ``stop`` (SIGTERM), ``kill`` (SIGKILL), and
    ``pause``/``resume`` (SIGSTOP/SIGCONT: connections stay open and nothing answers)."""

    def __init__(self, folder):
        self.folder = folder
        self.port = free_ports(1)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.popen: subprocess.Popen | None = None

    def start(self, timeout: float = 10.0) -> "RedisServer":
        self.popen = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_timeout=1.0, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    if client.ping():
                        return self
                except redis.RedisError:
                    pass
                if time.monotonic() > deadline or self.popen.poll() is not None:
                    raise RuntimeError(f"redis-server on port {self.port} did not answer within {timeout} s")
                time.sleep(0.02)
        finally:
            client.close()

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=2.0, socket_connect_timeout=1.0)

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.terminate()
            self.popen.wait(10)

    def kill(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(10)

    def pause(self) -> None:
        self.popen.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.popen.send_signal(signal.SIGCONT)


def redis_server_or_skip(folder) -> RedisServer:
    """A started :class:`RedisServer`, or the test skipped saying why."""
    import pytest

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed (apt-get install redis-server; .ci/run installs it)")
    return RedisServer(folder).start()


class Cluster:
    """``pathserver.broker`` and ``serve(connect=..., state=...)`` worker processes."""

    def __init__(self, maps_dir, state: str | None = None):
        self.maps_dir = maps_dir
        self.state = state
        self.processes: list[Process] = []
        self.front = self.back = None
        self.broker: Process | None = None

    def start_broker(self, *options: str, front: str = "tcp://127.0.0.1:0",
                     back: str = "tcp://127.0.0.1:0") -> Process:
        """Start the broker (on free loopback ports unless given), with ``options`` added."""
        return self.launch_broker("--front", front, "--back", back, *options)

    def launch_broker(self, *arguments: str) -> Process:
        """``pathserver broker ARGUMENTS`` as a user types it; waits for its ready line and
        keeps the endpoints it names. The process stays in ``broker`` (the last one started)."""
        self.broker = self._spawn([sys.executable, "-m", "pathserver", "broker", *arguments])
        match = self.broker.wait_line(BROKER_READY, START_TIMEOUT_S)
        self.front, self.back = match.groups()
        return self.broker

    def launch_worker(self, *arguments: str) -> Process:
        """``pathserver serve --maps MAPS ARGUMENTS`` as a user types it; call ``wait_line``."""
        return self._spawn([sys.executable, "-m", "pathserver", "serve", "--maps", str(self.maps_dir), *arguments])

    def spawn_worker(self, threads: int = 1) -> Process:
        """Start a worker on the shared state; call ``wait_line`` on it (several can start at once)."""
        code = ("import sys; from pathserver.server import serve; "
                f"sys.exit(serve({str(self.maps_dir)!r}, threads={threads}, watch=False, "
                f"connect={self.back!r}, state={self.state!r}))")
        return self._spawn([sys.executable, "-c", code])

    def start_workers(self, n: int, threads: int = 1) -> list[Process]:
        workers = [self.spawn_worker(threads) for _ in range(n)]
        for worker in workers:
            worker.wait_line(WORKER_READY, START_TIMEOUT_S)
        return workers

    def _spawn(self, args) -> Process:
        process = Process(args)
        self.processes.append(process)
        return process

    def close(self) -> None:
        for process in self.processes:
            process.signal(signal.SIGTERM)
        deadline = time.monotonic() + 3
        for process in self.processes:
            try:
                process.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
            for stream in (process.popen.stdout, process.popen.stderr):
                stream.close()


def worker_identity(process: Process) -> str:
    return WORKER_READY.match(process.ready_line).group(1)


def settled(states, seq: str, timeout: float = 10.0) -> None:
    """Wait until every RedisState in ``states`` applied the stream up to ``seq``."""
    from pathserver.editlog.connection import seq_of

    deadline = time.monotonic() + timeout
    while not all(state.reached(seq_of(seq)) for state in states):
        if time.monotonic() > deadline:
            raise AssertionError(f"not settled at {seq}: {[state.state_stats()['applied'] for state in states]}")
        time.sleep(0.005)
