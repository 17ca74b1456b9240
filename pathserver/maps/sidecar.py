"""Sidecars: optional metadata beside a map, ``NAME.json`` or ``NAME.toml`` next to
``NAME.map`` / ``NAME.png`` / ``NAME.tmj`` (a Tiled ``NAME.json`` map can only have
``NAME.toml``); both at once is an error, as which one wins would be a guess. Every key is
optional and an unknown one is an error, so a typo does not pass silently. The keys are
:data:`KEYS` (docs/guide.md's table is generated from it); how the tag keys combine is in
:mod:`pathserver.maps.tags`; floors and links are checked by :mod:`pathserver.floors` when
the map is built, and a tag a link names that the map does not gets a value of its own
(:func:`pathserver.maps.tags.name_link_tags`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from pathserver.errors import RequestError
from pathserver.floors import check_floors
from pathserver.hexes import LAYOUTS, SHAPES
from pathserver.maps import tags as tag_layers
from pathserver.maps.files import (
    OPTION_KEYS, check_rows, is_number, load_npy, map_error, npy_bytes, parse_json, read_file,
)

SIDECAR_SUFFIXES = (".json", ".toml")
#: Sidecars hold at most an inline heightmap; anything bigger is surely not a sidecar.
MAX_SIDECAR_BYTES = 256 * 1024 * 1024
#: Heights up to this many cells are written inline; bigger ones go to NAME.heights.npy.
INLINE_HEIGHTS_CELLS = 4096

_TAG_KEYS = {"tags", "tag_names", "tag_colors", "classes"}
_ROWS_KEYS = {"shape", "layout", "origin", "cell_size", "cost_legend", "heights", "heights_scale", "floors", "links"}
#: The keys each map format takes (a key another format takes is refused).
FORMAT_KEYS = {
    "movingai": {*_ROWS_KEYS, *_TAG_KEYS},
    "png": {*_ROWS_KEYS, *_TAG_KEYS},
    "tiled": {"origin", "cell_size", "heights", "heights_scale", "layer", "empty_cost", "tag_layer", *_TAG_KEYS},
}
#: Every sidecar key and what it holds, in the order docs/guide.md lists them.
KEYS = {
    "shape": '`"square"` (the default) or `"hex"`',
    "layout": 'a hex map\'s offset layout: `"odd-r"`, `"even-r"`, `"odd-q"` or `"even-q"` '
              '(`pathserver.hexes`); required with `"hex"`, refused without',
    "origin": "`[x, y]`: the world position of the corner of cell (0, 0)",
    "cell_size": "the world size of one cell (> 0); on a hex map a number or the tile size `[w, h]` "
                 "(Godot's TileSet `tile_size`)",
    "cost_legend": '`.map`: character -> cost (`{"~": 3.0}`); `.png`: `"#rrggbb"` -> cost; a number >= 1 '
                   'is walkable at that cost, null (TOML: `"blocked"`) blocked',
    "heights": "rows of numbers (H rows of W), or a path relative to the map: a 2-D `.npy` array or a "
               "grey `.png` heightmap",
    "heights_scale": "multiplies a PNG heightmap's grey values (default 1)",
    "layer": "the tile layer to read",
    "empty_cost": "the cost of empty cells (gid 0); null: blocked",
    "tags": "the tag layer: rows of integers 0..255 (0: untagged), or a path relative to the map: a "
            "`.png` (its red or grey value the tag byte) or a 2-D int `.npy`",
    "tag_names": "tag name -> value 1..255",
    "tag_colors": 'tag name -> colour(s) of the tags PNG, or of a PNG map without `"tags"`',
    "tag_layer": 'the tile layer whose tiles\' `"tag"` property gives the tags',
    "classes": "unit classes: class -> `{tag: null (TOML: \"blocked\") or a cost multiplier >= 1}`",
    "floors": "n floors (1..16): the file's rows one under another, floor 0 on top, each height / n "
              "rows; the heights and tags layers hold the same rows",
    "links": 'links between cells as `put_map` takes them, `[{"from": [x, y, floor], "to": [x, y, '
             'floor], "cost": c, "two_way": bool, "tag": name}, ...]` (TOML: `[[links]]` tables)',
}
_FORMAT_NAMES = {"movingai": "`.map`", "png": "`.png`", "tiled": "Tiled"}


def markdown_table() -> str:
    """The table of sidecar keys in ``docs/guide.md`` (a test compares the two)."""
    rows = ["| key | maps | holds |", "| --- | --- | --- |"]
    for key, holds in KEYS.items():
        formats = ", ".join(name for fmt, name in _FORMAT_NAMES.items() if key in FORMAT_KEYS[fmt])
        rows.append(f"| `{key}` | {formats} | {holds} |")
    return "\n".join(rows)
_COLOUR = re.compile(r"#[0-9a-fA-F]{6}")


def sidecar_paths(map_path: Path) -> list[Path]:
    """Where ``map_path``'s sidecar may be (never the map itself)."""
    map_path = Path(map_path)
    return [p for p in (map_path.with_suffix(s) for s in SIDECAR_SUFFIXES) if p != map_path]


def find_sidecar(map_path: Path) -> Path | None:
    existing = [p for p in sidecar_paths(map_path) if p.is_file()]
    if len(existing) > 1:
        raise map_error(map_path, None, f"both {existing[0].name} and {existing[1].name} exist; keep one sidecar")
    return existing[0] if existing else None


def read_sidecar(path: Path, fmt: str) -> dict:
    """The validated options in sidecar ``path`` for a map of format ``fmt``."""
    data = read_file(path, MAX_SIDECAR_BYTES)
    if path.suffix.lower() == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10: the package still supports it, JSON sidecars work
            raise map_error(path, None, "TOML sidecars need Python 3.11 or newer; use NAME.json") from None
        try:
            raw = tomllib.loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise map_error(path, f"byte {exc.start}", "not UTF-8 text") from None
        except tomllib.TOMLDecodeError as exc:
            raise map_error(path, None, f"invalid TOML: {exc}") from None
    else:
        raw = parse_json(path, data)
    if not isinstance(raw, dict):
        raise map_error(path, None, "a sidecar must be an object of keys")
    return validate_options(raw, fmt, str(path))


def _cell_size(value, label: str, where: str) -> float | tuple[float, float]:
    """A number > 0, or a tile size ``[w, h]`` of two (whether the map is a hex map, which
    a pair needs, is :func:`check_shape`'s question)."""
    if isinstance(value, (list, tuple)):
        if len(value) == 2 and all(is_number(v) and v > 0 for v in value):
            return float(value[0]), float(value[1])
    elif is_number(value) and value > 0:
        return float(value)
    raise map_error(label, where, f"must be a finite number > 0 (or, on a hex map, [w, h] of two), got {value!r:.40}")


def check_shape(options: dict, shape: str, layout: str | None, labels: dict) -> None:
    """Refuse what does not fit a map of ``shape`` and ``layout`` (the options', else what
    the file declares): a hex map without a layout, a layout or a tile size ``[w, h]`` on a
    square map. ``labels`` names the source (sidecar, load_map argument) of each key of
    ``options`` for the error."""
    if shape == "hex" and layout is None:
        raise map_error(labels["shape"], "field 'layout'",
                        f"a hex map needs a layout: one of {', '.join(map(repr, LAYOUTS))}")
    if shape == "square" and layout is not None:
        raise map_error(labels["layout"], "field 'layout'", "is for hex maps: give \"shape\": \"hex\" too")
    if shape == "square" and isinstance(options.get("cell_size"), tuple):
        raise map_error(labels["cell_size"], "field 'cell_size'",
                        "a tile size [w, h] is for hex maps; a square map's cell_size is one number")


def _legend_value(value, label: str, where: str):
    if value is None or value == "blocked":
        return None
    if not is_number(value) or value < 1:
        raise map_error(label, where, f"must be a number >= 1 or null (blocked), got {value!r:.40}")
    return float(value)


def validate_options(raw: dict, fmt: str, label: str) -> dict:
    """Check and normalise sidecar keys; ``label`` names their source in errors."""
    options = {}
    for key, value in raw.items():
        where = f"field {key!r}"
        if key not in OPTION_KEYS:
            raise map_error(label, where, f"unknown key; known keys: {', '.join(OPTION_KEYS)}")
        if key not in FORMAT_KEYS[fmt]:
            raise map_error(label, where, f"does not apply to {fmt} maps")
        if key == "origin":
            if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(map(is_number, value)):
                raise map_error(label, where, f"must be [x, y] with two finite numbers, got {value!r:.40}")
            options[key] = (float(value[0]), float(value[1]))
        elif key == "cell_size":
            options[key] = _cell_size(value, label, where)
        elif key == "shape":
            if value not in SHAPES:
                raise map_error(label, where, f"must be one of {', '.join(map(repr, SHAPES))}, got {value!r:.40}")
            options[key] = value
        elif key == "layout":
            if value not in LAYOUTS:
                raise map_error(label, where, f"must be one of {', '.join(map(repr, LAYOUTS))}, got {value!r:.40}")
            options[key] = value
        elif key == "heights_scale":
            if not is_number(value):
                raise map_error(label, where, f"must be a finite number, got {value!r:.40}")
            options[key] = float(value)
        elif key in ("layer", "tag_layer"):
            if not isinstance(value, str):
                raise map_error(label, where, f"must be a layer name, got {value!r:.40}")
            options[key] = value
        elif key == "tags":
            options[key] = tag_layers.check_tags_spec(value, label, where)
        elif key == "tag_names":
            options[key] = tag_layers.check_tag_names(value, label, where)
        elif key == "tag_colors":
            options[key] = tag_layers.check_tag_colors(value, label, where)
        elif key == "classes":
            options[key] = tag_layers.check_classes(value, label, where)
        elif key == "empty_cost":
            options[key] = _legend_value(value, label, where)
        elif key == "cost_legend":
            options[key] = _validate_legend(value, fmt, label)
        elif key == "heights":
            options[key] = _validate_heights(value, label)
        elif key == "floors":
            try:
                options[key] = check_floors(value)
            except RequestError as exc:
                raise map_error(label, where, exc.message) from None
        elif key == "links":
            # Each link is checked with the map's size and floors, when it is built.
            if not isinstance(value, (list, tuple)):
                raise map_error(label, where, 'must be a list of {"from", "to", "cost", "two_way"?, "tag"?}')
            options[key] = list(value)
    return options


def _validate_legend(value, fmt: str, label: str) -> dict:
    if not isinstance(value, dict):
        raise map_error(label, "field 'cost_legend'", "must be an object of key -> cost")
    legend = {}
    for symbol, cost in value.items():
        where = f"field 'cost_legend'[{symbol!r}]"
        if fmt == "movingai":
            if len(symbol) != 1 or not (33 <= ord(symbol) <= 126):
                raise map_error(label, where, "keys must be one printable ASCII character (not a space)")
            legend[symbol] = _legend_value(cost, label, where)
        else:
            if not _COLOUR.fullmatch(symbol):
                raise map_error(label, where, "keys must be colours written #rrggbb")
            legend[symbol.lower()] = _legend_value(cost, label, where)
    return legend


def _validate_heights(value, label: str):
    where = "field 'heights'"
    if isinstance(value, str):
        if Path(value).suffix.lower() not in (".npy", ".png"):
            raise map_error(label, where, f"a heights file must be .npy or .png, got {value!r:.60}")
        return value
    if isinstance(value, np.ndarray):  # only from load_map(heights=...), never from a file
        if value.ndim != 2 or value.dtype.kind not in "iuf":
            raise map_error(label, where, "must be a 2-D array of numbers")
        return np.asarray(value, dtype=np.float32)
    rows = check_rows(value, label, where, "must be a list of rows of numbers, or a .npy/.png path",
                      lambda row: all(map(is_number, row)), "values must be finite numbers")
    return np.array(rows, dtype=np.float32)


def load_heights(spec, map_path: Path, shape: tuple[int, int], scale: float) -> tuple[np.ndarray, list[Path]]:
    """Heights (float32, ``[y, x]``, shape ``shape``) from a validated ``heights`` option,
    and the files read for them."""
    height, width = shape
    if isinstance(spec, np.ndarray):
        heights, sources = spec, []
    else:
        heights_path = map_path.parent / spec
        sources = [heights_path]
        if heights_path.suffix.lower() == ".npy":
            heights = np.array(load_npy(heights_path, shape, "heights", "iuf", "numbers"), dtype=np.float32)
        else:
            heights = _load_png_heights(heights_path, shape) * np.float32(scale)
    if heights.shape != shape:
        raise map_error(
            map_path, "heights", f"is {heights.shape[1]}x{heights.shape[0]}, the map is {width}x{height}"
        )
    return heights, sources


def _load_png_heights(path: Path, shape) -> np.ndarray:
    from pathserver.maps.image import load_png

    image = load_png(path)
    if (image.height, image.width) != tuple(shape):
        raise map_error(path, None, f"heightmap is {image.width}x{image.height}, the map is {shape[1]}x{shape[0]}")
    if image.mode in ("I", "I;16", "I;16B", "I;16L"):
        return np.asarray(image, dtype=np.float32)
    return np.asarray(image.convert("L"), dtype=np.float32)


# -- writing ----------------------------------------------------------------------------


def encode_heights(heights: np.ndarray, map_path: Path) -> tuple[object, dict[Path, bytes]]:
    """The ``heights`` value for a sidecar, and any file it refers to."""
    if heights.size <= INLINE_HEIGHTS_CELLS:
        return [[float(v) for v in row] for row in heights], {}
    name = f"{map_path.stem}.heights.npy"
    return name, {map_path.parent / name: npy_bytes(heights, np.float32)}


def write_sidecar(map_path: Path, fields: dict) -> None:
    """Write ``fields`` as ``map_path``'s sidecar: when there is something to say, or when a
    sidecar already exists (rewritten, so stale keys cannot change the next load)."""
    from pathserver.maps.files import write_atomic

    existing = [p for p in sidecar_paths(map_path) if p.is_file()]
    if not fields and not existing:
        return
    target = existing[0] if existing else sidecar_paths(map_path)[0]
    ordered = {key: fields[key] for key in OPTION_KEYS if key in fields}
    if target.suffix.lower() == ".toml":
        text = _dump_toml(ordered)
    else:
        text = _dump_json(ordered)
    write_atomic(target, text.encode("utf-8"))


def _dump_json(fields: dict) -> str:
    # One row of heights per line keeps the file readable and diffable.
    lines = []
    for key, value in fields.items():
        if key in ("heights", "tags", "links") and isinstance(value, list) and value:
            rows = ",\n".join("    " + json.dumps(row, separators=(",", ":") if key == "tags" else None)
                              for row in value)
            lines.append(f'  "{key}": [\n{rows}\n  ]')
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n" if lines else "{}\n"


def _toml_value(value) -> str:
    if value is None:
        return '"blocked"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(float(value))


_TOML_TABLES = ("cost_legend", "tag_names", "tag_colors", "classes")


def _dump_toml(fields: dict) -> str:
    lines = []
    for key, value in fields.items():
        if key in _TOML_TABLES or key == "links":
            continue
        if key in ("heights", "tags") and isinstance(value, list):
            rows = ",\n".join("    " + _toml_value(row) for row in value)
            lines.append(f"{key} = [\n{rows},\n]")
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    # A TOML table must come after the plain keys.
    for key in ("cost_legend", "tag_names", "tag_colors"):
        if key in fields:
            lines.append(f"\n[{key}]")
            lines.extend(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in fields[key].items())
    for unit_class, rules in fields.get("classes", {}).items():
        lines.append(f"\n[classes.{json.dumps(unit_class)}]")
        lines.extend(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in rules.items())
    # An array of tables, one [[links]] a link, after every plain key and table.
    for link in fields.get("links", []):
        lines.append("\n[[links]]")
        lines.extend(f"{k} = {_toml_value(v)}" for k, v in link.items())
    return "\n".join(lines) + "\n"

