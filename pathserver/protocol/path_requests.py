"""Validation of ``path`` and ``paths`` requests, the server's commonest: the full parser
(:func:`parse_path`, :func:`parse_paths`) and the fast path a plainly valid ``path`` takes
(:func:`parse_path_fast`), which answers exactly what the full parser would or declines.
"""

from __future__ import annotations

import math

import numpy as np

from pathserver.errors import NonFiniteError, PathserverError, RequestError, TooLargeError
from pathserver.options import AVOID, BY_NAME, GOALS, OPTIONS, PATH_OP, PATHS_OP, PER_REQUEST, SPACE, UNIT_SIZE
from pathserver.options import op_fields, wire_type
from pathserver.protocol import packed as packing
from pathserver.protocol.requests import (
    AS_SENT,
    MAX_BATCH,
    MAX_NAME_LEN,
    WIRE_DEFAULTS,
    PathQuery,
    PathRequest,
    PathsRequest,
    check_fields,
    map_name,
    read_point,
)

_PER_REQUEST = frozenset(PER_REQUEST)
#: The options a PathQuery keeps in ``options`` (find_path's keywords but unit_size).
_OPTION_SET = frozenset(op_fields(PATH_OP)) - {UNIT_SIZE.name, SPACE.name}
_QUERY_FIELDS = ("start", "goal") + op_fields(PATHS_OP)
_PATH_FIELDS = ("id", "op", "map", "start", "goal") + op_fields(PATH_OP) + ("packed",)
_PATHS_FIELDS = ("id", "op", "map", "requests") + op_fields(PATHS_OP) + ("packed", "starts")


def parse_path(rid: int, obj: dict) -> PathRequest:
    check_fields(obj, _PATH_FIELDS, "")
    name = map_name(obj)
    return PathRequest(rid, name, _query(obj, {}, ""), _packed(obj))


def _packed(obj: dict) -> bool:
    value = obj.get("packed")
    if value is not None and type(value) is not bool:
        raise RequestError(f"'packed' must be a bool, got {wire_type(value)}", at="packed")
    return bool(value)


def parse_path_fast(obj: dict, max_depth: int = 8) -> PathRequest | None:
    """The common ``path`` request, checked in one pass with exact-type tests; None when
    anything about ``obj`` is not plainly valid, and then ``parse_request`` (the full
    validator) must decide, so every refusal keeps its code, ``at`` and message.

    Accepts only what ``parse_request`` accepts and returns the same PathRequest
    (``tests/protocol/test_fast_path.py`` compares the two). Rarer valid shapes (a float
    ``unit_size`` such as ``2.0``) are left to the full validator rather than duplicated.

    Whatever this accepts is a map with str keys whose values are scalars or ``[x, y]``
    pairs, nested two levels deep at most, or ``avoid``'s map of arrays of numbers
    (four levels), taken only within ``max_depth`` (the codec's limit): so the server
    skips the codec's depth walk.
    """
    # A missing field is the only way these lookups fail: the keys are str constants.
    try:
        rid = obj["id"]
        op = obj["op"]
        name = obj["map"]
        start = obj["start"]
        goal = obj["goal"]
    except KeyError:
        return None
    if type(rid) is not int or type(op) is not str or op != PATH_OP or type(name) is not str:
        return None
    if not 0 < len(name) <= MAX_NAME_LEN:
        return None
    start = _plain_point(start)
    goal = _plain_point(goal)
    if start is None or goal is None:
        return None
    unit_size = (1, 1)
    space = "grid"
    packed = False
    options = dict(WIRE_DEFAULTS)
    if len(obj) != 5:
        for key, value in obj.items():
            if value is None:
                # nil means the default, for every optional field (not for the five above).
                if key in FAST_OPTIONAL:
                    continue
                return None
            check = FAST_CHECKS.get(key)
            if check is None:
                if key in _FAST_REQUIRED:
                    continue
                if key == "packed":
                    if type(value) is not bool:
                        return None
                    packed = value
                    continue
                if key != AVOID.name or max_depth < 4:
                    return None
                # Other units' cells, a game's common extra: checked by C loops over
                # the arrays (the option's own check), kept as its Avoid like _query keeps it.
                try:
                    options[key] = AVOID.check(value, "")
                except PathserverError:
                    return None
                continue
            if check is _SPACE:
                if type(value) is not str or value not in _SPACE:
                    return None
                space = value
            elif check is _UNIT:
                unit_size = _plain_unit_size(value)
                if unit_size is None:
                    return None
            elif check is bool:
                if type(value) is not bool:
                    return None
                options[key] = value
            elif type(check) is int:  # an int option: its minimum
                if type(value) is not int or value < check:
                    return None
                options[key] = value
            elif type(check) is float:  # a number option: its minimum
                kind = type(value)
                if not (kind is int or (kind is float and _isfinite(value))) or value < check:
                    return None
                options[key] = float(value)
            else:  # an enum: the set of its values
                if type(value) is not str or value not in check:
                    return None
                options[key] = value
    return PathRequest(rid, name, PathQuery(start, goal, unit_size, space, options), packed)


def _plain_point(value) -> tuple | None:
    """``[x, y]`` of ints or finite floats as a tuple, else None."""
    if type(value) is not list or len(value) != 2:
        return None
    x, y = value
    kind = type(x)
    if kind is not int and (kind is not float or not _isfinite(x)):
        return None
    kind = type(y)
    if kind is not int and (kind is not float or not _isfinite(y)):
        return None
    return (x, y)


def _plain_unit_size(value) -> tuple | None:
    """An int ``k >= 1`` or ``[w, h]`` of ints >= 1 as ``(w, h)``, else None."""
    if type(value) is int:
        return (value, value) if value >= 1 else None
    if type(value) is list and len(value) == 2:
        w, h = value
        if type(w) is int and type(h) is int and w >= 1 and h >= 1:
            return (w, h)
    return None


_isfinite = math.isfinite
_FAST_REQUIRED = frozenset(("id", "op", "map", "start", "goal"))
FAST_OPTIONAL = frozenset(_PATH_FIELDS) - _FAST_REQUIRED
_UNIT = object()


def _fast_check(option):
    """How the fast path checks an option: a set of allowed strings, ``bool``, the int
    minimum of an int, the float minimum of a number, or the unit size marker."""
    if option.kind == "unit_size":
        return _UNIT
    if option.choices:
        return frozenset(option.choices)
    if option.kind == "bool":
        return bool
    return int(option.min) if option.kind == "int" else float(option.min)


# The options of PER_REQUEST (arrays, maps) are the full validator's.
FAST_CHECKS = {option.name: _fast_check(option) for option in OPTIONS
                if PATH_OP in option.ops and option.name not in _PER_REQUEST}
_SPACE = FAST_CHECKS[SPACE.name]


def parse_paths(rid: int, obj: dict) -> PathsRequest:
    check_fields(obj, _PATHS_FIELDS, "")
    name = map_name(obj)
    packed = _packed(obj)
    columns = obj.get("starts") is not None
    # Batch-level options are defaults for every entry; validate them once, up front. With
    # columns, ``goals`` is the column of goals, not the option.
    defaults = {key: obj[key] for key in op_fields(PATHS_OP) if key in obj and not (columns and key == GOALS.name)}
    if type(defaults.get(GOALS.name)) is bytes:
        raise RequestError("'goals' as a bin (one goal an entry) goes with 'starts', in place of 'requests'",
                           at=GOALS.name)
    probe = {"start": [0, 0], **defaults}
    if probe.get(GOALS.name) is None:
        probe["goal"] = [0, 0]
    shared = _query(probe, {}, "")
    if columns:
        return PathsRequest(rid, name, _columns(obj, shared), packed, shared.space, True)
    if "requests" not in obj:
        raise RequestError("missing field 'requests' (a list of {start, goal, ...}; or 'starts' and 'goals' as "
                           "bins of pairs)", at="requests")
    entries = obj["requests"]
    if type(entries) is not list:
        raise RequestError(f"'requests' must be an array, got {wire_type(entries)}", at="requests")
    if len(entries) > MAX_BATCH:
        raise TooLargeError(f"{len(entries)} entries in one batch; at most {MAX_BATCH}", at="requests")
    items = []
    for i, entry in enumerate(entries):
        prefix = f"requests[{i}]"
        try:
            if type(entry) is not dict:
                raise RequestError(f"each entry must be a map {{start, goal, ...}}, got {wire_type(entry)}", at=prefix)
            check_fields(entry, _QUERY_FIELDS, prefix + ".")
            query = _query(entry, defaults, prefix + ".")
            if packed and query.space != shared.space:
                # One packed reply holds one space's points.
                raise RequestError(f"a packed reply holds the batch's space's points ({shared.space!r}); this entry "
                                   f"asks for {query.space!r}: set 'space' on the batch", at=prefix + ".space")
            items.append(query)
        except RequestError as exc:
            items.append(exc)
    return PathsRequest(rid, name, tuple(items), packed, shared.space)


def _columns(obj: dict, shared: PathQuery) -> tuple:
    """The entries of a batch sent as ``starts`` and ``goals`` bins of pairs (int32 in grid
    space, float32 in world space), each with the batch's unit size and options; a
    non-finite point fails its own entry, at ``starts[i]`` / ``goals[i]``."""
    if obj.get("requests") is not None:
        raise RequestError("pass 'requests' or 'starts' and 'goals', not both", at="requests")
    space = shared.space
    kind = f"a bin of {packing.point_dtype(space).name} x, y pairs ({space} space)"
    ends = []
    for key in ("starts", GOALS.name):
        value = obj.get(key)
        if value is None:
            raise RequestError(f"missing field '{key}' ({kind}, one an entry)", at=key)
        if type(value) is not bytes:
            raise RequestError(f"with 'starts', '{key}' must be {kind}, got {wire_type(value)}", at=key)
        ends.append(packing.points_from_bin(value, space, key))
    starts, goals = ends
    if len(starts) != len(goals):
        raise RequestError(f"{len(starts)} starts and {len(goals)} goals: one goal a start", at=GOALS.name)
    if len(starts) > MAX_BATCH:
        raise TooLargeError(f"{len(starts)} entries in one batch; at most {MAX_BATCH}", at="starts")
    unit_size, options = shared.unit_size, shared.options
    items = [PathQuery(start, goal, unit_size, space, options)
             for start, goal in zip(map(tuple, starts.tolist()), map(tuple, goals.tolist()))]
    if space == "world":
        finite = np.isfinite(starts).all(axis=1) & np.isfinite(goals).all(axis=1)
        for i in np.flatnonzero(~finite).tolist():
            key = "starts" if not np.isfinite(starts[i]).all() else GOALS.name
            point = (starts if key == "starts" else goals)[i].tolist()
            items[i] = NonFiniteError(f"{key}[{i}] must be finite, got {point}", at=f"{key}[{i}]")
    return tuple(items)



def _query(obj: dict, defaults: dict, prefix: str) -> PathQuery:
    """A PathQuery from ``obj``'s fields, falling back to ``defaults`` (a batch's own
    fields, already validated once)."""
    start = read_point(obj, "start", prefix)
    size_source = obj if obj.get(UNIT_SIZE.name) is not None else defaults
    unit_size = UNIT_SIZE.check(size_source.get(UNIT_SIZE.name), prefix) or (1, 1)
    space_source = obj if obj.get(SPACE.name) is not None else defaults
    space = SPACE.check(space_source.get(SPACE.name), prefix) or "grid"
    options = dict(WIRE_DEFAULTS)
    # Entry fields override the batch's; nil means "the default" (the batch's, else the wire's).
    for source in (defaults, obj):
        for key in source:
            if key in _OPTION_SET:
                option = BY_NAME[key]
                value = option.check(source[key], prefix)
                if value is not None:
                    options[key] = source[key] if option.kind in AS_SENT else value
    # One goal, or goals (the entry's own goal wins over a batch's goals).
    if obj.get("goal") is not None:
        if obj.get(GOALS.name) is not None:
            raise RequestError("pass 'goal' or 'goals', not both", at=prefix + GOALS.name)
        options.pop(GOALS.name, None)
        goal = read_point(obj, "goal", prefix)
    elif GOALS.name in options:
        goal = None
    else:
        raise RequestError("missing field 'goal' ([x, y]; or 'goals', [[x, y], ...])", at=prefix + "goal")
    return PathQuery(start, goal, unit_size, space, options)


