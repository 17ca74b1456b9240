"""The load itself: :func:`run_load` starts the drivers, each a thread that owns its
share of the simulated clients' DEALER sockets and serves them from one ``zmq.Poller``.
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
"""

from __future__ import annotations

import math
import random
import sys
import threading
import time
from array import array
from dataclasses import dataclass, field

import msgpack
import zmq

from pathserver.client import Client, ClientTimeoutError, ServerError
from pathserver.loadtest.plan import OP_PATH, OP_UPDATE, Doors, LoadConfig, LoadTestError, TripSource
from pathserver.loadtest.report import summarize
from pathserver.loadtest.spawn import Rewriter
from pathserver.protocol.codec import encode

#: Request states, one byte per request id.
_UNSENT, _PENDING, _ANSWERED = 0, 1, 2
#: Ids of driver ``i`` start at ``i << _ID_SHIFT``: unique across drivers, and an id from
#: the reply maps straight back to the driver's request index.
_ID_SHIFT = 40
_POLL_CAP_S = 0.05
#: What the summary keeps of the server's ``stats`` reply.
_SERVER_STATS = ("requests", "replies", "dropped_replies", "errors", "queue_depth", "workers", "latency_ms",
                 "reloads_ok", "reloads_failed")


def fetch_maps(context: zmq.Context, endpoint: str, timeout: float) -> list[dict]:
    """The server's ``maps`` reply entries; LoadTestError when it does not answer in time
    or refuses."""
    try:
        with Client(endpoint, timeout=timeout, retries=0, context=context) as client:
            return client.maps()
    except ClientTimeoutError:
        raise LoadTestError(f"no reply from {endpoint} within {timeout:g} s: is a pathserver running there?") from None
    except ServerError as exc:
        raise LoadTestError(f"the server refused the maps request: {exc.reply!r}") from None


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
        if self.share is not None and self.records.sent_by_op[OP_PATH] >= self.share:
            return False
        return self.config.duration is None or now - self.t0 < self.config.duration

    def _send(self, sock, client: int, body: dict, due: float, op: int) -> None:
        k = len(self.state)
        self.due.append(due)
        self.client_of.append(client)
        self.op_of.append(op)
        self.state.append(_PENDING)
        try:
            sock.send(encode({"id": self.base_id + k, **body}), zmq.NOBLOCK)
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
                    self._send(sock, client, self.trips.next(), now, OP_PATH)
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
                    self._send(sockets[next_client], next_client, self.trips.next(), next_due, OP_PATH)
                    records.max_lag_ms = max(records.max_lag_ms, (now - next_due) * 1000.0)
                    next_client = (next_client + 1) % len(sockets)
                    next_due += interval
                while next_update <= now:
                    self._send(sockets[0], 0, self.doors.next(), next_update, OP_UPDATE)
                    next_update += update_interval
            elif sending_stopped_at is None:
                sending_stopped_at = now
                # Reopen every door this run closed: leave the maps as it found them.
                while self.doors is not None and self.doors.closed:
                    self._send(sockets[0], 0, self.doors.next(), now, OP_UPDATE)
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
                    if answered == OP_PATH and closed_loop and self._may_send(done):
                        self._send(sock, client, self.trips.next(), done, OP_PATH)
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
        summary["server"] = _server_stats(context, config.endpoint, 5.0 if rewriter is not None else 1.0)
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
                bar.n = min(config.requests, sum(d.records.sent_by_op[OP_PATH] for d in drivers))
            else:
                bar.n = round(min(config.duration, max(0.0, now - t0)), 1)
            bar.refresh()
    finally:
        if bar is not None:
            bar.close()


def _server_stats(context: zmq.Context, endpoint: str, timeout: float) -> dict | None:
    """The server's own ``stats`` after the run (dropped replies, queue), if it answers."""
    try:
        with Client(endpoint, timeout=timeout, retries=0, context=context) as client:
            reply = client.stats()
    except Exception:  # noqa: BLE001 - a fake or foreign server: no stats, not an error
        return None
    return {k: reply[k] for k in _SERVER_STATS if k in reply}
