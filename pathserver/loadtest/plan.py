"""What a load test runs (:class:`LoadConfig`) and what it asks.

Trips (:class:`TripSource`): random cells of the served maps (the server snaps a start or
goal on a wall to the nearest cell the unit can stand on), a share of them short (within
``--short-radius`` cells), the rest anywhere; or the problems of a Moving AI ``.scen`` file.

Doors (:class:`Doors`, ``--updates-per-s``) edit the served maps: each update closes a
random 2x2 "door" (``solid: true``) and the next reopens it (``solid: false``); the drivers
reopen every door closed before they stop. Reopening clears whatever walls were there
before, so point it at a test server or use ``--spawn`` (edits live in the server's memory
only; files are untouched).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path

from pathserver.client import DEFAULT_ENDPOINT
from pathserver.errors import PathserverError
from pathserver.options import PATH_OP, UNIT_SIZE, UPDATE_OP

#: Kinds of request, as a driver records them for each reply.
OP_PATH, OP_UPDATE = 0, 1
OP_NAMES = (PATH_OP, UPDATE_OP)


class LoadTestError(PathserverError):
    """The load test could not start or run: no server, no maps, a bad option."""

    code = "loadtest"


@dataclass
class LoadConfig:
    """What to run. Exactly one of ``inflight`` / ``rate``, and at least one of
    ``duration`` / ``requests`` (both: whichever ends first)."""

    endpoint: str = DEFAULT_ENDPOINT
    clients: int = 4
    inflight: int | None = None
    rate: float | None = None
    duration: float | None = None
    requests: int | None = None
    unit_sizes: tuple = (1,)
    map_names: tuple | None = None
    scen: Path | None = None
    long_share: float = 0.3
    short_radius: int = 24
    updates_per_s: float = 0.0
    rewrites_per_s: float = 0.0
    #: The folder the server serves; needed by rewrites (``--spawn`` sets it).
    maps_dir: Path | None = None
    threads: int = 1
    grace: float = 2.0
    connect_timeout: float = 10.0
    seed: int | None = None
    progress: bool = False

    def check(self) -> None:
        if (self.inflight is None) == (self.rate is None):
            raise LoadTestError("give exactly one of --inflight (closed loop) and --rate (open loop)")
        if self.inflight is not None and self.inflight < 1:
            raise LoadTestError("--inflight must be at least 1")
        if self.rate is not None and not (self.rate > 0 and math.isfinite(self.rate)):
            raise LoadTestError("--rate must be a positive number of requests per second")
        if self.duration is None and self.requests is None:
            raise LoadTestError("give --duration or --requests")
        if self.duration is not None and not self.duration > 0:
            raise LoadTestError("--duration must be positive")
        if self.requests is not None and self.requests < 1:
            raise LoadTestError("--requests must be at least 1")
        if self.clients < 1 or self.threads < 1:
            raise LoadTestError("--clients and --threads must be at least 1")
        if not self.unit_sizes:
            raise LoadTestError("--unit-sizes needs at least one size")
        if not 0.0 <= self.long_share <= 1.0:
            raise LoadTestError("--long-share must be between 0 and 1")
        if self.updates_per_s < 0 or self.grace < 0 or self.rewrites_per_s < 0:
            raise LoadTestError("--updates-per-s, --rewrites-per-s and --grace must not be negative")
        if self.rewrites_per_s > 0 and self.maps_dir is None:
            raise LoadTestError("--rewrites-per-s rewrites the served files: use it with --spawn")


def read_scen(path: Path) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """Problems of a Moving AI ``.scen`` file as ``(map name, start, goal)``; the map name
    is the stem of the file the problem names (``maps/dao/den520d.map`` -> ``den520d``)."""
    from pathserver.maps.scen import load_scen

    try:
        scenarios = load_scen(Path(path))
    except PathserverError as exc:
        raise LoadTestError(str(exc)) from None
    return [(Path(s.map_name).stem, s.start, s.goal) for s in scenarios]


class TripSource:
    """Path request bodies (without ``id``): a map, a unit size, a start and a goal."""

    def __init__(self, maps: list[dict], config: LoadConfig, rng: random.Random):
        self.rng = rng
        self.units = [list(u) if isinstance(u, tuple) else u for u in config.unit_sizes]
        self.long_share = config.long_share
        self.radius = max(1, config.short_radius)
        self.maps = [(m["name"], int(m["width"]), int(m["height"])) for m in maps]
        self.scen = None
        if config.scen is not None:
            served = {name for name, _, _ in self.maps}
            problems = read_scen(config.scen)
            trips = [t for t in problems if t[0] in served]
            if not trips:
                wanted = sorted({t[0] for t in problems})
                raise LoadTestError(f"{config.scen} is for {', '.join(wanted)}; the server serves "
                                    f"{', '.join(sorted(served)) or 'no maps'}")
            self.scen = trips

    def next(self) -> dict:
        rng = self.rng
        unit = rng.choice(self.units)
        if self.scen is not None:
            name, start, goal = rng.choice(self.scen)
            return {"op": PATH_OP, "map": name, "start": list(start), "goal": list(goal), UNIT_SIZE.name: unit}
        name, width, height = rng.choice(self.maps)
        sx, sy = rng.randrange(width), rng.randrange(height)
        if rng.random() < self.long_share:
            gx, gy = rng.randrange(width), rng.randrange(height)
        else:
            r = self.radius
            gx = min(width - 1, max(0, sx + rng.randint(-r, r)))
            gy = min(height - 1, max(0, sy + rng.randint(-r, r)))
        return {"op": PATH_OP, "map": name, "start": [sx, sy], "goal": [gx, gy], UNIT_SIZE.name: unit}


class Doors:
    """Update bodies that close a random 2x2 door, then reopen it on the next call."""

    def __init__(self, maps: list[dict], rng: random.Random):
        self.maps = [(m["name"], int(m["width"]), int(m["height"])) for m in maps]
        self.rng = rng
        self.closed: list[tuple[str, list]] = []

    def next(self) -> dict:
        if self.closed:
            name, rect = self.closed.pop()
            return {"op": UPDATE_OP, "map": name, "rects": [rect], "solid": False}
        name, width, height = self.rng.choice(self.maps)
        rect = [self.rng.randrange(width), self.rng.randrange(height), 2, 2]
        self.closed.append((name, rect))
        return {"op": UPDATE_OP, "map": name, "rects": [rect], "solid": True}


