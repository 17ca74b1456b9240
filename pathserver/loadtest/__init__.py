"""``pathserver loadtest``: drive a server like a game full of units, and say what it did.

::

    maps? ──► server          one ``maps`` request first: names and sizes to aim at
    drivers (threads) ─┬─ DEALER per simulated client ──► server ──► replies matched by id
                       └─ (driver 0) ``update``s at --updates-per-s: doors closing, opening
    main thread: progress bar; then the summary from every driver's records

The command (:func:`main`, or ``add_arguments`` and ``run`` for the CLI) sits on:
``plan`` (:class:`LoadConfig`, trips and doors), ``drive`` (:func:`run_load`: the drivers,
closed or open loop, and their accounting), ``report`` (:func:`summarize`,
:func:`format_summary`, :func:`plot`) and ``spawn`` (``--spawn``'s :class:`SpawnedServer`,
``--rewrites-per-s``'s :class:`Rewriter`). Every name is importable from here.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from pathserver.loadtest.drive import Driver, Records, fetch_maps, run_load
from pathserver.loadtest.plan import DEFAULT_ENDPOINT, Doors, LoadConfig, LoadTestError, TripSource, read_scen
from pathserver.loadtest.report import PERCENTILES, format_summary, plot, summarize
from pathserver.loadtest.spawn import READY_LINE, Rewriter, SpawnedServer
from pathserver.options import unit_size_from_text

__all__ = [
    "DEFAULT_ENDPOINT", "DEFAULT_MAPS", "PERCENTILES", "READY_LINE", "Doors", "Driver", "LoadConfig",
    "LoadTestError", "Records", "Rewriter", "SpawnedServer", "TripSource", "add_arguments", "config_from_args",
    "fetch_maps", "format_summary", "main", "plot", "read_scen", "run", "run_load", "summarize",
]

DEFAULT_MAPS = Path(__file__).resolve().parents[2] / "maps"


def _units(text: str) -> tuple:
    try:
        return tuple(unit_size_from_text(part.strip()) for part in text.split(","))
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"unit sizes look like 1,2,3x2; got {text!r}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``loadtest`` subcommand's arguments."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--endpoint", default=None, help=f"server to drive (default {DEFAULT_ENDPOINT})")
    where.add_argument("--spawn", action="store_true", help="start a server on a free port for the run, stop it after")
    parser.add_argument("--maps", type=Path, default=DEFAULT_MAPS, help="with --spawn: the map folder to serve")
    parser.add_argument("--clients", type=int, default=4, help="simulated clients, one DEALER each (default 4)")
    load = parser.add_mutually_exclusive_group()
    load.add_argument("--inflight", type=int, default=None,
                      help="closed loop: requests outstanding per client (default 4)")
    load.add_argument("--rate", type=float, default=None,
                      help="open loop: requests per second across all clients; latency from when each was due")
    parser.add_argument("--duration", type=float, default=None, help="seconds of sending (default 10)")
    parser.add_argument("--requests", type=int, default=None, help="path requests to send in all")
    parser.add_argument("--unit-sizes", type=_units, default=(1,), help="sizes to mix, e.g. 1,2,3 or 2x3 (default 1)")
    parser.add_argument("--maps-names", default=None, help="served maps to use, comma-separated (default all)")
    parser.add_argument("--scen", type=Path, default=None, help="draw trips from a Moving AI .scen file")
    parser.add_argument("--long-share", type=float, default=0.3, help="share of trips across the whole map (default 0.3)")
    parser.add_argument("--short-radius", type=int, default=24, help="short trips end within this many cells (default 24)")
    parser.add_argument("--updates-per-s", type=float, default=0.0,
                        help="live door edits per second (changes the served maps: use a test server or --spawn)")
    parser.add_argument("--rewrites-per-s", type=float, default=0.0,
                        help="with --spawn: rewrite the served map files this often (atomic and in-place "
                             "saves, on a temporary copy of --maps) so the server reloads under load")
    parser.add_argument("--threads", type=int, default=1, help="driver threads sharing the clients (default 1)")
    parser.add_argument("--grace", type=float, default=2.0, help="seconds to wait for the last replies (default 2)")
    parser.add_argument("--seed", type=int, default=None, help="random seed for the trips")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout")
    parser.add_argument("--plot", type=Path, default=None, help="write a latency and throughput plot (PNG, needs matplotlib)")


def config_from_args(args: argparse.Namespace, endpoint: str) -> LoadConfig:
    """The :class:`LoadConfig` for parsed ``args`` against ``endpoint``, with the CLI's
    defaults: ``--duration 10`` without ``--requests``, ``--inflight 4`` without ``--rate``."""
    duration = args.duration
    if duration is None and args.requests is None:
        duration = 10.0
    names = tuple(n.strip() for n in args.maps_names.split(",") if n.strip()) if args.maps_names else None
    return LoadConfig(
        endpoint=endpoint,
        clients=args.clients,
        inflight=args.inflight if args.inflight is not None or args.rate is not None else 4,
        rate=args.rate,
        duration=duration,
        requests=args.requests,
        unit_sizes=args.unit_sizes,
        map_names=names,
        scen=args.scen,
        long_share=args.long_share,
        short_radius=args.short_radius,
        updates_per_s=args.updates_per_s,
        rewrites_per_s=args.rewrites_per_s,
        threads=args.threads,
        grace=args.grace,
        seed=args.seed,
        progress=not args.json and sys.stderr.isatty(),
    )


def run(args: argparse.Namespace) -> int:
    """Run the load test; 0 when every request got exactly one reply, 1 when some were
    lost or unmatched, 2 when it could not run."""
    try:
        if args.spawn:
            with tempfile.TemporaryDirectory(prefix="pathserver-loadtest-") as scratch:
                maps_dir = args.maps
                if args.rewrites_per_s > 0:
                    # Rewrites go to a copy: the user's own files are never touched.
                    if not Path(args.maps).is_dir():
                        raise LoadTestError(f"--maps {args.maps} is not a folder")
                    maps_dir = Path(scratch) / "maps"
                    shutil.copytree(args.maps, maps_dir)
                with SpawnedServer(maps_dir) as server:
                    if not args.json:
                        print(f"spawned pathserver on {server.endpoint} ({server.n_maps} maps)", file=sys.stderr)
                    config = config_from_args(args, server.endpoint)
                    config.maps_dir = maps_dir
                    summary = run_load(config)
        else:
            summary = run_load(config_from_args(args, args.endpoint or DEFAULT_ENDPOINT))
        if args.plot is not None:
            plot(summary, args.plot)
    except LoadTestError as exc:
        print(f"pathserver loadtest: error: {exc}", file=sys.stderr)
        return 2
    summary.pop("_latencies")
    if args.json:
        print(json.dumps(summary))
    else:
        print(format_summary(summary))
        if args.plot is not None:
            print(f"plot written to {args.plot}")
    return 0 if summary["lost"] == 0 and summary["unmatched"] == 0 else 1


def main(argv: list[str] | None = None) -> int:
    """``pathserver loadtest`` with ``argv`` (None: the command line); the exit code."""
    parser = argparse.ArgumentParser(prog="pathserver loadtest", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))

