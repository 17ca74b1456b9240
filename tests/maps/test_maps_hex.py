"""Hex maps in map files: sidecar keys, Tiled's hexagonal maps, round trips, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pathserver.grid.gridmap import GridMap
from pathserver.hexes import LAYOUTS, neighbours, tile_size_of
from pathserver.maps import MapRegistry, load_map, save_map
from grids import load_error, write_file

SMALL = "type octile\nheight 3\nwidth 4\nmap\n.@..\n....\n..@.\n"
#: Tiled's staggeraxis and staggerindex -> the layout they are.
STAGGERS = {("y", "odd"): "odd-r", ("y", "even"): "even-r", ("x", "odd"): "odd-q", ("x", "even"): "even-q"}


def hex_tiled(axis: str, index: str, side=None, width=4, height=3, tilewidth=32, tileheight=28, **extra) -> dict:
    """A small hexagonal Tiled map drawn by hand: tile 1 solid, tile 2 cost 3."""
    doc = {
        "type": "map", "orientation": "hexagonal", "staggeraxis": axis, "staggerindex": index,
        "width": width, "height": height, "tilewidth": tilewidth, "tileheight": tileheight, "infinite": False,
        "layers": [{"type": "tilelayer", "name": "ground", "width": width, "height": height,
                    "data": [0, 1, 0, 2, 0, 0, 1, 0, 2, 0, 0, 0][:width * height]}],
        "tilesets": [{"firstgid": 1, "tilecount": 2, "tiles": [
            {"id": 0, "properties": [{"name": "solid", "type": "bool", "value": True}]},
            {"id": 1, "properties": [{"name": "cost", "type": "int", "value": 3}]},
        ]}],
    }
    if side is not None:
        doc["hexsidelength"] = side
    doc.update(extra)
    return doc


def tiled_centre(axis: str, index: str, tilewidth: int, tileheight: int, side: int, x: int, y: int) -> tuple:
    """Where Tiled draws the centre of tile (x, y): libtiled's HexagonalRenderer::
    tileToScreenCoords (the top-left of the tile's box) plus half the tile, transcribed
    (even sizes, so its whole-pixel arithmetic is exact)."""
    stagger_x, stagger_even = axis == "x", index == "even"
    side_x, side_y = (side, 0) if stagger_x else (0, side)
    column_width = (tilewidth - side_x) // 2 + side_x
    row_height = (tileheight - side_y) // 2 + side_y
    if stagger_x:
        left = x * column_width
        top = y * (tileheight + side_y) + (row_height if (x & 1) ^ stagger_even else 0)
    else:
        left = x * (tilewidth + side_x) + (column_width if (y & 1) ^ stagger_even else 0)
        top = y * row_height
    return left + tilewidth / 2, top + tileheight / 2


def tiled_neighbours(axis: str, index: str, x: int, y: int) -> set:
    """The six cells next to (x, y) as Tiled has them: libtiled's HexagonalRenderer
    topLeft / topRight / bottomLeft / bottomRight, transcribed, and the two along the
    unstaggered axis."""
    stagger_index = 1 if index == "even" else 0
    if axis == "y":
        if (y & 1) ^ stagger_index:
            diagonal = [(x, y - 1), (x + 1, y - 1), (x, y + 1), (x + 1, y + 1)]
        else:
            diagonal = [(x - 1, y - 1), (x, y - 1), (x - 1, y + 1), (x, y + 1)]
        return set(diagonal) | {(x - 1, y), (x + 1, y)}
    if (x & 1) ^ stagger_index:
        diagonal = [(x - 1, y), (x + 1, y), (x - 1, y + 1), (x + 1, y + 1)]
    else:
        diagonal = [(x - 1, y - 1), (x + 1, y - 1), (x - 1, y), (x + 1, y)]
    return set(diagonal) | {(x, y - 1), (x, y + 1)}


def assert_same_hex_map(a: GridMap, b: GridMap) -> None:
    assert (a.shape, a.layout) == (b.shape, b.layout) == ("hex", a.layout)
    assert (a.walkable == b.walkable).all() and (a.cost == b.cost).all()
    assert a.origin == b.origin
    assert tile_size_of(a.cell_size) == tile_size_of(b.cell_size)


# -- round trips ----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".map", ".png", ".tmj", ".json"])
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
        if suffix in (".map", ".png"):  # the sidecar keeps a number a number
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
    write_file(tmp_path / "t.tmj", json.dumps(hex_tiled("x", "odd", side=16)))
    registry = MapRegistry(tmp_path)
    registry.load_all()
    assert (registry.get("h").layout, registry.get("h").cell_size) == ("even-r", (32.0, 28.0))
    assert registry.get("t").layout == "odd-q"


# -- Tiled's hexagonal maps -----------------------------------------------------------------


@pytest.mark.parametrize("axis, index", list(STAGGERS))
def test_tiled_hexagonal_maps_load_as_their_layout(tmp_path, axis, index):
    side = 14 if axis == "y" else 16  # half the tile across: Godot's geometry
    path = write_file(tmp_path / "h.tmj", json.dumps(hex_tiled(axis, index, side=side)))
    gridmap = load_map(path)
    assert (gridmap.shape, gridmap.layout) == ("hex", STAGGERS[axis, index])
    assert gridmap.walkable.tolist() == [[True, False, True, True], [True, True, False, True], [True, True, True, True]]
    assert gridmap.cost[0, 3] == 3.0 and gridmap.cost[2, 0] == 3.0
    assert (gridmap.cell_size, gridmap.origin) == ((32.0, 28.0), (0.0, 0.0))
    for y in range(3):
        for x in range(4):
            assert set(neighbours(gridmap.layout, x, y)) == tiled_neighbours(axis, index, x, y)
            assert gridmap.cell_to_world(x, y) == pytest.approx(tiled_centre(axis, index, 32, 28, side, x, y))


@pytest.mark.parametrize("axis, index", list(STAGGERS))
@pytest.mark.parametrize("side", [0, 8, 10, None])
def test_tiled_centres_hold_for_any_hexsidelength(tmp_path, axis, index, side):
    """Another hexsidelength spaces Tiled's rows (columns) otherwise than Godot's quarter
    overlap: the transform is fitted so that every centre stays where Tiled draws it (a
    missing hexsidelength is 0, as Tiled reads it)."""
    path = write_file(tmp_path / "h.tmj", json.dumps(hex_tiled(axis, index, side=side)))
    gridmap = load_map(path)
    assert gridmap.layout == STAGGERS[axis, index]
    for y in range(3):
        for x in range(4):
            expected = tiled_centre(axis, index, 32, 28, side or 0, x, y)
            assert gridmap.cell_to_world(x, y) == pytest.approx(expected)
            assert gridmap.world_to_cell(*expected) == (x, y)
    # The size along the staggered rows (columns) stays the tile's.
    assert tile_size_of(gridmap.cell_size)[0 if axis == "y" else 1] == (32.0 if axis == "y" else 28.0)


def test_tiled_hexagonal_properties_and_sidecar_override_the_transform(tmp_path):
    doc = hex_tiled("y", "odd", side=8, properties=[
        {"name": "cell_size", "type": "string", "value": "[32, 28]"},
        {"name": "origin_x", "type": "float", "value": 5},
    ])
    path = write_file(tmp_path / "h.tmj", json.dumps(doc))
    gridmap = load_map(path)
    # cell_size replaces the fitted size; origin_y keeps the fitted shift ((28 - 24) / 2).
    assert gridmap.cell_size == (32.0, 28.0) and gridmap.origin == (5.0, 2.0)
    doc["properties"] = [{"name": "cell_size", "type": "float", "value": 30}]
    write_file(path, json.dumps(doc))
    assert load_map(path).cell_size == 30.0
    write_file(tmp_path / "h.toml", 'cell_size = [40, 36]\norigin = [0, 0]\n')
    gridmap = load_map(path)
    assert (gridmap.cell_size, gridmap.origin) == ((40.0, 36.0), (0.0, 0.0))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_hex_maps_are_written_as_hexagonal_tiled_maps(tmp_path, layout):
    path = tmp_path / "h.tmj"
    save_map(GridMap(np.ones((2, 3), bool), shape="hex", layout=layout, cell_size=(32.0, 28.0)), path)
    doc = json.loads(path.read_text())
    axis, index = next(stagger for stagger, named in STAGGERS.items() if named == layout)
    assert (doc["orientation"], doc["staggeraxis"], doc["staggerindex"]) == ("hexagonal", axis, index)
    assert (doc["tilewidth"], doc["tileheight"], doc["hexsidelength"]) == (32, 28, 14 if axis == "y" else 16)
    assert "properties" not in doc  # the header says it all


def test_square_tiled_maps_are_written_as_before(tmp_path):
    path = tmp_path / "s.tmj"
    save_map(GridMap(np.ones((2, 3), bool), cell_size=16.0), path)
    doc = json.loads(path.read_text())
    assert doc["orientation"] == "orthogonal" and doc["tilewidth"] == doc["tileheight"] == 16
    assert not {"hexsidelength", "staggeraxis", "staggerindex"} & set(doc)


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


def test_shape_and_layout_do_not_apply_to_tiled_maps(tmp_path):
    path = write_file(tmp_path / "h.tmj", json.dumps(hex_tiled("y", "odd", side=14)))
    write_file(tmp_path / "h.toml", 'layout = "even-q"\n')
    assert "field 'layout': does not apply to tiled maps" in load_error(path)
    square = dict(hex_tiled("y", "odd"), orientation="orthogonal")
    path = write_file(tmp_path / "s.tmj", json.dumps(square))
    write_file(tmp_path / "s.toml", 'cell_size = [32, 28]\n')
    assert "s.toml: field 'cell_size': a tile size [w, h] is for hex maps" in load_error(path)


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"staggeraxis": None}, "field 'staggeraxis': a hexagonal map needs 'x' or 'y', got None"),
        ({"staggeraxis": "z"}, "field 'staggeraxis': a hexagonal map needs 'x' or 'y', got 'z'"),
        ({"staggerindex": None}, "field 'staggerindex': a hexagonal map needs 'odd' or 'even', got None"),
        ({"staggerindex": 1}, "field 'staggerindex': a hexagonal map needs 'odd' or 'even', got 1"),
        ({"hexsidelength": -2}, "field 'hexsidelength': must be a number >= 0, got -2"),
        ({"hexsidelength": "14"}, "field 'hexsidelength': must be a number >= 0"),
        ({"tileheight": None}, "field 'tileheight': a hexagonal map needs a number > 0, got None"),
        ({"tilewidth": None}, "field 'tilewidth': a hexagonal map needs a number > 0, got None"),
        ({"properties": [{"name": "cell_size", "type": "string", "value": "[1, 2, 3]"}]},
         "field 'properties' cell_size: must be a number > 0 or a string of JSON [w, h]"),
        ({"properties": [{"name": "cell_size", "type": "string", "value": "[1,"}]},
         "field 'properties' cell_size: invalid JSON"),
        ({"orientation": "staggered"}, "field 'orientation': 'staggered' maps are not supported"),
    ],
)
def test_tiled_hexagonal_malformed(tmp_path, change, expected):
    doc = hex_tiled("y", "odd", side=14)
    for key, value in change.items():
        if value is None:
            doc.pop(key)
        else:
            doc[key] = value
    path = write_file(tmp_path / "bad.tmj", json.dumps(doc))
    assert expected in load_error(path)
