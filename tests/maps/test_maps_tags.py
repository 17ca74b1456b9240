"""Tag layers and unit classes in map files: every source of tags (sidecar rows, .npy and
PNG files, PNG tag colours, Tiled tile properties), searches under a class on what was
loaded, save -> load round trips, and bad sources refused with the file and the reason."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pathserver.errors import RequestError
from pathserver.grid.gridmap import GridMap
from pathserver.grid.search import find_path
from pathserver.maps import MapRegistry, load_map, save_map
from pathserver.maps.formats import load_map_with_sources
from grids import load_error, write_file

# A river (row 2) with a ford at its east end: walkers wade through, boats stay on it...
# and the class "walker" keeps out of the water, so it crosses at the ford.
RIVER = "type octile\nheight 5\nwidth 7\nmap\n" + ".......\n" * 5
RIVER_TAGS = [[0] * 7, [0] * 7, [1] * 6 + [2], [0] * 7, [0] * 7]
NAMES = {"water": 1, "ford": 2}
CLASSES = {"walker": {"water": None}, "wader": {"water": 3.0, "ford": 1.5}}
WATER_RGB = (0x10, 0x30, 0xA0)
FORD_RGB = (0xC0, 0xA0, 0x60)




def river_rgb() -> np.ndarray:
    """The river as an RGB image: white ground, blue water, a sandy ford."""
    rgb = np.full((5, 7, 3), 255, np.uint8)
    rgb[2, :6] = WATER_RGB
    rgb[2, 6] = FORD_RGB
    return rgb


def assert_river(gridmap: GridMap, names=NAMES, classes=CLASSES) -> None:
    assert gridmap.tags is not None and gridmap.tags.dtype == np.uint8
    assert gridmap.tag_names == names
    by_value = np.array([0, names["water"], names["ford"]])
    assert gridmap.tags.tolist() == by_value[np.array(RIVER_TAGS)].tolist()
    assert gridmap.classes == classes
    straight = find_path(gridmap, (0, 0), (0, 4))
    assert straight.status == "found" and [0, 2] in straight.path.tolist()
    if "walker" in classes:
        walker = find_path(gridmap, (0, 0), (0, 4), traversal="walker")
        assert walker.status == "found" and walker.cost > straight.cost
        crossed = [tuple(p) for p in walker.path.tolist() if p[1] == 2]
        assert crossed == [(6, 2)], walker.path.tolist()  # the ford, never the water
    with pytest.raises(RequestError, match="unknown unit class 'tank'"):
        find_path(gridmap, (0, 0), (0, 4), traversal="tank")


# -- where tags come from -------------------------------------------------------------------


def test_sidecar_rows_names_and_classes(tmp_path):
    path = write_file(tmp_path / "river.map", RIVER)
    write_file(tmp_path / "river.json", json.dumps({"tags": RIVER_TAGS, "tag_names": NAMES, "classes": CLASSES}))
    assert_river(load_map(path))


def test_toml_sidecar_with_blocked_rules(tmp_path):
    path = write_file(tmp_path / "river.map", RIVER)
    rows = ",\n".join(json.dumps(row) for row in RIVER_TAGS)
    write_file(tmp_path / "river.toml", f"tags = [\n{rows}\n]\n\n[tag_names]\nwater = 1\nford = 2\n\n"
                                   '[classes.walker]\nwater = "blocked"\n\n[classes.wader]\nwater = 3\nford = 1.5\n')
    assert_river(load_map(path))


def test_sidecar_tags_from_a_grey_png_and_a_npy(tmp_path):
    path = write_file(tmp_path / "river.map", RIVER)
    (tmp_path / "layers").mkdir()
    Image.fromarray(np.array(RIVER_TAGS, np.uint8)).save(tmp_path / "layers" / "river-tags.png")
    sidecar = {"tags": "layers/river-tags.png", "tag_names": NAMES, "classes": CLASSES}
    write_file(tmp_path / "river.json", json.dumps(sidecar))
    gridmap, sources = load_map_with_sources(path)
    assert_river(gridmap)
    assert tmp_path / "layers" / "river-tags.png" in sources  # watched for hot reload
    # An RGB image: the red value is the tag byte.
    rgb = np.zeros((5, 7, 3), np.uint8)
    rgb[:, :, 0] = RIVER_TAGS
    rgb[:, :, 1] = 200
    Image.fromarray(rgb).save(tmp_path / "layers" / "river-tags.png")
    assert_river(load_map(path))
    np.save(tmp_path / "river.tags.npy", np.array(RIVER_TAGS, np.int64))
    write_file(tmp_path / "river.json", json.dumps({"tags": "river.tags.npy", "tag_names": NAMES, "classes": CLASSES}))
    assert_river(load_map(path))


def test_sidecar_tag_colors_of_a_tags_png(tmp_path):
    path = write_file(tmp_path / "river.map", RIVER)
    rgba = np.dstack([river_rgb(), np.full((5, 7), 255, np.uint8)])
    rgba[0, 0] = (*WATER_RGB, 0)  # transparent: untagged whatever its colour
    Image.fromarray(rgba, "RGBA").save(tmp_path / "paint.png")
    sidecar = {"tags": "paint.png", "tag_colors": {"water": "#1030A0", "ford": ["#c0a060", "#c0a061"]},
               "classes": CLASSES}
    write_file(tmp_path / "river.json", json.dumps(sidecar))
    # Values in sorted name order: ford 1, water 2.
    assert_river(load_map(path), names={"ford": 1, "water": 2})
    write_file(tmp_path / "river.json", json.dumps(dict(sidecar, tag_names={"water": 7})))
    assert_river(load_map(path), names={"water": 7, "ford": 1})


def test_png_map_tag_colours_keep_the_colour_rules(tmp_path):
    path = tmp_path / "river.png"
    Image.fromarray(river_rgb()).save(path)
    sidecar = {"cost_legend": {"#1030a0": 1.0, "#c0a060": 1.0}, "tag_colors": {"water": "#1030a0", "ford": "#c0a060"},
               "tag_names": NAMES, "classes": CLASSES}
    write_file(tmp_path / "river.json", json.dumps(sidecar))
    assert_river(load_map(path))
    # Without the legend the blue is dark enough to be a wall: a tag there would never matter.
    write_file(tmp_path / "river.json", json.dumps(dict(sidecar, cost_legend={"#c0a060": 1.0})))
    message = load_error(path)
    assert "field 'tag_colors'['water']: #1030a0 is a blocked colour" in message and "cost_legend" in message
    write_file(tmp_path / "river.json", json.dumps(dict(sidecar, cost_legend={"#1030a0": None, "#c0a060": 1.0})))
    assert "#1030a0 is blocked by cost_legend" in load_error(path)
    # A light colour is walkable by the grey rule and keeps its cost there.
    Image.fromarray(np.full((2, 2, 3), (0xE0, 0xF0, 0xFF), np.uint8)).save(path)
    write_file(tmp_path / "river.json", json.dumps({"tag_colors": {"ice": "#e0f0ff"}}))
    gridmap = load_map(path)
    assert gridmap.tags.tolist() == [[1, 1], [1, 1]] and gridmap.tag_names == {"ice": 1}
    assert gridmap.walkable.all() and gridmap.cost.min() > 1.0


TAG_TILES = [
    {"id": 0, "properties": [{"name": "solid", "type": "bool", "value": True}]},
    {"id": 1, "properties": [{"name": "tag", "type": "string", "value": "water"}]},
    {"id": 2, "properties": [{"name": "tag", "type": "string", "value": "ford"},
                             {"name": "cost", "type": "float", "value": 1.0}]},
    {"id": 3, "properties": [{"name": "tag", "type": "string", "value": ""}]},
]


def river_tiled(**properties) -> dict:
    gids = [[4] * 7, [0] * 7, [2] * 6 + [3], [0] * 7, [0] * 7]
    doc = {
        "type": "map", "width": 7, "height": 5, "tilewidth": 16, "tileheight": 16, "orientation": "orthogonal",
        "layers": [{"type": "tilelayer", "name": "ground", "width": 7, "height": 5, "data": sum(gids, [])}],
        "tilesets": [{"firstgid": 1, "tilecount": 4, "tiles": copy.deepcopy(TAG_TILES)}],
    }
    if properties:
        doc["properties"] = [{"name": k, "type": "string", "value": v} for k, v in properties.items()]
    return doc


def test_tiled_tile_tags_and_map_properties(tmp_path):
    path = write_file(tmp_path / "river.tmj", json.dumps(river_tiled(classes=json.dumps(CLASSES))))
    # Names in sorted order, no tag_names property: ford 1, water 2.
    assert_river(load_map(path), names={"ford": 1, "water": 2})
    doc = river_tiled(classes=json.dumps(CLASSES), tag_names=json.dumps(NAMES))
    write_file(path, json.dumps(doc))
    assert_river(load_map(path))
    # The sidecar's tag_names and classes win over the map's properties.
    write_file(tmp_path / "river.json", json.dumps({"tag_names": {"water": 9}, "classes": {"walker": {"water": None}}}))
    assert_river(load_map(path), names={"water": 9, "ford": 1}, classes={"walker": {"water": None}})


def test_tiled_tags_layer(tmp_path):
    doc = river_tiled(classes=json.dumps(CLASSES), tag_names=json.dumps(NAMES))
    ground = doc["layers"][0]
    tags_layer = dict(ground, name="tags", data=list(ground["data"]))
    ground["data"] = [0] * 35  # all walkable at cost 1; the tags come from the other layer
    doc["layers"].append(tags_layer)
    path = write_file(tmp_path / "river.tmj", json.dumps(doc))
    assert_river(load_map(path))
    # Another name, through the map property or the sidecar.
    tags_layer["name"] = "terrain kinds"
    write_file(path, json.dumps(doc))
    assert load_map(path).tags.max() == 0  # no layer named "tags": the pathfinding layer's tiles
    doc["properties"].append({"name": "tag_layer", "type": "string", "value": "terrain kinds"})
    write_file(path, json.dumps(doc))
    assert_river(load_map(path))
    doc["properties"].pop()
    write_file(path, json.dumps(doc))
    write_file(tmp_path / "river.json", json.dumps({"tag_layer": "terrain kinds"}))
    assert_river(load_map(path))
    write_file(tmp_path / "river.json", json.dumps({"tag_layer": "nope"}))
    assert "no tile layer named 'nope'" in load_error(path)


def test_tiled_without_tag_properties_has_no_tags(tmp_path):
    doc = river_tiled()
    doc["tilesets"][0]["tiles"] = TAG_TILES[:1]
    path = write_file(tmp_path / "plain.tmj", json.dumps(doc))
    gridmap = load_map(path)
    assert gridmap.tags is None and gridmap.tag_names == {} and gridmap.classes == {}
    write_file(tmp_path / "plain.json", json.dumps({"tag_layer": "ground"}))
    assert "tag_layer is 'ground' but no tile has a 'tag' property" in load_error(path)


def test_keyword_arguments(tmp_path):
    path = write_file(tmp_path / "river.map", RIVER)
    assert_river(load_map(path, tags=np.array(RIVER_TAGS), tag_names=NAMES, classes=CLASSES))


# -- saving ---------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".map", ".png", ".tmj", ".json", ".json+toml"])
@pytest.mark.parametrize("variant", ["named", "unnamed value", "big"])
def test_round_trip(tmp_path, suffix, variant):
    rng = np.random.default_rng(3)
    shape = (90, 80) if variant == "big" else (6, 9)
    tags = rng.integers(0, 3 if variant != "unnamed value" else 4, shape).astype(np.uint8)
    original = GridMap(rng.random(shape) > 0.2, tags=tags, tag_names={"water": 1, "forest": 2},
                       classes={"boat": {"forest": None}, "tank": {"water": None, "forest": 2.5}, "ghost": {}})
    path = tmp_path / f"level{suffix.split('+')[0]}"
    if suffix.endswith("toml"):
        write_file(tmp_path / "level.toml", "")
    save_map(original, path)
    loaded = load_map(path)
    assert (loaded.walkable == original.walkable).all()
    assert (loaded.tags == original.tags).all()
    assert loaded.tag_names == original.tag_names and loaded.classes == original.classes
    for unit_class in ("boat", "tank"):
        assert find_path(loaded, (0, 0), (8, 5), traversal=unit_class).cost == pytest.approx(
            find_path(original, (0, 0), (8, 5), traversal=unit_class).cost, nan_ok=True)
    if suffix == ".tmj" and variant == "named":
        document = json.loads(path.read_text())
        assert [layer["name"] for layer in document["layers"]] == ["pathfinding", "tags"]
        assert not (tmp_path / "level.json").exists()  # all of it in the Tiled file
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")], "temporary files left behind"


def test_saving_a_map_without_tags_drops_a_stale_tags_key(tmp_path):
    path = tmp_path / "m.map"
    save_map(GridMap(np.ones((2, 2), bool), tags=np.ones((2, 2), np.uint8), tag_names={"mud": 1}), path)
    assert "tags" in json.loads((tmp_path / "m.json").read_text())
    save_map(GridMap(np.ones((2, 2), bool)), path)
    assert load_map(path).tags is None


# -- bad sources ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sidecar, expected",
    [
        ({"tags": [[0, 1], [2]]}, "field 'tags'[1]: row has 1 values, row 0 has 2"),
        ({"tags": [[0, 256]]}, "values must be integers 0..255"),
        ({"tags": [[0, 1.5]]}, "values must be integers 0..255"),
        ({"tags": [[0, 1]]}, "tags: are 2x1, the map is 7x5"),
        ({"tags": "tags.txt"}, "a tags file must be .png or .npy"),
        ({"tags": "missing.png"}, "cannot read"),
        ({"tags": "wrong.npy"}, "tags are 3x2, the map is 7x5"),
        ({"tags": "floats.npy"}, "2-D array of integers"),
        ({"tags": "wrong.png"}, "tag image is 2x2, the map is 7x5"),
        ({"tags": "deep.png"}, "8 bits a channel"),
        ({"tags": RIVER_TAGS, "tag_names": {"water": 0}}, "field 'tag_names'['water']: must be an integer 1..255"),
        ({"tags": RIVER_TAGS, "tag_names": {"water": 1, "sea": 1}}, "value 1 is 'water''s already"),
        ({"tags": RIVER_TAGS, "tag_names": ["water"]}, "field 'tag_names': must be an object"),
        ({"tag_names": NAMES}, "field 'tag_names': the map has no tag layer"),
        ({"tags": RIVER_TAGS, "tag_names": NAMES, "classes": {"boat": {"water": 0.5}}},
         "field 'classes'['boat']['water']: must be null (blocked) or a number >= 1"),
        ({"tags": RIVER_TAGS, "tag_names": NAMES, "classes": {"boat": {"lava": None}}},
         "class 'boat' names the unknown tag 'lava'"),
        ({"tags": RIVER_TAGS, "classes": {"boat": ["water"]}}, "field 'classes'['boat']: must be an object"),
        ({"tag_colors": {"water": "#00f"}}, "colours are written #rrggbb"),
        ({"tag_colors": {"water": "#0000ff", "sea": "#0000FF"}}, "#0000ff is 'water''s colour already"),
        ({"tag_colors": {"water": "#0000ff"}}, "field 'tag_colors': names colours of a PNG"),
        ({"tags": RIVER_TAGS, "tag_colors": {"water": "#0000ff"}}, "'tags' must name a .png file"),
        ({"tag_layer": "tags"}, "field 'tag_layer': does not apply to movingai maps"),
    ],
)
def test_bad_sidecar_tags(tmp_path, sidecar, expected):
    path = write_file(tmp_path / "river.map", RIVER)
    np.save(tmp_path / "wrong.npy", np.zeros((2, 3), np.uint8))
    np.save(tmp_path / "floats.npy", np.zeros((5, 7)))
    Image.fromarray(np.zeros((2, 2), np.uint8)).save(tmp_path / "wrong.png")
    Image.fromarray(np.zeros((5, 7), np.uint16)).save(tmp_path / "deep.png")
    write_file(tmp_path / "river.json", json.dumps(sidecar))
    message = load_error(path)
    assert expected in message, message


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d["tilesets"][0]["tiles"][1]["properties"][0].update(value=3), "tag: must be a string"),
        (lambda d: d.update(properties=[{"name": "classes", "type": "string", "value": "{boat"}]),
         "field 'properties' classes: invalid JSON"),
        (lambda d: d.update(properties=[{"name": "classes", "type": "string", "value": '{"boat": {"water": 0}}'}]),
         "field 'properties' classes['boat']['water']: must be null (blocked) or a number >= 1"),
        (lambda d: d.update(properties=[{"name": "tag_names", "type": "string", "value": '{"water": 300}'}]),
         "field 'properties' tag_names['water']: must be an integer 1..255"),
        (lambda d: d.update(properties=[{"name": "tag_layer", "type": "string", "value": "kinds"}]),
         "no tile layer named 'kinds'"),
        (lambda d: d.update(properties=[{"name": "tag_layer", "type": "int", "value": 3}]),
         "field 'properties' tag_layer: must be a layer name"),
    ],
)
def test_bad_tiled_tags(tmp_path, mutate, expected):
    doc = river_tiled()
    mutate(doc)
    message = load_error(write_file(tmp_path / "river.tmj", json.dumps(doc)))
    assert expected in message, message


def test_hot_reload_keeps_the_last_good_map_when_the_tags_go_bad(tmp_path):
    write_file(tmp_path / "river.map", RIVER)
    (tmp_path / "layers").mkdir()
    tags_png = tmp_path / "layers" / "river.png"
    Image.fromarray(np.array(RIVER_TAGS, np.uint8)).save(tags_png)
    write_file(tmp_path / "river.json", json.dumps({"tags": "layers/river.png", "tag_names": NAMES, "classes": CLASSES}))
    registry = MapRegistry(tmp_path)
    registry.load_all()
    good = registry.get("river")
    assert_river(good)
    Image.fromarray(np.zeros((2, 2), np.uint8)).save(tags_png)
    assert registry.reload(tags_png) is False
    assert registry.get("river") is good
    row = next(row for row in registry.info() if row["name"] == "river")
    assert "river.map" in row["last_error"] and "tag image is 2x2, the map is 7x5" in row["last_error"]
    Image.fromarray(np.array(RIVER_TAGS, np.uint8) * 0).save(tags_png)
    assert registry.reload(tags_png) is True
    assert registry.get("river").tags.max() == 0


def test_the_guide_sidecar_loads(tmp_path):
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    sidecar = json.loads(guide.split("**Tags and unit classes.**")[1].split("```json")[1].split("```")[0])
    write_file(tmp_path / "level.map", "type octile\nheight 1\nwidth 5\nmap\n.....\n")
    (tmp_path / "tags").mkdir()
    colours = [(0xC0, 0xA0, 0x60), (0x10, 0x30, 0xA0), (0x30, 0xA0, 0x30), (0, 0, 0), (0, 0, 0)]
    Image.fromarray(np.array([colours], np.uint8)).save(tmp_path / "tags" / "level.png")
    write_file(tmp_path / "level.json", json.dumps(sidecar))
    gridmap = load_map(tmp_path / "level.map")
    # water fixed at 1; forest and land take the next free values in sorted order.
    assert gridmap.tag_names == {"water": 1, "forest": 2, "land": 3}
    assert gridmap.tags.tolist() == [[3, 1, 2, 0, 0]]
    assert find_path(gridmap, (0, 0), (4, 0)).status == "found"
    assert find_path(gridmap, (1, 0), (4, 0), traversal="boat").status == "no_path"  # the forest is in the way
    assert find_path(gridmap, (0, 0), (4, 0), traversal="tank").status == "no_path"  # the water is
