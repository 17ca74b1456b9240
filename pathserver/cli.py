"""The ``pathserver`` command line. ``main(argv)`` returns the exit code; tests call it.

Every failure the user can cause (a bad map file, a bad coordinate) prints one line on
stderr and exits non-zero; tracebacks are for bugs only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pathserver import options
from pathserver import kernel_cache

DEFAULT_MAPS = Path(__file__).resolve().parent.parent / "maps"
DEFAULT_BIND = "tcp://127.0.0.1:5555"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pathserver", description="Exact grid pathfinding for game engines.")
    commands = parser.add_subparsers(dest="command", required=True)

    path = commands.add_parser("path", help="find one path and print it")
    path.add_argument("map", type=Path)
    for name in ("sx", "sy", "gx", "gy"):
        path.add_argument(name, type=float)
    options.add_arguments(path)
    path.add_argument("--json", action="store_true", help="print the result as one JSON object")

    listing = commands.add_parser("options", help="list the search options (--json: machine-readable)")
    listing.add_argument("--json", action="store_true", help="print them as one JSON object")
    listing.add_argument("--markdown", action="store_true", help="print the table docs/protocol.md shows")

    validate = commands.add_parser("validate", help="load a map and report on it")
    validate.add_argument("map", type=Path)
    validate.add_argument("--units", default="1,2,3,4", help="unit sizes to report components for (default 1,2,3,4)")

    serve = commands.add_parser("serve", help="serve a folder of maps over ZeroMQ")
    serve.add_argument("--maps", type=Path, default=DEFAULT_MAPS, help=f"map folder (default {DEFAULT_MAPS})")
    serve.add_argument("--bind", default=DEFAULT_BIND, help=f"endpoint to bind (default {DEFAULT_BIND})")
    serve.add_argument("--threads", type=int, default=None, help="search threads (default: one per core)")
    serve.add_argument("--max-upload-cells", type=int, default=None, metavar="N",
                       help="total cells of all maps uploaded with put_map; a put past it is answered too_large "
                            "(default 67108864: four 4096x4096 maps)")

    serve.add_argument("--connect", default=None, metavar="ENDPOINT",
                       help="run as a worker behind `pathserver broker`: connect to its --back endpoint instead of binding")
    serve.add_argument("--edits", default=None, metavar="ENDPOINT",
                       help="with --connect: the broker's edits endpoint (default: --connect's port + 1, where the "
                            "broker binds it unless given --edits; else copy it from the broker's ready line)")
    serve.add_argument("--feed", default=None, metavar="ENDPOINT",
                       help="with --connect: the broker's feed endpoint (default: --connect's port + 2, likewise)")

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
    result = find_path(gridmap, (args.sx, args.sy), (args.gx, args.gy), **options.cli_values(args))
    if args.json:
        print(json.dumps({
            "status": result.status, "cost": result.cost, "length": result.length, "expanded": result.expanded,
            "start": list(result.start), "goal": list(result.goal), "algorithm": result.algorithm,
            "path": result.path.tolist(),
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
        print(f"cost: {result.cost:.6f}  length: {result.length:.6f}  expanded: {result.expanded}  algorithm: {result.algorithm}")
        print("waypoints: " + " ".join(f"{x},{y}" for x, y in result.path.tolist()))
    return 0 if result.status != "no_path" else 1


def _cmd_validate(args) -> int:
    import time

    from pathserver import GridMap

    began = time.perf_counter()
    gridmap = GridMap.load(args.map)
    elapsed = (time.perf_counter() - began) * 1000
    walkable = int(gridmap.walkable.sum())
    print(f"{args.map}: {gridmap.width}x{gridmap.height}, {walkable} walkable cells "
          f"({100.0 * walkable / gridmap.walkable.size:.1f}%), loaded and annotated in {elapsed:.0f} ms")
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
        print(json.dumps(options.as_json()))
    elif args.markdown:
        print(options.markdown_table())
    else:
        print(options.text_table())
    return 0


def _cmd_serve(args) -> int:
    from pathserver.server import serve

    return serve(
        args.maps, args.bind, threads=args.threads, curve_keys=args.curve_keys,
        allowed_clients_dir=args.allow, insecure=args.insecure,
        connect=args.connect, edits=args.edits, feed=args.feed, max_upload_cells=args.max_upload_cells,
    ) or 0


def main(argv: list[str] | None = None) -> int:
    # First: numba picks a kernel's cache folder when the kernel's module is imported.
    kernel_cache.configure()
    from pathserver.errors import PathserverError

    args = _parser().parse_args(argv)
    from pathserver import broker, loadtest, render, security

    handlers = {
        "path": _cmd_path, "validate": _cmd_validate, "serve": _cmd_serve, "options": _cmd_options,
        "render": render.run, "loadtest": loadtest.run, "keygen": security.run, "relay": security.run_relay,
        "broker": broker.run,
    }
    try:
        return handlers[args.command](args)
    except PathserverError as error:
        print(f"pathserver: error: {error.code}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
