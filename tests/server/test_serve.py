"""``pathserver serve`` as a real process: the ready line, then a clean stop on a signal."""

import os
import re
import selectors
import signal
import subprocess
import sys
import time

import msgpack
import pytest

from sockets import bounded_socket

READY = re.compile(r"^pathserver ready on (tcp://127\.0\.0\.1:\d+) \((\d+) maps?\)$")


def read_line(process, timeout: float) -> str:
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    if not selector.select(timeout):
        raise TimeoutError(f"no line from the server within {timeout} s")
    return process.stdout.readline().decode().rstrip("\n")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_prints_ready_and_stops_cleanly(maps_dir, context, signum):
    process = subprocess.Popen(
        [sys.executable, "-m", "pathserver", "serve", "--maps", str(maps_dir), "--bind", "tcp://127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        line = read_line(process, timeout=120)  # a cold numba cache compiles first
        match = READY.match(line)
        assert match, line
        assert match.group(2) == "2"
        dealer = bounded_socket(context, connect=match.group(1))
        dealer.send_multipart([b"", msgpack.packb({"id": 1, "op": "path", "map": "arena",
                                                    "start": [0, 4], "goal": [9, 4]})])
        assert dealer.poll(5000)
        assert msgpack.unpackb(dealer.recv_multipart()[-1])["status"] == "found"
        dealer.close()
        started = time.monotonic()
        process.send_signal(signum)
        assert process.wait(timeout=5) == 0
        # The loop itself stops within a second (test_transport checks it in process);
        # this adds the interpreter's teardown, slower on a loaded machine.
        assert time.monotonic() - started < 2.0
        assert process.stdout.read() == b""  # exactly one line on stdout
        assert b"Traceback" not in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_serve_takes_the_upload_bound_from_the_command_line(maps_dir, context):
    process = subprocess.Popen(
        [sys.executable, "-m", "pathserver", "serve", "--maps", str(maps_dir), "--bind", "tcp://127.0.0.1:0",
         "--max-upload-cells", "50"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        match = READY.match(read_line(process, timeout=120))
        dealer = bounded_socket(context, connect=match.group(1))

        def put(rid: int, side: int) -> dict:
            dealer.send_multipart([b"", msgpack.packb({"id": rid, "op": "put_map", "map": "up", "width": side,
                                                        "height": side, "cells": b"\x01" * side * side})])
            assert dealer.poll(5000)
            return msgpack.unpackb(dealer.recv_multipart()[-1])

        assert put(1, 7)["ok"]  # 49 cells
        refused = put(2, 8)  # 64 cells
        assert (refused["error"]["code"], refused["error"]["at"]) == ("too_large", "cells")
        dealer.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(10)
