"""Pictures of a map and a path: ``pathserver render``.

Layers, bottom to top, each cell drawn as a ``scale x scale`` block of pixels (cell
``(x, y)`` covers pixels ``x*scale .. x*scale+scale-1`` across, ``y*scale ..`` down)::

    terrain     walls WALL; walkable cells FLOOR, shading towards COSTLY as their terrain
                cost rises (log scale up to the map's highest cost)
    clearance   (optional) the clearance field as a heat map: each walkable cell coloured
                by the largest square unit that can stand on it (dark purple 1, yellow
                roomy, log scale; :func:`largest_unit`); it replaces the terrain shading
    footprint   every cell the unit's footprint covers while it follows the path, tinted
    path        a polyline through the centres of the waypoints' cells, a dot on each
                waypoint where the path turns, START and GOAL discs on the endpoints
                (after snapping)
    caption     one line below the map: name, size, unit, status, cost, waypoints

Why the heat map is re-anchored, and which cells the footprint covers between waypoints:
docs/design.md, "Pictures".
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from pathserver import options
from pathserver.errors import PathserverError
from pathserver.grid.gridmap import GridMap
from pathserver.grid.values import footprint_offsets, normalize_unit_size

WALL = (38, 38, 46)
FLOOR = (240, 237, 228)
COSTLY = (176, 132, 76)
FOOTPRINT = (64, 120, 230)
FOOTPRINT_ALPHA = 0.45
PATH = (255, 84, 20)
WAYPOINT = (255, 255, 255)
START = (20, 170, 70)
GOAL = (210, 24, 60)
CAPTION_BACKGROUND = (24, 24, 28)
CAPTION_TEXT = (235, 235, 235)
#: Viridis, sampled at five stops: perceptually even, readable in grey and by most
#: colour-blind readers.
HEAT_STOPS = np.array(
    [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)], dtype=np.float32
)
#: The default scale makes the long side about this many pixels.
TARGET_PIXELS = 1024
MAX_SCALE = 32


def render_map(
    gridmap: GridMap,
    result=None,
    unit_size=1,
    clearance: bool = False,
    scale: int | None = None,
    *,
    caption: bool = True,
) -> Image.Image:
    """Draw ``gridmap`` and optionally a :class:`~pathserver.PathResult` on it.

    result: a path to draw (its ``path`` (n, 2) ``(x, y)`` waypoints, ``start``, ``goal``,
        ``status``); None draws the map alone. A ``no_path`` result draws only the two
        endpoints.
    unit_size: the unit the path was found for (int ``k`` or ``(w, h)``): its footprint
        is tinted along the path.
    clearance: colour walkable cells by clearance instead of terrain cost.
    scale: pixels per cell side (int >= 1); None picks one making the long side about
        TARGET_PIXELS pixels.
    caption: add a one-line caption strip below the map (the map stays at pixel (0, 0)).

    Returns an RGB image of ``width*scale`` by ``height*scale`` pixels, plus the caption.
    """
    unit_w, unit_h = normalize_unit_size(unit_size, gridmap.width, gridmap.height)
    if scale is None:
        scale = max(1, min(MAX_SCALE, TARGET_PIXELS // max(gridmap.width, gridmap.height)))
    scale = int(scale)
    if scale < 1:
        raise ValueError(f"scale must be at least 1 pixel per cell, got {scale}")

    heat_top = None
    if clearance:
        largest = largest_unit(gridmap)
        heat_top = int(largest.max())
        cells = _heat_colours(gridmap, largest)
    else:
        cells = _terrain_colours(gridmap)
    path = None
    if result is not None and result.status != "no_path" and len(result.path):
        path = np.asarray(result.path, dtype=np.int64).reshape(-1, 2)
        covered = footprint_mask(gridmap.walkable.shape, path, unit_w, unit_h)
        # Blue is lost on the heat map's blues and greens; white reads on every colour.
        tint = np.asarray(WAYPOINT if clearance else FOOTPRINT, dtype=np.float32)
        cells[covered] = cells[covered] * (1.0 - FOOTPRINT_ALPHA) + tint * FOOTPRINT_ALPHA

    pixels = np.repeat(np.repeat(np.rint(cells).astype(np.uint8), scale, axis=0), scale, axis=1)
    image = Image.fromarray(pixels, "RGB")
    draw = ImageDraw.Draw(image)
    if path is not None:
        _draw_path(draw, path, scale)
    if result is not None:
        for point, colour in ((result.start, START), (result.goal, GOAL)):
            _disc(draw, point, scale, max(4.5, 0.45 * scale), colour)
    if caption:
        image = _add_caption(image, _caption_text(gridmap, result, (unit_w, unit_h), heat_top), heat_top)
    return image


def footprint_mask(shape: tuple[int, int], path: np.ndarray, unit_w: int, unit_h: int) -> np.ndarray:
    """bool (H, W): the cells a ``unit_w x unit_h`` unit covers following ``path``
    ((n, 2) ``(x, y)`` waypoints) along each segment's supercover."""
    height, width = shape
    off_x, off_y = footprint_offsets(unit_w, unit_h)
    anchors = np.zeros(shape, dtype=bool)
    for (x0, y0), (x1, y1) in zip(path[:-1].tolist(), path[1:].tolist()):
        for x, y in supercover(x0, y0, x1, y1):
            anchors[y, x] = True
    x, y = path[-1].tolist()
    anchors[y, x] = True
    covered = np.zeros(shape, dtype=bool)
    for ay, ax in zip(*np.nonzero(anchors)):
        left, top = max(0, ax - off_x), max(0, ay - off_y)
        covered[top : min(height, ay - off_y + unit_h), left : min(width, ax - off_x + unit_w)] = True
    return covered


def supercover(x0: int, y0: int, x1: int, y1: int) -> list[tuple[int, int]]:
    """The cells the segment between the centres of two cells crosses, both ends
    included; where it passes exactly through a corner, the diagonal cell only (as
    ``pathserver.core.lines.segment_clear`` steps)."""
    nx, ny = abs(x1 - x0), abs(y1 - y0)
    step_x = 1 if x1 > x0 else -1
    step_y = 1 if y1 > y0 else -1
    x, y, ix, iy = x0, y0, 0, 0
    cells = [(x, y)]
    while ix < nx or iy < ny:
        decision = (1 + 2 * ix) * ny - (1 + 2 * iy) * nx
        if decision == 0:
            x, y, ix, iy = x + step_x, y + step_y, ix + 1, iy + 1
        elif decision < 0:
            x, ix = x + step_x, ix + 1
        else:
            y, iy = y + step_y, iy + 1
        cells.append((x, y))
    return cells


# -- layers --------------------------------------------------------------------------------


def _terrain_colours(gridmap: GridMap) -> np.ndarray:
    """float32 (H, W, 3)."""
    floor = np.asarray(FLOOR, dtype=np.float32)
    colours = np.empty((gridmap.height, gridmap.width, 3), dtype=np.float32)
    colours[:] = floor
    if not gridmap.uniform_cost:
        walkable_costs = gridmap.cost[gridmap.walkable]
        top = float(walkable_costs.max()) if walkable_costs.size else 1.0
        if top > 1.0:
            share = (np.log(gridmap.cost) / math.log(top)).astype(np.float32)
            costly = np.asarray(COSTLY, dtype=np.float32)
            colours = floor + np.clip(share, 0.0, 1.0)[..., None] * (costly - floor)
    colours[~gridmap.walkable] = WALL
    return colours


def largest_unit(gridmap: GridMap, limit: int = 255) -> np.ndarray:
    """int32 (H, W): the side of the largest square unit that can stand on each cell
    (its footprint all walkable), 0 on walls, at most ``limit``.

    A ``k x k`` footprint at ``(x, y)`` has its top-left cell at ``(x - (k-1)//2,
    y - (k-1)//2)`` and fits exactly when that cell's clearance is at least ``k``.
    """
    clearance = gridmap.clearance
    height, width = clearance.shape
    largest = np.zeros(clearance.shape, dtype=np.int32)
    for side in range(1, min(int(clearance.max(initial=0)), limit) + 1):
        reach = (side - 1) // 2
        # Cell (x, y) reads the clearance at (x - reach, y - reach).
        fits = clearance[: height - reach, : width - reach] >= side
        largest[reach:, reach:][fits] = side
    return largest


def _heat_colours(gridmap: GridMap, largest: np.ndarray) -> np.ndarray:
    """float32 (H, W, 3): walkable cells by ``largest`` (:func:`largest_unit`) on a log
    scale, walls WALL."""
    colours = np.empty((gridmap.height, gridmap.width, 3), dtype=np.float32)
    colours[:] = WALL
    values = largest[gridmap.walkable].astype(np.float32)
    if values.size:
        colours[gridmap.walkable] = heat(values, float(values.max()))
    return colours


def heat(values: np.ndarray, top: float) -> np.ndarray:
    """float32 (..., 3) colours for clearance ``values`` (>= 1) on a log scale to ``top``."""
    share = np.log(np.maximum(values, 1.0)) / math.log(top) if top > 1.0 else np.zeros_like(values)
    position = np.clip(share, 0.0, 1.0) * (len(HEAT_STOPS) - 1)
    low = np.minimum(position.astype(np.int64), len(HEAT_STOPS) - 2)
    frac = (position - low)[..., None]
    return (HEAT_STOPS[low] * (1.0 - frac) + HEAT_STOPS[low + 1] * frac).astype(np.float32)


def _centre(point, scale: int) -> tuple[float, float]:
    # Pixel centres: a cell spans [x*scale, (x+1)*scale), its middle pixel is at +scale/2.
    return (point[0] * scale + (scale - 1) / 2.0, point[1] * scale + (scale - 1) / 2.0)


def _draw_path(draw: ImageDraw.ImageDraw, path: np.ndarray, scale: int) -> None:
    points = [_centre(p, scale) for p in path.tolist()]
    line_width = max(2, round(scale / 3))
    if len(points) > 1:
        draw.line(points, fill=PATH, width=line_width, joint="curve")
    radius = max(2.5, 0.25 * scale)
    # A dot where the path turns: every waypoint of a smoothed path, while a cell-by-cell
    # path (smooth="none") is not buried under one dot per cell.
    for (px, py), (x, y), (nx, ny) in zip(path[:-2].tolist(), path[1:-1].tolist(), path[2:].tolist()):
        if (x - px) * (ny - y) != (y - py) * (nx - x) or (x - px) * (nx - x) + (y - py) * (ny - y) <= 0:
            cx, cy = _centre((x, y), scale)
            draw.ellipse((cx - radius, cy - radius, cx + radius, cy + radius), fill=WAYPOINT, outline=PATH)


def _disc(draw: ImageDraw.ImageDraw, point, scale: int, radius: float, colour) -> None:
    cx, cy = _centre(point, scale)
    draw.ellipse((cx - radius, cy - radius, cx + radius, cy + radius), fill=colour, outline=WAYPOINT)


def _caption_text(gridmap: GridMap, result, unit: tuple[int, int], heat_top: int | None) -> str:
    name = gridmap.name or "map"
    parts = [f"{name} {gridmap.width}x{gridmap.height}"]
    if result is not None:
        unit_text = str(unit[0]) if unit[0] == unit[1] else f"{unit[0]}x{unit[1]}"
        parts.append(f"unit {unit_text}")
        parts.append(f"({result.start[0]},{result.start[1]}) -> ({result.goal[0]},{result.goal[1]})")
        parts.append(result.status)
        if result.status != "no_path":
            parts.append(f"cost {result.cost:.2f}")
            parts.append(f"{len(result.path)} waypoints")
    if heat_top is not None:
        parts.append(f"largest unit 1..{heat_top}")
    return " · ".join(parts)


def _add_caption(image: Image.Image, text: str, heat_top: int | None) -> Image.Image:
    font_size = 13 if image.width < 480 else 16
    try:
        font = ImageFont.load_default(size=font_size)
    except (TypeError, OSError, ImportError):  # Pillow without FreeType (as in the bundle): the bitmap font
        font = ImageFont.load_default()
    pad = 6
    strip = font_size + 2 * pad
    framed = Image.new("RGB", (image.width, image.height + strip), CAPTION_BACKGROUND)
    framed.paste(image, (0, 0))
    draw = ImageDraw.Draw(framed)
    text_right = image.width - pad
    if heat_top is not None and image.width >= 240:
        # A small colour ramp at the right end of the strip, cramped -> roomy.
        ramp_width = 80
        top = max(1.0, float(heat_top))
        ramp = heat(np.exp(np.linspace(0.0, math.log(top), ramp_width)), top)
        ramp_pixels = np.repeat(np.rint(ramp).astype(np.uint8)[None], font_size, axis=0)
        left = image.width - pad - ramp_width
        framed.paste(Image.fromarray(ramp_pixels, "RGB"), (left, image.height + pad))
        text_right = left - pad
    while text and draw.textlength(text, font=font) > text_right - pad:
        text = text[:-2] + "…"
    draw.text((pad, image.height + pad), text, fill=CAPTION_TEXT, font=font)
    return framed


# -- the command line ----------------------------------------------------------------------


def _scale(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"scale must be a whole number of pixels per cell, at least 1; got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``render`` subcommand's arguments."""
    parser.add_argument("map", type=Path, help="map file (.map, .png, .tmj)")
    parser.add_argument("--path", nargs=4, type=float, metavar=("SX", "SY", "GX", "GY"),
                        help="find and draw the path between these grid cells")
    # The waypoints to draw: string-pulled unless asked otherwise.
    options.add_arguments(parser, _SEARCH_FLAGS, defaults={options.SMOOTH.name: "los"})
    parser.add_argument("--clearance", action="store_true", help="colour walkable cells by clearance")
    parser.add_argument("--scale", type=_scale, default=None, help="pixels per cell (default: about 1024 px across)")
    parser.add_argument("--no-caption", action="store_true", help="leave out the caption strip")
    parser.add_argument("-o", "--output", type=Path, required=True, help="PNG file to write")


_SEARCH_FLAGS = tuple(option.name for option in (options.UNIT_SIZE, options.SMOOTH, options.DIAGONAL))


def run(args: argparse.Namespace) -> int:
    """Render as ``args`` ask; PathserverError (bad map, bad point) propagates to the CLI."""
    from pathserver.grid.search import find_path
    from pathserver.maps import load_map

    gridmap = load_map(args.map)
    result = None
    if args.path is not None:
        sx, sy, gx, gy = args.path
        result = find_path(gridmap, (sx, sy), (gx, gy), **options.cli_values(args, _SEARCH_FLAGS))
    image = render_map(gridmap, result, unit_size=args.unit_size, clearance=args.clearance,
                       scale=args.scale, caption=not args.no_caption)
    try:
        image.save(args.output, format="PNG", optimize=True)
    except OSError as exc:
        print(f"pathserver render: error: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    summary = f"wrote {args.output} ({image.width}x{image.height} px)"
    if result is not None:
        summary += f": {result.status}"
        if result.status != "no_path":
            summary += f", cost {result.cost:.3f}, {len(result.path)} waypoints"
    print(summary)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pathserver render", description=__doc__.splitlines()[0])
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except PathserverError as exc:
        print(f"pathserver render: error: {exc.code}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
