"""Validation of decoded requests into typed request objects.

``parse_request(obj)`` takes the dict that ``codec.decode_request`` returned and either
returns one of the request classes below or raises a ``RequestError`` subclass whose
``at`` is the offending field's path (``"start[0]"``, ``"requests[3].goal"``). Every check
that needs no map happens here, once; the handlers only check what needs the map (bounds,
unit size against the map's size, blocked cells) and trust the rest.

Unknown fields are refused (``invalid_request`` naming the field): a misspelt option
would otherwise be ignored without a word. Numbers may be ints or floats wherever a
coordinate is expected (engines often only have floats); a non-finite one is
``non_finite``. The options (``unit_size``, ``space``, ``smooth``, ...) and their checks
are defined once, in :mod:`pathserver.options`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pathserver.errors import NonFiniteError, PathserverError, RequestError, TooLargeError, UnknownOpError
from pathserver.options import BY_NAME, OPTIONS, PER_REQUEST, number, number_rows, op_fields, quoted
from pathserver.options import wire_defaults, wire_type
from pathserver import arrays
from pathserver.protocol import packed as packing
from pathserver.protocol.cells import MapCells, check_side

#: Wire defaults that differ from ``find_path``'s Python defaults (``smooth="none"`` there).
WIRE_DEFAULTS = wire_defaults()

#: Entries one ``paths`` request may hold.
MAX_BATCH = 4096
#: Longest map name accepted.
MAX_NAME_LEN = 256
#: Units one ``next_steps`` request may steer.
MAX_POSITIONS = 65536


# PathQuery and PathRequest are not frozen, unlike the other requests: they are built
# once per ``path`` message on the server's hottest path, where frozen's __init__
# (object.__setattr__ per field) cost more than a microsecond for the pair. Nothing
# mutates them after parsing, and they are never hashed (``options`` is a dict).
@dataclass(slots=True)
class PathQuery:
    """One start/goal pair with its options. Treat as read-only.

    start, goal: ``(x, y)`` numbers as sent (grid cells or world units, per ``space``).
    unit_size: ``(w, h)`` ints >= 1 (checked against the map's size by the handler).
    options: keyword arguments for ``find_path``, wire defaults filled in.
    """

    start: tuple
    goal: tuple
    unit_size: tuple
    space: str
    options: dict

    def group_key(self) -> tuple:
        """Queries with equal keys can go to one ``find_paths`` call, while both are alive.
        A per-request option's array or map counts by identity: a batch's own value, shared
        by its entries, groups them; walking 200 avoided cells to compare them cost more
        than the search."""
        items = tuple(sorted(self.options.items()))
        if self.options.keys() & _PER_REQUEST:
            items = tuple((key, id(value)) if key in _PER_REQUEST else (key, value) for key, value in items)
        return (self.unit_size, self.space, items)


_PER_REQUEST = frozenset(PER_REQUEST)


@dataclass(slots=True)
class PathRequest:
    """A ``path`` request. Treat as read-only (see PathQuery). packed: the reply's ``path``
    goes as one bin (:mod:`pathserver.protocol.packed`)."""

    id: int
    map: str
    query: PathQuery
    packed: bool = False


@dataclass(frozen=True, slots=True)
class PathsRequest:
    """``items`` holds a PathQuery per entry, or the RequestError that entry failed with
    (its ``at`` already prefixed with ``requests[i].``, or ``starts[i]``): one bad entry
    fails only itself. packed: the reply carries the packed columns in place of
    ``results``, every entry's points in ``space`` (the batch's). columns: the entries came
    as the ``starts`` and ``goals`` bins rather than ``requests``."""

    id: int
    map: str
    items: tuple
    packed: bool = False
    space: str = "grid"
    columns: bool = False

    def entry_at(self, index: int, at: str | None) -> str | None:
        """Where entry ``index``'s error whose own ``at`` is ``at`` points in the request:
        ``requests[i].at``; for columns, ``starts[i]`` / ``goals[i]`` for its endpoints and
        the batch's own field for the others."""
        if not self.columns:
            return f"requests[{index}]" + (f".{at}" if at else "")
        for name in ("start", "goal"):
            if at == name or at is not None and at.startswith(name + "["):
                return f"{name}s[{index}]"
        return at


@dataclass(frozen=True, slots=True)
class UpdateRequest:
    """rects: ``(x, y, w, h)`` tuples; cells: ``(x, y)`` tuples; numbers in ``space`` units."""

    id: int
    map: str
    rects: tuple
    cells: tuple
    solid: bool | None
    cost: float | None
    space: str
    if_gen: int | None = None


@dataclass(frozen=True, slots=True, eq=False)
class PutMapRequest:
    """A ``put_map``: the map's layers, checked and as arrays (``cells``), and the bins
    they were read from (``wire``: ``cells`` and whichever of ``costs``, ``heights``,
    ``tags`` came; passed on as they are behind a broker)."""

    id: int
    map: str
    width: int
    height: int
    cells: MapCells
    origin: tuple
    cell_size: float
    wire: dict


@dataclass(frozen=True, slots=True)
class UploadBody:
    """A body over the default limits whose top-level ``op`` is ``put_map``: read (with
    ``codec.UPLOAD_LIMITS``) and checked on a worker thread rather than on the socket
    loop. ``id``: the request id when the body starts with it (``codec.peek_id``)."""

    id: int | None
    body: bytes


@dataclass(frozen=True, slots=True)
class DropMapRequest:
    id: int
    map: str


@dataclass(frozen=True, slots=True)
class GetMapRequest:
    """region: ``(x, y, w, h)`` grid cells with ``w, h >= 1``, or None for the whole map
    (the handler checks it lies inside the map)."""

    id: int
    map: str
    region: tuple | None


@dataclass(frozen=True, slots=True, eq=False)
class QueryRequest:
    """A ``reachable``, ``field``, ``next_steps`` or ``check_block`` request.

    args: the keyword arguments of the op's Python function (``options.FUNCTIONS``) the
    request gave, each checked by its option's rule and passed on as sent (nil ones left
    out, ``unit_size`` always there); the points (``start``, ``goals``, ``positions``,
    ``points``) and ``check_block``'s ``cells`` / ``rects`` in ``space`` units, for the
    handler to convert. ``positions`` is a float64 (n, 2) array. packed: ``positions``
    came as a bin, so the reply's ``steps`` go back as one.
    """

    id: int
    op: str
    map: str
    space: str
    args: dict
    packed: bool = False


@dataclass(frozen=True, slots=True)
class MapsRequest:
    id: int


@dataclass(frozen=True, slots=True)
class PingRequest:
    id: int


@dataclass(frozen=True, slots=True)
class StatsRequest:
    id: int


@dataclass(frozen=True, slots=True)
class After:
    """Any request sent with ``"after": SEQ``: answer ``request`` once the server has
    applied the shared state's entry ``seq`` (``serve --state``; see docs/scaling.md).
    ``seq``: the entry's stream id as ``(milliseconds, sequence)``, which orders as the
    ids do; ``text``: the id as sent."""

    id: int
    seq: tuple
    text: str
    request: object


#: Longest ``after`` accepted: two 64-bit numbers and a dash.
MAX_SEQ_LEN = 41


def parse_seq(value, at: str = "after") -> tuple:
    """A stream entry id as a reply's ``seq`` carries it (``"1718000000000-3"``) ->
    ``(1718000000000, 3)``; RequestError (at ``at``) for anything else."""
    if type(value) is not str:
        raise RequestError(f"{quoted(at)} must be a string, the 'seq' of an edit's reply, got {wire_type(value)}",
                           at=at)
    ms, dash, number = value.partition("-")
    if len(value) > MAX_SEQ_LEN or not dash or not ms.isdigit() or not number.isdigit() \
            or not ms.isascii() or not number.isascii():
        raise RequestError(f"{quoted(at)} must be the 'seq' of an edit's reply, such as \"1718000000000-0\"; "
                           f"got {value[:48]!r}", at=at)
    return int(ms), int(number)


def request_id(obj):
    """The ``id`` a reply to ``obj`` should carry: the request's int id, else None."""
    if isinstance(obj, dict):
        value = obj.get("id")
        if type(value) is int:
            return value
    return None


def parse_request(obj: dict, parsers: dict):
    """A decoded request map -> a typed request, by ``parsers[op](id, obj)`` (the server's
    table of ops, ``pathserver.server.ops``). Raises RequestError (with ``at``)."""
    if "id" not in obj:
        raise RequestError("missing field 'id' (an int the reply will echo)", at="id")
    rid = obj["id"]
    if type(rid) is not int:
        raise RequestError(f"'id' must be an int, got {wire_type(rid)}", at="id")
    if "op" not in obj:
        raise RequestError("missing field 'op'", at="op")
    op = obj["op"]
    if type(op) is not str:
        raise RequestError(f"'op' must be a string, got {wire_type(op)}", at="op")
    parser = parsers.get(op)
    if parser is None:
        raise UnknownOpError(f"unknown op {quoted(op)}; expected one of {', '.join(parsers)}", at="op")
    return parser(rid, obj)


# -- ops -----------------------------------------------------------------------------

_UNIT_SIZE = BY_NAME["unit_size"]
_SPACE_OPTION = BY_NAME["space"]
_AVOID = BY_NAME["avoid"]
#: The options a PathQuery keeps in ``options`` (find_path's keywords but unit_size).
_OPTION_SET = frozenset(op_fields("path")) - {"unit_size", "space"}
_QUERY_FIELDS = ("start", "goal") + op_fields("paths")
_PATH_FIELDS = ("id", "op", "map", "start", "goal") + op_fields("path") + ("packed",)
_PATHS_FIELDS = ("id", "op", "map", "requests") + op_fields("paths") + ("packed", "starts")
_UPDATE_FIELDS = ("id", "op", "map", "rects", "cells", "solid", "cost") + op_fields("update") + ("if_gen",)
_PUT_MAP_FIELDS = ("id", "op", "map", "width", "height", "cells", "costs", "heights", "origin", "cell_size", "tags",
                   "tag_names", "classes")
_DROP_MAP_FIELDS = ("id", "op", "map")
_GET_MAP_FIELDS = ("id", "op", "map", "region")
_BARE_FIELDS = ("id", "op")
#: Options whose values the Python functions take as sent (arrays, maps), after the check;
#: ``avoid`` goes on as the check's :class:`~pathserver.options.Avoid`.
_AS_SENT = frozenset(("points", "traversal"))


def parse_path(rid: int, obj: dict) -> PathRequest:
    _check_fields(obj, _PATH_FIELDS, "")
    name = _map_name(obj)
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
    if type(rid) is not int or type(op) is not str or op != "path" or type(name) is not str:
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
                if key in _FAST_OPTIONAL:
                    continue
                return None
            check = _FAST_CHECKS.get(key)
            if check is None:
                if key in _FAST_REQUIRED:
                    continue
                if key == "packed":
                    if type(value) is not bool:
                        return None
                    packed = value
                    continue
                if key != "avoid" or max_depth < 4:
                    return None
                # Other units' cells, a game's common extra: checked by C loops over
                # the arrays (the option's own check), kept as its Avoid like _query keeps it.
                try:
                    options[key] = _AVOID.check(value, "")
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
_FAST_OPTIONAL = frozenset(_PATH_FIELDS) - _FAST_REQUIRED
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
_FAST_CHECKS = {option.name: _fast_check(option) for option in OPTIONS
                if "path" in option.ops and option.name not in _PER_REQUEST}
_SPACE = _FAST_CHECKS["space"]


def parse_paths(rid: int, obj: dict) -> PathsRequest:
    _check_fields(obj, _PATHS_FIELDS, "")
    name = _map_name(obj)
    packed = _packed(obj)
    columns = obj.get("starts") is not None
    # Batch-level options are defaults for every entry; validate them once, up front. With
    # columns, ``goals`` is the column of goals, not the option.
    defaults = {key: obj[key] for key in op_fields("paths") if key in obj and not (columns and key == "goals")}
    if type(defaults.get("goals")) is bytes:
        raise RequestError("'goals' as a bin (one goal an entry) goes with 'starts', in place of 'requests'",
                           at="goals")
    probe = {"start": [0, 0], **defaults}
    if probe.get("goals") is None:
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
            _check_fields(entry, _QUERY_FIELDS, prefix + ".")
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
    for key in ("starts", "goals"):
        value = obj.get(key)
        if value is None:
            raise RequestError(f"missing field '{key}' ({kind}, one an entry)", at=key)
        if type(value) is not bytes:
            raise RequestError(f"with 'starts', '{key}' must be {kind}, got {wire_type(value)}", at=key)
        ends.append(packing.points_from_bin(value, space, key))
    starts, goals = ends
    if len(starts) != len(goals):
        raise RequestError(f"{len(starts)} starts and {len(goals)} goals: one goal a start", at="goals")
    if len(starts) > MAX_BATCH:
        raise TooLargeError(f"{len(starts)} entries in one batch; at most {MAX_BATCH}", at="starts")
    unit_size, options = shared.unit_size, shared.options
    items = [PathQuery(start, goal, unit_size, space, options)
             for start, goal in zip(map(tuple, starts.tolist()), map(tuple, goals.tolist()))]
    if space == "world":
        finite = np.isfinite(starts).all(axis=1) & np.isfinite(goals).all(axis=1)
        for i in np.flatnonzero(~finite).tolist():
            key = "starts" if not np.isfinite(starts[i]).all() else "goals"
            point = (starts if key == "starts" else goals)[i].tolist()
            items[i] = NonFiniteError(f"{key}[{i}] must be finite, got {point}", at=f"{key}[{i}]")
    return tuple(items)


def parse_update(rid: int, obj: dict) -> UpdateRequest:
    _check_fields(obj, _UPDATE_FIELDS, "")
    name = _map_name(obj)
    space = _SPACE_OPTION.check(obj.get("space")) or "grid"
    rects = tuple(_number_lists(obj, "rects", 4))
    cells = tuple(_number_lists(obj, "cells", 2))
    if "rects" not in obj and "cells" not in obj:
        raise RequestError("an update needs 'rects' ([[x, y, w, h], ...]) or 'cells' ([[x, y], ...])", at="rects")
    for i, (_, _, w, h) in enumerate(rects):
        if w <= 0 or h <= 0:
            raise RequestError(f"rectangle width and height must be > 0, got {w} x {h}", at=f"rects[{i}]")
    solid = obj.get("solid")
    if solid is not None and type(solid) is not bool:
        raise RequestError(f"'solid' must be a bool, got {wire_type(solid)}", at="solid")
    cost = obj.get("cost")
    if cost is not None:
        number(cost, "cost", "cost", 1.0)
    if solid is None and cost is None:
        raise RequestError("an update needs 'solid' (bool) or 'cost' (number >= 1)", at="solid")
    if_gen = obj.get("if_gen")
    if if_gen is not None and type(if_gen) is not int:
        raise RequestError(f"'if_gen' must be an int (a generation from a reply), got {wire_type(if_gen)}",
                           at="if_gen")
    return UpdateRequest(rid, name, rects, cells, solid, None if cost is None else float(cost), space, if_gen)


def parse_put_map(rid: int, obj: dict) -> PutMapRequest:
    _check_fields(obj, _PUT_MAP_FIELDS, "")
    name = _map_name(obj)
    width = check_side(obj.get("width"), "width")
    height = check_side(obj.get("height"), "height")
    wire = {key: obj[key] for key in ("cells", "costs", "heights", "tags", "tag_names", "classes")
            if obj.get(key) is not None}
    for key in ("tag_names", "classes"):
        if key in wire and type(wire[key]) is not dict:
            raise RequestError(f"'{key}' must be a map, got {wire_type(wire[key])}", at=key)
    # What the names and classes hold is GridMap's to check (the handler's build).
    cells = MapCells.from_wire(width, height, obj.get("cells"), wire.get("costs"), wire.get("heights"),
                               wire.get("tags"), tag_names=wire.get("tag_names"), classes=wire.get("classes"))
    origin = (0.0, 0.0)
    if obj.get("origin") is not None:
        origin = tuple(float(v) for v in _numbers(obj["origin"], 2, "origin", "'origin' must be [x, y]"))
    cell_size = obj.get("cell_size")
    if cell_size is None:
        cell_size = 1.0
    else:
        if not _is_number(cell_size):
            raise RequestError(f"'cell_size' must be a number > 0, got {wire_type(cell_size)}", at="cell_size")
        if not math.isfinite(cell_size):
            raise NonFiniteError(f"'cell_size' must be finite, got {cell_size}", at="cell_size")
        if cell_size <= 0:
            raise RequestError(f"'cell_size' must be > 0, got {cell_size}", at="cell_size")
        cell_size = float(cell_size)
    return PutMapRequest(rid, name, width, height, cells, origin, cell_size, wire)


def parse_drop_map(rid: int, obj: dict) -> DropMapRequest:
    _check_fields(obj, _DROP_MAP_FIELDS, "")
    return DropMapRequest(rid, _map_name(obj))


def parse_get_map(rid: int, obj: dict) -> GetMapRequest:
    _check_fields(obj, _GET_MAP_FIELDS, "")
    name = _map_name(obj)
    region = obj.get("region")
    if region is not None:
        region = _numbers(region, 4, "region", "'region' must be [x, y, w, h] of grid cells")
        for i, value in enumerate(region):
            if type(value) is float:
                if not value.is_integer():
                    raise RequestError(f"'region' must be whole cells, got {value}", at=f"region[{i}]")
        region = tuple(int(value) for value in region)
        if region[2] < 1 or region[3] < 1:
            raise RequestError(f"region width and height must be >= 1, got {region[2]} x {region[3]}", at="region")
    return GetMapRequest(rid, name, region)


def query_parser(op: str, own: tuple, needed: tuple, read_own=None):
    """The parser of query op ``op``: its ``own`` fields (those in ``needed`` required,
    as are the options among them), read by ``read_own(obj, args) -> packed``, then its
    options (``options.op_fields(op)``), each checked by its rule."""
    allowed = ("id", "op", "map", *own) + op_fields(op)

    def parse(rid: int, obj: dict) -> QueryRequest:
        _check_fields(obj, allowed, "")
        name = _map_name(obj)
        for key in needed:
            if obj.get(key) is None:
                raise RequestError(f"missing field '{key}' for op '{op}'", at=key)
        space = _SPACE_OPTION.check(obj.get("space")) or "grid"
        args = {"unit_size": 1}
        for key in op_fields(op):
            value = obj.get(key)
            if value is None or key == "space":
                continue
            option = BY_NAME[key]
            checked = option.check(value)
            args[key] = value if option.kind in _AS_SENT else checked
        packed = False if read_own is None else read_own(obj, args)
        return QueryRequest(rid, op, name, space, args, packed)

    return parse


def read_start(obj: dict, args: dict) -> bool:
    """``reachable``'s own field: ``start``."""
    args["start"] = _point(obj, "start", "")
    return False


def read_positions(obj: dict, args: dict) -> bool:
    """``next_steps``' own field: ``positions``; packed when they came as a bin."""
    args["positions"], packed = _positions(obj["positions"])
    return packed


def read_placement(obj: dict, args: dict) -> bool:
    """``check_block``'s own fields: ``points``, and the ``cells`` / ``rects`` placed."""
    args["points"] = _check_points(obj["points"])
    rects = tuple(_number_lists(obj, "rects", 4))
    for i, (_, _, w, h) in enumerate(rects):
        if w <= 0 or h <= 0:
            raise RequestError(f"rectangle width and height must be > 0, got {w} x {h}", at=f"rects[{i}]")
    args["rects"] = rects
    args["cells"] = tuple(_number_lists(obj, "cells", 2))
    if not rects and not args["cells"]:
        raise RequestError("a check_block needs 'rects' ([[x, y, w, h], ...]) or 'cells' ([[x, y], ...]): "
                           "what would be placed", at="rects")
    return False


def _check_points(value) -> list:
    """check_block's ``points``: as many ``[x, y]`` as ``goals`` may hold."""
    points = number_rows(value, 2, "points", "[x, y]")
    limit = BY_NAME["goals"].max
    if len(points) > limit:
        raise TooLargeError(f"{len(points)} points; at most {limit}", at="points")
    return points


def _positions(value) -> tuple[np.ndarray, bool]:
    """next_steps' ``positions``, a bin of little-endian float32 ``x, y`` pairs or an array
    of ``[x, y]``, as float64 (n, 2) and whether it came as a bin."""
    if type(value) is bytes:
        xy = arrays.pairs(value, arrays.FLOAT32, "positions").astype(np.float64)
        packed = True
    else:
        rows = number_rows(value, 2, "positions", "[x, y]")
        xy = np.array(rows, dtype=np.float64).reshape(-1, 2)
        packed = False
    if len(xy) > MAX_POSITIONS:
        raise TooLargeError(f"{len(xy)} positions; at most {MAX_POSITIONS}", at="positions")
    finite = np.isfinite(xy).all(axis=1)
    if not finite.all():
        i = int(np.argmin(finite))
        raise NonFiniteError(f"positions[{i}] must be finite, got {xy[i].tolist()}", at=f"positions[{i}]")
    return xy, packed


def parse_bare(cls):
    """The parser of an op with no fields but ``id`` and ``op`` (``maps``, ``ping``, ``stats``)."""

    def parse(rid: int, obj: dict):
        _check_fields(obj, _BARE_FIELDS, "")
        return cls(rid)

    return parse


# -- fields --------------------------------------------------------------------------


def _query(obj: dict, defaults: dict, prefix: str) -> PathQuery:
    """A PathQuery from ``obj``'s fields, falling back to ``defaults`` (a batch's own
    fields, already validated once)."""
    start = _point(obj, "start", prefix)
    size_source = obj if obj.get("unit_size") is not None else defaults
    unit_size = _UNIT_SIZE.check(size_source.get("unit_size"), prefix) or (1, 1)
    space_source = obj if obj.get("space") is not None else defaults
    space = _SPACE_OPTION.check(space_source.get("space"), prefix) or "grid"
    options = dict(WIRE_DEFAULTS)
    # Entry fields override the batch's; nil means "the default" (the batch's, else the wire's).
    for source in (defaults, obj):
        for key in source:
            if key in _OPTION_SET:
                option = BY_NAME[key]
                value = option.check(source[key], prefix)
                if value is not None:
                    options[key] = source[key] if option.kind in _AS_SENT else value
    # One goal, or goals (the entry's own goal wins over a batch's goals).
    if obj.get("goal") is not None:
        if obj.get("goals") is not None:
            raise RequestError("pass 'goal' or 'goals', not both", at=prefix + "goals")
        options.pop("goals", None)
        goal = _point(obj, "goal", prefix)
    elif "goals" in options:
        goal = None
    else:
        raise RequestError("missing field 'goal' ([x, y]; or 'goals', [[x, y], ...])", at=prefix + "goal")
    return PathQuery(start, goal, unit_size, space, options)


def _check_fields(obj: dict, allowed: tuple, prefix: str) -> None:
    for key in obj:
        if key not in allowed:
            op = obj.get("op")
            where = f"op '{op}'" if prefix == "" and isinstance(op, str) else "a batch entry"
            raise RequestError(
                f"unknown field {quoted(key)} for {where}; accepted: {', '.join(allowed)}",
                at=prefix + (key if isinstance(key, str) else "?"),
            )


def _map_name(obj: dict) -> str:
    if "map" not in obj:
        raise RequestError("missing field 'map' (a map name, see op 'maps')", at="map")
    name = obj["map"]
    if type(name) is not str:
        raise RequestError(f"'map' must be a string, got {wire_type(name)}", at="map")
    if not name or len(name) > MAX_NAME_LEN:
        raise RequestError(f"'map' must be 1 to {MAX_NAME_LEN} characters", at="map")
    return name


def _is_number(value) -> bool:
    return type(value) is int or type(value) is float


def _point(obj: dict, key: str, prefix: str) -> tuple:
    at = prefix + key
    if key not in obj:
        raise RequestError(f"missing field '{key}' ([x, y])", at=at)
    return _numbers(obj[key], 2, at, f"'{key}' must be [x, y]")


def _numbers(value, count: int, at: str, what: str) -> tuple:
    if type(value) is not list or len(value) != count:
        got = f"an array of {len(value)}" if type(value) is list else wire_type(value)
        raise RequestError(f"{what}, got {got}", at=at)
    for i, v in enumerate(value):
        if not _is_number(v):
            raise RequestError(f"{what} numbers, got {wire_type(v)}", at=f"{at}[{i}]")
        if type(v) is float and not math.isfinite(v):
            raise NonFiniteError(f"{what} finite numbers, got {v}", at=f"{at}[{i}]")
    return tuple(value)


def _number_lists(obj: dict, key: str, count: int):
    if key not in obj or obj[key] is None:
        return
    value = obj[key]
    if type(value) is not list:
        raise RequestError(f"'{key}' must be an array, got {wire_type(value)}", at=key)
    shape = "[x, y, w, h]" if count == 4 else "[x, y]"
    for i, entry in enumerate(value):
        yield _numbers(entry, count, f"{key}[{i}]", f"each entry of '{key}' must be {shape}")
