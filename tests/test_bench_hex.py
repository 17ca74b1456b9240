"""``bench/hex.py``'s own logic on small maps, not its timings: the hex graph against
:func:`pathserver.hexes.neighbours`, the Dijkstra reference against a breadth-first search,
the path checker and the tally, and a whole run of the in-process row (no Godot, no
server). The bench itself is never run as a test."""

from __future__ import annotations

import collections
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from pathserver import hexes

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_hex", ROOT / "bench" / "hex.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def split_map(seed: int) -> np.ndarray:
    """A 9 x 11 map, about a fifth of it blocked, cut in two by a blocked column 5 (no hex
    step crosses a column)."""
    walkable = np.random.default_rng(seed).random((9, 11)) > 0.2
    walkable[:, 5] = False
    return walkable


def breadth_first(walkable: np.ndarray, layout: str, start: tuple[int, int]) -> dict:
    """Hex steps from ``start`` to every cell it reaches, by hexes.neighbours."""
    height, width = walkable.shape
    steps = {start: 0}
    todo = collections.deque([start])
    while todo:
        cell = todo.popleft()
        for x, y in hexes.neighbours(layout, *cell):
            if 0 <= x < width and 0 <= y < height and walkable[y, x] and (x, y) not in steps:
                steps[(x, y)] = steps[cell] + 1
                todo.append((x, y))
    return steps


@pytest.mark.parametrize("layout", hexes.LAYOUTS)
def test_the_hex_graph_joins_each_walkable_cell_to_its_walkable_neighbours(bench, layout):
    walkable = split_map(1)
    height, width = walkable.shape
    expected = set()
    for y, x in np.argwhere(walkable).tolist():
        for nx, ny in hexes.neighbours(layout, x, y):
            if 0 <= nx < width and 0 <= ny < height and walkable[ny, nx]:
                expected.add((y * width + x, ny * width + nx))
    graph = bench.hex_graph(walkable, layout)
    rows, cols = graph.nonzero()
    assert set(zip(rows.tolist(), cols.tolist())) == expected
    assert (graph.data == 1).all()


@pytest.mark.parametrize("layout", hexes.LAYOUTS)
def test_the_reference_is_the_breadth_first_distance_and_inf_without_a_way(bench, layout):
    walkable = split_map(2)
    cells = [(x, y) for y, x in np.argwhere(walkable).tolist()]
    rng = np.random.default_rng(3)
    pairs = [(cells[i], cells[j]) for i, j in rng.integers(0, len(cells), size=(40, 2))]
    problems = [bench.movingai.Problem(0, s[0], s[1], g[0], g[1], 0.0, 0.0) for s, g in pairs]
    reference = bench.reference_steps(bench.hex_graph(walkable, layout), walkable.shape[1], problems)
    expected = [breadth_first(walkable, layout, s).get(g, np.inf) for s, g in pairs]
    assert reference.tolist() == expected
    assert np.isinf(reference).any() and np.isfinite(reference).any()


def test_the_checker_counts_hex_steps_and_refuses_what_is_no_hex_path(bench):
    walkable = np.ones((5, 6), dtype=bool)
    walkable[2, 3] = False
    # odd-r: from (1, 1), an odd row, (2, 2) is the south-east neighbour; from (2, 2),
    # an even row, (2, 3) is.
    assert bench.path_steps([(1, 1), (2, 2), (2, 3)], walkable, "odd-r", (1, 1), (2, 3)) == 2
    assert bench.path_steps(np.array([[1, 1]]), walkable, "odd-r", (1, 1), (1, 1)) == 0
    assert bench.path_steps([(1, 1), (0, 2)], walkable, "odd-r", (1, 1), (0, 2)) is None  # a square diagonal
    assert bench.path_steps([(1, 1), (0, 2)], walkable, "even-r", (1, 1), (0, 2)) == 1  # a hex step there
    assert bench.path_steps([(2, 2), (3, 2)], walkable, "odd-r", (2, 2), (3, 2)) is None  # blocked
    assert bench.path_steps([(1, 1), (2, 1)], walkable, "odd-r", (1, 1), (3, 1)) is None  # wrong goal
    assert bench.path_steps([(0, 0), (-1, 0)], walkable, "odd-r", (0, 0), (-1, 0)) is None  # off the map
    assert bench.path_steps([(1, 1), (3, 1)], walkable, "odd-r", (1, 1), (3, 1)) is None  # two columns at once
    assert bench.path_steps([], walkable, "odd-r", (1, 1), (1, 1)) is None
    assert bench.path_steps(None, walkable, "odd-r", (1, 1), (1, 1)) is None


def test_the_tally_sorts_each_answer(bench):
    walkable = np.ones((4, 4), dtype=bool)
    problem = bench.movingai.Problem(0, 0, 0, 2, 0, 0.0, 0.0)
    shortest = [(0, 0), (1, 0), (2, 0)]
    detour = [(0, 0), (0, 1), (1, 1), (1, 0), (2, 0)]  # odd-r: each a neighbour of the one before
    answers = [(shortest, 2.0), (shortest, None), (np.array(shortest), 3.0), (detour, 4.0), (None, None),
               (None, None), ([(0, 0), (2, 0)], None)]
    reference = np.array([2.0, 2.0, 2.0, 2.0, 2.0, np.inf, 2.0])
    counts = bench.tally(answers, reference, [problem] * len(answers), walkable, "odd-r")
    assert counts == {"exact": 3, "wrong_length": 1, "invalid": 1, "no_path": 1, "cost_differs": 1}


def test_the_problems_file_is_what_bench_hex_gd_reads(bench, tmp_path):
    problems = [bench.movingai.Problem(1, 2, 3, 4, 5, 6.5, 0.001), bench.movingai.Problem(0, 0, 1, 1, 0, 1.0, 0.1)]
    bench.write_problems(tmp_path / "p.txt", Path("/maps/x.map"), "even-q", problems)
    assert (tmp_path / "p.txt").read_text() == "map /maps/x.map even-q\n2 3 4 5\n0 1 1 0\n"


def write_tiny_movingai(folder: Path) -> None:
    rows = ["." * 16 for _ in range(12)]
    rows[6] = "@@@@@@@@@@@@..@@"  # a wall with a gap: the trips go round
    rows[3] = "..TTTT.........."
    (folder / "tiny.map").write_text("type octile\nheight 12\nwidth 16\nmap\n" + "\n".join(rows) + "\n")
    trips = [(0, 0, 15, 11), (3, 11, 2, 0), (15, 0, 0, 11), (7, 5, 7, 8), (1, 1, 2, 2), (10, 10, 4, 1)]
    lines = ["version 1"] + [f"{k % 3}\ttiny.map\t16\t12\t{sx}\t{sy}\t{gx}\t{gy}\t1" for k, (sx, sy, gx, gy)
                             in enumerate(trips)]
    (folder / "tiny.map.scen").write_text("\n".join(lines) + "\n")


def test_a_run_without_godot_or_server_checks_every_answer_and_leaves_the_target_not_run(bench, tmp_path, capsys):
    write_tiny_movingai(tmp_path)
    out = tmp_path / "hex.json"
    code = bench.main(["--movingai", str(tmp_path), "--map", "tiny", "--layouts", "odd-r,even-q", "--queries", "6",
                       "--rounds", "2", "--no-godot", "--no-server", "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    report = json.loads(out.read_text())
    assert report["command"] == ("python bench/hex.py --movingai " + str(tmp_path) + " --map tiny --layouts "
                                 "odd-r,even-q --queries 6 --rounds 2 --no-godot --no-server")
    assert [(t["map"], t["layout"], t["problems"]) for t in report["tables"]] == [("tiny", "odd-r", 6),
                                                                                 ("tiny", "even-q", 6)]
    for table in report["tables"]:
        rows = {row["engine"]: row for row in table["rows"]}
        assert rows["in process"]["exact"] == 6 and rows["in process"]["us_per_path"] > 0
        assert rows["in process, A*"]["exact"] == 6 and rows["in process, A*"]["note"].startswith("astar")
        assert rows["AStar2D"] == {"engine": "AStar2D", "unavailable": "no Godot 4"}
        assert rows["wire, one batch"]["unavailable"] == "no server"
    assert [t["verdict"] for t in report["targets"]] == ["NOT RUN", "NOT RUN"]
    assert "target: in process >= 50x AStar2D: - NOT RUN" in printed
    assert printed.rstrip().endswith("targets: 0 PASS, 0 FAIL, 2 NOT RUN")
