"""``bench/links.py``'s own logic on small maps, not its timings: the random links, the
Dijkstra reference against tests/naive_links.py, the path checker, the fields' layouts,
the targets, and a whole run on a tiny Moving AI map. The bench itself is never run as a
test."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import naive_links
from pathserver import GridMap, find_path

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_links", ROOT / "bench" / "links.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def two_floors(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((2, 7, 9)) > 0.25


def test_random_links_join_walkable_cells_of_the_two_floors(bench):
    floors = two_floors(1)
    links = bench.random_links(floors, 40, seed=5)
    assert links == bench.random_links(floors, 40, seed=5)
    for link in links:
        (ax, ay, af), (bx, by, bf) = link["from"], link["to"]
        assert (af, bf) == (0, 1) and floors[0, ay, ax] and floors[1, by, bx]
        assert 0 <= link["cost"] < bench.MAX_LINK_COST and link["two_way"] is True


@pytest.mark.parametrize("seed", range(4))
def test_the_reference_is_naive_dijkstra_over_floors_and_links(bench, seed):
    rng = np.random.default_rng(seed)
    floors = two_floors(seed)
    links = bench.random_links(floors, 6, seed)
    links[0]["two_way"] = False
    links.append(dict(links[1], cost=0.0))  # a parallel link: the cheaper one counts
    cells = [(x, y) for y, x in np.argwhere(floors[0]).tolist()]
    problems = [bench.movingai.Problem(0, *cells[i], *cells[j], 0.0, 0.0) for i, j in rng.integers(0, len(cells),
                                                                                                     (12, 2))]
    reference = bench.reference_costs(bench.grid_graph(floors, links), floors.shape[1:], problems)
    passable = [f.astype(np.uint8) for f in floors]
    ones = [np.ones(f.shape) for f in floors]
    expected = [naive_links.cost(passable, ones, links, (p.sx, p.sy), (p.gx, p.gy)) for p in problems]
    np.testing.assert_allclose(reference, expected)
    # A field is the cost to its goal: with two-way links only, the cost from it.
    field = bench.reference_field(bench.grid_graph(floors, links[1:]), floors.shape[1:], cells[0])
    costs = naive_links.costs_from(passable, ones, links[1:], (*cells[0], 0))
    assert np.isfinite(field).sum() == len(costs)
    for (x, y, f), value in costs.items():
        assert field[f, y, x] == pytest.approx(value)


def test_the_path_checker_takes_a_true_answer_and_refuses_others(bench):
    floors = np.ones((2, 3, 4), dtype=bool)
    links = [{"from": [3, 0, 0], "to": [0, 0, 1], "cost": 2.0, "two_way": False}]
    result = find_path(GridMap(floors, floors=2, links=links), (0, 2), (3, 2, 1), smooth="none")
    assert result.path.shape[1] == 3
    # The checker asks for a goal on floor 0: this one ends on floor 1.
    assert bench.path_cost(result, floors, links, (0, 2), (3, 2)) is None

    class Answer:
        def __init__(self, path, taken):
            self.path, self.links = np.array(path), None if taken is None else np.array(taken)

    up_and_down = [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [0, 0, 1], [1, 1, 1]]
    back = links + [{"from": [1, 1, 1], "to": [1, 1, 0], "cost": 0.5}]
    good = Answer(up_and_down + [[1, 1, 0]], [[3, 0], [5, 1]])
    assert bench.path_cost(good, floors, back, (0, 0), (1, 1)) == pytest.approx(3 + 2 + np.sqrt(2) + 0.5)
    assert bench.path_cost(Answer(up_and_down + [[1, 1, 0]], [[3, 0]]), floors, back, (0, 0), (1, 1)) is None
    assert bench.path_cost(Answer(up_and_down + [[1, 1, 0]], [[3, 1], [5, 1]]), floors, back, (0, 0), (1, 1)) is None
    one_way = [[1, 1, 0], [1, 1, 1], [0, 0, 1], [3, 0, 0], [2, 1, 0]]
    assert bench.path_cost(Answer(one_way, [[0, 1], [2, 0]]), floors, back, (1, 1), (2, 1)) is None
    walls = np.ones((1, 3, 3), dtype=bool)
    walls[0, 0, 1] = False
    cut = Answer([[0, 0], [1, 1], [2, 0]], None)
    assert bench.path_cost(cut, walls, [], (0, 0), (2, 0)) is None
    assert bench.path_cost(Answer([[0, 0], [0, 1], [1, 1]], None), walls, [], (0, 0), (1, 1)) == 2.0


def test_a_field_reads_the_same_in_each_layout(bench):
    gridmap = GridMap(np.ones((2, 3, 4), dtype=bool), floors=2)
    floors = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    stacked = np.full((7, 4), np.inf)
    stacked[:3], stacked[4:] = floors
    for values in (floors, floors.reshape(6, 4), stacked):
        np.testing.assert_array_equal(bench.field_floors(values, gridmap), floors)
    one = GridMap(np.ones((3, 4), dtype=bool))
    np.testing.assert_array_equal(bench.field_floors(floors[0], one), floors[:1])


def test_the_targets_read_the_rows(bench):
    rows = [{"floors": 1, "links": 0, "x_path": 1.0, "x_field": 1.0},
            {"floors": 2, "links": 0, "x_path": 1.04, "x_field": 1.3},
            {"floors": 2, "links": 16, "x_path": 2.5, "x_field": None}]
    checks = bench.targets({"rows": rows})
    assert [(c["figure"], c["verdict"]) for c in checks] == [(1.04, "PASS"), (1.3, "FAIL"), (2.5, "FAIL")]
    assert [c["verdict"] for c in bench.targets({"rows": rows[:1]})] == ["NOT RUN"] * 3


def write_tiny_movingai(folder: Path) -> None:
    rows = ["." * 16 for _ in range(12)]
    rows[6] = "@@@@@@@@@@@@..@@"  # a wall with a gap: the trips go round
    (folder / "tiny.map").write_text("type octile\nheight 12\nwidth 16\nmap\n" + "\n".join(rows) + "\n")
    trips = [(0, 0, 15, 11), (3, 11, 2, 0), (15, 0, 0, 11), (7, 5, 7, 8), (1, 1, 2, 2), (10, 10, 4, 1)]
    lines = ["version 1"] + [f"{k % 3}\ttiny.map\t16\t12\t{sx}\t{sy}\t{gx}\t{gy}\t1" for k, (sx, sy, gx, gy)
                             in enumerate(trips)]
    (folder / "tiny.map.scen").write_text("\n".join(lines) + "\n")


def test_every_path_on_linked_maps_is_checked_exact(bench, tmp_path):
    write_tiny_movingai(tmp_path)
    args = bench.argparse.Namespace(queries=6, fields=0, rounds=1, seed=2, links=[0, 3, 12])
    table = bench.bench("tiny", tmp_path / "tiny.map", args)
    assert [row["map"] for row in table["rows"]] == ["no links", "2 floors, 0 links", "2 floors, 3 links",
                                                     "2 floors, 12 links"]
    assert [row["paths_exact"] for row in table["rows"]] == [6] * 4


def test_a_run_prints_the_table_and_the_targets(bench, tmp_path, capsys):
    write_tiny_movingai(tmp_path)
    out = tmp_path / "links.json"
    code = bench.main(["--movingai", str(tmp_path), "--map", "tiny", "--links", "0", "--queries", "6",
                       "--fields", "2", "--rounds", "2", "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    report = json.loads(out.read_text())
    assert report["command"] == (f"python bench/links.py --movingai {tmp_path} --map tiny --links 0 --queries 6 "
                                 "--fields 2 --rounds 2")
    rows = report["table"]["rows"]
    assert [(row["map"], row["paths_exact"], row["fields_exact"]) for row in rows] == [
        ("no links", 6, 2), ("2 floors, 0 links", 6, 2)]
    assert rows[0]["x_path"] == 1.0 and rows[1]["us_per_path"] > 0 and rows[1]["us_per_field"] > 0
    assert [t["verdict"] for t in report["targets"]][2] == "NOT RUN"  # no 16 links in this run
    assert "target: 16 links: path <= 2x no links: - NOT RUN" in printed
    assert "targets: " in printed.splitlines()[-1]


def test_a_field_refused_on_linked_maps_is_not_supported_yet(bench, tmp_path, monkeypatch, capsys):
    from pathserver.grid import queries

    plain = queries.distance_field

    def refusing(gridmap, goals, *args, **kwargs):
        if gridmap.linked:
            raise NotImplementedError("fields on maps with links")
        return plain(gridmap, goals, *args, **kwargs)

    monkeypatch.setattr(queries, "distance_field", refusing)
    write_tiny_movingai(tmp_path)
    code = bench.main(["--movingai", str(tmp_path), "--map", "tiny", "--links", "0,16", "--queries", "4",
                       "--fields", "2", "--rounds", "1"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert printed.count(bench.NOT_SUPPORTED) == 2
    assert "target: 2 floors, 0 links: field <= 1.1x no links: - NOT RUN" in printed
