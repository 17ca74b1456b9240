"""Hex grid geometry: the one definition the protocol, the server and the clients share.

A hex map is still a ``width x height`` array of cells addressed ``(x, y)`` = (column, row);
its ``layout`` says how those offset coordinates sit on the plane (Red Blob Games' names):

- ``"odd-r"`` / ``"even-r"``: pointy-top hexes, the odd / even rows shoved right by half a hex;
- ``"odd-q"`` / ``"even-q"``: flat-top hexes, the odd / even columns shoved down by half a hex.

Moves and distances go through axial coordinates ``(q, r)``: ``r`` is the row for ``-r``
layouts, ``q`` the column for ``-q`` ones. World space is Godot's hexagon ``TileMapLayer``'s:
a cell's centre is ``origin + centre(layout, x, y) * tile_size`` (docs/design.md, "Hex maps
in world space"). Every function takes ints or numpy arrays (broadcast together) and
answers likewise.

>>> to_axial("odd-r", 3, 5), from_axial("odd-r", 1, 5)
((1, 5), (3, 5))
>>> distance("odd-q", (0, 0), (3, 4))
6
>>> centre("even-r", 0, 0)
(1.0, 0.5)
>>> cell_at("odd-r", 100.0, 70.0, origin=(0.0, 0.0), tile_size=64)
(1, 1)
>>> cell_at("odd-r", 100.0, 50.0, origin=(0.0, 0.0), tile_size=64)  # row 1's box, hexagon (1, 0)
(1, 0)
"""

from __future__ import annotations

import numpy as np

from pathserver.errors import RequestError

LAYOUTS = ("odd-r", "even-r", "odd-q", "even-q")
SHAPES = ("square", "hex")

#: The six axial directions ``(dq, dr)``, in the order :func:`neighbours` lists them:
#: counter-clockwise as drawn (y down), starting east on ``-r`` layouts (E, NE, NW, W, SW,
#: SE) and south-east on ``-q`` ones (SE, NE, N, NW, SW, S).
DIRECTIONS = ((1, 0), (1, -1), (0, -1), (-1, 0), (-1, 1), (0, 1))

#: Rows (``-r``) or columns (``-q``) are this many tile heights (widths) apart: Godot's
#: overlapping ratio for hexagons.
OVERLAP = 0.75

#: Added to both ends' cube coordinates before :func:`hex_line` rounds: a line along a
#: hex edge or through a corner then always falls on the same side of it, whichever way
#: it is drawn (Red Blob Games' nudge; three different sizes, so no two components tie).
LINE_NUDGE = (1e-6, 2e-6, -3e-6)

# Red Blob Games' offset neighbour tables, (dx, dy) by the parity of the shoved coordinate
# (0: even, 1: odd), in DIRECTIONS' order. Written out rather than derived from the axial
# conversion so that the tests compare two independent definitions.
_NEIGHBOUR_TABLES = {
    "odd-r": (
        ((1, 0), (0, -1), (-1, -1), (-1, 0), (-1, 1), (0, 1)),
        ((1, 0), (1, -1), (0, -1), (-1, 0), (0, 1), (1, 1)),
    ),
    "even-r": (
        ((1, 0), (1, -1), (0, -1), (-1, 0), (0, 1), (1, 1)),
        ((1, 0), (0, -1), (-1, -1), (-1, 0), (-1, 1), (0, 1)),
    ),
    "odd-q": (
        ((1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (0, 1)),
        ((1, 1), (1, 0), (0, -1), (-1, 0), (-1, 1), (0, 1)),
    ),
    "even-q": (
        ((1, 1), (1, 0), (0, -1), (-1, 0), (-1, 1), (0, 1)),
        ((1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (0, 1)),
    ),
}


def check_layout(layout: object, at: str = "layout") -> str:
    """``layout`` when it is one of :data:`LAYOUTS`, else :class:`RequestError` at ``at``."""
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise RequestError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}", at=at)
    return layout


def pointy(layout: str) -> bool:
    """True for the pointy-top layouts (``-r``: rows shoved), false for flat-top (``-q``)."""
    return check_layout(layout).endswith("-r")


def tile_size_of(cell_size: object, at: str = "cell_size") -> tuple[float, float]:
    """The tile size ``(w, h)`` a hex map's ``cell_size`` means: a number ``s`` is ``(s, s)``,
    a pair is itself; both finite and > 0, else :class:`RequestError` at ``at``."""
    if isinstance(cell_size, (list, tuple, np.ndarray)) and len(cell_size) == 2:
        pair = tuple(cell_size)
    else:
        pair = (cell_size, cell_size)
    for value in pair:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise RequestError("cell_size must be a number or a pair [w, h] of numbers", at=at)
        if not np.isfinite(value) or value <= 0:
            raise RequestError(f"cell_size must be finite and > 0, not {value!r}", at=at)
    return float(pair[0]), float(pair[1])


def _out(value: np.ndarray):
    """A 0-d result as a Python int or float; arrays as they are."""
    if np.ndim(value) == 0:
        return value.item()
    return value


def _shoved(layout: str, index: np.ndarray) -> np.ndarray:
    """1 where row (``-r``) or column (``-q``) ``index`` is shoved by half a hex, else 0."""
    odd = np.bitwise_and(index, 1)
    return odd if layout.startswith("odd") else 1 - odd


def _half(layout: str, index: np.ndarray) -> np.ndarray:
    """How far the shoved coordinate ``index`` moves the other one between offset and axial:
    ``(index - (index & 1)) / 2`` for odd layouts, ``(index + (index & 1)) / 2`` for even."""
    sign = -1 if layout.startswith("odd") else 1
    return (index + sign * np.bitwise_and(index, 1)) // 2


def to_axial(layout: str, x, y):
    """Offset cell ``(x, y)`` -> axial ``(q, r)``. Negative cells follow the same parity rule
    (row -1 is odd)."""
    x = np.asarray(x, dtype=np.int64)
    y = np.asarray(y, dtype=np.int64)
    if pointy(layout):
        return _out(x - _half(layout, y)), _out(y)
    return _out(x), _out(y - _half(layout, x))


def from_axial(layout: str, q, r):
    """Axial ``(q, r)`` -> offset cell ``(x, y)``; the inverse of :func:`to_axial`."""
    q = np.asarray(q, dtype=np.int64)
    r = np.asarray(r, dtype=np.int64)
    if pointy(layout):
        return _out(q + _half(layout, r)), _out(r)
    return _out(q), _out(r + _half(layout, q))


def to_cube(layout: str, x, y):
    """Offset cell ``(x, y)`` -> cube ``(q, r, s)``, ``q + r + s == 0``."""
    q, r = to_axial(layout, x, y)
    return q, r, _out(-np.asarray(q) - np.asarray(r))


def distance(layout: str, a, b):
    """Hex steps between cells ``a`` and ``b``: ``(x, y)`` pairs, or ``(n, 2)`` arrays of them
    (then an ``(n,)`` int array)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    qa, ra = to_axial(layout, a[..., 0], a[..., 1])
    qb, rb = to_axial(layout, b[..., 0], b[..., 1])
    dq = np.asarray(qa) - qb
    dr = np.asarray(ra) - rb
    return _out((np.abs(dq) + np.abs(dr) + np.abs(dq + dr)) // 2)


def neighbours(layout: str, x: int, y: int) -> list[tuple[int, int]]:
    """The six cells next to ``(x, y)``, in :data:`DIRECTIONS`' order, from Red Blob Games'
    offset tables: a slow reference (no map bounds)."""
    shoved_coordinate = y if pointy(layout) else x
    table = _NEIGHBOUR_TABLES[layout][shoved_coordinate & 1]
    return [(x + dx, y + dy) for dx, dy in table]


def centre(layout: str, x, y):
    """Cell ``(x, y)``'s centre in tile units (Godot's ``map_to_local`` / ``tile_size``); the
    bounding box of an unshoved cell ``(0, 0)`` has its corner at ``(0, 0)``."""
    x = np.asarray(x, dtype=np.int64)
    y = np.asarray(y, dtype=np.int64)
    if pointy(layout):
        cx = x + 0.5 + 0.5 * _shoved(layout, y)
        cy = OVERLAP * y + 0.5
    else:
        cx = OVERLAP * x + 0.5
        cy = y + 0.5 + 0.5 * _shoved(layout, x)
    return _out(np.asarray(cx, dtype=np.float64)), _out(np.asarray(cy, dtype=np.float64))


def world_centre(layout: str, x, y, origin=(0.0, 0.0), tile_size=1.0):
    """Cell ``(x, y)``'s centre in world units: ``origin + centre(layout, x, y) * tile_size``
    (``tile_size`` a number or ``(w, h)``)."""
    w, h = tile_size_of(tile_size)
    cx, cy = centre(layout, x, y)
    return _out(origin[0] + np.asarray(cx) * w), _out(origin[1] + np.asarray(cy) * h)


def cell_at(layout: str, px, py, origin=(0.0, 0.0), tile_size=1.0):
    """The cell whose hexagon contains the world point ``(px, py)`` (it may lie outside the
    map). On a shared edge it picks as Godot's ``local_to_map`` does: ``-r``: the hexagon on
    the right of a vertical edge, the one above an upper-left edge (and a top corner), the
    one below an upper-right edge; ``-q``: the hexagon below a horizontal edge, the one on
    the left of a lower-left edge (and a left corner), the one on the right of an upper-left
    edge (Godot computes in float32, this in float64: points within about 1e-6 tile of an
    edge may differ)."""
    w, h = tile_size_of(tile_size)
    u = (np.asarray(px, dtype=np.float64) - origin[0]) / w
    v = (np.asarray(py, dtype=np.float64) - origin[1]) / h
    # Rows (columns) become unit bands; inside a band, each cell's box is a unit square
    # whose two corners on the side of the previous band belong to that band's cells.
    along, across = (u, v) if pointy(layout) else (v, u)
    across = across / OVERLAP
    band = np.floor(across).astype(np.int64)
    shoved = _shoved(layout, band)
    shifted = along - 0.5 * shoved
    line = np.floor(shifted).astype(np.int64)
    inside_across = across - band
    inside_along = shifted - line - 0.5
    # The corner triangles: slope (1 / OVERLAP - 1) / 0.5 = 2/3 across per unit along.
    slope = 1.0 / OVERLAP - 1.0
    if pointy(layout):
        first = inside_along * slope + 0.5 * inside_across <= 0  # upper-left: the row above
        second = inside_along * slope - 0.5 * inside_across > 0  # upper-right: the row above
    else:
        first = -0.5 * inside_across - inside_along * slope > 0  # upper-left: the column left
        second = 0.5 * inside_across - inside_along * slope <= 0  # lower-left: the column left
    line = np.where(first, line - 1 + shoved, np.where(second, line + shoved, line))
    band = np.where(first | second, band - 1, band)
    if pointy(layout):
        return _out(line), _out(band)
    return _out(band), _out(line)


def _cube_round(q: np.ndarray, r: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The axial ``(q, r)`` of the hex containing fractional cube ``(q, r, s)``: each rounded
    half up, then the one that moved most recomputed from the other two."""
    rq, rr, rs = np.floor(q + 0.5), np.floor(r + 0.5), np.floor(s + 0.5)
    dq, dr, ds = np.abs(rq - q), np.abs(rr - r), np.abs(rs - s)
    fix_q = (dq > dr) & (dq > ds)
    fix_r = ~fix_q & (dr > ds)
    rq = np.where(fix_q, -rr - rs, rq)
    rr = np.where(fix_r, -rq - rs, rr)
    return rq.astype(np.int64), rr.astype(np.int64)


def hex_line(layout: str, a, b) -> np.ndarray:
    """The cells of the hex line from ``a`` to ``b`` (``(x, y)`` pairs), both included: an
    ``(n + 1, 2)`` int64 array for cells ``n`` steps apart, each next to the one before.
    Red Blob Games' line: ``i / n`` of the way in cube coordinates, both ends moved by
    :data:`LINE_NUDGE` first, rounded as in :func:`cell_at`'s cube rounding (half up, then
    the component that moved most recomputed)."""
    steps = distance(layout, a, b)
    qa, ra, sa = (np.float64(c) + n for c, n in zip(to_cube(layout, a[0], a[1]), LINE_NUDGE))
    qb, rb, sb = (np.float64(c) + n for c, n in zip(to_cube(layout, b[0], b[1]), LINE_NUDGE))
    t = np.arange(steps + 1, dtype=np.float64) / max(steps, 1)
    q, r = _cube_round(qa + (qb - qa) * t, ra + (rb - ra) * t, sa + (sb - sa) * t)
    x, y = from_axial(layout, q, r)
    return np.stack([np.asarray(x), np.asarray(y)], axis=1)


def ball(layout: str, x: int, y: int, radius: int) -> np.ndarray:
    """The cells within ``radius`` hex steps of ``(x, y)`` (``3 r (r + 1) + 1`` of them, no map
    bounds), an ``(n, 2)`` int64 array sorted by row, then column."""
    if radius < 0:
        return np.empty((0, 2), dtype=np.int64)
    q0, r0 = to_axial(layout, x, y)
    span = np.arange(-radius, radius + 1)
    dq, dr = np.meshgrid(span, span, indexing="ij")
    keep = np.abs(dq + dr) <= radius
    cx, cy = from_axial(layout, q0 + dq[keep], r0 + dr[keep])
    cells = np.stack([np.asarray(cx), np.asarray(cy)], axis=1)
    return cells[np.lexsort((cells[:, 0], cells[:, 1]))]
