"""Moving AI scenario files."""

from __future__ import annotations

from pathlib import Path

import pytest

from pathserver.errors import MapLoadError
from pathserver.maps import find_map_for_scen, load_map, load_scen, parse_scen
from pathserver.maps.scen import printed_precision

MOVINGAI = Path(__file__).resolve().parents[2] / ".." / "shared" / "movingai"


def movingai_or_skip() -> Path:
    if not MOVINGAI.is_dir():
        pytest.skip(f"{MOVINGAI} is absent")
    return MOVINGAI


@pytest.mark.parametrize(
    "text, precision",
    [("290.764", 1e-3), ("12.34", 1e-2), ("123", 1.0), ("2.00000000", 1e-8), ("1.5e3", 100.0), ("0.5", 0.1)],
)
def test_printed_precision(text, precision):
    assert printed_precision(text) == pytest.approx(precision, rel=1e-12)


def test_tab_and_space_separated_versions():
    tabbed = parse_scen("version 1\n3\tmaps/dao/arena.map\t49\t49\t1\t11\t40\t12\t42.4558\n")
    spaced = parse_scen("version 1.0\n3 maps\\wc3maps\\arena.map 49 49 1 11 40 12 42.46\r\n\n")
    for scenarios, precision in ((tabbed, 1e-4), (spaced, 1e-2)):
        (scenario,) = scenarios
        assert scenario.map_name == "arena.map"
        assert (scenario.bucket, scenario.width, scenario.height) == (3, 49, 49)
        assert scenario.start == (1, 11) and scenario.goal == (40, 12)
        assert scenario.precision == pytest.approx(precision) and scenario.line == 2


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", "line 1: expected 'version 1'"),
        ("version 2\n", "line 1: unsupported"),
        ("version 1\n0 a.map 4 4 1 1 2\n", "line 2: has 7 fields, expected 9"),
        ("version 1\n0 a.map 4 4 1 x 2 2 1\n", "line 2: bucket, size and coordinates must be integers"),
        ("version 1\n0 a.map 4 4 1 1 2 2 far\n", "line 2: optimal length 'far' is not a number"),
        ("version 1\n0 a.map 4 4 1 1 2 2 nan\n", "is not a number"),
        ("version 1\n0 a.map 4 4 1 1 4 2 3\n", "line 2: goal (4, 2) is outside the 4x4 map"),
    ],
)
def test_malformed(text, expected):
    with pytest.raises(MapLoadError) as info:
        parse_scen(text, "s.scen")
    assert str(info.value).startswith("s.scen: ") and expected in str(info.value)


def test_binary_scen_file(tmp_path):
    path = tmp_path / "g.map.scen"
    path.write_bytes(bytes(range(256)))
    with pytest.raises(MapLoadError, match="g.map.scen"):
        load_scen(path)


def test_find_map_for_scen(tmp_path):
    (tmp_path / "a.map").write_text("")
    assert find_map_for_scen(tmp_path / "a.map.scen") == tmp_path / "a.map"
    assert find_map_for_scen(tmp_path / "a.scen") == tmp_path / "a.map"
    with pytest.raises(MapLoadError, match="no map b.map beside it"):
        find_map_for_scen(tmp_path / "b.map.scen")


def test_every_movingai_scen_matches_its_map():
    folder = movingai_or_skip()
    paths = sorted(folder.glob("*/*.map.scen"))
    assert len(paths) == 20
    for path in paths:
        scenarios = load_scen(path)
        map_path = find_map_for_scen(path)
        gridmap = load_map(map_path)
        assert scenarios, path
        assert {s.map_name for s in scenarios} == {map_path.name}
        assert {(s.width, s.height) for s in scenarios} == {(gridmap.width, gridmap.height)}
        assert all(0 < s.precision <= 1 for s in scenarios)


def test_icecrown_has_exactly_three_unusable_problems():
    path = movingai_or_skip() / "wc3maps512" / "icecrown.map.scen"
    gridmap = load_map(find_map_for_scen(path))
    scenarios = load_scen(path)
    assert len(scenarios) == 1280
    bad = [s.line for s in scenarios if not (gridmap.walkable[s.start[::-1]] and gridmap.walkable[s.goal[::-1]])]
    assert bad == [76, 148, 1070]
    assert {s.precision for s in scenarios} == {0.01}
