"""The requests :mod:`pathserver.client` sends, as wire fields, and its replies read back:
numpy points and arrays as lists or bins (:func:`compact`, :func:`columns_fields`), packed
answers as numpy arrays (:func:`path_reply`, :func:`paths_reply`, :func:`query_reply`).
"""

from __future__ import annotations

import msgpack
import numpy as np

from pathserver import arrays
from pathserver.floors import Links
from pathserver.protocol import packed as packing
from pathserver.protocol.cells import MapCells
from pathserver.protocol.packed import PackedPaths


def plain(value):
    """msgpack ``default``: numpy scalars and arrays as plain numbers and lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot send {type(value).__name__}")


def encode(request: dict) -> bytes:
    return msgpack.packb(request, use_bin_type=True, default=plain)


def decode(body: bytes):
    try:
        reply = msgpack.unpackb(body, raw=False, strict_map_key=False)
    except Exception:
        return None
    return reply if isinstance(reply, dict) else None


def path_fields(map, start, goal, unit_size, options) -> dict:
    fields = {"map": map, "start": list(start), "unit_size": unit_size, **compact(options)}
    if goal is not None:
        fields["goal"] = list(goal)
    return fields


_INT32_RANGE = np.iinfo(np.int32)


def compact(options: dict) -> dict:
    """``options`` with ``avoid``'s cells, when given as an int array, as the wire's bin of
    int32 ``x, y`` pairs (8 bytes a cell, no walk over them on either side); other cells go
    as given."""
    avoid = options.get("avoid")
    if type(avoid) is not dict:
        return options
    cells = avoid.get("cells")
    if not (isinstance(cells, np.ndarray) and cells.dtype.kind in "iu" and cells.ndim == 2 and cells.shape[1] == 2):
        return options
    if cells.dtype.itemsize > 4 or cells.dtype == np.uint32:  # past int32's range: as given
        if cells.size and (cells.min() < _INT32_RANGE.min or cells.max() > _INT32_RANGE.max):
            return options
    return {**options, "avoid": {**avoid, "cells": arrays.to_bin(cells, arrays.INT32)}}


def path_reply(reply: dict, options: dict) -> dict:
    """A ``path`` reply, its ``path`` as an (n, 2) array when it came packed."""
    if options.get("packed"):
        reply["path"] = packing.points_from_bin(reply["path"], options.get("space") or "grid", "path")
    return reply


def paths_reply(reply: dict, options: dict):
    """A ``paths`` reply's ``results``, or its packed columns as a PackedPaths."""
    if options.get("packed"):
        return PackedPaths.from_reply(reply, options.get("space") or "grid")
    return reply["results"]


def columns_fields(map, starts, goals, unit_size, options) -> dict:
    """A packed batch's fields: ``starts`` and ``goals`` as bins of ``space``'s pairs (grid
    coordinates floored to their cells), the reply packed."""
    space = options.get("space") or "grid"
    dtype = packing.point_dtype(space)
    ends = []
    for points in (starts, goals):
        points = np.asarray(points).reshape(-1, 2)
        if space == "grid" and points.dtype.kind == "f":
            points = np.floor(points)
        ends.append(arrays.to_bin(points, dtype))
    return {"map": map, "unit_size": unit_size, **compact(options), "packed": True, "starts": ends[0],
            "goals": ends[1]}


def query_fields(map, unit_size, options, **given) -> dict:
    """A query's fields: numpy arrays of points as lists (``plain``), positions as a bin."""
    fields = {"map": map, "unit_size": unit_size, **given, **compact(options)}
    if "positions" in fields:
        fields["positions"] = arrays.to_bin(np.asarray(fields["positions"], dtype=np.float64).reshape(-1, 2),
                                            arrays.FLOAT32)
    return fields


def query_reply(op: str, reply: dict) -> dict:
    """A query's reply with its bins as numpy arrays (read-only)."""
    if op == "reachable":
        reply["cells"] = arrays.pairs(reply["cells"], arrays.INT32, "cells")
        reply["costs"] = arrays.values(reply["costs"])
    elif op == "field":
        reply["cost"] = arrays.values(reply["cost"], shape=(reply["height"], reply["width"]))
    elif op == "next_steps":
        reply["steps"] = arrays.pairs(reply["steps"], arrays.FLOAT32, "steps")
        reply["remaining"] = arrays.values(reply["remaining"])
    return reply


def paths_fields(map, queries, unit_size, options) -> dict:
    entries = []
    for query in queries:
        if isinstance(query, dict):
            entries.append(compact(query))
        else:
            start, goal = query
            entries.append({"start": list(start), "goal": list(goal)})
    return {"map": map, "unit_size": unit_size, "requests": entries, **compact(options)}


def put_map_fields(map, walkable_or_costs, costs, heights, tags, origin, cell_size, tag_names=None,
                    classes=None, shape=None, layout=None, links=None) -> dict:
    first = np.asarray(walkable_or_costs)
    floors = first.shape[0] if first.ndim == 3 else 1
    if first.ndim == 3:
        # Floors (floors, h, w) one under another, floor 0 first, as put_map takes them.
        walkable_or_costs, costs, heights, tags = (
            None if layer is None else np.asarray(layer).reshape(-1, first.shape[-1])
            for layer in (first, costs, heights, tags))
    cells = MapCells.from_arrays(walkable_or_costs, costs=costs, heights=heights, tags=tags)
    size = [float(v) for v in cell_size] if isinstance(cell_size, (tuple, list)) else float(cell_size)
    fields = {"map": map, "width": cells.width, "height": cells.height // floors, **cells.to_wire(),
              "origin": [float(origin[0]), float(origin[1])], "cell_size": size}
    if floors > 1:
        fields["floors"] = floors
    if links is not None:
        fields["links"] = wire_links(links, floors)
    if shape is not None:
        fields["shape"] = shape
    if layout is not None:
        fields["layout"] = layout
    if tag_names is not None:
        fields["tag_names"] = dict(tag_names)
    if classes is not None:
        fields["classes"] = {name: dict(rules) for name, rules in dict(classes).items()}
    return fields


def wire_links(links, floors: int) -> list:
    """Links as the wire takes them: a list of link maps as given, or a map's
    :class:`pathserver.floors.Links`."""
    return links.to_wire(floors) if isinstance(links, Links) else [dict(link) for link in links]


def get_map_fields(map, region) -> dict:
    return {"map": map} if region is None else {"map": map, "region": [int(v) for v in region]}


def update_fields(map, rects, cells, solid, cost, space, if_gen, links=None) -> dict:
    fields = {"map": map}
    if links is not None:
        fields["links"] = [dict(link) for link in links]
    if if_gen is not None:
        fields["if_gen"] = int(if_gen)
    if rects is not None:
        fields["rects"] = [list(r) for r in rects]
    if cells is not None:
        fields["cells"] = [list(c) for c in cells]
    if solid is not None:
        fields["solid"] = solid
    if cost is not None:
        fields["cost"] = cost
    if space is not None:
        fields["space"] = space
    return fields
