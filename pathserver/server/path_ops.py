"""The ``path`` and ``paths`` ops: a request's query -> ``find_path`` / ``find_paths`` ->
the reply. ``run_many`` answers pipelined ``path`` requests of equal options in one
``find_paths`` call; ``run_bounded`` answers a short trip on the socket loop or declines."""

from __future__ import annotations

from pathserver.core import wire as wire_kernels
from pathserver.errors import PathserverError
from pathserver.grid.search import find_path, find_path_within, find_paths
from pathserver.options import AVOID, GOALS, PER_REQUEST
from pathserver.protocol import packed as packing
from pathserver.protocol.replies import PathAnswer, PathReplies, batch_error, error_object, ok_reply
from pathserver.protocol.requests import PathQuery, PathRequest, PathsRequest
from pathserver.server.failures import error_parts, error_reply_bytes
from pathserver.server.spaces import endpoint, grid_points, path_answer

_PER_REQUEST = frozenset(PER_REQUEST)

#: Path replies; long paths' points are encoded by the compiled kernels, without the GIL.
_PATH_REPLIES = PathReplies(wire_kernels)


def handle_path(request: PathRequest, registry) -> dict:
    gridmap = registry.get(request.map)
    query = request.query
    unit, start, goal, options = _endpoints(gridmap, query)
    result = find_path(gridmap, start, goal, unit, **options)
    return _PATH_REPLIES.reply(request.id, path_answer(gridmap, query.space, result, query.goal is None),
                               request.packed)


def run_many(requests: list, registry) -> list[tuple[bytes, str | None]]:
    """Answer ``path`` requests for one map with equal options in one ``find_paths``
    call (slower searches spread over all cores); each gets the reply :func:`run` would
    give it, and all are computed on one map generation. Never raises."""
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
                    answer = path_answer(gridmap, query.space, result, query.goal is None)
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

    The search is the worker's own, stopped at the budget (``grid.search.find_path_within``),
    so an answer found here is the one the worker would give.
    """
    try:
        gridmap = registry.get(request.map)
        query = request.query
        per_request = query.options.keys() & _PER_REQUEST
        if query.goal is None or per_request and not _inline_avoid(query.options, per_request) or gridmap.linked:
            return None  # many goals, a unit class, avoided rectangles or many cells, links: a worker's
        unit, start, goal, options = _endpoints(gridmap, query)
        if abs(start[0] - goal[0]) > max_distance or abs(start[1] - goal[1]) > max_distance:
            return None
        # The worker's own search, given up past the budget.
        result = find_path_within(gridmap, start, goal, unit, budget, **options)
        if result is None:
            return None
        answer = path_answer(gridmap, query.space, result, query.goal is None)
        return _PATH_REPLIES.encode(request.id, answer, request.packed), None
    except Exception as exc:
        return error_reply_bytes(request.id, exc)


def handle_paths(request: PathsRequest, registry) -> dict:
    """Entries with equal options share one ``find_paths`` call (slower searches over all cores);
    a failing entry fails only its own slot, with ``at`` where the request gave it
    (``requests[i].``, or ``starts[i]`` / ``goals[i]``). A packed request gets the packed
    columns (:func:`pathserver.protocol.packed.batch_fields`) in place of ``results``."""
    gridmap = registry.get(request.map)
    # One outcome an entry: a PathAnswer, or the error object of an entry that failed.
    outcomes: list = [None] * len(request.items)
    groups: dict[tuple, list] = {}
    shared_key = None  # columns: every entry shares the batch's unit size and options
    for i, item in enumerate(request.items):
        if isinstance(item, PathQuery):
            # Endpoints first: a failing entry must not leave an empty group behind.
            try:
                endpoints = _endpoints(gridmap, item)
            except Exception as exc:
                outcomes[i] = _entry_error(request, exc, i)
            else:
                if not request.columns:
                    key = item.group_key()
                elif shared_key is None:
                    key = shared_key = item.group_key()
                groups.setdefault(key, []).append((i, *endpoints))
        else:
            outcomes[i] = _entry_error(request, item, None)
    # Packed grid cells are the PathResult's own: batch_fields reads its status, cost and path.
    as_found = request.packed and request.space == "grid" and not gridmap.linked
    for entries in groups.values():
        query = request.items[entries[0][0]]
        answers = _search(gridmap, entries)
        for (i, *_), answer in zip(entries, answers):
            if isinstance(answer, BaseException):
                outcomes[i] = _entry_error(request, answer, i)
            elif as_found and query.goal is not None:
                outcomes[i] = answer
            else:
                outcomes[i] = path_answer(gridmap, query.space, answer, query.goal is None)
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
    if len(per_request) != 1 or AVOID.name not in per_request:
        return False
    avoid = options[AVOID.name]
    return not len(avoid.rects) and len(avoid.cells) <= INLINE_AVOID_CELLS


def _search(gridmap, entries: list) -> list:
    """The PathResults (or PathserverErrors) of ``entries``, ``(i, unit, start, goal,
    options)`` of equal unit and options: one ``find_paths`` call (slower searches over all cores),
    or with ``goals`` (which ``find_paths`` has no slot for) one ``find_path`` each."""
    _, unit, _, _, options = entries[0]
    if GOALS.name not in options:
        return find_paths(gridmap, [entry[2] for entry in entries], [entry[3] for entry in entries], unit,
                          errors="return", **options)
    results = []
    for _, _, start, goal, _ in entries:
        try:
            results.append(find_path(gridmap, start, goal, unit, **options))
        except PathserverError as exc:
            results.append(exc)
    return results


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
    start, goal = query.start, query.goal
    if query.space == "grid" and gridmap.floors == 1 and len(start) == 2 and (goal is None or len(goal) == 2) \
            and GOALS.name not in options:
        return unit, start, goal, options
    start = endpoint(gridmap, start, query.space, "start")
    goal = None if goal is None else endpoint(gridmap, goal, query.space, "goal")
    if GOALS.name in options:
        options = {**options, GOALS.name: grid_points(gridmap, options[GOALS.name], query.space, GOALS.name)}
    return unit, start, goal, options


def _entry_error(request: PathsRequest, exc: BaseException, index: int | None) -> dict:
    """One entry's error object; ``index`` given: ``at`` where the request gave the entry
    (``PathsRequest.entry_at``)."""
    code, message, at = error_parts(exc)
    if index is not None and code != "internal":
        at = request.entry_at(index, at)
    return error_object(code, message, at)

