"""``pathserver serve`` put together: the command's arguments become a running server.

``pathserver.server.loop`` serves whatever registry and socket settings it is given; this
module decides what those are, in this order:

1. security: CURVE from ``--curve-keys``/``--allow`` and the bind policy, before anything
   loads (``pathserver.security``);
2. the map registry, and with ``--state`` the shared state on Redis around it
   (``pathserver.editlog``);
3. signals: SIGINT/SIGTERM stop the server from here on, while maps load too;
4. maps and kernels, said line by line on stderr (``pathserver.server.startup``);
5. with ``--state``, the state's uploads and edits are applied before any request;
6. bind (or connect), one ready line on stdout, serve until stopped, release everything.

Steps 1, 2 and 6 may refuse: one line on stderr, exit status 2.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading

import zmq

from pathserver import security
from pathserver.maps.registry import MapRegistry
from pathserver.server import handlers
from pathserver.server.loop import DEFAULT_QUEUE_LIMIT, Server
from pathserver.server.startup import StartupLog, announce_kernels, warm_kernels


def serve(
    maps_dir="maps",
    bind: str = "tcp://127.0.0.1:5555",
    *,
    threads: int | None = None,
    queue_limit: int = DEFAULT_QUEUE_LIMIT,
    watch: bool = True,
    out=None,
    curve_keys=None,
    allowed_clients_dir=None,
    insecure: bool = False,
    connect: str | None = None,
    state: str | None = None,
    max_upload_cells: int | None = None,
) -> int:
    """Serve every map in ``maps_dir`` on ``bind`` until SIGINT/SIGTERM; returns an exit status.

    Loads the maps, compiles the kernels, then binds and prints exactly one line,
    ``pathserver ready on tcp://HOST:PORT (N maps)``, to ``out`` (stdout). A port of
    ``0`` or ``*`` binds a free port and the line names the real one. ``threads``: search
    threads (default one per core). Returns 0 after a clean stop, 2 when the address
    cannot be bound; a missing map folder raises MapLoadError.

    Security (``pathserver.security``): ``curve_keys`` (the server's ``NAME.key_secret``
    or its folder) with ``allowed_clients_dir`` (client ``NAME.key`` files) turns on
    CURVE. A non-loopback ``bind`` without CURVE returns 2 with one line on stderr before
    anything loads, unless ``insecure``, which prints a warning line instead.

    Worker mode (``pathserver.broker``): with ``connect`` (the broker's back endpoint)
    the server connects instead of binding and prints ``pathserver worker HOST:PID
    ready, connected to ENDPOINT (N maps)``.

    Shared state (docs/scaling.md): with ``state`` (``redis://HOST:PORT/DB``) uploads
    and edits live in that Redis, and every server given it applies them in one order;
    the server takes requests once it has applied what Redis holds.

    ``max_upload_cells``: the bound on the total cells of maps uploaded with ``put_map``
    (default ``pathserver.maps.registry.DEFAULT_MAX_UPLOAD_CELLS``).
    """
    out = sys.stdout if out is None else out
    try:
        curve = security.curve_from_arguments(curve_keys, allowed_clients_dir)
        warnings = security.check_bind(bind, curve=curve is not None, insecure=insecure)
    except security.SecurityError as exc:
        return _refuse(exc)
    for warning in warnings:
        print(warning, file=sys.stderr, flush=True)
    registry = MapRegistry(maps_dir, **({} if max_upload_cells is None else {"max_upload_cells": max_upload_cells}))
    if connect is not None and curve is not None:
        # A worker binds nothing: its clients' CURVE belongs on the broker's front.
        return _refuse("--curve-keys/--allow secure a bound server; a worker (--connect) binds nothing: "
                       "give them to `pathserver broker` for its front (docs/scaling.md)")
    # host:pid: unique among running workers, and says where to look.
    identity = None if connect is None else f"{socket.gethostname()}:{os.getpid()}"
    shared = None
    if state is not None:
        from pathserver.editlog import RedisState, check_url  # Redis's client: imported for --state only

        try:
            shared = RedisState(registry, check_url(state), identity=identity, build_upload=handlers.build_upload)
        except ValueError as exc:
            return _refuse(exc)
    server = Server(registry if shared is None else shared, bind, workers=threads, queue_limit=queue_limit,
                    curve=curve, connect=connect, identity=identity, state=shared)
    # Installed first, so a signal while maps load or kernels compile stops us too.
    previous = _stop_on_signals(server)
    try:
        return _start_and_serve(server, registry, shared, bind, watch, out)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        registry.stop()
        server.close()
        if shared is not None:
            shared.close()


def _start_and_serve(server: Server, registry: MapRegistry, shared, bind: str, watch: bool, out) -> int:
    """Steps 4 to 6 of the module docstring: 0 after a clean stop (also one while starting)."""
    startup = StartupLog()
    compiling = announce_kernels(startup)
    startup.say(f"loading maps from {registry.folder}")
    registry.load_all()
    startup.say(f"{len(registry.names())} maps loaded ({startup.elapsed():.2f} s since start)")
    warm_kernels(startup, compiling=compiling)
    if server.stopping:
        return 0
    if shared is not None:
        # Take no request before the uploads and edits made so far are applied here.
        shared.start()
        while not shared.caught_up.wait(0.1):
            if server.stopping:
                return 0
    try:
        endpoint = server.bind()
    except zmq.ZMQError as exc:
        return _refuse(f"cannot bind {bind}: {exc}")
    if watch:
        registry.start()
    if server.identity is None:
        print(f"pathserver ready on {endpoint} ({len(registry.names())} maps)", file=out, flush=True)
    else:
        print(f"pathserver worker {server.identity} ready, connected to {endpoint} "
              f"({len(registry.names())} maps)", file=out, flush=True)
    server.run()
    return 0


def _stop_on_signals(server: Server) -> dict:
    """SIGINT and SIGTERM call ``server.stop()``; returns the handlers they replace.
    Signals reach only the main thread: elsewhere (a test's thread) nothing is installed."""
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, lambda *_: server.stop())
    return previous


def _refuse(reason) -> int:
    """The one stderr line that ends a start, and its exit status."""
    print(f"pathserver: {reason}", file=sys.stderr, flush=True)
    return 2
