"""pathserver.hexes against slow references and against Godot itself.

The Godot values are tests/data/hex_godot.json, written by the engine
(engine_clients/godot/tests/hex_golden.gd): TileMapLayer.map_to_local, local_to_map and
get_surrounding_cells for the four wire layouts and four tile sizes.
"""

import json
import math
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pathserver import hexes
from pathserver.errors import RequestError

GODOT = json.loads((Path(__file__).parent / "data" / "hex_godot.json").read_text())

layouts = st.sampled_from(hexes.LAYOUTS)
coordinates = st.integers(-1000, 1000)
#: A regular hexagon's tile size for each axis: pointy (w, h) = (sqrt 3, 2), flat (2, sqrt 3).
REGULAR = {True: (math.sqrt(3.0), 2.0), False: (2.0, math.sqrt(3.0))}


def bfs_distances(layout, start, radius):
    """Steps from ``start`` to every cell within ``radius`` steps, by breadth-first search
    over :func:`hexes.neighbours` on an unbounded grid."""
    steps = {start: 0}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if steps[cell] == radius:
            continue
        for next_cell in hexes.neighbours(layout, *cell):
            if next_cell not in steps:
                steps[next_cell] = steps[cell] + 1
                queue.append(next_cell)
    return steps


def nearest_centre(layout, px, py, origin, tile_size, around):
    """The cell whose centre is nearest ``(px, py)`` among the cells within 2 steps of
    ``around``, measured after scaling the tiles to regular hexagons (an affine map keeps
    which hexagon a point is in), and how much nearer than the second nearest."""
    w, h = tile_size
    rw, rh = REGULAR[hexes.pointy(layout)]
    cells = hexes.ball(layout, *around, 2)
    cx, cy = hexes.world_centre(layout, cells[:, 0], cells[:, 1], origin, tile_size)
    d = np.hypot((cx - px) * rw / w, (cy - py) * rh / h)
    order = np.argsort(d)
    return tuple(int(v) for v in cells[order[0]]), d[order[1]] - d[order[0]]


# -- offset <-> axial -------------------------------------------------------------------------


@given(layouts, coordinates, coordinates)
def test_axial_round_trip(layout, x, y):
    q, r = hexes.to_axial(layout, x, y)
    assert hexes.from_axial(layout, q, r) == (x, y)
    assert hexes.to_axial(layout, *hexes.from_axial(layout, x, y)) == (x, y)
    assert sum(hexes.to_cube(layout, x, y)) == 0


def test_axial_is_vectorised_like_the_scalars():
    rng = np.random.default_rng(1)
    x, y = rng.integers(-50, 50, 500), rng.integers(-50, 50, 500)
    for layout in hexes.LAYOUTS:
        q, r = hexes.to_axial(layout, x, y)
        assert [(int(a), int(b)) for a, b in zip(q, r)] == [
            hexes.to_axial(layout, int(a), int(b)) for a, b in zip(x, y)
        ]
        back = hexes.from_axial(layout, q, r)
        assert np.array_equal(back[0], x) and np.array_equal(back[1], y)


def test_axial_follows_red_blob_on_the_pages_examples():
    # Red Blob Games' offset -> axial formulas, written out per layout.
    for x in range(-3, 4):
        for y in range(-3, 4):
            assert hexes.to_axial("odd-r", x, y) == (x - (y - (y & 1)) // 2, y)
            assert hexes.to_axial("even-r", x, y) == (x - (y + (y & 1)) // 2, y)
            assert hexes.to_axial("odd-q", x, y) == (x, y - (x - (x & 1)) // 2)
            assert hexes.to_axial("even-q", x, y) == (x, y - (x + (x & 1)) // 2)


# -- neighbours and distance ------------------------------------------------------------------


@given(layouts, coordinates, coordinates)
def test_neighbours_are_six_symmetric_cells_one_step_away(layout, x, y):
    around = hexes.neighbours(layout, x, y)
    assert len(set(around)) == 6 and (x, y) not in around
    for cell in around:
        assert (x, y) in hexes.neighbours(layout, *cell)
        assert hexes.distance(layout, (x, y), cell) == 1
    q, r = hexes.to_axial(layout, x, y)
    assert [hexes.to_axial(layout, *cell) for cell in around] == [
        (q + dq, r + dr) for dq, dr in hexes.DIRECTIONS
    ]


@pytest.mark.parametrize("layout", hexes.LAYOUTS)
def test_neighbours_turn_counter_clockwise_as_drawn_at_equal_distances(layout):
    tile_size = REGULAR[hexes.pointy(layout)]
    for x, y in [(0, 0), (3, 2), (-1, -1), (2, -3)]:
        cx, cy = hexes.world_centre(layout, x, y, (0.0, 0.0), tile_size)
        angles = []
        for nx, ny in hexes.neighbours(layout, x, y):
            px, py = hexes.world_centre(layout, nx, ny, (0.0, 0.0), tile_size)
            assert math.hypot(px - cx, py - cy) == pytest.approx(math.sqrt(3.0))
            angles.append(math.degrees(math.atan2(cy - py, px - cx)) % 360)  # y down
        first = 0.0 if hexes.pointy(layout) else 330.0  # east; south-east
        assert angles == pytest.approx([(first + 60 * i) % 360 for i in range(6)])


@pytest.mark.parametrize("layout", hexes.LAYOUTS)
@pytest.mark.parametrize("start", [(0, 0), (1, 1), (-3, 2), (4, -5)])
def test_distance_is_the_breadth_first_distance(layout, start):
    steps = bfs_distances(layout, start, 7)
    cells = np.array(list(steps))
    assert np.array_equal(
        hexes.distance(layout, np.array([start] * len(cells)), cells), np.array(list(steps.values()))
    )
    assert len(steps) == 3 * 7 * 8 + 1


def test_neighbours_match_godots_get_surrounding_cells():
    for entry in GODOT["neighbours"]:
        for cell, surrounding in zip(entry["cells"], entry["surrounding"]):
            assert sorted(hexes.neighbours(entry["layout"], *cell)) == sorted(map(tuple, surrounding))


@given(layouts, coordinates, coordinates, st.integers(0, 4))
def test_ball_is_every_cell_within_the_radius(layout, x, y, radius):
    cells = hexes.ball(layout, x, y, radius)
    assert len(cells) == 3 * radius * (radius + 1) + 1
    assert set(map(tuple, cells.tolist())) == {
        cell for cell, steps in bfs_distances(layout, (x, y), radius).items() if steps <= radius
    }
    assert [tuple(c) for c in cells.tolist()] == sorted(map(tuple, cells.tolist()), key=lambda c: (c[1], c[0]))


# -- lines ------------------------------------------------------------------------------------


@settings(max_examples=300)
@given(layouts, st.integers(-30, 30), st.integers(-30, 30), st.integers(-30, 30), st.integers(-30, 30))
def test_hex_line_cells_are_consecutive_neighbours(layout, ax, ay, bx, by):
    line = hexes.hex_line(layout, (ax, ay), (bx, by))
    steps = hexes.distance(layout, (ax, ay), (bx, by))
    assert line.shape == (steps + 1, 2) and line.dtype == np.int64
    assert tuple(line[0]) == (ax, ay) and tuple(line[-1]) == (bx, by)
    for i in range(steps):
        assert tuple(line[i + 1]) in hexes.neighbours(layout, *line[i])
    # Each cell is the one holding the straight line's point at its step.
    tile_size = REGULAR[hexes.pointy(layout)]
    a = np.array(hexes.world_centre(layout, ax, ay, (0.0, 0.0), tile_size))
    b = np.array(hexes.world_centre(layout, bx, by, (0.0, 0.0), tile_size))
    for i, cell in enumerate(line):
        point = a + (b - a) * (i / max(steps, 1))
        nearest, margin = nearest_centre(layout, *point, (0.0, 0.0), tile_size, tuple(cell))
        assert nearest == tuple(cell) or margin < 1e-4


def test_hex_line_breaks_ties_with_the_nudge():
    # From (0, 0) to (0, -2) on odd-r the straight line runs along the edge between (-1, -1)
    # and (0, -1); the nudge picks (0, -1), whichever way the line is drawn.
    assert hexes.hex_line("odd-r", (0, 0), (0, -2)).tolist() == [[0, 0], [0, -1], [0, -2]]
    assert hexes.hex_line("odd-r", (0, -2), (0, 0)).tolist() == [[0, -2], [0, -1], [0, 0]]
    assert hexes.hex_line("odd-r", (2, 3), (2, 3)).tolist() == [[2, 3]]


@given(layouts, st.integers(-30, 30), st.integers(-30, 30), st.integers(-30, 30), st.integers(-30, 30))
def test_hex_line_backwards_is_the_same_cells(layout, ax, ay, bx, by):
    forwards = hexes.hex_line(layout, (ax, ay), (bx, by))
    assert np.array_equal(hexes.hex_line(layout, (bx, by), (ax, ay)), forwards[::-1])


# -- world space ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", GODOT["cases"], ids=lambda c: f"{c['layout']}-{c['tile_size']}")
def test_centres_and_cells_match_godot(case):
    layout, tile_size = case["layout"], case["tile_size"]
    cells = np.array(case["cells"])
    cx, cy = hexes.world_centre(layout, cells[:, 0], cells[:, 1], (0.0, 0.0), tile_size)
    assert np.array_equal(np.stack([cx, cy], axis=1), np.array(case["centres"]))
    cx, cy = hexes.centre(layout, cells[:, 0], cells[:, 1])
    assert np.array_equal(np.stack([cx, cy], axis=1) * tile_size, np.array(case["centres"]))
    points = np.array(case["points"])
    x, y = hexes.cell_at(layout, points[:, 0], points[:, 1], (0.0, 0.0), tile_size)
    assert np.stack([x, y], axis=1).tolist() == case["points_cells"]


def test_a_map_origin_moves_every_centre_and_cell_with_it():
    case = GODOT["cases"][5]
    origin = (-123.25, 40.5)
    points = np.array(case["points"]) + origin
    x, y = hexes.cell_at(case["layout"], points[:, 0], points[:, 1], origin, case["tile_size"])
    assert np.stack([x, y], axis=1).tolist() == case["points_cells"]


@given(layouts, coordinates, coordinates, st.floats(1.0, 200.0), st.floats(1.0, 200.0))
def test_cell_at_a_centre_is_the_cell(layout, x, y, w, h):
    origin = (17.5, -3.25)
    px, py = hexes.world_centre(layout, x, y, origin, (w, h))
    assert hexes.cell_at(layout, px, py, origin, (w, h)) == (x, y)


@settings(max_examples=300)
@given(
    layouts,
    st.integers(-20, 20),
    st.integers(-20, 20),
    st.integers(0, 11),
    st.floats(0.9, 1.1),
    st.floats(-0.05, 0.05),
    st.booleans(),
)
def test_points_near_edges_land_in_the_hexagon_holding_them(layout, x, y, mark, along, aside, regular):
    """Points around a hexagon's corners and edge middles against the nearest centre: for
    regular hexagons, and for Godot's squashed ones scaled back to regular (the hexagon
    holding a point is kept by that affine map)."""
    tile_size = REGULAR[hexes.pointy(layout)] if regular else (37.0, 50.0)
    w, h = tile_size
    corners = [(0, -0.5), (0.5, -0.25), (0.5, 0.25), (0, 0.5), (-0.5, 0.25), (-0.5, -0.25)]
    if not hexes.pointy(layout):
        corners = [(b, a) for a, b in corners]
    first, second = corners[mark // 2], corners[(mark // 2 + 1) % 6]
    offset = first if mark % 2 == 0 else ((first[0] + second[0]) / 2, (first[1] + second[1]) / 2)
    cx, cy = hexes.world_centre(layout, x, y, (0.0, 0.0), tile_size)
    px = cx + (offset[0] * along + offset[1] * aside) * w
    py = cy + (offset[1] * along - offset[0] * aside) * h
    expected, margin = nearest_centre(layout, px, py, (0.0, 0.0), tile_size, (x, y))
    if margin > 1e-9:
        assert hexes.cell_at(layout, px, py, (0.0, 0.0), tile_size) == expected


def test_cell_at_on_shared_edges_picks_as_godot():
    # odd-r, 16 x 16 tiles, cell (0, 0) centred at (8, 8): its right vertical edge (x = 16)
    # goes to (1, 0); its top corner (8, 0) to the row above on the left, (-1, -1); its
    # upper-right edge to (0, 0) itself. As Godot's local_to_map answers (float32 exact here).
    assert hexes.cell_at("odd-r", 16.0, 8.0, tile_size=16) == (1, 0)
    assert hexes.cell_at("odd-r", 8.0, 0.0, tile_size=16) == (-1, -1)
    assert hexes.cell_at("odd-r", 12.0, 2.0, tile_size=16) == (0, 0)
    # odd-q, cell (0, 0) centred at (8, 8): its bottom edge (y = 16) goes to (0, 1); its left
    # corner (0, 8) to the column on the left, (-1, 0); its upper-left edge to (0, 0).
    assert hexes.cell_at("odd-q", 8.0, 16.0, tile_size=16) == (0, 1)
    assert hexes.cell_at("odd-q", 0.0, 8.0, tile_size=16) == (-1, 0)
    assert hexes.cell_at("odd-q", 2.0, 4.0, tile_size=16) == (0, 0)


# -- checks -----------------------------------------------------------------------------------


def test_layouts_and_cell_sizes_are_checked():
    assert hexes.check_layout("even-q") == "even-q"
    with pytest.raises(RequestError) as refused:
        hexes.check_layout("odd-x")
    assert refused.value.at == "layout" and "odd-r" in refused.value.message
    assert hexes.tile_size_of(16) == (16.0, 16.0)
    assert hexes.tile_size_of([37, 50.5]) == (37.0, 50.5)
    for bad in (0, -1, float("nan"), [1, 0], [1, 2, 3], "16", True, [1, None]):
        with pytest.raises(RequestError):
            hexes.tile_size_of(bad)
