"""What every map file module shares: the file names that are maps, the decoded grid a
format reader returns, the one shape of load error, bounded reads and atomic writes, and
the readers and checks of what several formats hold (JSON, ``.npy`` layers, rows, Tiled
properties).

Every problem with a file raises :class:`~pathserver.errors.MapLoadError` whose message is
``FILE: WHERE: REASON`` (``maps/x.map: line 7: row has 63 characters, expected 64``).
Sizes are checked against :data:`~pathserver.grid.gridmap.MAX_CELLS` from the header alone,
before any grid is allocated.

The format modules (:mod:`~pathserver.maps.movingai`, :mod:`~pathserver.maps.image`,
:mod:`~pathserver.maps.tiled`, :mod:`~pathserver.maps.tiled_links`,
:mod:`~pathserver.maps.sidecar`) import from here, and
:mod:`pathserver.maps.formats` imports them: the imports run one way.
"""

from __future__ import annotations

import io
import json
import math
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pathserver.errors import MapLoadError
from pathserver.grid.gridmap import MAX_CELLS

#: Map suffixes, best first: when two files share a stem the earlier suffix is served.
MAP_SUFFIXES = (".map", ".tmj", ".json", ".png")
#: Suffixes whose files are always maps (a ``.json`` must also be a Tiled document).
PLAIN_MAP_SUFFIXES = (".map", ".tmj", ".png")

#: Keys a sidecar (or a keyword argument of :func:`~pathserver.maps.formats.load_map`) may set.
OPTION_KEYS = (
    "shape", "layout", "origin", "cell_size", "cost_legend", "heights", "heights_scale", "layer", "empty_cost",
    "tags", "tag_names", "tag_colors", "tag_layer", "classes", "floors", "links",
)


@dataclass
class Decoded:
    """What a format reader found. Grids are indexed ``[y, x]``.

    walkable: bool (H, W). cost: float64 (H, W) or None for uniform cost 1. On a map of
    several floors (``floors``) every grid holds them one under another, floor 0 on top
    (H is the floors' rows together), as a ``.map`` or ``.png`` does.
    origin / cell_size: the file's own values (Tiled keeps them), or None; a hex map's
    cell_size may be its tile size ``(w, h)``.
    shape / layout: the grid the file itself declares (Tiled's hexagonal maps), else
    ``"square"`` / None.
    sources: files read besides the map itself (external tilesets).
    tags: uint8 (H, W) tag layer the file itself carries (Tiled tile properties, a PNG's
    tag colours), or None; tag_names / classes: what the file declares, or None.
    """

    walkable: np.ndarray
    cost: np.ndarray | None = None
    origin: tuple[float, float] | None = None
    cell_size: float | tuple[float, float] | None = None
    shape: str = "square"
    layout: str | None = None
    sources: list[Path] = field(default_factory=list)
    tags: np.ndarray | None = None
    tag_names: dict | None = None
    classes: dict | None = None
    floors: int = 1
    links: list | None = None
    link_fields: list[str] | None = None


def grid_fields(gridmap) -> dict:
    """The sidecar fields of ``gridmap``'s grid and world transform, for the formats that
    hold neither (``.map``, ``.png``): a hex map's shape and layout, an origin other than
    (0, 0), a cell size other than 1 (a hex map's tile size ``[w, h]`` as it was given)."""
    fields: dict = {}
    if gridmap.hex:
        fields.update(shape="hex", layout=gridmap.layout)
    if gridmap.origin != (0.0, 0.0):
        fields["origin"] = list(gridmap.origin)
    if isinstance(gridmap.cell_size, tuple):
        fields["cell_size"] = list(gridmap.cell_size)
    elif gridmap.cell_size != 1.0:
        fields["cell_size"] = gridmap.cell_size
    return fields


def floor_layers(gridmap, layer: np.ndarray) -> np.ndarray:
    """One of ``gridmap``'s stacked layers (``walkable``, ``cost``, ``tags``, ``heights``)
    as ``(floors, floor_height, width)``: the rows GridMap keeps between floors dropped."""
    floors, height = gridmap.floors, gridmap.floor_height
    padded = np.concatenate([layer, np.zeros((1, layer.shape[1]), dtype=layer.dtype)])
    return padded.reshape(floors, height + 1, layer.shape[1])[:, :height]


def map_error(path, where: str | None, reason: str) -> MapLoadError:
    """The one shape of load error: ``FILE: WHERE: REASON``."""
    if where:
        return MapLoadError(f"{path}: {where}: {reason}")
    return MapLoadError(f"{path}: {reason}")


def tag_values(names, fixed: dict | None, path) -> dict[str, int]:
    """``{name: value}`` for every tag name in ``names`` and ``fixed``: the values ``fixed``
    gives, and for the other names the lowest free values 1..255 in sorted name order (so
    a value depends on the names declared, never on which cells happen to use them)."""
    values = dict(fixed or {})
    used = set(values.values())
    free = iter([v for v in range(1, 256) if v not in used])
    for name in sorted(set(names) - set(values)):
        value = next(free, None)
        if value is None:
            raise map_error(path, None, "more than 255 tag names (a tag is one byte a cell)")
        values[name] = value
    return values


def colour_tags(colours: np.ndarray, tag_colors: dict[str, list[str]], values: dict[str, int]) -> np.ndarray:
    """uint8 tag of each entry of ``colours`` (packed ``0xrrggbb``): the value of the tag
    whose colour it is, 0 for any other colour."""
    found = np.zeros(colours.shape, dtype=np.uint8)
    for name, listed in tag_colors.items():
        for colour in listed:
            found[colours == int(colour[1:], 16)] = values[name]
    return found


def read_file(path: Path, limit: int) -> bytes:
    """The file's bytes; refuses files over ``limit`` bytes and empty files."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise map_error(path, None, f"cannot read: {exc.strerror or exc}") from None
    if not data:
        raise map_error(path, None, "file is empty")
    if len(data) > limit:
        raise map_error(path, None, f"file is larger than {limit} bytes")
    return data


def check_rows(value, label, where: str, listing: str, valid, invalid: str) -> list:
    """``value`` if it is a non-empty list of rows (lists) of one width, each passing
    ``valid(row)``; else MapLoadError at ``where``: ``listing`` when it is not such a list,
    ``invalid`` for a row that fails."""
    if not isinstance(value, list) or not value or not all(isinstance(row, list) for row in value):
        raise map_error(label, where, listing)
    width = len(value[0])
    for y, row in enumerate(value):
        if len(row) != width:
            raise map_error(label, f"{where}[{y}]", f"row has {len(row)} values, row 0 has {width}")
        if not valid(row):
            raise map_error(label, f"{where}[{y}]", invalid)
    return value


def parse_json(path: Path, data: bytes, not_text: str = "not UTF-8 text"):
    """``data`` (read from ``path``) parsed as JSON; MapLoadError where it is not JSON,
    with ``not_text`` as the reason where it is not UTF-8 text."""
    try:
        return json.loads(data)
    except UnicodeDecodeError as exc:
        raise map_error(path, f"byte {exc.start}", not_text) from None
    except json.JSONDecodeError as exc:
        raise map_error(path, f"line {exc.lineno}, column {exc.colno}", f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise map_error(path, None, "invalid JSON: nested too deeply") from None


def load_npy(path: Path, shape, what: str, kinds: str, values: str) -> np.ndarray:
    """The 2-D array in the ``.npy`` file ``path``, memory-mapped (read-only), of shape
    ``shape`` and a dtype kind in ``kinds``; else MapLoadError saying ``what`` must be a
    2-D array of ``values``. Only the header is read before the checks."""
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise map_error(path, None, f"cannot read {what}: {exc}") from None
    if not isinstance(array, np.ndarray) or array.ndim != 2 or array.dtype.kind not in kinds:
        raise map_error(path, None, f"{what} must be a 2-D array of {values}")
    if array.shape != tuple(shape):
        raise map_error(path, None, f"{what} are {array.shape[1]}x{array.shape[0]}, the map is {shape[1]}x{shape[0]}")
    return array


def npy_bytes(array: np.ndarray, dtype) -> bytes:
    """``array`` as ``dtype`` in a ``.npy`` file's bytes (no pickles)."""
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array, dtype=dtype), allow_pickle=False)
    return buffer.getvalue()


def check_dimensions(path, where: str | None, width, height) -> tuple[int, int]:
    """``(width, height)`` as ints, or MapLoadError when not positive or over MAX_CELLS."""
    for label, value in (("width", width), ("height", height)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise map_error(path, where, f"{label} must be an integer, got {value!r:.40}")
        if value < 1:
            raise map_error(path, where, f"{label} must be at least 1, got {value}")
    if int(width) * int(height) > MAX_CELLS:
        raise map_error(path, where, f"map of {width}x{height} cells exceeds the limit of {MAX_CELLS} cells")
    return int(width), int(height)


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def tiled_objects(path, items, where: str) -> Iterator[tuple[str, dict]]:
    """Yields ``(field, item)`` for each item of a Tiled list (layers, tiles, objects) at
    field ``where``, checking each as it comes: a MapLoadError if ``items`` is not a list
    or the item is not an object."""
    if not isinstance(items, list):
        raise map_error(path, f"field '{where}'", "must be a list")
    for i, item in enumerate(items):
        item_where = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise map_error(path, f"field '{item_where}'", "must be an object")
        yield item_where, item


def tile_sizes(path, document: dict, needs: str) -> tuple[float, float]:
    """A Tiled map's ``(tilewidth, tileheight)``, each a number > 0, as floats; ``needs``
    names the map that needs them in the error (``"a hexagonal map"``)."""
    sizes = []
    for key in ("tilewidth", "tileheight"):
        value = document.get(key)
        if not is_number(value) or value <= 0:
            raise map_error(path, f"field '{key}'", f"{needs} needs a number > 0, got {value!r:.40}")
        sizes.append(float(value))
    return sizes[0], sizes[1]


def tiled_properties(path, owner: dict, where: str) -> dict:
    """A Tiled map's, layer's, tile's or object's custom properties as name -> value
    (Tiled's list form, or the pre-1.2 object form)."""
    raw = owner.get("properties", [])
    if isinstance(raw, dict):
        return dict(raw)
    if not isinstance(raw, list):
        raise map_error(path, f"field '{where}.properties'", "must be a list of {name, type, value}")
    found = {}
    for i, prop in enumerate(raw):
        if not isinstance(prop, dict) or not isinstance(prop.get("name"), str):
            raise map_error(path, f"field '{where}.properties[{i}]'", "must be an object with a 'name'")
        found[prop["name"]] = prop.get("value")
    return found


def is_tiled_document(document) -> bool:
    """Whether parsed JSON is a Tiled map (as opposed to a sidecar, a tileset, anything else)."""
    if not isinstance(document, dict):
        return False
    return document.get("type") == "map" or ("tilewidth" in document and "layers" in document)


def is_temp_name(filename: str) -> bool:
    """Editor and atomic-save temporaries, never maps: ``.x``, ``x~``, ``x.tmp``, ``x.swp``."""
    return filename.startswith(".") or filename.endswith(("~", ".tmp", ".swp", ".swx"))


def map_format(path: Path) -> str | None:
    """``"movingai"``, ``"png"``, ``"tiled"`` by suffix, or None.

    A ``.json`` is reported as ``"tiled"`` here; whether it really is a map (and not a
    sidecar) is the caller's question (see :func:`is_tiled_document`).
    """
    return {".map": "movingai", ".png": "png", ".tmj": "tiled", ".json": "tiled"}.get(path.suffix.lower())


def write_atomic(path: Path, data: bytes) -> None:
    """Write through a hidden temporary file in the same folder, then ``os.replace``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
