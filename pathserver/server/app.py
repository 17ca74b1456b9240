"""``pathserver serve`` put together: the command's arguments become a running server.

``pathserver.server.loop`` serves whatever registry and socket settings it is given; this
module decides what those are, in this order:

1. security: CURVE from ``--curve-keys``/``--allow`` and the bind policy, before anything
   loads (``pathserver.security``);
2. the map registry, and with ``--state`` the shared state on Redis around it
   (``pathserver.editlog``);
3. signals: SIGINT/SIGTERM stop the server from here on, at any stage;
4. bind, and say the endpoint in the first line: a taken port is refused at once;
5. a start-up thread loads the maps, applies what the shared state holds (``--state``),
   then warms the kernels op by op (``pathserver.server.startup``): requests are taken
   from then on, each waiting only for the kernels it runs; the ready line on stdout
   once all are warm. A worker (``--connect``, which binds nothing) connects only once
   warm;
6. serve until stopped, release everything.

Steps 1, 2 and 4 may refuse: one line on stderr, exit status 2.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

import zmq

from pathserver import security
from pathserver.maps.registry import MapRegistry
from pathserver.server import map_ops
from pathserver.server.loop import DEFAULT_QUEUE_LIMIT, DEFAULT_SPIN_US, Server
from pathserver.server.startup import (
    StartupLog, announce_kernels, end_second_processes, steps_for_later, warm_kernels,
)
from pathserver.transport import stopped_by_signals

#: How long a thread of the server may hold the GIL while another waits for it (Python's
#: default is 5 ms): the loop, the workers and the shared state's reader and writer each
#: wait for the others less (bench/scale.py prints the shared state's lag).
SWITCH_INTERVAL_S = 0.001


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
    exit_at_once: bool = False,
    spin_us: int = DEFAULT_SPIN_US,
) -> int:
    """Serve every map in ``maps_dir`` on ``bind`` until SIGINT/SIGTERM; returns an exit status.

    Binds first (its first stderr line names the endpoint), loads the maps, then takes
    requests while the kernels compile, and prints exactly one line, ``pathserver ready
    on tcp://HOST:PORT (N maps)``, to ``out`` (stdout) once they are all compiled. A port
    of ``0`` or ``*`` binds a free port and the lines name the real one. ``threads``: search
    threads (default one per core). Returns 0 after a clean stop, 2 when the address
    cannot be bound; a missing map folder raises MapLoadError.

    Security (``pathserver.security``): ``curve_keys`` (the server's ``NAME.key_secret``
    or its folder) with ``allowed_clients_dir`` (client ``NAME.key`` files) turns on
    CURVE. A non-loopback ``bind`` without CURVE returns 2 with one line on stderr before
    anything loads, unless ``insecure``, which prints a warning line instead.

    Worker mode (``pathserver.broker``): with ``connect`` (the broker's back endpoint) the
    server connects instead of binding and prints ``pathserver worker HOST:PID ready,
    connected to ENDPOINT (N maps)``. Shared state (docs/scaling.md): with ``state``
    (``redis://HOST:PORT/DB``) uploads and edits live in that Redis, and every server given
    it applies them in one order; the server takes requests once it has applied what Redis
    holds. ``max_upload_cells``: the bound on the total cells of maps uploaded with
    ``put_map`` (default ``pathserver.maps.registry.DEFAULT_MAX_UPLOAD_CELLS``).
    ``exit_at_once`` (the CLI's): a stop while kernels still compile ends the process there
    and then (``os._exit``) instead of waiting for the compile in hand. ``spin_us``: the
    loop's look for requests after a reply (docs/design.md, "The server loop").
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
        from pathserver.editlog import RedisState  # Redis's client: imported for --state only
        from pathserver.editlog.connection import check_url

        try:
            shared = RedisState(registry, check_url(state), identity=identity, build_upload=map_ops.build_upload)
        except ValueError as exc:
            return _refuse(exc)
    server = Server(registry if shared is None else shared, bind, workers=threads, queue_limit=queue_limit,
                    curve=curve, connect=connect, identity=identity, state=shared, spin_us=spin_us)
    if not registry.folder.is_dir():
        registry.load_all()  # raises the folder's MapLoadError before anything binds
    starter = None
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        # Installed first, so a signal at any stage stops us too.
        with stopped_by_signals(server.stop):
            starter = _Starter(server, registry, shared, watch, out)
            return starter.serve(bind)
    finally:
        sys.setswitchinterval(switch_interval)
        registry.stop()
        if starter is not None and starter.is_alive() and exit_at_once:
            # A kernel compile cannot be interrupted, and tearing LLVM down under one
            # aborts the interpreter: leave without finalizing.
            end_second_processes()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        if starter is not None and starter.is_alive():
            starter.join()  # it stops at its next step
        server.close()
        if shared is not None:
            shared.close()


class _Starter(threading.Thread):
    """Steps 4 to 6 of the module docstring: the main thread binds and runs the loop, this
    thread loads the maps and warms the kernels meanwhile, checking for a stop between
    steps."""

    def __init__(self, server: Server, registry: MapRegistry, shared, watch: bool, out):
        super().__init__(name="pathserver-start", daemon=True)
        self.server, self.registry, self.shared, self.watch, self.out = server, registry, shared, watch, out
        self.worker = server.connect_address is not None
        self.log = StartupLog()
        self.failure: Exception | None = None
        self.prepared = threading.Event()

    def serve(self, bind: str) -> int:
        server = self.server
        if not self.worker:
            try:
                endpoint = server.bind()
            except zmq.ZMQError as exc:
                return _refuse(f"cannot bind {bind}: {exc}")
            self.log.say(f"listening on {endpoint} (process {os.getpid()}); loading maps from {self.registry.folder}")
            server.hold(self.prepared)
        self.start()
        if self.worker:
            # A worker binds nothing a client waits on: it connects once warm and caught up.
            while not self.prepared.wait(0.1):
                if server.stopping or not self.is_alive():
                    break
            if server.stopping or self.failure is not None or not self.prepared.is_set():
                return self._ended()
            try:
                endpoint = server.bind()
            except zmq.ZMQError as exc:
                return _refuse(f"cannot connect {bind}: {exc}")
            print(f"pathserver worker {server.identity} ready, connected to {endpoint} "
                  f"({_maps(self.registry)})", file=self.out, flush=True)
        server.run()
        return self._ended()

    def _ended(self) -> int:
        if self.failure is not None and not self.prepared.is_set():
            raise self.failure
        return 0

    def run(self) -> None:
        server, registry, log = self.server, self.registry, self.log
        try:
            if self.worker:
                log.say(f"loading maps from {registry.folder}")
            compiling = announce_kernels(log)
            registry.load_all()
            log.say(f"{_maps(registry)} loaded ({log.elapsed():.2f} s since start)")
            if self.shared is not None:
                # Take no request before the uploads and edits made so far are applied here.
                self.shared.start()
                while not self.shared.caught_up.wait(0.1):
                    if server.stopping:
                        return
            if not self.worker:
                self.prepared.set()  # requests are taken from here on
            if self.watch:
                registry.start()
            # Loaded from the cache, the kernels of map kinds none is of come after the ready line.
            later = frozenset() if compiling else steps_for_later(map(registry.get, registry.names()))
            if not warm_kernels(log, compiling=compiling, stopping=lambda: server.stopping, skip=later):
                return
            if self.worker:
                self.prepared.set()
            else:
                server.warmed()
                print(f"pathserver ready on {server.endpoint} ({_maps(registry)})", file=self.out, flush=True)
            if later:
                warm_kernels(stopping=lambda: server.stopping, only=later)
        except Exception as exc:  # noqa: BLE001 - said, and re-raised by serve() when no request was taken
            self.failure = exc
            if self.prepared.is_set():
                log.say(f"warming the kernels failed: {exc!r}; they compile on first use")
            else:
                server.stop()


def _maps(registry: MapRegistry) -> str:
    count = len(registry.names())
    return f"{count} map{'' if count == 1 else 's'}"


def _refuse(reason) -> int:
    """The one stderr line that ends a start, and its exit status."""
    print(f"pathserver: {reason}", file=sys.stderr, flush=True)
    return 2
