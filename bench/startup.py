"""How long ``pathserver`` takes to answer on a fresh machine, cold and warm, with each
target printed against its figure; and the bundle's server (``pathserver bundle``) moved
to a new folder, beside it.

    python bench/startup.py                          # every python row and target below
    python bench/startup.py --bundle dist/server     # + a built bundle's rows
    python bench/startup.py --build-bundle           # + build one first (needs the bundle extra)
    python bench/startup.py --bundle-check DIR       # CI: the bundle's rows only; exit 1 on a missed target
    python bench/startup.py --warm-runs 5 --json startup.json

python -m pathserver, cold: a fresh, empty numba cache folder (``NUMBA_CACHE_DIR``), as on
a player's machine the first time: every kernel compiles. The client connects to the
endpoint the server's first line names, asks for a path at once, then for every other op
in turn (``paths`` with ``goals``, ``reachable``, ``field``, ``next_steps``,
``check_block``, ``put_map`` and a path on the upload): the targets are the first path
within 30 s and every op within 120 s of starting. Warm: the same folder again, now
filled; the ready line within 1 s. ``find_path`` cold: a new Python process with an empty
cache loading ``maps/example.map`` and answering one path, within 20 s. Signals: SIGINT
and SIGTERM sent while the kernels compile end the process within 1 s. A taken port: a
second server on a port already bound is refused within 2 s, saying so.

The bundle: the folder is copied to a new random folder (as a game install puts it
somewhere the build never was), made read-only (an install folder may be), and its
``pathserver-server`` runs there as a player's machine would: an empty environment but
for a new, empty ``HOME`` and a ``PATH`` naming only an empty folder (no Python at all,
no virtual environment: the script checks that none is found on it). Cold is the copy's
first run, again is the next one (the kernels come compiled ahead of time: nothing is
written or cached at start, so the two differ by the operating system's file cache); the
cold start is repeated on ``--cold-runs`` new copies (3), each with a new HOME, and their
median shown. The bundle's targets: ready within ``--ready-target`` s (2)
on the first run of a copy (the median), the folder within ``--size-target`` MB (150), and its first path answer
equal to the in-process ``find_path`` answer to the same request.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgpack
import zmq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import add_argument as add_write_docs, write_section  # noqa: E402
from pathserver.loadtest.spawn import stop_process  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
READY = re.compile(r"^pathserver ready on (\S+) \(\d+ maps?\)$")
#: The first line of ``serve``: it names the endpoint before anything loads.
LISTENING = re.compile(r"^pathserver: listening on (\S+) ")
REQUEST = {"id": 1, "op": "path", "map": "example", "start": [1, 1], "goal": [60, 60]}
#: Every other op, asked in turn once the first path is answered (``put_map`` then a path on it).
EVERY_OP = (
    {"op": "paths", "map": "example", "requests": [{"start": [1, 1], "goals": [[60, 60], [30, 50]]}]},
    {"op": "reachable", "map": "example", "start": [1, 1], "budget": 10},
    {"op": "field", "map": "example", "goals": [[60, 60], [30, 50]]},
    {"op": "next_steps", "map": "example", "goals": [[60, 60]], "positions": [[1.5, 1.25], [30, 50]]},
    {"op": "check_block", "map": "example", "cells": [[50, 56]], "points": [[1, 1], [60, 60]]},
    {"op": "put_map", "map": "startup_upload", "width": 4, "height": 3, "cells": bytes([1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1])},
    {"op": "path", "map": "startup_upload", "start": [0, 0], "goal": [3, 2]},
)
#: (name, target seconds) of the python rows, in the order the table prints them.
TARGETS = (
    ("serve, cold: first path answered", 30.0),
    ("serve, cold: every op answered", 120.0),
    ("serve, warm: ready line", 1.0),
    ("find_path in a new process, cold", 20.0),
    ("serve, cold: SIGINT while compiling -> exit", 1.0),
    ("serve, cold: SIGTERM while compiling -> exit", 1.0),
    ("serve on a taken port -> refused", 2.0),
)
EXECUTABLE = "pathserver-server" + (".exe" if os.name == "nt" else "")


def start_once(command: list[str], env: dict, cwd: Path, timeout: float) -> dict:
    """One server start; the times are seconds from process creation. Also the first
    path reply (``reply``) and the stderr lines (``said``)."""
    began = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               env=env, cwd=cwd)
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ, "out")
    selector.register(process.stderr, selectors.EVENT_READ, "err")
    first_line = endpoint = None
    said = []
    try:
        deadline = began + timeout
        while endpoint is None:
            left = deadline - time.perf_counter()
            events = selector.select(max(0.0, left)) if left > 0 else []
            if not events:
                return {"error": f"no ready line within {timeout:.0f} s", "said": said}
            for key, _ in events:
                line = key.fileobj.readline().decode()
                if not line:
                    return {"error": f"the server exited ({process.wait(5)}) before its ready line: "
                                     + " / ".join(said[-3:] + [process.stderr.read().decode().strip()]),
                            "said": said}
                said.append(line.strip())
                if first_line is None:
                    first_line = time.perf_counter() - began
                match = READY.match(line.strip()) if key.data == "out" else None
                if match:
                    endpoint = match.group(1)
        ready = time.perf_counter() - began
        context = zmq.Context.instance()
        dealer = context.socket(zmq.DEALER)
        dealer.linger = 0
        dealer.sndtimeo = dealer.rcvtimeo = 10_000
        try:
            dealer.connect(endpoint)
            dealer.send_multipart([b"", msgpack.packb(REQUEST)])
            reply = msgpack.unpackb(dealer.recv_multipart()[-1])
        finally:
            dealer.close(linger=0)
        answered = time.perf_counter() - began
        if reply.get("status") != "found":
            return {"error": f"first path answered {reply!r}", "said": said}
        return {"first_line_s": first_line, "ready_s": ready, "first_answer_s": answered, "reply": reply,
                "said": said}
    finally:
        stop_process(process)


class Started:
    """A process whose stdout and stderr lines are read as they come, each with the
    seconds since its start."""

    def __init__(self, command: list[str], env: dict, cwd: Path):
        self.began = time.perf_counter()
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, env=env, cwd=cwd)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        self.selector.register(self.process.stderr, selectors.EVENT_READ)
        self.said: list[tuple[float, str]] = []

    def since(self) -> float:
        return time.perf_counter() - self.began

    def wait_for(self, pattern: re.Pattern, timeout: float) -> re.Match | None:
        """The first line (already said or to come) matching ``pattern``; None when the
        process ends or ``timeout`` s pass first."""
        for _, line in self.said:
            if match := pattern.match(line):
                return match
        deadline = time.perf_counter() + timeout
        while (left := deadline - time.perf_counter()) > 0:
            if not self.read(left):
                return None
            if match := pattern.match(self.said[-1][1]):
                return match
        return None

    def read(self, timeout: float) -> bool:
        """Read one line into ``said``; False at the end of both streams or on a timeout."""
        for key, _ in self.selector.select(timeout):
            line = key.fileobj.readline().decode()
            if not line:
                self.selector.unregister(key.fileobj)
                return bool(self.selector.get_map())
            self.said.append((self.since(), line.strip()))
            return True
        return False

    def exited_within(self, timeout: float) -> float | None:
        """Seconds from now until the process exits, or None past ``timeout``."""
        began = time.perf_counter()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return time.perf_counter() - began

    def stop(self) -> None:
        stop_process(self.process, signal.SIGKILL)
        for stream in (self.process.stdout, self.process.stderr):
            stream.close()


def ask(endpoint: str, request: dict, timeout: float) -> dict:
    """One request, its reply (a timeout raises zmq.Again)."""
    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.linger = 0
    dealer.sndtimeo = dealer.rcvtimeo = int(timeout * 1000)
    try:
        dealer.connect(endpoint)
        dealer.send_multipart([b"", msgpack.packb(request)])
        return msgpack.unpackb(dealer.recv_multipart()[-1])
    finally:
        dealer.close(linger=0)


def serve_command(maps: Path, bind: str = "tcp://127.0.0.1:*") -> list[str]:
    return [sys.executable, "-m", "pathserver", "serve", "--maps", str(maps), "--bind", bind]


def cache_env(cache_dir: str) -> dict:
    return {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "PYTHONUNBUFFERED": "1"}


def cold_serve(maps: Path, cache_dir: str, timeout: float) -> dict:
    """A cold start asked for a path at once, then for every other op: the seconds since
    start of the first line, the first path's answer, the last op's and the ready line."""
    started = Started(serve_command(maps), cache_env(cache_dir), ROOT)
    try:
        listening = started.wait_for(LISTENING, timeout)
        if listening is None:
            return {"error": "no line naming the endpoint", "said": [line for _, line in started.said]}
        first_line = started.said[0][0]
        endpoint = listening.group(1)
        reply = ask(endpoint, {**REQUEST, "smooth": "none"}, timeout)
        first_path = started.since()
        if reply.get("status") != "found":
            return {"error": f"first path answered {reply!r}"}
        for i, request in enumerate(EVERY_OP, 2):
            reply = ask(endpoint, {"id": i, **request}, timeout)
            if reply.get("ok") is False:
                return {"error": f"{request['op']} answered {reply!r}"}
        every_op = started.since()
        ready = started.wait_for(READY, timeout)
        return {"first_line_s": first_line, "first_path_s": first_path, "every_op_s": every_op,
                "ready_s": started.since() if ready else None, "said": [line for _, line in started.said]}
    finally:
        started.stop()


def cold_find_path(maps: Path, cache_dir: str, timeout: float) -> dict:
    """A new Python process with an empty kernel cache: load a map, answer one path."""
    code = ("from pathserver import GridMap, find_path; "
            f"m = GridMap.load({str(maps / 'example.map')!r}); "
            "r = find_path(m, (1, 1), (60, 60)); assert r.status == 'found', r.status")
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env=cache_env(cache_dir), cwd=ROOT, capture_output=True,
                          timeout=timeout)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        return {"error": f"find_path failed: {done.stderr.decode().strip()[-300:]}"}
    return {"seconds": seconds}


def signal_while_compiling(maps: Path, signum: int, timeout: float) -> dict:
    """Seconds from ``signum``, sent once the server says it compiles, to its exit."""
    with tempfile.TemporaryDirectory(prefix="pathserver-numba-") as cache_dir:
        started = Started(serve_command(maps), cache_env(cache_dir), ROOT)
        try:
            compiling = started.wait_for(re.compile(r"^pathserver: compiling "), timeout)
            if compiling is None:
                return {"error": "the server never said it compiles"}
            time.sleep(2.0)  # well inside the compile
            started.process.send_signal(signum)
            seconds = started.exited_within(timeout)
            if seconds is None:
                return {"error": f"still running {timeout:.0f} s after {signal.Signals(signum).name}"}
            return {"seconds": seconds, "status": started.process.returncode}
        finally:
            started.stop()


def taken_port(maps: Path, timeout: float) -> dict:
    """Seconds until a server asked to bind a port already bound exits, and what it said."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        with tempfile.TemporaryDirectory(prefix="pathserver-numba-") as cache_dir:
            started = Started(serve_command(maps, f"tcp://127.0.0.1:{port}"), cache_env(cache_dir), ROOT)
            try:
                seconds = started.exited_within(timeout)
                if seconds is not None:
                    seconds = started.since()
                while started.read(1.0):
                    pass
                said = " / ".join(line for _, line in started.said)
                if seconds is None:
                    return {"error": f"still running after {timeout:.0f} s: {said}"}
                if started.process.returncode == 0 or "in use" not in said:
                    return {"error": f"exit {started.process.returncode}, said: {said}"}
                return {"seconds": seconds, "said": said}
            finally:
                started.stop()
    finally:
        holder.close()


def python_targets(maps: Path, warm_runs: int, timeout: float) -> tuple[list, dict, list[str]]:
    """The python rows: [(target name, target s, measured s or None)], the raw report, failures."""
    report, failures = {}, []
    with tempfile.TemporaryDirectory(prefix="pathserver-numba-") as cache_dir:
        cold = cold_serve(maps, cache_dir, timeout)
        warm = [start_once(serve_command(maps), cache_env(cache_dir), ROOT, timeout) for _ in range(warm_runs)]
    with tempfile.TemporaryDirectory(prefix="pathserver-numba-") as cache_dir:
        library = cold_find_path(maps, cache_dir, timeout)
    sigint = signal_while_compiling(maps, signal.SIGINT, timeout)
    sigterm = signal_while_compiling(maps, signal.SIGTERM, timeout)
    taken = taken_port(maps, timeout)
    report.update(cold_serve=cold, warm_runs=warm, cold_find_path=library, sigint=sigint, sigterm=sigterm,
                  taken_port=taken)
    for name, run in report.items():
        for one in run if isinstance(run, list) else [run]:
            if "error" in one:
                failures.append(f"{name}: {one['error']}")
    warm_ready = statistics.median(run["ready_s"] for run in warm) if all("ready_s" in run for run in warm) else None
    measured = (cold.get("first_path_s"), cold.get("every_op_s"), warm_ready, library.get("seconds"),
                sigint.get("seconds"), sigterm.get("seconds"), taken.get("seconds"))
    rows = [(name, target, figure) for (name, target), figure in zip(TARGETS, measured)]
    return rows, report, failures


def player_env(home: Path) -> dict:
    """A player's machine: a new, empty HOME and no Python on PATH, nothing else of ours."""
    if os.name == "nt":  # not tried: Windows needs its system folders to start a process
        keep = {key: os.environ[key] for key in ("SYSTEMROOT", "WINDIR", "COMSPEC") if key in os.environ}
        env = {**keep, "USERPROFILE": str(home), "LOCALAPPDATA": str(home), "TEMP": str(home),
               "TMP": str(home), "PATH": keep.get("SYSTEMROOT", r"C:\Windows") + r"\System32"}
    else:
        bare = home.parent / "bin"  # an empty folder: nothing at all on PATH
        bare.mkdir(exist_ok=True)
        env = {"HOME": str(home), "PATH": str(bare)}
    found = [name for name in ("python3", "python", "py") if shutil.which(name, path=env["PATH"])]
    if found:
        raise SystemExit(f"startup: the player's PATH ({env['PATH']}) holds {found[0]}: no Python may be on it")
    return env


def snapshot(folder: Path) -> dict:
    """Every entry of ``folder`` with its size and modification time."""
    return {str(path.relative_to(folder)): (path.lstat().st_size, path.lstat().st_mtime_ns)
            for path in [folder, *folder.rglob("*")]}


def set_writable(folder: Path, writable: bool) -> None:
    """Give or take the write permission of everything in ``folder`` (links left alone)."""
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        path.chmod(mode | 0o200 if writable else mode & ~0o222)


def bundle_runs(bundle: Path, maps: Path, cold_runs: int, again_runs: int, timeout: float) -> dict:
    """Copy ``bundle`` to a new random folder, make it read-only and start it there with a
    new, empty HOME (cold: the copy's first run), ``cold_runs`` times; then start the last copy
    ``again_runs`` more times with the same HOME."""
    colds, again, copy_s, written = [], [], [], []
    for i in range(cold_runs):
        with tempfile.TemporaryDirectory(prefix="pathserver-game-") as scratch:
            scratch = Path(scratch)
            copy = scratch / "game" / "server"
            t0 = time.perf_counter()
            shutil.copytree(bundle, copy, symlinks=True)
            copy_s.append(time.perf_counter() - t0)
            home = scratch / "home"
            home.mkdir()
            command = [str(copy / EXECUTABLE), "serve", "--maps", str(maps), "--bind", "tcp://127.0.0.1:*"]
            set_writable(copy, False)
            before = snapshot(copy)
            try:
                colds.append(start_once(command, player_env(home), scratch, timeout))
                if i == cold_runs - 1:
                    again = [start_once(command, player_env(home), scratch, timeout) for _ in range(again_runs)]
                # Root ignores the permission bits: what a start wrote shows as a change.
                after = snapshot(copy)
                written.extend(sorted(name for name in before.keys() | after.keys()
                                      if before.get(name) != after.get(name)))
            finally:
                set_writable(copy, True)  # so that the scratch folder can be removed
    return {"copied_to": str(copy), "copy_s": copy_s, "colds": colds, "again": again, "written": written}


def expected_reply(maps: Path) -> dict:
    """The in-process answer to ``REQUEST``: ``find_path`` with the wire's defaults."""
    from pathserver import kernel_cache

    kernel_cache.configure()
    from pathserver import GridMap, find_path, options

    gridmap = GridMap.load(maps / f"{REQUEST['map']}.map")
    result = find_path(gridmap, tuple(REQUEST["start"]), tuple(REQUEST["goal"]), **options.wire_defaults())
    return {"path": result.path.tolist(), "cost": result.cost}


def same_answer(reply: dict, expected: dict) -> bool:
    return (reply.get("path") == expected["path"]
            and abs(reply.get("cost", -1.0) - expected["cost"]) <= 1e-9 * max(1.0, expected["cost"]))


def folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def build_bundle(out_dir: Path) -> float:
    """``pathserver bundle out_dir``; returns the seconds it took."""
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pathserver", "bundle", str(out_dir)], check=True, cwd=ROOT)
    return time.perf_counter() - began


def median_run(runs: list[dict]) -> dict:
    keys = ("first_line_s", "ready_s", "first_answer_s")
    return {key: statistics.median(run[key] for run in runs) for key in keys}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--maps", type=Path, default=ROOT / "maps", help="maps folder (default: the sample maps)")
    parser.add_argument("--warm-runs", type=int, default=3, help="warm starts; the median is shown (default 3)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a start may take (default 300)")
    parser.add_argument("--bundle", type=Path, help="also time this built bundle (pathserver bundle DIR)")
    parser.add_argument("--build-bundle", action="store_true", help="build a bundle into a temporary folder first")
    parser.add_argument("--bundle-check", type=Path, metavar="DIR",
                        help="only the bundle's rows, for CI: exit 1 when a target is missed")
    parser.add_argument("--cold-runs", type=int, default=3,
                        help="bundle: new copies, each started once with a new HOME; the median is shown (default 3)")
    parser.add_argument("--ready-target", type=float, default=2.0, help="bundle's cold ready line, s (default 2)")
    parser.add_argument("--size-target", type=float, default=150.0, help="bundle folder, MB (default 150)")
    parser.add_argument("--size-limit", type=float, default=None,
                        help="with --bundle-check: fail only above this many MB (default: --size-target)")
    parser.add_argument("--json", type=Path, help="write every figure as JSON here")
    add_write_docs(parser)
    args = parser.parse_args(argv)
    if args.bundle_check and (args.bundle or args.build_bundle):
        parser.error("--bundle-check times the given bundle alone")

    rows, report, failures, targets = [], {}, [], []
    scratch = tempfile.TemporaryDirectory(prefix="pathserver-bundle-bench-")
    try:
        if not args.bundle_check:
            targets, python_report, python_failures = python_targets(args.maps, args.warm_runs, args.timeout)
            failures += python_failures
            report.update(python=python_report)
        bundle = args.bundle_check or args.bundle
        if args.build_bundle:
            bundle = Path(scratch.name) / "server"
            report["bundle_build_s"] = build_bundle(bundle)
        if bundle is not None:
            failures += check_bundle(bundle.resolve(), args, rows, report)
    finally:
        scratch.cleanup()

    if targets:
        print(f"{'target (python -m pathserver, empty numba cache unless warm)':<50}{'figure s':>10}{'target s':>10}")
        for name, target, figure in targets:
            verdict = "MISS" if figure is None or figure > target else "PASS"
            shown = "-" if figure is None else f"{figure:.2f}"
            print(f"{name:<50}{shown:>10}{target:>10.0f}  {verdict}")
    if rows:
        print(f"{'start':<66}{'first line s':>14}{'ready s':>10}{'first path s':>14}")
    for name, run in rows:
        print(f"{name:<66}{run['first_line_s']:>14.2f}{run['ready_s']:>10.2f}{run['first_answer_s']:>14.2f}")
    for line in report.get("notes", []):
        print(line)
    if args.write_docs:
        write_section("startup", markdown(targets, rows, report.get("notes", [])))
    if args.json:
        for run in report.get("python", {}).get("warm_runs", []):
            run.pop("reply", None)
        report["targets"] = [{"name": name, "target_s": target, "figure_s": figure} for name, target, figure in targets]
        args.json.write_text(json.dumps(report, indent=2, default=str))
    if failures:
        print("startup bench failed: " + "; ".join(failures), file=sys.stderr)
        return 1
    return 0


def markdown(targets: list, rows: list, notes: list[str]) -> str:
    """The tables of this run for docs/performance.md."""
    lines = []
    if targets:
        lines += ["| python -m pathserver (empty numba cache unless warm) | figure | target | |",
                  "|---|---:|---:|---|"]
        for name, target, figure in targets:
            verdict = "MISS" if figure is None or figure > target else "PASS"
            lines.append(f"| {name} | {'-' if figure is None else f'{figure:.2f} s'} | {target:g} s | {verdict} |")
    if rows:
        lines += ["", "| start | first progress line | ready line | first path answered |", "|---|---:|---:|---:|"]
        lines += [f"| {name} | {run['first_line_s']:.2f} s | {run['ready_s']:.2f} s | {run['first_answer_s']:.2f} s |"
                  for name, run in rows]
    if notes:
        lines += [""] + [f"- {note.strip()}" for note in notes]
    return "\n".join(lines)


#: Must never be in a bundle: the load generator's plots and bar, the test tools.
UNWANTED = ("matplotlib", "tqdm", "hypothesis", "pytest", "_pytest")


def unwanted_modules(bundle: Path) -> list[str]:
    """``UNWANTED`` packages in the bundle: folders in ``_internal``, and modules frozen into
    the executable's archive (read with PyInstaller's reader, where it is installed)."""
    found = {p.name for p in (bundle / "_internal").iterdir() if p.name.split(".")[0] in UNWANTED}
    try:
        from PyInstaller.archive.readers import CArchiveReader
    except ImportError:
        return sorted(found)
    archive = CArchiveReader(str(bundle / EXECUTABLE))
    for name in archive.toc:
        if name.endswith(".pyz"):
            found |= {module.split(".")[0] for module in archive.open_embedded_archive(name).toc
                      if module.split(".")[0] in UNWANTED}
    return sorted(found)


def check_bundle(bundle: Path, args, rows: list, report: dict) -> list[str]:
    """The bundle's rows and notes; returns the missed targets (empty: all met)."""
    if not (bundle / EXECUTABLE).is_file():
        return [f"{bundle / EXECUTABLE} not found: build it with `pathserver bundle {bundle}`"]
    size_mb = folder_size(bundle) / 1e6
    runs = bundle_runs(bundle, args.maps, max(1, args.cold_runs), max(1, args.warm_runs), args.timeout)
    failures = [f"bundle: {run['error']}" for run in [*runs["colds"], *runs["again"]] if "error" in run]
    notes = report.setdefault("notes", [])
    report.update(bundle=str(bundle), bundle_size_mb=size_mb, bundle_runs=runs)
    if "bundle_build_s" in report:
        notes.append(f"bundle built by `pathserver bundle` in {report['bundle_build_s']:.0f} s")
    if failures:
        for run in [*runs["colds"], *runs["again"]]:
            notes.extend("  said: " + line for line in run.get("said", [])[-6:])
        return failures
    colds, again = runs["colds"], runs["again"]
    cold = {**median_run(colds), "said": colds[0]["said"]}
    rows.append((f"bundle, copied to a new folder, empty HOME: cold (median of {len(colds)} copies)", cold))
    rows.append((f"bundle, same copy and HOME: again (median of {len(again)})", median_run(again)))
    expected = expected_reply(args.maps)
    right = all(same_answer(run["reply"], expected) for run in [*colds, *again])
    loaded = next((line for line in cold["said"] if "kernels" in line and "ready in" in line), "")
    # A module the freeze left out shows up as a traceback or a warning while starting.
    strays = [line for run in colds for line in run["said"] if not line.startswith("pathserver")]
    unwanted = unwanted_modules(bundle)
    limit = args.size_limit if args.size_limit is not None else args.size_target
    checks = [
        (f"bundle folder <= {args.size_target:g} MB", f"{size_mb:.0f} MB",
         size_mb <= args.size_target, size_mb <= limit),
        (f"moved bundle's first ready line <= {args.ready_target:g} s (median)", f"{cold['ready_s']:.2f} s",
         cold["ready_s"] <= args.ready_target, cold["ready_s"] <= args.ready_target),
        ("the cold start printed only progress lines", f"{len(strays)} other lines", not strays, not strays),
        (f"none of {', '.join(UNWANTED[:4])} in it", ", ".join(unwanted) or "none", not unwanted, not unwanted),
        ("first path answer = in-process find_path", f"{len(expected['path'])} points, cost {expected['cost']:.4f}",
         right, right),
        ("nothing written into the read-only copy", f"{len(runs['written'])} entries changed",
         not runs["written"], not runs["written"]),
    ]
    notes.append(f"bundle {bundle}: {size_mb:.0f} MB; copied to {runs['copied_to']} (and {len(colds) - 1} more new "
                 f"folders) in {statistics.median(runs['copy_s']):.2f} s; slowest cold ready line "
                 f"{max(run['ready_s'] for run in colds):.2f} s; "
                 f"the cold run said: {loaded.removeprefix('pathserver: ')}")
    notes.extend(f"  stray line: {line}" for line in strays[:10])
    notes.extend(f"  written: {name}" for name in runs["written"][:10])
    for target, measured, met, passes in checks:
        verdict = "PASS" if met else ("MISS (within --size-limit)" if passes else "MISS")
        notes.append(f"target: {target:<44} {measured:>26}  {verdict}")
        if not passes:
            failures.append(f"{target}: {measured}")
    return failures


if __name__ == "__main__":
    raise SystemExit(main())
