"""Moving AI ``.map`` files (the grid benchmark format, movingai.com/benchmarks/formats.html)::

    type octile
    height H
    width W
    map
    <H rows of W characters>

Row ``y`` of the file is numpy row ``y``; character ``x`` of it is column ``x``; (0, 0) is
the upper-left cell. The sidecar's ``shape`` and ``layout`` make the same rows a hex map.

Characters: ``.`` ``G`` ``S`` are passable (cost 1); ``@`` ``O`` ``T`` ``W`` are blocked,
the rule the benchmark's optimal lengths agree with. A sidecar's ``cost_legend`` adds
characters or redefines these: ``{"~": 3.0}`` makes ``~`` walkable at cost 3, ``{"W":
5.0}`` makes water walkable at cost 5, ``null`` makes a character blocked. Any other
character is an error. Writing uses ``.`` and ``@``; walkable cells with another cost get
legend characters (``a``, ``b``, ...) declared in the sidecar. What is tolerated and what
refused: docs/design.md, "Moving AI maps".
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from pathserver.maps.files import Decoded, check_dimensions, grid_fields, map_error

PASSABLE = ".GS"
BLOCKED = "@OTW"
#: Header lines are short; a longer "line" means this is not a .map file.
_HEADER_LINE_LIMIT = 256
#: Blank lines or spaces tolerated after the last row.
_TRAILING_SLACK = 4096
_SIZE = re.compile(r"(height|width)\s+(\d{1,12})")
#: Characters a saved map uses for costs other than 1 (none of them has a built-in meaning).
LEGEND_POOL = "abcdefghijklmnopqrstuvwxyzABCDEFHIJKLMNPQRUVXYZ0123456789~+=%&*"


def _tables(legend: dict | None):
    """Lookup tables indexed by byte value: valid, walkable, cost."""
    valid = np.zeros(256, dtype=bool)
    walkable = np.zeros(256, dtype=bool)
    cost = np.ones(256, dtype=np.float64)
    for ch in PASSABLE:
        valid[ord(ch)] = walkable[ord(ch)] = True
    for ch in BLOCKED:
        valid[ord(ch)] = True
    for ch, value in (legend or {}).items():
        valid[ord(ch)] = True
        walkable[ord(ch)] = value is not None
        cost[ord(ch)] = 1.0 if value is None else value
    return valid, walkable, cost


def _show(byte: int) -> str:
    return repr(chr(byte)) if 32 <= byte < 127 else f"byte 0x{byte:02x}"


def read(path: Path, options: dict) -> Decoded:
    """Parse a ``.map`` file; see the module docstring for what is accepted."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise map_error(path, None, f"cannot read: {exc.strerror or exc}") from None
    with fh:
        lineno = 0

        def header_line(expected: str) -> str:
            nonlocal lineno
            lineno += 1
            raw = fh.readline(_HEADER_LINE_LIMIT)
            if not raw:
                if lineno == 1:
                    raise map_error(path, None, "file is empty")
                raise map_error(path, f"line {lineno}", f"file ends inside the header, expected {expected}")
            if not raw.endswith(b"\n") and len(raw) == _HEADER_LINE_LIMIT:
                raise map_error(path, f"line {lineno}", f"header line too long, expected {expected}")
            try:
                return raw.decode("ascii").strip()
            except UnicodeDecodeError:
                raise map_error(path, f"line {lineno}", f"not text (binary data?), expected {expected}") from None

        text = header_line("'type octile'")
        if text.split() != ["type", "octile"]:
            raise map_error(path, f"line {lineno}", f"expected 'type octile', got {text!r:.60}")
        sizes: dict[str, int] = {}
        while len(sizes) < 2:
            text = header_line("'height N' and 'width N'")
            match = _SIZE.fullmatch(text)
            if match is None or match[1] in sizes:
                raise map_error(path, f"line {lineno}", f"expected 'height N' or 'width N', got {text!r:.60}")
            sizes[match[1]] = int(match[2])
            # Checked one by one so an absurd number fails before the other line is read.
            check_dimensions(path, f"line {lineno}", sizes.get("width", 1), sizes.get("height", 1))
        width, height = sizes["width"], sizes["height"]
        text = header_line("'map'")
        if text != "map":
            raise map_error(path, f"line {lineno}", f"expected 'map', got {text!r:.60}")
        # Each row is W characters and at most "\r\n": anything longer is not this map.
        limit = height * (width + 2) + _TRAILING_SLACK
        try:
            body = fh.read(limit + 1)
        except OSError as exc:
            raise map_error(path, None, f"cannot read: {exc.strerror or exc}") from None
    if len(body) > limit:
        raise map_error(path, None, f"file is longer than {height} rows of {width} characters can be")

    first_row = lineno + 1
    lines = body.split(b"\n")
    ends_cleanly = lines[-1] == b""
    if ends_cleanly:
        lines.pop()
    rows = []
    # Problems are reported in file order: the first bad row, else the missing rows.
    for y, row in enumerate(lines[:height]):
        if row.endswith(b"\r"):
            row = row[:-1]
        if not row.isascii():
            x = next(i for i, b in enumerate(row) if b > 127)
            raise map_error(path, f"line {first_row + y}, column {x + 1}", f"unexpected {_show(row[x])}")
        if len(row) != width:
            cut = " (truncated?)" if y == len(lines) - 1 and not ends_cleanly else ""
            raise map_error(path, f"line {first_row + y}", f"row has {len(row)} characters, expected {width}{cut}")
        rows.append(row)
    if len(rows) < height:
        raise map_error(
            path, f"line {first_row + len(rows)}", f"file ends after {len(rows)} of {height} rows (truncated?)"
        )
    for offset, extra in enumerate(lines[height:]):
        if extra.strip():
            raise map_error(path, f"line {first_row + height + offset}", f"unexpected text after the {height} rows")

    chars = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(height, width)
    valid, walkable_of, cost_of = _tables(options.get("cost_legend"))
    ok = valid[chars]
    if not ok.all():
        y, x = divmod(int(np.argmin(ok)), width)
        known = "".join(chr(b) for b in np.flatnonzero(valid))
        raise map_error(
            path, f"line {first_row + y}, column {x + 1}", f"unexpected {_show(chars[y, x])} (known: {known})"
        )
    walkable = walkable_of[chars]
    cost = None
    if (cost_of != 1.0).any():
        cost = cost_of[chars]
        if not (cost[walkable] != 1.0).any():
            cost = None
    return Decoded(walkable, cost)


def encode(gridmap) -> tuple[bytes, dict]:
    """The ``.map`` bytes for ``gridmap`` and the sidecar fields it needs."""
    height, width = gridmap.walkable.shape
    chars = np.full((height, width + 1), ord("@"), dtype=np.uint8)
    chars[:, width] = ord("\n")
    cells = chars[:, :width]
    cells[gridmap.walkable] = ord(".")
    fields: dict = {}
    if not gridmap.uniform_cost:
        walk_costs = gridmap.cost[gridmap.walkable]
        distinct, inverse = np.unique(walk_costs, return_inverse=True)
        others = distinct[distinct != 1.0]
        if len(others) > len(LEGEND_POOL):
            raise ValueError(
                f"a .map legend has {len(LEGEND_POOL)} characters; this map has {len(others)} distinct costs "
                "(save it as .png or .tmj)"
            )
        symbols = np.full(len(distinct), ord("."), dtype=np.uint8)
        legend = {}
        for i, value in enumerate(others):
            index = int(np.searchsorted(distinct, value))
            symbols[index] = ord(LEGEND_POOL[i])
            legend[LEGEND_POOL[i]] = float(value)
        cells[gridmap.walkable] = symbols[inverse.reshape(-1)]
        fields["cost_legend"] = legend
    fields.update(grid_fields(gridmap))
    header = f"type octile\nheight {height}\nwidth {width}\nmap\n".encode("ascii")
    return header + chars.tobytes(), fields
