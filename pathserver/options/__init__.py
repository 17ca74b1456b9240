"""The options of a path query, each defined once.

:data:`OPTIONS` holds each option of ``path`` / ``paths`` requests, ``find_path`` /
``find_paths`` and the queries beyond one path: its kind, choices, Python and wire
defaults, minimum, doc and CLI flag, and the wire requests (``ops``) and Python functions
(``functions``) that take it. Everything else reads it: the wire's validation and
``find_path``'s checks (:meth:`Option.check`), the flags of ``pathserver path``
(:func:`add_arguments`), the options table in ``docs/protocol.md``
(:func:`markdown_table`) and ``pathserver options [--json]`` (:func:`as_json`,
:func:`text_table`); docs/design.md, "The options", says why and how.

``None`` (nil on the wire) means an option's default, everywhere. Defaults are the same on
the wire and in Python but for ``smooth``: ``"los"`` on the wire, ``"none"`` in Python.

No numba or numpy here: the protocol imports this module.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from itertools import chain

import numpy as np

from pathserver.errors import BadUnitSizeError, NonFiniteError, RequestError, TooLargeError
from pathserver import arrays


def wire_type(value) -> str:
    """The msgpack type name of a decoded value, for error messages."""
    if value is None:
        return "nil"
    return {bool: "bool", int: "int", float: "float", str: "str", bytes: "bin", list: "array", dict: "map"}.get(
        type(value), "ext"
    )


#: What an option's value is. ``"enum"`` and ``"space"``: one of ``choices`` (``space``
#: also names the units of coordinates); ``"int"`` / ``"float"``: a number >= ``min``
#: (``"float"`` takes ints too); ``"unit_size"``: an int ``k`` or a pair ``[w, h]``;
#: ``"points"``: an array of ``min`` to ``max`` points ``[x, y]``; ``"rect"``: ``[x, y, w, h]``
#: of whole numbers, ``w, h >= 1``; ``"cells"``: ``{cells: [[x, y], ...], rects: [[x, y, w,
#: h], ...]}``, at most ``max`` entries (checked as ``(cells, rects)``); ``"traversal"``: a
#: unit class's name or ``{tag: nil | number >= 1}`` (checked as a sorted tuple of pairs).
KINDS = ("enum", "bool", "int", "float", "unit_size", "space", "points", "rect", "cells", "traversal")

#: The wire requests that take options but for the queries (:data:`QUERY_OPS`), by name
#: (``pathserver.server.ops`` holds each op's row; the protocol, below it, names them so).
PATH_OP, PATHS_OP, UPDATE_OP = "path", "paths", "update"

#: The Python function of each wire request (``find_paths`` passes its options on to
#: ``find_path``).
FUNCTIONS = {"path": "find_path", "reachable": "reachable", "field": "distance_field", "next_steps": "next_steps",
             "check_block": "check_block"}


@dataclass(frozen=True)
class Option:
    """One option. ``doc`` is its line in the docs' table; ``default_doc`` says the
    default in words where the value alone does not (``None`` defaults); ``cli`` is its
    ``pathserver path`` flag (None: none); ``ops`` the wire requests that take it;
    ``functions`` the Python functions that take it as a keyword (None: ``find_path`` when
    ``ops`` has ``path``); ``max`` the most points or entries of a ``points`` / ``cells``
    value; ``cli_doc`` what the flag of a bool option that is on by default does (turn it
    off: ``doc`` says what the option does when on)."""

    name: str
    kind: str
    doc: str
    python_default: object
    wire_default: object
    choices: tuple[str, ...] = ()
    min: int | float | None = None
    default_doc: str | None = None
    cli: str | None = None
    ops: tuple[str, ...] = ("path", "paths")
    functions: tuple[str, ...] | None = None
    max: int | None = None
    cli_doc: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"option {self.name}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.kind == "bool" and self.cli and self.python_default is True and not self.cli_doc:
            raise ValueError(f"option {self.name}: its flag {self.cli} turns it off; say what that does (cli_doc)")
        if self.functions is None:
            object.__setattr__(self, "functions", ("find_path",) if "path" in self.ops else ())

    def check(self, value, prefix: str = ""):
        """``value`` if the option takes it, else RequestError (or a subclass) with ``at``
        ``prefix + name``. None (the default) passes as None; a float option's value comes
        back as a float, a unit size as ``(w, h)``. Exact types, as msgpack decodes them:
        ``True`` is no int, ``1.0`` no int (but a whole ``unit_size``)."""
        if value is None:
            return None
        return _CHECKS[self.kind](self, value, prefix + self.name)


#: The Python functions of the queries beyond one path, which take the shared options too.
_QUERIES = ("reachable", "distance_field", "next_steps")
#: Goals of one request, avoided cells and rectangles of one request: the most it takes.
MAX_GOALS = 4096
MAX_AVOID = 65536
#: The wire's queries beyond one path, each answered by the Python function of
#: :data:`FUNCTIONS`.
QUERY_OPS = ("reachable", "field", "next_steps", "check_block")
_ALL_SEARCHES = ("path", "paths", *QUERY_OPS)
_AVOIDING = ("path", "paths", "reachable", "field", "next_steps")
#: The options of ``path`` that shape one path beyond its endpoints: checked per request,
#: not part of the prepared call of :data:`SEARCH_OPTIONS`.
PER_REQUEST = ("goals", "avoid", "avoid_cost", "traversal")

#: The options, in the order of the fields a ``path`` request accepts (an unknown field's
#: error lists them so: keep the order, add at the end).
OPTIONS: tuple[Option, ...] = (
    Option("unit_size", "unit_size", "the unit's footprint in cells",
           python_default=1, wire_default=1, min=1, cli="--unit", ops=_ALL_SEARCHES,
           functions=("find_path", *_QUERIES, "check_block")),
    Option("space", "space", "units of the points a request gives and gets back (`start`, `goal`, `goals`, "
           "`positions`, `points`, `path`, `steps`) and of `update`'s and `check_block`'s cells and rectangles; "
           "`avoid`, `region` and `reachable`'s and `field`'s answers are always grid cells",
           python_default="grid", wire_default="grid", choices=("grid", "world"),
           ops=("path", "paths", "update", *QUERY_OPS), functions=()),
    Option("smooth", "enum", "string-pulled (footprint-safe line of sight) / only turning points / every cell",
           python_default="none", wire_default="los", choices=("los", "corners", "none"), cli="--smooth"),
    Option("allow_partial", "bool", "an unreachable goal gives the path to the reachable cell nearest it",
           python_default=False, wire_default=False, cli="--partial"),
    Option("snap", "bool", "a blocked start/goal moves to the nearest cell the unit fits",
           python_default=True, wire_default=True, cli="--no-snap", ops=_ALL_SEARCHES,
           functions=("find_path", *_QUERIES, "check_block"),
           cli_doc="a blocked start/goal is an error (start_blocked, goal_blocked) instead of moving"),
    Option("max_expansions", "int", "node budget (see `search_limit`)",
           python_default=None, wire_default=None, min=1, default_doc="no limit", cli="--max-expansions"),
    Option("heuristic", "enum", "the search's estimate of the distance left",
           python_default=None, wire_default=None, choices=("octile", "euclidean", "manhattan", "chebyshev"),
           default_doc='octile (manhattan when `diagonal: "never"`)', cli="--heuristic"),
    Option("weight", "float", "> 1: faster, paths at most `weight` times the optimum",
           python_default=1.0, wire_default=1.0, min=1.0, cli="--weight"),
    Option("diagonal", "enum", "8-connected without cutting corners / 4-connected / corners may be cut",
           python_default="no_corner_cutting", wire_default="no_corner_cutting",
           choices=("no_corner_cutting", "never", "always"), cli="--diagonal", ops=_ALL_SEARCHES,
           functions=("find_path", *_QUERIES, "check_block")),
    Option("max_climb", "float", "with a height layer, steeper steps are blocked",
           python_default=None, wire_default=None, min=0.0, default_doc="no limit", cli="--max-climb",
           ops=("path", "paths", "reachable", "field", "next_steps"), functions=("find_path", *_QUERIES)),
    Option("algorithm", "enum", '`"jps"` needs uniform terrain cost, no `max_climb`, `diagonal: '
           '"no_corner_cutting"` and the octile heuristic; `"auto"` picks it where it pays',
           python_default="auto", wire_default="auto", choices=("auto", "astar", "jps"), cli="--algorithm"),
    Option("line_of_sight", "bool", "take a clear straight line without searching",
           python_default=True, wire_default=True, cli="--no-line-of-sight",
           cli_doc="always search, even where the straight line is clear"),
    # The queries beyond one path, and what shapes one path beyond its endpoints.
    Option("goals", "points", "goals `[[x, y], ...]` instead of `goal`: the cheapest reachable one wins "
           "(`goal_index` says which); a field's goals", python_default=None, wire_default=None, min=1, max=MAX_GOALS,
           default_doc="`goal` alone", ops=("path", "paths", "field", "next_steps"), functions=("find_path", "distance_field", "next_steps")),
    Option("budget", "float", "the most a move may cost: every cell reachable for at most this",
           python_default=None, wire_default=None, min=0.0, default_doc="required",
           ops=("reachable",), functions=("reachable",)),
    Option("max_cost", "float", "cells dearer than this to a goal stay +inf (it bounds the work)",
           python_default=None, wire_default=None, min=0.0, default_doc="no limit",
           ops=("field", "next_steps"), functions=("distance_field", "next_steps")),
    Option("region", "rect", "the window `[x, y, w, h]` of the field returned (its values stay exact: "
           "the paths may leave it)", python_default=None, wire_default=None, default_doc="the whole map",
           ops=("field",), functions=("distance_field",)),
    Option("lookahead", "enum", '`"cell"`: the neighbouring cell downhill; `"los"`: the farthest turn of the '
           "descent in the footprint's clear sight", python_default="cell", wire_default="cell",
           choices=("cell", "los"), ops=("next_steps",), functions=("next_steps",)),
    Option("avoid", "cells", "cells this request treats as solid, `{cells: [[x, y], ...], rects: [[x, y, w, h], "
           "...]}` (the map is untouched; a unit already on one may leave it); `cells` may be a bin of int32 "
           "`x, y` pairs", python_default=None,
           wire_default=None, max=MAX_AVOID, default_doc="none", ops=_AVOIDING, functions=("find_path", *_QUERIES)),
    Option("avoid_cost", "float", "`avoid`'s cells are not blocked but cost at least this to enter",
           python_default=None, wire_default=None, min=1.0, default_doc="blocked",
           ops=_AVOIDING, functions=("find_path", *_QUERIES)),
    Option("traversal", "traversal", "a unit class of the map, or rules `{tag: null (blocks) | cost multiplier "
           ">= 1}` for the map's tagged cells", python_default=None, wire_default=None,
           default_doc="every tag walkable at its cost", ops=_ALL_SEARCHES, functions=("find_path", *_QUERIES, "check_block")),
)

#: The options by name.
BY_NAME: dict[str, Option] = {option.name: option for option in OPTIONS}
#: Each option by itself, for the modules that need one by name: they spell it here only.
(UNIT_SIZE, SPACE, SMOOTH, ALLOW_PARTIAL, SNAP, MAX_EXPANSIONS, HEURISTIC, WEIGHT, DIAGONAL, MAX_CLIMB, ALGORITHM,
 LINE_OF_SIGHT, GOALS, BUDGET, MAX_COST, REGION, LOOKAHEAD, AVOID, AVOID_COST, TRAVERSAL) = OPTIONS
assert all(globals()[option.name.upper()] is option for option in OPTIONS), "unpacked out of order"

#: The options of the wire's ``path`` request that ``find_path`` takes as keywords (its
#: coordinates are always grid cells, so it has no ``space``), in :data:`OPTIONS` order:
#: what one prepared call holds.
SEARCH_OPTIONS: tuple[Option, ...] = tuple(
    option for option in OPTIONS if "path" in option.ops and option.name != "space" and option.name not in PER_REQUEST
)
#: The options the wire takes (those of some request).
WIRE_OPTIONS: tuple[Option, ...] = tuple(option for option in OPTIONS if option.ops)


def op_fields(op: str) -> tuple[str, ...]:
    """The names of the options request ``op`` takes, in :data:`OPTIONS` order."""
    return tuple(option.name for option in OPTIONS if op in option.ops)


def function_options(function: str) -> tuple[Option, ...]:
    """The options the Python function ``function`` (``"find_path"``, ``"reachable"``, ...)
    takes as keywords, in :data:`OPTIONS` order."""
    return tuple(option for option in OPTIONS if function in option.functions)


def wire_defaults() -> dict:
    """What the wire fills in for an option the request leaves out, where that differs
    from ``find_path``'s own default (only ``smooth``)."""
    return {o.name: o.wire_default for o in SEARCH_OPTIONS if o.wire_default != o.python_default}


# -- checks (shared by the wire's full validator and find_path) -------------------------


def quoted(value) -> str:
    """A value quoted for an error message, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def number(value, name: str, at: str, minimum: float | None = None):
    """``value`` if it is an int or a finite float (at least ``minimum``), else
    RequestError / NonFiniteError naming ``name``."""
    if type(value) is not int and type(value) is not float:
        raise RequestError(f"'{name}' must be a number, got {wire_type(value)}", at=at)
    if type(value) is float and not math.isfinite(value):
        raise NonFiniteError(f"'{name}' must be finite, got {value}", at=at)
    if minimum is not None and value < minimum:
        raise RequestError(f"'{name}' must be >= {minimum:g}, got {value}", at=at)
    return value


def _check_choice(option: Option, value, at: str):
    # isinstance: a str subclass (a str-valued enum in Python) is its string; msgpack only
    # ever decodes plain str.
    if not isinstance(value, str) or value not in option.choices:
        shown = quoted(value) if isinstance(value, str) else wire_type(value)
        raise RequestError(f"'{option.name}' must be one of {', '.join(option.choices)}; got {shown}", at=at)
    return value


def _check_exact(option: Option, value, at: str):
    # "bool" and "int": exactly that type (True is no int, 1 no bool), an int >= min.
    kind, noun = (bool, "a bool") if option.kind == "bool" else (int, "an int")
    if type(value) is not kind:
        raise RequestError(f"'{option.name}' must be {noun}, got {wire_type(value)}", at=at)
    return value if kind is bool else number(value, option.name, at, option.min)


def _check_float(option: Option, value, at: str):
    return float(number(value, option.name, at, option.min))


def _check_unit_size(option: Option, value, at: str):
    # Engines often only have floats: a whole float is its int. (A tuple is a Python
    # caller's pair; msgpack decodes arrays as lists.)
    if type(value) is list or type(value) is tuple:
        if len(value) != 2:
            raise RequestError(f"'unit_size' must be an int or [w, h], got an array of {len(value)}", at=at)
        return tuple(_size_int(v, f"{at}[{i}]") for i, v in enumerate(value))
    size = _size_int(value, at)
    return (size, size)


def _size_int(value, at: str) -> int:
    if type(value) is not int and type(value) is not float:
        raise RequestError(f"'unit_size' must be an int or [w, h], got {wire_type(value)}", at=at)
    if type(value) is float:
        if not math.isfinite(value):
            raise NonFiniteError(f"'unit_size' must be finite, got {value}", at=at)
        if value != int(value):
            raise BadUnitSizeError(f"'unit_size' must be a whole number of cells, got {value}", at=at)
        value = int(value)
    if value < 1:
        raise BadUnitSizeError(f"'unit_size' must be at least 1, got {value}", at=at)
    return value


_SEQUENCES = frozenset((list, tuple))
_NUMBERS = frozenset((int, float))


#: The lengths of a point: ``[x, y]`` (floor 0) or ``[x, y, floor]`` (issue #35).
POINT = (2, 3)
#: How messages name a point.
POINT_SHAPE = "[x, y] or [x, y, floor]"
#: The lengths of a rectangle: ``[x, y, w, h]`` (floor 0) or ``[x, y, w, h, floor]``.
RECT = (4, 5)


def number_rows(rows, width, at: str, shape: str):
    """``rows`` itself if it is an array (list or tuple) of arrays of ``width`` (an int,
    or a tuple of the lengths allowed, such as :data:`POINT`) finite numbers, such as
    points ``[x, y]``; else RequestError / NonFiniteError at the first bad row (``at[i]``)
    or number (``at[i][j]``). ``shape`` names a row in messages (``"[x, y]"``).

    Well-formed input, the common case, is checked by C loops over the whole array (type
    and length sets); only a refusal walks it row by row, to say where."""
    if type(rows) is not list and type(rows) is not tuple:
        raise RequestError(f"'{at}' must be an array of {shape}, got {wire_type(rows)}", at=at)
    if not rows:
        return rows
    widths = (width,) if type(width) is int else width
    if set(map(type, rows)) <= _SEQUENCES and set(map(len, rows)) <= set(widths):
        kinds = set(map(type, chain.from_iterable(rows)))
        if kinds <= _NUMBERS and (float not in kinds or all(map(math.isfinite, chain.from_iterable(rows)))):
            return rows
    for i, row in enumerate(rows):
        if (type(row) is not list and type(row) is not tuple) or len(row) not in widths:
            shown = f"an array of {len(row)}" if type(row) in _SEQUENCES else wire_type(row)
            raise RequestError(f"each of '{at}' must be {shape}, got {shown}", at=f"{at}[{i}]")
        for j, v in enumerate(row):
            if type(v) is not int and type(v) is not float:
                raise RequestError(f"each of '{at}' must be {shape} of numbers, got {wire_type(v)}",
                                   at=f"{at}[{i}][{j}]")
            if type(v) is float and not math.isfinite(v):
                raise NonFiniteError(f"'{at}' coordinates must be finite, got {v}", at=f"{at}[{i}][{j}]")
    raise AssertionError("unreachable: the fast check refused a valid array")  # pragma: no cover


def _check_points(option: Option, value, at: str):
    points = number_rows(value, POINT, at, POINT_SHAPE)
    if len(points) < option.min:
        raise RequestError(f"'{option.name}' needs at least {option.min} point", at=at)
    if len(points) > option.max:
        raise TooLargeError(f"{len(points)} {option.name}; at most {option.max}", at=at)
    return points


def _check_rect(option: Option, value, at: str):
    if (type(value) is not list and type(value) is not tuple) or len(value) != 4:
        shown = f"an array of {len(value)}" if type(value) in _SEQUENCES else wire_type(value)
        raise RequestError(f"'{option.name}' must be [x, y, w, h], got {shown}", at=at)
    rect = []
    for i, v in enumerate(value):
        number(v, option.name, f"{at}[{i}]")
        if v != int(v):
            raise RequestError(f"'{option.name}' must be whole cells, got {v}", at=f"{at}[{i}]")
        rect.append(int(v))
    if rect[2] < 1 or rect[3] < 1:
        raise RequestError(f"'{option.name}' width and height must be >= 1, got {rect[2]} x {rect[3]}", at=at)
    return tuple(rect)


def plain_number_array(value, width: int) -> bool:
    """Whether ``value`` is a numpy (n, width) array of ints or finite floats: rows of
    numbers that pass as they are, with no walk over them."""
    return (isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[1] == width
            and (value.dtype.kind in "iu" or value.dtype.kind == "f" and bool(np.isfinite(value).all())))


def cell_rows(value, at: str):
    """``avoid``'s ``cells``: rows ``[x, y]`` (:func:`number_rows`), or a bin of
    little-endian int32 ``x, y`` pairs, the compact form engines send, as an int32 (n, 2)
    array (read-only, no copy), or an (n, 2) array that :func:`plain_number_array` passes,
    as it is (the server reads plain pairs into a float64 one:
    ``protocol.reading.BodyDecoder``); else RequestError at ``at``."""
    if type(value) is bytes:
        return arrays.pairs(value, arrays.INT32, at)
    if plain_number_array(value, 2) or plain_number_array(value, 3):
        return value
    return number_rows(value, POINT, at, POINT_SHAPE)


@dataclass(frozen=True, slots=True, eq=False)
class Avoid:
    """A checked ``avoid``: ``cells`` float64 (n, 2) ``[x, y]`` and ``rects`` float64 (m, 4)
    ``[x, y, w, h]``, read-only and C-ordered, every number finite, each rectangle's
    ``w, h > 0``, ``n + m`` within the option's maximum. The option's check makes it, once;
    the searches take it as it is (grid cells, whatever the request's ``space``)."""

    cells: np.ndarray
    rects: np.ndarray
    #: On a map of several floors (issue #35): float64 (n,) and (m,), each cell's and
    #: rectangle's floor, when any was given (``[x, y, floor]``, ``[x, y, w, h, floor]``);
    #: :meth:`with_floors` gives the rows with them.
    cell_floors: np.ndarray | None = None
    rect_floors: np.ndarray | None = None

    @classmethod
    def of_rows(cls, cells, rects) -> "Avoid":
        """The Avoid of rows checked already (``[x, y]`` or ``[x, y, floor]`` and ``[x, y,
        w, h]`` or ``[x, y, w, h, floor]``)."""
        cells, cell_floors = split_floor(cells, 2)
        rects, rect_floors = split_floor(rects, 4)
        return cls(_float_rows(cells, 2), _float_rows(rects, 4), cell_floors, rect_floors)

    def with_floors(self) -> tuple[np.ndarray, np.ndarray]:
        """float64 ``(cells (n, 3), rects (m, 5))``: the rows with their floor after them
        (0 where none was given)."""
        return tuple(np.column_stack((rows, np.zeros(len(rows)) if floors is None else floors))
                     for rows, floors in ((self.cells, self.cell_floors), (self.rects, self.rect_floors)))

    def key(self) -> tuple:
        """A hashable key equal for equal cells and rectangles (for caches)."""
        return (self.cells.tobytes(), self.rects.tobytes(),
                None if self.cell_floors is None else self.cell_floors.tobytes(),
                None if self.rect_floors is None else self.rect_floors.tobytes())

    def __eq__(self, other) -> bool:
        return type(other) is Avoid and self.key() == other.key()

    __hash__ = None  # equal by value, as the dict it stands for


def split_floor(rows, width: int) -> tuple:
    """Rows of ``width`` numbers, some with a floor after them: ``(rows, floors)``, floors
    float64 (n,) or None when no row has one."""
    if isinstance(rows, np.ndarray):
        return (rows, None) if rows.shape[1] == width else (rows[:, :width], rows[:, width].astype(np.float64))
    if all(len(row) == width for row in rows):
        return rows, None
    return ([row[:width] for row in rows],
            np.array([row[width] if len(row) > width else 0 for row in rows], dtype=np.float64))


def _float_rows(rows, width: int) -> np.ndarray:
    """Checked rows as a read-only C float64 (n, width) array (no copy when already one)."""
    if type(rows) is np.ndarray and rows.dtype == np.float64 and rows.flags.c_contiguous:
        array = rows.view() if rows.flags.writeable else rows
    else:
        array = np.array(rows, dtype=np.float64).reshape(-1, width)
    array.setflags(write=False)
    return array


def _check_cells(option: Option, value, at: str) -> Avoid:
    if type(value) is Avoid:
        return value  # checked when it was made
    if type(value) is not dict:
        raise RequestError(f"'{option.name}' must be a map {{cells: [[x, y], ...], rects: [[x, y, w, h], ...]}}, "
                           f"got {wire_type(value)}", at=at)
    for key in value:
        if key != "cells" and key != "rects":
            raise RequestError(f"'{option.name}' takes 'cells' and 'rects', got {quoted(key)}", at=f"{at}.{key}")
    cells = value.get("cells")
    rects = value.get("rects")
    cells = () if cells is None else cell_rows(cells, f"{at}.cells")
    if rects is None:
        rects = ()
    elif not plain_number_array(rects, 4):
        rects = number_rows(rects, RECT, f"{at}.rects", "[x, y, w, h] or [x, y, w, h, floor]")
    if len(cells) + len(rects) > option.max:
        raise TooLargeError(f"{len(cells) + len(rects)} cells and rectangles in '{option.name}'; at most "
                            f"{option.max}", at=at)
    for i, (_, _, w, h, *_) in enumerate(rects):
        if w <= 0 or h <= 0:
            raise RequestError(f"rectangle width and height must be > 0, got {w} x {h}", at=f"{at}.rects[{i}]")
    return Avoid.of_rows(cells, rects)


def _check_traversal(option: Option, value, at: str):
    # A class name as it is; rules as ((tag, multiplier or None), ...) sorted by tag:
    # hashable and canonical, so equal rules share the map's cached layers.
    if type(value) is str or isinstance(value, str):
        if not value:
            raise RequestError(f"'{option.name}' must name a unit class, got an empty string", at=at)
        return str(value)
    if type(value) is not dict:
        raise RequestError(f"'{option.name}' must be a unit class's name or a map {{tag: nil | multiplier}}, "
                           f"got {wire_type(value)}", at=at)
    rules = []
    for tag, multiplier in value.items():
        if not isinstance(tag, str) or not tag:
            raise RequestError(f"'{option.name}' keys must be tag names, got {quoted(tag)}", at=at)
        if multiplier is not None:
            multiplier = float(number(multiplier, f"{option.name}.{tag}", f"{at}.{tag}", 1.0))
        rules.append((str(tag), multiplier))
    return tuple(sorted(rules))


_CHECKS = {
    "enum": _check_choice,
    "space": _check_choice,
    "bool": _check_exact,
    "int": _check_exact,
    "float": _check_float,
    "unit_size": _check_unit_size,
    "points": _check_points,
    "rect": _check_rect,
    "cells": _check_cells,
    "traversal": _check_traversal,
}


# -- the command line -----------------------------------------------------------------


def unit_size_from_text(text: str):
    """A command-line unit size, ``3`` or ``3x2``, as ``3`` or ``(3, 2)`` (an argparse type;
    the value is checked like any other unit size where it is used)."""
    try:
        if "x" in text.lower():
            w, h = text.lower().split("x", 1)
            return (int(w), int(h))
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"unit size must look like 3 or 3x2, got {text!r}") from None


def spelled(value) -> str:
    """A default as msgpack / JSON would spell it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def add_arguments(parser: argparse.ArgumentParser, names=None, defaults: dict | None = None) -> None:
    """A flag for each option with a ``cli`` spelling (of ``names``, if given), its
    destination the option's name, its default the Python one (or ``defaults[name]``)."""
    for option in OPTIONS:
        if option.cli is None or (names is not None and option.name not in names):
            continue
        default = (defaults or {}).get(option.name, option.python_default)
        shown = option.default_doc or spelled(default)
        if option.kind == "bool":
            # The flag turns the default around: --partial, --no-snap; its help says what it does.
            does = (option.cli_doc or option.doc) if default else option.doc
            parser.add_argument(option.cli, dest=option.name, action="store_false" if default else "store_true",
                                help=_argparse_text(f"{option.name}={spelled(not default)} (default "
                                                    f"{spelled(default)}): {does}"))
            continue
        kwargs = {"choices": option.choices} if option.choices else {"type": _CLI_TYPES[option.kind]}
        text = option.doc + (" (N or WxH)" if option.kind == "unit_size" else "")
        parser.add_argument(option.cli, dest=option.name, default=default,
                            help=_argparse_text(f"{text}; default {shown}"), **kwargs)


_CLI_TYPES = {"unit_size": unit_size_from_text, "int": int, "float": float}


def cli_values(args: argparse.Namespace, names=None) -> dict:
    """The options :func:`add_arguments` added, as ``find_path`` keywords."""
    return {o.name: getattr(args, o.name) for o in OPTIONS
            if o.cli is not None and (names is None or o.name in names)}


def _argparse_text(text: str) -> str:
    return text.replace("%", "%%").replace("`", "")
