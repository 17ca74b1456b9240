"""``pathserver loadtest``: drive a server like a game full of units, and say what it did.

::

    maps? ──► server          one ``maps`` request first: names and sizes to aim at
    drivers (threads) ─┬─ DEALER per simulated client ──► server ──► replies matched by id
                       └─ (driver 0) ``update``s at --updates-per-s: doors closing, opening
    main thread: progress bar; then the summary from every driver's records

Each driver thread owns its clients' sockets and serves them from one ``zmq.Poller``.
Two ways to load the server:

- closed loop (``--inflight M``): every client keeps M requests outstanding and sends the
  next one the moment a reply arrives. Latency runs from the send.
- open loop (``--rate R``): requests fall due on a fixed schedule, R per second across all
  clients, whether or not the server keeps up; latency runs from when each request was
  *due*, so a stalled server is charged for every request it held up (no coordinated
  omission, as in wrk2), not just the one it was working on.

Accounting: every request id is sent once; a reply whose id was never sent, was already
answered, or came back on another client's socket is ``unmatched``; a request with no reply
once sending has stopped and the grace period has passed is ``lost``. A healthy server
scores 0 and 0, and the command exits 1 otherwise.

Trips: random cells of the served maps (the server snaps a start or goal on a wall to the
nearest cell the unit can stand on), a share of them short (within ``--short-radius``
cells), the rest anywhere; or the problems of a Moving AI ``.scen`` file.

``--updates-per-s`` edits the served maps: it closes a random 2x2 "door" (``solid: true``)
and reopens it (``solid: false``) on the next update, reopening every door it closed
before it stops. Reopening clears whatever walls were there before, so point it at a test
server or use ``--spawn`` (edits live in the server's memory only; files are untouched).

``--rewrites-per-s`` (with ``--spawn``) rewrites the served map files while the load runs,
on a temporary copy of the ``--maps`` folder: alternately an atomic save (a temp file
renamed over the map) and an in-place write, with the same content, so every rewrite makes
the server reload and swap in a new generation under load. The summary counts the rewrites
and the server's ``reloads_ok`` / ``reloads_failed``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import msgpack
import numpy as np
import zmq

from pathserver.errors import PathserverError
from pathserver.options import unit_size_from_text

DEFAULT_ENDPOINT = "tcp://127.0.0.1:5555"
DEFAULT_MAPS = Path(__file__).resolve().parent.parent / "maps"
READY_LINE = re.compile(r"pathserver ready on (\S+) \((\d+) maps?\)")
#: Latency percentiles reported, as (JSON key, percentile).
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9))
#: Request states, one byte per request id.
_UNSENT, _PENDING, _ANSWERED = 0, 1, 2
_OP_PATH, _OP_UPDATE = 0, 1
_OP_NAMES = ("path", "update")
#: Ids of driver ``i`` start at ``i << _ID_SHIFT``: unique across drivers, and an id from
#: the reply maps straight back to the driver's request index.
_ID_SHIFT = 40
_POLL_CAP_S = 0.05


class LoadTestError(PathserverError):
    """The load test could not start or run: no server, no maps, a bad option."""

    code = "loadtest"


@dataclass
class LoadConfig:
    """What to run. Exactly one of ``inflight`` / ``rate``, and at least one of
    ``duration`` / ``requests`` (both: whichever ends first)."""

    endpoint: str = DEFAULT_ENDPOINT
    clients: int = 4
    inflight: int | None = None
    rate: float | None = None
    duration: float | None = None
    requests: int | None = None
    unit_sizes: tuple = (1,)
    map_names: tuple | None = None
    scen: Path | None = None
    long_share: float = 0.3
    short_radius: int = 24
    updates_per_s: float = 0.0
    rewrites_per_s: float = 0.0
    #: The folder the server serves; needed by rewrites (``--spawn`` sets it).
    maps_dir: Path | None = None
    threads: int = 1
    grace: float = 2.0
    connect_timeout: float = 10.0
    seed: int | None = None
    progress: bool = False

    def check(self) -> None:
        if (self.inflight is None) == (self.rate is None):
            raise LoadTestError("give exactly one of --inflight (closed loop) and --rate (open loop)")
        if self.inflight is not None and self.inflight < 1:
            raise LoadTestError("--inflight must be at least 1")
        if self.rate is not None and not (self.rate > 0 and math.isfinite(self.rate)):
            raise LoadTestError("--rate must be a positive number of requests per second")
        if self.duration is None and self.requests is None:
            raise LoadTestError("give --duration or --requests")
        if self.duration is not None and not self.duration > 0:
            raise LoadTestError("--duration must be positive")
        if self.requests is not None and self.requests < 1:
            raise LoadTestError("--requests must be at least 1")
        if self.clients < 1 or self.threads < 1:
            raise LoadTestError("--clients and --threads must be at least 1")
        if not self.unit_sizes:
            raise LoadTestError("--unit-sizes needs at least one size")
        if not 0.0 <= self.long_share <= 1.0:
            raise LoadTestError("--long-share must be between 0 and 1")
        if self.updates_per_s < 0 or self.grace < 0 or self.rewrites_per_s < 0:
            raise LoadTestError("--updates-per-s, --rewrites-per-s and --grace must not be negative")
        if self.rewrites_per_s > 0 and self.maps_dir is None:
            raise LoadTestError("--rewrites-per-s rewrites the served files: use it with --spawn")


# -- what to ask ----------------------------------------------------------------------------


def fetch_maps(context: zmq.Context, endpoint: str, timeout: float) -> list[dict]:
    """The server's ``maps`` reply entries; LoadTestError when it does not answer in time."""
    sock = context.socket(zmq.DEALER)
    sock.linger = 0
    try:
        sock.connect(endpoint)
        sock.send(msgpack.packb({"id": 0, "op": "maps"}))
        if not sock.poll(int(timeout * 1000), zmq.POLLIN):
            raise LoadTestError(f"no reply from {endpoint} within {timeout:g} s: is a pathserver running there?")
        reply = msgpack.unpackb(sock.recv_multipart()[-1], raw=False)
    finally:
        sock.close(linger=0)
    if not isinstance(reply, dict) or not reply.get("ok"):
        raise LoadTestError(f"the server refused the maps request: {reply!r}")
    return list(reply.get("maps") or [])


def read_scen(path: Path) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """Problems of a Moving AI ``.scen`` file as ``(map name, start, goal)``; the map name
    is the stem of the file the problem names (``maps/dao/den520d.map`` -> ``den520d``)."""
    from pathserver.maps.scen import load_scen

    try:
        scenarios = load_scen(Path(path))
    except PathserverError as exc:
        raise LoadTestError(str(exc)) from None
    return [(Path(s.map_name).stem, s.start, s.goal) for s in scenarios]


class TripSource:
    """Path request bodies (without ``id``): a map, a unit size, a start and a goal."""

    def __init__(self, maps: list[dict], config: LoadConfig, rng: random.Random):
        self.rng = rng
        self.units = [list(u) if isinstance(u, tuple) else u for u in config.unit_sizes]
        self.long_share = config.long_share
        self.radius = max(1, config.short_radius)
        self.maps = [(m["name"], int(m["width"]), int(m["height"])) for m in maps]
        self.scen = None
        if config.scen is not None:
            served = {name for name, _, _ in self.maps}
            problems = read_scen(config.scen)
            trips = [t for t in problems if t[0] in served]
            if not trips:
                wanted = sorted({t[0] for t in problems})
                raise LoadTestError(f"{config.scen} is for {', '.join(wanted)}; the server serves "
                                    f"{', '.join(sorted(served)) or 'no maps'}")
            self.scen = trips

    def next(self) -> dict:
        rng = self.rng
        unit = rng.choice(self.units)
        if self.scen is not None:
            name, start, goal = rng.choice(self.scen)
            return {"op": "path", "map": name, "start": list(start), "goal": list(goal), "unit_size": unit}
        name, width, height = rng.choice(self.maps)
        sx, sy = rng.randrange(width), rng.randrange(height)
        if rng.random() < self.long_share:
            gx, gy = rng.randrange(width), rng.randrange(height)
        else:
            r = self.radius
            gx = min(width - 1, max(0, sx + rng.randint(-r, r)))
            gy = min(height - 1, max(0, sy + rng.randint(-r, r)))
        return {"op": "path", "map": name, "start": [sx, sy], "goal": [gx, gy], "unit_size": unit}


class Doors:
    """Update bodies that close a random 2x2 door, then reopen it on the next call."""

    def __init__(self, maps: list[dict], rng: random.Random):
        self.maps = [(m["name"], int(m["width"]), int(m["height"])) for m in maps]
        self.rng = rng
        self.closed: list[tuple[str, list]] = []

    def next(self) -> dict:
        if self.closed:
            name, rect = self.closed.pop()
            return {"op": "update", "map": name, "rects": [rect], "solid": False}
        name, width, height = self.rng.choice(self.maps)
        rect = [self.rng.randrange(width), self.rng.randrange(height), 2, 2]
        self.closed.append((name, rect))
        return {"op": "update", "map": name, "rects": [rect], "solid": True}


# -- the drivers ------------------------------------------------------------------------------


@dataclass
class Records:
    """One driver's raw results. Times in seconds since the run's start."""

    latency_ms: array = field(default_factory=lambda: array("d"))
    done_at: array = field(default_factory=lambda: array("d"))
    op: array = field(default_factory=lambda: array("b"))
    statuses: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    sent: int = 0
    sent_by_op: list = field(default_factory=lambda: [0, 0])
    answered: int = 0
    unmatched: int = 0
    unmatched_duplicate: int = 0
    unreadable: int = 0
    lost: int = 0
    send_failures: int = 0
    max_lag_ms: float = 0.0


class Driver(threading.Thread):
    """Runs ``n_clients`` DEALER sockets from one poller until its share is sent and
    answered (or the grace period ends)."""

    def __init__(self, index: int, context: zmq.Context, config: LoadConfig, trips: TripSource,
                 doors: Doors | None, n_clients: int, share_requests: int | None, rate: float | None,
                 t0: float, stop: threading.Event):
        super().__init__(name=f"loadtest-driver-{index}", daemon=True)
        self.index = index
        self.context = context
        self.config = config
        self.trips = trips
        self.doors = doors
        self.n_clients = n_clients
        self.share = share_requests
        self.rate = rate
        self.t0 = t0
        self.stop_sending = stop
        self.records = Records()
        self.base_id = index << _ID_SHIFT
        self.due = array("d")
        self.client_of = array("i")
        self.op_of = array("b")
        self.state = bytearray()
        self.pending = 0
        self.error: BaseException | None = None

    # Progress, read by the main thread without a lock (plain ints).
    @property
    def answered(self) -> int:
        return self.records.answered

    def run(self) -> None:
        sockets = []
        try:
            for _ in range(self.n_clients):
                sock = self.context.socket(zmq.DEALER)
                sock.linger = 0
                sock.sndhwm = 0
                sock.rcvhwm = 0
                sock.connect(self.config.endpoint)
                sockets.append(sock)
            self._loop(sockets)
        except BaseException as exc:  # reported by the main thread
            self.error = exc
        finally:
            for sock in sockets:
                sock.close(linger=0)

    def _may_send(self, now: float) -> bool:
        if self.stop_sending.is_set():
            return False
        if self.share is not None and self.records.sent_by_op[_OP_PATH] >= self.share:
            return False
        return self.config.duration is None or now - self.t0 < self.config.duration

    def _send(self, sock, client: int, body: dict, due: float, op: int) -> None:
        k = len(self.state)
        body["id"] = self.base_id + k
        self.due.append(due)
        self.client_of.append(client)
        self.op_of.append(op)
        self.state.append(_PENDING)
        try:
            sock.send(msgpack.packb(body), zmq.NOBLOCK)
        except zmq.Again:
            # No high-water mark is set, so this only happens when the connection is
            # gone; the request is then lost and counted as such.
            self.records.send_failures += 1
        self.records.sent += 1
        self.records.sent_by_op[op] += 1
        self.pending += 1

    def _loop(self, sockets: list) -> None:
        config, records = self.config, self.records
        poller = zmq.Poller()
        for sock in sockets:
            poller.register(sock, zmq.POLLIN)
        index_of = {sock: i for i, sock in enumerate(sockets)}
        perf = time.perf_counter
        # Every driver starts on the same instant, once its sockets are connecting.
        time.sleep(max(0.0, self.t0 - perf()))
        closed_loop = self.rate is None
        if closed_loop:
            now = perf()
            for client, sock in enumerate(sockets):
                for _ in range(config.inflight):
                    if not self._may_send(now):
                        break
                    self._send(sock, client, self.trips.next(), now, _OP_PATH)
        interval = None if closed_loop else 1.0 / self.rate
        next_due = self.t0
        next_client = 0
        update_interval = 1.0 / config.updates_per_s if (self.doors and config.updates_per_s > 0) else None
        next_update = self.t0 + update_interval if update_interval else math.inf
        sending_stopped_at = None
        while True:
            now = perf()
            sending = self._may_send(now)
            if sending:
                while interval is not None and next_due <= now and self._may_send(now):
                    self._send(sockets[next_client], next_client, self.trips.next(), next_due, _OP_PATH)
                    records.max_lag_ms = max(records.max_lag_ms, (now - next_due) * 1000.0)
                    next_client = (next_client + 1) % len(sockets)
                    next_due += interval
                while next_update <= now:
                    self._send(sockets[0], 0, self.doors.next(), next_update, _OP_UPDATE)
                    next_update += update_interval
            elif sending_stopped_at is None:
                sending_stopped_at = now
                # Reopen every door this run closed: leave the maps as it found them.
                while self.doors is not None and self.doors.closed:
                    self._send(sockets[0], 0, self.doors.next(), now, _OP_UPDATE)
            if sending_stopped_at is not None and (self.pending == 0 or now - sending_stopped_at > config.grace):
                break
            wake = min(next_due if interval is not None and sending else math.inf,
                       next_update if sending else math.inf,
                       now + _POLL_CAP_S)
            if sending_stopped_at is not None:
                wake = min(wake, sending_stopped_at + config.grace)
            timeout_ms = max(0.0, wake - now) * 1000.0
            for sock, _ in poller.poll(timeout_ms):
                client = index_of[sock]
                while True:
                    try:
                        frames = sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    done = perf()
                    answered = self._on_reply(frames[-1], client, done)
                    # Closed loop: a path answered frees its slot; updates have their own schedule.
                    if answered == _OP_PATH and closed_loop and self._may_send(done):
                        self._send(sock, client, self.trips.next(), done, _OP_PATH)
        records.lost = self.pending

    def _on_reply(self, body: bytes, client: int, done: float) -> int | None:
        """Record one reply; the op it answered, or None when it matched no request of
        this client's that was waiting."""
        records = self.records
        try:
            reply = msgpack.unpackb(body, raw=False)
            rid = reply["id"]
        except Exception:  # noqa: BLE001 - any unreadable reply is counted, never fatal
            records.unreadable += 1
            records.unmatched += 1
            return None
        k = rid - self.base_id if isinstance(rid, int) and not isinstance(rid, bool) else -1
        if not 0 <= k < len(self.state) or self.client_of[k] != client:
            records.unmatched += 1
            return None
        if self.state[k] != _PENDING:
            records.unmatched += 1
            records.unmatched_duplicate += 1
            return None
        self.state[k] = _ANSWERED
        self.pending -= 1
        records.answered += 1
        op = self.op_of[k]
        records.latency_ms.append((done - self.due[k]) * 1000.0)
        records.done_at.append(done - self.t0)
        records.op.append(op)
        if reply.get("ok"):
            status = reply.get("status")
            if status is not None:
                records.statuses[status] = records.statuses.get(status, 0) + 1
        else:
            error = reply.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            code = code if isinstance(code, str) else "?"
            records.errors[code] = records.errors.get(code, 0) + 1
        return op


# -- running and summing up ----------------------------------------------------------------------


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def run_load(config: LoadConfig, maps: list[dict] | None = None, context: zmq.Context | None = None) -> dict:
    """Run the load test ``config`` describes; returns the summary (see :func:`summarize`).

    maps: the served maps to aim at (``maps`` reply entries); None asks the server.
    Raises LoadTestError when the server does not answer or serves nothing to aim at.
    """
    config.check()
    own_context = context is None
    context = context or zmq.Context()
    try:
        if maps is None:
            maps = fetch_maps(context, config.endpoint, config.connect_timeout)
        if config.map_names:
            served = {m["name"]: m for m in maps}
            missing = [n for n in config.map_names if n not in served]
            if missing:
                raise LoadTestError(f"the server does not serve {', '.join(missing)}; it serves "
                                    f"{', '.join(sorted(served)) or 'no maps'}")
            maps = [served[n] for n in config.map_names]
        if not maps:
            raise LoadTestError(f"{config.endpoint} serves no maps")
        rng = random.Random(config.seed)
        threads = min(config.threads, config.clients)
        clients = _split(config.clients, threads)
        shares = _split(config.requests, threads) if config.requests is not None else [None] * threads
        stop = threading.Event()
        t0 = time.perf_counter() + 0.05
        drivers = [
            Driver(i, context, config, TripSource(maps, config, random.Random(rng.random())),
                   Doors(maps, random.Random(rng.random())) if i == 0 and config.updates_per_s > 0 else None,
                   clients[i], shares[i], config.rate * clients[i] / config.clients if config.rate else None,
                   t0, stop)
            for i in range(threads)
        ]
        rewriter = Rewriter(config.maps_dir, maps, config.rewrites_per_s, stop) if config.rewrites_per_s > 0 else None
        for driver in drivers:
            driver.start()
        if rewriter is not None:
            rewriter.start()
        try:
            _watch(drivers, config, t0)
        except KeyboardInterrupt:
            stop.set()
            for driver in drivers:
                driver.join()
        finally:
            if rewriter is not None:
                rewriter.finish()
        for driver in drivers:
            if driver.error is not None:
                raise driver.error
        summary = summarize([d.records for d in drivers], config)
        if rewriter is not None:
            time.sleep(0.5)  # let the last rewrite's reload land before counting reloads
        summary["server"] = _server_stats(context, config.endpoint, 5000 if rewriter is not None else 1000)
        if rewriter is not None:
            server = summary["server"] or {}
            summary["rewrites"] = {"written": rewriter.written, "reloads_ok": server.get("reloads_ok"),
                                   "reloads_failed": server.get("reloads_failed")}
        return summary
    finally:
        if own_context:
            context.destroy(linger=0)


def _watch(drivers: list, config: LoadConfig, t0: float) -> None:
    """Wait for the drivers, with a progress bar on stderr when asked."""
    bar = None
    tqdm = None
    if config.progress:
        try:
            from tqdm import tqdm
        except ImportError:
            print("loadtest: no progress bar without tqdm: pip install 'pathserver[load]'", file=sys.stderr)
    if tqdm is not None:
        if config.requests is not None:
            bar = tqdm(total=config.requests, unit="req", file=sys.stderr, dynamic_ncols=True, leave=False)
        else:
            bar = tqdm(total=round(config.duration, 1), unit="s", file=sys.stderr, dynamic_ncols=True, leave=False,
                       bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s{postfix}")
    try:
        last_answered, last_time = 0, time.perf_counter()
        while any(d.is_alive() for d in drivers):
            for driver in drivers:
                driver.join(0.25 / len(drivers))
            if bar is None:
                continue
            now = time.perf_counter()
            answered = sum(d.answered for d in drivers)
            rate = (answered - last_answered) / max(1e-9, now - last_time)
            last_answered, last_time = answered, now
            pending = sum(d.pending for d in drivers)
            bar.set_postfix_str(f"{rate:,.0f} replies/s, {pending} in flight", refresh=False)
            if config.requests is not None:
                bar.n = min(config.requests, sum(d.records.sent_by_op[_OP_PATH] for d in drivers))
            else:
                bar.n = round(min(config.duration, max(0.0, now - t0)), 1)
            bar.refresh()
    finally:
        if bar is not None:
            bar.close()


def _server_stats(context: zmq.Context, endpoint: str, timeout_ms: int = 1000) -> dict | None:
    """The server's own ``stats`` after the run (dropped replies, queue), if it answers."""
    sock = context.socket(zmq.DEALER)
    sock.linger = 0
    try:
        sock.connect(endpoint)
        sock.send(msgpack.packb({"id": 0, "op": "stats"}))
        if not sock.poll(timeout_ms, zmq.POLLIN):
            return None
        reply = msgpack.unpackb(sock.recv_multipart()[-1], raw=False)
    except Exception:  # noqa: BLE001 - a fake or foreign server: no stats, not an error
        return None
    finally:
        sock.close(linger=0)
    if not isinstance(reply, dict) or not reply.get("ok"):
        return None
    keys = ("requests", "replies", "dropped_replies", "errors", "queue_depth", "workers", "latency_ms",
            "reloads_ok", "reloads_failed")
    return {k: reply[k] for k in keys if k in reply}


def _percentiles(values: np.ndarray) -> dict:
    if values.size == 0:
        return {key: None for key, _ in PERCENTILES} | {"max": None, "mean": None}
    found = np.percentile(values, [q for _, q in PERCENTILES])
    out = {key: round(float(v), 3) for (key, _), v in zip(PERCENTILES, found)}
    out["max"] = round(float(values.max()), 3)
    out["mean"] = round(float(values.mean()), 3)
    return out


def summarize(records: list[Records], config: LoadConfig) -> dict:
    """One JSON-ready dict: ``requests``, ``replies``, ``lost``, ``unmatched``,
    ``throughput_rps``, ``latency_ms`` (path requests: p50/p90/p99/p999/max/mean, from when
    each was due), ``errors`` by code, ``statuses`` of path replies, and more."""
    latency = np.concatenate([np.frombuffer(r.latency_ms, dtype=np.float64) for r in records]) if records else np.empty(0)
    done_at = np.concatenate([np.frombuffer(r.done_at, dtype=np.float64) for r in records]) if records else np.empty(0)
    ops = np.concatenate([np.frombuffer(r.op, dtype=np.int8) for r in records]) if records else np.empty(0, np.int8)
    statuses: dict = {}
    errors: dict = {}
    for r in records:
        for name, n in r.statuses.items():
            statuses[name] = statuses.get(name, 0) + n
        for code, n in r.errors.items():
            errors[code] = errors.get(code, 0) + n
    elapsed = float(done_at.max()) if done_at.size else 0.0
    replies = sum(r.answered for r in records)
    paths = ops == _OP_PATH
    timeline = []
    if done_at.size:
        seconds = np.floor(done_at).astype(np.int64)
        for second in range(int(seconds.max()) + 1):
            in_second = (seconds == second) & paths
            values = latency[in_second]
            timeline.append({
                "t": second,
                "replies": int(np.count_nonzero(seconds == second)),
                "p50_ms": round(float(np.percentile(values, 50)), 3) if values.size else None,
                "p99_ms": round(float(np.percentile(values, 99)), 3) if values.size else None,
            })
    summary = {
        "endpoint": config.endpoint,
        "mode": "closed_loop" if config.rate is None else "open_loop",
        "clients": config.clients,
        "inflight": config.inflight,
        "target_rps": config.rate,
        "requests": sum(r.sent for r in records),
        "replies": replies,
        "lost": sum(r.lost for r in records),
        "unmatched": sum(r.unmatched for r in records),
        "unmatched_duplicates": sum(r.unmatched_duplicate for r in records),
        "unreadable_replies": sum(r.unreadable for r in records),
        "send_failures": sum(r.send_failures for r in records),
        "duration_s": round(elapsed, 3),
        "throughput_rps": round(replies / elapsed, 1) if elapsed > 0 else 0.0,
        "latency_ms": _percentiles(latency[paths]),
        "statuses": dict(sorted(statuses.items())),
        "errors": dict(sorted(errors.items())),
        "ops": {name: sum(r.sent_by_op[i] for r in records) for i, name in enumerate(_OP_NAMES)},
        "max_send_lag_ms": round(max((r.max_lag_ms for r in records), default=0.0), 3),
        "timeline": timeline,
    }
    if np.any(~paths):
        summary["update_latency_ms"] = _percentiles(latency[~paths])
    # Kept out of the JSON (bulky), for --plot.
    summary["_latencies"] = latency[paths]
    return summary


class Rewriter(threading.Thread):
    """Rewrites the served map files at ``per_s`` a second until ``finish()``: atomic
    saves and in-place writes in turn, each with the file's own bytes."""

    def __init__(self, maps_dir: Path, maps: list[dict], per_s: float, stop: threading.Event):
        super().__init__(name="loadtest-rewriter", daemon=True)
        files = [Path(maps_dir) / m["file"] for m in maps if m.get("file")]
        self.contents = [(path, path.read_bytes()) for path in files if path.is_file()]
        if not self.contents:
            raise LoadTestError(f"no served map file to rewrite in {maps_dir}")
        self.interval = 1.0 / per_s
        self.stop_event = stop
        self.done = threading.Event()
        self.written = 0

    def run(self) -> None:
        next_at = time.monotonic()
        while not (self.done.is_set() or self.stop_event.is_set()):
            path, content = self.contents[self.written % len(self.contents)]
            if self.written % 2 == 0:
                temp = path.with_name(f".{path.name}.loadtest.tmp")
                temp.write_bytes(content)
                os.replace(temp, path)
            else:
                with open(path, "r+b") as handle:
                    handle.write(content)
                    handle.truncate()
            self.written += 1
            next_at += self.interval
            self.done.wait(max(0.0, next_at - time.monotonic()))

    def finish(self) -> None:
        self.done.set()
        if self.is_alive():
            self.join(5)


# -- --spawn ---------------------------------------------------------------------------------------


class SpawnedServer:
    """``python -m pathserver serve --maps DIR --bind tcp://127.0.0.1:0`` in a subprocess,
    up once its ready line names the endpoint; stopped with SIGINT (then killed)."""

    def __init__(self, maps_dir: Path, timeout: float = 120.0, extra_args: tuple = ()):
        self.maps_dir = Path(maps_dir)
        self.timeout = timeout
        self.extra_args = tuple(extra_args)
        self.process: subprocess.Popen | None = None
        self.endpoint: str | None = None
        self.n_maps: int | None = None
        self._stderr = None

    def __enter__(self) -> "SpawnedServer":
        if not self.maps_dir.is_dir():
            raise LoadTestError(f"--maps {self.maps_dir} is not a folder")
        self._stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pathserver", "serve", "--maps", str(self.maps_dir),
             "--bind", "tcp://127.0.0.1:0", *self.extra_args],
            stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL, text=True,
        )
        lines: queue.Queue = queue.Queue()

        def read_stdout():
            for line in self.process.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read_stdout, name="loadtest-spawn-stdout", daemon=True).start()
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self._fail(f"the server printed no ready line within {self.timeout:g} s")
            if line is None:
                self._fail(f"the server exited with status {self.process.wait()} before it was ready")
            match = READY_LINE.search(line)
            if match:
                self.endpoint, self.n_maps = match.group(1), int(match.group(2))
                return self

    def _fail(self, message: str):
        tail = self._stderr_tail()
        self.__exit__(None, None, None)
        raise LoadTestError(message + (f"; its stderr ends:\n{tail}" if tail else ""))

    def _stderr_tail(self, lines: int = 15) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return "\n".join(self._stderr.read().decode(errors="replace").splitlines()[-lines:])

    def __exit__(self, *exc) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            try:
                process.send_signal(signal.SIGINT)
            except (ValueError, OSError):  # no SIGINT for subprocesses on Windows
                process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


# -- output ----------------------------------------------------------------------------------------


def format_summary(summary: dict) -> str:
    """The summary as a small table for people."""
    lat = summary["latency_ms"]

    def ms(value):
        return "-" if value is None else f"{value:.2f}"

    if summary["mode"] == "open_loop":
        mode = f"open loop at {summary['target_rps']:g} req/s, latency from when each request was due"
    else:
        mode = f"closed loop, {summary['inflight']} in flight per client, latency from the send"
    rows = [
        ("endpoint", f"{summary['endpoint']}  ({summary['clients']} clients, {mode})"),
        ("requests", f"{summary['requests']} sent, {summary['replies']} answered in {summary['duration_s']:.2f} s"),
        ("throughput", f"{summary['throughput_rps']:,.1f} replies/s"),
        ("latency ms", "  ".join(f"{label} {ms(lat[key])}" for label, key in
                                 (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99.9", "p999"), ("max", "max")))),
        ("statuses", ", ".join(f"{k} {v}" for k, v in summary["statuses"].items()) or "-"),
        ("errors", ", ".join(f"{k} {v}" for k, v in summary["errors"].items()) or "none"),
        ("lost", str(summary["lost"])),
        ("unmatched", str(summary["unmatched"]) + (f" ({summary['unmatched_duplicates']} duplicates)"
                                                   if summary["unmatched_duplicates"] else "")),
    ]
    if "rewrites" in summary:
        rw = summary["rewrites"]
        rows.append(("rewrites", f"{rw['written']} map files rewritten; server reloads ok {rw['reloads_ok']}, "
                                 f"failed {rw['reloads_failed']}"))
    if "update_latency_ms" in summary:
        upd = summary["update_latency_ms"]
        rows.append(("updates", f"{summary['ops']['update']} sent, p50 {ms(upd['p50'])} ms, max {ms(upd['max'])} ms"))
    if summary["mode"] == "open_loop" and summary["max_send_lag_ms"] > 10:
        rows.append(("note", f"the load generator fell up to {summary['max_send_lag_ms']:.0f} ms behind its "
                             "schedule; those delays are counted as latency (try --threads)"))
    server = summary.get("server")
    if server and server.get("dropped_replies"):
        rows.append(("server", f"dropped {server['dropped_replies']} replies"))
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {text}" for label, text in rows)


def plot(summary: dict, path: Path) -> None:
    """A latency percentile plot and throughput over time, side by side, as PNG."""
    try:
        import matplotlib
    except ImportError:
        raise LoadTestError("--plot needs matplotlib: pip install 'pathserver[load]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    latencies = np.sort(summary["_latencies"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5), dpi=110)
    if latencies.size:
        # The HdrHistogram view: x is 1 / (1 - percentile), so the tail gets the room.
        share = (np.arange(latencies.size) + 0.5) / latencies.size
        left.plot(1.0 / (1.0 - share), latencies, color="tab:blue")
        ticks = [q for q in (0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999) if 1.0 / (1.0 - q) <= 1.0 / (1.0 - share[-1]) * 1.01]
        left.set_xscale("log")
        left.xaxis.set_major_locator(FixedLocator([1.0 / (1.0 - q) for q in ticks]))
        left.xaxis.set_minor_locator(NullLocator())
        left.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{100.0 * (1.0 - 1.0 / x):g}%"))
        for key, q in PERCENTILES:
            value = summary["latency_ms"][key]
            left.annotate(f"{key} {value:.2f}", (1.0 / (1.0 - q / 100.0), value), fontsize=8,
                          textcoords="offset points", xytext=(-10, 8))
    left.set_xlabel("percentile")
    left.set_ylabel("latency (ms)")
    loop = "from when due" if summary["mode"] == "open_loop" else "from the send"
    left.set_title(f"path latency ({loop})")
    left.grid(True, which="major", alpha=0.3)
    timeline = summary["timeline"]
    if timeline:
        t = [row["t"] + 0.5 for row in timeline]
        right.bar(t, [row["replies"] for row in timeline], width=0.9, color="tab:green", alpha=0.6, label="replies/s")
        right.set_ylabel("replies per second")
        p99 = right.twinx()
        p99.plot(t, [row["p99_ms"] if row["p99_ms"] is not None else np.nan for row in timeline],
                 color="tab:red", marker="o", markersize=3, label="p99 ms")
        p99.set_ylabel("p99 latency (ms)", color="tab:red")
    right.set_xlabel("time (s)")
    right.set_title(f"throughput: {summary['throughput_rps']:,.0f} replies/s, lost {summary['lost']}, "
                    f"unmatched {summary['unmatched']}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- the command line ------------------------------------------------------------------------------


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
    parser = argparse.ArgumentParser(prog="pathserver loadtest", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
