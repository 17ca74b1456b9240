"""Moving AI benchmark files for the bench scripts: find maps, read scenarios, pick
bucket-spread problems, and check a returned path against the scenario's optimal length.

Grids are numpy arrays indexed ``[y, x]``; scenario coordinates and paths here are
``(x, y)``. The folder layout and the file formats are described in the Moving AI folder's
own README (``/work/shared/movingai/README.md`` on the project's machines).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: Characters of a Moving AI ``.map`` a unit may stand on; every other character is blocked.
PASSABLE = frozenset(".GS")
SQRT2 = math.sqrt(2.0)

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MOVINGAI = REPO.parent / "shared" / "movingai"


@dataclass(frozen=True)
class Problem:
    """One scenario line: ``bucket``, start ``(sx, sy)``, goal ``(gx, gy)``, the optimal
    length, and ``tolerance``: one unit in the last digit the file printed, plus 1e-9 of
    the length. The slack is for the street files: they print 8 decimals but were computed
    with sqrt(2) = 1.414213562, so long paths come out up to ~2e-7 short of the exact
    length (about 2.6e-10 of it at most)."""

    bucket: int
    sx: int
    sy: int
    gx: int
    gy: int
    optimal: float
    tolerance: float


def add_godot_bench_arguments(parser, default_maps: str, rounds: int, timeout: int, *, many: bool = True) -> None:
    """The options the benches that run headless Godot on Moving AI problems share:
    ``--movingai``, ``--map``, ``--queries``, ``--rounds``, ``--seed``, ``--timeout``."""
    parser.add_argument("--movingai", type=Path, default=DEFAULT_MOVINGAI,
                        help="folder of Moving AI .map + .map.scen files (default: %(default)s)")
    parser.add_argument("--map", default=default_maps,
                        help=("map name, or names joined by commas" if many else "map name") + " (default: %(default)s)")
    parser.add_argument("--queries", type=int, default=200, help="problems a map (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=rounds, help="rounds per engine (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="problem selection seed (default: %(default)s)")
    parser.add_argument("--timeout", type=int, default=timeout, help="each Godot run's limit in s (default: %(default)s)")


def find_maps(movingai: Path) -> dict[str, Path]:
    """Every ``NAME.map`` under ``movingai`` that has a ``NAME.map.scen`` beside it, by NAME."""
    maps = {}
    for path in sorted(Path(movingai).rglob("*.map")):
        if path.with_name(path.name + ".scen").is_file():
            maps[path.stem] = path
    return maps


def named_maps(movingai: Path, names: str) -> dict[str, Path] | None:
    """The maps a ``--map a,b`` names, in its order, by name; None (said on stderr) when
    one of them is not under ``movingai``."""
    maps = find_maps(movingai)
    wanted = [name for name in names.split(",") if name]
    missing = [name for name in wanted if name not in maps]
    if missing:
        print(f"map {', '.join(missing)} not found under {movingai}", file=sys.stderr)
        return None
    return {name: maps[name] for name in wanted}


def read_walkable(path: Path) -> np.ndarray:
    """A Moving AI ``.map`` as a bool (H, W) array indexed ``[y, x]``.

    The bench's own small reader, independent of pathserver's loader so the baselines
    and the check never depend on the code under test. Tolerates CRLF and a missing
    final newline.
    """
    lines = Path(path).read_text(encoding="ascii").replace("\r", "").split("\n")
    header = {}
    row = 0
    while lines[row].strip().lower() != "map":
        key, _, value = lines[row].partition(" ")
        header[key.lower()] = value.strip()
        row += 1
    height, width = int(header["height"]), int(header["width"])
    rows = lines[row + 1 : row + 1 + height]
    if len(rows) != height or any(len(r) != width for r in rows):
        raise ValueError(f"{path}: expected {height} rows of {width} characters")
    chars = np.frombuffer("".join(rows).encode("ascii"), dtype=np.uint8).reshape(height, width)
    return np.isin(chars, np.frombuffer("".join(sorted(PASSABLE)).encode("ascii"), dtype=np.uint8))


def _tolerance(text: str) -> float:
    # One unit in the last printed digit: "290.764" -> 0.001, "4787" -> 1.
    mantissa = text.lower().split("e")[0]
    decimals = len(mantissa.partition(".")[2])
    exponent = int(text.lower().split("e")[1]) if "e" in text.lower() else 0
    return 10.0 ** (exponent - decimals)


def read_scenarios(map_path: Path, walkable: np.ndarray) -> list[Problem]:
    """The problems of ``NAME.map.scen``, skipping lines whose start or goal is blocked
    (three such lines in icecrown)."""
    scen = Path(str(map_path) + ".scen")
    lines = scen.read_text(encoding="ascii").replace("\r", "").split("\n")
    height, width = walkable.shape
    problems = []
    for line in lines[1:]:
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 9:
            raise ValueError(f"{scen}: expected 9 fields, got {len(fields)}: {line!r}")
        bucket = int(fields[0])
        sx, sy, gx, gy = (int(v) for v in fields[4:8])
        if not (0 <= sx < width and 0 <= gx < width and 0 <= sy < height and 0 <= gy < height):
            continue
        if not (walkable[sy, sx] and walkable[gy, gx]):
            continue
        optimal = float(fields[8])
        problems.append(Problem(bucket, sx, sy, gx, gy, optimal, _tolerance(fields[8]) + 1e-9 * optimal))
    return problems


def bucket_spread(problems: list[Problem], count: int, seed: int) -> list[Problem]:
    """``count`` problems spread evenly over the buckets (seeded), in shuffled order.

    Each bucket gets ``count // buckets`` problems, the remainder going to randomly
    chosen buckets; a bucket with too few problems passes its share on to the others.
    The order is shuffled so a slow spell on a shared machine does not land on one
    bucket (one path length) only.
    """
    rng = np.random.default_rng(seed)
    by_bucket: dict[int, list[Problem]] = {}
    for problem in problems:
        by_bucket.setdefault(problem.bucket, []).append(problem)
    buckets = sorted(by_bucket)
    count = min(count, len(problems))
    quota = dict.fromkeys(buckets, 0)
    remaining = count
    open_buckets = list(buckets)
    while remaining > 0 and open_buckets:
        share, extra = divmod(remaining, len(open_buckets))
        lucky = set(rng.choice(len(open_buckets), size=extra, replace=False).tolist()) if extra else set()
        still_open = []
        for i, bucket in enumerate(open_buckets):
            want = share + (1 if i in lucky else 0)
            take = min(want, len(by_bucket[bucket]) - quota[bucket])
            quota[bucket] += take
            remaining -= take
            if quota[bucket] < len(by_bucket[bucket]):
                still_open.append(bucket)
        open_buckets = still_open
    chosen = []
    for bucket in buckets:
        pool = by_bucket[bucket]
        picks = rng.choice(len(pool), size=quota[bucket], replace=False)
        chosen.extend(pool[i] for i in sorted(picks.tolist()))
    order = rng.permutation(len(chosen))
    return [chosen[i] for i in order]


def path_length(path, walkable: np.ndarray, start, goal) -> float | None:
    """The octile length of ``path`` (int (n, 2) of ``(x, y)``), or None when it is not a
    valid path from ``start`` to ``goal``: wrong ends, a step that is not to one of the 8
    neighbours, a blocked cell, or a diagonal that cuts a corner (the Moving AI rule: a
    diagonal needs both orthogonal cells walkable)."""
    if path is None:
        return None
    path = np.asarray(path, dtype=np.int64).reshape(-1, 2)
    if len(path) == 0 or tuple(path[0]) != tuple(start) or tuple(path[-1]) != tuple(goal):
        return None
    xs, ys = path[:, 0], path[:, 1]
    height, width = walkable.shape
    if xs.min() < 0 or ys.min() < 0 or xs.max() >= width or ys.max() >= height:
        return None
    if not walkable[ys, xs].all():
        return None
    dx = np.diff(xs)
    dy = np.diff(ys)
    if (np.abs(dx) > 1).any() or (np.abs(dy) > 1).any() or ((dx == 0) & (dy == 0)).any():
        return None
    diagonal = (dx != 0) & (dy != 0)
    fx, fy = xs[:-1][diagonal], ys[:-1][diagonal]
    if not (walkable[fy, fx + dx[diagonal]] & walkable[fy + dy[diagonal], fx]).all():
        return None
    n_diagonal = int(diagonal.sum())
    return (len(dx) - n_diagonal) + n_diagonal * SQRT2


def corner_cuts(path, walkable: np.ndarray) -> int:
    """How many diagonal steps of ``path`` (``(x, y)``) pass a blocked orthogonal cell."""
    path = np.asarray(path, dtype=np.int64).reshape(-1, 2)
    if len(path) < 2:
        return 0
    xs, ys = path[:, 0], path[:, 1]
    dx = np.diff(xs)
    dy = np.diff(ys)
    diagonal = (dx != 0) & (dy != 0)
    fx, fy = xs[:-1][diagonal], ys[:-1][diagonal]
    return int((~(walkable[fy, fx + dx[diagonal]] & walkable[fy + dy[diagonal], fx])).sum())
