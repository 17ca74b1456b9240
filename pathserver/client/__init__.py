"""A small pathserver client for Python games and tests: sync (:class:`Client`) and
asyncio (:class:`AsyncClient`), with the same methods.

>>> with Client("tcp://127.0.0.1:5555") as client:            # doctest: +SKIP
...     reply = client.find_path("example", (1, 1), (30, 12), unit_size=2)
...     reply["status"], reply["path"][:2]
('found', [[1, 1], [4, 4]])

- Pipelining: ``submit(op, **fields)`` sends at once and returns the request id;
  ``result(id)`` waits for that reply, so many requests can be in flight on one connection.
- Retries: a request with no reply after ``timeout`` seconds is sent again on a new
  socket, at most ``retries`` times, then raises :class:`ClientTimeoutError`; an
  ``overloaded`` reply is retried after the ``retry_after_ms`` the server suggests. Error
  replies raise :class:`ServerError`, whose ``code`` is the wire code.
- Packed answers: ``find_path(..., packed=True)``, ``find_paths(..., packed=True)`` and
  ``find_paths_packed(map, starts, goals)`` return numpy arrays read from the reply's bins.
- The game's own world: ``put_map(name, array, ...)`` and ``get_map(name, region)``
  (each given at least :data:`UPLOAD_TIMEOUT_S` for its reply), ``drop_map(name)``.

Neither class is thread-safe: use one client per thread (or per event loop). How the
retries go, and the packed and map replies in full: docs/design.md, "The Python client".
"""

from __future__ import annotations

import asyncio
import itertools
import time

import zmq
import zmq.asyncio

from pathserver.errors import PathserverError
from pathserver.protocol.cells import MapCells
from pathserver.protocol.packed import PackedPaths
from pathserver.security import client_curve_options
from pathserver.transport import client_socket, send_request
from pathserver.client import messages

DEFAULT_ENDPOINT = "tcp://127.0.0.1:5555"
#: The least time ``put_map`` and ``get_map`` wait for their reply before resending (s).
UPLOAD_TIMEOUT_S = 30.0


class ServerError(PathserverError):
    """The server answered with an error; ``code`` is the wire code (``"unknown_map"``...)."""

    def __init__(self, reply: dict):
        error = reply.get("error") or {}
        super().__init__(str(error.get("message", "")), at=error.get("at"))
        self.code = str(error.get("code", "internal"))
        self.retryable = bool(reply.get("retryable", False))
        self.retry_after_ms = reply.get("retry_after_ms")
        #: An ``update``'s ``conflict``: the map's current generation.
        self.gen = reply.get("gen")
        self.reply = reply

    def __str__(self) -> str:
        return f"{self.code}: {super().__str__()}"


class ClientTimeoutError(PathserverError):
    """No reply after the timeout and every retry."""

    code = "timeout"


def _checked(reply: dict) -> dict:
    if not reply.get("ok"):
        raise ServerError(reply)
    return reply


def _overloaded(reply: dict) -> bool:
    return not reply.get("ok") and (reply.get("error") or {}).get("code") == "overloaded"


class _Pending:
    __slots__ = ("body", "timeout", "deadline", "attempts", "resend_at")

    def __init__(self, body: bytes, timeout: float):
        self.body = body
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.attempts = 0
        self.resend_at = None


class _Connection:
    """What both clients keep: the endpoint, the timeout and retries, the CURVE options,
    the context (``context``, else ``default_context()``), the socket, the request ids."""

    def __init__(self, endpoint: str, timeout: float, retries: int, context, default_context, server_public_key,
                 client_secret_key):
        self.endpoint = endpoint
        self.timeout = float(timeout)
        self.retries = int(retries)
        self._curve_options = client_curve_options(server_public_key, client_secret_key)
        self._context = context or default_context()
        self._socket = None
        self._ids = itertools.count(1)

    def _new_socket(self):
        return client_socket(self._context, self.endpoint, curve_options=self._curve_options)

    def _timed_out(self) -> ClientTimeoutError:
        return ClientTimeoutError(f"no reply from {self.endpoint} within {self.timeout} s after {self.retries} retries")


class Client(_Connection):
    """A synchronous client on one DEALER socket.

    timeout: seconds to wait for a reply before reconnecting and resending.
    retries: how many times one request is resent before ClientTimeoutError.
    server_public_key, client_secret_key: CURVE, for a server started with
    ``--curve-keys``: the server's ``NAME.key`` and this client's ``NAME.key_secret``
    (paths, or 40-character Z85 keys); both or neither. A server that does not admit the
    key never answers: requests end in ClientTimeoutError.
    """

    def __init__(self, endpoint: str = DEFAULT_ENDPOINT, *, timeout: float = 2.0, retries: int = 3, context=None,
                 server_public_key=None, client_secret_key=None):
        super().__init__(endpoint, timeout, retries, context, zmq.Context.instance, server_public_key,
                         client_secret_key)
        self._pending: dict[int, _Pending] = {}
        self._replies: dict[int, dict] = {}
        self._connect()

    # -- the API -------------------------------------------------------------------------

    def find_path(self, map: str, start, goal=None, unit_size=1, **options) -> dict:
        """The ``path`` reply: ``status``, ``path``, ``cost``, ``start``, ``goal``, ``gen``...;
        with ``goals=[...]`` in place of ``goal``, the cheapest reachable of them
        (``goal_index`` says which). ``packed=True``: ``path`` is an (n, 2) array, int32
        cells in grid space, float32 points in world space (read-only, from one bin)."""
        return messages.path_reply(self.request("path", **messages.path_fields(map, start, goal, unit_size, options)), options)

    def reachable(self, map: str, start, budget, unit_size=1, **options) -> dict:
        """The movement range (``reachable``): the reply with ``cells`` int32 (n, 2) grid
        ``(x, y)``, cheapest first, and ``costs`` float32 (n,)."""
        return messages.query_reply("reachable", self.request(
            "reachable", **messages.query_fields(map, unit_size, options, start=list(start), budget=budget)))

    def distance_field(self, map: str, goals, unit_size=1, **options) -> dict:
        """The Dijkstra map (``field``): the reply with ``cost`` float32 (height, width),
        indexed ``[y, x]`` from ``origin`` (the ``region``'s corner), ``inf`` where no goal
        is reached."""
        return messages.query_reply("field", self.request("field", **messages.query_fields(map, unit_size, options, goals=goals)))

    def next_steps(self, map: str, goals, unit_size, positions, **options) -> dict:
        """Steer many units (``next_steps``; positions go as a float32 bin): the reply with
        ``steps`` float32 (n, 2), where each unit heads, and ``remaining`` float32 (n,)."""
        return messages.query_reply("next_steps", self.request(
            "next_steps", **messages.query_fields(map, unit_size, options, goals=goals, positions=positions)))

    def check_block(self, map: str, rects=(), cells=(), unit_size=1, points=(), **options) -> dict:
        """Would making ``rects`` / ``cells`` solid cut any of ``points`` off from each
        other (``check_block``)? The reply's ``disconnected``: ``[i, j]`` pairs."""
        return self.request("check_block", **messages.query_fields(map, unit_size, options, rects=rects, cells=cells,
                                                           points=points))

    def find_paths(self, map: str, queries, unit_size=1, **options) -> list[dict] | PackedPaths:
        """One ``paths`` round trip. ``queries``: ``(start, goal)`` pairs or entry maps.
        Returns ``results``, one per query in order; a failed entry is
        ``{"ok": False, "error": {...}}`` rather than an exception. ``packed=True``: the
        answer as a :class:`~pathserver.protocol.packed.PackedPaths` instead (every entry
        in the batch's ``space``)."""
        return messages.paths_reply(self.request("paths", **messages.paths_fields(map, queries, unit_size, options)), options)

    def find_paths_packed(self, map: str, starts, goals, unit_size=1, **options) -> PackedPaths:
        """A packed batch: entry ``i`` from ``starts[i]`` to ``goals[i]`` ((n, 2) arrays of
        ``(x, y)``, sent as two bins), every entry with ``unit_size`` and ``options``; the
        answer as a :class:`~pathserver.protocol.packed.PackedPaths`. A failed entry has
        status ``"error"`` and its error object in ``errors`` (``at``: ``starts[i]`` /
        ``goals[i]``) rather than an exception."""
        fields = messages.columns_fields(map, starts, goals, unit_size, options)
        return PackedPaths.from_reply(self.request("paths", **fields), options.get("space") or "grid")

    def maps(self) -> list[dict]:
        return self.request("maps")["maps"]

    def update(self, map: str, *, rects=None, cells=None, solid=None, cost=None, space=None, if_gen=None,
               links=None) -> dict:
        """A live edit; the reply's ``gen`` is the map's new generation. ``if_gen``: apply
        it only if the map is still at that generation (else ServerError ``conflict``, whose
        ``gen`` is the current one). ``links``: the map's new list of links (a door opens,
        a lift moves), with or without an edit of cells."""
        return self.request("update", **messages.update_fields(map, rects, cells, solid, cost, space, if_gen, links))

    def put_map(self, map: str, walkable_or_costs, *, costs=None, heights=None, tags=None, origin=(0.0, 0.0),
                cell_size: float = 1.0, tag_names=None, classes=None, shape=None, layout=None, links=None) -> dict:
        """Upload a map (or replace the one uploaded under ``map``); the reply's ``gen`` is
        its generation. Arrays are indexed ``[y, x]``:

        walkable_or_costs: a bool array (walkable cells, each costing 1 or its ``costs``),
            an integer array of cell bytes (0 blocked, 1..255 walkable with that cost), or
            a float array of costs (``inf`` blocked; every other value finite and >= 1).
        costs: float, exact costs of walkable cells (with a bool or integer array).
        heights: float, finite; tags: integers 0..255, stored with the map.
        origin, cell_size: the world transform (``space: "world"``).
        tag_names: ``{name: tag value 1..255}``; classes: the map's unit classes,
            ``{"boat": {"land": None, "shallows": 2.0}}`` (a request's ``traversal``).
        shape, layout: ``"hex"`` and one of :data:`pathserver.hexes.LAYOUTS` for a hex map
            (its cell_size a number or the tile size ``(w, h)``).
        Floors and links (issue #35): arrays of shape ``(floors, h, w)`` make a map of
            that many floors; links: ``[{"from": [x, y, floor], "to": ..., "cost": c,
            "two_way": bool, "tag": name}, ...]`` as ``put_map`` takes them.

        ValueError / TypeError for arrays that cannot be sent (nothing is sent then).
        """
        fields = messages.put_map_fields(map, walkable_or_costs, costs, heights, tags, origin, cell_size, tag_names, classes,
                                 shape, layout, links)
        return self.result(self._submit("put_map", fields, max(self.timeout, UPLOAD_TIMEOUT_S)))

    def get_map(self, map: str, region=None) -> MapCells:
        """A map's cells as it is served now, edits included: ``region`` ``(x, y, w, h)``
        (grid cells, wholly inside the map) or the whole map."""
        reply = self.result(self._submit("get_map", messages.get_map_fields(map, region), max(self.timeout, UPLOAD_TIMEOUT_S)))
        return MapCells.from_reply(reply)

    def drop_map(self, map: str) -> dict:
        """Stop serving an uploaded map; the reply's ``gen`` is the generation dropped."""
        return self.request("drop_map", map=map)

    def stats(self) -> dict:
        return self.request("stats")

    def ping(self) -> dict:
        return self.request("ping")

    def request(self, op: str, **fields) -> dict:
        return self.result(self.submit(op, **fields))

    def submit(self, op: str, **fields) -> int:
        """Send a request now; returns its id for :meth:`result`."""
        return self._submit(op, fields, self.timeout)

    def _submit(self, op: str, fields: dict, timeout: float) -> int:
        rid = next(self._ids)
        body = messages.encode({"id": rid, "op": op, **fields})
        self._pending[rid] = _Pending(body, timeout)
        send_request(self._socket, body)
        return rid

    def result(self, rid: int) -> dict:
        """Wait for the reply to ``rid``; raises ServerError or ClientTimeoutError."""
        while True:
            if rid in self._replies:
                return _checked(self._replies.pop(rid))
            pending = self._pending.get(rid)
            if pending is None:
                raise KeyError(f"request {rid} is not in flight")
            now = time.monotonic()
            self._resend_due(now)
            if now >= pending.deadline:
                self._retry_all(rid)
                continue
            wake = min([pending.deadline] + [p.resend_at for p in self._pending.values() if p.resend_at])
            if self._socket.poll(max(0, int((wake - now) * 1000)) + 1, zmq.POLLIN):
                self._drain()

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- Lazy Pirate -----------------------------------------------------------------

    def _connect(self) -> None:
        self._socket = self._new_socket()

    def _drain(self) -> None:
        while True:
            try:
                frames = self._socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            reply = messages.decode(frames[-1])
            if reply is None:
                continue
            rid = reply.get("id")
            pending = self._pending.get(rid)
            if pending is None:
                continue  # a late answer to a request already resent or abandoned
            if _overloaded(reply) and pending.attempts < self.retries:
                pending.attempts += 1
                pending.resend_at = time.monotonic() + (reply.get("retry_after_ms") or 10) / 1000.0
                pending.deadline = float("inf")
                continue
            del self._pending[rid]
            self._replies[rid] = reply

    def _resend_due(self, now: float) -> None:
        for pending in self._pending.values():
            if pending.resend_at is not None and pending.resend_at <= now:
                pending.resend_at = None
                pending.deadline = now + pending.timeout
                send_request(self._socket, pending.body)

    def _retry_all(self, rid: int) -> None:
        pending = self._pending[rid]
        if pending.attempts >= self.retries:
            del self._pending[rid]
            raise self._timed_out()
        pending.attempts += 1
        # The socket may be stuck on a dead connection: replace it, resend everything.
        self.close()
        self._connect()
        now = time.monotonic()
        for other in self._pending.values():
            other.deadline = now + other.timeout
            other.resend_at = None
            send_request(self._socket, other.body)


class AsyncClient(_Connection):
    """The asyncio twin of :class:`Client` (``zmq.asyncio``); every method is a coroutine.

    Concurrent calls share one socket; one reader task routes replies to their callers.
    CURVE options as for :class:`Client`.
    """

    def __init__(self, endpoint: str = DEFAULT_ENDPOINT, *, timeout: float = 2.0, retries: int = 3, context=None,
                 server_public_key=None, client_secret_key=None):
        super().__init__(endpoint, timeout, retries, context, zmq.asyncio.Context.instance, server_public_key,
                         client_secret_key)
        self._reader = None
        self._epoch = 0
        self._pending: dict[int, list] = {}  # id -> [future, body, epoch sent on]

    async def find_path(self, map: str, start, goal=None, unit_size=1, **options) -> dict:
        return messages.path_reply(await self.request("path", **messages.path_fields(map, start, goal, unit_size, options)), options)

    async def reachable(self, map: str, start, budget, unit_size=1, **options) -> dict:
        return messages.query_reply("reachable", await self.request(
            "reachable", **messages.query_fields(map, unit_size, options, start=list(start), budget=budget)))

    async def distance_field(self, map: str, goals, unit_size=1, **options) -> dict:
        return messages.query_reply("field", await self.request("field", **messages.query_fields(map, unit_size, options,
                                                                                  goals=goals)))

    async def next_steps(self, map: str, goals, unit_size, positions, **options) -> dict:
        return messages.query_reply("next_steps", await self.request(
            "next_steps", **messages.query_fields(map, unit_size, options, goals=goals, positions=positions)))

    async def check_block(self, map: str, rects=(), cells=(), unit_size=1, points=(), **options) -> dict:
        return await self.request("check_block", **messages.query_fields(map, unit_size, options, rects=rects, cells=cells,
                                                                 points=points))

    async def find_paths(self, map: str, queries, unit_size=1, **options) -> list[dict] | PackedPaths:
        return messages.paths_reply(await self.request("paths", **messages.paths_fields(map, queries, unit_size, options)), options)

    async def find_paths_packed(self, map: str, starts, goals, unit_size=1, **options) -> PackedPaths:
        fields = messages.columns_fields(map, starts, goals, unit_size, options)
        return PackedPaths.from_reply(await self.request("paths", **fields), options.get("space") or "grid")

    async def maps(self) -> list[dict]:
        return (await self.request("maps"))["maps"]

    async def update(self, map: str, *, rects=None, cells=None, solid=None, cost=None, space=None,
                     if_gen=None, links=None) -> dict:
        return await self.request("update", **messages.update_fields(map, rects, cells, solid, cost, space, if_gen, links))

    async def put_map(self, map: str, walkable_or_costs, *, costs=None, heights=None, tags=None,
                      origin=(0.0, 0.0), cell_size: float = 1.0, tag_names=None, classes=None, shape=None,
                      layout=None, links=None) -> dict:
        fields = messages.put_map_fields(map, walkable_or_costs, costs, heights, tags, origin, cell_size, tag_names, classes,
                                 shape, layout, links)
        return await self._request("put_map", fields, max(self.timeout, UPLOAD_TIMEOUT_S))

    async def get_map(self, map: str, region=None) -> MapCells:
        reply = await self._request("get_map", messages.get_map_fields(map, region), max(self.timeout, UPLOAD_TIMEOUT_S))
        return MapCells.from_reply(reply)

    async def drop_map(self, map: str) -> dict:
        return await self.request("drop_map", map=map)

    async def stats(self) -> dict:
        return await self.request("stats")

    async def ping(self) -> dict:
        return await self.request("ping")

    async def request(self, op: str, **fields) -> dict:
        return await self._request(op, fields, self.timeout)

    async def _request(self, op: str, fields: dict, timeout: float) -> dict:
        if self._socket is None:
            self._connect()
        rid = next(self._ids)
        body = messages.encode({"id": rid, "op": op, **fields})
        entry = [asyncio.get_running_loop().create_future(), body, self._epoch]
        self._pending[rid] = entry
        attempts = 0
        try:
            send_request(self._socket, body)
            while True:
                try:
                    reply = await asyncio.wait_for(asyncio.shield(entry[0]), timeout)
                except asyncio.TimeoutError:
                    if attempts >= self.retries:
                        raise self._timed_out() from None
                    attempts += 1
                    if entry[2] == self._epoch:
                        await self._reconnect()
                    continue
                if _overloaded(reply) and attempts < self.retries:
                    attempts += 1
                    entry[0] = asyncio.get_running_loop().create_future()
                    await asyncio.sleep((reply.get("retry_after_ms") or 10) / 1000.0)
                    entry[2] = self._epoch
                    send_request(self._socket, body)
                    continue
                return _checked(reply)
        finally:
            self._pending.pop(rid, None)

    async def close(self) -> None:
        self._disconnect()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    def _connect(self) -> None:
        socket = self._new_socket()
        self._socket = socket
        self._reader = asyncio.ensure_future(self._read(socket))

    def _disconnect(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None

    async def _reconnect(self) -> None:
        """Lazy Pirate: a fresh socket, and every request still waiting sent again."""
        self._disconnect()
        self._epoch += 1
        self._connect()
        for entry in list(self._pending.values()):
            entry[2] = self._epoch
            send_request(self._socket, entry[1])

    async def _read(self, socket) -> None:
        try:
            while True:
                frames = await socket.recv_multipart()
                reply = messages.decode(frames[-1])
                if reply is None:
                    continue
                entry = self._pending.get(reply.get("id"))
                if entry is not None and not entry[0].done():
                    entry[0].set_result(reply)
        except (asyncio.CancelledError, zmq.ZMQError):
            pass
