"""Godot's AStarGrid2D against the pathserver addon on the same Moving AI problems, in a
headless Godot 4: the figures behind "why not just use AStarGrid2D?".

    python bench/godot_astar.py                        # den520d, 200 problems, 3 rounds
    python bench/godot_astar.py --map Aftershock --rounds 5

It draws the same bucket-spread problems as ``bench/core.py`` (seed 0), starts a
``pathserver serve`` on a free loopback port serving a temporary folder that holds only
the map, runs ``bench/godot/bench_astar.gd`` in headless Godot under ``timeout`` and
prints its table (AStarGrid2D with and without jumping, set-up included; the addon with
one await per path, one batch, and every path in flight at once), then, for reference,
the same problems through ``find_path`` in this process with the options the addon sends.
See bench/README.md.

Godot: ``$GODOT`` (a command line, e.g. ``godot`` or a path), else the engine that
``engine_clients/godot/run_tests.sh install`` puts in a Debian sid tree (run through that
tree's own dynamic loader). Without either it prints how to get one and skips (exit 0).
"""

from __future__ import annotations

import argparse
import gc
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _movingai as movingai  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PROJECT = REPO / "bench" / "godot"
RUN_TESTS = REPO / "engine_clients" / "godot" / "run_tests.sh"
READY_PREFIX = "pathserver ready on "
SERVER_START_TIMEOUT_S = 180
IMPORT_TIMEOUT_S = 180


def sid_tree_godot() -> list[str] | None:
    """The command that runs the Debian sid tree's Godot through the tree's own loader and
    libraries (as run_tests.sh does), or None when the tree has no engine."""
    tree = Path(os.environ.get("PATHSERVER_CI_CACHE", "/var/cache/pathserver-ci")) / "godot-sid"
    binary = tree / "usr" / "bin" / "godot"
    loader = tree / "lib64" / "ld-linux-x86-64.so.2"
    if binary.is_symlink():
        # A link inside the tree points at a path inside the tree.
        target = os.readlink(binary)
        binary = tree / target.lstrip("/") if target.startswith("/") else binary.parent / target
    if not (binary.is_file() and loader.is_file()):
        return None
    libdirs = [tree / "usr" / "lib" / "x86_64-linux-gnu", tree / "lib" / "x86_64-linux-gnu"]
    # Libraries that find their private ones through a RUNPATH need those folders too.
    libdirs += sorted(d for d in libdirs[0].iterdir() if d.is_dir() and any(d.glob("lib*.so*")))
    return [str(loader), "--library-path", ":".join(str(d) for d in libdirs), str(binary)]


def godot_command() -> list[str] | None:
    if os.environ.get("GODOT"):
        return shlex.split(os.environ["GODOT"])
    command = sid_tree_godot()
    if command is None and RUN_TESTS.is_file():
        subprocess.run(["bash", str(RUN_TESTS), "install"], timeout=900)
        command = sid_tree_godot()
    return command


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(maps_dir: Path) -> tuple[subprocess.Popen, str]:
    """``pathserver serve`` on a free loopback port; returns it once its ready line came."""
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    server = subprocess.Popen([sys.executable, "-m", "pathserver", "serve", "--maps", str(maps_dir),
                               "--bind", endpoint], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    ready = threading.Event()

    def read() -> None:
        for line in server.stdout:
            if line.startswith(READY_PREFIX):
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(SERVER_START_TIMEOUT_S):
        stop_server(server)
        raise SystemExit(f"pathserver serve did not print its ready line within {SERVER_START_TIMEOUT_S} s")
    return server, endpoint


def stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(10)


def write_problems(path: Path, map_path: Path, problems: list) -> None:
    lines = [f"map {map_path}"]
    lines += [f"{p.sx} {p.sy} {p.gx} {p.gy} {p.optimal!r} {p.tolerance!r}" for p in problems]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def in_process(map_path: Path, walkable, problems: list, rounds: int) -> tuple[float, int]:
    """The same problems through ``find_path`` in this process, with the options the addon
    sends (smooth "none", the server's defaults otherwise): the mean of each problem's fastest
    time over the rounds in us, as for AStarGrid2D, and how many answers have the scenario's
    optimal length."""
    from pathserver import kernel_cache

    kernel_cache.configure()  # before the kernels are imported: numba picks their cache folder then
    from pathserver import GridMap
    from pathserver.grid.search import find_path

    gridmap = GridMap.load(map_path)
    find_path(gridmap, (problems[0].sx, problems[0].sy), (problems[0].gx, problems[0].gy))
    fastest = None
    results = []
    for _ in range(rounds):
        times = []
        results = []
        gc.disable()
        try:
            for p in problems:
                t0 = time.perf_counter_ns()
                results.append(find_path(gridmap, (p.sx, p.sy), (p.gx, p.gy), smooth="none"))
                times.append(time.perf_counter_ns() - t0)
        finally:
            gc.enable()
        fastest = times if fastest is None else list(map(min, fastest, times))
    optimal = 0
    for p, result in zip(problems, results):
        length = movingai.path_length(result.path, walkable, (p.sx, p.sy), (p.gx, p.gy))
        optimal += length is not None and abs(length - p.optimal) <= p.tolerance
    return statistics.fmean(fastest) / 1000, optimal


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--movingai", type=Path, default=movingai.DEFAULT_MOVINGAI,
                        help="folder of Moving AI .map + .map.scen files (default: %(default)s)")
    parser.add_argument("--map", default="den520d", help="map name (default: %(default)s)")
    parser.add_argument("--queries", type=int, default=200, help="problems (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per engine (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="problem selection seed (default: %(default)s)")
    parser.add_argument("--timeout", type=int, default=900, help="the Godot run's limit in s (default: %(default)s)")
    args = parser.parse_args(argv)

    godot = godot_command()
    if godot is None:
        print("No Godot 4 found: set GODOT to its command, or install the engine the addon's tests use\n"
              f"with `bash {RUN_TESTS.relative_to(REPO)} install` (builds a Debian sid tree; needs root).")
        print("\ngodot bench: skipped (no Godot 4)")
        return 0
    maps = movingai.find_maps(args.movingai)
    if args.map not in maps:
        print(f"map {args.map} not found under {args.movingai}", file=sys.stderr)
        return 2
    map_path = maps[args.map]
    walkable = movingai.read_walkable(map_path)
    problems = movingai.bucket_spread(movingai.read_scenarios(map_path, walkable), args.queries, args.seed)

    with tempfile.TemporaryDirectory(prefix="pathserver-godot-bench-") as scratch:
        scratch = Path(scratch)
        served = scratch / "maps"
        served.mkdir()
        shutil.copy(map_path, served / map_path.name)
        problems_file = scratch / "problems.txt"
        write_problems(problems_file, map_path, problems)

        imported = subprocess.run([*godot, "--headless", "--path", str(PROJECT), "--import"],
                                  capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S)
        if imported.returncode != 0:
            print(imported.stdout[-2000:] + imported.stderr[-2000:], file=sys.stderr)
            raise SystemExit("godot --import of bench/godot failed")

        server, endpoint = start_server(served)
        try:
            run = subprocess.run(["timeout", str(args.timeout), *godot, "--headless", "--path", str(PROJECT),
                                  "-s", "res://bench_astar.gd", "--", str(problems_file), endpoint, args.map,
                                  str(args.rounds)], capture_output=True, text=True)
        finally:
            stop_server(server)
    (PROJECT / ".last-run.log").write_text(run.stdout + run.stderr)
    lines = run.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("AStarGrid2D against")), None)
    shown = lines[start:] if start is not None else lines[-30:]
    print("\n".join(shown))
    if not lines or lines[-1] != "bench done":
        if run.returncode == 124:
            print(f"the Godot run timed out after {args.timeout} s", file=sys.stderr)
        print(f"no closing 'bench done' line (exit {run.returncode}); the whole output is in "
              f"{(PROJECT / '.last-run.log').relative_to(REPO)}", file=sys.stderr)
        return 1

    mean_us, optimal = in_process(map_path, walkable, problems, args.rounds)
    print(f"\nFor reference, pathserver in this process: find_path(gridmap, start, goal, smooth=\"none\")\n"
          f"  {mean_us:.1f} us / path (each problem's fastest of {args.rounds} rounds), "
          f"{optimal}/{len(problems)} optimal: the search and the Python call;\n"
          "  the addon's rows add the server's request handling, ZeroMQ, msgpack and GDScript.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
