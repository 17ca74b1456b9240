"""A map's floors and links (issue #35), checked once where they come in: ``put_map``, a
sidecar, ``GridMap(..., floors=, links=)`` and ``update``'s ``links`` all go through
:func:`check_floors` and :func:`check_links`, which give :class:`Links` (read-only
arrays) or raise with the offending field in ``at``. The wire's parsers and the grid's
maps share these (this module imports no numba).

A point is ``[x, y]`` (floor 0) or ``[x, y, floor]``. A link is ``{"from": point, "to":
point, "cost": c, "two_way": bool, "tag": name}``: one move from ``from`` to ``to`` (and
back when ``two_way``, the default) costing exactly ``cost`` (>= 0, not multiplied by
terrain), ``tag`` optional (a request's ``traversal`` bars it or multiplies its cost).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pathserver.errors import NonFiniteError, OutOfBoundsError, RequestError, TooLargeError

#: Floors a map may have.
MAX_FLOORS = 16
#: Links a map may have.
MAX_LINKS = 65536
_LINK_KEYS = ("from", "to", "cost", "two_way", "tag")


@dataclass(frozen=True, eq=False)
class Links:
    """A map's links as arrays, one row a link, in the order given.

    ends: int32 (M, 2, 3), each link's ``from`` and ``to`` as ``(x, y, floor)``.
    cost: float64 (M,). two_way: bool (M,). tags: the link's tag names, None where untagged.
    """

    ends: np.ndarray
    cost: np.ndarray
    two_way: np.ndarray
    tags: tuple

    def __len__(self) -> int:
        return len(self.cost)

    def to_wire(self, floors: int) -> list[dict]:
        """The links as ``put_map`` takes them (points with a floor on maps with several)."""
        out = []
        for (a, b), cost, two_way, tag in zip(self.ends.tolist(), self.cost.tolist(), self.two_way.tolist(),
                                              self.tags):
            link = {"from": a if floors > 1 else a[:2], "to": b if floors > 1 else b[:2], "cost": cost,
                    "two_way": two_way}
            if tag is not None:
                link["tag"] = tag
            out.append(link)
        return out


NO_LINKS = Links(np.zeros((0, 2, 3), dtype=np.int32), np.zeros(0), np.zeros(0, dtype=bool), ())
for _array in (NO_LINKS.ends, NO_LINKS.cost, NO_LINKS.two_way):
    _array.setflags(write=False)


def check_floors(value, at: str = "floors") -> int:
    """A map's ``floors``: an int 1..:data:`MAX_FLOORS` (None: 1)."""
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise RequestError(f"'floors' must be an int 1..{MAX_FLOORS}", at=at)
    if not 1 <= value <= MAX_FLOORS:
        raise RequestError(f"'floors' must be 1..{MAX_FLOORS}, got {value}", at=at)
    return int(value)


def check_point(value, floors: int, width: int, height: int, at: str) -> tuple[int, int, int]:
    """A point ``[x, y]`` or ``[x, y, floor]`` of whole numbers on the map, as a triple."""
    if not isinstance(value, (list, tuple)) or len(value) not in (2, 3):
        raise RequestError("a point is [x, y] or [x, y, floor]", at=at)
    coords = []
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise RequestError("a point's coordinates are numbers", at=f"{at}[{i}]")
        if not math.isfinite(v):
            raise NonFiniteError(f"a point's coordinates must be finite, got {v}", at=f"{at}[{i}]")
        if v != int(v):
            raise RequestError(f"a link's end is a cell: whole numbers, got {v}", at=f"{at}[{i}]")
        coords.append(int(v))
    x, y = coords[0], coords[1]
    floor = coords[2] if len(coords) == 3 else 0
    if not 0 <= floor < floors:
        raise OutOfBoundsError(f"floor {floor} is not one of the map's floors 0..{floors - 1}", at=f"{at}[2]")
    if not (0 <= x < width and 0 <= y < height):
        raise OutOfBoundsError(f"({x}, {y}) is outside the map ({width}x{height} cells)", at=at)
    return x, y, floor


def check_links(value, floors: int, width: int, height: int, at: str = "links", tag_names=None) -> Links:
    """A map's ``links`` (a list of link maps, or None for none) checked and as arrays;
    ``tag_names`` given, each link's tag must be one of them."""
    links = _check_links(value, floors, width, height, at)
    if tag_names is not None:
        for i, tag in enumerate(links.tags):
            if tag is not None and tag not in tag_names:
                raise RequestError(f"link tag {tag!r} is not one of the map's tag_names", at=f"{at}[{i}].tag")
    return links


def _check_links(value, floors: int, width: int, height: int, at: str) -> Links:
    if value is None:
        return NO_LINKS
    if isinstance(value, Links):
        return value
    if not isinstance(value, (list, tuple)):
        raise RequestError("'links' must be a list of {from, to, cost, two_way?, tag?}", at=at)
    if len(value) > MAX_LINKS:
        raise TooLargeError(f"{len(value)} links; at most {MAX_LINKS}", at=at)
    ends = np.empty((len(value), 2, 3), dtype=np.int32)
    cost = np.empty(len(value), dtype=np.float64)
    two_way = np.empty(len(value), dtype=bool)
    tags = []
    for i, link in enumerate(value):
        where = f"{at}[{i}]"
        if not isinstance(link, dict):
            raise RequestError("a link is a map {from, to, cost, two_way?, tag?}", at=where)
        unknown = [key for key in link if key not in _LINK_KEYS]
        if unknown:
            raise RequestError(f"unknown field {unknown[0]!r} in a link; a link has {', '.join(_LINK_KEYS)}",
                               at=f"{where}.{unknown[0]}")
        for end, name in enumerate(("from", "to")):
            if name not in link:
                raise RequestError(f"a link needs '{name}'", at=f"{where}.{name}")
            ends[i, end] = check_point(link[name], floors, width, height, f"{where}.{name}")
        c = link.get("cost")
        if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)):
            raise RequestError("a link needs a 'cost', a number >= 0", at=f"{where}.cost")
        if not math.isfinite(c):
            raise NonFiniteError(f"a link's cost must be finite, got {c}", at=f"{where}.cost")
        if c < 0:
            raise RequestError(f"a link's cost must be >= 0, got {c}", at=f"{where}.cost")
        cost[i] = float(c)
        flag = link.get("two_way", True)
        if not isinstance(flag, bool):
            raise RequestError("'two_way' is a bool", at=f"{where}.two_way")
        two_way[i] = flag
        tag = link.get("tag")
        if tag is not None and (not isinstance(tag, str) or not tag):
            raise RequestError("a link's 'tag' is a non-empty string", at=f"{where}.tag")
        tags.append(tag)
    for array in (ends, cost, two_way):
        array.setflags(write=False)
    return Links(ends, cost, two_way, tuple(tags))


def check_floor(floor, count: int, at: str) -> int:
    """A point's floor: a whole number naming one of a map's ``count`` floors; else
    RequestError / OutOfBoundsError at ``at``."""
    if floor != int(floor):
        raise RequestError(f"a floor is a whole number, got {floor}", at=at)
    if not 0 <= floor < count:
        raise OutOfBoundsError(f"floor {floor:g} is not one of the map's floors (0..{count - 1})", at=at)
    return int(floor)


def check_floor_column(floors, count: int, at: str, column: int) -> np.ndarray:
    """int64 (n,): ``floors`` (numbers, the floor of each row of ``at``), each checked by
    :func:`check_floor`, the first bad one refused at ``at[i][column]`` (the row's floor)."""
    floors = np.asarray(floors, dtype=np.float64)
    bad = (floors != np.floor(floors)) | (floors < 0) | (floors >= count)
    if bad.any():
        i = int(np.argmax(bad))
        check_floor(float(floors[i]), count, f"{at}[{i}][{column}]")
    return floors.astype(np.int64)
