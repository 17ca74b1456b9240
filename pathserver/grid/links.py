"""The grid's side of a map's floors and links (issue #35): floors stacked into one grid
(:func:`stack_floors`) and links as the kernels take them (:func:`link_arrays`). What
floors and links are, and their checks, are :mod:`pathserver.floors`'.
"""

from __future__ import annotations

import numpy as np

from pathserver.floors import MAX_FLOORS, MAX_LINKS, NO_LINKS, Links, check_floors, check_links, check_point

__all__ = ["MAX_FLOORS", "MAX_LINKS", "NO_LINKS", "Links", "check_floors", "check_links", "check_point",
           "stack_floors", "link_arrays"]


def floor_rows(floor_height: int, layout: str | None = None) -> int:
    """The rows of the stacked grid from one floor's first row to the next's: the floor's
    and one blocked row, or two on a hex map of shifted rows (``odd-r``, ``even-r``) where
    one would make the stride odd: every floor's rows keep their parity, so their
    neighbours."""
    rows = floor_height + 1
    return rows + 1 if layout is not None and layout.endswith("-r") and rows % 2 else rows


def stack_floors(layers: np.ndarray, fill, rows: int | None = None) -> np.ndarray:
    """(F, H, W) layers as one grid, floor f's rows from ``f * rows`` (``rows``: see
    :func:`floor_rows`, H + 1 by default), rows of ``fill`` between each two floors: no
    grid move, and no footprint, reaches from one floor to the next."""
    floors, height, width = layers.shape
    rows = height + 1 if rows is None else rows
    out = np.full(((floors - 1) * rows + height, width), fill, dtype=layers.dtype)
    for f in range(floors):
        out[f * rows:f * rows + height] = layers[f]
    return out


def link_arrays(links: Links, multipliers: dict, floor_rows: int, width: int, n: int) -> tuple:
    """``(link_first, link_to, link_cost, link_id, entries)`` of
    :func:`pathserver.core.links.astar_links` for ``links`` on the stacked grid of ``n``
    cells, ``floor_rows`` a floor's (:func:`floor_rows`): both ways of a two-way link, each cost times its tag's multiplier (None: the
    link is barred), sorted by source; ``entries`` each source's ``x, y`` and cheapest link."""
    rows = []
    for k in range(len(links)):
        multiplier = multipliers.get(links.tags[k], 1.0) if links.tags[k] is not None else 1.0
        if multiplier is None:
            continue
        (ax, ay, af), (bx, by, bf) = links.ends[k].tolist()
        a = (af * floor_rows + ay) * width + ax
        b = (bf * floor_rows + by) * width + bx
        cost = float(links.cost[k]) * multiplier
        rows.append((a, b, cost, k))
        if links.two_way[k]:
            rows.append((b, a, cost, k))
    rows.sort(key=lambda row: row[0])
    sources = np.array([row[0] for row in rows], dtype=np.int64)
    first = np.zeros(n + 1, dtype=np.int64)
    np.add.at(first, sources + 1, 1)
    first = np.cumsum(first)
    to = np.array([row[1] for row in rows], dtype=np.int64)
    cost = np.array([row[2] for row in rows], dtype=np.float64)
    ids = np.array([row[3] for row in rows], dtype=np.int64)
    entries = np.zeros((0, 3), dtype=np.float64)
    if len(rows):
        unique, start = np.unique(sources, return_index=True)
        cheapest = np.minimum.reduceat(cost, start)
        entries = np.column_stack((unique % width, unique // width, cheapest)).astype(np.float64)
    for array in (first, to, cost, ids, entries):
        array.setflags(write=False)
    return first, to, cost, ids, entries
