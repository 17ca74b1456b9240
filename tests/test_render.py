"""`pathserver render`: the pixels show the walls, the path, its ends and the footprint."""

import numpy as np
import pytest
from PIL import Image

from pathserver import GridMap, find_path
from pathserver import render
from pathserver.render import FLOOR, FOOTPRINT, FOOTPRINT_ALPHA, GOAL, PATH, START, WALL, render_map

# The only way from S to G runs right along the top corridor, down at x = 6 and back.
CORRIDORS = """
#########
#S.....##
######.##
#G.....##
#########
"""
SCALE = 16


def centre(x, y):
    return (x * SCALE + SCALE // 2, y * SCALE + SCALE // 2)


def corner(x, y):
    return (x * SCALE + 1, y * SCALE + 1)


@pytest.fixture(scope="module")
def corridors():
    gridmap = GridMap.from_ascii(CORRIDORS.replace("S", ".").replace("G", "."), name="corridors")
    result = find_path(gridmap, (1, 1), (1, 3), smooth="none")
    assert result.status == "found"
    image = render_map(gridmap, result, scale=SCALE)
    return gridmap, result, image


def test_the_map_is_drawn_at_the_scale_asked_with_a_caption_below(corridors):
    gridmap, _, image = corridors
    assert image.width == gridmap.width * SCALE
    assert image.height > gridmap.height * SCALE
    assert render_map(gridmap, scale=SCALE, caption=False).size == (gridmap.width * SCALE, gridmap.height * SCALE)


def test_path_cells_show_the_path_and_walls_stay_walls(corridors):
    _, _, image = corridors
    for cell in [(3, 1), (6, 2), (4, 3)]:
        assert image.getpixel(centre(*cell)) == PATH, cell
    for cell in [(3, 2), (0, 0), (8, 1), (7, 3)]:
        assert image.getpixel(centre(*cell)) == WALL, cell


def test_the_footprint_is_tinted_and_the_endpoints_marked(corridors):
    _, _, image = corridors
    tinted = tuple(round(f * (1 - FOOTPRINT_ALPHA) + t * FOOTPRINT_ALPHA) for f, t in zip(FLOOR, FOOTPRINT))
    assert image.getpixel(corner(3, 1)) == tinted
    assert image.getpixel(centre(1, 1)) == START
    assert image.getpixel(centre(1, 3)) == GOAL


def test_terrain_costs_are_shaded_between_floor_and_costly():
    gridmap = GridMap.from_ascii("..9\n.#5\n")
    image = render_map(gridmap, scale=4, caption=False)
    cheap, mid, dear = (image.getpixel((x * 4 + 1, y * 4 + 1)) for x, y in [(0, 0), (2, 1), (2, 0)])
    assert cheap == FLOOR
    assert dear == render.COSTLY
    assert all(min(a, b) <= m <= max(a, b) for a, m, b in zip(FLOOR, mid, render.COSTLY)) and mid not in (FLOOR, dear)


def test_footprints_follow_the_centring_rule():
    # 3x3 centred on its cell; 2x2 hangs right and down from it.
    mask = render.footprint_mask((8, 10), np.array([[2, 2], [5, 2]]), 3, 3)
    assert np.argwhere(mask).min(axis=0).tolist() == [1, 1] and np.argwhere(mask).max(axis=0).tolist() == [3, 6]
    mask = render.footprint_mask((8, 10), np.array([[2, 2]]), 2, 2)
    assert np.argwhere(mask).tolist() == [[2, 2], [2, 3], [3, 2], [3, 3]]


def test_supercover_matches_the_straight_segment():
    assert render.supercover(0, 0, 3, 0) == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert render.supercover(0, 0, 2, 2) == [(0, 0), (1, 1), (2, 2)]
    # Every cell the segment from centre to centre crosses; through a corner, diagonally.
    assert render.supercover(0, 0, 4, 1) == [(0, 0), (1, 0), (2, 0), (2, 1), (3, 1), (4, 1)]
    assert render.supercover(0, 0, 3, 1) == [(0, 0), (1, 0), (2, 1), (3, 1)]
    assert render.supercover(3, 1, 0, 0) == [(3, 1), (2, 1), (1, 0), (0, 0)]


def test_the_heat_map_is_the_largest_unit_each_cell_holds():
    rng = np.random.default_rng(5)
    gridmap = GridMap(rng.random((20, 24)) > 0.12)
    largest = render.largest_unit(gridmap)
    naive = np.zeros_like(largest)
    for side in range(1, 8):
        naive[gridmap.layer(side).passable.astype(bool)] = side
    assert np.array_equal(largest, naive)
    image = render_map(gridmap, clearance=True, scale=2, caption=False)
    assert image.getpixel((0, 0)) != FLOOR


def test_the_command_writes_a_png(tmp_path, capsys):
    map_file = tmp_path / "corridors.map"
    rows = CORRIDORS.strip().replace("#", "@").replace("S", ".").replace("G", ".").splitlines()
    map_file.write_text(f"type octile\nheight {len(rows)}\nwidth {len(rows[0])}\nmap\n" + "\n".join(rows) + "\n")
    out = tmp_path / "out.png"
    code = render.main([str(map_file), "--path", "1", "1", "1", "3", "--unit", "1", "--smooth", "los",
                        "--clearance", "--scale", str(SCALE), "-o", str(out)])
    assert code == 0
    assert "found" in capsys.readouterr().out
    with Image.open(out) as image:
        assert image.format == "PNG"
        assert image.getpixel(centre(3, 1))[:3] == PATH
        assert image.getpixel(centre(3, 2))[:3] == WALL
