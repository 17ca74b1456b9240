"""Writing Tiled maps: a :class:`~pathserver.grid.gridmap.GridMap` as ``.tmj`` bytes
(:func:`encode`), as docs/design.md, "Tiled maps", says; reading is
:mod:`pathserver.maps.tiled`'s.
"""

from __future__ import annotations

import base64
import json
import zlib

import numpy as np

from pathserver.hexes import tile_size_of
from pathserver.maps.files import floor_layers
from pathserver.maps.tags import json_property
from pathserver.maps.tiled import PLAIN_DATA_CELLS, TILED_VERSION, hex_transform
from pathserver.maps.tiled_links import LINKS_LAYER, link_objects


def holds_tags(gridmap) -> bool:
    """Whether a ``.tmj`` can hold ``gridmap``'s tags itself: every tag value in use has a
    name (a tile's ``tag`` is a name). The others go to the sidecar."""
    if gridmap.tags is None:
        return False
    named = set(gridmap.tag_names.values())
    return all(int(v) in named for v in np.unique(gridmap.tags) if v)


def _hex_header(gridmap, properties: list) -> tuple[int, int, dict, tuple[float, float]]:
    """``(tilewidth, tileheight, fields, origin)`` for hex ``gridmap``: its tile size in
    whole pixels, the other hexagonal map fields (``hexsidelength`` half the tile across,
    stagger axis and index) and the origin they give. A ``cell_size`` property is added to
    ``properties`` when they cannot give its tile size exactly (not whole numbers, or an
    odd size across)."""
    width, height = tile_size_of(gridmap.cell_size)
    tile_width, tile_height = _whole(width), _whole(height)
    pointy = gridmap.layout.endswith("-r")
    side = (tile_height if pointy else tile_width) // 2
    base_origin, tile_size = hex_transform(gridmap.layout, tile_width, tile_height, side)
    if tile_size != (width, height):
        size = gridmap.cell_size
        if isinstance(size, tuple):
            properties.append({"name": "cell_size", "type": "string", "value": json.dumps(list(size))})
        else:
            properties.append({"name": "cell_size", "type": "float", "value": size})
    index, _, axis = gridmap.layout.partition("-")
    grid = {"hexsidelength": side, "staggeraxis": "y" if axis == "r" else "x", "staggerindex": index}
    return tile_width, tile_height, grid, base_origin


def _whole(size: float) -> int:
    """A tile size as Tiled's whole pixels: ``size`` when it is whole, else the nearest >= 1."""
    return int(size) if size >= 1 and size == int(size) else max(1, round(size))


def encode(gridmap) -> tuple[bytes, dict]:
    """``.tmj`` bytes for ``gridmap``; origin and cell size travel as map properties, each
    floor of several is a group of layers with a ``floor`` property, the links are a
    ``links`` object layer of polylines."""
    height, width = gridmap.floor_height, gridmap.width

    def rows(layer):  # the floors one under another: the grids below are split by floor
        return np.concatenate(floor_layers(gridmap, layer))

    walkable, cost = rows(gridmap.walkable), rows(gridmap.cost)
    gids = np.zeros(walkable.shape, dtype=np.uint32)
    gids[~walkable] = 1
    tiles = [{"id": 0, "properties": [{"name": "solid", "type": "bool", "value": True}]}]
    costed = walkable & (cost != 1.0)
    if costed.any():
        distinct, inverse = np.unique(cost[costed], return_inverse=True)
        gids[costed] = (inverse.reshape(-1) + 2).astype(np.uint32)
        tiles += [
            {"id": i + 1, "properties": [{"name": "cost", "type": "float", "value": float(v)}]}
            for i, v in enumerate(distinct)
        ]
    tag_gids = None
    properties = []
    if holds_tags(gridmap):
        # Tag tiles follow the terrain tiles; tile i of the tileset is gid i + 1.
        by_value = {value: name for name, value in gridmap.tag_names.items()}
        lookup = np.zeros(256, dtype=np.uint32)
        for value, name in sorted(by_value.items()):
            lookup[value] = len(tiles) + 1
            tiles.append({"id": len(tiles), "properties": [{"name": "tag", "type": "string", "value": name}]})
        tag_gids = lookup[rows(gridmap.tags)]
        properties.append({"name": "tag_names", "type": "string", "value": json_property(gridmap.tag_names)})
        if gridmap.classes:
            properties.append({"name": "classes", "type": "string", "value": json_property(gridmap.classes)})
    if gridmap.hex:
        tile_width, tile_height, grid, base_origin = _hex_header(gridmap, properties)
    else:
        grid, base_origin = {}, (0.0, 0.0)
        cell_size = gridmap.cell_size
        tile_width = tile_height = int(cell_size) if cell_size >= 1 and cell_size == int(cell_size) else 1
        if cell_size != tile_width:
            properties.append({"name": "cell_size", "type": "float", "value": cell_size})
    if gridmap.origin != base_origin:
        properties.append({"name": "origin_x", "type": "float", "value": gridmap.origin[0]})
        properties.append({"name": "origin_y", "type": "float", "value": gridmap.origin[1]})
    layers, top = [], []  # (tile layer, its gids) and the document's layers
    for floor in range(gridmap.floors):
        layer = {
            "data": None,
            "height": height,
            "id": len(layers) + (gridmap.floors if gridmap.floors > 1 else 0) + 1,  # groups' ids first
            "name": "pathfinding",
            "opacity": 1,
            "properties": [{"name": "pathfinding", "type": "bool", "value": True}],
            "type": "tilelayer",
            "visible": True,
            "width": width,
            "x": 0,
            "y": 0,
        }
        in_floor = [(layer, gids[floor * height:(floor + 1) * height])]
        if tag_gids is not None:
            tag_layer = dict(layer, id=layer["id"] + 1, name="tags", properties=[], visible=False)
            in_floor.append((tag_layer, tag_gids[floor * height:(floor + 1) * height]))
        layers.extend(in_floor)
        if gridmap.floors == 1:
            top.extend(entry for entry, _ in in_floor)
        else:
            top.append({"id": floor + 1, "layers": [entry for entry, _ in in_floor], "name": f"floor {floor}",
                        "opacity": 1, "properties": [{"name": "floor", "type": "int", "value": floor}],
                        "type": "group", "visible": floor == 0, "x": 0, "y": 0})
    if gridmap.hex:
        tiled_hex = hex_transform(gridmap.layout, tile_width, tile_height, grid["hexsidelength"])
    else:
        tiled_hex = None
    objects = link_objects(gridmap, tile_width, tile_height, tiled_hex)
    if objects:
        top.append({"draworder": "topdown", "id": len(layers) + len(top) + 1, "name": LINKS_LAYER, "objects": objects,
                    "opacity": 1, "type": "objectgroup", "visible": True, "x": 0, "y": 0})
    document = {
        "compressionlevel": -1,
        "height": height,
        "infinite": False,
        "layers": top,
        "nextlayerid": max(entry["id"] for entry in top + [entry for entry, _ in layers]) + 1,
        "nextobjectid": len(objects) + 1,
        "orientation": "hexagonal" if gridmap.hex else "orthogonal",
        "renderorder": "right-down",
        "tiledversion": TILED_VERSION,
        "tileheight": tile_height,
        "tilesets": [
            {
                "columns": len(tiles),
                "firstgid": 1,
                "margin": 0,
                "name": "pathserver",
                "spacing": 0,
                "tilecount": len(tiles),
                "tileheight": tile_height,
                "tiles": tiles,
                "tilewidth": tile_width,
            }
        ],
        "tilewidth": tile_width,
        "type": "map",
        "version": "1.10",
        "width": width,
    }
    document.update(grid)
    if properties:
        document["properties"] = properties
    if gids.size <= PLAIN_DATA_CELLS:
        # One map row per line: small maps stay readable and diff well.
        for i, (entry, _) in enumerate(layers):
            entry["data"] = f"@@DATA{i}@@"
        text = json.dumps(document, indent=1)
        for i, (_, layer_gids) in enumerate(layers):
            rows = ",\n".join("  " + ",".join(map(str, row)) for row in layer_gids.tolist())
            text = text.replace(f'"@@DATA{i}@@"', "[\n" + rows + "\n  ]")
    else:
        for entry, layer_gids in layers:
            entry["data"] = base64.b64encode(zlib.compress(layer_gids.astype("<u4").tobytes())).decode("ascii")
            entry["encoding"] = "base64"
            entry["compression"] = "zlib"
        text = json.dumps(document, indent=1)
    return (text + "\n").encode("utf-8"), {}
