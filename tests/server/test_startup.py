"""``pathserver serve`` says what it is doing before it is ready (a cold start compiles
for about two minutes): one ``pathserver: `` line a stage on stderr, the ready line alone on
stdout."""

import io
import os
import selectors
import subprocess
import sys
import time

from pathserver import kernel_cache
from pathserver.server import loop, startup
from pathserver.server.app import serve
from pathserver.server.startup import PREFIX, StartupLog, announce_kernels

READY_PREFIX = "pathserver ready on "


def test_an_empty_cache_is_announced_as_compiling(tmp_path, monkeypatch):
    monkeypatch.setattr(startup, "kernel_cache_dir", lambda: tmp_path)
    stream = io.StringIO()
    assert announce_kernels(StartupLog(stream)) is True
    line = stream.getvalue()
    assert line.startswith(PREFIX + "compiling the search kernels into " + str(tmp_path))
    assert "about two minutes" in line


def test_a_filled_cache_is_announced_as_loading(tmp_path, monkeypatch):
    (tmp_path / "module").mkdir()
    (tmp_path / "module" / "query.solve-12.py311.nbi").write_bytes(b"")
    monkeypatch.setattr(startup, "kernel_cache_dir", lambda: tmp_path)
    stream = io.StringIO()
    assert announce_kernels(StartupLog(stream)) is False
    assert stream.getvalue() == f"{PREFIX}loading the compiled kernels from {tmp_path}\n"


def test_a_frozen_server_says_it_loads_the_bundles_kernels(tmp_path, monkeypatch):
    monkeypatch.setattr(startup, "kernel_cache_dir", lambda: tmp_path)
    monkeypatch.setattr(kernel_cache, "choice", lambda: kernel_cache.Choice(tmp_path, bundled=True))
    stream = io.StringIO()
    assert announce_kernels(StartupLog(stream)) is False
    assert stream.getvalue() == f"{PREFIX}loading the bundle's compiled kernels from {tmp_path}\n"


def test_a_frozen_server_says_why_it_compiles(tmp_path, monkeypatch):
    monkeypatch.setattr(startup, "kernel_cache_dir", lambda: tmp_path)
    reason = "they were built for numba 0.67.0, this is 0.68.1 (/game/_internal/pathserver-kernels)"
    monkeypatch.setattr(kernel_cache, "choice", lambda: kernel_cache.Choice(tmp_path, reason=reason))
    stream = io.StringIO()
    assert announce_kernels(StartupLog(stream)) is True
    line = stream.getvalue()
    assert line.startswith(f"{PREFIX}compiling the search kernels into {tmp_path} (first start on this machine")
    assert line.rstrip().endswith(f"the bundle's own kernels do not fit: {reason}")


def test_serve_says_each_stage_on_stderr_before_the_ready_line(maps_dir, capsys, monkeypatch):
    out = io.StringIO()
    # Stop the server as soon as it would start serving: serve() then returns.
    monkeypatch.setattr(loop.Server, "run", lambda self: self.stop())
    assert serve(maps_dir, "tcp://127.0.0.1:0", watch=False, out=out) == 0
    err_lines = capsys.readouterr().err.splitlines()
    stages = [line for line in err_lines if line.startswith(PREFIX)]
    assert stages[0].startswith(PREFIX + ("compiling the search kernels" if "compiling" in stages[0]
                                          else "loading the compiled kernels"))
    assert stages[1] == f"{PREFIX}loading maps from {maps_dir}"
    assert stages[2].startswith(f"{PREFIX}2 maps loaded (")
    assert stages[-1].startswith(PREFIX + "kernels ready in ")
    assert out.getvalue().count("\n") == 1 and out.getvalue().startswith(READY_PREFIX)


def test_a_real_server_speaks_within_a_second_and_stdout_holds_only_the_ready_line(maps_dir):
    """The first progress line comes before the heavy imports are done compiling; here the
    kernels are cached (the session has compiled them), so the whole start is quick, and
    the point is the split: progress on stderr, the ready line alone on stdout."""
    began = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "pathserver", "serve", "--maps", str(maps_dir), "--bind", "tcp://127.0.0.1:*"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        selector = selectors.DefaultSelector()
        selector.register(process.stderr, selectors.EVENT_READ)
        assert selector.select(30), "no progress line within 30 s"
        first = process.stderr.readline().decode()
        first_after = time.monotonic() - began
        assert first.startswith(PREFIX), first
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        assert selector.select(120), "no ready line within 120 s"
        ready = process.stdout.readline().decode()
        assert ready.startswith(READY_PREFIX), ready
        print(f"first progress line after {first_after:.2f} s")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    rest = process.stdout.read().decode()
    assert rest == "", rest
    assert all(line.startswith(PREFIX) for line in process.stderr.read().decode().splitlines())
