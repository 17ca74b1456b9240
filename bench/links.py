"""Paths and fields on a map of two floors with 0, 16 and 256 links, beside the same queries
on the map without links, in one run, every answer checked against Dijkstra (issue #35).

    python bench/links.py                            # den520d, 100 problems, 5 rounds
    python bench/links.py --map Aftershock --links 0,16,64,256 --rounds 9
    python bench/links.py --json links.json --write-docs

The maps: the Moving AI map (``--map``) as it is, one floor without links ("no links"), and
the same map twice, floor 1 under floor 0, with 0, 16 and 256 links (``--links``): random
two-way links from a walkable cell of floor 0 to a walkable cell of floor 1, costs uniform
in 0..20, drawn with ``--seed`` (the 16 are the first 16 of the 256). A link is a teleporter
here: it may join any two cells, so a path may climb to floor 1 and come back down where it
pays, and the estimate must stay exact around it.

The problems: ``bench/core.py``'s bucket-spread scenario problems (``--queries``,
``--seed``), start and goal on floor 0 of every map. Timed, each map taking its turn round
by round (the order rotates), after an untimed pass over every problem (the compile, the
unit layer and the tables built in the background come before the clock):

  path    ``find_path(gridmap, start, goal, smooth="none")`` per problem
  field   ``distance_field(gridmap, [goal])``, the whole map (every floor), for the first
          ``--fields`` problems' goals

A figure is the mean of each problem's fastest time over ``--rounds``; ``x no links`` divides
it by the same figure on the map without links. Exact: a path of octile steps (no corner
cut) and links, from the start to the goal, whose cost and ``find_path``'s are the Dijkstra
distance on the graph of every floor's cells and the links (scipy); a field equal to the
Dijkstra distance to its goal from every cell. A field ``distance_field`` refuses on a map
with links is reported "not supported yet" (and its target NOT RUN). The issue's targets,
printed PASS or FAIL: maps without links lose nothing (2 floors and 0 links, path and field
<= ``NO_LINKS_TARGET`` x the map without links); with 16 links a path costs at most
``LINKS_16_TARGET`` x the same query without links. ``--json FILE`` writes the table and the
targets; ``--write-docs`` the table into docs/performance.md's ``links`` section
(``bench/_docs.py``). Exit 1 when an answer is not exact.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pathserver import kernel_cache

# First, before anything imports the kernels: numba picks their cache folder then.
kernel_cache.configure()

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _movingai as movingai  # noqa: E402
from _docs import add_argument as add_write_docs, write_section  # noqa: E402

DEFAULT_MAP = "den520d"
DEFAULT_LINKS = "0,16,256"
#: Maps without links lose nothing: 2 floors and 0 links against one floor, within noise.
NO_LINKS_TARGET = 1.10
#: With 16 links a path costs at most this many times the same query without links.
LINKS_16_TARGET = 2.0
#: Link costs are drawn uniform in [0, MAX_LINK_COST).
MAX_LINK_COST = 20.0
#: Dijkstra runs from this many sources at once: rows of the graph's size, float64.
DIJKSTRA_CHUNK = 8
NOT_SUPPORTED = "not supported yet"
SQRT2 = np.sqrt(2.0)


# -- the maps and the reference ------------------------------------------------------------


def random_links(floors: np.ndarray, count: int, seed: int) -> list[dict]:
    """``count`` two-way links as ``put_map`` takes them, each from a walkable cell of floor
    0 to one of floor 1 (``floors`` bool (2, H, W)), costs uniform in [0, MAX_LINK_COST)."""
    rng = np.random.default_rng(seed)
    ends = []
    for floor in (0, 1):
        cells = np.argwhere(floors[floor])  # (y, x)
        ends.append(cells[rng.integers(0, len(cells), size=count)])
    costs = rng.uniform(0.0, MAX_LINK_COST, size=count)
    return [{"from": [int(a[1]), int(a[0]), 0], "to": [int(b[1]), int(b[0]), 1], "cost": float(c), "two_way": True}
            for a, b, c in zip(ends[0], ends[1], costs)]


def point(value) -> tuple[int, int, int]:
    """A link's end ``[x, y]`` or ``[x, y, floor]`` as ``(x, y, floor)``."""
    return (int(value[0]), int(value[1]), int(value[2]) if len(value) > 2 else 0)


def grid_graph(floors: np.ndarray, links: list[dict]):
    """The map's graph as a scipy CSR matrix over cell ids ``(floor * H + y) * W + x``:
    octile moves within a floor (a diagonal needs both orthogonal cells walkable, the
    Moving AI rule), and each link, both ways when two-way. Of parallel edges the cheapest."""
    import scipy.sparse

    count, height, width = floors.shape
    padded = np.pad(floors, ((0, 0), (1, 1), (1, 1)))

    def shifted(dx, dy):
        return padded[:, 1 + dy:height + 1 + dy, 1 + dx:width + 1 + dx]

    sources, targets, weights = [], [], []
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dx == dy == 0:
                continue
            ok = floors & shifted(dx, dy)
            if dx and dy:
                ok &= shifted(dx, 0) & shifted(0, dy)
            f, y, x = np.nonzero(ok)
            sources.append((f * height + y) * width + x)
            targets.append((f * height + y + dy) * width + x + dx)
            weights.append(np.full(len(f), SQRT2 if dx and dy else 1.0))
    for link in links:
        (ax, ay, af), (bx, by, bf) = point(link["from"]), point(link["to"])
        a, b = (af * height + ay) * width + ax, (bf * height + by) * width + bx
        pairs = [(a, b), (b, a)] if link.get("two_way", True) else [(a, b)]
        for s, t in pairs:
            sources.append(np.array([s]))
            targets.append(np.array([t]))
            weights.append(np.array([float(link["cost"])]))
    sources, targets, weights = np.concatenate(sources), np.concatenate(targets), np.concatenate(weights)
    # CSR sums duplicate entries: keep the cheapest of each (source, target) instead.
    order = np.lexsort((weights, targets, sources))
    sources, targets, weights = sources[order], targets[order], weights[order]
    first = np.ones(len(sources), dtype=bool)
    first[1:] = (np.diff(sources) != 0) | (np.diff(targets) != 0)
    size = floors.size
    return scipy.sparse.csr_matrix((weights[first], (sources[first], targets[first])), shape=(size, size))


def reference_costs(graph, shape: tuple, problems: list) -> np.ndarray:
    """float64 (n,): the Dijkstra distance of each problem (start and goal on floor 0)."""
    from scipy.sparse.csgraph import dijkstra

    _, width = shape
    out = np.empty(len(problems))
    for first in range(0, len(problems), DIJKSTRA_CHUNK):
        chunk = problems[first:first + DIJKSTRA_CHUNK]
        distances = dijkstra(graph, directed=True, indices=[p.sy * width + p.sx for p in chunk])
        for i, p in enumerate(chunk):
            out[first + i] = distances[i, p.gy * width + p.gx]
    return out


def reference_field(graph, shape: tuple, goal: tuple[int, int]) -> np.ndarray:
    """float64 (F, H, W): every cell's Dijkstra distance to ``goal`` on floor 0."""
    from scipy.sparse.csgraph import dijkstra

    height, width = shape
    distances = dijkstra(graph.T.tocsr(), directed=True, indices=[goal[1] * width + goal[0]])[0]
    return distances.reshape(-1, height, width)


def path_cost(result, floors: np.ndarray, links: list[dict], start, goal) -> float | None:
    """The cost of ``result``'s path (``smooth="none"``: every cell) from ``start`` to
    ``goal`` on floor 0, or None when it is not one: octile steps within a floor (the
    Moving AI rule, :func:`movingai.path_length`) and, where ``result.links`` says, the move
    across that link."""
    path = np.asarray(result.path, dtype=np.int64)
    if path.ndim != 2 or len(path) == 0:
        return None
    if path.shape[1] == 2:
        path = np.column_stack([path, np.zeros(len(path), dtype=np.int64)])
    taken = {} if result.links is None else {int(i): int(k) for i, k in np.asarray(result.links).tolist()}
    if tuple(path[0]) != (*start, 0) or tuple(path[-1]) != (*goal, 0):
        return None
    total, piece = 0.0, 0
    for i in sorted(taken) + [len(path) - 1]:
        segment = path[piece:i + 1]
        if (segment[:, 2] != segment[0, 2]).any() or not 0 <= segment[0, 2] < len(floors):
            return None
        length = movingai.path_length(segment[:, :2], floors[segment[0, 2]], segment[0, :2], segment[-1, :2])
        if length is None:
            return None
        total += length
        if i == len(path) - 1:
            break
        k = taken[i]
        if not 0 <= k < len(links):
            return None
        ends = [point(links[k][end]) for end in ("from", "to")]
        move = (tuple(path[i]), tuple(path[i + 1]))
        if move != (ends[0], ends[1]) and not (links[k].get("two_way", True) and move == (ends[1], ends[0])):
            return None
        total += float(links[k]["cost"])
        piece = i + 1
    return total


def close(a: float, b: float) -> bool:
    return (np.isinf(a) and np.isinf(b)) or abs(a - b) <= 1e-6 * max(1.0, abs(b))


# -- one map --------------------------------------------------------------------------------


@dataclass
class Variant:
    """One row: a GridMap, how it was made, and what its runs found."""

    name: str
    gridmap: object
    floors: np.ndarray  # bool (F, H, W)
    links: list
    path_us: np.ndarray | None = None
    field_us: np.ndarray | None = None
    field_error: str | None = None
    results: list = field(default_factory=list)
    fields: list = field(default_factory=list)


def warm(variant: Variant, problems: list, goals: list) -> None:
    """Every call once, untimed, and the tables the first call starts in the background."""
    from pathserver import find_path
    from pathserver.grid.queries import distance_field

    for p in problems:
        find_path(variant.gridmap, (p.sx, p.sy), (p.gx, p.gy), smooth="none")
    layer = variant.gridmap.layer(1)
    for wait in ("wait_jump_table", "wait_landmarks", "wait_bounds"):
        if hasattr(layer, wait):
            getattr(layer, wait)()
    try:
        for goal in goals:
            distance_field(variant.gridmap, [goal])
    except Exception as error:  # noqa: BLE001 - the field on linked maps may not be there yet
        variant.field_error = f"{type(error).__name__}: {error}"


def run_round(variant: Variant, problems: list, goals: list) -> None:
    from pathserver import find_path
    from pathserver.grid.queries import distance_field

    gridmap, times, results = variant.gridmap, [], []
    gc.disable()
    try:
        for p in problems:
            began = time.perf_counter_ns()
            result = find_path(gridmap, (p.sx, p.sy), (p.gx, p.gy), smooth="none")
            times.append(time.perf_counter_ns() - began)
            results.append(result)
        field_times, fields = [], []
        if variant.field_error is None:
            for goal in goals:
                began = time.perf_counter_ns()
                values = distance_field(gridmap, [goal])
                field_times.append(time.perf_counter_ns() - began)
                fields.append(values)
    finally:
        gc.enable()
    path_us = np.array(times) / 1000.0
    variant.path_us = path_us if variant.path_us is None else np.minimum(variant.path_us, path_us)
    variant.results = results
    if field_times:
        field_us = np.array(field_times) / 1000.0
        variant.field_us = field_us if variant.field_us is None else np.minimum(variant.field_us, field_us)
        variant.fields = fields


def field_floors(values: np.ndarray, gridmap) -> np.ndarray:
    """A field as (F, H, W) whatever its layout: one floor's (H, W), floors (F, H, W), or
    GridMap's stacked rows (floors one under another, a row between each two)."""
    values = np.asarray(values, dtype=np.float64)
    floors, height = gridmap.floors, getattr(gridmap, "floor_height", gridmap.height)
    if values.ndim == 3:
        return values
    if values.shape[0] == floors * (height + 1) - 1:
        padded = np.concatenate([values, np.full((1, values.shape[1]), np.inf)])
        return padded.reshape(floors, height + 1, -1)[:, :height]
    return values.reshape(floors, height, -1)


def tally(variant: Variant, problems: list, goals: list, reference: np.ndarray, graph, shape) -> dict:
    """How many paths and fields are exact (see the module docstring)."""
    exact = 0
    for result, p, best in zip(variant.results, problems, reference):
        if result.status != "found":
            exact += int(np.isinf(best))
            continue
        cost = path_cost(result, variant.floors, variant.links, (p.sx, p.sy), (p.gx, p.gy))
        exact += int(cost is not None and close(cost, best) and close(result.cost, best))
    fields_exact = None
    if variant.field_error is None:
        fields_exact = 0
        for values, goal in zip(variant.fields, goals):
            expected = reference_field(graph, shape, goal)
            got = field_floors(values, variant.gridmap)
            fields_exact += int(got.shape == expected.shape and np.allclose(got, expected, rtol=1e-5, atol=1e-4))
    expanded = float(np.mean([r.expanded for r in variant.results]))
    algorithms = sorted({r.algorithm for r in variant.results if not r.line_of_sight})
    return {"paths_exact": exact, "fields_exact": fields_exact, "expanded": round(expanded, 1),
            "algorithms": algorithms}


def bench(name: str, map_path: Path, args) -> dict:
    from pathserver import GridMap

    walkable = movingai.read_walkable(map_path)
    problems = movingai.bucket_spread(movingai.read_scenarios(map_path, walkable), args.queries, args.seed)
    goals = [(p.gx, p.gy) for p in problems[:args.fields]]
    two = np.stack([walkable, walkable])
    drawn = random_links(two, max(args.links), args.seed)
    variants = [Variant("no links", GridMap(walkable), walkable[None], [])]
    for count in args.links:
        links = drawn[:count]
        variants.append(Variant(f"2 floors, {count} links", GridMap(two, floors=2, links=links), two, links))
    for variant in variants:
        warm(variant, problems, goals)
    for round_index in range(args.rounds):
        shift = round_index % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            run_round(variant, problems, goals)
    base = variants[0]
    rows = []
    for variant in variants:
        graph = grid_graph(variant.floors, variant.links)
        reference = reference_costs(graph, walkable.shape, problems)
        row = {"map": variant.name, "floors": len(variant.floors), "links": len(variant.links),
               "us_per_path": round(float(variant.path_us.mean()), 2),
               "x_path": round(float(variant.path_us.mean() / base.path_us.mean()), 3)}
        if variant.field_error is None and base.field_us is not None:
            row.update(us_per_field=round(float(variant.field_us.mean()), 1),
                       x_field=round(float(variant.field_us.mean() / base.field_us.mean()), 3))
        else:
            row.update(us_per_field=None, x_field=None, field_error=variant.field_error)
        row.update(tally(variant, problems, goals, reference, graph, walkable.shape))
        rows.append(row)
    height, width = walkable.shape
    return {"map": name, "width": width, "height": height, "walkable": int(walkable.sum()), "problems": len(problems),
            "fields": len(goals), "rounds": args.rounds, "seed": args.seed, "rows": rows}


# -- output ------------------------------------------------------------------------------------


def targets(table: dict) -> list[dict]:
    """The issue's targets against this run's figures."""
    by_links = {row["links"]: row for row in table["rows"] if row["floors"] == 2}
    checks = []
    zero = by_links.get(0)
    for what in ("path", "field"):
        figure = None if zero is None else zero[f"x_{what}"]
        checks.append({"target": f"2 floors, 0 links: {what} <= {NO_LINKS_TARGET:g}x no links", "figure": figure,
                       "verdict": "NOT RUN" if figure is None else "PASS" if figure <= NO_LINKS_TARGET else "FAIL"})
    sixteen = by_links.get(16)
    figure = None if sixteen is None else sixteen["x_path"]
    checks.append({"target": f"16 links: path <= {LINKS_16_TARGET:g}x no links", "figure": figure,
                   "verdict": "NOT RUN" if figure is None else "PASS" if figure <= LINKS_16_TARGET else "FAIL"})
    return checks


def title(table: dict) -> str:
    return (f"{table['map']}: {table['width']} x {table['height']}, {table['walkable']:,} walkable a floor; "
            f"{table['problems']} paths and {table['fields']} fields, start and goal on floor 0; "
            f"{table['rounds']} rounds; links seed {table['seed']}")


def answers_text(row: dict, table: dict) -> str:
    text = f"paths {row['paths_exact']}/{table['problems']} exact"
    if row["fields_exact"] is not None:
        text += f", fields {row['fields_exact']}/{table['fields']}"
    return text


def note(row: dict) -> str:
    return f"{'/'.join(row['algorithms']) or 'none'}, {row['expanded']:,.0f} expanded a path"


def inexact(table: dict) -> list[str]:
    return [row["map"] for row in table["rows"]
            if row["paths_exact"] != table["problems"] or row["fields_exact"] not in (None, table["fields"])]


def _figure(value, unit: str = "x") -> str:
    return "-" if value is None else f"{value:.2f}{unit}"


def print_table(table: dict, checks: list[dict]) -> None:
    print(title(table))
    print(f"{'map':<22} {'us a path':>10} {'x no links':>10} {'us a field':>11} {'x no links':>10}  answers; notes")
    for row in table["rows"]:
        field_us = NOT_SUPPORTED if row["us_per_field"] is None else f"{row['us_per_field']:,.1f}"
        print(f"{row['map']:<22} {row['us_per_path']:>10,.1f} {_figure(row['x_path']):>10} {field_us:>11} "
              f"{_figure(row['x_field']):>10}  {answers_text(row, table)}; {note(row)}")
    for check in checks:
        print(f"target: {check['target']}: {_figure(check['figure'])} {check['verdict']}")


def markdown(table: dict, checks: list[dict]) -> list[str]:
    out = [f"**{title(table)}**", "",
           "| map | µs a path | × no links | µs a field | × no links | answers | |",
           "| --- | ---: | ---: | ---: | ---: | --- | --- |"]
    for row in table["rows"]:
        field_us = NOT_SUPPORTED if row["us_per_field"] is None else f"{row['us_per_field']:,.1f}"
        x_field = "–" if row["x_field"] is None else f"{row['x_field']:.2f}"
        out.append(f"| {row['map']} | {row['us_per_path']:,.1f} | {row['x_path']:.2f} | {field_us} | {x_field} | "
                   f"{answers_text(row, table)} | {note(row)} |")
    out += ["", "| target | figure | |", "| --- | ---: | --- |"]
    for check in checks:
        figure = "–" if check["figure"] is None else f"{check['figure']:.2f}×"
        out.append(f"| {check['target']} | {figure} | {check['verdict']} |")
    return out


#: Under the generated table in docs/performance.md.
LEGEND = [
    "",
    "µs a path: `find_path(gridmap, start, goal, smooth=\"none\")`, the mean over the problems of each",
    "one's fastest time over the rounds; µs a field: `distance_field(gridmap, [goal])`, the whole map,",
    "likewise. × no links: that figure over the same figure on the map as it is (one floor, no",
    "links). The links join random walkable cells of floor 0 and floor 1, both ways, costs uniform in",
    "0..20. Exact: a path of octile steps and links whose cost, and `find_path`'s, is the Dijkstra",
    "distance on the graph of both floors and the links; a field equal to the Dijkstra distances.",
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--movingai", type=Path, default=movingai.DEFAULT_MOVINGAI,
                        help="folder of Moving AI .map + .map.scen files (default: %(default)s)")
    parser.add_argument("--map", default=DEFAULT_MAP, help="map name (default: %(default)s)")
    parser.add_argument("--links", default=DEFAULT_LINKS,
                        help="link counts of the 2-floor maps, joined by commas (default: %(default)s)")
    parser.add_argument("--queries", type=int, default=100, help="path problems (default: %(default)s)")
    parser.add_argument("--fields", type=int, default=10, help="fields, of the first problems' goals "
                                                               "(default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="problem and link seed (default: %(default)s)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the table and targets as JSON")
    add_write_docs(parser)
    args = parser.parse_args(argv)
    try:
        args.links = sorted({int(count) for count in args.links.split(",") if count})
    except ValueError:
        parser.error(f"--links: whole numbers joined by commas, got {args.links!r}")
    if not args.links or min(args.links) < 0:
        parser.error("--links: at least one count, none negative")
    maps = movingai.find_maps(args.movingai)
    if args.map not in maps:
        print(f"map {args.map} not found under {args.movingai}", file=sys.stderr)
        return 2

    table = bench(args.map, maps[args.map], args)
    checks = targets(table)
    print_table(table, checks)
    wrong = inexact(table)
    # The command as a reader would run it again: where the JSON went is beside the point.
    shown = [arg for arg in (argv if argv is not None else sys.argv[1:]) if arg not in ("--json", str(args.json))]
    command = " ".join(["python bench/links.py", *shown])
    if args.json:
        args.json.write_text(json.dumps({"command": command, "table": table, "targets": checks}, indent=1) + "\n")
    if args.write_docs:
        write_section("links", "\n".join(markdown(table, checks) + LEGEND), command=command)
    verdicts = [check["verdict"] for check in checks]
    print(f"targets: {verdicts.count('PASS')} PASS, {verdicts.count('FAIL')} FAIL, {verdicts.count('NOT RUN')} NOT RUN")
    if wrong:
        print(f"not exact: {'; '.join(wrong)}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
