"""Validation of decoded requests into typed request objects.

``parse_request(obj, parsers)`` takes the dict that ``codec.decode_request`` returned and
the op's parser (the server's table of ops, ``pathserver.server.ops``, names each op's:
the ones here, and ``path``'s and ``paths``' in :mod:`pathserver.protocol.path_requests`)
and either returns one of the request classes below or raises a ``RequestError`` subclass whose
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

from pathserver.errors import NonFiniteError, RequestError, TooLargeError, UnknownOpError
from pathserver.options import BY_NAME, GOALS, PER_REQUEST, POINT, POINT_SHAPE, RECT, REGION, SPACE, UNIT_SIZE, UPDATE_OP
from pathserver.options import number, number_rows
from pathserver.options import op_fields, quoted
from pathserver.options import wire_defaults, wire_type
from pathserver import arrays
from pathserver.floors import check_floors, check_links
from pathserver.hexes import SHAPES, check_layout, tile_size_of
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
    #: ``links``: the map's new list of links (checked against the map when applied), or None.
    links: list | None = None


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


# -- the ops but path and paths (pathserver.protocol.path_requests) ------------------

_UPDATE_FIELDS = ("id", "op", "map", "rects", "cells", "solid", "cost") + op_fields(UPDATE_OP) + ("if_gen", "links")
_PUT_MAP_FIELDS = ("id", "op", "map", "width", "height", "cells", "costs", "heights", "origin", "cell_size", "tags",
                   "tag_names", "classes", "shape", "layout", "floors", "links")
_DROP_MAP_FIELDS = ("id", "op", "map")
_GET_MAP_FIELDS = ("id", "op", "map", REGION.name)
_BARE_FIELDS = ("id", "op")
#: Options whose values the Python functions take as sent (arrays, maps), after the check;
#: ``avoid`` goes on as the check's :class:`~pathserver.options.Avoid`.
AS_SENT = frozenset(("points", "traversal"))


def parse_update(rid: int, obj: dict) -> UpdateRequest:
    check_fields(obj, _UPDATE_FIELDS, "")
    name = map_name(obj)
    space = SPACE.check(obj.get(SPACE.name)) or "grid"
    rects = tuple(number_lists(obj, "rects", RECT))
    cells = tuple(number_lists(obj, "cells", POINT))
    links = obj.get("links")
    if links is not None and type(links) is not list:
        raise RequestError(f"'links' must be an array of links, got {wire_type(links)}", at="links")
    edits_cells = obj.get("rects") is not None or obj.get("cells") is not None
    if not edits_cells and links is None:
        raise RequestError("an update needs 'rects' ([[x, y, w, h], ...]) or 'cells' ([[x, y], ...]), or 'links'",
                           at="rects")
    for i, (_, _, w, h, *_) in enumerate(rects):
        if w <= 0 or h <= 0:
            raise RequestError(f"rectangle width and height must be > 0, got {w} x {h}", at=f"rects[{i}]")
    solid = obj.get("solid")
    if solid is not None and type(solid) is not bool:
        raise RequestError(f"'solid' must be a bool, got {wire_type(solid)}", at="solid")
    cost = obj.get("cost")
    if cost is not None:
        number(cost, "cost", "cost", 1.0)
    if solid is None and cost is None and edits_cells:
        raise RequestError("an update needs 'solid' (bool) or 'cost' (number >= 1)", at="solid")
    if_gen = obj.get("if_gen")
    if if_gen is not None and type(if_gen) is not int:
        raise RequestError(f"'if_gen' must be an int (a generation from a reply), got {wire_type(if_gen)}",
                           at="if_gen")
    return UpdateRequest(rid, name, rects, cells, solid, None if cost is None else float(cost), space, if_gen, links)


def parse_put_map(rid: int, obj: dict) -> PutMapRequest:
    check_fields(obj, _PUT_MAP_FIELDS, "")
    name = map_name(obj)
    width = check_side(obj.get("width"), "width")
    height = check_side(obj.get("height"), "height")
    wire = {key: obj[key] for key in ("cells", "costs", "heights", "tags", "tag_names", "classes", "shape", "layout",
                                      "floors", "links") if obj.get(key) is not None}
    floors = check_floors(wire.get("floors"))
    shape = wire.get("shape", "square")
    if shape not in SHAPES:
        raise RequestError(f"'shape' must be one of {', '.join(map(quoted, SHAPES))}, got "
                           f"{quoted(shape) if type(shape) is str else wire_type(shape)}", at="shape")
    if shape == "hex":
        check_layout(wire.get("layout"))
    elif "layout" in wire:
        raise RequestError("'layout' is for hex maps (\"shape\": \"hex\")", at="layout")
    for key in ("tag_names", "classes"):
        if key in wire and type(wire[key]) is not dict:
            raise RequestError(f"'{key}' must be a map, got {wire_type(wire[key])}", at=key)
    # What the names and classes hold is GridMap's to check (the handler's build).
    # Floors lie one under another in the layers, floor 0 first.
    cells = MapCells.from_wire(width, height * floors, obj.get("cells"), wire.get("costs"), wire.get("heights"),
                               wire.get("tags"), tag_names=wire.get("tag_names"), classes=wire.get("classes"),
                               floors=floors, links=check_links(wire.get("links"), floors, width, height))
    origin = (0.0, 0.0)
    if obj.get("origin") is not None:
        origin = tuple(float(v) for v in read_numbers(obj["origin"], 2, "origin", "'origin' must be [x, y]"))
    cell_size = obj.get("cell_size")
    if cell_size is None:
        cell_size = 1.0
    elif shape == "hex" and type(cell_size) is list:
        # A hex map's tile size [w, h], as Godot's TileSet has it.
        cell_size = tile_size_of(tuple(read_numbers(cell_size, 2, "cell_size", "'cell_size' must be a number or [w, h]")))
    else:
        if not is_number(cell_size):
            raise RequestError(f"'cell_size' must be a number > 0, got {wire_type(cell_size)}", at="cell_size")
        if not math.isfinite(cell_size):
            raise NonFiniteError(f"'cell_size' must be finite, got {cell_size}", at="cell_size")
        if cell_size <= 0:
            raise RequestError(f"'cell_size' must be > 0, got {cell_size}", at="cell_size")
        cell_size = float(cell_size)
    return PutMapRequest(rid, name, width, height, cells, origin, cell_size, wire)


def parse_drop_map(rid: int, obj: dict) -> DropMapRequest:
    check_fields(obj, _DROP_MAP_FIELDS, "")
    return DropMapRequest(rid, map_name(obj))


def parse_get_map(rid: int, obj: dict) -> GetMapRequest:
    check_fields(obj, _GET_MAP_FIELDS, "")
    name = map_name(obj)
    region = obj.get(REGION.name)
    if region is not None:
        region = read_numbers(region, 4, REGION.name, "'region' must be [x, y, w, h] of grid cells")
        for i, value in enumerate(region):
            if type(value) is float:
                if not value.is_integer():
                    raise RequestError(f"'region' must be whole cells, got {value}", at=f"{REGION.name}[{i}]")
        region = tuple(int(value) for value in region)
        if region[2] < 1 or region[3] < 1:
            raise RequestError(f"region width and height must be >= 1, got {region[2]} x {region[3]}", at=REGION.name)
    return GetMapRequest(rid, name, region)


def query_parser(op: str, own: tuple, needed: tuple, read_own=None):
    """The parser of query op ``op``: its ``own`` fields (those in ``needed`` required,
    as are the options among them), read by ``read_own(obj, args) -> packed``, then its
    options (``options.op_fields(op)``), each checked by its rule."""
    allowed = ("id", "op", "map", *own) + op_fields(op)

    def parse(rid: int, obj: dict) -> QueryRequest:
        check_fields(obj, allowed, "")
        name = map_name(obj)
        for key in needed:
            if obj.get(key) is None:
                raise RequestError(f"missing field '{key}' for op '{op}'", at=key)
        space = SPACE.check(obj.get(SPACE.name)) or "grid"
        args = {UNIT_SIZE.name: 1}
        for key in op_fields(op):
            value = obj.get(key)
            if value is None or key == SPACE.name:
                continue
            option = BY_NAME[key]
            checked = option.check(value)
            args[key] = value if option.kind in AS_SENT else checked
        packed = False if read_own is None else read_own(obj, args)
        return QueryRequest(rid, op, name, space, args, packed)

    return parse


def read_start(obj: dict, args: dict) -> bool:
    """``reachable``'s own field: ``start``."""
    args["start"] = read_point(obj, "start", "")
    return False


def read_positions(obj: dict, args: dict) -> bool:
    """``next_steps``' own field: ``positions``; packed when they came as a bin."""
    args["positions"], packed = _positions(obj["positions"])
    return packed


def read_placement(obj: dict, args: dict) -> bool:
    """``check_block``'s own fields: ``points``, and the ``cells`` / ``rects`` placed."""
    args["points"] = _check_points(obj["points"])
    rects = tuple(number_lists(obj, "rects", RECT))
    for i, (_, _, w, h, *_) in enumerate(rects):
        if w <= 0 or h <= 0:
            raise RequestError(f"rectangle width and height must be > 0, got {w} x {h}", at=f"rects[{i}]")
    args["rects"] = rects
    args["cells"] = tuple(number_lists(obj, "cells", POINT))
    if not rects and not args["cells"]:
        raise RequestError("a check_block needs 'rects' ([[x, y, w, h], ...]) or 'cells' ([[x, y], ...]): "
                           "what would be placed", at="rects")
    return False


def _check_points(value) -> list:
    """The ``points`` of ``check_block``: as many ``[x, y]`` as ``goals`` may hold."""
    points = number_rows(value, POINT, "points", POINT_SHAPE)
    limit = GOALS.max
    if len(points) > limit:
        raise TooLargeError(f"{len(points)} points; at most {limit}", at="points")
    return points


def _positions(value) -> tuple[np.ndarray, bool]:
    """The ``positions`` of ``next_steps``: a bin of little-endian float32 ``x, y`` pairs
    or an array of ``[x, y]`` (or ``[x, y, floor]``), as float64 (n, 2) (or (n, 3) when a
    floor was given) and whether it came as a bin."""
    if type(value) is bytes:
        xy = arrays.pairs(value, arrays.FLOAT32, "positions").astype(np.float64)
        packed = True
    else:
        rows = number_rows(value, POINT, "positions", POINT_SHAPE)
        if all(len(row) == 2 for row in rows):
            xy = np.array(rows, dtype=np.float64).reshape(-1, 2)
        else:  # some on another floor: [x, y, floor] each (floor 0 for a pair)
            xy = np.array([(*row, 0) if len(row) == 2 else row for row in rows], dtype=np.float64).reshape(-1, 3)
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
        check_fields(obj, _BARE_FIELDS, "")
        return cls(rid)

    return parse


# -- fields --------------------------------------------------------------------------


def check_fields(obj: dict, allowed: tuple, prefix: str) -> None:
    for key in obj:
        if key not in allowed:
            op = obj.get("op")
            where = f"op '{op}'" if prefix == "" and isinstance(op, str) else "a batch entry"
            raise RequestError(
                f"unknown field {quoted(key)} for {where}; accepted: {', '.join(allowed)}",
                at=prefix + (key if isinstance(key, str) else "?"),
            )


def map_name(obj: dict) -> str:
    if "map" not in obj:
        raise RequestError("missing field 'map' (a map name, see op 'maps')", at="map")
    name = obj["map"]
    if type(name) is not str:
        raise RequestError(f"'map' must be a string, got {wire_type(name)}", at="map")
    if not name or len(name) > MAX_NAME_LEN:
        raise RequestError(f"'map' must be 1 to {MAX_NAME_LEN} characters", at="map")
    return name


def is_number(value) -> bool:
    return type(value) is int or type(value) is float


def read_point(obj: dict, key: str, prefix: str) -> tuple:
    """A point ``[x, y]`` or ``[x, y, floor]`` (:data:`~pathserver.options.POINT`); the
    floor is checked against the map where the map is known."""
    at = prefix + key
    if key not in obj:
        raise RequestError(f"missing field '{key}' ({POINT_SHAPE})", at=at)
    return read_numbers(obj[key], POINT, at, f"'{key}' must be {POINT_SHAPE}")


def read_numbers(value, count, at: str, what: str) -> tuple:
    """``value``, an array of ``count`` (an int, or a tuple of the lengths allowed)
    finite numbers, as a tuple; else RequestError / NonFiniteError at the bad part."""
    if type(value) is not list or len(value) not in ((count,) if type(count) is int else count):
        got = f"an array of {len(value)}" if type(value) is list else wire_type(value)
        raise RequestError(f"{what}, got {got}", at=at)
    for i, v in enumerate(value):
        if not is_number(v):
            raise RequestError(f"{what} numbers, got {wire_type(v)}", at=f"{at}[{i}]")
        if type(v) is float and not math.isfinite(v):
            raise NonFiniteError(f"{what} finite numbers, got {v}", at=f"{at}[{i}]")
    return tuple(value)


def number_lists(obj: dict, key: str, count: int):
    if key not in obj or obj[key] is None:
        return
    value = obj[key]
    if type(value) is not list:
        raise RequestError(f"'{key}' must be an array, got {wire_type(value)}", at=key)
    shape = "[x, y, w, h] or [x, y, w, h, floor]" if count == RECT else POINT_SHAPE if count == POINT else \
        "[x, y, w, h]" if count == 4 else "[x, y]"
    for i, entry in enumerate(value):
        yield read_numbers(entry, count, f"{key}[{i}]", f"each entry of '{key}' must be {shape}")
