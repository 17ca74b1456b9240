"""Godot's AStarGrid2D against the pathserver addon on the same Moving AI problems, in a
headless Godot 4: the figures behind "why not just use AStarGrid2D?", and what each way of
asking costs the game's main thread.

    python bench/godot_astar.py                        # den520d and Boston_0_512, 200 problems, 10 rounds
    python bench/godot_astar.py --map Aftershock --rounds 9
    python bench/godot_astar.py --json out.json --write-docs

For each map it draws the same bucket-spread problems as ``bench/core.py`` (seed 0), starts a
``pathserver serve`` on a free loopback port serving a temporary folder that holds only the
map, runs ``bench/godot/bench_astar.gd`` in headless Godot under ``timeout`` and prints its
table (AStarGrid2D with and without jumping; the addon's synchronous call, one packed batch
with every cell and string-pulled, every path in flight, one await after another: see the
top of bench_astar.gd), then beside each addon row the same requests' time without the
addon: sent to the same server from a pyzmq DEALER (the server's loop and ZeroMQ), and the
server's own time, answered in this process by its pipeline
(``pathserver.server.handlers.respond``: decode, search, encode the reply), no transport.
Last, the issue's targets against their figures, PASS or FAIL.

``--json FILE`` writes ``{"rows": [{"map", "engine", "us_per_path", "main_thread_us_per_path",
"wire_us_per_path", "server_us_per_path", "optimal", "problems"}, ...], "targets": [...]}``;
``--write-docs`` puts the tables into docs/performance.md's ``godot_astar`` section
(``bench/_docs.py``), with the command that printed them.

Godot: ``$GODOT`` (a command line, e.g. ``godot`` or a path), else the engine that
``engine_clients/godot/run_tests.sh install`` puts in a Debian sid tree (run through that
tree's own dynamic loader). Without either it prints how to get one and skips (exit 0).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _movingai as movingai  # noqa: E402
from _docs import add_argument as add_write_docs, write_section  # noqa: E402
from pathserver.loadtest.spawn import stop_process  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PROJECT = REPO / "bench" / "godot"
RUN_TESTS = REPO / "engine_clients" / "godot" / "run_tests.sh"
READY_PREFIX = "pathserver ready on "
DEFAULT_MAPS = "den520d,Boston_0_512"
ROWS_PREFIX = "rows-json: "
#: The issue's targets: (what, row, the AStarGrid2D row's figure over the row's at least).
SPEED_TARGETS = (("addon, one batch", 20.0), ("addon, batch, los", 40.0), ("addon, sync", 8.0))
#: The batch's main-thread time a path, at most this share of AStarGrid2D's.
MAIN_THREAD_SHARE = 1 / 50
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
    stop_process(server)


def write_problems(path: Path, map_path: Path, problems: list) -> None:
    lines = [f"map {map_path}"]
    lines += [f"{p.sx} {p.sy} {p.gx} {p.gy} {p.optimal!r} {p.tolerance!r}" for p in problems]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def request_bodies(map_name: str, problems: list) -> dict[str, list[bytes]]:
    """The msgpack bodies the addon sends for each of its rows, by the server row they time:
    one packed ``path`` request a problem (the sync call, every path in flight, one await
    after another), and one packed batch, ``starts`` and ``goals`` bins, with every cell and
    string-pulled."""
    import msgpack
    import numpy as np

    common = {"map": map_name, "unit_size": 1, "space": "grid", "packed": True}
    paths = [msgpack.packb({"id": i + 1, "op": "path", **common, "start": [float(p.sx), float(p.sy)],
                            "goal": [float(p.gx), float(p.gy)], "smooth": "none"})
             for i, p in enumerate(problems)]
    starts = np.array([(p.sx, p.sy) for p in problems], dtype="<i4").tobytes()
    goals = np.array([(p.gx, p.gy) for p in problems], dtype="<i4").tobytes()
    batch = {"id": 1, "op": "paths", **common, "starts": starts, "goals": goals}
    return {"paths": paths, "batch": [msgpack.packb({**batch, "smooth": "none"})],
            "batch, los": [msgpack.packb(batch)]}


def timed_bodies(bodies: dict[str, list[bytes]], rounds: int, answer) -> dict[str, float]:
    """Each row's bodies through ``answer(body) -> reply bytes``, in us a path: for the single
    paths the mean of each body's fastest time over the rounds, for a batch its fastest over
    its entries. A refused request ends the run: the figures would be an error's."""
    import msgpack

    figures = {}
    for name, requests in bodies.items():
        reply = msgpack.unpackb(answer(requests[0]), strict_map_key=False)
        if reply.get("ok") is not True:
            raise SystemExit(f"the server refused the addon's {name} request: {reply.get('error')}")
        fastest = [float("inf")] * len(requests)
        for _ in range(rounds):
            gc.disable()
            try:
                for i, body in enumerate(requests):
                    t0 = time.perf_counter_ns()
                    answer(body)
                    fastest[i] = min(fastest[i], (time.perf_counter_ns() - t0) / 1000)
            finally:
                gc.enable()
        entries = len(requests) if len(requests) > 1 else len(reply["status"])
        figures[name] = sum(fastest) / entries
    return figures


def server_times(maps_dir: Path, bodies: dict[str, list[bytes]], rounds: int) -> dict[str, float]:
    """The server's own time for the addon's requests: each body through ``respond`` in this
    process (decode, search, encode the reply), no ZeroMQ."""
    from pathserver import kernel_cache

    kernel_cache.configure()  # before the kernels are imported: numba picks their cache folder then
    from pathserver.maps.registry import MapRegistry
    from pathserver.server.handlers import respond

    registry = MapRegistry(maps_dir)
    registry.load_all()
    return timed_bodies(bodies, rounds, lambda body: respond(body, registry))


def wire_times(endpoint: str, bodies: dict[str, list[bytes]], rounds: int) -> dict[str, float]:
    """The same bodies to the running server from a pyzmq DEALER, one round trip at a time:
    the server's loop and ZeroMQ on loopback, no GDScript."""
    import zmq

    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.setsockopt(zmq.RCVTIMEO, 60_000)
    dealer.connect(endpoint)

    def answer(body: bytes) -> bytes:
        dealer.send_multipart([b"", body])
        return dealer.recv_multipart()[-1]

    try:
        return timed_bodies(bodies, rounds, answer)
    finally:
        dealer.close(linger=0)


#: Under the generated tables in docs/performance.md.
LEGEND = [
    "µs a path: AStarGrid2D's `get_id_path` and the addon's `find_id_path_sync`, the mean of each",
    "problem's fastest call over the rounds; the other rows, the fastest round from the first request",
    "to the last answer in hand, over the problems. Main-thread µs: what the game's own thread spends,",
    "AStarGrid2D's whole query; for the addon, the request calls (encoding, sending) and the client's",
    "time in `poll()` and in synchronous calls (reading, decoding, handing out). Wire µs: the same",
    "request bodies sent to the same server from a Python DEALER (pyzmq), one round trip at a time:",
    "the server's loop and ZeroMQ, no GDScript. Server µs: those bodies answered in one process by",
    "the server's pipeline (decode, search, encode the reply), without ZeroMQ or its loop's threads.",
    "Optimal: the returned cells' octile length is the scenario's; for the",
    "string-pulled rows, the reply's cost is. The rows are described at the top of",
    "`bench/godot/bench_astar.gd`.",
]

#: Which server figure stands beside each addon row.
SERVER_ROW = {"addon, sync": "paths", "addon, all in flight": "paths", "addon, await each": "paths",
              "addon, one batch": "batch", "addon, batch, los": "batch, los"}


def run_map(godot: list[str], name: str, map_path: Path, args) -> tuple[list[dict], str] | None:
    """One map: the Godot run and the server's own figures. Returns the rows (with
    ``server_us_per_path`` where there is one) and the Godot run's printed table, or None when
    the run failed (said on stderr)."""
    walkable = movingai.read_walkable(map_path)
    problems = movingai.bucket_spread(movingai.read_scenarios(map_path, walkable), args.queries, args.seed)
    with tempfile.TemporaryDirectory(prefix="pathserver-godot-bench-") as scratch:
        scratch = Path(scratch)
        served = scratch / "maps"
        served.mkdir()
        shutil.copy(map_path, served / map_path.name)
        problems_file = scratch / "problems.txt"
        write_problems(problems_file, map_path, problems)
        bodies = request_bodies(name, problems)
        server, endpoint = start_server(served)
        try:
            run = subprocess.run(["timeout", str(args.timeout), *godot, "--headless", "--path", str(PROJECT),
                                  "-s", "res://bench_astar.gd", "--", str(problems_file), endpoint, name,
                                  str(args.rounds)], capture_output=True, text=True)
            wire_figures = wire_times(endpoint, bodies, args.rounds) if run.stdout.endswith("bench done\n") else {}
        finally:
            stop_server(server)
        log = PROJECT / ".last-run.log"
        log.write_text(run.stdout + run.stderr)
        lines = run.stdout.splitlines()
        if not lines or lines[-1] != "bench done":
            print("\n".join(lines[-30:]), file=sys.stderr)
            if run.returncode == 124:
                print(f"the Godot run timed out after {args.timeout} s", file=sys.stderr)
            print(f"no closing 'bench done' line (exit {run.returncode}); the whole output is in "
                  f"{log.relative_to(REPO)}", file=sys.stderr)
            return None
        server_figures = server_times(served, bodies, args.rounds)
    start = next((i for i, line in enumerate(lines) if line.startswith("AStarGrid2D against")), 0)
    table = [line for line in lines[start:-1] if not line.startswith(ROWS_PREFIX)]
    rows = json.loads(next(line for line in lines if line.startswith(ROWS_PREFIX))[len(ROWS_PREFIX):])
    for row in rows:
        row["map"] = name
        if row["engine"] in SERVER_ROW:
            row["wire_us_per_path"] = round(wire_figures[SERVER_ROW[row["engine"]]], 2)
            row["server_us_per_path"] = round(server_figures[SERVER_ROW[row["engine"]]], 2)
    return rows, "\n".join(table)


def targets(rows: list[dict]) -> list[dict]:
    """The issue's targets for one map's rows: each with its figure and whether it holds."""
    by_engine = {row["engine"]: row for row in rows}
    astar = by_engine["AStarGrid2D"]
    checks = []
    for engine, at_least in SPEED_TARGETS:
        figure = astar["us_per_path"] / by_engine[engine]["us_per_path"]
        checks.append({"target": f"{engine}: >= {at_least:g}x AStarGrid2D in us a path",
                       "figure": f"{figure:.1f}x", "ok": figure >= at_least})
    share = by_engine["addon, one batch"]["main_thread_us_per_path"] / astar["main_thread_us_per_path"]
    checks.append({"target": f"addon, one batch: main-thread time <= 1/{round(1 / MAIN_THREAD_SHARE)} of "
                             "AStarGrid2D's",
                   "figure": f"1/{1 / share:.0f}" if share > 0 else "0", "ok": share <= MAIN_THREAD_SHARE})
    wrong = [f"{row['engine']} {row['optimal']}/{row['problems']}" for row in rows if row["optimal"] != row["problems"]]
    checks.append({"target": "every answer optimal", "figure": "all" if not wrong else ", ".join(wrong),
                   "ok": not wrong})
    return [{"map": rows[0]["map"], **check} for check in checks]


def summary(name: str, rows: list[dict], checks: list[dict]) -> list[str]:
    """One map's rows with the server's figure beside them, then its targets, as Markdown."""
    astar = next(row["us_per_path"] for row in rows if row["engine"] == "AStarGrid2D")
    out = [f"**{name}**, {rows[0]['problems']} problems", "",
           "| how the game asks | µs a path | × AStarGrid2D | main-thread µs a path | wire µs a path "
           "| server µs a path | optimal |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        wire, server = (f"{row[key]:,.1f}" if key in row else "–"
                        for key in ("wire_us_per_path", "server_us_per_path"))
        out.append(f"| {row['engine']} | {row['us_per_path']:,.1f} | {astar / row['us_per_path']:.1f} | "
                   f"{row['main_thread_us_per_path']:,.1f} | {wire} | {server} | {row['optimal']}/{row['problems']} |")
    out += ["", "| target | figure | |", "| --- | ---: | --- |"]
    out += [f"| {c['target']} | {c['figure']} | {'PASS' if c['ok'] else 'FAIL'} |" for c in checks]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    movingai.add_godot_bench_arguments(parser, DEFAULT_MAPS, rounds=10, timeout=900)
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the rows and targets as JSON")
    add_write_docs(parser)
    args = parser.parse_args(argv)

    godot = godot_command()
    if godot is None:
        print("No Godot 4 found: set GODOT to its command, or install the engine the addon's tests use\n"
              f"with `bash {RUN_TESTS.relative_to(REPO)} install` (builds a Debian sid tree; needs root).")
        print("\ngodot bench: skipped (no Godot 4)")
        return 0
    maps = movingai.named_maps(args.movingai, args.map)
    if maps is None:
        return 2
    names = list(maps)
    imported = subprocess.run([*godot, "--headless", "--path", str(PROJECT), "--import"],
                              capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S)
    if imported.returncode != 0:
        print(imported.stdout[-2000:] + imported.stderr[-2000:], file=sys.stderr)
        raise SystemExit("godot --import of bench/godot failed")

    all_rows, all_checks, markdown = [], [], []
    for name in names:
        outcome = run_map(godot, name, maps[name], args)
        if outcome is None:
            return 1
        rows, table = outcome
        checks = targets(rows)
        all_rows += rows
        all_checks += checks
        lines = summary(name, rows, checks)
        print(table + "\n\n" + "\n".join(lines) + "\n")
        markdown += lines + [""]
    # The command as a reader would run it again: where the JSON went is beside the point.
    shown = [arg for arg in (argv if argv is not None else sys.argv[1:]) if arg != str(args.json)]
    command = " ".join(["python bench/godot_astar.py", *[arg for arg in shown if arg != "--json"]])
    if args.json:
        args.json.write_text(json.dumps({"command": command, "rows": all_rows, "targets": all_checks}, indent=1) + "\n")
    if args.write_docs:
        cores = os.cpu_count()
        intro = [f"Godot {godot_version(godot)} on {cores} cores, its idle sleep between frames 0.25 ms; "
                 "the server on loopback.", ""]
        write_section("godot_astar", "\n".join(intro + markdown + LEGEND))
    failed = [check for check in all_checks if not check["ok"]]
    print(f"targets: {len(all_checks) - len(failed)} PASS, {len(failed)} FAIL")
    return 0


def godot_version(godot: list[str]) -> str:
    run = subprocess.run([*godot, "--headless", "--version"], capture_output=True, text=True, timeout=60)
    return run.stdout.strip().splitlines()[-1] if run.stdout.strip() else "4"


if __name__ == "__main__":
    sys.exit(main())
