"""PNG maps (read and written with Pillow): one pixel per cell, pixel row ``y`` is numpy
row ``y``, pixel column ``x`` is column ``x`` (on a hex map too: the sidecar's ``shape``
and ``layout``).

Colour -> cell, first rule that applies:

1. alpha 0 (fully transparent): blocked;
2. the colour (``#rrggbb``, alpha ignored) is in the sidecar's ``cost_legend``: that cost,
   or blocked for ``null``;
3. luminance ``L = (299 R + 587 G + 114 B) / 1000`` (0..255, the grey value for grey
   pixels; 16-bit greys are scaled to 0..255):

   - ``L < 64`` (black, dark): blocked;
   - otherwise walkable with cost ``1 + (255 - L) / 16``: white is cost 1, grey 239 is
     cost 2, grey 223 is 3, ... grey 64 is 12.9375.

The sidecar's ``tag_colors`` tags the cells of its colours when it names no ``tags`` file.
Tag colours, writing, and what is refused before decoding pixels: docs/design.md, "PNG
maps".
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from pathserver.errors import MapLoadError
from pathserver.maps.files import (
    Decoded, check_dimensions, colour_tags, grid_fields, map_error, read_file, tag_values,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: A compressed image bigger than this is not a map we would serve.
MAX_PNG_BYTES = 512 * 1024 * 1024
#: Luminance below this is blocked.
BLOCKED_BELOW = 64
#: Cost grows by 1 for every this many grey levels below white.
GREY_STEP = 16
_MAX_LEGEND_COLOURS = 65536


def load_png(path: Path):
    """A decoded Pillow image of ``path``, its size checked before pixels are decoded."""
    from PIL import Image

    data = read_file(path, MAX_PNG_BYTES)
    if not data.startswith(PNG_SIGNATURE):
        raise map_error(path, None, "not a PNG file")
    # The size is read here rather than from Pillow, which refuses huge images with a
    # message about decompression bombs that does not say what our limit is.
    if len(data) < 24 or data[12:16] != b"IHDR":
        raise map_error(path, "PNG header", "no IHDR chunk after the signature")
    check_dimensions(path, "PNG header", int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big"))
    try:
        with Image.open(io.BytesIO(data), formats=["PNG"]) as probe:
            # verify() walks every chunk and its CRC, so a truncated file fails here even
            # when some other code has set ImageFile.LOAD_TRUNCATED_IMAGES.
            probe.verify()
        image = Image.open(io.BytesIO(data), formats=["PNG"])
        image.load()
    except MapLoadError:
        raise
    except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError, zlib errors...
        raise map_error(path, None, f"cannot decode PNG: {exc}") from None
    return image


def _rule_costs(luminance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    walkable = luminance >= BLOCKED_BELOW
    cost = 1.0 + (255.0 - luminance) / GREY_STEP
    return walkable, cost


def read(path: Path, options: dict) -> Decoded:
    image = load_png(path)
    legend = {int(key[1:], 16): value for key, value in (options.get("cost_legend") or {}).items()}
    height, width = image.height, image.width
    if image.mode in ("I", "I;16", "I;16B", "I;16L"):
        # 16-bit greys: no alpha; the legend names them by their 8-bit grey.
        values = np.clip(np.asarray(image, dtype=np.int64), 0, 65535).astype(np.uint32).reshape(-1)
        keys, inverse = np.unique(values, return_inverse=True)
        luminance = keys / 257.0
        grey8 = np.rint(luminance).astype(np.uint32)
        colours = (grey8 << 16) | (grey8 << 8) | grey8
        transparent = np.zeros(len(keys), dtype=bool)
    else:
        rgba = np.asarray(image.convert("RGBA"), dtype=np.uint32).reshape(-1, 4)
        packed = (rgba[:, 0] << 24) | (rgba[:, 1] << 16) | (rgba[:, 2] << 8) | rgba[:, 3]
        keys, inverse = np.unique(packed, return_inverse=True)
        red, green, blue = (keys >> 24) & 255, (keys >> 16) & 255, (keys >> 8) & 255
        colours = keys >> 8
        luminance = (299 * red + 587 * green + 114 * blue) / 1000.0
        transparent = (keys & 255) == 0
    walkable, cost = _rule_costs(luminance)
    for colour, value in legend.items():
        hit = colours == colour
        walkable[hit] = value is not None
        cost[hit] = 1.0 if value is None else value
    tag_colors = None if "tags" in options else options.get("tag_colors")
    if tag_colors:
        _check_tag_colours(path, tag_colors, legend)
    walkable &= ~transparent
    inverse = inverse.reshape(-1)
    cell_walkable = walkable[inverse].reshape(height, width)
    cell_cost = cost[inverse].reshape(height, width)
    if not (cell_cost[cell_walkable] != 1.0).any():
        cell_cost = None
    if not tag_colors:
        return Decoded(cell_walkable, cell_cost)
    values = tag_values(tag_colors, options.get("tag_names"), path)
    cell_tags = colour_tags(colours, tag_colors, values)[inverse].reshape(height, width)
    return Decoded(cell_walkable, cell_cost, tags=cell_tags, tag_names=values)


def _check_tag_colours(path, tag_colors: dict, legend: dict) -> None:
    for name, listed in tag_colors.items():
        for colour in listed:
            packed = int(colour[1:], 16)
            if packed in legend:
                if legend[packed] is None:
                    raise map_error(path, f"field 'tag_colors'[{name!r}]",
                                    f"{colour} is blocked by cost_legend; a tag on blocked cells never matters")
                continue
            red, green, blue = packed >> 16, (packed >> 8) & 255, packed & 255
            luminance = (299 * red + 587 * green + 114 * blue) / 1000.0
            if luminance < BLOCKED_BELOW:
                raise map_error(
                    path, f"field 'tag_colors'[{name!r}]",
                    f"{colour} is a blocked colour (luminance {luminance:.0f} < {BLOCKED_BELOW}); a tag on blocked "
                    f"cells never matters: give {colour} a cost in cost_legend to make it walkable",
                )


def _legend_colour(index: int) -> int:
    # Multiplying by an odd constant permutes 24-bit values, so colours are distinct and
    # spread out; greys are skipped because greys already mean costs by rule 3.
    n = index
    while True:
        colour = (n * 2654435761 + 0x3070FF) & 0xFFFFFF
        if not ((colour >> 16) == ((colour >> 8) & 255) == (colour & 255)):
            return colour
        n += 1 << 24


def encode(gridmap) -> tuple[bytes, dict]:
    """PNG bytes for ``gridmap`` and the sidecar fields it needs."""
    from PIL import Image

    walkable, cost = gridmap.walkable, gridmap.cost
    steps = (cost - 1.0) * GREY_STEP
    as_grey = walkable & (steps == np.rint(steps)) & (steps <= 255 - BLOCKED_BELOW)
    grey = np.zeros(walkable.shape, dtype=np.uint8)
    grey[as_grey] = (255 - steps[as_grey]).astype(np.uint8)
    coloured = walkable & ~as_grey
    fields: dict = {}
    if coloured.any():
        distinct, inverse = np.unique(cost[coloured], return_inverse=True)
        if len(distinct) > _MAX_LEGEND_COLOURS:
            raise ValueError(f"{len(distinct)} distinct costs is too many for a PNG legend")
        palette = np.array([_legend_colour(i) for i in range(len(distinct))], dtype=np.uint32)
        rgb = np.repeat(grey[:, :, None], 3, axis=2)
        chosen = palette[inverse.reshape(-1)]
        rgb[coloured] = np.stack([(chosen >> 16) & 255, (chosen >> 8) & 255, chosen & 255], axis=1).astype(np.uint8)
        fields["cost_legend"] = {f"#{int(c):06x}": float(v) for c, v in zip(palette, distinct)}
        image = Image.fromarray(rgb)
    else:
        image = Image.fromarray(grey)
    fields.update(grid_fields(gridmap))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue(), fields
