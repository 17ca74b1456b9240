"""Moving AI scenario files (``X.map.scen``): benchmark problems with their optimal lengths.

::

    version 1
    bucket  map  map_width  map_height  start_x  start_y  goal_x  goal_y  optimal_length

``version 1`` files separate fields with tabs, ``version 1.0`` files with spaces; both are
split on any whitespace. The map column is a path from the authors' machines: only its
base name is kept. Optimal lengths assume 8-connected moves (diagonal cost sqrt(2)) and
no corner cutting.

>>> scenarios = parse_scen("version 1\\n0\\tmaps/dao/arena.map\\t49\\t49\\t1\\t11\\t1\\t12\\t1\\n")
>>> scenarios[0].map_name, scenarios[0].start, scenarios[0].goal, scenarios[0].precision
('arena.map', (1, 11), (1, 12), 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path, PureWindowsPath

from pathserver.maps.files import map_error, read_file

#: The largest scenario file in the benchmark is under 1 MB.
MAX_SCEN_BYTES = 64 * 1024 * 1024
VERSIONS = ("1", "1.0")


@dataclass(frozen=True)
class Scenario:
    """One problem. ``start``/``goal`` are ``(x, y)``; ``precision`` is one unit in the last
    digit printed for ``optimal_length`` ("290.764" -> 1e-3, "123" -> 1): compare a computed
    length with ``abs(length - optimal_length) <= precision``. ``line`` is the 1-based line
    in the file."""

    bucket: int
    map_name: str
    width: int
    height: int
    start: tuple[int, int]
    goal: tuple[int, int]
    optimal_length: float
    precision: float
    line: int = 0


def printed_precision(text: str) -> float:
    """One unit in the last printed digit of a decimal number: ``"12.34"`` -> 0.01."""
    try:
        exponent = Decimal(text).as_tuple().exponent
    except InvalidOperation:
        raise ValueError(f"not a decimal number: {text!r}") from None
    if not isinstance(exponent, int):
        raise ValueError(f"not a finite number: {text!r}")
    return float(Decimal(1).scaleb(exponent))


def parse_scen(text: str, source: str = "<scen>") -> list[Scenario]:
    """The scenarios in ``text``; ``source`` names the file in errors (MapLoadError)."""
    lines = text.splitlines()
    if not lines or lines[0].split()[:1] != ["version"]:
        raise map_error(source, "line 1", "expected 'version 1' or 'version 1.0'")
    version = lines[0].split()[1:]
    if len(version) != 1 or version[0] not in VERSIONS:
        found = lines[0].strip()
        raise map_error(source, "line 1", f"unsupported {found!r:.40}; expected 'version 1' or 'version 1.0'")
    scenarios = []
    for lineno, line in enumerate(lines[1:], start=2):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 9:
            raise map_error(source, f"line {lineno}", f"has {len(fields)} fields, expected 9")
        try:
            bucket, width, height, sx, sy, gx, gy = (int(fields[i]) for i in (0, 2, 3, 4, 5, 6, 7))
        except ValueError:
            raise map_error(source, f"line {lineno}", "bucket, size and coordinates must be integers") from None
        try:
            precision = printed_precision(fields[8])
            optimal_length = float(fields[8])
        except ValueError:
            raise map_error(source, f"line {lineno}", f"optimal length {fields[8]!r:.30} is not a number") from None
        if width < 1 or height < 1:
            raise map_error(source, f"line {lineno}", f"map size {width}x{height} is not positive")
        for label, (x, y) in (("start", (sx, sy)), ("goal", (gx, gy))):
            if not (0 <= x < width and 0 <= y < height):
                raise map_error(source, f"line {lineno}", f"{label} ({x}, {y}) is outside the {width}x{height} map")
        # Windows-style paths split on both separators, POSIX ones on "/".
        map_name = PureWindowsPath(fields[1]).name
        scenarios.append(
            Scenario(bucket, map_name, width, height, (sx, sy), (gx, gy), optimal_length, precision, lineno)
        )
    return scenarios


def load_scen(path: Path) -> list[Scenario]:
    """The scenarios in a ``.scen`` file. Raises MapLoadError naming the file and line."""
    path = Path(path)
    data = read_file(path, MAX_SCEN_BYTES)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as exc:
        raise map_error(path, f"byte {exc.start}", "not text (binary data?)") from None
    return parse_scen(text, str(path))


def find_map_for_scen(scen_path: Path) -> Path:
    """The ``.map`` beside a scenario file: ``X.map.scen`` -> ``X.map``, ``X.scen`` -> ``X.map``.

    Raises MapLoadError when it is not there.
    """
    scen_path = Path(scen_path)
    stem = scen_path.name[: -len(".scen")] if scen_path.name.endswith(".scen") else scen_path.name
    map_path = scen_path.with_name(stem if stem.endswith(".map") else f"{stem}.map")
    if not map_path.is_file():
        raise map_error(scen_path, None, f"no map {map_path.name} beside it")
    return map_path
