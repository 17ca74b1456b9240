"""The ZeroMQ loop: one ROUTER socket, a pool of worker threads, a bounded queue, stats.

::

    clients ──► ROUTER ──► loop thread: read_request() ─┬─ ping/stats/maps: answered inline
                  ▲                                     ├─ bad request: error reply at once
                  │                                     ├─ short path (<= 256 expansions): inline
                  │                                     ├─ queue full: ``overloaded`` at once
                  │                                     ├─ path/paths/update/get_map/drop_map ─► jobs
                  │                                     └─ put_map ─► uploads ─┐                   │
                  │                                                            ▼                   ▼
                  └── loop thread ◄── inproc PULL ◄── PUSH (one per thread) ◄── upload thread, workers

Only the loop thread touches the ROUTER; its turn is poll with timeout -> replies out ->
requests in, as in the ZeroMQ Guide's brokers. A short ``path`` is answered on the loop
within INLINE_EXPANSIONS expansions (``path_ops.run_bounded``); workers run the rest and
push ``[meta, envelope..., reply]`` back over inproc; uploads are built on one thread of
their own. Sends never block. Worker mode (``connect=``) and shared state (``state=``)
change only where requests come from and when edits are answered: see "The server loop"
in docs/design.md.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import queue
import struct
import threading
import time

import numpy as np
import zmq

from pathserver.errors import AfterTimeoutError, MalformedError, OverloadedError
from pathserver.protocol.codec import DEFAULT_LIMITS, Limits, peek_id
from pathserver.protocol.requests import After, PathRequest, PathsRequest, StatsRequest, UpdateRequest
from pathserver.server import handlers, map_ops, ops, path_ops
from pathserver.server.failures import error_reply_bytes
from pathserver.transport import (
    HANDSHAKE_MS,
    HEARTBEAT_IVL_MS,
    HEARTBEAT_TIMEOUT_MS,
    Bindable,
    bind_socket,
    max_message_bytes,
    normalize_endpoint,
    recv_frames,
    send_frames,
    server_socket,
)

log = logging.getLogger("pathserver.server")

#: Requests (a ``paths`` batch counts one per entry) queued or running before new
#: searches are answered ``overloaded``.
DEFAULT_QUEUE_LIMIT = 4096
#: A ``path`` whose search needs at most INLINE_EXPANSIONS expansions (the worker's own
#: search, JPS+ where it runs JPS+) and whose start and goal are at most INLINE_DISTANCE
#: cells apart (per axis: the path to trace and smooth) is answered on the loop thread
#: itself; others go to the workers. Python overhead, not the kernel, dominates such a
#: search, and a worker adds a thread hand-off to it (bench/godot_astar.py's sync row).
INLINE_EXPANSIONS = 256
INLINE_DISTANCE = 1024
#: ``pathserver serve``'s ``spin_us``: how long after a reply its loop looks for the next
#: request without sleeping (see ``Server._poll``). A ``Server`` made in another program's
#: process spins only when asked (``spin_us``): its loop would take turns on that program's
#: cores and GIL.
DEFAULT_SPIN_US = 100
#: The most ``spin_us`` may be: past a few frames' worth, a loop that spins is a busy core.
MAX_SPIN_US = 10_000
#: Replies kept for the latency percentiles in ``stats``.
LATENCY_WINDOW = 8192

#: Bytes of ``put_map`` bodies queued or being built before another is answered
#: ``overloaded`` (one is always taken when none waits).
UPLOAD_QUEUE_BYTES = 256 << 20
#: The ``retry_after_ms`` of that reply: a large map takes a second or so to build.
UPLOAD_RETRY_AFTER_MS = 1000

#: Worker -> loop: when the request arrived, its queue weight (0: an upload), the seconds
#: it took, the upload's bytes; then the error code (ASCII, empty when ok).
_META = struct.Struct("<dIdQ")
_POLL_MS = 100
_BURST = 256
#: At most this many pipelined path requests share one find_paths job.
_GROUP_LIMIT = 64
_instance = itertools.count()


class Server(Bindable):
    """A bound ROUTER answering requests against ``registry``.

    ``bind()`` returns the real endpoint (``tcp://127.0.0.1:*`` or port 0 picks a free
    port); ``run()`` serves until ``stop()``, which any thread or a signal handler may
    call; ``close()`` releases everything with LINGER 0.
    """

    def __init__(
        self,
        registry,
        bind: str = "tcp://127.0.0.1:5555",
        *,
        workers: int | None = None,
        queue_limit: int = DEFAULT_QUEUE_LIMIT,
        limits: Limits = DEFAULT_LIMITS,
        heartbeat_ivl_ms: int = HEARTBEAT_IVL_MS,
        heartbeat_timeout_ms: int = HEARTBEAT_TIMEOUT_MS,
        handshake_ms: int = HANDSHAKE_MS,
        inline_expansions: int = INLINE_EXPANSIONS,
        inline_distance: int = INLINE_DISTANCE,
        curve=None,
        connect: str | None = None,
        identity: str | None = None,
        state=None,
        spin_us: int = 0,
    ):
        self.registry = registry
        #: The shared state (``pathserver.editlog.RedisState``) whose entries ``after``
        #: waits for, or None.
        self.state = state
        # Requests waiting for their ``after``: (deadline, After, envelope, body, received).
        self._parked: list[tuple] = []
        #: Worker mode (behind ``pathserver broker``): connect a DEALER to the broker's
        #: back end instead of binding a ROUTER; ``identity`` names this worker in ``stats``.
        self.connect_address = connect
        self.identity = identity
        #: A ``pathserver.security.CurveServer`` or None (plain ZMTP, NULL mechanism).
        self.curve = curve
        self._authenticator = None
        self.bind_address = normalize_endpoint(bind)
        self.workers = max(1, workers or os.cpu_count() or 2)
        self.queue_limit = max(1, int(queue_limit))
        self.limits = limits
        self.inline_expansions = int(inline_expansions)
        self.inline_distance = int(inline_distance)
        self.endpoint: str | None = None
        if not 0 <= spin_us <= MAX_SPIN_US:
            raise ValueError(f"spin_us must be 0 to {MAX_SPIN_US}, got {spin_us}")
        #: Seconds after a reply the loop looks for requests without sleeping (0: never).
        self.spin_s = spin_us / 1e6
        self._replied_at = 0.0  # time.perf_counter() of the last reply
        self._lone = False  # the last burst was one request: see _poll
        self._heartbeat = (int(heartbeat_ivl_ms), int(heartbeat_timeout_ms))
        self._handshake_ms = int(handshake_ms)
        self._context = zmq.Context()
        self._router: zmq.Socket | None = None
        self._results: zmq.Socket | None = None
        self._inproc = f"inproc://pathserver-results-{os.getpid()}-{next(_instance)}"
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._uploads: queue.SimpleQueue = queue.SimpleQueue()
        self._upload_bytes = 0  # bodies queued or being built on the upload thread
        # Path requests of the current burst, by (map, options), until _dispatch_pending.
        self._pending: dict[tuple, list] = {}
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._stopping = False
        # While starting (see hold): no request before the maps load, no search on the loop.
        self._hold: threading.Event | None = None
        self._warming = False
        self._queued = 0
        self._seconds_per_unit = 0.001  # moving average of a queued request's run time
        self._started = time.monotonic()
        self._requests = 0
        self._replies = 0
        self._dropped = 0
        self._ops: dict[str, int] = {}
        self._errors: dict[str, int] = {}
        self._latency = np.zeros(LATENCY_WINDOW, dtype=np.float64)
        self._latency_count = 0

    # -- lifecycle ---------------------------------------------------------------------

    def bind(self) -> str:
        """Create the sockets, start the workers, bind; returns the bound endpoint."""
        results = self._context.socket(zmq.PULL)
        results.linger = 0
        # Bounded by the job queue's limit, so no high-water mark is needed here, and a
        # worker never blocks on its push.
        results.rcvhwm = 0
        results.bind(self._inproc)
        self._results = results
        worker = self.connect_address is not None
        curve = None if worker else self.curve
        if curve is not None and self._authenticator is None:
            # The ZAP handler must be up before the first connection arrives: without one,
            # libzmq admits every CURVE client.
            self._authenticator = curve.start_authenticator(self._context)
        # A worker's DEALER receives what a ROUTER would, [client id, (""), body], because
        # the broker's ROUTER front put the client id there; replies go back the same way.
        # A DEALER has no routing table (no ROUTER_MANDATORY): a full pipe gives EAGAIN.
        router = server_socket(self._context, zmq.DEALER if worker else zmq.ROUTER, heartbeat=self._heartbeat,
                               handshake_ms=self._handshake_ms, max_bytes=max_message_bytes(self.limits),
                               mandatory=not worker, curve=curve)
        try:
            if worker:
                router.connect(self.connect_address)
                self.endpoint = router.getsockopt_string(zmq.LAST_ENDPOINT)
            else:
                self.endpoint = bind_socket(router, self.bind_address)
        except zmq.ZMQError:
            router.close(linger=0)
            raise
        self._router = router
        for i in range(self.workers):
            thread = threading.Thread(target=self._work, args=(self._jobs,), name=f"pathserver-worker-{i}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)
        thread = threading.Thread(target=self._work, args=(self._uploads,), name="pathserver-upload", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self.endpoint

    def hold(self, until: threading.Event) -> None:
        """While starting: take no request before ``until`` is set (the maps load), then
        answer every search on a worker, never on the loop, until :meth:`warmed` (a
        search there could stall the loop for a kernel's compile)."""
        self._hold = until
        self._warming = True

    def warmed(self) -> None:
        """Every kernel is compiled: short trips are answered on the loop again."""
        self._warming = False

    def stop(self) -> None:
        """Ask ``run()`` to return (within one poll interval, 0.1 s). Thread- and signal-safe."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        """True once ``stop()`` was called."""
        return self._stop.is_set()

    def run(self) -> None:
        if self._router is None:
            self.bind()
        router, results = self._router, self._results
        while self._hold is not None and not self._hold.wait(_POLL_MS / 1000.0):
            if self._stop.is_set():
                return
        poller = zmq.Poller()
        poller.register(router, zmq.POLLIN)
        poller.register(results, zmq.POLLIN)
        wake = None if self.state is None else self.state.wake_socket
        if wake is not None:
            poller.register(wake, zmq.POLLIN)
        while not self._stop.is_set():
            timeout_ms = _POLL_MS
            if self._parked:
                timeout_ms = min(timeout_ms, max(0, int((self._parked[0][0] - time.monotonic()) * 1000.0) + 1))
            events = self._poll(poller, timeout_ms)
            if wake is not None and wake in events:
                self.state.drain_wake()
            if results in events:
                self._forward_results()
            if router in events:
                self._serve_requests()
            if self._parked:
                self._release_parked()
            if wake is not None and self.state.outstanding():
                self._finish_edits()

    def _poll(self, poller: zmq.Poller, timeout_ms: int) -> dict:
        """The sockets with something to read, waiting at most ``timeout_ms``. Within
        ``spin_s`` of the last reply, when that answered a request that came alone and no
        worker has a job, it looks without waiting (the core yielded between looks) before
        it sleeps: a client that asks again right after its answer (a synchronous call, path
        after path) finds the loop awake, not a thread to wake. On a virtual machine an idle
        core's wake-up is tens of µs, a third of such a call (bench/godot_astar.py's sync
        row). Under load requests come in bursts, and a spin would only take a core from
        the clients (bench/server.py)."""
        if self.spin_s and self._lone and not self._queued and not self._upload_bytes:
            until = self._replied_at + self.spin_s
            while time.perf_counter() < until:
                events = poller.poll(0)
                if events:
                    return dict(events)
                os.sched_yield()
        return dict(poller.poll(timeout_ms))

    def close(self, timeout: float = 0.5) -> None:
        """Stop the workers (queued jobs are abandoned), close every socket with LINGER 0."""
        if self._stopping:
            return
        self._stop.set()
        self._stopping = True
        for _ in self._threads:
            self._jobs.put(None)
        self._uploads.put(None)
        deadline = time.monotonic() + timeout
        alive = []
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                alive.append(thread.name)
        for sock in (self._router, self._results):
            if sock is not None:
                sock.close(linger=0)
        if self._authenticator is not None:
            self._authenticator.stop()
        if alive:
            # A worker still inside a long search holds its socket; terminating the
            # context would wait for it. The threads are daemons: the process exit ends them.
            log.warning("workers still searching at shutdown: %s", ", ".join(alive))
        else:
            self._context.term()

    # -- the loop's work ---------------------------------------------------------------

    def _serve_requests(self) -> None:
        router = self._router
        self._lone = False
        try:
            for served in range(_BURST):
                try:
                    frames = recv_frames(router)
                except zmq.Again:
                    # One request and no other behind it: a client asking one at a time.
                    self._lone = served == 1
                    return
                received = time.perf_counter()
                self._requests += 1
                envelope = frames[:-1]
                try:
                    self._serve(envelope, frames[-1], received)
                except Exception as exc:
                    # A bug in the loop's own bookkeeping: the request still gets its reply.
                    self._send_error(envelope, received, exc, None)
        finally:
            self._dispatch_pending()

    def _dispatch_pending(self) -> None:
        """Hand the burst's queued path requests to the workers. Requests for one map with
        equal options go as one job, answered by one ``find_paths`` call (slower searches over
        all cores): pipelined requests then cost about what one ``paths`` batch does, instead
        of a thread hand-off each. Every request still gets its own reply."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        for group in pending.values():
            if len(group) == 1:
                self._jobs.put(group[0])
                continue
            for start in range(0, len(group), _GROUP_LIMIT):
                part = group[start : start + _GROUP_LIMIT]
                self._jobs.put(([job[0] for job in part], [job[1] for job in part], [job[2] for job in part], len(part)))

    def _serve(self, envelope: list, body: bytes, received: float) -> None:
        if len(envelope) > 2 or (len(envelope) == 2 and envelope[1] != b""):
            self._count_op(None)
            self._send_error(envelope, received, _bad_envelope(len(envelope) + 1), peek_id(body))
            return
        request, reply, code = handlers.read_request(body, self.limits)
        if request is None:
            self._count_op(None)
            self._send(envelope, reply, received, code)
            return
        if type(request) is After:
            self._count_op(request.request)
            if self.state is not None and not self.state.reached(request.seq):
                self._park(request, envelope, body, received)
                return
            request = request.request
        else:
            self._count_op(request)
        self._dispatch(request, envelope, body, received)

    def _park(self, request: After, envelope: list, body: bytes, received: float) -> None:
        """Hold ``request`` until the state applied its ``after`` (or its bound passed)."""
        if len(self._parked) >= self.queue_limit:
            overloaded = OverloadedError(f"{len(self._parked)} requests wait for their 'after' already; retry "
                                         "after 50 ms", retry_after_ms=50)
            self._send_error(envelope, received, overloaded, request.id)
            return
        # Deadlines grow with arrival: the list stays sorted by deadline.
        self._parked.append((time.monotonic() + self.state.after_timeout_s, request, envelope, body, received))
        # Asked after appending: an entry applied from now on wakes the loop, and one
        # applied before shows in reached() below.
        self.state.notify_applied = True
        self._release_parked()

    def _release_parked(self) -> None:
        """Dispatch the parked requests whose entry is applied; answer those past their bound."""
        now = time.monotonic()
        waiting = []
        for parked in self._parked:
            deadline, request, envelope, body, received = parked
            if self.state.reached(request.seq):
                try:
                    self._dispatch(request.request, envelope, body, received)
                except Exception as exc:
                    self._send_error(envelope, received, exc, request.id)
            elif deadline <= now:
                late = AfterTimeoutError(
                    f"entry {request.text} not applied here within {self.state.after_timeout_s:g} s (this server "
                    f"has applied up to {self.state.applied_text()}); retry after 100 ms", retry_after_ms=100,
                    at="after")
                self._send_error(envelope, received, late, request.id)
            else:
                waiting.append(parked)
        self._parked = waiting
        self.state.notify_applied = bool(waiting)
        self._dispatch_pending()

    def _submit_update(self, request: UpdateRequest, envelope: list, received: float) -> None:
        """Hand an ``update`` to the shared state; answered by :meth:`_finish_edits`."""
        if self.state.outstanding() >= self.queue_limit:
            overloaded = OverloadedError(f"{self.state.outstanding()} edits wait for the shared state already; "
                                         "retry after 50 ms", retry_after_ms=50)
            self._send_error(envelope, received, overloaded, request.id)
            return
        try:
            map_ops.submit_update(request, self.state, (envelope, received, request.id, request.map))
        except Exception as exc:
            self._send_error(envelope, received, exc, request.id)

    def _finish_edits(self) -> None:
        """Answer the updates the shared state has applied here (or failed) since last time."""
        for (envelope, received, rid, name), outcome, seq in self.state.finished():
            reply, code = map_ops.update_reply(rid, name, outcome, seq)
            self._send(envelope, reply, received, code)

    def _dispatch(self, request, envelope: list, body: bytes, received: float) -> None:
        """Answer a validated request inline or queue it (see the module docstring)."""
        if self.state is not None and type(request) is UpdateRequest:
            self._submit_update(request, envelope, received)
            return
        runs = ops.of(request).runs
        if runs == ops.UPLOAD:
            self._queue_upload(request, envelope, body, received)
            return
        if runs == ops.LOOP:
            stats = self.stats() if type(request) is StatsRequest else None
            reply, code = handlers.run(request, self.registry, stats)
            self._send(envelope, reply, received, code)
            return
        if type(request) is PathRequest and self.inline_expansions > 0 and not self._warming:
            answered = path_ops.run_bounded(request, self.registry, self.inline_expansions, self.inline_distance)
            if answered is not None:
                self._send(envelope, answered[0], received, answered[1])
                return
        weight = max(1, len(request.items)) if type(request) is PathsRequest else 1
        if self._queued and self._queued + weight > self.queue_limit:
            # Come back when about half the queue has drained.
            drain_ms = self._queued * self._seconds_per_unit / self.workers * 1000.0
            retry_after_ms = int(min(1000, max(5, drain_ms / 2)))
            overloaded = OverloadedError(
                f"{self._queued} requests queued (limit {self.queue_limit}); retry after {retry_after_ms} ms",
                retry_after_ms=retry_after_ms,
            )
            self._send_error(envelope, received, overloaded, request.id)
            return
        self._queued += weight
        if type(request) is PathRequest:
            key = (request.map, request.query.group_key())
            self._pending.setdefault(key, []).append((request, envelope, received, weight))
        else:
            self._jobs.put((request, envelope, received, weight))

    def _queue_upload(self, request, envelope: list, body: bytes, received: float) -> None:
        size = len(body)
        if self._upload_bytes and self._upload_bytes + size > UPLOAD_QUEUE_BYTES:
            overloaded = OverloadedError(
                f"{self._upload_bytes} bytes of uploads are waiting to be built; retry after "
                f"{UPLOAD_RETRY_AFTER_MS} ms", retry_after_ms=UPLOAD_RETRY_AFTER_MS,
            )
            self._send_error(envelope, received, overloaded, request.id)
            return
        self._upload_bytes += size
        self._uploads.put((request, envelope, received, size))

    def _forward_results(self) -> None:
        results = self._results
        for _ in range(_BURST):
            try:
                frames = recv_frames(results)
            except zmq.Again:
                return
            meta = frames[0]
            received, weight, seconds, upload_bytes = _META.unpack_from(meta)
            if weight:
                self._queued -= weight
                self._seconds_per_unit += 0.05 * (seconds / weight - self._seconds_per_unit)
            self._upload_bytes -= upload_bytes
            code = meta[_META.size:].decode("ascii") or None
            self._send(frames[1:-1], frames[-1], received, code)

    def _send_error(self, envelope, received: float, exc: Exception, rid) -> None:
        reply, code = error_reply_bytes(rid, exc)
        self._send(envelope, reply, received, code)

    def _send(self, envelope: list, reply: bytes, received: float, code: str | None) -> None:
        try:
            send_frames(self._router, [*envelope, reply])
        except zmq.Again:
            self._dropped += 1
        except zmq.ZMQError as exc:
            if exc.errno != errno.EHOSTUNREACH:
                log.warning("reply dropped: %s", exc)
            self._dropped += 1
        else:
            self._replies += 1
        if code is not None:
            self._errors[code] = self._errors.get(code, 0) + 1
        self._replied_at = now = time.perf_counter()
        self._latency[self._latency_count % LATENCY_WINDOW] = now - received
        self._latency_count += 1

    def _count_op(self, request) -> None:
        op = "invalid" if request is None else ops.of(request).name
        self._ops[op] = self._ops.get(op, 0) + 1

    # -- workers -----------------------------------------------------------------------

    def _work(self, jobs: queue.SimpleQueue) -> None:
        """A worker's (``jobs``: the search queue) or the upload thread's (the upload
        queue, whose jobs carry the body's bytes in place of a weight) loop."""
        push = self._context.socket(zmq.PUSH)
        push.linger = 0
        push.sndhwm = 0
        push.connect(self._inproc)
        uploads = jobs is self._uploads
        try:
            while True:
                job = jobs.get()
                if job is None or self._stopping:
                    return
                request, envelope, received, weight = job
                started = time.perf_counter()
                if type(request) is list:
                    answers = path_ops.run_many(request, self.registry)
                    seconds = (time.perf_counter() - started) / len(request)
                    for (reply, code), one_envelope, one_received in zip(answers, envelope, received):
                        meta = _META.pack(one_received, 1, seconds, 0) + (code or "").encode("ascii")
                        send_frames(push, [meta, *one_envelope, reply])
                    continue
                reply, code = handlers.run(request, self.registry)
                weight, upload_bytes = (0, weight) if uploads else (weight, 0)
                meta = _META.pack(received, weight, time.perf_counter() - started, upload_bytes)
                send_frames(push, [meta + (code or "").encode("ascii"), *envelope, reply])
        except zmq.ZMQError as exc:
            if not self._stopping:
                log.error("worker stopped: %s", exc)
        finally:
            push.close(linger=0)

    # -- stats -------------------------------------------------------------------------

    def _percentiles(self, qs) -> list[float]:
        filled = min(self._latency_count, LATENCY_WINDOW)
        if filled == 0:
            return [0.0 for _ in qs]
        values = np.percentile(self._latency[:filled], qs) * 1000.0
        return [round(float(v), 3) for v in values]

    def stats(self) -> dict:
        """Counters since start; latency over the last LATENCY_WINDOW replies, in ms,
        from receiving a request to handing its reply to the socket."""
        p50, p90, p99, worst = self._percentiles((50, 90, 99, 100))
        registry_stats = getattr(self.registry, "stats", None) or {}
        return {
            "requests": self._requests,
            "replies": self._replies,
            "dropped_replies": self._dropped,
            "errors": dict(sorted(self._errors.items())),
            "ops": dict(sorted(self._ops.items())),
            "queue_depth": self._queued,
            "queue_limit": self.queue_limit,
            "workers": self.workers,
            "latency_ms": {"p50": p50, "p90": p90, "p99": p99, "max": worst},
            "reloads_ok": int(registry_stats.get("reloads_ok", 0)),
            "reloads_failed": int(registry_stats.get("reloads_failed", 0)),
            "maps": len(self.registry.names()),
            "upload_cells": int(getattr(self.registry, "upload_cells", 0)),
            "max_upload_cells": int(getattr(self.registry, "max_upload_cells", 0)),
            "uptime_s": round(time.monotonic() - self._started, 3),
        } | self._worker_stats()

    def _worker_stats(self) -> dict:
        """Behind a broker: which worker answered; with shared state: its reader's figures."""
        worker = {} if self.identity is None else {"worker": self.identity}
        return worker | ({} if self.state is None else {"state": self.state.state_stats()})


def _bad_envelope(frame_count: int) -> Exception:
    return MalformedError(
        f"expected [body] or ['', body] after the routing id, got {frame_count - 1} frames "
        "(only an empty frame may come before the body)"
    )
