"""The ``pathserver`` command line. ``main(argv)`` returns the exit code; tests call it.

Every failure the user can cause (a bad map file, a bad coordinate) prints one line on
stderr and exits non-zero; tracebacks are for bugs only.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from pathserver import options
from pathserver.options import tables as option_tables
from pathserver import kernel_cache

DEFAULT_MAPS = Path(__file__).resolve().parent.parent / "maps"
DEFAULT_BIND = "tcp://127.0.0.1:5555"


def _parser() -> argparse.ArgumentParser:
    from pathserver import __version__

    # The bundle's executable (`pathserver bundle`) is the same command under its own name.
    prog = "pathserver-server" if kernel_cache.frozen() else "pathserver"
    parser = argparse.ArgumentParser(prog=prog, description="Exact grid pathfinding for game engines.")
    parser.add_argument("--version", action="version", version=f"pathserver {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    path = commands.add_parser(
        "path", help="find one path and print it",
        description="Find one path on a map file and print it.",
        epilog="exit status 0 when a path (or with --partial a partial one) is found, 1 when there is no path "
               "(no_path), 2 for a bad map file or argument (one line on stderr)",
    )
    path.add_argument("map", type=Path)
    for name in ("sx", "sy", "gx", "gy"):
        path.add_argument(name, type=float)
    for end in ("start", "goal"):
        path.add_argument(f"--{end}-floor", type=int, default=None, metavar="F",
                          help=f"the {end}'s floor, on a map of several (default 0)")
    options.add_arguments(path)
    path.add_argument("--json", action="store_true", help="print the result as one JSON object")

    listing = commands.add_parser("options", help="list the search options (--json: machine-readable)")
    listing.add_argument("--json", action="store_true", help="print them as one JSON object")
    listing.add_argument("--markdown", action="store_true", help="print the table docs/protocol.md shows")

    validate = commands.add_parser("validate", help="load a map and report on it")
    validate.add_argument("map", type=Path)
    validate.add_argument("--units", default="1,2,3,4", help="unit sizes to report components for (default 1,2,3,4)")

    from pathserver.server.loop import DEFAULT_SPIN_US, MAX_SPIN_US

    serve = commands.add_parser("serve", help="serve a folder of maps over ZeroMQ")
    serve.add_argument("--maps", type=Path, default=DEFAULT_MAPS, help=f"map folder (default {DEFAULT_MAPS})")
    serve.add_argument("--bind", default=DEFAULT_BIND, help=f"endpoint to bind (default {DEFAULT_BIND})")
    serve.add_argument("--threads", type=int, default=None, help="search threads (default: one per core)")
    serve.add_argument("--max-upload-cells", type=int, default=None, metavar="N",
                       help="total cells of all maps uploaded with put_map; a put past it is answered too_large "
                            "(default 67108864: four 4096x4096 maps)")

    serve.add_argument("--spin-us", type=_spin_us, default=DEFAULT_SPIN_US, metavar="US",
                       help="how long after a reply the server looks for the next request before it sleeps: a "
                            f"synchronous caller's next path finds it awake (0 to {MAX_SPIN_US}; "
                            f"default {DEFAULT_SPIN_US}; 0 sleeps at once)")
    serve.add_argument("--connect", default=None, metavar="ENDPOINT",
                       help="run as a worker behind `pathserver broker`: connect to its --back endpoint instead of binding")
    serve.add_argument("--state", default=None, metavar="redis://HOST:PORT/DB",
                       help="keep uploads and edits in this Redis, shared by every server given it, in one order "
                            "(docs/scaling.md); default: in this process only")
    for gone in ("--edits", "--feed"):  # the broker's edit log: refused with a pointer to --state
        serve.add_argument(gone, default=None, help=argparse.SUPPRESS)

    kernels = commands.add_parser(
        "kernels", help="compile (or load) every kernel a request can reach into numba's cache, and say where"
    )
    kernels.add_argument("--maps", type=Path, default=None,
                         help="also load every map in this folder and answer one path on each")
    kernels.add_argument("--json", action="store_true", help="print the figures as one JSON object")

    if not kernel_cache.frozen():
        bundle = commands.add_parser("bundle", help="build a self-contained server folder for this platform "
                                                    "(needs the bundle extra: pip install 'pathserver[bundle]')")
        bundle.add_argument("out_dir", type=Path, help="the folder to build it in (new, empty, or an earlier bundle)")

    from pathserver import broker, loadtest, render, security

    broker.add_arguments(commands.add_parser("broker", help="a front end that deals requests to `serve --connect` workers"))
    security.add_serve_arguments(serve)
    security.add_arguments(commands.add_parser("keygen", help="write a CURVE keypair (NAME.key, NAME.key_secret)"))
    security.add_relay_arguments(
        commands.add_parser("relay", help="a plain loopback endpoint for engines, relayed to a CURVE server")
    )
    render.add_arguments(commands.add_parser("render", help="draw a map and a path as PNG"))
    loadtest.add_arguments(commands.add_parser("loadtest", help="drive a server like a game full of units"))
    return parser


def _cmd_path(args) -> int:
    from pathserver import GridMap, find_path

    gridmap = GridMap.load(args.map)
    start, goal = (args.sx, args.sy), (args.gx, args.gy)
    if args.start_floor is not None:
        start = (*start, args.start_floor)
    if args.goal_floor is not None:
        goal = (*goal, args.goal_floor)
    result = find_path(gridmap, start, goal, **options.cli_values(args))
    links = [] if result.links is None else result.links.tolist()
    # result.algorithm is the engine chosen for the map; a straight line (a trip of no
    # steps included) ran none of them.
    algorithm = "none" if result.line_of_sight else result.algorithm
    if args.json:
        print(json.dumps({
            "status": result.status, "cost": result.cost, "length": result.length, "expanded": result.expanded,
            "start": list(result.start), "goal": list(result.goal), "algorithm": algorithm,
            "path": result.path.tolist(), **({"links": links} if result.links is not None else {}),
        }))
        return 0 if result.status != "no_path" else 1
    notes = []
    if result.start_snapped:
        notes.append(f"start snapped to {result.start}")
    if result.goal_snapped:
        notes.append(f"goal snapped to {result.goal}")
    if result.line_of_sight:
        notes.append("straight line, no search")
    print(f"status: {result.status}" + (f" ({'; '.join(notes)})" if notes else ""))
    if result.status != "no_path":
        print(f"cost: {result.cost:.6f}  length: {result.length:.6f}  expanded: {result.expanded}  algorithm: {algorithm}")
        print("waypoints: " + " ".join(",".join(map(str, point)) for point in result.path.tolist()))
        if links:
            print("links: " + " ".join(f"{i}->{i + 1}:link {k}" for i, k in links))
    return 0 if result.status != "no_path" else 1


def _cmd_validate(args) -> int:
    import time

    from pathserver import GridMap

    began = time.perf_counter()
    gridmap = GridMap.load(args.map)
    elapsed = (time.perf_counter() - began) * 1000
    walkable = int(gridmap.walkable.sum())  # the rows between floors are blocked: not the map's
    size = f"{gridmap.width}x{gridmap.floor_height}" + (f", {gridmap.floors} floors" if gridmap.floors > 1 else "")
    links = f", {len(gridmap.links)} links" if len(gridmap.links) else ""
    print(f"{args.map}: {size}{links}, {walkable} walkable cells "
          f"({100.0 * walkable / (gridmap.width * gridmap.floor_height * gridmap.floors):.1f}%), "
          f"loaded and annotated in {elapsed:.0f} ms")
    print(f"terrain: {'uniform cost' if gridmap.uniform_cost else 'varying costs'}; "
          f"heights: {'yes' if gridmap.heights is not None else 'no'}; largest clearance: {int(gridmap.clearance.max())}")
    for text in args.units.split(","):
        unit = options.unit_size_from_text(text.strip())
        try:
            layer = gridmap.layer(unit)
        except Exception as error:  # noqa: BLE001 - reported per size, e.g. larger than the map
            print(f"  unit {text.strip()}: {error}")
            continue
        noun = "component" if layer.n_components == 1 else "components"
        print(f"  unit {text.strip()}: {layer.n_passable} standable cells, {layer.n_components} {noun}")
    return 0


def _cmd_options(args) -> int:
    if args.json:
        print(json.dumps(option_tables.as_json()))
    elif args.markdown:
        print(option_tables.markdown_table())
    else:
        print(option_tables.text_table())
    return 0


def _spin_us(text: str) -> int:
    from pathserver.server.loop import MAX_SPIN_US

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of µs, 0 to {MAX_SPIN_US}, got {text!r}") from None
    if not 0 <= value <= MAX_SPIN_US:
        raise argparse.ArgumentTypeError(f"must be 0 to {MAX_SPIN_US} µs, got {value}")
    return value


def _cmd_serve(args) -> int:
    from pathserver.broker import GONE_EDIT_LOG
    from pathserver.server import serve

    if args.edits is not None or args.feed is not None:
        print(f"pathserver: {GONE_EDIT_LOG}", file=sys.stderr)
        return 2
    status = serve(
        args.maps, args.bind, threads=args.threads, curve_keys=args.curve_keys,
        allowed_clients_dir=args.allow, insecure=args.insecure,
        connect=args.connect, state=args.state, max_upload_cells=args.max_upload_cells, exit_at_once=True,
        spin_us=args.spin_us,
    ) or 0
    # Every socket is closed and every line said: end here, not after the interpreter has
    # waited for the background table builds and torn numba down, which is slow.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _cmd_kernels(args) -> int:
    import platform

    from pathserver.server.startup import StartupLog, compile_counts, kernel_cache_dir, warm_kernels

    log = StartupLog()
    warm_kernels()
    if args.maps is not None:
        _answer_one_path_per_map(args.maps)
    compiled, loaded = compile_counts()
    if kernel_cache.ahead_of_time():
        # A bundle's kernels compiled ahead of time (pathserver.aot): nothing to cache.
        manifest = None
    else:
        import numba

        cpu = os.environ.get("NUMBA_CPU_NAME") or "host"
        # As numba's own default: no features beyond the name for "generic", else the host's.
        features = os.environ.get("NUMBA_CPU_FEATURES", "" if cpu == "generic" else "host")
        manifest = kernel_cache.manifest_for(numba.__version__, cpu, features)
    facts = {"folder": str(kernel_cache_dir()), "compiled": compiled, "loaded": loaded,
             "seconds": round(log.elapsed(), 2), "platform": platform.platform(), "manifest": manifest,
             "ahead_of_time": kernel_cache.ahead_of_time()}
    if args.json:
        print(json.dumps(facts))
    else:
        print(f"kernels in {facts['folder']}: {compiled} compiled, {loaded} loaded from the cache, "
              f"{facts['seconds']:.1f} s")
    return 0


def _answer_one_path_per_map(folder: Path) -> None:
    """Load every map in ``folder`` and find one path on each, from its first standable
    cell to its last: the kernels then hold the signatures real maps use."""
    import numpy as np

    from pathserver import find_path
    from pathserver.errors import PathserverError
    from pathserver.maps.registry import MapRegistry

    registry = MapRegistry(folder)
    registry.load_all()
    for name in registry.names():
        gridmap = registry.get(name)
        cells = np.argwhere(gridmap.layer(1).passable)
        if len(cells):
            (y0, x0), (y1, x1) = cells[0], cells[-1]
            try:
                find_path(gridmap, (int(x0), int(y0)), (int(x1), int(y1)))
            except PathserverError:
                pass  # e.g. the two cells in different components: the kernels ran all the same


def _cmd_bundle(args) -> int:
    from pathserver import bundle

    return bundle.run(args)


class _StderrLines(logging.Handler):
    """The package's warnings as ``pathserver: ...`` lines on the stderr of the moment."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(f"pathserver: {self.format(record)}", file=sys.stderr, flush=True)
        except Exception:  # noqa: BLE001 - logging's own rule: a handler never raises
            self.handleError(record)


def _warnings_to_stderr() -> None:
    """Show the package's warnings (a map that failed to load, ...) like every other line
    the command prints on stderr. Once per process: tests call main() many times."""
    logger = logging.getLogger("pathserver")
    if not any(isinstance(handler, _StderrLines) for handler in logger.handlers):
        handler = _StderrLines(logging.WARNING)
        logger.addHandler(handler)


def main(argv: list[str] | None = None) -> int:
    # First: numba picks a kernel's cache folder when the kernel's module is imported.
    kernel_cache.configure()
    _warnings_to_stderr()
    from pathserver.errors import PathserverError

    args = _parser().parse_args(argv)
    from pathserver import broker, loadtest, render, security

    handlers = {
        "path": _cmd_path, "validate": _cmd_validate, "serve": _cmd_serve, "options": _cmd_options,
        "render": render.run, "loadtest": loadtest.run, "keygen": security.run, "relay": security.run_relay,
        "broker": broker.run, "kernels": _cmd_kernels, "bundle": _cmd_bundle,
    }
    try:
        return handlers[args.command](args)
    except PathserverError as error:
        print(f"pathserver: error: {error.code}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`pathserver options --json | head`): no traceback, and
        # nothing more written to the closed pipe at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
