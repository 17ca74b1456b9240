extends SceneTree
## Writes the golden values of Godot's hex geometry that pathserver.hexes, the addon's
## PathServerHexes and the C# client's PathServerHexes are pinned to
## (tests/data/hex_godot.json): for each wire layout (a hexagon TileSet, STACKED or
## STACKED_OFFSET on either offset axis) and a few tile sizes, TileMapLayer.map_to_local of
## cells around (0, 0), local_to_map of points near hexagon edges and corners and of points
## anywhere, and get_surrounding_cells. From the repository's root:
##
##   godot --headless --path engine_clients/godot/tests -s res://hex_golden.gd \
##       -- "$PWD/tests/data/hex_godot.json"
##
## (engine_clients/godot/run_tests.sh shows how to run the engine here.) Prints the file's
## path and "hex golden: N cases" and exits 0. Points are multiples of 1/64 world unit, so
## that they are the same numbers in float32 and float64, and stay at least 1% of a tile
## from every edge: there the float32 engine and a float64 reader cannot disagree.
## The addon's tests check that the engine still gives these values (hex_tests.gd).

## Wire layout -> [TileSet.TileLayout, TileSet.TileOffsetAxis].
const WIRE_LAYOUTS := {
	"odd-r": [TileSet.TILE_LAYOUT_STACKED, TileSet.TILE_OFFSET_AXIS_HORIZONTAL],
	"even-r": [TileSet.TILE_LAYOUT_STACKED_OFFSET, TileSet.TILE_OFFSET_AXIS_HORIZONTAL],
	"odd-q": [TileSet.TILE_LAYOUT_STACKED, TileSet.TILE_OFFSET_AXIS_VERTICAL],
	"even-q": [TileSet.TILE_LAYOUT_STACKED_OFFSET, TileSet.TILE_OFFSET_AXIS_VERTICAL],
}
## Godot's default, two nearly regular hexagons (pointy, flat) and a squashed one.
const TILE_SIZES := [Vector2i(16, 16), Vector2i(64, 74), Vector2i(74, 64), Vector2i(37, 50)]
## Cells -RADIUS..RADIUS on both axes.
const RADIUS := 2
## The cells around which points near each corner and edge middle are taken.
const EDGE_CELLS := [Vector2i(0, 0), Vector2i(1, -1)]
## Points just inside each corner and just inside and outside each edge middle, as fractions
## of the way from the centre (just outside a corner is on the edge between two others).
const CORNER_FACTORS := [0.97]
const EDGE_FACTORS := [0.97, 1.03]
## Points anywhere in the cells around (0, 0), none within CLEARANCE tiles of an edge.
const RANDOM_POINTS := 32
const CLEARANCE := 0.01
const SEED := 34


func _initialize() -> void:
	var args := OS.get_cmdline_user_args()
	if args.is_empty():
		printerr("usage: -s res://hex_golden.gd -- OUTPUT.json")
		quit(2)
		return
	var data := golden()
	var file := FileAccess.open(args[0], FileAccess.WRITE)
	if file == null:
		printerr("cannot write %s" % args[0])
		quit(1)
		return
	file.store_string(to_json(data))
	file.close()
	print(args[0])
	print("hex golden: %d cases" % data.cases.size())
	quit(0)


## The golden values: {"godot": version, "cases": [...], "neighbours": [...]}.
static func golden() -> Dictionary:
	var random := RandomNumberGenerator.new()
	random.seed = SEED
	var cases := []
	var neighbours := []
	for layout: String in WIRE_LAYOUTS:
		for tile_size: Vector2i in TILE_SIZES:
			var layer := make_layer(layout, tile_size)
			cases.append(one_case(layout, layer, random))
			layer.free()
		var layer := make_layer(layout, Vector2i(16, 16))
		var cells := []
		var surrounding := []
		for cell in cells_around():
			cells.append([cell.x, cell.y])
			var around := []
			for next: Vector2i in layer.get_surrounding_cells(cell):
				around.append([next.x, next.y])
			surrounding.append(around)
		neighbours.append({"layout": layout, "cells": cells, "surrounding": surrounding})
		layer.free()
	return {
		"godot": Engine.get_version_info().string,
		"generated_by": "engine_clients/godot/tests/hex_golden.gd",
		"cases": cases,
		"neighbours": neighbours,
	}


## A TileMapLayer with a hexagon TileSet in the TileSet layout of the wire [param layout].
static func make_layer(layout: String, tile_size: Vector2i) -> TileMapLayer:
	var tile_set := TileSet.new()
	tile_set.tile_shape = TileSet.TILE_SHAPE_HEXAGON
	tile_set.tile_layout = WIRE_LAYOUTS[layout][0]
	tile_set.tile_offset_axis = WIRE_LAYOUTS[layout][1]
	tile_set.tile_size = tile_size
	var layer := TileMapLayer.new()
	layer.tile_set = tile_set
	return layer


static func cells_around() -> Array[Vector2i]:
	var cells: Array[Vector2i] = []
	for y in range(-RADIUS, RADIUS + 1):
		for x in range(-RADIUS, RADIUS + 1):
			cells.append(Vector2i(x, y))
	return cells


static func one_case(
	layout: String, layer: TileMapLayer, random: RandomNumberGenerator
) -> Dictionary:
	var tile_size := Vector2(layer.tile_set.tile_size)
	var cells := []
	var centres := []
	for cell in cells_around():
		cells.append([cell.x, cell.y])
		var centre := layer.map_to_local(cell)
		centres.append([centre.x, centre.y])
	var points := PackedVector2Array()
	for cell: Vector2i in EDGE_CELLS:
		var centre := layer.map_to_local(cell)
		var offsets := boundary_offsets(layout.ends_with("-r"))
		for i in offsets.size():
			for factor: float in CORNER_FACTORS if i % 2 == 0 else EDGE_FACTORS:
				points.append(quantised(centre + offsets[i] * factor * tile_size))
	while points.size() < EDGE_CELLS.size() * 18 + RANDOM_POINTS:
		var tiles := Vector2(
			random.randf_range(-RADIUS, RADIUS), random.randf_range(-RADIUS, RADIUS)
		)
		var point := quantised(tiles * tile_size)
		if clear_of_edges(layer, point):
			points.append(point)
	var wire_points := []
	var points_cells := []
	for point in points:
		wire_points.append([point.x, point.y])
		var cell := layer.local_to_map(point)
		points_cells.append([cell.x, cell.y])
	return {
		"layout": layout,
		"tile_size": [layer.tile_set.tile_size.x, layer.tile_set.tile_size.y],
		"cells": cells,
		"centres": centres,
		"points": wire_points,
		"points_cells": points_cells,
	}


## True when the points CLEARANCE tiles away from [param point] on either axis are in its
## cell: not on or near an edge, where float32 and float64 may disagree.
static func clear_of_edges(layer: TileMapLayer, point: Vector2) -> bool:
	var cell := layer.local_to_map(point)
	var step := Vector2(layer.tile_set.tile_size) * CLEARANCE
	for offset: Vector2 in [
		Vector2(step.x, 0), Vector2(-step.x, 0), Vector2(0, step.y), Vector2(0, -step.y)
	]:
		if layer.local_to_map(point + offset) != cell:
			return false
	return true


## The hexagon's six corners and six edge middles relative to its centre, in tile units,
## corner first, in turn.
static func boundary_offsets(pointy: bool) -> PackedVector2Array:
	var corners := PackedVector2Array(
		[
			Vector2(0, -0.5),
			Vector2(0.5, -0.25),
			Vector2(0.5, 0.25),
			Vector2(0, 0.5),
			Vector2(-0.5, 0.25),
			Vector2(-0.5, -0.25)
		]
	)
	var offsets := PackedVector2Array()
	for i in corners.size():
		var corner := corners[i] if pointy else Vector2(corners[i].y, corners[i].x)
		var next := corners[(i + 1) % corners.size()]
		next = next if pointy else Vector2(next.y, next.x)
		offsets.append(corner)
		offsets.append((corner + next) * 0.5)
	return offsets


static func quantised(point: Vector2) -> Vector2:
	return (point * 64.0).round() / 64.0


## One case or neighbour list a line, for readable diffs.
static func to_json(data: Dictionary) -> String:
	var lines := PackedStringArray()
	lines.append('{"godot": %s,' % JSON.stringify(data.godot))
	lines.append(' "generated_by": %s,' % JSON.stringify(data.generated_by))
	for key: String in ["cases", "neighbours"]:
		var items := PackedStringArray()
		for item: Dictionary in data[key]:
			items.append("  " + JSON.stringify(item, "", false, true))
		lines.append(' "%s": [' % key)
		lines.append(",\n".join(items))
		lines.append(" ]," if key == "cases" else " ]")
	lines.append("}")
	return "\n".join(lines) + "\n"
