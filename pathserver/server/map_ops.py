"""The ops on maps: ``maps``, ``update``, ``put_map``, ``get_map`` and ``drop_map``.

With shared state (``pathserver.editlog``) an ``update`` is split in two for the socket
loop: :func:`submit_update` checks and hands it over, :func:`update_reply` answers it once
applied; edit replies carry the entry's ``seq``."""

from __future__ import annotations

import logging
import os
import time

import numpy as np

from pathserver.errors import MapLoadError, OutOfBoundsError, RequestError
from pathserver.floors import check_floor, check_links
from pathserver.grid.gridmap import GridMap
from pathserver.grid.values import floor_cell
from pathserver.options import REGION
from pathserver.protocol.cells import MapCells
from pathserver.protocol.codec import UPLOAD_OP, encode
from pathserver.protocol.replies import ok_reply
from pathserver.protocol.requests import (
    DropMapRequest,
    GetMapRequest,
    MapsRequest,
    PutMapRequest,
    UpdateRequest,
    parse_put_map,
)
from pathserver.server.failures import error_reply_bytes
from pathserver.server.spaces import covered_cells

log = logging.getLogger("pathserver.server")


def handle_drop_map(request: DropMapRequest, registry) -> dict:
    generation = registry.drop_map(request.map)
    return ok_reply(request.id, {"map": request.map, "gen": generation, **_committed(registry)})


def handle_maps(request: MapsRequest, registry) -> dict:
    return ok_reply(request.id, {"maps": [_map_entry(info) for info in registry.info()]})


def handle_update(request: UpdateRequest, registry) -> dict:
    gridmap = registry.get(request.map)
    rects, cells = update_cells(request, gridmap)
    links = update_links(request, gridmap)
    edited = registry.apply_edit(request.map, rects=rects, cells=cells, solid=request.solid, cost=request.cost,
                                 if_gen=request.if_gen, **({} if links is None else {"links": links}))
    return ok_reply(request.id, {"map": request.map, "gen": edited.generation, **_committed(registry)})


def update_links(request: UpdateRequest, gridmap):
    """An ``update``'s new ``links``, checked against the map (its floors, size and tag
    names), or None when it gives none."""
    if request.links is None:
        return None
    return check_links(request.links, gridmap.floors, gridmap.width, gridmap.floor_height,
                       tag_names=gridmap.tag_names)


def submit_update(request: UpdateRequest, state, context) -> None:
    """Hand an ``update`` to the shared state without waiting (the socket loop's way):
    ``state.submit_edit`` appends it, and :func:`update_reply` makes the reply once it is
    applied here. Raises what :func:`handle_update` raises before anything is written."""
    gridmap = state.get(request.map)
    rects, cells = update_cells(request, gridmap)
    links = update_links(request, gridmap)
    state.submit_edit(request.map, rects, cells, solid=request.solid, cost=request.cost, if_gen=request.if_gen,
                      context=context, **({} if links is None else {"links": links}))


def update_reply(rid, name: str, outcome, seq: str) -> tuple[bytes, str | None]:
    """The reply to an ``update`` the shared state applied (``outcome``: the new map) or
    failed (``outcome``: the exception)."""
    if isinstance(outcome, BaseException):
        return error_reply_bytes(rid, outcome)
    return encode(ok_reply(rid, {"map": name, "gen": outcome.generation, "seq": seq})), None


def update_cells(request: UpdateRequest, gridmap) -> tuple[list, list]:
    """An ``update``'s rectangles and cells as grid cells of ``gridmap``: ``(x, y, w, h)``
    rectangles clipped to the map and ``(x, y)`` cells, on a map of several floors
    ``(x, y, w, h, floor)`` and ``(x, y, floor)`` (as :meth:`GridMap.edit` takes them);
    OutOfBoundsError for one off the map."""
    world = request.space == "world"
    rects = []
    for i, rect in enumerate(request.rects):
        at = f"rects[{i}]"
        floor = check_floor(rect[4], gridmap.floors, f"{at}[4]") if len(rect) > 4 else 0
        x, y, w, h = gridmap.world_rects_to_grid([rect[:4]])[0] if world else rect[:4]
        rects.append(covered_cells(gridmap, x, y, w, h, at) + ((floor,) if gridmap.floors > 1 else ()))
    cells = []
    for i, cell in enumerate(request.cells):
        at = f"cells[{i}]"
        floor = check_floor(cell[2], gridmap.floors, f"{at}[2]") if len(cell) > 2 else 0
        x, y = cell[:2]
        if world:
            x, y = gridmap.world_to_grid([(x, y)])[0]
        cx, cy = floor_cell(x, y, at)
        if not (0 <= cx < gridmap.width and 0 <= cy < gridmap.floor_height):
            raise OutOfBoundsError(f"cell ({cx}, {cy}) is outside the map ({gridmap.width}x{gridmap.floor_height})",
                                   at=at)
        cells.append((cx, cy, floor) if gridmap.floors > 1 else (cx, cy))
    return rects, cells


def handle_put_map(request: PutMapRequest, registry, started: float | None = None) -> dict:
    """Build the uploaded map (clearance, and the components of 1x1 units, so the first
    search pays no build) and serve it. ``started``: when reading the body began, for the
    build time ``maps`` reports (``load_ms``)."""
    started = time.perf_counter() if started is None else started
    # Refused before the build, which takes a while on a large map; checked again at the swap.
    registry.check_put(request.map, request.width * request.height * request.cells.floors)
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
                                     name=request.map, shape=request.wire.get("shape", "square"),
                                     layout=request.wire.get("layout"))
    except MapLoadError as exc:  # the tag names and classes (the layers are checked already)
        raise RequestError(exc.message, at=exc.at) from None
    built = time.perf_counter()
    gridmap.layer_for(1, 1)
    done = time.perf_counter()
    return gridmap, {"clearance_ms": (built - started) * 1000.0, "components_ms": (done - built) * 1000.0}


def build_upload(fields: dict) -> GridMap:
    """The GridMap of a ``put_map``'s fields as ``handle_put_map`` passes them to the
    registry (``wire``): how a worker behind a broker rebuilds another worker's upload."""
    return build_map(parse_put_map(0, {"id": 0, "op": UPLOAD_OP, **fields}))[0]


def handle_get_map(request: GetMapRequest, registry) -> dict:
    gridmap = registry.get(request.map)
    height = gridmap.floor_height
    x, y, w, h = request.region or (0, 0, gridmap.width, height)
    if x < 0 or y < 0 or x + w > gridmap.width or y + h > height:
        raise OutOfBoundsError(f"region [{x}, {y}, {w}, {h}] is not wholly inside the map "
                               f"({gridmap.width}x{height} cells)", at=REGION.name)

    def window(layer):
        """The region of ``layer`` on every floor, floor 0 first."""
        if layer is None:
            return None
        return np.concatenate([layer[row:row + h, x:x + w] for row in
                               range(y, gridmap.height, gridmap.floor_rows)]) if gridmap.floors > 1 else layer[y:y + h, x:x + w]

    cells = MapCells(
        window(gridmap.walkable),
        None if gridmap.uniform_cost else window(gridmap.cost),
        window(gridmap.heights),
        window(gridmap.tags),
    )
    ox, oy = gridmap.origin
    return ok_reply(request.id, {
        "map": request.map, "gen": gridmap.generation, "width": gridmap.width, "height": height,
        "origin": [float(ox), float(oy)], "cell_size": wire_cell_size(gridmap), REGION.name: [x, y, w, h],
        **cells.to_wire(with_costs=_needs_costs(gridmap)),
        **({"tag_names": dict(gridmap.tag_names)} if gridmap.tag_names else {}),
        **({"classes": {name: dict(rules) for name, rules in gridmap.classes.items()}} if gridmap.classes else {}),
        **({"shape": "hex", "layout": gridmap.layout} if gridmap.hex else {}),
        **({"floors": gridmap.floors} if gridmap.floors > 1 else {}),
        **({"links": gridmap.links.to_wire(gridmap.floors)} if len(gridmap.links) else {}),
    })


def wire_cell_size(gridmap):
    """A map's ``cell_size`` on the wire: a number, or a hex map's tile size ``[w, h]``
    when it was given so."""
    size = gridmap.cell_size
    return float(size) if isinstance(size, float) else [float(size[0]), float(size[1])]


def _needs_costs(gridmap) -> bool:
    """Whether ``get_map`` sends ``costs`` for this map: some walkable cell's cost is not
    a whole number, or above 255."""
    if gridmap.uniform_cost:
        return False
    table = gridmap.cost_table
    if not np.any((table > 255.0) | (table != np.floor(table))):
        return False  # every cost the map holds is in its table (which may hold stale ones too)
    return MapCells(gridmap.walkable, gridmap.cost).needs_costs()


def _committed(registry) -> dict:
    """``{"seq": id}`` of the change this thread just made through a shared state, else
    nothing (a server without ``--state``)."""
    committed = getattr(registry, "committed_seq", None)
    return {} if committed is None else {"seq": committed()}


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
    ("shape", "shape"),
    ("layout", "layout"),
    ("floors", "floors"),
    ("links", "links"),
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
        elif key == "cell_size" and isinstance(value, tuple):
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

