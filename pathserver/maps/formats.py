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
without a colour or character, tags, tag names, unit classes, a ``.map``'s or ``.png``'s
floors and links).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pathserver.errors import MapLoadError
from pathserver.grid.gridmap import GridMap, register_file_formats
from pathserver.maps import image, movingai, tiled, tiled_write
from pathserver.maps import tags as tag_layers
from pathserver.maps import sidecar as sidecars
from pathserver.maps.files import OPTION_KEYS, floor_layers, map_error, map_format, write_atomic

#: The module that reads and writes each format (see :func:`~pathserver.maps.files.map_format`).
_FORMATS = {"movingai": movingai, "png": image, "tiled": tiled}
_ENCODERS = {"movingai": movingai.encode, "png": image.encode, "tiled": tiled_write.encode}

# -- loading ----------------------------------------------------------------------------


def load_map(path: Path, **kwargs) -> GridMap:
    """Load a Moving AI ``.map``, a ``.png`` or a Tiled ``.tmj``/``.json`` and its sidecar.

    Keyword arguments: ``name`` (default: the file stem), ``generation`` (default 0),
    ``sidecar`` (False ignores ``NAME.json``/``NAME.toml``), and any sidecar key
    (``shape``, ``layout``, ``origin``, ``cell_size``, ``cost_legend``, ``heights``,
    ``heights_scale``, ``layer``, ``empty_cost``, ``tags``, ``tag_names``, ``tag_colors``,
    ``tag_layer``, ``classes``, ``floors``, ``links``), which wins over the sidecar's value.

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
    floors = options.get("floors", decoded.floors)
    links = options.get("links", decoded.links)
    tags, tag_names, tag_sources = _tag_layer(path, fmt, options, decoded, links)
    sources.extend(tag_sources)
    tags, tag_names = tag_layers.name_link_tags(links, tags, tag_names, decoded.walkable.shape, path)
    classes = options.get("classes", decoded.classes)
    origin = options.get("origin", decoded.origin if decoded.origin is not None else (0.0, 0.0))
    cell_size = options.get("cell_size", decoded.cell_size if decoded.cell_size is not None else 1.0)
    layers = _split_floors(floors, (decoded.walkable, decoded.cost, heights, tags), labels.get("floors", path))
    try:
        gridmap = GridMap(
            *layers[:3],
            origin=origin,
            cell_size=cell_size,
            name=path.stem if name is None else name,
            generation=generation,
            tags=layers[3],
            tag_names=tag_names,
            classes=classes,
            shape=shape,
            layout=layout,
            floors=floors,
            links=links,
        )
    except MapLoadError as exc:
        # The model's own checks do not know the file; name it (and the field) here.
        raise _model_error(path, exc, labels, decoded) from None
    return gridmap, sources


def _split_floors(floors: int, layers: tuple, label) -> tuple:
    """The file's layers (rows of every floor one under another, floor 0 on top) as
    ``(floors, height, width)`` arrays for GridMap; as they are on a map of one floor."""
    if floors == 1:
        return layers
    rows, width = layers[0].shape
    if rows % floors:
        raise map_error(label, "field 'floors'",
                        f"the map's {rows} rows do not split into {floors} floors of equal height (floor 0 on top)")
    return tuple(None if layer is None else layer.reshape(floors, rows // floors, width) for layer in layers)


def _model_error(path: Path, exc: MapLoadError, labels: dict, decoded) -> MapLoadError:
    """GridMap's error about ``path``'s map, naming the file and field it came from: a
    link's error names the sidecar's ``links[i]``, or where the file holds that link."""
    if not exc.at:
        return map_error(path, None, exc.message)
    field, key = exc.at, exc.at.split(".")[0].split("[")[0]
    if field.startswith("links[") and key not in labels and decoded.link_fields:
        index, _, rest = field[len("links["):].partition("]")
        field = decoded.link_fields[int(index)] + rest
    return map_error(labels.get(key, path), f"field '{field}'", exc.message)


def _tag_layer(path: Path, fmt: str, options: dict, decoded, links) -> tuple:
    """``(tags, tag_names, sources)``: the layer the sidecar names (it wins over the file's
    own), else the one the file carries (a PNG's tag colours, Tiled's tile properties);
    ``tag_names`` without a layer only for tags the ``links`` name."""
    if "tags" in options:
        return tag_layers.load_tags(options, path, decoded.walkable.shape)
    if "tag_colors" in options and fmt != "png":
        raise map_error(path, "field 'tag_colors'", "names colours of a PNG: give 'tags' naming a .png file")
    if decoded.tags is not None:
        return decoded.tags, decoded.tag_names, []
    if options.get("tag_names"):
        if any(isinstance(link, dict) and link.get("tag") for link in links or ()):
            return None, options["tag_names"], []
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
    heights, origin, cell size, shape and hex layout, tags, tag names, unit classes, floors
    and links (a
    Tiled file holds the tags as a ``tags`` layer when every tag value in use has a name,
    the other formats in the sidecar; it holds a hex map as a hexagonal map, whose tile
    size comes back as a pair ``(w, h)``). Raises ValueError when the map cannot be
    expressed (more distinct costs than a ``.map`` legend has characters).
    """
    path = Path(path)
    fmt = map_format(path)
    if fmt is None:
        raise ValueError(f"{path}: cannot tell the format from the suffix (use .map, .png, .tmj or .json)")
    # The layers of every floor one under another: a .map's or .png's rows, and the rows
    # of the heights and tags a sidecar holds.
    rows = _one_floor(gridmap)
    data, fields = _ENCODERS[fmt](gridmap if fmt == "tiled" else rows)
    extra_files: dict[Path, bytes] = {}
    if gridmap.heights is not None:
        fields["heights"], extra_files = sidecars.encode_heights(rows.heights, path)
    if not (fmt == "tiled" and tiled_write.holds_tags(gridmap)):
        tag_fields, tag_files = tag_layers.sidecar_fields(rows, path)
        if "tags" in tag_fields and not rows.tags.any() and any(tag is not None for tag in gridmap.links.tags):
            # A layer of zeros is there for the links' tag names: loading makes it again.
            tag_fields.pop("tags")
            tag_files.clear()
        fields.update(tag_fields)
        extra_files.update(tag_files)
    if fmt != "tiled":
        if gridmap.floors > 1:
            fields["floors"] = gridmap.floors
        if len(gridmap.links):
            fields["links"] = gridmap.links.to_wire(gridmap.floors)
    for extra_path, extra_data in extra_files.items():
        write_atomic(extra_path, extra_data)
    # The sidecar goes first: a watcher that sees the new map file then finds its metadata.
    sidecars.write_sidecar(path, fields)
    write_atomic(path, data)


def _one_floor(gridmap: GridMap) -> GridMap:
    """``gridmap`` as one floor whose rows are its floors' one under another, floor 0 on
    top, without links (``gridmap`` itself when it has one floor)."""
    if gridmap.floors == 1:
        return gridmap

    def rows(layer):
        return None if layer is None else np.concatenate(floor_layers(gridmap, layer))

    return GridMap(
        rows(gridmap.walkable), None if gridmap.uniform_cost else rows(gridmap.cost), rows(gridmap.heights),
        origin=gridmap.origin, cell_size=gridmap.cell_size, name=gridmap.name, tags=rows(gridmap.tags),
        tag_names=gridmap.tag_names, classes=gridmap.classes, shape=gridmap.shape, layout=gridmap.layout,
    )


# GridMap.load / GridMap.save are these two functions under another name.
register_file_formats(load_map, save_map)
