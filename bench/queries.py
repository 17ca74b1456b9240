"""Benchmark the queries beyond one path against their baselines, in one run.

    python bench/queries.py                    # Boston_0_512, the default (about a minute)
    python bench/queries.py --maps Boston_0_512,AR0011SR,32room_000 --json out.json

Each target of the queries issue is measured side by side with its baseline in the same
run (the machine is shared: read the ratios), then judged PASS or FAIL:

  many goals      find_path(start, goals=100 goals)  vs  100 find_path calls (the cheapest
                  wins); same cost required                                 >= 20x
  movement range  reachable(start, budget 30)  vs  tcod dijkstra2d of the whole map,
                  cut at 30                                                  < 1 ms
  distance field  distance_field(goal), diagonal "always" (8-connected) and "never"
                  (4-connected), where tcod's dijkstra2d computes the same thing (it
                  cannot express no-corner-cutting); same values required   >= 2x tcod
  steering        next_steps(10,000 units, 1 goal), cold  vs  find_paths of the same
                  10,000 trips                                              >= 20x
                  the same call again (the field cached)                     <= 5 ms
  over the wire   a real server on loopback, the Python client: next_steps for 10,000
                  units (positions a float32 bin), cold  vs  paths batches of the same
                  10,000 path requests                                      >= 20x
                  the same call again, the whole round trip (one frame)     <= 16 ms
  avoid           200 avoided cells  vs  the same request without: find_path (A*, and
                  with its defaults: the cells spread, as an array, around its route),
                  reachable, distance_field                                 <= 1.5x
  check_block     a 2x2 building at a random spot, 8 points  vs  relabelling the whole
                  map (label_components)                                     <= 2 ms

See bench/README.md for how each figure is taken.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from pathserver import kernel_cache

# First, before anything imports the kernels: numba picks their cache folder then.
kernel_cache.configure()

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _movingai as movingai  # noqa: E402
from _docs import add_argument as add_write_docs, write_section  # noqa: E402
from _tcod import TCOD_DIAGONAL, TCOD_STRAIGHT  # noqa: E402

from pathserver import GridMap, check_block, distance_field, find_path, find_paths, next_steps, reachable  # noqa: E402
from pathserver.core.components import label_components  # noqa: E402

DEFAULT_MAPS = ("Boston_0_512",)


#: Trips round the route whose references over the wire are taken (each uploads a map).
WIRE_FLOOR_TRIPS = 20


def timed(call, repeat: int = 1) -> float:
    """Seconds for one ``call()`` (the fastest of ``repeat``), the collector off."""
    best = math.inf
    for _ in range(repeat):
        gc.disable()
        try:
            began = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - began)
        finally:
            gc.enable()
    return best


def load_tcod():
    try:
        import tcod.path

        return tcod.path
    except Exception as error:  # noqa: BLE001 - any import failure means "unavailable"
        print(f"tcod unavailable ({error}): its baselines are skipped")
        return None


#: The measurements, in the order they run (``--only`` picks some).
TARGETS = ("many_goals", "movement_range", "fields", "steering", "over_the_wire", "avoid", "check_block")


class Bench:
    """One map's measurements."""

    def __init__(self, name: str, path: Path, seed: int, quick: bool):
        self.name = name
        walkable = movingai.read_walkable(path)
        self.map = GridMap(walkable, name=name)
        self.rng = np.random.default_rng(seed)
        self.quick = quick
        labels = self.map.layer(1).labels
        counts = np.bincount(labels.ravel())
        counts[0] = 0
        # Starts and goals in the largest component, so that every trip exists.
        self.cells = np.argwhere(labels == int(np.argmax(counts)))[:, ::-1].astype(np.int64)
        self.rows: list[dict] = []
        # A search over the whole map first: this thread's search arrays are allocated
        # for the map's size on first use, and whichever query touched their pages first
        # would pay the page faults.
        start = tuple(self.cells[0].tolist())
        reachable(self.map, start, 1e9)
        distance_field(self.map, [start])
        find_path(self.map, start, goals=[tuple(c) for c in self.cells[:: max(1, len(self.cells) // 50)].tolist()],
                  line_of_sight=False)

    def pick(self, count: int) -> np.ndarray:
        return self.cells[self.rng.integers(len(self.cells), size=count)]

    def row(self, target: str, figure: float, unit: str, baseline: float | None, baseline_name: str, need: str,
            passed: bool | None, note: str = "") -> None:
        self.rows.append({"map": self.name, "target": target, "figure": figure, "unit": unit, "baseline": baseline,
                          "baseline_name": baseline_name, "need": need,
                          "result": "n/a" if passed is None else ("PASS" if passed else "FAIL"), "note": note})

    # -- the targets ------------------------------------------------------------------

    def many_goals(self, rounds: int, n_goals: int = 100) -> None:
        m = self.map
        multi = []
        single = []
        wrong = 0
        # Both timed as a running server answers them: with the layer's jump table built
        # (JPS+ for one goal and for many), not while its build shares the machine.
        find_path(m, tuple(self.pick(1)[0].tolist()), tuple(self.pick(1)[0].tolist()))
        m.layer(1).wait_jump_table(60)
        for _ in range(rounds):
            start = tuple(self.pick(1)[0].tolist())
            goals = [tuple(g) for g in self.pick(n_goals).tolist()]
            answers = []
            costs = []
            # Turn about, so that neither always runs on the cache the other warmed.
            # Each the fastest of 3 (one call of each is at the mercy of the machine's load).
            if len(multi) % 2:
                single.append(timed(lambda: costs.extend(find_path(m, start, g).cost for g in goals), repeat=3))
                multi.append(timed(lambda: answers.append(find_path(m, start, goals=goals)), repeat=3))
            else:
                multi.append(timed(lambda: answers.append(find_path(m, start, goals=goals)), repeat=3))
                single.append(timed(lambda: costs.extend(find_path(m, start, g).cost for g in goals), repeat=3))
            if not math.isclose(answers[0].cost, min(costs), rel_tol=1e-9):
                wrong += 1
        ratio = sum(single) / sum(multi)
        self.row(f"{n_goals} goals in one find_path", 1e3 * statistics.mean(multi), "ms",
                 1e3 * statistics.mean(single), f"{n_goals} find_path calls", ">= 20x", ratio >= 20 and wrong == 0,
                 f"{ratio:.1f}x faster; {rounds - wrong}/{rounds} same cost as the cheapest")

    def movement_range(self, tcod_path, rounds: int, budget: float = 30.0) -> None:
        m = self.map
        times = []
        sizes = []
        tcod_times = []
        mismatched = 0
        cost = m.walkable.astype(np.int32)
        for _ in range(rounds):
            start = tuple(self.pick(1)[0].tolist())
            got = []
            times.append(timed(lambda: got.append(reachable(m, start, budget, diagonal="always")), repeat=3))
            sizes.append(len(got[0].cells))
            if tcod_path is not None:
                dist = tcod_path.maxarray(m.walkable.shape, dtype=np.int32)

                def tcod_reach():
                    dist[:] = np.iinfo(np.int32).max
                    dist[start[1], start[0]] = 0
                    tcod_path.dijkstra2d(dist, cost, TCOD_STRAIGHT, TCOD_DIAGONAL, out=dist)
                    return np.argwhere(dist <= budget * TCOD_STRAIGHT)

                tcod_times.append(timed(tcod_reach))
                cells = tcod_reach()
                # tcod's sqrt(2) is 1.41421: cells right at the budget may differ.
                if abs(len(cells) - sizes[-1]) > 0.01 * sizes[-1] + 8:
                    mismatched += 1
        mean_ms = 1e3 * statistics.mean(times)
        baseline = 1e3 * statistics.mean(tcod_times) if tcod_times else None
        self.row(f"reachable, budget {budget:g}", mean_ms, "ms", baseline,
                 "tcod dijkstra2d (whole map), cut", "< 1 ms", mean_ms < 1.0,
                 f"{statistics.mean(sizes):.0f} cells on average; median {1e3 * statistics.median(times):.3f} ms"
                 + (f"; {mismatched} counts differ from tcod's" if mismatched else ""))

    def fields(self, tcod_path, rounds: int) -> None:
        m = self.map
        for diagonal, cardinal, diag_cost, scale in (("always", TCOD_STRAIGHT, TCOD_DIAGONAL, TCOD_STRAIGHT),
                                                     ("never", 1, None, 1)):
            ours = []
            theirs = []
            worst = 0.0
            cost = m.walkable.astype(np.int32)
            for _ in range(rounds):
                goal = tuple(self.pick(1)[0].tolist())
                got = []
                ours.append(timed(lambda: got.append(distance_field(m, [goal], diagonal=diagonal))))
                if tcod_path is None:
                    continue
                dist = tcod_path.maxarray(m.walkable.shape, dtype=np.int32)

                def tcod_field():
                    dist[:] = np.iinfo(np.int32).max
                    dist[goal[1], goal[0]] = 0
                    tcod_path.dijkstra2d(dist, cost, cardinal, diag_cost, out=dist)

                theirs.append(timed(tcod_field))
                reached = dist != np.iinfo(np.int32).max
                if not np.array_equal(reached & m.walkable, np.isfinite(got[0])):
                    worst = math.inf
                else:
                    # tcod's integer sqrt(2) (141421 / 100000) is 2.6e-6 short a diagonal.
                    diff = np.abs(got[0][reached] - dist[reached] / scale) / np.maximum(1.0, got[0][reached])
                    worst = max(worst, float(diff.max(initial=0.0)))
            tolerance = 1e-5 if diagonal == "always" else 1e-6
            ratio = statistics.mean(theirs) / statistics.mean(ours) if theirs else None
            self.row(f"distance_field, diagonal {diagonal!r}", 1e3 * statistics.mean(ours), "ms",
                     1e3 * statistics.mean(theirs) if theirs else None, "tcod dijkstra2d", ">= 2x tcod",
                     None if ratio is None else (ratio >= 2 and worst <= tolerance),
                     "" if ratio is None else f"{ratio:.1f}x faster; largest relative difference {worst:.1e}")
        ours = [timed(lambda: distance_field(m, [tuple(self.pick(1)[0].tolist())])) for _ in range(rounds)]
        self.row("distance_field, no_corner_cutting", 1e3 * statistics.mean(ours), "ms", None,
                 "(tcod cannot express this rule)", "", None)

    def steering(self, units: int = 10_000) -> None:
        positions = self.pick(units).astype(np.float64) + self.rng.uniform(0, 1, size=(units, 2))
        goal = tuple(self.pick(1)[0].tolist())
        # A fresh cache, so that the first call computes the field (the unit layer built
        # first: find_paths uses the map's, built long ago). Both sides the fastest of a
        # few: cold on 3 fresh maps, the baseline twice.
        colds = []
        for _ in range(3):
            m = GridMap(self.map.walkable, name=self.name)
            m.layer(1)
            colds.append(timed(lambda: next_steps(m, [goal], 1, positions)))
        cold = min(colds)
        warm = timed(lambda: next_steps(m, [goal], 1, positions), repeat=5)
        warm_los_first = timed(lambda: next_steps(m, [goal], 1, positions, lookahead="los"))
        warm_los = timed(lambda: next_steps(m, [goal], 1, positions, lookahead="los"), repeat=5)
        starts = [tuple(p) for p in np.floor(positions).astype(int).tolist()]
        baseline_units = units if not self.quick else units // 10
        paths = timed(lambda: find_paths(self.map, starts[:baseline_units], [goal] * baseline_units), repeat=2)
        paths *= units / baseline_units
        ratio = paths / cold
        self.row(f"next_steps, {units} units, cold", 1e3 * cold, "ms", 1e3 * paths,
                 f"find_paths of {units} trips" + (" (scaled)" if baseline_units != units else ""), ">= 20x",
                 ratio >= 20, f"{ratio:.0f}x faster; cold on 3 fresh maps {', '.join(f'{1e3 * c:.1f}' for c in colds)} ms")
        self.row(f"next_steps, {units} units, warm", 1e3 * warm, "ms", 1e3 * cold, "the cold call", "<= 5 ms",
                 warm <= 5e-3, f"lookahead 'los': {1e3 * warm_los_first:.1f} ms first, {1e3 * warm_los:.2f} ms after")

    @contextlib.contextmanager
    def serving(self):
        """A real server on loopback serving this map, and a Python client of it."""
        import tempfile
        import threading

        from pathserver.client import Client
        from pathserver.maps.registry import MapRegistry
        from pathserver.server.loop import Server

        with tempfile.TemporaryDirectory() as folder:
            registry = MapRegistry(Path(folder))
            registry.load_all()
            server = Server(registry, "tcp://127.0.0.1:0")
            server.bind()
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            try:
                with Client(server.endpoint, timeout=300, retries=0) as client:
                    client.put_map(self.name, self.map.walkable)
                    yield registry, client
            finally:
                server.stop()
                thread.join(10)
                server.close()
                registry.stop()

    def over_the_wire(self, units: int = 10_000) -> None:
        from pathserver.protocol.requests import MAX_BATCH

        positions = self.pick(units).astype(np.float64) + self.rng.uniform(0, 1, size=(units, 2))
        # Cold: the fastest of 3 calls, each to a goal of its own (its field computed);
        # warm: the last goal again, its field cached. Both sides the fastest of a few, as
        # in process: one round trip is at the mercy of a shared machine.
        goals = [tuple(g) for g in self.pick(3).tolist()]
        goal = goals[-1]
        starts = np.floor(positions).astype(int).tolist()
        with self.serving() as (_, client):
            colds = [timed(lambda g=g: client.next_steps(self.name, [g], 1, positions)) for g in goals]
            cold = min(colds)
            warm = [timed(lambda: client.next_steps(self.name, [goal], 1, positions)) for _ in range(10)]
            baseline_units = units if not self.quick else units // 10

            def batches():
                # One batch at a time: each is spread over every core, and the
                # server's queue holds one batch's worth of entries.
                for i in range(0, baseline_units, MAX_BATCH):
                    client.request("paths", map=self.name, requests=[
                        {"start": s, "goal": list(goal)} for s in starts[i:min(i + MAX_BATCH, baseline_units)]])

            paths = timed(batches, repeat=2) * units / baseline_units
        ratio = paths / cold
        self.row(f"wire: next_steps, {units} units, cold", 1e3 * cold, "ms", 1e3 * paths,
                 f"paths batches of {units} trips" + (" (scaled)" if baseline_units != units else ""), ">= 20x",
                 ratio >= 20, f"{ratio:.0f}x faster; cold to 3 goals {', '.join(f'{1e3 * c:.1f}' for c in colds)} ms")
        median = statistics.median(warm)
        self.row(f"wire: next_steps, {units} units, warm", 1e3 * median, "ms", 1e3 * cold, "the cold call",
                 "<= 16 ms", median <= 16e-3, f"median of 10 round trips; best {1e3 * min(warm):.2f} ms, worst "
                 f"{1e3 * max(warm):.2f} ms")

    def avoid(self, rounds: int, n_cells: int = 200) -> None:
        m = self.map
        problems = [(tuple(a), tuple(b)) for a, b in zip(self.pick(rounds).tolist(), self.pick(rounds).tolist())]
        walkable_cells = np.argwhere(m.walkable)[:, ::-1]

        def spread(count):
            return {"cells": [tuple(c) for c in walkable_cells[self.rng.integers(len(walkable_cells),
                                                                                 size=count)].tolist()]}

        def around_route(route, radius, count):
            picked = route[self.rng.integers(len(route), size=count)]
            return around_points(picked, radius)

        def around_points(points, radius):
            offsets = self.rng.integers(-radius, radius + 1, size=points.shape)
            return {"cells": [tuple(c) for c in (points + offsets).tolist()]}

        cases = []
        for start, goal in problems:
            cases.append(("find_path (A*)", lambda s=start, g=goal, a=None: find_path(m, s, g, algorithm="astar",
                                                                                     avoid=a), spread(n_cells)))
        # With its defaults a request runs JPS+, with avoid too: the layer's jump table is
        # read where the avoided cells change nothing in it. Both timed with the table built.
        find_path(m, *problems[0])
        m.layer(1).wait_jump_table(60)
        for start, goal in problems:
            cases.append(("find_path (defaults)", lambda s=start, g=goal, a=None: find_path(m, s, g, avoid=a),
                          spread(n_cells)))
        # The same, the cells held as a game would keep its units' positions: an (n, 2)
        # array (checked in C loops, not walked tuple by tuple).
        for start, goal in problems:
            cells = spread(n_cells)["cells"]
            cases.append(("find_path (defaults), cells as an (n, 2) array",
                          lambda s=start, g=goal, a=None: find_path(m, s, g, avoid=a),
                          {"cells": np.array(cells, dtype=np.int32)}))
        # Other units standing on the way: the cells around the request's own route.
        for start, goal in problems:
            route = find_path(m, start, goal).path
            cases.append(("find_path (defaults), cells on its route",
                          lambda s=start, g=goal, a=None: find_path(m, s, g, avoid=a),
                          around_route(route, 3, n_cells)))
        for start, _ in problems:
            cases.append(("reachable, budget 30", lambda s=start, a=None: reachable(m, s, 30, avoid=a),
                          around_points(np.array([start] * n_cells), 25)))
        for _, goal in problems[: max(2, rounds // 4)]:
            cases.append(("distance_field", lambda g=goal, a=None: distance_field(m, [g], avoid=a), spread(n_cells)))
        def solid_map(cells):
            """The map with ``cells`` solid (those off the map block nothing)."""
            cells = np.asarray(cells, dtype=np.int64).reshape(-1, 2)
            inside = (cells >= 0).all(axis=1) & (cells[:, 0] < m.width) & (cells[:, 1] < m.height)
            walkable = m.walkable.copy()
            walkable[cells[inside, 1], cells[inside, 0]] = False
            return walkable

        def references(run, layer):
            """The times of ``run(**options)``, the request on a map where the cells are solid
            (``layer`` its unit layer): JPS+ on a table and goal bounds built for that map,
            and online JPS on it, its bitmaps built (the fastest of 3 each)."""
            run()
            layer.wait_jump_table(60)
            layer.wait_bounds(60)
            layer.jump_bits()
            run(algorithm="jps")
            return timed(run, repeat=3), timed(lambda: run(algorithm="jps"), repeat=3)

        def solid_floor(cells, start, goal):
            blocked = GridMap(solid_map(cells))
            return references(lambda **options: find_path(blocked, start, goal, **options), blocked.layer(1))

        def pair(call, avoided):
            call()
            call(a=avoided)
            return timed(lambda: call(), repeat=3), timed(lambda: call(a=avoided), repeat=3)

        by_name: dict[str, list] = {}
        # What the default requests' answers were: the plain path kept, another path of
        # its cost (mended round the cells), or a dearer one (searched round them).
        outcomes: dict[str, list] = {}
        # And two references: the same request on a map where they are solid, its JPS+
        # table and goal bounds built for them (beaten per request only where the plain
        # path is kept or mended), and online JPS on it (the fastest search here that
        # needs nothing built for the cells, given their bitmaps for free): a request that
        # takes the cells as they come, and must go round them, searches no faster and
        # has them to lay on besides.
        floors: dict[str, list] = {}
        for name, call, avoided in cases:
            by_name.setdefault(name, []).append(pair(call, avoided))
            if name.startswith("find_path (defaults)"):
                plain, answer = call(), call(a=avoided)
                kind = ("kept" if np.array_equal(plain.path, answer.path) else
                        "same cost" if answer.cost <= plain.cost + 1e-9 * max(1.0, plain.cost) else "dearer")
                outcomes.setdefault(name, []).append(kind)
                floors.setdefault(name, []).append(solid_floor(avoided["cells"], answer.start, answer.goal))
        # Over the wire the references are taken on the server, the map with the cells solid
        # uploaded, for the last WIRE_FLOOR_TRIPS trips round the route (an upload each; the
        # server's searches have touched their memory by then).
        wire_floors: dict[str, list] = {}

        def wire_floor(registry, client, cells, start, goal):
            answer = client.find_path(self.name, start, goal, avoid={"cells": np.array(cells, dtype=np.int32)})
            start, goal = tuple(answer["start"]), tuple(answer["goal"])
            name = f"{self.name}-solid"
            client.put_map(name, solid_map(cells))
            try:
                return references(lambda **options: client.find_path(name, start, goal, **options),
                                  registry.get(name).layer(1))
            finally:
                client.drop_map(name)

        # The same requests as a game sends them: path requests to a real server, the
        # whole round trip, its table built. The cells as msgpack pairs, or as the bin of
        # int32 pairs the engine clients send (the Python client sends an int array so).
        with self.serving() as (registry, client):
            client.find_path(self.name, *problems[0])
            registry.get(self.name).layer(1).wait_jump_table(60)
            for kind, avoided, packed in (("spread", spread, False), ("spread, as a bin", spread, True),
                                          ("on its route, as a bin", None, True)):
                name = f"wire: path (defaults), cells {kind}"
                for i, (start, goal) in enumerate(problems):
                    if avoided is None:
                        route = find_path(m, start, goal).path
                        cells = [list(c) for c in around_route(route, 3, n_cells)["cells"]]
                    else:
                        cells = [list(c) for c in avoided(n_cells)["cells"]]
                    timings = pair(lambda s=start, g=goal, a=None: client.find_path(self.name, s, g, avoid=a),
                                   {"cells": np.array(cells, dtype=np.int32) if packed else cells})
                    by_name.setdefault(name, []).append(timings)
                    if avoided is None and i >= len(problems) - WIRE_FLOOR_TRIPS:
                        references_there = wire_floor(registry, client, cells, start, goal)
                        wire_floors.setdefault(name, []).append((*references_there, *timings))
        for name, pairs in by_name.items():
            plain = sum(p for p, _ in pairs)
            with_avoid = sum(a for _, a in pairs)
            ratio = with_avoid / plain
            kinds = outcomes.get(name, [])
            seen = "".join(f"; {kind} {kinds.count(kind)}" for kind in ("kept", "same cost", "dearer") if kinds)
            if name in floors:
                table, online = (sum(f[i] for f in floors[name]) / plain for i in (0, 1))
                seen += f"; on a map with the cells solid: JPS+ on its own table {table:.2f}x, online JPS {online:.2f}x"
            if name in wire_floors:
                trips = wire_floors[name]
                table, online, mine = (sum(f[i] for f in trips) / sum(f[2] for f in trips) for i in (0, 1, 3))
                seen += (f"; on the last {len(trips)} trips {mine:.2f}x, and on a map with the cells solid: JPS+ on "
                         f"its own table {table:.2f}x, online JPS {online:.2f}x")
            self.row(f"{name} + {n_cells} avoided cells", 1e3 * with_avoid / len(pairs), "ms",
                     1e3 * plain / len(pairs), "the same without avoid", "<= 1.5x", ratio <= 1.5, f"{ratio:.2f}x{seen}")

    def check_block(self, rounds: int) -> None:
        m = self.map
        layer = m.layer(1)
        # The first call on a layer cuts its blocks into pieces (kept with the layer).
        first = timed(lambda: check_block(m, rects=[(0, 0, 1, 1)], points=[(0, 0)]))
        times = []
        flood = []
        cut = 0
        for _ in range(rounds):
            x, y = self.pick(1)[0].tolist()
            points = [tuple(p) for p in self.pick(8).tolist()]
            answer = []
            times.append(timed(lambda: answer.append(check_block(m, rects=[(x, y, 2, 2)], points=points))))
            cut += bool(answer[0])

            def relabel():
                passable = layer.passable.copy()
                passable[max(0, y - 1):y + 2, max(0, x - 1):x + 2] = 0
                labels = np.empty(passable.shape, dtype=np.int32)
                label_components(passable, 0, labels)

            flood.append(timed(relabel))
        mean_ms = 1e3 * statistics.mean(times)
        self.row("check_block, 2x2 building, 8 points", mean_ms, "ms", 1e3 * statistics.mean(flood),
                 "whole-map relabel", "<= 2 ms", mean_ms <= 2.0,
                 f"max {1e3 * max(times):.2f} ms; {cut}/{rounds} placements cut a pair; the layer's first call "
                 f"{1e3 * first:.1f} ms (it cuts the blocks into pieces once)")
        # A building placed is an edit: the next generation's layer updates the pieces of the
        # blocks it changed.
        after = []
        for _ in range(max(3, rounds // 20)):
            x, y = self.pick(1)[0].tolist()
            edited = m.edit(rects=[(x, y, 2, 2)], solid=True)
            edited.layer(1)
            after.append(timed(lambda: check_block(edited, rects=[(x + 3, y, 2, 2)], points=[(0, 0)])))
        after_ms = 1e3 * statistics.median(after)
        self.row("check_block, the first after an edit", after_ms, "ms", 1e3 * statistics.mean(flood),
                 "whole-map relabel", "<= 2 ms", after_ms <= 2.0, f"median of {len(after)} edits")


def warm_up(tcod_path) -> None:
    """Compile (or load) every kernel before the clock starts."""
    m = GridMap(np.ones((40, 40), dtype=bool))
    for diagonal in ("no_corner_cutting", "never", "always"):
        find_path(m, (0, 0), goals=[(39, 39), (20, 5)], diagonal=diagonal)
        find_path(m, (0, 0), (39, 39), diagonal=diagonal, avoid={"cells": [(5, 5)]}, algorithm="astar")
        find_path(m, (0, 0), (39, 39), diagonal=diagonal)
        reachable(m, (0, 0), 10, diagonal=diagonal, avoid={"cells": [(1, 1)]})
        reachable(m, (0, 0), 10, diagonal=diagonal)
        distance_field(m, [(5, 5)], diagonal=diagonal, avoid={"cells": [(1, 1)]})
        distance_field(m, [(5, 5)], diagonal=diagonal)
        next_steps(m, [(5, 5)], 1, [(1.5, 1.5)], diagonal=diagonal, lookahead="los")
        next_steps(m, [(5, 5)], 1, [(1.5, 1.5)], diagonal=diagonal)
        check_block(m, rects=[(3, 3, 2, 2)], points=[(0, 0), (9, 9)], diagonal=diagonal)
    find_paths(m, [(0, 0)] * 8, [(39, 39)] * 8)
    if tcod_path is not None:
        dist = tcod_path.maxarray((40, 40), dtype=np.int32)
        dist[0, 0] = 0
        tcod_path.dijkstra2d(dist, np.ones((40, 40), dtype=np.int32), 1, 1, out=dist)


def print_rows(rows: list[dict]) -> None:
    print(f"{'map':<14}{'query':<44}{'pathserver':>12}{'baseline':>12}  {'baseline is':<36}{'target':<12}result")
    for r in rows:
        figure = f"{r['figure']:.3f} {r['unit']}"
        baseline = "-" if r["baseline"] is None else f"{r['baseline']:.3f} {r['unit']}"
        print(f"{r['map']:<14}{r['target']:<44}{figure:>12}{baseline:>12}  {r['baseline_name']:<36}{r['need']:<12}"
              f"{r['result']}")
        if r["note"]:
            print(f"{'':<14}  {r['note']}")


def markdown(rows: list[dict]) -> str:
    """The rows as docs/performance.md's table: a row a target, its note under the query."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| map | query | pathserver | baseline | target | result |", "|---|---|---:|---:|---|---|"]
    for r in rows:
        query = cell(r["target"]) + (f" ({cell(r['note'])})" if r["note"] else "")
        baseline = "" if r["baseline"] is None else f"{r['baseline']:.3f} {r['unit']} ({cell(r['baseline_name'])})"
        lines.append(f"| {r['map']} | {query} | {r['figure']:.3f} {r['unit']} | {baseline} | {cell(r['need'])} "
                     f"| {r['result']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--maps", default=",".join(DEFAULT_MAPS), help="Moving AI map names, comma-separated")
    parser.add_argument("--movingai", type=Path, default=movingai.DEFAULT_MOVINGAI)
    parser.add_argument("--rounds", type=int, default=20, help="problems per target (default 20)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="fewer rounds; the find_paths baseline on 1,000 trips, scaled")
    parser.add_argument("--json", type=Path, help="write every row as JSON here")
    parser.add_argument("--only", help=f"run only these targets, comma-separated: {', '.join(TARGETS)}")
    add_write_docs(parser)
    args = parser.parse_args(argv)
    maps = movingai.find_maps(args.movingai)
    if not maps:
        print(f"no Moving AI maps under {args.movingai} (--movingai DIR)", file=sys.stderr)
        return 2
    tcod_path = load_tcod()
    warm_up(tcod_path)
    rounds = max(3, args.rounds // 4) if args.quick else args.rounds
    only = TARGETS if args.only is None else tuple(args.only.split(","))
    if not set(only) <= set(TARGETS):
        print(f"--only: unknown target {', '.join(sorted(set(only) - set(TARGETS)))}", file=sys.stderr)
        return 2
    rows = []
    for name in args.maps.split(","):
        if name not in maps:
            print(f"map {name!r} not found under {args.movingai}", file=sys.stderr)
            return 2
        bench = Bench(name, maps[name], args.seed, args.quick)
        print(f"{name}: {bench.map.width}x{bench.map.height}, {len(bench.cells)} cells in its largest component",
              flush=True)
        runs = {
            "many_goals": lambda: bench.many_goals(rounds),
            "movement_range": lambda: bench.movement_range(tcod_path, rounds),
            "fields": lambda: bench.fields(tcod_path, max(3, rounds // 2)),
            "steering": bench.steering,
            "over_the_wire": bench.over_the_wire,
            "avoid": lambda: bench.avoid(rounds),
            "check_block": lambda: bench.check_block(rounds * 5),
        }
        assert tuple(runs) == TARGETS
        for target in only:
            runs[target]()
        rows += bench.rows
    print()
    print_rows(rows)
    failed = [r for r in rows if r["result"] == "FAIL"]
    print(f"\n{len(rows) - len(failed)} of {len(rows)} rows pass or have no target; {len(failed)} FAIL")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.write_docs:
        write_section("queries", markdown(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
