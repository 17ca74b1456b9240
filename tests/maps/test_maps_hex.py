"""Hex maps in map files: sidecar keys, round trips, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pathserver.grid.gridmap import GridMap
from pathserver.hexes import LAYOUTS, tile_size_of
from pathserver.maps import MapRegistry, load_map, save_map
from grids import load_error, write_file

SMALL = "type octile\nheight 3\nwidth 4\nmap\n.@..\n....\n..@.\n"


def assert_same_hex_map(a: GridMap, b: GridMap) -> None:
    assert (a.shape, a.layout) == (b.shape, b.layout) == ("hex", a.layout)
    assert (a.walkable == b.walkable).all() and (a.cost == b.cost).all()
    assert a.origin == b.origin
    assert tile_size_of(a.cell_size) == tile_size_of(b.cell_size)


# -- round trips ----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".map", ".png"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("cell_size", [1.0, 40.0, (32.0, 28.0), (12.5, 7.0), (15.0, 15.0)])
def test_round_trip_keeps_layout_and_tile_size(tmp_path, suffix, layout, cell_size):
    rng = np.random.default_rng(LAYOUTS.index(layout))
    walkable = rng.random((5, 7)) > 0.3
    cost = np.where(rng.random((5, 7)) > 0.5, rng.choice([1.0, 2.0, 3.7], (5, 7)), 1.0)
    for origin in ((0.0, 0.0), (-3.5, 2.25)):
        original = GridMap(walkable, cost, shape="hex", layout=layout, cell_size=cell_size, origin=origin)
        path = tmp_path / f"level{suffix}"
        save_map(original, path)
        loaded = load_map(path)
        assert_same_hex_map(original, loaded)
        assert loaded.cell_size == original.cell_size
        assert (loaded.grid_to_world([(3, 2)]) == original.grid_to_world([(3, 2)])).all()


def test_round_trip_through_an_existing_toml_sidecar(tmp_path):
    path = write_file(tmp_path / "m.map", SMALL)
    write_file(tmp_path / "m.toml", 'shape = "hex"\nlayout = "odd-q"\ncell_size = [32, 28]\n')
    gridmap = load_map(path)
    assert (gridmap.layout, gridmap.cell_size) == ("odd-q", (32.0, 28.0))
    save_map(GridMap(gridmap.walkable, shape="hex", layout="even-r", cell_size=(20.0, 24.0)), path)
    assert not (tmp_path / "m.json").exists()
    loaded = load_map(path)
    assert (loaded.layout, loaded.cell_size) == ("even-r", (20.0, 24.0))


def test_saving_a_square_map_over_a_hex_sidecar_drops_the_hex_keys(tmp_path):
    path = tmp_path / "m.png"
    save_map(GridMap(np.ones((2, 3), bool), shape="hex", layout="odd-r", cell_size=(8.0, 9.0)), path)
    assert json.loads((tmp_path / "m.json").read_text()) == {"shape": "hex", "layout": "odd-r", "cell_size": [8.0, 9.0]}
    save_map(GridMap(np.ones((2, 3), bool)), path)
    loaded = load_map(path)
    assert (loaded.shape, loaded.layout, loaded.cell_size) == ("square", None, 1.0)


def test_sidecar_and_keywords_make_a_file_a_hex_map(tmp_path):
    path = write_file(tmp_path / "m.map", SMALL)
    assert load_map(path, shape="hex", layout="even-q").layout == "even-q"
    write_file(tmp_path / "m.json", json.dumps({"shape": "hex", "layout": "odd-r", "cell_size": 64}))
    gridmap = load_map(path)
    assert (gridmap.shape, gridmap.layout, gridmap.cell_size, gridmap.hex > 0) == ("hex", "odd-r", 64.0, True)
    assert load_map(path, layout="odd-q").layout == "odd-q"  # a keyword wins over the sidecar
    assert load_map(path, sidecar=False).shape == "square"


def test_a_served_hex_map_file_is_a_hex_map(tmp_path):
    write_file(tmp_path / "h.map", SMALL)
    write_file(tmp_path / "h.json", json.dumps({"shape": "hex", "layout": "even-r", "cell_size": [32, 28]}))
    registry = MapRegistry(tmp_path)
    registry.load_all()
    assert (registry.get("h").layout, registry.get("h").cell_size) == ("even-r", (32.0, 28.0))


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sidecar, expected",
    [
        ({"shape": "hexagon"}, "m.json: field 'shape': must be one of 'square', 'hex', got 'hexagon'"),
        ({"shape": "hex"}, "m.json: field 'layout': a hex map needs a layout: one of 'odd-r', 'even-r'"),
        ({"shape": "hex", "layout": "odd"}, "m.json: field 'layout': must be one of 'odd-r', 'even-r', 'odd-q', "
                                            "'even-q', got 'odd'"),
        ({"shape": "hex", "layout": None}, "m.json: field 'layout': must be one of"),
        ({"layout": "odd-r"}, "m.json: field 'layout': is for hex maps"),
        ({"shape": "square", "layout": "odd-r"}, "m.json: field 'layout': is for hex maps"),
        ({"cell_size": [2, 3]}, "m.json: field 'cell_size': a tile size [w, h] is for hex maps"),
        ({"shape": "hex", "layout": "odd-r", "cell_size": [2]}, "m.json: field 'cell_size': must be a finite number"),
        ({"shape": "hex", "layout": "odd-r", "cell_size": [2, 0]}, "field 'cell_size': must be a finite number > 0"),
        ({"shape": "hex", "layout": "odd-r", "cell_size": "32"}, "field 'cell_size': must be a finite number > 0"),
    ],
)
def test_sidecar_hex_keys_malformed(tmp_path, sidecar, expected):
    path = write_file(tmp_path / "m.map", SMALL)
    write_file(tmp_path / "m.json", json.dumps(sidecar))
    assert expected in load_error(path)


def test_keyword_errors_name_the_argument(tmp_path):
    path = write_file(tmp_path / "m.map", SMALL)
    assert "load_map argument: field 'layout': a hex map needs a layout" in load_error(path, shape="hex")
    assert "load_map argument: field 'layout': must be one of" in load_error(path, shape="hex", layout="odd-s")
