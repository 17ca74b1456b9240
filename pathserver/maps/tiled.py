"""Tiled maps (mapeditor.org) in its JSON format: ``.tmj``, or a ``.json`` that is a Tiled
map (``"type": "map"``, or ``tilewidth`` and ``layers``). One tile is one cell; the
layer's data runs row by row from the top, so entry ``y * width + x`` is cell ``[y, x]``.

Cells: gid 0 (no tile) is walkable at ``empty_cost`` (default 1; a sidecar may set another
cost, or null for blocked); any other gid takes its tile's custom properties in its
tileset: ``solid`` (bool) true blocks, ``cost`` (float or int, >= 1) is the terrain cost,
a tile with neither is walkable at cost 1, a gid no tileset covers is an error. A tile's
string property ``tag`` tags the cells showing it (:mod:`pathserver.maps.tags`).
Hexagonal maps are hex maps (:func:`hex_transform`); tile or group layers with an int
property ``floor`` are floors, and object layers named ``links`` hold the links
(:mod:`pathserver.maps.tiled_links`), as docs/guide.md, "Floors and links", says.

Not read: zstd-compressed layer data (in Tiled, set the map's Tile Layer Format to CSV or
Base64 (zlib)), infinite maps, the staggered (isometric) orientation, XML tilesets
(``.tsx``: export them as JSON). Which layer is read, the flags, encodings, tilesets, the
hex world transform, and what writing produces: docs/design.md, "Tiled maps".
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pathserver.errors import RequestError
from pathserver.floors import check_floors
from pathserver.hexes import OVERLAP
from pathserver.maps.files import (
    Decoded,
    check_dimensions,
    is_number,
    is_tiled_document,
    map_error,
    parse_json,
    read_file,
    tag_values,
    tile_sizes,
    tiled_objects,
    tiled_properties,
)
from pathserver.maps.tags import check_classes, check_tag_names
from pathserver.maps.tiled_links import LINKS_LAYER, pixel_cells, read_links

#: A Tiled JSON file bigger than this is refused (a 4096 x 4096 CSV map is about 40 MB).
MAX_JSON_BYTES = 256 * 1024 * 1024
#: Tiled's flag bits: flipped horizontally, vertically, diagonally, rotated 120 degrees (hex).
FLAG_BITS = 0xF0000000
_GID_MASK = np.uint32(~FLAG_BITS & 0xFFFFFFFF)
#: Maps up to this many cells are written as a plain array, bigger ones as base64 + zlib.
PLAIN_DATA_CELLS = 65536
TILED_VERSION = "1.10.2"
#: Why a map or tileset that is not UTF-8 text is refused.
_NOT_TEXT = "not UTF-8 text (binary data?)"


@dataclass
class _Tileset:
    firstgid: int
    tilecount: int | None
    # local tile id -> (walkable, cost)
    tiles: dict[int, tuple[bool, float]]
    where: str
    # local tile id -> its "tag" property
    tags: dict[int, str]


def _tile_terrain(path, props: dict, where: str) -> tuple[bool, float]:
    solid = props.get("solid", False)
    if not isinstance(solid, bool):
        raise map_error(path, f"field '{where}.properties' solid", f"must be a bool, got {solid!r:.40}")
    cost = props.get("cost", 1.0)
    if not is_number(cost) or cost < 1:
        raise map_error(path, f"field '{where}.properties' cost", f"must be a number >= 1, got {cost!r:.40}")
    return not solid, float(cost)


def _integer(path, value, where: str, minimum: int) -> int:
    """``value`` if it is an integer >= ``minimum``, else MapLoadError at field ``where``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise map_error(path, f"field '{where}'", f"must be an integer >= {minimum}, got {value!r:.40}")
    return value


def _read_tileset(path: Path, entry, index: int, sources: list[Path]) -> _Tileset:
    where = f"tilesets[{index}]"
    if not isinstance(entry, dict):
        raise map_error(path, f"field '{where}'", "must be an object")
    firstgid = _integer(path, entry.get("firstgid"), f"{where}.firstgid", 1)
    owner_path, tileset = path, entry
    if "source" in entry:
        source = entry["source"]
        if not isinstance(source, str) or not source:
            raise map_error(path, f"field '{where}.source'", "must be a file name")
        tileset_path = path.parent / source
        if tileset_path.suffix.lower() not in (".tsj", ".json"):
            raise map_error(
                path,
                f"field '{where}.source'",
                f"external tileset {source!r} is not JSON; in Tiled export it as .tsj or embed it in the map",
            )
        sources.append(tileset_path)
        tileset = parse_json(tileset_path, read_file(tileset_path, MAX_JSON_BYTES), _NOT_TEXT)
        if not isinstance(tileset, dict):
            raise map_error(tileset_path, None, "a tileset must be a JSON object")
        owner_path, where = tileset_path, "tileset"
    tilecount = tileset.get("tilecount")
    if tilecount is not None:
        _integer(owner_path, tilecount, f"{where}.tilecount", 0)
    tiles, tags = {}, {}
    for tile_where, tile in tiled_objects(owner_path, tileset.get("tiles", []), f"{where}.tiles"):
        tile_id = _integer(owner_path, tile.get("id"), f"{tile_where}.id", 0)
        props = tiled_properties(owner_path, tile, tile_where)
        tiles[tile_id] = _tile_terrain(owner_path, props, tile_where)
        tag = props.get("tag", "")
        if not isinstance(tag, str):
            raise map_error(owner_path, f"field '{tile_where}.properties' tag", f"must be a string, got {tag!r:.40}")
        if tag:
            tags[tile_id] = tag
    return _Tileset(firstgid, tilecount, tiles, f"{owner_path}", tags)


def _named_layer(path, layers: list, wanted: str) -> tuple[str, dict]:
    for where, layer in layers:
        if layer.get("name") == wanted:
            return where, layer
    names = ", ".join(repr(layer.get("name")) for _, layer in layers)
    raise map_error(path, "field 'layers'", f"no tile layer named {wanted!r} (tile layers: {names})")


def _choose_layer(path, layers: list, wanted: str | None) -> tuple[str, dict]:
    if not layers:
        raise map_error(path, "field 'layers'", "has no tile layer")
    if wanted is not None:
        return _named_layer(path, layers, wanted)
    for where, layer in layers:
        if tiled_properties(path, layer, where).get("pathfinding") is True:
            return where, layer
    return layers[0]


def _layer_gids(path, layer: dict, where: str, width: int, height: int) -> np.ndarray:
    """The layer's gids, uint32 (H * W,), flags still set."""
    if "chunks" in layer:
        raise map_error(path, f"field '{where}'", "infinite maps (chunked layers) are not supported")
    for key, expected in (("width", width), ("height", height)):
        if layer.get(key, expected) != expected:
            raise map_error(path, f"field '{where}.{key}'", f"is {layer.get(key)!r:.20}, the map's is {expected}")
    data = layer.get("data")
    cells = width * height
    if isinstance(data, list):
        if len(data) != cells:
            raise map_error(path, f"field '{where}.data'", f"has {len(data)} entries, expected {cells}")
        try:
            gids = np.asarray(data)
        except (ValueError, OverflowError):
            gids = np.asarray([], dtype=object)
        if gids.dtype.kind not in "iu" or gids.shape != (cells,):
            raise map_error(path, f"field '{where}.data'", "entries must be integer gids")
        if cells and (gids.min() < 0 or gids.max() > 0xFFFFFFFF):
            raise map_error(path, f"field '{where}.data'", "gids must be between 0 and 2**32 - 1")
        return gids.astype(np.uint32)
    if not isinstance(data, str):
        raise map_error(path, f"field '{where}.data'", "must be an array of gids or a base64 string")
    encoding = layer.get("encoding", "csv")
    if encoding != "base64":
        raise map_error(path, f"field '{where}.encoding'", f"a string layer needs 'base64', got {encoding!r:.20}")
    try:
        blob = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise map_error(path, f"field '{where}.data'", "is not valid base64") from None
    expected = cells * 4
    compression = layer.get("compression", "") or ""
    if compression == "zstd":
        raise map_error(
            path,
            f"field '{where}.compression'",
            "zstd is not supported (no zstd in Python's standard library); in Tiled set the "
            "Tile Layer Format to CSV or Base64 (zlib)",
        )
    if compression in ("zlib", "gzip"):
        wbits = zlib.MAX_WBITS if compression == "zlib" else 16 + zlib.MAX_WBITS
        try:
            # max_length bounds the output, so a tiny "zip bomb" cannot fill memory.
            blob = zlib.decompressobj(wbits).decompress(blob, expected + 1)
        except zlib.error as exc:
            raise map_error(path, f"field '{where}.data'", f"cannot {compression}-decompress: {exc}") from None
    elif compression != "":
        raise map_error(path, f"field '{where}.compression'", f"unknown compression {compression!r:.20}")
    if len(blob) != expected:
        raise map_error(path, f"field '{where}.data'", f"decodes to {len(blob)} bytes, expected {expected}")
    return np.frombuffer(blob, dtype="<u4").astype(np.uint32)


def _map_number(path, props: dict, key: str, positive: bool = False):
    value = props.get(key)
    if value is None:
        return None
    if not is_number(value) or (positive and value <= 0):
        rule = "a finite number > 0" if positive else "a finite number"
        raise map_error(path, f"field 'properties' {key}", f"must be {rule}, got {value!r:.40}")
    return float(value)


def _hex_grid(path, document: dict) -> tuple[str, tuple[float, float], tuple[float, float]]:
    """``(layout, origin, tile size)`` of a hexagonal map: the layout its ``staggeraxis``
    and ``staggerindex`` name, and the world transform that puts each cell's centre where
    Tiled draws it (see the module docstring)."""
    axis, index = document.get("staggeraxis"), document.get("staggerindex")
    if axis not in ("x", "y"):
        raise map_error(path, "field 'staggeraxis'", f"a hexagonal map needs 'x' or 'y', got {axis!r:.20}")
    if index not in ("odd", "even"):
        raise map_error(path, "field 'staggerindex'", f"a hexagonal map needs 'odd' or 'even', got {index!r:.20}")
    tile_w, tile_h = tile_sizes(path, document, "a hexagonal map")
    side = document.get("hexsidelength", 0)  # Tiled reads a missing one as 0
    if not is_number(side) or side < 0:
        raise map_error(path, "field 'hexsidelength'", f"must be a number >= 0, got {side!r:.40}")
    layout = f"{index}-{'r' if axis == 'y' else 'q'}"
    origin, tile_size = hex_transform(layout, tile_w, tile_h, float(side))
    return layout, origin, tile_size


def hex_transform(layout: str, tile_width: float, tile_height: float, side: float) -> tuple:
    """``(origin, tile size)`` putting the cell centres of a hex map of ``layout`` where
    Tiled draws a hexagonal map of that tile size and ``hexsidelength`` ``side``: the tile
    size itself and origin (0, 0) when ``side`` is half the tile across the rows (``-r``)
    or columns (``-q``), as in Godot; otherwise the size across scaled to Tiled's spacing."""
    pointy = layout.endswith("-r")
    across = tile_height if pointy else tile_width
    if 2 * side == across:
        return (0.0, 0.0), (tile_width, tile_height)
    # Tiled's rows (columns) are (across + side) / 2 apart; Godot's OVERLAP of a tile.
    fitted = (across + side) / 2 / OVERLAP
    shift = (across - fitted) / 2
    if pointy:
        return (0.0, shift), (tile_width, fitted)
    return (shift, 0.0), (fitted, tile_height)


def _hex_cell_size(path, props: dict):
    """A hexagonal map's ``cell_size`` property: a number, or a string of JSON ``[w, h]``;
    None when it has none."""
    value = props.get("cell_size")
    if value is None:
        return None
    if isinstance(value, str):
        value = _json_property(path, props, "cell_size")
    if is_number(value) and value > 0:
        return float(value)
    if isinstance(value, list) and len(value) == 2 and all(is_number(v) and v > 0 for v in value):
        return float(value[0]), float(value[1])
    raise map_error(path, "field 'properties' cell_size",
                    f"must be a number > 0 or a string of JSON [w, h], got {value!r:.40}")


def read(path: Path, options: dict) -> Decoded:
    document = parse_json(path, read_file(path, MAX_JSON_BYTES), _NOT_TEXT)
    if not is_tiled_document(document):
        raise map_error(path, None, "not a Tiled map (no \"type\": \"map\", or no tilewidth and layers)")
    width, height = check_dimensions(path, "field 'width'/'height'", document.get("width"), document.get("height"))
    orientation = document.get("orientation", "orthogonal")
    if orientation not in ("orthogonal", "isometric", "hexagonal"):
        raise map_error(path, "field 'orientation'", f"{orientation!r:.20} maps are not supported")
    if document.get("infinite"):
        raise map_error(path, "field 'infinite'", "infinite maps are not supported")
    tilewidth = document.get("tilewidth")
    if tilewidth is not None and (not is_number(tilewidth) or tilewidth <= 0):
        raise map_error(path, "field 'tilewidth'", f"must be a number > 0, got {tilewidth!r:.40}")
    props = tiled_properties(path, document, "map")
    layout = base_origin = None
    tiled_hex = None
    if orientation == "hexagonal":
        layout, base_origin, cell_size = _hex_grid(path, document)
        tiled_hex = (base_origin, cell_size)  # Tiled's own pixels, where link objects are
        cell_size = _hex_cell_size(path, props) or cell_size
    else:
        cell_size = _map_number(path, props, "cell_size", positive=True) or (float(tilewidth) if tilewidth else None)
    origin_x, origin_y = _map_number(path, props, "origin_x"), _map_number(path, props, "origin_y")

    sources: list[Path] = []
    tilesets_raw = document.get("tilesets", [])
    if not isinstance(tilesets_raw, list):
        raise map_error(path, "field 'tilesets'", "must be a list")
    tilesets = sorted(
        (_read_tileset(path, entry, i, sources) for i, entry in enumerate(tilesets_raw)), key=lambda t: t.firstgid
    )
    everything = _all_layers(path, document.get("layers"), "layers", None, [])
    floors = _floor_scopes(path, everything)
    names = None if "tags" in options else _tag_names(path, options, props, tilesets)  # a sidecar's layer wins
    grids = [_read_floor(path, options, props, scope, tilesets, names, (height, width)) for scope in floors]
    walkable = np.concatenate([grid[0] for grid in grids])
    cell_cost = np.concatenate([grid[1] for grid in grids])
    if not (cell_cost[walkable] != 1.0).any():
        cell_cost = None
    origin = None
    if origin_x is not None or origin_y is not None or base_origin is not None:
        base_x, base_y = base_origin or (0.0, 0.0)
        origin = (base_x if origin_x is None else origin_x, base_y if origin_y is None else origin_y)
    decoded = Decoded(walkable, cell_cost, origin=origin, cell_size=cell_size, sources=sources,
                      shape="square" if layout is None else "hex", layout=layout, floors=len(floors))
    if "classes" in props:
        decoded.classes = check_classes(_json_property(path, props, "classes"), path, "field 'properties' classes")
    if names:
        decoded.tag_names = names
        decoded.tags = np.concatenate([grid[2] for grid in grids])
    link_layers = [(where, layer, floor) for where, layer, _, floor in everything
                   if layer.get("type") == "objectgroup" and layer.get("name") == LINKS_LAYER]
    if link_layers:
        to_cell = pixel_cells(path, document, orientation, layout, tiled_hex)
        decoded.links, decoded.link_fields = read_links(path, link_layers, to_cell)
    return decoded


def _all_layers(path, layers, where: str, floor: int | None, found: list) -> list:
    """Every layer, depth first in file order, as ``(where, layer, properties, floor)``:
    ``floor`` its own ``floor`` property, else its group's (None: neither has one)."""
    for layer_where, layer in tiled_objects(path, layers, where):
        props = tiled_properties(path, layer, layer_where)
        own = floor
        if "floor" in props:
            own = props["floor"]
            if isinstance(own, bool) or not isinstance(own, int) or own < 0:
                raise map_error(path, f"field '{layer_where}.properties' floor",
                                f"must be an integer >= 0 (the floor's number), got {own!r:.40}")
        found.append((layer_where, layer, props, own))
        if layer.get("type") == "group":
            _all_layers(path, layer.get("layers", []), f"{layer_where}.layers", own, found)
    return found


def _floor_scopes(path, everything: list) -> list[list[tuple[str, dict]]]:
    """The tile layers of each floor, floor 0 first: a tile or group layer with an int
    property ``floor`` is that floor (a group's tile layers are read as a map's are);
    without any, the map is one floor of all its tile layers."""
    tile_layers = [(where, layer) for where, layer, _, _ in everything if layer.get("type") == "tilelayer"]
    marked = [(props["floor"], where, layer) for where, layer, props, _ in everything
              if "floor" in props and layer.get("type") in ("tilelayer", "group")]
    if not marked:
        return [tile_layers]
    numbers = sorted(floor for floor, _, _ in marked)
    if numbers != list(range(len(numbers))):
        raise map_error(path, "field 'layers'", f"the layers marked 'floor' are floors {numbers}; number them "
                                                f"0..{len(numbers) - 1}, one layer (or group) a floor")
    try:
        check_floors(len(numbers))
    except RequestError as exc:
        raise map_error(path, "field 'layers'", f"{exc.message} (layers marked 'floor')") from None
    scopes = []
    for _, where, layer in sorted(marked, key=lambda entry: entry[0]):
        if layer.get("type") == "tilelayer":
            scopes.append([(where, layer)])
        else:
            scope = [(w, found) for w, found, _, _ in everything
                     if w.startswith(f"{where}.layers[") and found.get("type") == "tilelayer"]
            if not scope:
                raise map_error(path, f"field '{where}'", "a floor's group has no tile layer")
            scopes.append(scope)
    return scopes


def _read_floor(path, options: dict, props: dict, scope: list, tilesets: list, names: dict | None,
                shape: tuple) -> tuple:
    """``(walkable, cost, tags)`` (``shape``) of one floor from its tile layers ``scope``:
    the layer chosen as for a map of one floor, the tags (valued by ``names``; None: no
    tags) from its tag layer."""
    height, width = shape
    where, layer = _choose_layer(path, scope, options.get("layer"))
    gids = _layer_gids(path, layer, where, width, height) & _GID_MASK
    empty_cost = options.get("empty_cost", 1.0)
    keys, inverse = np.unique(gids, return_inverse=True)
    walkable = np.ones(len(keys), dtype=bool)
    cost = np.ones(len(keys), dtype=np.float64)
    for k, (gid, tileset, local) in enumerate(_tiles_of(path, where, gids, keys, tilesets, width)):
        if gid == 0:
            walkable[k] = empty_cost is not None
            cost[k] = 1.0 if empty_cost is None else empty_cost
            continue
        walkable[k], cost[k] = tileset.tiles.get(local, (True, 1.0))
    inverse = inverse.reshape(-1)
    tags = None
    if names:
        tags = _read_tags(path, options, props, scope, (where, layer, gids), tilesets, names, shape)
    return walkable[inverse].reshape(height, width), cost[inverse].reshape(height, width), tags


def _tag_names(path, options: dict, props: dict, tilesets: list) -> dict | None:
    """``{name: value}`` of the tags the tiles declare (None: no tile has a ``tag``)."""
    names = sorted({tag for tileset in tilesets for tag in tileset.tags.values()})
    tag_layer = options.get("tag_layer", props.get("tag_layer"))
    if tag_layer is not None and not isinstance(tag_layer, str):
        raise map_error(path, "field 'properties' tag_layer", f"must be a layer name, got {tag_layer!r:.40}")
    if not names:
        if tag_layer is not None:
            raise map_error(path, "field 'tilesets'", f"tag_layer is {tag_layer!r} but no tile has a 'tag' property")
        return None
    fixed = options.get("tag_names")
    if fixed is None and "tag_names" in props:
        fixed = check_tag_names(_json_property(path, props, "tag_names"), path, "field 'properties' tag_names")
    return tag_values(names, fixed, path)


def _read_tags(path, options: dict, props: dict, layers: list, ground: tuple, tilesets: list, names: dict,
               shape: tuple) -> np.ndarray:
    """The tags (uint8 ``shape``) the ``tag`` properties of the tiles of the tag layer give
    (see the module docstring); ``ground`` is ``(where, layer, gids)`` of the layer read
    for walkable cells."""
    height, width = shape
    tag_layer = options.get("tag_layer", props.get("tag_layer"))
    where, layer, gids = ground
    if tag_layer is None and any(found.get("name") == "tags" for _, found in layers):
        tag_layer = "tags"
    if tag_layer is not None and tag_layer != layer.get("name"):
        where, layer = _named_layer(path, layers, tag_layer)
        gids = _layer_gids(path, layer, where, width, height) & _GID_MASK
    keys, inverse = np.unique(gids, return_inverse=True)
    values = np.zeros(len(keys), dtype=np.uint8)
    for k, (gid, tileset, local) in enumerate(_tiles_of(path, where, gids, keys, tilesets, width)):
        if gid and local in tileset.tags:
            values[k] = names[tileset.tags[local]]
    return values[inverse.reshape(-1)].reshape(height, width)


def _tiles_of(path, where: str, gids: np.ndarray, keys: np.ndarray, tilesets: list, width: int):
    """``(gid, tileset, local id)`` for each distinct gid in ``keys`` (tileset None for 0);
    MapLoadError for a gid no tileset covers."""
    firstgids = [t.firstgid for t in tilesets]
    for gid in keys.tolist():
        if gid == 0:
            yield 0, None, -1
            continue
        index = bisect.bisect_right(firstgids, gid) - 1
        tileset = tilesets[index] if index >= 0 else None
        local = gid - tileset.firstgid if tileset else -1
        if tileset is None or (tileset.tilecount is not None and local >= tileset.tilecount):
            y, x = divmod(int(np.argmax(gids == gid)), width)
            raise map_error(path, f"field '{where}.data'", f"cell ({x}, {y}) has gid {gid}, which no tileset covers")
        yield gid, tileset, local


def _json_property(path, props: dict, key: str):
    """A map property holding JSON text (or, from Tiled's class-typed properties, the
    object itself)."""
    value = props[key]
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        raise map_error(path, f"field 'properties' {key}", f"must be a string of JSON, got {value!r:.40}")
    try:
        return json.loads(value)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise map_error(path, f"field 'properties' {key}", f"invalid JSON: {exc}") from None
