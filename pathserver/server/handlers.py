"""Pure request -> reply functions, and the one place exceptions become error replies.

::

    body bytes --read_request()--> typed request --run()--> reply bytes
                     |                                 |
                     +------- error_reply_bytes() <----+   (any exception, exactly here)

``read_request`` runs on the socket loop (cheap: decode and validate); ``run`` runs the
op — on a worker thread for searches, edits, ``get_map`` and ``drop_map``, on the upload
thread for ``put_map``, inline for ``ping``/``stats``/``maps``; ``run_bounded`` answers a
short ``path`` on the loop or declines. A ``put_map`` body over the default limits is not
decoded on the loop at all: ``read_request`` hands it on as an ``UploadBody``, which
``run`` reads on the upload thread. All return encoded reply bytes and never raise. A
``PathserverError`` with a wire code becomes that code's reply; anything else is a bug:
logged with its traceback here, and answered ``internal`` with no detail. No reply ever
carries a traceback.

The handlers read maps through a registry (``get``, ``info``, ``apply_edit``,
``check_put``, ``put_map``, ``drop_map``, ``stats``; see ``pathserver.maps.registry``).
Each search runs on the one immutable GridMap that ``get`` returned, and its reply's
``gen`` names that generation.

A request sent with ``after`` reads as an ``After`` around the request. With shared state
(``pathserver.editlog``) an ``update`` is split in two for the loop: ``submit_update``
checks and hands it over, ``update_reply`` answers it once applied; edit replies carry the
entry's ``seq``.
"""

from __future__ import annotations

import logging
import math
import os
import time

import numpy as np

from pathserver.core import wire as wire_kernels
from pathserver.errors import (
    WIRE_CODES,
    ConflictError,
    MapLoadError,
    OutOfBoundsError,
    OverloadedError,
    PathserverError,
    RequestError,
    SearchLimitError,
    TooLargeError,
)
from pathserver.grid import queries
from pathserver.grid.avoid import as_arrays
from pathserver.grid.gridmap import GridMap, floor_cell
from pathserver.grid.search import find_path, find_path_within, find_paths
from pathserver.options import FUNCTIONS, PER_REQUEST, cell_rows
from pathserver import arrays
from pathserver.protocol.cells import MapCells
from pathserver.protocol.codec import (
    DEFAULT_LIMITS,
    UPLOAD_LIMITS,
    UPLOAD_OP,
    Limits,
    check_structure,
    decode_map,
    decode_request,
    encode,
    peek_id,
    top_level_op,
)
from pathserver.protocol.replies import (
    PROTOCOL_VERSION,
    PathAnswer,
    PathReplies,
    batch_error,
    error_object,
    error_reply,
    ok_reply,
)
from pathserver.protocol import packed as packing
from pathserver.protocol.requests import (
    After,
    DropMapRequest,
    GetMapRequest,
    MapsRequest,
    PathQuery,
    PathRequest,
    PathsRequest,
    PingRequest,
    PutMapRequest,
    QueryRequest,
    StatsRequest,
    UpdateRequest,
    UploadBody,
    parse_path_fast,
    parse_request,
    parse_seq,
    request_id,
)

log = logging.getLogger("pathserver.server")

_WIRE_CODES = frozenset(WIRE_CODES)
_PER_REQUEST = frozenset(PER_REQUEST)

#: Path replies; long paths' points are encoded by the compiled kernels, without the GIL.
_PATH_REPLIES = PathReplies(wire_kernels)


# -- the one place exceptions become replies ----------------------------------------------


def error_parts(exc: BaseException) -> tuple[str, str, str | None]:
    """``(code, message, at)`` for an exception; unexpected ones are logged as bugs."""
    if isinstance(exc, PathserverError) and exc.code in _WIRE_CODES:
        return exc.code, exc.message, exc.at
    log.error("internal error while answering a request", exc_info=exc)
    return "internal", "internal server error; the server log has the details", None


def error_reply_bytes(rid, exc: BaseException) -> tuple[bytes, str]:
    """An encoded error reply for ``exc`` and its code."""
    code, message, at = error_parts(exc)
    retry_after = exc.retry_after_ms if isinstance(exc, OverloadedError) else None
    gen = exc.gen if isinstance(exc, ConflictError) else None
    return encode(error_reply(rid, code, message, at, retry_after_ms=retry_after, gen=gen)), code


def read_request(body: bytes, limits: Limits = DEFAULT_LIMITS, upload_limits: Limits = UPLOAD_LIMITS):
    """Decode and validate one body. Returns ``(request, None, None)``, or
    ``(None, reply_bytes, code)`` when the body fails; the error reply carries the id
    whenever one could be read (even from a body too large or broken to decode).

    A plainly valid ``path`` request takes a fast path (``parse_path_fast``, which also
    vouches for the depth and key types the codec's walk would check); anything else gets
    the codec's walk and the full validator, so every error is the one they raise.

    A body over ``limits`` whose top-level ``op`` is ``put_map`` (``codec.top_level_op``,
    which reads headers only) and within ``upload_limits``' size is returned undecoded as
    an :class:`UploadBody`, for :func:`read_upload` on a worker; any other stays
    ``too_large``."""
    rid = None
    try:
        try:
            obj = _decode_map(body, limits)
            if "after" in obj:
                return _read_after(obj, limits), None, None
            if limits.max_depth >= 2:
                request = parse_path_fast(obj, limits.max_depth)
                if request is not None:
                    return request, None, None
            check_structure(obj, limits)
        except TooLargeError:
            if len(body) <= upload_limits.max_request_bytes and top_level_op(body) == UPLOAD_OP:
                return UploadBody(peek_id(body), body), None, None
            rid = peek_id(body)
            raise
        except PathserverError:
            rid = peek_id(body)
            raise
        rid = request_id(obj)
        return parse_request(obj), None, None
    except Exception as exc:
        reply, code = error_reply_bytes(rid, exc)
        return None, reply, code


def _read_after(obj: dict, limits: Limits) -> After:
    """A request sent with ``after``: the request without it, wrapped in :class:`After`."""
    rid = request_id(obj)
    after = obj.pop("after")
    check_structure(obj, limits)
    request = parse_request(obj)
    seq = parse_seq(after)
    return After(rid, seq, after, request)


#: Bodies of at least this many bytes are looked through for ``avoid.cells`` sent as
#: ``[x, y]`` pairs (a request without many is shorter).
PAIRS_FROM_BYTES = 256
#: ``avoid`` as a msgpack fixstr, as every encoder writes a key of five bytes (a body
#: without it is not walked: this only saves work, the kernel decides).
_AVOID_KEY = b"\xa5avoid"
#: ``cells`` so, and the type bytes of an array: a body whose first ``cells`` holds no
#: array (the bin engines send) is not walked either.
_CELLS_KEY = b"\xa5cells"
_ARRAY_HEADERS = frozenset(range(0x90, 0xA0)) | {0xDC, 0xDD}


def _decode_map(body: bytes, limits: Limits) -> dict:
    """``decode_map(body, limits)``, with a request's ``avoid.cells`` sent as plainly
    valid ``[x, y]`` pairs read by a kernel (:func:`pathserver.core.wire.avoid_pairs`)
    into a read-only float64 (n, 2) array: msgpack decodes the body with the array left
    out (nil in its place) and the array goes back in. 200 cells: about 30 µs less than
    msgpack's lists, the checks' walk over them and their conversion. Whatever the kernel
    does not find plainly so is decoded as it is, so every refusal is msgpack's and the
    validators'."""
    if PAIRS_FROM_BYTES <= len(body) <= limits.max_request_bytes and limits.max_depth >= 4:
        value = body.find(_CELLS_KEY) + len(_CELLS_KEY)  # where the first "cells" key's value starts
        if not (len(_CELLS_KEY) <= value < len(body) and body[value] in _ARRAY_HEADERS and _AVOID_KEY in body):
            return decode_map(body, limits)
        rows = min(limits.max_array_len, len(body) // 3)
        out = np.empty((rows, 2), dtype=np.float64)
        info = np.empty(3, dtype=np.int64)
        if wire_kernels.avoid_pairs(np.frombuffer(body, dtype=np.uint8), limits.max_array_len, out,
                                    info) == wire_kernels.PAIRS_FOUND:
            start, end, count = info.tolist()
            obj = decode_map(b"".join((body[:start], b"\xc0", body[end:])), limits)
            cells = out[:count]
            cells.setflags(write=False)
            obj["avoid"]["cells"] = cells
            return obj
    return decode_map(body, limits)


def read_upload(upload: UploadBody, limits: Limits = UPLOAD_LIMITS) -> PutMapRequest:
    """The ``put_map`` request in an :class:`UploadBody`, decoded with the upload limits
    and validated; raises as ``parse_request`` does."""
    return _parse_upload(upload, decode_request(upload.body, limits))


def _parse_upload(upload: UploadBody, obj: dict) -> PutMapRequest:
    obj.pop("after", None)  # checked and waited for by the caller
    request = parse_request(obj)
    if type(request) is not PutMapRequest:
        # top_level_op vouched for the op; a decoder that disagreed must not let another
        # op past the default limits.
        raise TooLargeError(f"request of {len(upload.body)} bytes exceeds the limit of "
                            f"{DEFAULT_LIMITS.max_request_bytes} bytes")
    return request


def run(request, registry, stats: dict | None = None) -> tuple[bytes, str | None]:
    """Answer a validated request (or an :class:`UploadBody`): ``(reply_bytes, error_code
    or None)``. Never raises."""
    rid = request.id
    try:
        if type(request) is After:
            _wait_for(registry, request.seq, request.text)
            request = request.request
        if type(request) is UploadBody:
            started = time.perf_counter()
            obj = decode_request(request.body, UPLOAD_LIMITS)
            rid = request_id(obj)  # also when the id is not the body's first key
            if "after" in obj:
                _wait_for(registry, parse_seq(obj["after"]), obj["after"])
            request = _parse_upload(request, obj)
            return encode(handle_put_map(request, registry, started)), None
        return encode(handle(request, registry, stats)), None
    except Exception as exc:
        return error_reply_bytes(rid, exc)


def _wait_for(registry, seq: tuple, text: str) -> None:
    """Block until ``registry`` (a shared state, ``pathserver.editlog``) applied entry
    ``seq``; AfterTimeoutError past its bound. A registry without shared state has
    applied every edit it answered: nothing to wait for."""
    wait = getattr(registry, "wait_applied", None)
    if wait is not None:
        wait(seq, text)


def _committed(registry) -> dict:
    """``{"seq": id}`` of the change this thread just made through a shared state, else
    nothing (a server without ``--state``)."""
    committed = getattr(registry, "committed_seq", None)
    return {} if committed is None else {"seq": committed()}


def respond(body: bytes, registry, stats: dict | None = None, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The whole pipeline for one body on the calling thread (tests, fuzzing)."""
    request, reply, _ = read_request(body, limits)
    if request is None:
        return reply
    return run(request, registry, stats)[0]


# -- dispatch ------------------------------------------------------------------------------


def handle(request, registry, stats: dict | None = None) -> dict:
    """The reply dict for a validated request; raises PathserverError on failure."""
    kind = type(request)
    if kind is PathRequest:
        return handle_path(request, registry)
    if kind is PathsRequest:
        return handle_paths(request, registry)
    if kind is PingRequest:
        return ok_reply(request.id, {"protocol": PROTOCOL_VERSION})
    if kind is MapsRequest:
        return handle_maps(request, registry)
    if kind is UpdateRequest:
        return handle_update(request, registry)
    if kind is StatsRequest:
        return ok_reply(request.id, dict(stats or {}))
    if kind is PutMapRequest:
        return handle_put_map(request, registry)
    if kind is DropMapRequest:
        generation = registry.drop_map(request.map)
        return ok_reply(request.id, {"map": request.map, "gen": generation, **_committed(registry)})
    if kind is GetMapRequest:
        return handle_get_map(request, registry)
    if kind is QueryRequest:
        return handle_query(request, registry)
    raise TypeError(f"no handler for {kind.__name__}")


def handle_path(request: PathRequest, registry) -> dict:
    gridmap = registry.get(request.map)
    query = request.query
    unit, start, goal, options = _endpoints(gridmap, query)
    result = find_path(gridmap, start, goal, unit, **_avoid_arrays(options))
    return _PATH_REPLIES.reply(request.id, _path_answer(gridmap, query.space, result, query.goal is None),
                               request.packed)


def run_many(requests: list, registry) -> list[tuple[bytes, str | None]]:
    """Answer ``path`` requests for one map with equal options in one ``find_paths``
    call (spread over all cores); each gets the reply :func:`run` would give it, and all
    are computed on one map generation. Never raises."""
    answers: list = [None] * len(requests)
    try:
        gridmap = registry.get(requests[0].map)
    except Exception as exc:
        return [error_reply_bytes(request.id, exc) for request in requests]
    entries = []
    for i, request in enumerate(requests):
        try:
            entries.append((i, *_endpoints(gridmap, request.query)))
        except Exception as exc:
            answers[i] = error_reply_bytes(request.id, exc)
    if entries:
        query = requests[entries[0][0]].query
        try:
            results = _search(gridmap, entries)
        except Exception as exc:
            results = [exc] * len(entries)
        for (i, *_), result in zip(entries, results):
            rid = requests[i].id
            if isinstance(result, BaseException):
                answers[i] = error_reply_bytes(rid, result)
            else:
                try:
                    answer = _path_answer(gridmap, query.space, result, query.goal is None)
                    answers[i] = _PATH_REPLIES.encode(rid, answer, requests[i].packed), None
                except Exception as exc:
                    answers[i] = error_reply_bytes(rid, exc)
    return answers


def run_bounded(request: PathRequest, registry, budget: int, max_distance: int):
    """Answer ``request`` if start and goal are at most ``max_distance`` cells apart on
    each axis and its search needs at most ``budget`` expansions, else None (then run it
    on a worker with :func:`run`). The socket loop uses this to answer short trips
    without a thread hand-off while its own work per request stays bounded (the distance
    also bounds the cost of smoothing the path).

    A* and JPS expand the same nodes in the same order with or without a budget that is
    not reached, so an answer found here is the one the unbounded search gives.
    """
    try:
        gridmap = registry.get(request.map)
        query = request.query
        per_request = query.options.keys() & _PER_REQUEST
        if query.goal is None or per_request and not _inline_avoid(query.options, per_request):
            return None  # many goals, a unit class, avoided rectangles or many cells: a worker's
        unit, start, goal, options = _endpoints(gridmap, query)
        if abs(start[0] - goal[0]) > max_distance or abs(start[1] - goal[1]) > max_distance:
            return None
        own_budget = options.get("max_expansions")
        if per_request:
            # Other units' cells: the worker's own search, given up past the budget.
            result = find_path_within(gridmap, start, goal, unit, budget, **_avoid_arrays(options))
            if result is None:
                return None
        elif own_budget is not None and own_budget <= budget:
            result = find_path(gridmap, start, goal, unit, **options)
        else:
            try:
                result = find_path(gridmap, start, goal, unit, **{**options, "max_expansions": budget,
                                                                  "allow_partial": False})
            except SearchLimitError:
                return None
            if result.status != "found" and options.get("allow_partial"):
                return None  # the partial path to the nearest reachable cell is a search of its own
        answer = _path_answer(gridmap, query.space, result, query.goal is None)
        return _PATH_REPLIES.encode(request.id, answer, request.packed), None
    except Exception as exc:
        return error_reply_bytes(request.id, exc)


def handle_paths(request: PathsRequest, registry) -> dict:
    """Entries with equal options share one ``find_paths`` call (spread over all cores);
    a failing entry fails only its own slot, with ``at`` where the request gave it
    (``requests[i].``, or ``starts[i]`` / ``goals[i]``). A packed request gets the packed
    columns (:func:`pathserver.protocol.packed.batch_fields`) in place of ``results``."""
    gridmap = registry.get(request.map)
    # One outcome an entry: a PathAnswer, or the error object of an entry that failed.
    outcomes: list = [None] * len(request.items)
    groups: dict[tuple, list] = {}
    for i, item in enumerate(request.items):
        if isinstance(item, PathQuery):
            # Endpoints first: a failing entry must not leave an empty group behind.
            try:
                endpoints = _endpoints(gridmap, item)
            except Exception as exc:
                outcomes[i] = _entry_error(request, exc, i)
            else:
                groups.setdefault(item.group_key(), []).append((i, *endpoints))
        else:
            outcomes[i] = _entry_error(request, item, None)
    for entries in groups.values():
        query = request.items[entries[0][0]]
        answers = _search(gridmap, entries)
        for (i, *_), answer in zip(entries, answers):
            if isinstance(answer, BaseException):
                outcomes[i] = _entry_error(request, answer, i)
            else:
                outcomes[i] = _path_answer(gridmap, query.space, answer, query.goal is None)
    if request.packed:
        return ok_reply(request.id, {"gen": gridmap.generation, **packing.batch_fields(outcomes, request.space)})
    results = [_PATH_REPLIES.entry(outcome) if type(outcome) is PathAnswer else batch_error(**outcome)
               for outcome in outcomes]
    return ok_reply(request.id, {"gen": gridmap.generation, "results": results})


#: The most avoided cells a ``path`` the loop answers itself may carry (and no
#: rectangles): reading them and laying them on stays within its bounded work.
INLINE_AVOID_CELLS = 1024


def _inline_avoid(options: dict, per_request) -> bool:
    """Whether a ``path`` with these per-request options may be tried on the loop: only
    ``avoid``, with at most INLINE_AVOID_CELLS cells and no rectangles."""
    if len(per_request) != 1 or "avoid" not in per_request:
        return False
    avoid = options["avoid"]
    cells = avoid.get("cells")
    if type(cells) is bytes:
        cells = cell_rows(cells, "avoid.cells")  # a view: no copy
    return not avoid.get("rects") and (cells is None or len(cells) <= INLINE_AVOID_CELLS)


def _avoid_arrays(options: dict) -> dict:
    """``options`` with ``avoid``'s lists or bin (checked when the request was parsed) as
    arrays (``grid.avoid.as_arrays``); made once for a group of queries."""
    avoid = options.get("avoid")
    return {**options, "avoid": as_arrays(avoid)} if avoid else options


def _search(gridmap, entries: list) -> list:
    """The PathResults (or PathserverErrors) of ``entries``, ``(i, unit, start, goal,
    options)`` of equal unit and options: one ``find_paths`` call, spread over all cores,
    or with ``goals`` (which ``find_paths`` has no slot for) one ``find_path`` each."""
    _, unit, _, _, options = entries[0]
    options = _avoid_arrays(options)
    if "goals" not in options:
        return find_paths(gridmap, [entry[2] for entry in entries], [entry[3] for entry in entries], unit,
                          errors="return", **options)
    results = []
    for _, _, start, goal, _ in entries:
        try:
            results.append(find_path(gridmap, start, goal, unit, **options))
        except PathserverError as exc:
            results.append(exc)
    return results


# -- the queries beyond one path --------------------------------------------------------

#: Most cells one ``field`` reply holds (a 4096 x 4096 map: 64 MiB of float32).
MAX_FIELD_CELLS = 4096 * 4096


def handle_query(request: QueryRequest, registry) -> dict:
    """``reachable``, ``field``, ``next_steps`` and ``check_block``: the request's points
    turned into grid units, then the op's function of :mod:`pathserver.grid.queries`."""
    gridmap = registry.get(request.map)
    op = request.op
    args = dict(request.args)
    space = request.space
    for key in ("start", "goals", "positions", "points", "cells"):
        if key in args:
            args[key] = _grid_points(gridmap, args[key], space)
    if "rects" in args and space == "world" and args["rects"]:
        rects = np.asarray(args["rects"], dtype=np.float64)
        args["rects"] = np.column_stack((_grid_points(gridmap, rects[:, :2], space), rects[:, 2:] / gridmap.cell_size))
    if op == "field":
        x, y, w, h = args.get("region") or (0, 0, gridmap.width, gridmap.height)
        if w * h > MAX_FIELD_CELLS:
            raise TooLargeError(f"a field of {w} x {h} cells; at most {MAX_FIELD_CELLS} in one reply (ask for a "
                                "'region')", at="region")
    answer = getattr(queries, FUNCTIONS[op])(gridmap, **args)
    fields = {"map": request.map, "gen": gridmap.generation}
    if op == "reachable":
        cells, costs = answer
        fields.update(cells=arrays.to_bin(cells, arrays.INT32), costs=arrays.to_bin(costs, arrays.FLOAT32))
    elif op == "field":
        fields.update(width=int(w), height=int(h), origin=[int(x), int(y)], cost=arrays.to_bin(answer, arrays.FLOAT32))
    elif op == "next_steps":
        steps, remaining = answer
        if space == "world":
            steps = (steps + 0.5) * gridmap.cell_size + np.asarray(gridmap.origin, dtype=np.float64)
        if request.packed:
            fields["steps"] = arrays.to_bin(steps, arrays.FLOAT32)
        else:
            fields["steps"] = (steps if space == "world" else steps.astype(np.int64)).tolist()
        fields["remaining"] = arrays.to_bin(remaining, arrays.FLOAT32)
    else:
        fields["disconnected"] = [list(pair) for pair in answer]
    return ok_reply(request.id, fields)


def _grid_points(gridmap, points, space: str):
    """Points in ``space`` as grid units (the functions floor them to cells)."""
    if space == "grid" or len(points) == 0:
        # An empty list (check_block's cells when it gives only rects) has no pairs to move.
        return points
    xy = np.asarray(points, dtype=np.float64)
    return (xy - np.asarray(gridmap.origin, dtype=np.float64)) / gridmap.cell_size


def handle_maps(request: MapsRequest, registry) -> dict:
    return ok_reply(request.id, {"maps": [_map_entry(info) for info in registry.info()]})


def handle_update(request: UpdateRequest, registry) -> dict:
    rects, cells = update_cells(request, registry.get(request.map))
    edited = registry.apply_edit(request.map, rects=rects, cells=cells, solid=request.solid, cost=request.cost,
                                 if_gen=request.if_gen)
    return ok_reply(request.id, {"map": request.map, "gen": edited.generation, **_committed(registry)})


def submit_update(request: UpdateRequest, state, context) -> None:
    """Hand an ``update`` to the shared state without waiting (the socket loop's way):
    ``state.submit_edit`` appends it, and :func:`update_reply` makes the reply once it is
    applied here. Raises what :func:`handle_update` raises before anything is written."""
    rects, cells = update_cells(request, state.get(request.map))
    state.submit_edit(request.map, rects, cells, solid=request.solid, cost=request.cost, if_gen=request.if_gen,
                      context=context)


def update_reply(rid, name: str, outcome, seq: str) -> tuple[bytes, str | None]:
    """The reply to an ``update`` the shared state applied (``outcome``: the new map) or
    failed (``outcome``: the exception)."""
    if isinstance(outcome, BaseException):
        return error_reply_bytes(rid, outcome)
    return encode(ok_reply(rid, {"map": name, "gen": outcome.generation, "seq": seq})), None


def update_cells(request: UpdateRequest, gridmap) -> tuple[list, list]:
    """An ``update``'s rectangles and cells as grid cells of ``gridmap``: ``(x, y, w, h)``
    rectangles clipped to the map, ``(x, y)`` cells; OutOfBoundsError for one off the map."""
    if request.space == "world":
        ox, oy = gridmap.origin
        scale = gridmap.cell_size
    else:
        ox, oy, scale = 0.0, 0.0, 1.0
    rects = []
    for i, (x, y, w, h) in enumerate(request.rects):
        rects.append(_covered_cells(gridmap, (x - ox) / scale, (y - oy) / scale, w / scale, h / scale, f"rects[{i}]"))
    cells = []
    for i, (x, y) in enumerate(request.cells):
        cx, cy = floor_cell((x - ox) / scale, (y - oy) / scale, f"cells[{i}]")
        if not gridmap.in_bounds(cx, cy):
            raise OutOfBoundsError(f"cell ({cx}, {cy}) is outside the map ({gridmap.width}x{gridmap.height})",
                                   at=f"cells[{i}]")
        cells.append((cx, cy))
    return rects, cells


def handle_put_map(request: PutMapRequest, registry, started: float | None = None) -> dict:
    """Build the uploaded map (clearance, and the components of 1x1 units, so the first
    search pays no build) and serve it. ``started``: when reading the body began, for the
    build time ``maps`` reports (``load_ms``)."""
    started = time.perf_counter() if started is None else started
    # Refused before the build, which takes a while on a large map; checked again at the swap.
    registry.check_put(request.map, request.width * request.height)
    gridmap, timings = build_map(request)
    load_ms = (time.perf_counter() - started) * 1000.0
    fields = {"map": request.map, "width": request.width, "height": request.height, **request.wire,
              "origin": list(request.origin), "cell_size": request.cell_size}
    stored = registry.put_map(request.map, gridmap, load_ms=load_ms, wire=fields)
    log.info("put_map %r %dx%d: %.1f ms in all (clearance %.1f ms, components %.1f ms)", request.map,
             request.width, request.height, load_ms, timings["clearance_ms"], timings["components_ms"])
    return ok_reply(request.id, {"map": request.map, "gen": stored.generation, "width": request.width,
                                 "height": request.height, **_committed(registry)})


def build_map(request: PutMapRequest) -> tuple[GridMap, dict]:
    """The GridMap of a ``put_map`` (not yet served) and how long its parts took:
    ``{"clearance_ms", "components_ms"}``."""
    started = time.perf_counter()
    try:
        gridmap = GridMap.from_cells(request.cells, origin=request.origin, cell_size=request.cell_size,
                                     name=request.map)
    except MapLoadError as exc:  # the tag names and classes (the layers are checked already)
        raise RequestError(exc.message, at=exc.at) from None
    built = time.perf_counter()
    gridmap.layer_for(1, 1)
    done = time.perf_counter()
    return gridmap, {"clearance_ms": (built - started) * 1000.0, "components_ms": (done - built) * 1000.0}


def build_upload(fields: dict) -> GridMap:
    """The GridMap of a ``put_map``'s fields as ``handle_put_map`` passes them to the
    registry (``wire``): how a worker behind a broker rebuilds another worker's upload."""
    return build_map(parse_request({"id": 0, "op": UPLOAD_OP, **fields}))[0]


def handle_get_map(request: GetMapRequest, registry) -> dict:
    gridmap = registry.get(request.map)
    x, y, w, h = request.region or (0, 0, gridmap.width, gridmap.height)
    if x < 0 or y < 0 or x + w > gridmap.width or y + h > gridmap.height:
        raise OutOfBoundsError(f"region [{x}, {y}, {w}, {h}] is not wholly inside the map "
                               f"({gridmap.width}x{gridmap.height} cells)", at="region")
    rows, columns = slice(y, y + h), slice(x, x + w)
    cells = MapCells(
        gridmap.walkable[rows, columns],
        None if gridmap.uniform_cost else gridmap.cost[rows, columns],
        None if gridmap.heights is None else gridmap.heights[rows, columns],
        None if gridmap.tags is None else gridmap.tags[rows, columns],
    )
    ox, oy = gridmap.origin
    return ok_reply(request.id, {
        "map": request.map, "gen": gridmap.generation, "width": gridmap.width, "height": gridmap.height,
        "origin": [float(ox), float(oy)], "cell_size": float(gridmap.cell_size), "region": [x, y, w, h],
        **cells.to_wire(with_costs=_needs_costs(gridmap)),
        **({"tag_names": dict(gridmap.tag_names)} if gridmap.tag_names else {}),
        **({"classes": {name: dict(rules) for name, rules in gridmap.classes.items()}} if gridmap.classes else {}),
    })


def _needs_costs(gridmap) -> bool:
    """Whether ``get_map`` sends ``costs`` for this map: some walkable cell's cost is not
    a whole number, or above 255."""
    if gridmap.uniform_cost:
        return False
    table = gridmap.cost_table
    if not np.any((table > 255.0) | (table != np.floor(table))):
        return False  # every cost the map holds is in its table (which may hold stale ones too)
    return MapCells(gridmap.walkable, gridmap.cost).needs_costs()


# -- helpers -------------------------------------------------------------------------------


def _endpoints(gridmap, query: PathQuery):
    """``(unit, start, goal, options)`` for ``find_path``, which floors grid coordinates
    and checks bounds and the unit size itself; world points (the goals among the options
    too) are converted to cells here. ``unit`` is ``k`` for a ``k x k`` unit, else ``(w,
    h)``: find_path reads both the same way (with the same errors), and an int skips its
    slower check of a pair. ``goal`` is None when the options hold ``goals``."""
    w, h = unit = query.unit_size
    if w == h:
        unit = w
    options = query.options
    if query.space == "grid":
        return unit, query.start, query.goal, options
    start = _cell(gridmap, query.start, query.space, "start")
    goal = None if query.goal is None else _cell(gridmap, query.goal, query.space, "goal")
    if "goals" in options:
        options = {**options, "goals": _grid_points(gridmap, options["goals"], query.space)}
    return unit, start, goal, options


def _cell(gridmap, point, space: str, name: str) -> tuple[int, int]:
    """A wire point -> the grid cell containing it (float grid coordinates are floored)."""
    if space == "world":
        cx, cy = gridmap.world_to_cell(*point, at=name)
    else:
        cx, cy = floor_cell(*point, name)
    if not gridmap.in_bounds(cx, cy):
        shown = f"({point[0]}, {point[1]})" + (f" = cell ({cx}, {cy})" if space == "world" else "")
        raise OutOfBoundsError(
            f"{name} {shown} is outside the map: cells 0..{gridmap.width - 1} x 0..{gridmap.height - 1}", at=name
        )
    return cx, cy


def _covered_cells(gridmap, x: float, y: float, w: float, h: float, at: str) -> tuple[int, int, int, int]:
    """The cell rectangle ``(x, y, w, h)`` a rectangle in grid units overlaps, clipped to
    the map; OutOfBoundsError when nothing of it lies on the map."""
    if not all(math.isfinite(v) for v in (x, y, x + w, y + h)):
        raise OutOfBoundsError("rectangle is too far outside the map", at=at)
    x0, y0 = max(math.floor(x), 0), max(math.floor(y), 0)
    x1, y1 = min(math.ceil(x + w), gridmap.width), min(math.ceil(y + h), gridmap.height)
    if x0 >= x1 or y0 >= y1:
        raise OutOfBoundsError(
            f"rectangle lies outside the map ({gridmap.width}x{gridmap.height} cells)", at=at
        )
    return x0, y0, x1 - x0, y1 - y0


def _path_answer(gridmap, space: str, result, many: bool = False) -> PathAnswer:
    """A PathResult as the protocol's PathAnswer, coordinates in ``space``: cells become
    world points here, as world points become cells in :func:`_cell`. many: the request
    gave ``goals`` (the answer says which was reached)."""
    if space == "world":
        scale = gridmap.cell_size
        origin = np.asarray(gridmap.origin, dtype=np.float64)
        path = (result.path.astype(np.float64) + 0.5) * scale + origin
        start = list(gridmap.cell_to_world(*result.start))
        goal = list(gridmap.cell_to_world(*result.goal))
        length = float(result.length) * scale
    else:
        path = result.path
        sx, sy = result.start
        gx, gy = result.goal
        start = [int(sx), int(sy)]
        goal = [int(gx), int(gy)]
        length = float(result.length)
    # Positional, in PathAnswer's field order: keywords cost about 0.3 us a reply here.
    return PathAnswer(result.status, path, float(result.cost), length, int(result.expanded), start, goal,
                      result.start_snapped, result.goal_snapped, result.generation,
                      None if not many else -1 if result.goal_index is None else result.goal_index)


def _entry_error(request: PathsRequest, exc: BaseException, index: int | None) -> dict:
    """One entry's error object; ``index`` given: ``at`` where the request gave the entry
    (``PathsRequest.entry_at``)."""
    code, message, at = error_parts(exc)
    if index is not None and code != "internal":
        at = request.entry_at(index, at)
    return error_object(code, message, at)


_MAP_FIELDS = (
    ("name", "name"),
    ("width", "width"),
    ("height", "height"),
    ("cell_size", "cell_size"),
    ("origin", "origin"),
    ("generation", "gen"),
    ("loaded_at", "loaded_at"),
    ("load_ms", "load_ms"),
    ("file", "file"),
    ("walkable_share", "walkable_share"),
    ("last_error", "last_error"),
    ("source", "source"),
    ("tag_names", "tag_names"),
    ("classes", "classes"),
)


def _map_entry(info: dict) -> dict:
    """A registry info dict as a ``maps`` entry: wire names, plain types, and only the
    file's name (the server's directory layout is none of the client's business)."""
    entry = {}
    for key, wire in _MAP_FIELDS:
        value = info.get(key)
        if key == "file" and value is not None:
            value = os.path.basename(str(value))
        elif key == "origin" and value is not None:
            value = [float(value[0]), float(value[1])]
        elif key == "last_error" and value is not None:
            # Load errors name their files by full path; the client sees them relative
            # to the maps folder, like ``file``.
            folder = os.path.dirname(str(info.get("file") or ""))
            value = str(value).replace(folder + os.sep, "") if folder else str(value)
        elif isinstance(value, np.generic):
            value = value.item()
        entry[wire] = value
    return entry
