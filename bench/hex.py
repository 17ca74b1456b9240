"""pathserver's hex search against Godot's AStar2D wired with hex neighbours, on Moving AI
maps read as hex maps, every answer checked against Dijkstra on the hex graph.

    python bench/hex.py                             # den520d and Boston_0_512, odd-r and odd-q
    python bench/hex.py --map Aftershock --layouts odd-r,even-q --rounds 9
    python bench/hex.py --json hex.json --write-docs

Each map's cells become a hex map's cells in each layout (``--layouts``; pointy ``odd-r`` and
flat ``odd-q`` by default). The problems are ``bench/core.py``'s bucket-spread scenario
problems (``--queries``, ``--seed``); the scenarios' optimal lengths are for square grids and
do not apply: the reference is the Dijkstra distance on the hex graph (scipy), built from
:func:`pathserver.hexes.neighbours`' offset tables. The engines, taking turns round by round
(the order rotates), on the same problems:

  in process            ``find_path(gridmap, start, goal, smooth="none")`` per problem (hex JPS on
                        these maps of uniform cost)
  in process, A*        the same with ``algorithm="astar"``: hex A* with the layer's landmarks, the
                        search hex JPS replaces, beside it
  wire, one batch       ``Client.find_paths(map, pairs, smooth="none")``: one ``paths`` round trip
  wire, packed batch    ``Client.find_paths_packed(map, starts, goals, smooth="none")``
  wire, one at a time   ``Client.find_path(map, start, goal, smooth="none")`` per problem
  AStar2D               ``get_id_path`` per problem in headless Godot (``bench/godot/bench_hex.gd``)

The wire rows ask a ``pathserver serve`` started on a free loopback port, the map sent with
``put_map(..., shape="hex", layout=...)``. Everything built once (the GridMap, the upload,
AStar2D's points and connections) and each engine's first call (the JIT compile, the unit
layer, hex JPS's jump table; the landmarks, built in the background, waited for) come
before the clock. A per-problem engine's figure is the mean of each problem's
fastest time over the rounds, a batch's its fastest round over the problems. Every answer
must be a path of hex steps over walkable cells from the start to the goal, as long as the
Dijkstra distance; pathserver's cost must equal it too. The issue's target: in process
>= 50x AStar2D, printed PASS or FAIL. ``--json FILE`` writes every row and target;
``--write-docs`` the tables into docs/performance.md's ``hex`` section (``bench/_docs.py``).

Godot: as ``bench/godot_astar.py`` finds it (``$GODOT``, else the Debian sid tree of
``engine_clients/godot/run_tests.sh``); without one, or with ``--no-godot``, the AStar2D row
is reported unavailable and the rest runs. Exit 1 when an answer is not exact or an engine
failed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from pathserver import kernel_cache
from pathserver.loadtest.spawn import stop_process

# First, before anything imports the kernels: numba picks their cache folder then.
kernel_cache.configure()

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _movingai as movingai  # noqa: E402
from _docs import add_argument as add_write_docs, write_section  # noqa: E402
from godot_astar import godot_command, start_server, stop_server  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PROJECT = REPO / "bench" / "godot"
LOG = PROJECT / ".last-hex-run.log"
DEFAULT_MAPS = "den520d,Boston_0_512"
DEFAULT_LAYOUTS = "odd-r,odd-q"
#: The issue's target: in process at least this many times AStar2D's speed.
TARGET = 50.0
ASTAR2D = "AStar2D"
IMPORT_TIMEOUT_S = 180
#: A wire request's limit, the first (which may compile the server's hex kernels) included.
WIRE_TIMEOUT_S = 300.0
#: Dijkstra runs from this many starts at once: rows of the map's size, float64.
DIJKSTRA_CHUNK = 8
#: How long an in-process engine waits for its map's landmarks before the clock.
LANDMARKS_TIMEOUT_S = 300.0


class EngineFailed(Exception):
    """An engine could not answer; the message says why."""


# -- the hex graph and the reference ------------------------------------------------------


def step_tables(layout: str) -> np.ndarray:
    """int64 (2, 6, 2): the ``(dx, dy)`` of the six steps from a cell whose shoved coordinate
    (the row on ``-r`` layouts, the column on ``-q``) is even (0) or odd (1), from
    :func:`pathserver.hexes.neighbours` (Red Blob Games' offset tables)."""
    from pathserver import hexes

    return np.array([[(nx - p, ny - p) for nx, ny in hexes.neighbours(layout, p, p)] for p in (0, 1)],
                    dtype=np.int64)


def shoved(layout: str, cells: np.ndarray) -> np.ndarray:
    """The parity (0, 1) of each ``(x, y)`` row's shoved coordinate: the row for ``-r``, the column for ``-q``."""
    return cells[..., 1 if layout.endswith("-r") else 0] & 1


def hex_graph(walkable: np.ndarray, layout: str):
    """The hex map's graph as a scipy CSR matrix over cell ids ``y * width + x``: an edge of
    weight 1 between every two walkable neighbours, both ways."""
    import scipy.sparse

    height, width = walkable.shape
    ys, xs = np.nonzero(walkable)
    cells = np.stack([xs, ys], axis=1).astype(np.int64)
    tables = step_tables(layout)[shoved(layout, cells)]  # (n, 6, 2)
    sources, targets = [], []
    for k in range(6):
        nx, ny = cells[:, 0] + tables[:, k, 0], cells[:, 1] + tables[:, k, 1]
        inside = (nx >= 0) & (ny >= 0) & (nx < width) & (ny < height)
        inside[inside] = walkable[ny[inside], nx[inside]]
        sources.append(ys[inside] * width + xs[inside])
        targets.append(ny[inside] * width + nx[inside])
    sources, targets = np.concatenate(sources), np.concatenate(targets)
    return scipy.sparse.csr_matrix((np.ones(len(sources)), (sources, targets)), shape=(walkable.size, walkable.size))


def reference_steps(graph, width: int, problems: list) -> np.ndarray:
    """float64 (n,): each problem's Dijkstra distance on ``graph`` (``inf``: unreachable)."""
    from scipy.sparse.csgraph import dijkstra

    starts = np.array([p.sy * width + p.sx for p in problems])
    goals = np.array([p.gy * width + p.gx for p in problems])
    distance = np.empty(len(problems))
    unique = np.unique(starts)
    for first in range(0, len(unique), DIJKSTRA_CHUNK):
        chunk = unique[first:first + DIJKSTRA_CHUNK]
        rows = dijkstra(graph, directed=True, indices=chunk)
        for row, start in zip(rows, chunk):
            mine = starts == start
            distance[mine] = row[goals[mine]]
    return distance


def path_steps(path, walkable: np.ndarray, layout: str, start, goal) -> int | None:
    """The hex steps of ``path`` (``(x, y)`` cells), or None when it is no path from ``start``
    to ``goal``: wrong ends, a cell off the map or blocked, a step to no neighbour."""
    if path is None:
        return None
    path = np.asarray(path, dtype=np.int64).reshape(-1, 2)
    if len(path) == 0 or tuple(path[0]) != tuple(start) or tuple(path[-1]) != tuple(goal):
        return None
    height, width = walkable.shape
    xs, ys = path[:, 0], path[:, 1]
    if xs.min() < 0 or ys.min() < 0 or xs.max() >= width or ys.max() >= height or not walkable[ys, xs].all():
        return None
    steps = np.diff(path, axis=0)
    allowed = step_tables(layout)[shoved(layout, path[:-1])]  # (k, 6, 2)
    if not (allowed == steps[:, None, :]).all(axis=2).any(axis=1).all():
        return None
    return len(steps)


# -- the engines ---------------------------------------------------------------------------


class Engine:
    """One way of answering the problems. ``run_round()`` answers each once and returns the
    times in us, one a problem or one for a whole batch; ``answers()`` the last round's
    answers, ``(cells (k, 2) or None, cost or None)`` a problem."""

    name = ""
    note = ""

    def run_round(self) -> list[float]:
        raise NotImplementedError

    def answers(self) -> list[tuple]:
        return self._answers

    def close(self) -> None:
        pass


def _timed_each(call, items) -> tuple[list[float], list]:
    """``call(item)`` for each item with the garbage collector off (as timeit): the times in us, the results."""
    times, results = [], []
    gc.disable()
    try:
        for item in items:
            t0 = time.perf_counter_ns()
            results.append(call(item))
            times.append((time.perf_counter_ns() - t0) / 1000)
    finally:
        gc.enable()
    return times, results


def _timed_once(call) -> tuple[float, object]:
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        result = call()
        return (time.perf_counter_ns() - t0) / 1000, result
    finally:
        gc.enable()


class InProcess(Engine):
    """``find_path`` per problem with ``options`` (``algorithm="astar"``: the row named
    ``in process, A*``)."""

    def __init__(self, walkable: np.ndarray, layout: str, problems: list, **options):
        from pathserver import GridMap, find_path

        self.name = "in process, A*" if options.get("algorithm") == "astar" else "in process"
        self.find_path = find_path
        self.options = {"smooth": "none", **options}
        self.gridmap = GridMap(walkable, shape="hex", layout=layout)
        self.pairs = [((p.sx, p.sy), (p.gx, p.gy)) for p in problems]
        first = find_path(self.gridmap, *self.pairs[0], **self.options)  # the JIT compile, the unit layer, tables
        self.algorithm = first.algorithm
        # A*'s landmarks build on a thread of their own: in place before the clock, and
        # no build running beside it.
        self.gridmap.layer_for(1, 1).wait_landmarks(LANDMARKS_TIMEOUT_S)

    def run_round(self):
        times, results = _timed_each(lambda pair: self.find_path(self.gridmap, *pair, **self.options), self.pairs)
        self._answers = [(r.path if r.status == "found" else None, r.cost) for r in results]
        expanded = np.mean([r.expanded for r in results])
        straight = sum(r.line_of_sight for r in results)
        self.note = f"{self.algorithm}, {expanded:,.0f} expanded a path, {straight} by the straight line"
        return times


class Wire(Engine):
    """The three ways over the wire share one client and one uploaded map."""

    def __init__(self, client, map_name: str, problems: list, how: str):
        self.client, self.map_name, self.how = client, map_name, how
        self.name = {"each": "wire, one at a time", "batch": "wire, one batch", "packed": "wire, packed batch"}[how]
        self.pairs = [((p.sx, p.sy), (p.gx, p.gy)) for p in problems]
        self.starts = np.array([pair[0] for pair in self.pairs], dtype=np.int32)
        self.goals = np.array([pair[1] for pair in self.pairs], dtype=np.int32)

    def run_round(self):
        client, name = self.client, self.map_name
        if self.how == "each":
            times, replies = _timed_each(lambda pair: client.find_path(name, *pair, smooth="none"), self.pairs)
        elif self.how == "batch":
            elapsed, replies = _timed_once(lambda: client.find_paths(name, self.pairs, smooth="none"))
            times = [elapsed]
        else:
            elapsed, packed = _timed_once(lambda: client.find_paths_packed(name, self.starts, self.goals,
                                                                           smooth="none"))
            times = [elapsed]
            self._answers = [(path if status == "found" else None, float(cost))
                             for path, status, cost in zip(packed.paths(), packed.statuses, packed.cost)]
            return times
        failed = next((r for r in replies if r.get("ok") is False), None)
        if failed is not None:
            raise EngineFailed(f"{self.name}: {failed.get('error')}")
        self._answers = [(r["path"] if r["status"] == "found" else None, r["cost"]) for r in replies]
        return times


class GodotAStar(Engine):
    """bench_hex.gd in a headless Godot that stays up between rounds, one command a line."""

    name = ASTAR2D

    def __init__(self, godot: list[str], problems_file: Path, width: int, timeout: int, log: list[str]):
        self.width = width
        self.deadline = time.monotonic() + timeout
        self.log = log
        self.process = subprocess.Popen(
            ["timeout", str(timeout), *godot, "--headless", "--path", str(PROJECT), "-s", "res://bench_hex.gd", "--",
             str(problems_file)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.ready = self._expect("ready-json: ")
        self.note = (f"set-up {self.ready['setup_us'] / 1000:,.0f} ms: {self.ready['points']:,} points, "
                     f"{self.ready['connections']:,} connections")

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _expect(self, prefix: str):
        """The JSON after ``prefix`` on the next line that starts with it; EngineFailed when
        the script failed, ended or ran past the deadline first."""
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, self.deadline - time.monotonic()))
            except queue.Empty:
                raise EngineFailed(f"{ASTAR2D}: no '{prefix.strip()}' line before the time limit") from None
            if line is None:
                raise EngineFailed(f"{ASTAR2D}: Godot ended (exit {self.process.wait()}) before a "
                                   f"'{prefix.strip()}' line; its output is in {LOG.relative_to(REPO)}")
            if line.startswith(prefix):
                self.log.append(line[:200] + (" ..." if len(line) > 200 else ""))
                return json.loads(line[len(prefix):])
            self.log.append(line)
            if line.startswith(("bench FAILED", "SCRIPT ERROR")):
                raise EngineFailed(f"{ASTAR2D}: {line}")

    def _ask(self, command: str, prefix: str):
        try:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        except OSError as error:  # Godot has gone: its last lines say why
            raise EngineFailed(f"{ASTAR2D}: Godot took no '{command}' ({error}); its output is in "
                               f"{LOG.relative_to(REPO)}") from None
        return self._expect(prefix)

    def run_round(self):
        return [float(t) for t in self._ask("round", "round-json: ")]

    def answers(self):
        answers = []
        for ids in self._ask("paths", "paths-json: "):
            ids = np.asarray(ids, dtype=np.int64)
            answers.append((np.stack([ids % self.width, ids // self.width], axis=1) if len(ids) else None, None))
        return answers

    def close(self) -> None:
        if self.process.poll() is not None:
            return
        try:
            self.process.stdin.write("quit\n")
            self.process.stdin.flush()
            self.process.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            # SIGTERM, which `timeout` passes on to Godot; a SIGKILL would leave Godot behind.
            stop_process(self.process)


# -- one map in one layout -------------------------------------------------------------------


def write_problems(path: Path, map_path: Path, layout: str, problems: list) -> None:
    """The problems file bench_hex.gd reads: ``map PATH LAYOUT``, then ``sx sy gx gy`` a line."""
    lines = [f"map {map_path} {layout}"] + [f"{p.sx} {p.sy} {p.gx} {p.gy}" for p in problems]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def bench_table(name: str, map_path: Path, layout: str, problems: list, walkable: np.ndarray, client,
                godot: list[str] | None, args, scratch: Path) -> dict:
    """Every engine on one map in one layout: the table's rows, checked, and its notes."""
    graph = hex_graph(walkable, layout)
    reference = reference_steps(graph, walkable.shape[1], problems)
    engines: list[Engine] = []
    godot_engine = None
    unavailable: dict[str, str] = {}
    log: list[str] = []
    wire_map = f"{name}-{layout}"
    try:
        engines.append(InProcess(walkable, layout, problems))
        engines.append(InProcess(walkable, layout, problems, algorithm="astar"))
        if client is not None:
            client.put_map(wire_map, walkable, shape="hex", layout=layout)
            client.find_path(wire_map, (problems[0].sx, problems[0].sy), (problems[0].gx, problems[0].gy),
                             smooth="none")  # the server's first call: its compile, the unit layer
            engines += [Wire(client, wire_map, problems, how) for how in ("batch", "packed", "each")]
        else:
            unavailable.update(dict.fromkeys(["wire, one batch", "wire, packed batch", "wire, one at a time"],
                                             "no server"))
        if godot is not None:
            problems_file = scratch / f"problems-{name}-{layout}.txt"
            write_problems(problems_file, map_path, layout, problems)
            godot_engine = GodotAStar(godot, problems_file, walkable.shape[1], args.timeout, log)
            engines.append(godot_engine)
        else:
            unavailable[ASTAR2D] = "no Godot 4"
        fastest = {engine.name: None for engine in engines}
        for round_index in range(args.rounds):
            order = engines[round_index % len(engines):] + engines[:round_index % len(engines)]
            for engine in order:
                times = np.array(engine.run_round())
                best = fastest[engine.name]
                fastest[engine.name] = times if best is None else np.minimum(best, times)
        rows = []
        for engine in engines:
            per_path = float(fastest[engine.name].sum() / len(problems))
            rows.append({"engine": engine.name, "us_per_path": round(per_path, 2),
                         **tally(engine.answers(), reference, problems, walkable, layout), "note": engine.note})
    finally:
        for engine in engines:
            engine.close()
        if client is not None:
            try:
                client.drop_map(wire_map)
            except Exception:  # a map never uploaded, a server gone: nothing to drop
                pass
        if log:
            with LOG.open("a") as out:
                out.write(f"== {name} {layout}\n" + "\n".join(log) + "\n")
    astar = next((row for row in rows if row["engine"] == ASTAR2D), None)
    for row in rows:
        row["x_astar2d"] = round(astar["us_per_path"] / row["us_per_path"], 2) if astar else None
    rows += [{"engine": engine, "unavailable": why} for engine, why in unavailable.items()]
    edges = graph.nnz // 2
    if astar and godot_engine.ready["connections"] != edges:
        astar["note"] += f"; the reference graph has {edges:,}"
        astar["graph_differs"] = True
    height, width = walkable.shape
    return {"map": name, "layout": layout, "width": width, "height": height, "walkable": int(walkable.sum()),
            "problems": len(problems), "rounds": args.rounds,
            "mean_steps": float(np.mean(reference[np.isfinite(reference)])) if np.isfinite(reference).any() else 0.0,
            "rows": rows, "godot": godot_engine.ready["version"] if astar else None}


def tally(answers: list, reference: np.ndarray, problems: list, walkable: np.ndarray, layout: str) -> dict:
    """How many answers are exact: a valid path as long as the reference (and its cost, when
    the engine gives one, equal to it), or no path where the reference has none."""
    counts = {"exact": 0, "wrong_length": 0, "invalid": 0, "no_path": 0, "cost_differs": 0}
    for (path, cost), best, p in zip(answers, reference, problems):
        if path is None:
            counts["exact" if np.isinf(best) else "no_path"] += 1
            continue
        steps = path_steps(path, walkable, layout, (p.sx, p.sy), (p.gx, p.gy))
        if steps is None:
            counts["invalid"] += 1
        elif steps != best:
            counts["wrong_length"] += 1
        elif cost is not None and cost != steps:
            counts["cost_differs"] += 1
        else:
            counts["exact"] += 1
    return counts


# -- output ------------------------------------------------------------------------------------


def title(table: dict) -> str:
    shape = "pointy" if table["layout"].endswith("-r") else "flat"
    return (f"{table['map']} as a hex map, {table['layout']} ({shape}): {table['width']} x {table['height']}, "
            f"{table['walkable']:,} walkable; {table['problems']} problems, {table['mean_steps']:.1f} steps "
            f"on average; {table['rounds']} rounds")


def answers_text(row: dict, problems: int) -> str:
    text = f"{row['exact']}/{problems} exact"
    for key in ("wrong_length", "invalid", "no_path", "cost_differs"):
        if row[key]:
            text += f", {row[key]} {key.replace('_', ' ')}"
    return text


def target(table: dict) -> dict:
    """The issue's target on one table, and whether every answer was exact."""
    by_engine = {row["engine"]: row for row in table["rows"]}
    check = {"map": table["map"], "layout": table["layout"], "target": f"in process >= {TARGET:g}x AStar2D"}
    astar = by_engine.get(ASTAR2D)
    if astar is None or "unavailable" in astar:
        return {**check, "figure": None, "verdict": "NOT RUN"}
    figure = by_engine["in process"]["x_astar2d"]
    return {**check, "figure": figure, "verdict": "PASS" if figure >= TARGET else "FAIL"}


def inexact(table: dict) -> list[str]:
    return [f"{table['map']} {table['layout']} {row['engine']}" for row in table["rows"]
            if "unavailable" not in row and (row["exact"] != table["problems"] or row.get("graph_differs"))]


def print_table(table: dict) -> None:
    print(title(table) + (f"; Godot {table['godot']}" if table["godot"] else ""))
    print(f"{'engine':<22} {'us a path':>10} {'x AStar2D':>10}  {'answers':<16}  notes")
    for row in table["rows"]:
        if "unavailable" in row:
            print(f"{row['engine']:<22} {'-':>10} {'-':>10}  unavailable ({row['unavailable']})")
            continue
        times = f"{row['x_astar2d']:.1f}x" if row["x_astar2d"] is not None else "-"
        print(f"{row['engine']:<22} {row['us_per_path']:>10,.1f} {times:>10}  "
              f"{answers_text(row, table['problems']):<16}  {row['note']}")
    check = target(table)
    figure = f"{check['figure']:.1f}x" if check["figure"] is not None else "-"
    print(f"target: {check['target']}: {figure} {check['verdict']}\n")


def markdown(tables: list[dict], checks: list[dict]) -> list[str]:
    out = []
    for table in tables:
        out += [f"**{title(table)}**", "", "| engine | µs a path | × AStar2D | answers | |",
                "| --- | ---: | ---: | --- | --- |"]
        for row in table["rows"]:
            if "unavailable" in row:
                out.append(f"| {row['engine']} | – | – | unavailable ({row['unavailable']}) | |")
                continue
            times = f"{row['x_astar2d']:.1f}" if row["x_astar2d"] is not None else "–"
            out.append(f"| {row['engine']} | {row['us_per_path']:,.1f} | {times} | "
                       f"{answers_text(row, table['problems'])} | {row['note']} |")
        out.append("")
    out += ["| map | layout | target | figure | |", "| --- | --- | --- | ---: | --- |"]
    for check in checks:
        figure = f"{check['figure']:.1f}×" if check["figure"] is not None else "–"
        out.append(f"| {check['map']} | {check['layout']} | {check['target']} | {figure} | {check['verdict']} |")
    return out


#: Under the generated tables in docs/performance.md.
LEGEND = [
    "",
    "µs a path: for the rows timed problem by problem (both in process, one at a time, AStar2D), the mean",
    "of each problem's fastest time over the rounds; for a batch, its fastest round over the problems.",
    "In process: `find_path(gridmap, start, goal, smooth=\"none\")`, which runs hex JPS on these maps of",
    "uniform cost; in process, A*: the same with `algorithm=\"astar\"`, hex A* with the map's landmarks",
    "(built before the clock). Expanded: jump points for JPS, cells for A*. Wire: a `pathserver serve` on",
    "loopback, the map sent with `put_map(..., shape=\"hex\", layout=...)`, asked by `Client.find_paths`,",
    "`find_paths_packed` and `find_path`; the server spreads a batch over its cores, so a batch's µs a",
    "path can be below the in-process row's, one problem at a time on one core. AStar2D: one point a",
    "walkable cell at its regular hexagon's centre (neighbours 1 apart), joined to the cells",
    "`TileMapLayer.get_surrounding_cells` names, timed `get_id_path` by `get_id_path` in headless Godot",
    "(`bench/godot/bench_hex.gd`). Exact: a path of hex steps over walkable cells whose length, and",
    "pathserver's cost, is the Dijkstra distance on the hex graph.",
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    movingai.add_godot_bench_arguments(parser, DEFAULT_MAPS, rounds=5, timeout=900)
    parser.add_argument("--layouts", default=DEFAULT_LAYOUTS,
                        help="hex layouts joined by commas, of odd-r, even-r, odd-q, even-q (default: %(default)s)")
    parser.add_argument("--no-godot", action="store_true", help="leave AStar2D out")
    parser.add_argument("--no-server", action="store_true", help="leave the wire rows out")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the tables and targets as JSON")
    add_write_docs(parser)
    args = parser.parse_args(argv)

    from pathserver.hexes import LAYOUTS

    layouts = [layout for layout in args.layouts.split(",") if layout]
    wrong = [layout for layout in layouts if layout not in LAYOUTS]
    if wrong or not layouts:
        parser.error(f"--layouts: {', '.join(wrong) or 'none'}; choose from {', '.join(LAYOUTS)}")
    maps = movingai.named_maps(args.movingai, args.map)
    if maps is None:
        return 2
    names = list(maps)
    godot = None if args.no_godot else godot_command()
    if godot is not None:
        LOG.write_text("")  # this run's Godot output, a section a table
        imported = subprocess.run(["timeout", str(IMPORT_TIMEOUT_S), *godot, "--headless", "--path", str(PROJECT),
                                   "--import"], capture_output=True, text=True)
        if imported.returncode != 0:
            print(imported.stdout[-2000:] + imported.stderr[-2000:], file=sys.stderr)
            raise SystemExit("godot --import of bench/godot failed")
    elif not args.no_godot:
        print("No Godot 4 found (set GODOT, or see bench/README.md): the AStar2D row is left out.\n")

    tables, failures = [], []
    with tempfile.TemporaryDirectory(prefix="pathserver-hex-bench-") as scratch:
        scratch = Path(scratch)
        server = client = None
        if not args.no_server:
            from pathserver.client import Client

            (scratch / "maps").mkdir()
            server, endpoint = start_server(scratch / "maps")
            client = Client(endpoint, timeout=WIRE_TIMEOUT_S, retries=0)
        try:
            for name in names:
                walkable = movingai.read_walkable(maps[name])
                problems = movingai.bucket_spread(movingai.read_scenarios(maps[name], walkable), args.queries,
                                                  args.seed)
                for layout in layouts:
                    try:
                        table = bench_table(name, maps[name], layout, problems, walkable, client, godot, args,
                                            scratch)
                    except EngineFailed as error:
                        print(f"{name} {layout}: {error}\n", file=sys.stderr)
                        failures.append(str(error))
                        continue
                    print_table(table)
                    tables.append(table)
        finally:
            if client is not None:
                client.close()
            if server is not None:
                stop_server(server)

    checks = [target(table) for table in tables]
    wrong_answers = [entry for table in tables for entry in inexact(table)]
    # The command as a reader would run it again: where the JSON went is beside the point.
    shown = [arg for arg in (argv if argv is not None else sys.argv[1:]) if arg not in ("--json", str(args.json))]
    command = " ".join(["python bench/hex.py", *shown])
    if args.json:
        args.json.write_text(json.dumps({"command": command, "tables": tables, "targets": checks}, indent=1) + "\n")
    if args.write_docs and tables:
        version = next((table["godot"] for table in tables if table["godot"]), None)
        intro = [f"Godot {version or '(none)'}, {os.cpu_count()} cores; the server on loopback.", ""]
        write_section("hex", "\n".join(intro + markdown(tables, checks) + LEGEND), command=command)
    verdicts = [check["verdict"] for check in checks]
    print(f"targets: {verdicts.count('PASS')} PASS, {verdicts.count('FAIL')} FAIL, {verdicts.count('NOT RUN')} NOT RUN")
    if wrong_answers:
        print(f"not exact: {'; '.join(wrong_answers)}")
    return 1 if wrong_answers or failures else 0


if __name__ == "__main__":
    sys.exit(main())
