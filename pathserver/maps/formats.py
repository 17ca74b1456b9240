"""Map files in and out: one entry point per direction, dispatching on the file's suffix.

- ``.map``: Moving AI rows of characters (:mod:`pathserver.maps.movingai`);
- ``.png``: colours meaning blocked or a terrain cost (:mod:`pathserver.maps.image`);
- ``.tmj``, ``.json``: a Tiled tile layer and tile properties (:mod:`pathserver.maps.tiled`).

A ``.json`` file is a map only when it is a Tiled map (``"type": "map"``, or ``tilewidth``
and ``layers``); ``NAME.json`` beside ``NAME.map`` / ``NAME.png`` / ``NAME.tmj`` is that
map's sidecar (:mod:`pathserver.maps.sidecar`) and never a map of its own.

Every problem with a file raises :class:`~pathserver.errors.MapLoadError` whose message is
``FILE: WHERE: REASON`` (``maps/x.map: line 7: row has 63 characters, expected 64``).
Sizes are checked against :data:`~pathserver.grid.gridmap.MAX_CELLS` from the header alone,
before any grid is allocated.

Saving writes the file atomically (a hidden temporary file, then ``os.replace``) so a
watcher never sees it half-written, plus a sidecar when the map carries something the
format cannot hold (an origin, a cell size, heights, costs without a colour or character).
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pathserver.errors import MapLoadError
from pathserver.grid.gridmap import MAX_CELLS, GridMap

#: Map suffixes, best first: when two files share a stem the earlier suffix is served.
MAP_SUFFIXES = (".map", ".tmj", ".json", ".png")
#: Suffixes whose files are always maps (a ``.json`` must also be a Tiled document).
PLAIN_MAP_SUFFIXES = (".map", ".tmj", ".png")

#: Keys a sidecar (or a keyword argument of :func:`load_map`) may set.
OPTION_KEYS = ("origin", "cell_size", "cost_legend", "heights", "heights_scale", "layer", "empty_cost")


@dataclass
class Decoded:
    """What a format reader found. Grids are indexed ``[y, x]``.

    walkable: bool (H, W). cost: float64 (H, W) or None for uniform cost 1.
    origin / cell_size: the file's own values (Tiled keeps them), or None.
    sources: files read besides the map itself (external tilesets).
    """

    walkable: np.ndarray
    cost: np.ndarray | None = None
    origin: tuple[float, float] | None = None
    cell_size: float | None = None
    sources: list[Path] = field(default_factory=list)


# -- helpers the format modules share ---------------------------------------------------


def map_error(path, where: str | None, reason: str) -> MapLoadError:
    """The one shape of load error: ``FILE: WHERE: REASON``."""
    if where:
        return MapLoadError(f"{path}: {where}: {reason}")
    return MapLoadError(f"{path}: {reason}")


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


# -- loading ----------------------------------------------------------------------------


def load_map(path: Path, **kwargs) -> GridMap:
    """Load a Moving AI ``.map``, a ``.png`` or a Tiled ``.tmj``/``.json`` and its sidecar.

    Keyword arguments: ``name`` (default: the file stem), ``generation`` (default 0),
    ``sidecar`` (False ignores ``NAME.json``/``NAME.toml``), and any sidecar key
    (``origin``, ``cell_size``, ``cost_legend``, ``heights``, ``heights_scale``, ``layer``,
    ``empty_cost``), which wins over the sidecar's value.

    Raises MapLoadError naming the file, the line or field, and the reason.
    """
    return load_map_with_sources(path, **kwargs)[0]


def load_map_with_sources(path: Path, **kwargs) -> tuple[GridMap, list[Path]]:
    """:func:`load_map`, plus every file that was read (the map first, then the sidecar,
    heights and external tilesets): the registry watches those for changes."""
    path = Path(path)
    try:
        return _load(path, **kwargs)
    except MapLoadError as exc:
        # A problem in a sidecar, heightmap or tileset is reported under the map's name
        # too: the map is what the reader of the message is looking for.
        if exc.message.startswith(f"{path}: "):
            raise
        raise map_error(path, None, exc.message) from None


def _load(
    path: Path, *, name: str | None = None, generation: int = 0, sidecar: bool = True, **overrides
) -> tuple[GridMap, list[Path]]:
    from pathserver.maps import sidecar as sidecars

    fmt = map_format(path)
    if fmt is None:
        raise map_error(path, None, "unknown map format (expected .map, .png, .tmj or a Tiled .json)")
    unknown = sorted(set(overrides) - set(OPTION_KEYS))
    if unknown:
        raise TypeError(f"load_map() got unexpected keyword arguments {unknown}; known: {list(OPTION_KEYS)}")
    sources = [path]
    options: dict = {}
    if sidecar:
        side_path = sidecars.find_sidecar(path)
        if side_path is not None:
            options.update(sidecars.read_sidecar(side_path, fmt))
            sources.append(side_path)
    if overrides:
        options.update(sidecars.validate_options(overrides, fmt, f"{path}: load_map argument"))

    if fmt == "movingai":
        from pathserver.maps import movingai as reader
    elif fmt == "png":
        from pathserver.maps import image as reader
    else:
        from pathserver.maps import tiled as reader
    decoded = reader.read(path, options)
    sources.extend(decoded.sources)

    heights = None
    if "heights" in options:
        heights, heights_sources = sidecars.load_heights(
            options["heights"], path, decoded.walkable.shape, options.get("heights_scale", 1.0)
        )
        sources.extend(heights_sources)
    origin = options.get("origin", decoded.origin if decoded.origin is not None else (0.0, 0.0))
    cell_size = options.get("cell_size", decoded.cell_size if decoded.cell_size is not None else 1.0)
    try:
        gridmap = GridMap(
            decoded.walkable,
            decoded.cost,
            heights,
            origin=origin,
            cell_size=cell_size,
            name=path.stem if name is None else name,
            generation=generation,
        )
    except MapLoadError as exc:
        # The model's own checks do not know the file; name it here.
        raise map_error(path, None, exc.message) from None
    return gridmap, sources


# -- saving -----------------------------------------------------------------------------


def save_map(gridmap: GridMap, path: Path) -> None:
    """Write ``gridmap`` in the format ``path``'s suffix names (``.map``, ``.png``, ``.tmj``
    or ``.json`` for Tiled), with a sidecar for what the format cannot hold.

    The sidecar (``NAME.json``, or ``NAME.toml`` beside a Tiled ``.json``) is written when
    needed, and rewritten whenever one already exists so a stale one never changes the
    map on the next load. Loading what was saved gives back the same walkable cells, costs,
    heights, origin and cell size. Raises ValueError when the map cannot be expressed
    (more distinct costs than a ``.map`` legend has characters).
    """
    from pathserver.maps import sidecar as sidecars

    path = Path(path)
    fmt = map_format(path)
    if fmt is None:
        raise ValueError(f"{path}: cannot tell the format from the suffix (use .map, .png, .tmj or .json)")
    if fmt == "movingai":
        from pathserver.maps import movingai as writer
    elif fmt == "png":
        from pathserver.maps import image as writer
    else:
        from pathserver.maps import tiled as writer
    data, fields = writer.encode(gridmap)
    extra_files: dict[Path, bytes] = {}
    if gridmap.heights is not None:
        fields["heights"], extra_files = sidecars.encode_heights(gridmap.heights, path)
    for extra_path, extra_data in extra_files.items():
        write_atomic(extra_path, extra_data)
    # The sidecar goes first: a watcher that sees the new map file then finds its metadata.
    sidecars.write_sidecar(path, fields)
    write_atomic(path, data)
