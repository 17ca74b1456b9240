extends "res://suite_part.gd"
## Hex maps: PathServerHexes against Godot's golden values and the engine itself, the reader
## on hexagon TileMapLayers of every layout, the debug overlay's hexagons, and, against the
## server, uploads of hex layers and their paths compared with AStar2D joined by
## get_surrounding_cells (skipped, with the reason printed, by a server that refuses hex
## maps).

## Every hexagon layout of a TileSet: [name, TileSet.TileLayout].
const LAYER_LAYOUTS := [
	["stacked", TileSet.TILE_LAYOUT_STACKED],
	["stacked_offset", TileSet.TILE_LAYOUT_STACKED_OFFSET],
	["stairs_right", TileSet.TILE_LAYOUT_STAIRS_RIGHT],
	["stairs_down", TileSet.TILE_LAYOUT_STAIRS_DOWN],
	["diamond_right", TileSet.TILE_LAYOUT_DIAMOND_RIGHT],
	["diamond_down", TileSet.TILE_LAYOUT_DIAMOND_DOWN],
]
const AXES := [
	["horizontal", TileSet.TILE_OFFSET_AXIS_HORIZONTAL],
	["vertical", TileSet.TILE_OFFSET_AXIS_VERTICAL],
]
## The test tiles: "." floor, "~" mud (cost 3), "#" wall; what each is on the server.
const TILES := {".": Vector2i(0, 0), "~": Vector2i(1, 0), "#": Vector2i(2, 0)}
const TILE_VALUES := {".": 1, "~": 3, "#": 0, " ": 0}
const HEX_MAP := "godot_hexes"


## Godot's values, tests/data/hex_godot.json (engine_clients/godot/tests/hex_golden.gd).
func golden_values() -> Dictionary:
	var path := ProjectSettings.globalize_path("res://").path_join(
		"../../../tests/data/hex_godot.json"
	)
	var parsed: Variant = JSON.parse_string(FileAccess.get_file_as_string(path))
	return parsed if parsed is Dictionary else {}


## A TileSet of hexagons with [constant TILES] ("walkable" bool and "cost" float layers).
func make_hex_tile_set(
	tile_layout: int, offset_axis: int, tile_size := Vector2i(16, 16)
) -> TileSet:
	var tile_set := TileSet.new()
	tile_set.tile_shape = TileSet.TILE_SHAPE_HEXAGON
	tile_set.tile_layout = tile_layout
	tile_set.tile_offset_axis = offset_axis
	tile_set.tile_size = tile_size
	var source := add_test_tiles(tile_set, TILES.values())
	source.get_tile_data(TILES["."], 0).set_custom_data("walkable", true)
	source.get_tile_data(TILES["~"], 0).set_custom_data("walkable", true)
	source.get_tile_data(TILES["~"], 0).set_custom_data("cost", 3.0)
	return tile_set


## A hexagon layer whose cell (x, y) of [param rect] holds [method tile_of]'s tile, placed
## at [param position] with [param scale] and added to the tree.
func make_hex_layer(
	tile_layout: int,
	offset_axis: int,
	rect: Rect2i,
	position := Vector2(40, -24),
	scale := Vector2(2, 1.5),
	tile_size := Vector2i(16, 16),
	seed_value := 0
) -> TileMapLayer:
	var layer := TileMapLayer.new()
	layer.tile_set = make_hex_tile_set(tile_layout, offset_axis, tile_size)
	layer.position = position
	layer.scale = scale
	for y in range(rect.position.y, rect.end.y):
		for x in range(rect.position.x, rect.end.x):
			var tile := tile_of(Vector2i(x, y), seed_value)
			if TILES.has(tile):
				layer.set_cell(Vector2i(x, y), 0, TILES[tile])
	root.add_child(layer)
	return layer


## A fixed scatter of tiles: mostly floor, some mud, walls and holes.
static func tile_of(cell: Vector2i, seed_value := 0) -> String:
	var roll := posmod(cell.x * 73856093 ^ cell.y * 19349663 ^ seed_value * 83492791, 100)
	if roll < 60:
		return "."
	if roll < 72:
		return "~"
	if roll < 92:
		return "#"
	return " "


static func layout_name(tile_layout: Array, axis: Array) -> String:
	return "%s/%s" % [tile_layout[0], axis[0]]


# -- the helpers ------------------------------------------------------------------------------


## PathServerHexes against the golden values Godot gave for the wire layouts: centres,
## the cells of points near edges and anywhere, and the neighbours.
func test_helpers_match_golden_values() -> void:
	var golden_data := golden_values()
	check(golden_data.has("cases"), "tests/data/hex_godot.json is read", golden_data.keys())
	var wrong := []
	for case: Dictionary in golden_data.get("cases", []):
		var tile_size := Vector2(case.tile_size[0], case.tile_size[1])
		for i in case.cells.size():
			var cell := Vector2i(case.cells[i][0], case.cells[i][1])
			var centre := Vector2(case.centres[i][0], case.centres[i][1])
			if PathServerHexes.world_center(case.layout, cell, Vector2.ZERO, tile_size) != centre:
				wrong.append([case.layout, tile_size, cell, "centre"])
		for i in case.points.size():
			var point := Vector2(case.points[i][0], case.points[i][1])
			var cell := Vector2i(case.points_cells[i][0], case.points_cells[i][1])
			if PathServerHexes.cell_at(case.layout, point, Vector2.ZERO, tile_size) != cell:
				wrong.append([case.layout, tile_size, point, cell])
	for entry: Dictionary in golden_data.get("neighbours", []):
		for i in entry.cells.size():
			var cell := Vector2i(entry.cells[i][0], entry.cells[i][1])
			var expected := {}
			for pair: Array in entry.surrounding[i]:
				expected[Vector2i(pair[0], pair[1])] = true
			var around := {}
			for next in PathServerHexes.neighbours(entry.layout, cell):
				around[next] = true
			if around != expected:
				wrong.append([entry.layout, cell, "neighbours"])
	check(
		wrong.is_empty() and golden_data.get("cases", []).size() == 16,
		"PathServerHexes: centres, cells of points and neighbours as Godot gave them",
		wrong.slice(0, 5)
	)


## The same against the running engine, for every hexagon layout a TileSet has: the layer
## cell <-> axial conversion, centres, the hexagon holding a point, neighbours, and that
## the golden values are still what this engine says.
func test_helpers_match_the_engine() -> void:
	var wrong := []
	for tile_layout: Array in LAYER_LAYOUTS:
		for axis: Array in AXES:
			var name := layout_name(tile_layout, axis)
			for tile_size: Vector2i in [Vector2i(16, 16), Vector2i(37, 50)]:
				var layer := TileMapLayer.new()
				layer.tile_set = make_hex_tile_set(tile_layout[1], axis[1], tile_size)
				_check_layer_geometry(layer, name, wrong)
				layer.free()
	check(
		wrong.is_empty(),
		"every TileSet hexagon layout: layer cells <-> axial, centres, cells and neighbours",
		wrong.slice(0, 5)
	)
	var golden_data := golden_values()
	var engine_data: Dictionary = load("res://hex_golden.gd").golden()
	# Through JSON both ways: the file's numbers parse as floats.
	var engine_json := JSON.stringify(JSON.parse_string(JSON.stringify(engine_data)))
	engine_data = JSON.parse_string(engine_json)
	check(
		(
			JSON.stringify(engine_data.cases) == JSON.stringify(golden_data.get("cases"))
			and (
				JSON.stringify(engine_data.neighbours)
				== JSON.stringify(golden_data.get("neighbours"))
			)
		),
		"tests/data/hex_godot.json is what this engine (%s) gives" % engine_data.godot,
		"regenerate it with hex_golden.gd, written by %s" % golden_data.get("godot")
	)


func _check_layer_geometry(layer: TileMapLayer, name: String, wrong: Array) -> void:
	var tile_set := layer.tile_set
	var base := PathServerHexes.base_layout(tile_set.tile_layout, tile_set.tile_offset_axis)
	var tile_size := Vector2(tile_set.tile_size)
	var to_base := func(coords: Vector2i) -> Vector2i:
		return PathServerHexes.from_axial(
			base,
			PathServerHexes.layer_to_axial(tile_set.tile_layout, tile_set.tile_offset_axis, coords)
		)
	var to_layer := func(cell: Vector2i) -> Vector2i:
		return PathServerHexes.axial_to_layer(
			tile_set.tile_layout, tile_set.tile_offset_axis, PathServerHexes.to_axial(base, cell)
		)
	for y in range(-4, 5):
		for x in range(-4, 5):
			var coords := Vector2i(x, y)
			var cell: Vector2i = to_base.call(coords)
			var local := layer.map_to_local(coords)
			if to_layer.call(cell) != coords:
				wrong.append([name, coords, "round trip", cell])
			if not (
				PathServerHexes
				. world_center(base, cell, Vector2.ZERO, tile_size)
				. is_equal_approx(local)
			):
				wrong.append([name, coords, "centre", local])
			if PathServerHexes.cell_at(base, local, Vector2.ZERO, tile_size) != cell:
				wrong.append([name, coords, "cell at the centre"])
			var expected := {}
			for next: Vector2i in layer.get_surrounding_cells(coords):
				expected[to_base.call(next)] = true
			var around := {}
			for next in PathServerHexes.neighbours(base, cell):
				around[next] = true
			if around != expected:
				wrong.append([name, coords, "neighbours"])
	var random := RandomNumberGenerator.new()
	random.seed = 7
	for i in 200:
		var point := Vector2(random.randf_range(-60, 60), random.randf_range(-60, 60))
		var engine_cell := layer.local_to_map(point)
		var step := tile_size * 0.005
		var clear := true
		for offset: Vector2 in [Vector2(step.x, 0), Vector2(-step.x, 0), Vector2(0, step.y)]:
			clear = clear and layer.local_to_map(point + offset) == engine_cell
		var cell: Vector2i = to_layer.call(
			PathServerHexes.cell_at(base, point, Vector2.ZERO, tile_size)
		)
		if clear and cell != engine_cell:
			wrong.append([name, point, "cell of a point", cell, engine_cell])


## Offset <-> axial round trips, distance, balls and hexagon corners on small cases.
func test_helpers() -> void:
	var wrong := []
	for layout in PathServerHexes.LAYOUTS:
		for y in range(-5, 6):
			for x in range(-5, 6):
				var cell := Vector2i(x, y)
				if (
					PathServerHexes.from_axial(layout, PathServerHexes.to_axial(layout, cell))
					!= cell
				):
					wrong.append([layout, cell, "axial"])
				var cube := PathServerHexes.to_cube(layout, cell)
				if cube.x + cube.y + cube.z != 0:
					wrong.append([layout, cell, "cube"])
				for next in PathServerHexes.neighbours(layout, cell):
					if PathServerHexes.distance(layout, cell, next) != 1:
						wrong.append([layout, cell, next, "distance"])
		var ball := PathServerHexes.ball(layout, Vector2i(2, -3), 2)
		var within := ball.size() == 19
		for cell in ball:
			within = within and PathServerHexes.distance(layout, cell, Vector2i(2, -3)) <= 2
		if not within:
			wrong.append([layout, "ball", ball])
		var corners := PathServerHexes.polygon(
			layout, Vector2i(1, 1), Vector2(5, 5), Vector2(16, 20)
		)
		var centre := PathServerHexes.world_center(
			layout, Vector2i(1, 1), Vector2(5, 5), Vector2(16, 20)
		)
		var sum := Vector2.ZERO
		for corner in corners:
			sum += corner
		if corners.size() != 6 or not (sum / 6.0).is_equal_approx(centre):
			wrong.append([layout, "polygon", corners])
	check_equal(
		PathServerHexes.distance("odd-q", Vector2i(0, 0), Vector2i(3, 4)), 6, "hex distance"
	)
	check(wrong.is_empty(), "PathServerHexes: axial, cube, distance, ball, polygon", wrong)


# -- the reader -------------------------------------------------------------------------------


## Every hexagon layout on either offset axis, read: each layer cell lands on a grid cell
## whose centre in the wire's convention is where the layer draws the tile (map_to_local,
## through a moved and unevenly scaled layer), with its value; the mapping goes back; every
## other grid cell is blocked. The rect starts on an odd row and column.
func test_reader_converts_every_layout() -> void:
	var rect := Rect2i(-3, 3, 9, 7)
	for tile_layout: Array in LAYER_LAYOUTS:
		for axis: Array in AXES:
			var name := layout_name(tile_layout, axis)
			var layer := make_hex_layer(tile_layout[1], axis[1], rect)
			var grid := PathServerTileMapReader.read(layer)
			var wrong := []
			if grid.error != "":
				wrong.append(grid.error)
			else:
				wrong = _reader_problems(layer, grid, rect)
			var stacked: bool = tile_layout[0].begins_with("stacked")
			check(
				(
					wrong.is_empty()
					and grid.get("shape") == "hex"
					and grid.get("cell_size") == Vector2(32, 24)
					and (grid.get("size") == rect.size or not stacked)
				),
				"the reader converts a %s hex layer to %s" % [name, grid.get("layout")],
				wrong.slice(0, 5)
			)
			var open := PathServerTileMapReader.read(layer, {"empty_walkable": true})
			var holes_open := true
			var outside_blocked := true
			for i in open.cells.size():
				var at := Vector2i(i % open.size.x, i / open.size.x)
				var coords: Vector2i = open.mapping.to_layer(at)
				if not rect.has_point(coords):
					outside_blocked = outside_blocked and open.cells[i] == 0
				elif tile_of(coords) == " ":
					holes_open = holes_open and open.cells[i] == 1
			check(
				holes_open and outside_blocked,
				"empty_walkable on a %s hex layer: holes open, cells around the rect blocked" % name
			)
			layer.queue_free()


func _reader_problems(layer: TileMapLayer, grid: Dictionary, rect: Rect2i) -> Array:
	var wrong := []
	var mapping: PathServerTileMapReader.Mapping = grid.mapping
	var seen := {}
	for y in range(rect.position.y, rect.end.y):
		for x in range(rect.position.x, rect.end.x):
			var coords := Vector2i(x, y)
			var at := mapping.to_grid(coords)
			if at.x < 0 or at.y < 0 or at.x >= grid.size.x or at.y >= grid.size.y:
				wrong.append([coords, "outside the grid", at])
				continue
			seen[at] = true
			var world := layer.to_global(layer.map_to_local(coords))
			var centre := PathServerHexes.world_center(grid.layout, at, grid.origin, grid.cell_size)
			if not centre.is_equal_approx(world):
				wrong.append([coords, at, "centre", centre, world])
			if mapping.to_layer(at) != coords:
				wrong.append([coords, at, "back", mapping.to_layer(at)])
			if grid.cells[at.y * grid.size.x + at.x] != TILE_VALUES[tile_of(coords)]:
				wrong.append([coords, at, "value", grid.cells[at.y * grid.size.x + at.x]])
			var point := world + Vector2(3.0, -2.0)
			var cell_of_point := PathServerHexes.cell_at(
				grid.layout, point, grid.origin, grid.cell_size
			)
			if mapping.to_layer(cell_of_point) != layer.local_to_map(layer.to_local(point)):
				wrong.append([coords, "a point near the centre", cell_of_point])
	for i in grid.cells.size():
		if grid.cells[i] != 0 and not seen.has(Vector2i(i % grid.size.x, i / grid.size.x)):
			wrong.append(["an open cell outside the layer's rect", i])
	return wrong


## Tiles the reader cannot upload: isometric, a rotated or mirrored hexagon layer.
func test_reader_refusals() -> void:
	var layer := make_hex_layer(
		TileSet.TILE_LAYOUT_STACKED, TileSet.TILE_OFFSET_AXIS_HORIZONTAL, Rect2i(0, 0, 3, 3)
	)
	check_rotated_refused(layer, "hexagon layer")
	layer.scale = Vector2(-1, 1)
	check(
		PathServerTileMapReader.read(layer).error.contains("flipped"),
		"a mirrored hexagon layer is refused"
	)
	layer.scale = Vector2.ONE
	check_isometric_refused(layer)
	layer.queue_free()


## The overlay on a hex map: the cell under a point is the hexagon's, footprints are balls,
## and it draws without errors.
func test_debug_draw_hexes() -> void:
	var overlay := PathServerDebugDraw2D.new()
	overlay.gen = 0  # no fetch of the client's map: these cells stay
	root.add_child(overlay)
	var cells := PackedByteArray()
	cells.resize(6 * 5)
	cells.fill(1)
	cells[7] = 0
	cells[8] = 4
	overlay._show_cells(Vector2i(6, 5), cells, Vector2(10, 20), Vector2(16, 18), "hex", "even-q")
	var wrong := []
	for y in 5:
		for x in 6:
			var centre := PathServerHexes.world_center(
				"even-q", Vector2i(x, y), Vector2(10, 20), Vector2(16, 18)
			)
			if overlay.cell_of(centre + Vector2(2, -3)) != Vector2i(x, y):
				wrong.append(Vector2i(x, y))
	overlay.path = PackedVector2Array(
		[
			PathServerHexes.world_center(
				"even-q", Vector2i(0, 0), Vector2(10, 20), Vector2(16, 18)
			),
			PathServerHexes.world_center("even-q", Vector2i(4, 3), Vector2(10, 20), Vector2(16, 18))
		]
	)
	overlay.unit_size = Vector2i(2, 2)
	await process_frame
	await process_frame
	check(
		(
			wrong.is_empty()
			and overlay._footprint(Vector2i(2, 2), Vector2i(2, 2)).size() == 7
			and overlay._cells_item.material == null
		),
		"PathServerDebugDraw2D on a hex map: hexagon cells, 7-cell footprints of size 2",
		wrong
	)
	overlay.queue_free()


# -- against the server -----------------------------------------------------------------------


## Uploads [param layer]; null with a printed SKIP line when the server refuses hex maps.
func upload_or_skip(name: String, layer: TileMapLayer, what: String) -> PathServerResult:
	var upload := await client.put_tilemap_async(name, layer)
	if upload.ok:
		return upload
	var at: Variant = upload.info.get("at")
	if upload.code == "invalid_request" and at in [null, "shape", "layout", "cell_size"]:
		print(
			(
				"SKIP  %s: the server refuses hex maps (%s at %s: %s)"
				% [what, upload.code, at, upload.message]
			)
		)
		return null
	check(false, "%s: the hex layer uploads" % what, upload)
	return null


## put_tilemap on hex layers: get_map gives the shape, layout, tile size and cells back,
## and a path's waypoints, in the layer's world coordinates, are tile centres one hex step
## apart on walkable tiles.
func test_put_hex_tilemap() -> void:
	var rect := Rect2i(-3, 3, 9, 7)
	for tile_layout: Array in [LAYER_LAYOUTS[0], LAYER_LAYOUTS[3]]:
		for axis: Array in AXES:
			var name := layout_name(tile_layout, axis)
			var layer := make_hex_layer(tile_layout[1], axis[1], rect)
			var what := "put_tilemap of a %s hex layer" % name
			var upload := await upload_or_skip(HEX_MAP, layer, what)
			if upload == null:
				layer.queue_free()
				return
			var grid := PathServerTileMapReader.read(layer)
			var back := await client.get_map_async(HEX_MAP)
			check(
				(
					back.ok
					and back.info.get("shape") == "hex"
					and back.info.get("layout") == grid.layout
					and back.info.get("cell_size") == grid.cell_size
					and back.info.get("origin") == grid.origin
					and back.info.get("cells") == grid.cells
				),
				"%s: get_map gives its shape, layout, tile size, origin and cells" % what,
				back
			)
			await _check_a_hex_path(layer, grid, what)
			layer.queue_free()


func _check_a_hex_path(layer: TileMapLayer, grid: Dictionary, what: String) -> void:
	var open := []
	for i in grid.cells.size():
		if grid.cells[i] != 0:
			open.append(grid.mapping.to_layer(Vector2i(i % grid.size.x, i / grid.size.x)))
	var start: Vector2i = open[0]
	var goal: Vector2i = open[-1]
	var found := await client.find_path_async(
		layer.to_global(layer.map_to_local(start)),
		layer.to_global(layer.map_to_local(goal)),
		Vector2i.ONE,
		{"map": HEX_MAP, "smooth": "none"}
	)
	var wrong := []
	var previous := start
	for i in found.waypoints.size():
		var point := found.waypoints[i]
		var coords := layer.local_to_map(layer.to_local(point))
		if not layer.to_global(layer.map_to_local(coords)).is_equal_approx(point):
			wrong.append([point, "not a tile centre"])
		if TILE_VALUES[tile_of(coords)] == 0:
			wrong.append([coords, "blocked"])
		if i > 0 and not layer.get_surrounding_cells(previous).has(coords):
			wrong.append([previous, coords, "not neighbours"])
		previous = coords
	check(
		found.status == "found" and wrong.is_empty() and previous == goal,
		"%s: a path steps from tile centre to neighbouring tile centre" % what,
		[found, wrong.slice(0, 5)]
	)


## The issue's comparison: on the same tiles, every cell cost 1, the server's path lengths
## equal those of AStar2D joined by TileMapLayer.get_surrounding_cells (Godot's own
## neighbour rule), for every hexagon layout on either axis.
func test_paths_match_astar2d() -> void:
	var rect := Rect2i(-2, 1, 14, 10)
	for tile_layout: Array in LAYER_LAYOUTS:
		for axis: Array in AXES:
			var name := layout_name(tile_layout, axis)
			var layer := make_hex_layer(
				tile_layout[1], axis[1], rect, Vector2(8, 4), Vector2.ONE, Vector2i(32, 28), 5
			)
			for coords in layer.get_used_cells():
				if layer.get_cell_atlas_coords(coords) == TILES["~"]:
					layer.set_cell(coords, 0, TILES["."])
			var what := "server path lengths = AStar2D's on a %s hex layer" % name
			var upload := await upload_or_skip(HEX_MAP, layer, what)
			if upload == null:
				layer.queue_free()
				return
			var astar := AStar2D.new()
			var ids := {}
			for coords in layer.get_used_cells():
				if layer.get_cell_atlas_coords(coords) == TILES["."]:
					ids[coords] = ids.size()
					astar.add_point(ids[coords], layer.map_to_local(coords))
			for coords: Vector2i in ids:
				for next in layer.get_surrounding_cells(coords):
					if ids.has(next):
						astar.connect_points(ids[coords], ids[next])
			var cells: Array = ids.keys()
			var random := RandomNumberGenerator.new()
			random.seed = 11
			var wrong := []
			var reached := 0
			for i in 24:
				var start: Vector2i = cells[random.randi_range(0, cells.size() - 1)]
				var goal: Vector2i = cells[random.randi_range(0, cells.size() - 1)]
				if goal == start:
					continue
				var expected := astar.get_id_path(ids[start], ids[goal]).size() - 1
				var found := await client.find_path_async(
					layer.to_global(layer.map_to_local(start)),
					layer.to_global(layer.map_to_local(goal)),
					Vector2i.ONE,
					{"map": HEX_MAP, "smooth": "none"}
				)
				var steps := found.waypoints.size() - 1 if found.status == "found" else -1
				reached += 1 if expected >= 0 else 0
				if steps != expected or (found.status == "found") != (expected >= 0):
					wrong.append([start, goal, steps, expected, found.status])
			check(wrong.is_empty() and reached > 0, what, wrong.slice(0, 5))
			layer.queue_free()


## PathServerTileMapSync on a stairs layer: uploads it as a hex map, converts cells both
## ways, and sends an edit to the right grid cell.
func test_hex_tile_map_sync() -> void:
	var rect := Rect2i(0, 0, 6, 5)
	var layer := make_hex_layer(
		TileSet.TILE_LAYOUT_STAIRS_RIGHT, TileSet.TILE_OFFSET_AXIS_VERTICAL, rect
	)
	var probe := await upload_or_skip(HEX_MAP, layer, "PathServerTileMapSync on a hex layer")
	if probe == null:
		layer.queue_free()
		return
	var sync := PathServerTileMapSync.new()
	sync.map_name = HEX_MAP
	layer.add_child(sync)
	await sync.uploaded
	var coords := Vector2i(2, 2)
	var cell := sync.to_grid_cell(coords)
	sync.set_cell(coords, 0, TILES["#"])
	await wait_until(sync.is_synced, 5.0)
	var back := await client.get_map_async(HEX_MAP, Rect2i(cell, Vector2i.ONE))
	check(
		(
			sync.to_layer_cell(cell) == coords
			and back.ok
			and back.info.get("cells") == PackedByteArray([0])
		),
		"PathServerTileMapSync on a hex layer: a wall set on a layer cell lands on its grid cell",
		[cell, back]
	)
	layer.queue_free()
