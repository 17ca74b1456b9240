"""Floors and links in map files (issue #35): a sidecar's ``floors`` and ``links`` for
``.map`` and ``.png``, Tiled's ``floor`` layers and ``links`` object layer, each loading to
the GridMap the API builds from the same floors and links, round trips, and bad input
refused naming the file and the field."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from pathserver.grid.gridmap import GridMap
from pathserver.grid.search import find_path
from pathserver.maps import MapRegistry, load_map, save_map
from pathserver.maps.files import floor_layers
from grids import load_error, write_file

# Two floors of 4 x 3, one under another as the .map holds them (floor 0 on top).
FLOORS_MAP = """type octile
height 6
width 4
map
..@.
..@.
....
.@@.
....
@...
"""
LINKS = [
    {"from": [3, 0], "to": [0, 0, 1], "cost": 2, "tag": "ladder"},
    {"from": [1, 2, 0], "to": [3, 2, 1], "cost": 0, "two_way": False},
]


def floors_of(text: str) -> np.ndarray:
    """bool (floors, 3, 4) of FLOORS_MAP-like rows, 3 rows a floor."""
    rows = [line for line in text.splitlines()[4:]]
    grid = np.array([[ch == "." for ch in row] for row in rows])
    return grid.reshape(-1, 3, grid.shape[1])


def assert_same_map(loaded: GridMap, expected: GridMap) -> None:
    """The same floors, walkable cells and costs per floor, tags, and links."""
    assert loaded.floors == expected.floors
    assert (loaded.floor_height, loaded.width) == (expected.floor_height, expected.width)
    for layer in ("walkable", "cost"):
        np.testing.assert_array_equal(floor_layers(loaded, getattr(loaded, layer)),
                                      floor_layers(expected, getattr(expected, layer)), err_msg=layer)
    if expected.tags is None:
        assert loaded.tags is None
    else:
        np.testing.assert_array_equal(floor_layers(loaded, loaded.tags), floor_layers(expected, expected.tags))
    assert loaded.tag_names == expected.tag_names
    for field in ("ends", "cost", "two_way"):
        np.testing.assert_array_equal(getattr(loaded.links, field), getattr(expected.links, field), err_msg=field)
    assert loaded.links.tags == expected.links.tags


def api_map(links=LINKS, **kwargs) -> GridMap:
    floors = floors_of(FLOORS_MAP)
    tags = np.zeros(floors.shape, dtype=np.uint8)
    return GridMap(floors, floors=2, links=links, tags=tags, tag_names={"ladder": 1}, **kwargs)


# -- sidecars: .map and .png ----------------------------------------------------------------


def test_map_sidecar_floors_and_links_load_as_the_api_builds_them(tmp_path):
    path = write_file(tmp_path / "two.map", FLOORS_MAP)
    write_file(tmp_path / "two.json", json.dumps({"floors": 2, "links": LINKS}))
    loaded = load_map(path)
    assert_same_map(loaded, api_map())
    # The links join the floors: the path takes one and says which.
    result = find_path(loaded, (0, 0), (0, 1, 1))
    assert result.status == "found" and len(result.links) == 1


def test_png_with_a_toml_sidecar_of_three_floors(tmp_path):
    rng = np.random.default_rng(3)
    floors = rng.random((3, 5, 6)) > 0.25
    grey = np.where(np.concatenate(floors), 255, 0).astype(np.uint8)
    Image.fromarray(grey).save(tmp_path / "three.png")
    write_file(tmp_path / "three.toml", """floors = 3

[[links]]
from = [0, 0, 0]
to = [5, 4, 2]
cost = 7.5
two_way = false

[[links]]
from = [2, 2, 1]
to = [2, 2, 2]
cost = 1
""")
    links = [{"from": [0, 0, 0], "to": [5, 4, 2], "cost": 7.5, "two_way": False},
             {"from": [2, 2, 1], "to": [2, 2, 2], "cost": 1}]
    assert_same_map(load_map(tmp_path / "three.png"), GridMap(floors, floors=3, links=links))


def test_heights_and_tags_of_a_sidecar_hold_every_floor(tmp_path):
    path = write_file(tmp_path / "two.map", FLOORS_MAP)
    tags = [[0, 0, 0, 2]] * 3 + [[2, 0, 0, 0]] * 3
    heights = [[float(y)] * 4 for y in range(6)]
    write_file(tmp_path / "two.json", json.dumps(
        {"floors": 2, "links": LINKS, "tags": tags, "tag_names": {"mud": 2}, "heights": heights}))
    loaded = load_map(path)
    np.testing.assert_array_equal(floor_layers(loaded, loaded.tags), np.array(tags).reshape(2, 3, 4))
    np.testing.assert_array_equal(floor_layers(loaded, loaded.heights), np.array(heights).reshape(2, 3, 4))
    # "ladder" is named by the links only: it gets a value no cell uses.
    assert loaded.tag_names == {"mud": 2, "ladder": 1}


def test_a_link_tag_can_be_barred_by_a_class(tmp_path):
    path = write_file(tmp_path / "two.map", FLOORS_MAP)
    write_file(tmp_path / "two.json", json.dumps(
        {"floors": 2, "links": LINKS[:1], "classes": {"cat": {"ladder": None}}}))
    loaded = load_map(path)
    assert find_path(loaded, (0, 0), (0, 1, 1)).status == "found"
    assert find_path(loaded, (0, 0), (0, 1, 1), traversal="cat").status == "no_path"


def test_the_registry_serves_floors_and_links(tmp_path):
    write_file(tmp_path / "two.map", FLOORS_MAP)
    write_file(tmp_path / "two.json", json.dumps({"floors": 2, "links": LINKS}))
    registry = MapRegistry(tmp_path)
    registry.load_all()
    assert_same_map(registry.get("two"), api_map())


# -- Tiled ------------------------------------------------------------------------------------


def tile_layer(name: str, cells: np.ndarray, **properties) -> dict:
    """A tile layer drawing ``cells`` (bool (H, W)): gid 1 (solid) where blocked."""
    layer = {"type": "tilelayer", "name": name, "width": cells.shape[1], "height": cells.shape[0],
             "data": np.where(cells, 0, 1).reshape(-1).tolist()}
    if properties:
        layer["properties"] = [{"name": k, "type": "int", "value": v} for k, v in properties.items()]
    return layer


def polyline(x0, y0, x1, y1, **properties) -> dict:
    kinds = {bool: "bool", int: "int", float: "float", str: "string"}
    return {"id": 1, "x": x0, "y": y0, "polyline": [{"x": 0, "y": 0}, {"x": x1 - x0, "y": y1 - y0}],
            "properties": [{"name": k, "type": kinds[type(v)], "value": v} for k, v in properties.items()]}


def tiled_floors_doc(objects: list, **extra) -> dict:
    floors = floors_of(FLOORS_MAP)
    doc = {
        "type": "map", "width": 4, "height": 3, "tilewidth": 16, "tileheight": 16, "orientation": "orthogonal",
        "layers": [
            tile_layer("scenery", np.ones((3, 4), dtype=bool)),
            # Floor 1 first in the file: the property numbers the floors, not the order.
            {"type": "group", "name": "upstairs", "properties": [{"name": "floor", "type": "int", "value": 1}],
             "layers": [tile_layer("ground", floors[1])]},
            tile_layer("downstairs", floors[0], floor=0),
            {"type": "objectgroup", "name": "links", "objects": objects},
        ],
        "tilesets": [{"firstgid": 1, "tilecount": 2, "tiles": [
            {"id": 0, "properties": [{"name": "solid", "type": "bool", "value": True}]},
            {"id": 1, "properties": [{"name": "tag", "type": "string", "value": "ladder"}]}]}],
    }
    doc.update(extra)
    return doc


TILED_LINKS = [
    # From the centre of (3, 0) to the centre of (0, 0) on floor 1.
    polyline(56, 8, 8, 8, cost=2, to_floor=1, tag="ladder"),
    # Any point inside a cell names it; a polyline's middle points do not matter.
    dict(polyline(17, 40, 63, 47, cost=0.0, two_way=False, to_floor=1), polyline=[
        {"x": 0, "y": 0}, {"x": 20, "y": -30}, {"x": 46, "y": 7}]),
]


def test_tiled_floor_layers_and_link_polylines_load_as_the_api_builds_them(tmp_path):
    path = write_file(tmp_path / "two.tmj", json.dumps(tiled_floors_doc(TILED_LINKS)))
    assert_same_map(load_map(path), api_map())


def test_tiled_links_take_their_floor_from_their_layer_or_group(tmp_path):
    doc = tiled_floors_doc([])
    doc["layers"][1]["layers"].append({"type": "objectgroup", "name": "links", "objects": [
        polyline(8, 8, 24, 8, cost=1)]})
    doc["layers"][3]["properties"] = [{"name": "floor", "type": "int", "value": 0}]
    doc["layers"][3]["objects"] = [polyline(8, 8, 8, 8, cost=3, to_floor=1)]
    loaded = load_map(write_file(tmp_path / "two.tmj", json.dumps(doc)))
    assert loaded.links.ends.tolist() == [[[0, 0, 1], [1, 0, 1]], [[0, 0, 0], [0, 0, 1]]]


def test_tiled_without_floor_layers_is_one_floor(tmp_path):
    doc = tiled_floors_doc([polyline(8, 8, 56, 40, cost=1)])
    doc["layers"] = [doc["layers"][0], doc["layers"][3]]
    loaded = load_map(write_file(tmp_path / "one.tmj", json.dumps(doc)))
    assert loaded.floors == 1 and loaded.links.ends.tolist() == [[[0, 0, 0], [3, 2, 0]]]


def test_tiled_link_ends_follow_rotation_and_isometric_coordinates(tmp_path):
    doc = tiled_floors_doc([])
    doc["layers"] = [doc["layers"][0], doc["layers"][3]]
    # Turned 90 degrees clockwise about (8, 8): the end 32 px right lands 32 px down.
    doc["layers"][1]["objects"] = [dict(polyline(8, 8, 40, 8, cost=1), rotation=90)]
    turned = load_map(write_file(tmp_path / "turned.tmj", json.dumps(doc)))
    assert turned.links.ends.tolist() == [[[0, 0, 0], [0, 2, 0]]]
    # Isometric objects measure both axes in tileheight pixels.
    doc["orientation"], doc["tilewidth"] = "isometric", 32
    doc["layers"][1]["objects"] = [polyline(8, 8, 40, 24, cost=1)]
    iso = load_map(write_file(tmp_path / "iso.tmj", json.dumps(doc)))
    assert iso.links.ends.tolist() == [[[0, 0, 0], [2, 1, 0]]]


# -- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".map", ".png", ".tmj"])
@pytest.mark.parametrize("variant", ["plain", "costs and tags", "hex"])
def test_round_trip(tmp_path, suffix, variant):
    rng = np.random.default_rng(7)
    floors = rng.random((3, 5, 6)) > 0.2
    kwargs: dict = {}
    if variant == "costs and tags":
        kwargs.update(cost=np.where(rng.random(floors.shape) < 0.3, 2.5, 1.0),
                      tags=(rng.random(floors.shape) < 0.2).astype(np.uint8) * 3,
                      tag_names={"mud": 3, "lift": 1}, classes={"cat": {"lift": None}})
    elif variant == "hex":
        kwargs.update(shape="hex", layout="odd-q", cell_size=(32.0, 28.0))
    links = [{"from": [0, 0, 0], "to": [5, 4, 2], "cost": 7.25, "two_way": False},
             {"from": [2, 3, 1], "to": [2, 3, 2], "cost": 0, "tag": "lift"},
             {"from": [5, 0], "to": [1, 4], "cost": 1e-3}]
    if variant != "costs and tags":
        del links[1]["tag"]
    gridmap = GridMap(floors, kwargs.pop("cost", None), floors=3, links=links, **kwargs)
    save_map(gridmap, tmp_path / f"level{suffix}")
    loaded = load_map(tmp_path / f"level{suffix}")
    assert_same_map(loaded, gridmap)
    assert (loaded.shape, loaded.layout, loaded.cell_size) == (gridmap.shape, gridmap.layout, gridmap.cell_size)
    assert loaded.classes == gridmap.classes


def test_round_trip_through_an_existing_toml_sidecar(tmp_path):
    write_file(tmp_path / "two.toml", "floors = 2\n")
    gridmap = api_map()
    save_map(gridmap, tmp_path / "two.map")
    assert not (tmp_path / "two.json").exists()
    assert_same_map(load_map(tmp_path / "two.map"), gridmap)


def test_a_link_only_tag_layer_is_not_written(tmp_path):
    save_map(api_map(), tmp_path / "two.map")
    sidecar = json.loads((tmp_path / "two.json").read_text())
    assert "tags" not in sidecar and sidecar["tag_names"] == {"ladder": 1}
    assert sidecar["floors"] == 2 and len(sidecar["links"]) == 2


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("sidecar, where, reason", [
    ({"floors": 0}, "field 'floors'", "1..16"),
    ({"floors": "2"}, "field 'floors'", "an int"),
    ({"floors": 17}, "field 'floors'", "1..16"),
    ({"floors": 4}, "field 'floors'", "6 rows do not split into 4 floors"),
    ({"links": {"from": [0, 0]}}, "field 'links'", "must be a list"),
    ({"floors": 2, "links": [{"from": [4, 0], "to": [0, 0], "cost": 1}]}, "field 'links[0].from'", "outside the map"),
    ({"floors": 2, "links": [{"from": [0, 0], "to": [0, 3, 1], "cost": 1}]}, "field 'links[0].to'", "outside the map"),
    ({"floors": 2, "links": [{"from": [0, 0], "to": [0, 0, 2], "cost": 1}]}, "field 'links[0].to[2]'",
     "floor 2 is not one of the map's floors 0..1"),
    ({"floors": 2, "links": [LINKS[0], {"from": [0, 0], "to": [1, 0], "cost": -1}]}, "field 'links[1].cost'",
     "must be >= 0"),
    ({"floors": 2, "links": [{"from": [0, 0], "to": [1, 0]}]}, "field 'links[0].cost'", "needs a 'cost'"),
    ({"floors": 2, "links": [{"from": [0, 0], "to": [1, 0], "cost": 1, "way": 2}]}, "field 'links[0].way'",
     "unknown field"),
])
def test_bad_sidecar_floors_and_links_name_the_sidecar_and_field(tmp_path, sidecar, where, reason):
    path = write_file(tmp_path / "two.map", FLOORS_MAP)
    write_file(tmp_path / "two.json", json.dumps(sidecar))
    message = load_error(path)
    assert f"{tmp_path / 'two.json'}: {where}: " in message and reason in message, message


def test_floors_and_links_do_not_go_in_a_tiled_sidecar(tmp_path):
    path = write_file(tmp_path / "two.tmj", json.dumps(tiled_floors_doc(TILED_LINKS)))
    write_file(tmp_path / "two.toml", "floors = 2\n")
    assert "field 'floors': does not apply to tiled maps" in load_error(path)


def _renumber(doc):
    doc["layers"][2]["properties"][0]["value"] = 2


def _drop_cost(doc):
    doc["layers"][3]["objects"][1]["properties"] = []


def _off_the_map(doc):
    doc["layers"][3]["objects"][1]["x"] = -3


def _missing_floor(doc):
    doc["layers"][3]["objects"][0]["properties"][1]["value"] = 2


def _negative_cost(doc):
    doc["layers"][3]["objects"][0]["properties"][0]["value"] = -2


def _rectangle(doc):
    del doc["layers"][3]["objects"][1]["polyline"]


def _empty_group(doc):
    doc["layers"][1]["layers"] = []


def _not_a_floor_number(doc):
    doc["layers"][2]["properties"][0]["value"] = "0"


@pytest.mark.parametrize("change, where, reason", [
    (_renumber, "field 'layers'", "the layers marked 'floor' are floors [1, 2]; number them 0..1"),
    (_not_a_floor_number, "field 'layers[2].properties' floor", "must be an integer >= 0"),
    (_empty_group, "field 'layers[1]'", "a floor's group has no tile layer"),
    (_drop_cost, "field 'layers[3].objects[1].cost'", "a link needs a 'cost'"),
    (_off_the_map, "field 'layers[3].objects[1].from'", "(-1, 2) is outside the map"),
    (_missing_floor, "field 'layers[3].objects[0].to[2]'", "floor 2 is not one of the map's floors 0..1"),
    (_negative_cost, "field 'layers[3].objects[0].cost'", "a link's cost must be >= 0, got -2"),
    (_rectangle, "field 'layers[3].objects[1]'", "a link is a polyline"),
])
def test_bad_tiled_floors_and_links_name_the_file_and_field(tmp_path, change, where, reason):
    doc = tiled_floors_doc(json.loads(json.dumps(TILED_LINKS)))
    change(doc)
    path = write_file(tmp_path / "two.tmj", json.dumps(doc))
    message = load_error(path)
    assert f"{path}: {where}: " in message and reason in message, message
