"""Map file formats: round trips, the documented mappings, and every malformed case."""

from __future__ import annotations

import base64
import gzip
import json
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image

from pathserver.errors import MapLoadError
from pathserver.grid.gridmap import GridMap
from pathserver.maps import load_map, save_map
from grids import load_error, write_file

REPO = Path(__file__).resolve().parents[2]
MOVINGAI = REPO / ".." / "shared" / "movingai"
SAMPLES = REPO / "maps"




def tiled_doc(data, width=4, height=3, tiles=None, **extra) -> dict:
    layer = {"type": "tilelayer", "name": "ground", "width": width, "height": height, "data": data}
    doc = {
        "type": "map",
        "width": width,
        "height": height,
        "tilewidth": 16,
        "tileheight": 16,
        "orientation": "orthogonal",
        "infinite": False,
        "layers": [layer],
        "tilesets": [
            {
                "firstgid": 1,
                "tilecount": 4,
                "tiles": tiles
                if tiles is not None
                else [
                    {"id": 1, "properties": [{"name": "solid", "type": "bool", "value": True}]},
                    {"id": 2, "properties": [{"name": "cost", "type": "float", "value": 2.5}]},
                ],
            }
        ],
    }
    doc.update(extra)
    return doc


def assert_same_map(a: GridMap, b: GridMap) -> None:
    assert a.walkable.shape == b.walkable.shape
    assert (a.walkable == b.walkable).all()
    assert (a.cost == b.cost).all()
    assert (a.heights is None) == (b.heights is None)
    if a.heights is not None:
        assert (a.heights == b.heights).all()
    assert a.origin == b.origin
    assert a.cell_size == b.cell_size


# -- round trips ----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".map", ".png", ".tmj", ".json"])
@pytest.mark.parametrize("variant", ["plain", "costs", "everything", "big"])
def test_round_trip(tmp_path, suffix, variant):
    rng = np.random.default_rng(7)
    shape = (90, 80) if variant == "big" else (9, 11)
    walkable = rng.random(shape) > 0.3
    cost = heights = None
    kwargs = {}
    if variant != "plain":
        cost = np.where(rng.random(shape) > 0.5, rng.choice([1.0, 2.0, 1.0625, 3.7, 12.5], shape), 1.0)
    if variant in ("everything", "big"):
        heights = (rng.random(shape) * 10).astype(np.float32)
        kwargs = {"origin": (-3.5, 2.25), "cell_size": 0.5}
    original = GridMap(walkable, cost, heights, **kwargs)
    path = tmp_path / f"level{suffix}"
    save_map(original, path)
    loaded = load_map(path)
    assert_same_map(original, loaded)
    assert loaded.name == "level"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")], "temporary files left behind"


@pytest.mark.parametrize("suffix", [".map", ".png", ".tmj"])
@settings(max_examples=15, deadline=None)
@given(
    walkable=arrays(bool, st.tuples(st.integers(1, 6), st.integers(1, 6))),
    costs=st.lists(st.floats(1.0, 50.0, allow_nan=False), min_size=1, max_size=3),
    data=st.data(),
)
def test_round_trip_any_grid(tmp_path_factory, suffix, walkable, costs, data):
    choice = data.draw(arrays(np.int64, walkable.shape, elements=st.integers(0, len(costs) - 1)))
    original = GridMap(walkable, np.asarray(costs)[choice])
    path = tmp_path_factory.mktemp("rt") / f"m{suffix}"
    save_map(original, path)
    assert_same_map(original, load_map(path))


def test_save_rewrites_a_stale_sidecar(tmp_path):
    path = tmp_path / "m.map"
    save_map(GridMap(np.ones((2, 2), bool), origin=(5, 5), cell_size=2.0), path)
    assert json.loads((tmp_path / "m.json").read_text())["origin"] == [5.0, 5.0]
    save_map(GridMap(np.ones((2, 2), bool)), path)
    loaded = load_map(path)
    assert loaded.origin == (0.0, 0.0) and loaded.cell_size == 1.0


def test_gridmap_load_and_save_are_load_map_and_save_map(tmp_path):
    original = GridMap(np.array([[True, False], [True, True]]), origin=(1.0, 2.0), cell_size=0.5)
    original.save(str(tmp_path / "m.map"))
    loaded = GridMap.load(str(tmp_path / "m.map"), name="other")
    assert_same_map(original, loaded)
    assert loaded.name == "other" and loaded.cell_size == 0.5


def test_the_map_model_loads_without_the_formats_and_says_how_to_get_them():
    """The model sits below the file formats: importing it and searching import no
    ``pathserver.maps``, and ``GridMap.load`` then says what to import."""
    code = (
        "import sys\n"
        "import pathserver.grid.search\n"
        "from pathserver.grid.gridmap import GridMap\n"
        "assert not [m for m in sys.modules if m.startswith('pathserver.maps')], sorted(sys.modules)\n"
        "try:\n"
        "    GridMap.load('x.map')\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "import pathserver.maps" in done.stdout


# -- Moving AI ------------------------------------------------------------------------------

SMALL = "type octile\nheight 3\nwidth 4\nmap\n.@..\nGTSW\n..O.\n"


def test_movingai_characters(tmp_path):
    gridmap = load_map(write_file(tmp_path / "m.map", SMALL))
    assert gridmap.walkable.tolist() == [
        [True, False, True, True],
        [True, False, True, False],
        [True, True, False, True],
    ]
    assert gridmap.uniform_cost and gridmap.name == "m" and gridmap.generation == 0


def test_movingai_crlf_and_no_final_newline(tmp_path):
    crlf = write_file(tmp_path / "crlf.map", SMALL.replace("\n", "\r\n").rstrip("\r\n"))
    assert (load_map(crlf).walkable == load_map(write_file(tmp_path / "lf.map", SMALL)).walkable).all()


def test_movingai_tolerates_trailing_blank_lines_and_swapped_sizes(tmp_path):
    text = "type octile\nwidth 4\nheight 3\nmap\n.@..\nGTSW\n..O.\n\n\n"
    assert load_map(write_file(tmp_path / "m.map", text)).walkable.shape == (3, 4)


def test_movingai_legend_from_sidecar(tmp_path):
    path = write_file(tmp_path / "m.map", "type octile\nheight 1\nwidth 4\nmap\n.~W@\n")
    write_file(tmp_path / "m.json", json.dumps({"cost_legend": {"~": 3.0, "W": 5, "@": 2.0, ".": None}}))
    gridmap = load_map(path)
    assert gridmap.walkable.tolist() == [[False, True, True, True]]
    assert gridmap.cost.tolist() == [[1.0, 3.0, 5.0, 2.0]]


def test_movingai_toml_sidecar(tmp_path):
    path = write_file(tmp_path / "m.map", "type octile\nheight 1\nwidth 2\nmap\n.~\n")
    write_file(tmp_path / "m.toml", 'origin = [1.5, -2]\ncell_size = 0.25\n[cost_legend]\n"~" = "blocked"\n')
    gridmap = load_map(path)
    assert gridmap.origin == (1.5, -2.0) and gridmap.cell_size == 0.25
    assert gridmap.walkable.tolist() == [[True, False]]


def test_keyword_arguments_override_the_sidecar(tmp_path):
    path = write_file(tmp_path / "m.map", SMALL)
    write_file(tmp_path / "m.json", '{"cell_size": 2.0}')
    assert load_map(path, cell_size=3.0, name="other", generation=4).cell_size == 3.0
    assert load_map(path, sidecar=False).cell_size == 1.0
    with pytest.raises(TypeError):
        load_map(path, colour="red")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("type octile\nheight 3\nwidth 4\nmap\n.@..\nGTSW\n", "line 7: file ends after 2 of 3 rows (truncated?)"),
        ("type octile\nheight 3\nwidth 4\nmap\n.@..\nGTSW\n..", "line 7: row has 2 characters, expected 4"),
        ("type octile\nheight 3\nwidth 4\nmap\n.@..\nGTSWW\n..O.\n", "line 6: row has 5 characters, expected 4"),
        ("type octile\nheight 3\nwidth 4\nmap\n.@..\nGT#W\n..O.\n", "line 6, column 3: unexpected '#'"),
        ("type octile\nheight 3\nwidth 4\nmap\n.@..\nGT\xe9W\n..O.\n", "line 6, column 3: unexpected byte 0xc3"),
        ("type octile\nheight 1\nwidth 1\nmap\n.\nextra\n", "line 6: unexpected text after the 1 rows"),
        ("type tile\nheight 3\nwidth 4\nmap\n", "line 1: expected 'type octile'"),
        ("height 3\nwidth 4\nmap\n", "line 1: expected 'type octile'"),
        ("type octile\nheight three\nwidth 4\nmap\n", "line 2: expected 'height N' or 'width N'"),
        ("type octile\nheight 3\nheight 4\nmap\n", "line 3: expected 'height N' or 'width N'"),
        ("type octile\nheight 3\nwidth 4\nrows\n", "line 4: expected 'map'"),
        ("type octile\nheight 3\n", "line 3: file ends inside the header"),
        ("type octile\nheight 0\nwidth 4\nmap\n", "line 2: height must be at least 1"),
        ("type octile\nheight -5\nwidth 4\nmap\n", "line 2: expected 'height N' or 'width N'"),
        (
            "type octile\nheight 3\nwidth 4\nmap\n" + "....\n" * 3 + "." * 20000,
            "file is longer than 3 rows of 4 characters can be",
        ),
    ],
)
def test_movingai_malformed(tmp_path, text, expected):
    path = write_file(tmp_path / "bad.map", text)
    message = load_error(path)
    assert expected in message


def test_movingai_error_message_shape(tmp_path):
    path = write_file(tmp_path / "x.map", "type octile\nheight 3\nwidth 64\nmap\n" + "." * 64 + "\n" + "." * 63 + "\n")
    assert load_error(path) == f"{path}: line 6: row has 63 characters, expected 64"


def test_movingai_absurd_size_rejected_before_allocating(tmp_path):
    path = write_file(tmp_path / "huge.map", "type octile\nheight 2000000000\nwidth 2000000000\nmap\n....\n")
    started = time.perf_counter()
    message = load_error(path)
    assert time.perf_counter() - started < 0.5
    assert "exceeds the limit" in message


# -- PNG ------------------------------------------------------------------------------------


def test_png_colour_mapping(tmp_path):
    pixels = np.array(
        [
            [(255, 255, 255, 255), (239, 239, 239, 255), (64, 64, 64, 255), (63, 63, 63, 255)],
            [(0, 0, 0, 255), (255, 255, 255, 0), (0x30, 0x70, 0xFF, 255), (0x2E, 0x8B, 0x57, 255)],
        ],
        dtype=np.uint8,
    )
    path = tmp_path / "t.png"
    Image.fromarray(pixels, "RGBA").save(path)
    write_file(tmp_path / "t.json", json.dumps({"cost_legend": {"#3070FF": None, "#2e8b57": 2.0}, "origin": [1, 2]}))
    gridmap = load_map(path)
    assert gridmap.walkable.tolist() == [[True, True, True, False], [False, False, False, True]]
    assert gridmap.cost[0, :3].tolist() == [1.0, 2.0, 1 + 191 / 16]
    assert gridmap.cost[1, 3] == 2.0
    assert gridmap.origin == (1.0, 2.0)


def test_png_16_bit_grey(tmp_path):
    path = tmp_path / "g.png"
    Image.fromarray(np.array([[65535, 0, 61423]], dtype=np.uint16)).save(path)
    gridmap = load_map(path)
    assert gridmap.walkable.tolist() == [[True, False, True]]
    assert gridmap.cost[0, 2] == pytest.approx(1 + (255 - 61423 / 257) / 16)


def _png_with_size(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    pixels = chunk(b"IDAT", zlib.compress(b"\0\xff"))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + pixels + chunk(b"IEND", b"")


def test_png_huge_declared_size_rejected_fast(tmp_path):
    path = write_file(tmp_path / "huge.png", _png_with_size(100_000, 100_000))
    started = time.perf_counter()
    assert "exceeds the limit" in load_error(path)
    assert time.perf_counter() - started < 0.5


def test_png_truncated(tmp_path):
    path = tmp_path / "t.png"
    Image.fromarray((np.random.default_rng(0).random((40, 40)) * 255).astype(np.uint8)).save(path)
    data = path.read_bytes()
    write_file(path, data[: len(data) // 2])
    assert "cannot decode PNG" in load_error(path)


def test_png_heights_from_sidecar_png_and_npy(tmp_path):
    Image.fromarray(np.full((2, 3), 255, np.uint8)).save(tmp_path / "m.png")
    Image.fromarray(np.array([[0, 10, 20], [30, 40, 50]], np.uint8)).save(tmp_path / "h.png")
    write_file(tmp_path / "m.json", '{"heights": "h.png", "heights_scale": 0.5}')
    assert load_map(tmp_path / "m.png").heights.tolist() == [[0, 5, 10], [15, 20, 25]]
    np.save(tmp_path / "h.npy", np.arange(6, dtype=np.float64).reshape(2, 3))
    write_file(tmp_path / "m.json", '{"heights": "h.npy"}')
    assert load_map(tmp_path / "m.png").heights.tolist() == [[0, 1, 2], [3, 4, 5]]
    np.save(tmp_path / "h.npy", np.zeros((3, 3)))
    assert "heights are 3x3, the map is 3x2" in load_error(tmp_path / "m.png")


# -- Tiled ----------------------------------------------------------------------------------


def test_tiled_properties_flags_and_cell_size(tmp_path):
    flipped_solid = 2 | 0x80000000 | 0x20000000
    data = [0, 1, 2, 3, flipped_solid, 3 | 0x40000000, 0, 0, 0, 0, 0, 4]
    path = write_file(tmp_path / "d.tmj", json.dumps(tiled_doc(data)))
    gridmap = load_map(path)
    assert gridmap.walkable.tolist() == [[True, True, False, True], [False, True, True, True], [True, True, True, True]]
    assert gridmap.cost[0, 3] == 2.5 and gridmap.cost[1, 1] == 2.5
    assert gridmap.cell_size == 16.0


@pytest.mark.parametrize("compression", ["", "zlib", "gzip"])
def test_tiled_base64_layers(tmp_path, compression):
    raw = np.array([0, 2, 3, 1] * 3, dtype="<u4").tobytes()
    blob = {"": raw, "zlib": zlib.compress(raw), "gzip": gzip.compress(raw)}[compression]
    doc = tiled_doc(base64.b64encode(blob).decode())
    doc["layers"][0].update(encoding="base64", compression=compression)
    gridmap = load_map(write_file(tmp_path / "d.json", json.dumps(doc)))
    assert gridmap.walkable[:, 1].tolist() == [False] * 3
    assert gridmap.cost[:, 2].tolist() == [2.5] * 3


def test_tiled_layer_choice_external_tileset_and_empty_cost(tmp_path):
    doc = tiled_doc([0] * 12)
    doc["layers"] = [
        {"type": "objectgroup", "name": "objects"},
        {"type": "group", "name": "g", "layers": [dict(doc["layers"][0], name="art", data=[3] * 12)]},
        dict(doc["layers"][0], name="walls", data=[2] * 6 + [0] * 6),
        dict(doc["layers"][0], name="marked", data=[3] * 11 + [0], properties=[
            {"name": "pathfinding", "type": "bool", "value": True}
        ]),
    ]
    tileset = doc["tilesets"][0]
    doc["tilesets"] = [{"firstgid": 1, "source": "tiles.tsj"}]
    write_file(tmp_path / "tiles.tsj", json.dumps(dict(tileset, type="tileset")))
    path = write_file(tmp_path / "d.tmj", json.dumps(doc))
    assert load_map(path).cost.tolist()[0] == [2.5] * 4  # the layer marked "pathfinding"
    write_file(tmp_path / "d.json", json.dumps({"layer": "walls", "empty_cost": None}))
    assert load_map(path).walkable.sum() == 0
    assert load_map(path, layer="art").cost.min() == 2.5


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d.update(layers=[]), "field 'layers': has no tile layer"),
        (lambda d: d["layers"][0].update(data=[0] * 11), "field 'layers[0].data': has 11 entries, expected 12"),
        (lambda d: d["layers"][0].update(data=[0] * 11 + [9]), "cell (3, 2) has gid 9, which no tileset covers"),
        (lambda d: d["layers"][0].update(data=["a"] * 12), "entries must be integer gids"),
        (lambda d: d["layers"][0].update(data=[-1] * 12), "gids must be between"),
        (lambda d: d["layers"][0].update(data="AAAA", encoding="base64", compression="zstd"), "zstd is not supported"),
        (lambda d: d["layers"][0].update(data="!!", encoding="base64"), "is not valid base64"),
        (lambda d: d["layers"][0].update(data="AAAA", encoding="base64"), "decodes to 3 bytes, expected 48"),
        (lambda d: d["layers"][0].update(data="AAAA", encoding="base64", compression="zlib"), "cannot zlib-decompress"),
        (lambda d: d["tilesets"][0].update(source="tiles.tsx"), "is not JSON; in Tiled export it as .tsj"),
        (lambda d: d["tilesets"][0].update(source="missing.tsj"), "cannot read"),
        (lambda d: d["tilesets"][0]["tiles"][0]["properties"][0].update(value="yes"), "solid: must be a bool"),
        (lambda d: d["tilesets"][0]["tiles"][1]["properties"][0].update(value=0.5), "cost: must be a number >= 1"),
        (lambda d: d.update(width=100_000, height=100_000), "exceeds the limit"),
        (lambda d: d.update(width=0), "width must be at least 1"),
        (lambda d: d.update(infinite=True), "infinite maps are not supported"),
        (lambda d: d.update(orientation="staggered"), "maps are not supported"),
        (lambda d: d.pop("type") and d.pop("tilewidth"), "not a Tiled map"),
    ],
)
def test_tiled_malformed(tmp_path, mutate, expected):
    doc = tiled_doc([0] * 12)
    mutate(doc)
    path = write_file(tmp_path / "bad.tmj", json.dumps(doc))
    assert expected in load_error(path)


def test_tiled_invalid_json_names_line(tmp_path):
    path = write_file(tmp_path / "bad.tmj", '{\n  "type": "map",\n  "width": 4,,\n}')
    assert f"{path}: line 3, column 14: invalid JSON" in load_error(path)


# -- sidecars -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sidecar, expected",
    [
        ('{"origin": [1]}', "field 'origin': must be [x, y]"),
        ('{"cell_size": 0}', "field 'cell_size': must be a finite number > 0"),
        ('{"cell_size": 1', "line 1, column 16: invalid JSON"),
        ('{"colour": 1}', "field 'colour': unknown key"),
        ('{"layer": "x"}', "field 'layer': does not apply to movingai maps"),
        ('{"cost_legend": {"ab": 2}}', "keys must be one printable ASCII character"),
        ('{"cost_legend": {"~": 0.5}}', "must be a number >= 1 or null"),
        ('{"heights": [[1, 2], [3]]}', "row has 1 values, row 0 has 2"),
        ('{"heights": [[1, 2, 3, 4]]}', "heights: is 4x1, the map is 4x3"),
        ('{"heights": "h.npy"}', "cannot read heights"),
        ('[1, 2]', "a sidecar must be an object"),
    ],
)
def test_sidecar_malformed(tmp_path, sidecar, expected):
    path = write_file(tmp_path / "m.map", SMALL)
    write_file(tmp_path / "m.json", sidecar)
    with pytest.raises(MapLoadError, match="m\\.(json|map)|h\\.npy") as info:
        load_map(path)
    assert expected in str(info.value)


def test_two_sidecars_are_an_error(tmp_path):
    path = write_file(tmp_path / "m.map", SMALL)
    write_file(tmp_path / "m.json", "{}")
    write_file(tmp_path / "m.toml", "")
    assert "keep one sidecar" in load_error(path)


# -- anything that is not a map -------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".map", ".png", ".tmj", ".json"])
def test_empty_file(tmp_path, suffix):
    assert "file is empty" in load_error(write_file(tmp_path / f"empty{suffix}", b""))


@pytest.mark.parametrize("suffix", [".map", ".png", ".tmj", ".json"])
@pytest.mark.parametrize("seed", range(5))
def test_garbage_bytes(tmp_path, suffix, seed):
    garbage = np.random.default_rng(seed).integers(0, 256, 3000, dtype=np.uint8).tobytes()
    load_error(write_file(tmp_path / f"garbage{suffix}", garbage))


def test_garbage_with_a_png_signature(tmp_path):
    load_error(write_file(tmp_path / "g.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4))


def test_missing_file_and_unknown_suffix(tmp_path):
    assert "cannot read" in load_error(tmp_path / "missing.map")
    assert "unknown map format" in load_error(write_file(tmp_path / "m.txt", SMALL))


# -- real and sample maps -------------------------------------------------------------------


def test_sample_maps_load():
    loaded = {p.name: load_map(p) for p in sorted(SAMPLES.iterdir()) if p.suffix in (".map", ".png", ".tmj")}
    assert set(loaded) >= {"example.map", "terrain.png", "dungeon.tmj"}
    example = loaded["example.map"]
    # The crawlspace behind the 1-cell gap is reachable for 1x1 units only.
    assert example.layer(1).labels[56, 56] == example.layer(1).labels[2, 2]
    assert example.layer(2).labels[56, 56] != example.layer(2).labels[2, 2]
    assert loaded["terrain.png"].cell_size == 2.0 and not loaded["terrain.png"].uniform_cost
    assert loaded["dungeon.tmj"].cell_size == 16.0 and not loaded["dungeon.tmj"].uniform_cost


def _movingai_maps():
    if not MOVINGAI.is_dir():
        return []
    return sorted(MOVINGAI.glob("*/*.map"))


def test_all_movingai_maps_load_with_their_header_size():
    paths = _movingai_maps()
    if not paths:
        pytest.skip(f"{MOVINGAI} is absent")
    assert len(paths) == 20
    for path in paths:
        with open(path, "rb") as fh:
            header = dict(fh.readline().split() for _ in range(3))
        gridmap = load_map(path)
        assert (gridmap.width, gridmap.height) == (int(header[b"width"]), int(header[b"height"])), path
        assert 0 < gridmap.walkable.mean() < 1
