"""Map files in and out: one entry point per direction, dispatching on the file's suffix.

- ``.map``: Moving AI rows of characters (:mod:`pathserver.maps.movingai`);
- ``.png``: colours meaning blocked or a terrain cost (:mod:`pathserver.maps.image`);
- ``.tmj``, ``.json``: a Tiled tile layer and tile properties (:mod:`pathserver.maps.tiled`).

A ``.json`` file is a map only when it is a Tiled map (``"type": "map"``, or ``tilewidth``
and ``layers``); ``NAME.json`` beside ``NAME.map`` / ``NAME.png`` / ``NAME.tmj`` is that
map's sidecar (:mod:`pathserver.maps.sidecar`) and never a map of its own.

Every problem with a file raises :class:`~pathserver.errors.MapLoadError` whose message is
``FILE: WHERE: REASON`` (see :mod:`pathserver.maps.files`, which the format modules share).

Saving writes the file atomically (a hidden temporary file, then ``os.replace``) so a
watcher never sees it half-written, plus a sidecar when the map carries something the
format cannot hold (a hex map's shape and layout, an origin, a cell size, heights, costs
without a colour or character, tags, tag names, unit classes).
"""

from __future__ import annotations

from pathlib import Path

from pathserver.errors import MapLoadError
from pathserver.grid.gridmap import GridMap, register_file_formats
from pathserver.maps import image, movingai, tiled
from pathserver.maps import tags as tag_layers
from pathserver.maps import sidecar as sidecars
from pathserver.maps.files import OPTION_KEYS, map_error, map_format, write_atomic

#: The module that reads and writes each format (see :func:`~pathserver.maps.files.map_format`).
_FORMATS = {"movingai": movingai, "png": image, "tiled": tiled}

# -- loading ----------------------------------------------------------------------------


def load_map(path: Path, **kwargs) -> GridMap:
    """Load a Moving AI ``.map``, a ``.png`` or a Tiled ``.tmj``/``.json`` and its sidecar.

    Keyword arguments: ``name`` (default: the file stem), ``generation`` (default 0),
    ``sidecar`` (False ignores ``NAME.json``/``NAME.toml``), and any sidecar key
    (``shape``, ``layout``, ``origin``, ``cell_size``, ``cost_legend``, ``heights``,
    ``heights_scale``, ``layer``, ``empty_cost``, ``tags``, ``tag_names``, ``tag_colors``,
    ``tag_layer``, ``classes``), which wins over the sidecar's value.

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
    fmt = map_format(path)
    if fmt is None:
        raise map_error(path, None, "unknown map format (expected .map, .png, .tmj or a Tiled .json)")
    unknown = sorted(set(overrides) - set(OPTION_KEYS))
    if unknown:
        raise TypeError(f"load_map() got unexpected keyword arguments {unknown}; known: {list(OPTION_KEYS)}")
    sources = [path]
    options: dict = {}
    labels: dict = {}  # where each option came from, for the errors of check_shape
    if sidecar:
        side_path = sidecars.find_sidecar(path)
        if side_path is not None:
            options.update(sidecars.read_sidecar(side_path, fmt))
            labels.update(dict.fromkeys(options, str(side_path)))
            sources.append(side_path)
    if overrides:
        label = f"{path}: load_map argument"
        options.update(sidecars.validate_options(overrides, fmt, label))
        labels.update(dict.fromkeys(overrides, label))

    decoded = _FORMATS[fmt].read(path, options)
    sources.extend(decoded.sources)
    shape = options.get("shape", decoded.shape)
    layout = options.get("layout", decoded.layout)
    sidecars.check_shape(options, shape, layout, labels)

    heights = None
    if "heights" in options:
        heights, heights_sources = sidecars.load_heights(
            options["heights"], path, decoded.walkable.shape, options.get("heights_scale", 1.0)
        )
        sources.extend(heights_sources)
    tags, tag_names, tag_sources = _tag_layer(path, fmt, options, decoded)
    sources.extend(tag_sources)
    classes = options.get("classes", decoded.classes)
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
            tags=tags,
            tag_names=tag_names,
            classes=classes,
            shape=shape,
            layout=layout,
        )
    except MapLoadError as exc:
        # The model's own checks do not know the file; name it here.
        raise map_error(path, None, exc.message) from None
    return gridmap, sources


def _tag_layer(path: Path, fmt: str, options: dict, decoded) -> tuple:
    """``(tags, tag_names, sources)``: the layer the sidecar names (it wins over the file's
    own), else the one the file carries (a PNG's tag colours, Tiled's tile properties)."""
    if "tags" in options:
        return tag_layers.load_tags(options, path, decoded.walkable.shape)
    if "tag_colors" in options and fmt != "png":
        raise map_error(path, "field 'tag_colors'", "names colours of a PNG: give 'tags' naming a .png file")
    if decoded.tags is not None:
        return decoded.tags, decoded.tag_names, []
    if options.get("tag_names"):
        raise map_error(
            path, "field 'tag_names'",
            "the map has no tag layer (give 'tags', or 'tag_colors' for a PNG map, or Tiled tiles a 'tag' property)",
        )
    return None, None, []


# -- saving -----------------------------------------------------------------------------


def save_map(gridmap: GridMap, path: Path) -> None:
    """Write ``gridmap`` in the format ``path``'s suffix names (``.map``, ``.png``, ``.tmj``
    or ``.json`` for Tiled), with a sidecar for what the format cannot hold.

    The sidecar (``NAME.json``, or ``NAME.toml`` beside a Tiled ``.json``) is written when
    needed, and rewritten whenever one already exists so a stale one never changes the
    map on the next load. Loading what was saved gives back the same walkable cells, costs,
    heights, origin, cell size, shape and hex layout, tags, tag names and unit classes (a
    Tiled file holds the tags as a ``tags`` layer when every tag value in use has a name,
    the other formats in the sidecar; it holds a hex map as a hexagonal map, whose tile
    size comes back as a pair ``(w, h)``). Raises ValueError when the map cannot be
    expressed (more distinct costs than a ``.map`` legend has characters).
    """
    path = Path(path)
    fmt = map_format(path)
    if fmt is None:
        raise ValueError(f"{path}: cannot tell the format from the suffix (use .map, .png, .tmj or .json)")
    data, fields = _FORMATS[fmt].encode(gridmap)
    extra_files: dict[Path, bytes] = {}
    if gridmap.heights is not None:
        fields["heights"], extra_files = sidecars.encode_heights(gridmap.heights, path)
    if not (fmt == "tiled" and tiled.holds_tags(gridmap)):
        tag_fields, tag_files = tag_layers.sidecar_fields(gridmap, path)
        fields.update(tag_fields)
        extra_files.update(tag_files)
    for extra_path, extra_data in extra_files.items():
        write_atomic(extra_path, extra_data)
    # The sidecar goes first: a watcher that sees the new map file then finds its metadata.
    sidecars.write_sidecar(path, fields)
    write_atomic(path, data)


# GridMap.load / GridMap.save are these two functions under another name.
register_file_formats(load_map, save_map)
