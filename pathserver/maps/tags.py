"""Tag layers in map files: one byte a cell naming a kind of ground (0 untagged), the
names of the values, and the unit classes built on them (see
:class:`~pathserver.grid.gridmap.GridMap`'s ``tags``, ``tag_names``, ``classes``).

Where a map's tag layer comes from, first that applies:

1. the sidecar's ``tags`` (or ``load_map(tags=...)``): rows of integers 0..255 inline,
   a 2-D integer ``.npy``, or a ``.png``. In a PNG the red value of each pixel (the grey
   value of a grey image) is the cell's tag byte; with ``tag_colors`` the colours it lists
   name the tags instead (any other colour, and fully transparent pixels, are untagged);
2. a PNG map with ``tag_colors`` and no ``tags``: the map image's own colours, and those
   cells keep the walkability and cost the colour rules give them;
3. a Tiled map: the ``tag`` (string) property of the tiles of its tag layer.

Tag values: ``tag_names`` (``{"water": 1}``) fixes them; names that only ``tag_colors``
or Tiled tiles declare get the lowest free values in sorted name order (see
:func:`~pathserver.maps.files.tag_values`). ``classes`` (``{"boat": {"land": null,
"shallows": 2}}``) are the named traversal rule sets.

This module checks those values wherever they are written (sidecar keys, Tiled map
properties), reads the layer files, and writes the sidecar fields that bring a map's tags
back on the next load.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from pathserver.maps.files import check_rows, colour_tags, is_number, load_npy, map_error, npy_bytes, tag_values

#: Tag layers up to this many cells are written inline in a sidecar, bigger ones to
#: ``NAME.tags.npy``.
INLINE_TAGS_CELLS = 4096
_COLOUR = re.compile(r"#[0-9a-fA-F]{6}")


# -- checking what a sidecar or a Tiled map property says -----------------------------


def check_tag_names(value, label, where: str) -> dict[str, int]:
    if not isinstance(value, dict):
        raise map_error(label, where, f'must be an object of tag name -> value 1..255, e.g. {{"water": 1}}, '
                                      f"got {value!r:.40}")
    names = {}
    seen: dict[int, str] = {}
    for name, number in value.items():
        if not isinstance(name, str) or not name:
            raise map_error(label, where, f"tag names must be non-empty strings, got {name!r:.40}")
        if isinstance(number, bool) or not isinstance(number, (int, np.integer)) or not 1 <= number <= 255:
            raise map_error(label, f"{where}[{name!r}]", f"must be an integer 1..255, got {number!r:.40}")
        if int(number) in seen:
            raise map_error(label, f"{where}[{name!r}]", f"value {number} is {seen[int(number)]!r}'s already")
        seen[int(number)] = name
        names[name] = int(number)
    return names


def check_classes(value, label, where: str) -> dict[str, dict]:
    shape = 'an object of class -> {tag: null (blocked) | multiplier >= 1}, e.g. {"boat": {"land": null}}'
    if not isinstance(value, dict):
        raise map_error(label, where, f"must be {shape}, got {value!r:.40}")
    classes = {}
    for unit_class, rules in value.items():
        if not isinstance(unit_class, str) or not unit_class or not isinstance(rules, dict):
            raise map_error(label, f"{where}[{unit_class!r}]", f"must be {shape}")
        checked = {}
        for tag, multiplier in rules.items():
            if multiplier is None or multiplier == "blocked":
                checked[tag] = None
            elif is_number(multiplier) and multiplier >= 1:
                checked[tag] = float(multiplier)
            else:
                raise map_error(label, f"{where}[{unit_class!r}][{tag!r}]",
                                f"must be null (blocked) or a number >= 1, got {multiplier!r:.40}")
        classes[unit_class] = checked
    return classes


def check_tag_colors(value, label, where: str) -> dict[str, list[str]]:
    """``{name: ["#rrggbb", ...]}`` (lower case) from ``{name: colour or [colours]}``."""
    if not isinstance(value, dict):
        raise map_error(label, where, f'must be an object of tag name -> "#rrggbb" (or a list of them), '
                                      f"got {value!r:.40}")
    colours: dict[str, list[str]] = {}
    owner: dict[str, str] = {}
    for name, spec in value.items():
        listed = spec if isinstance(spec, list) else [spec]
        if not isinstance(name, str) or not name or not listed:
            raise map_error(label, f"{where}[{name!r}]", "must name a tag and give it colours")
        for colour in listed:
            if not isinstance(colour, str) or not _COLOUR.fullmatch(colour):
                raise map_error(label, f"{where}[{name!r}]", f"colours are written #rrggbb, got {colour!r:.40}")
            colour = colour.lower()
            if owner.setdefault(colour, name) != name:
                raise map_error(label, f"{where}[{name!r}]", f"{colour} is {owner[colour]!r}'s colour already")
        colours[name] = [c.lower() for c in listed]
    return colours


def check_tags_spec(value, label, where: str):
    """A tag layer source: a ``.png`` / ``.npy`` path, a numpy array (keyword argument
    only), or rows of integers 0..255 (as uint8)."""
    if isinstance(value, str):
        if Path(value).suffix.lower() not in (".npy", ".png"):
            raise map_error(label, where, f"a tags file must be .png or .npy, got {value!r:.60}")
        return value
    if isinstance(value, np.ndarray):
        return _checked_array(value, label, where)
    rows = check_rows(value, label, where, "must be a list of rows of integers 0..255, or a .png/.npy path",
                      _tag_row, "values must be integers 0..255 (0: untagged)")
    return np.array(rows, dtype=np.uint8)


def _tag_row(row: list) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in row)


def _checked_array(array: np.ndarray, label, where: str | None) -> np.ndarray:
    if array.ndim != 2 or array.dtype.kind not in "iu":
        raise map_error(label, where, "tags must be a 2-D array of integers 0..255")
    if array.size and (array.min() < 0 or array.max() > 255):
        raise map_error(label, where, "tags must be integers 0..255 (0: untagged)")
    return np.array(array, dtype=np.uint8)


# -- reading a layer ----------------------------------------------------------------------


def load_tags(options: dict, map_path: Path, shape: tuple[int, int]) -> tuple[np.ndarray, dict, list[Path]]:
    """``(tags, tag_names, sources)`` from validated options holding ``tags``: the layer
    (uint8, ``[y, x]``, shape ``shape``), the tag names and values, the files read."""
    spec = options["tags"]
    tag_colors = options.get("tag_colors")
    names = options.get("tag_names") or {}
    sources: list[Path] = []
    if tag_colors is not None and not (isinstance(spec, str) and spec.lower().endswith(".png")):
        raise map_error(map_path, "field 'tag_colors'", "names colours of a PNG: 'tags' must name a .png file")
    if isinstance(spec, np.ndarray):
        tags = spec
    else:
        tags_path = map_path.parent / spec
        sources.append(tags_path)
        if tags_path.suffix.lower() == ".npy":
            array = load_npy(tags_path, shape, "tags", "iu", "integers 0..255")
            tags = _checked_array(np.asarray(array), tags_path, None)
        else:
            tags, names = _load_png_tags(tags_path, shape, tag_colors, names)
    if tags.shape != tuple(shape):
        raise map_error(map_path, "tags", f"are {tags.shape[1]}x{tags.shape[0]}, the map is {shape[1]}x{shape[0]}")
    return tags, names, sources


def _load_png_tags(path: Path, shape, tag_colors, names: dict) -> tuple[np.ndarray, dict]:
    from pathserver.maps.image import load_png

    image = load_png(path)
    if (image.height, image.width) != tuple(shape):
        raise map_error(path, None, f"tag image is {image.width}x{image.height}, the map is {shape[1]}x{shape[0]}")
    if image.mode in ("I", "I;16", "I;16B", "I;16L", "F"):
        raise map_error(path, None, f"a tag image must have 8 bits a channel, this one is {image.mode!r}; "
                                    "save it as 8-bit grey or RGB")
    rgba = np.asarray(image.convert("RGBA"), dtype=np.uint32)
    if tag_colors is None:
        return np.ascontiguousarray(rgba[:, :, 0], dtype=np.uint8), names
    values = tag_values(tag_colors, names, path)
    colours = (rgba[:, :, 0] << 16) | (rgba[:, :, 1] << 8) | rgba[:, :, 2]
    tags = colour_tags(colours, tag_colors, values)
    tags[rgba[:, :, 3] == 0] = 0
    return tags, values


def name_link_tags(links, tags, tag_names: dict | None, shape, path) -> tuple:
    """``(tags, tag_names)`` of a map whose ``links`` (as ``put_map`` takes them) may name
    tags: each tag a link names and ``tag_names`` does not gets the lowest value 1..255
    neither named nor in the layer ``tags``, in sorted name order; a map without a tag
    layer gets one of zeros of ``shape`` (a map's tag names need a layer). Links that are
    not well formed are left to :func:`pathserver.floors.check_links`."""
    names = dict(tag_names or {})
    wanted = {link["tag"] for link in links or () if isinstance(link, dict) and isinstance(link.get("tag"), str)
              and link["tag"]}
    missing = sorted(wanted - set(names))
    if not wanted:
        return tags, tag_names
    used = set(names.values()) | (set(np.unique(tags).tolist()) if tags is not None else set())
    free = iter(v for v in range(1, 256) if v not in used)
    for name in missing:
        value = next(free, None)
        if value is None:
            raise map_error(path, "field 'links'", "more than 255 tag names (a tag is one byte a cell)")
        names[name] = value
    if tags is None:
        tags = np.zeros(shape, dtype=np.uint8)
    return tags, names


# -- writing --------------------------------------------------------------------------------


def sidecar_fields(gridmap, map_path: Path) -> tuple[dict, dict[Path, bytes]]:
    """The sidecar fields (``tags``, ``tag_names``, ``classes``) that bring ``gridmap``'s
    tags back, and any file they refer to (``NAME.tags.npy`` past
    :data:`INLINE_TAGS_CELLS`)."""
    if gridmap.tags is None:
        return {}, {}
    files: dict[Path, bytes] = {}
    if gridmap.tags.size <= INLINE_TAGS_CELLS:
        fields: dict = {"tags": gridmap.tags.tolist()}
    else:
        name = f"{map_path.stem}.tags.npy"
        fields = {"tags": name}
        files[map_path.parent / name] = npy_bytes(gridmap.tags, np.uint8)
    fields.update(file_fields(gridmap))
    return fields, files


def file_fields(gridmap) -> dict:
    """``tag_names`` and ``classes`` as a sidecar (or a Tiled map property) writes them."""
    fields: dict = {}
    if gridmap.tag_names:
        fields["tag_names"] = dict(gridmap.tag_names)
    if gridmap.classes:
        fields["classes"] = {name: dict(rules) for name, rules in gridmap.classes.items()}
    return fields


def json_property(value) -> str:
    """A Tiled string property holding ``value`` as JSON (what ``tag_names`` / ``classes``
    map properties are)."""
    return json.dumps(value, separators=(", ", ": "))
