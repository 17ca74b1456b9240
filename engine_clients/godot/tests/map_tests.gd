extends "res://suite_part.gd"
## Uploaded maps against the real server: put_grid, put_tilemap on real TileMapLayers,
## get_map, drop_map, update_map, the sync node and the debug overlay.

## The tiles of the test TileSet: '.' floor (walkable: true), '~' mud (walkable, cost 3),
## ':' sand (walkable, cost 2.25: not a byte), '#' wall (no data: the bool layer's default,
## false), 'R' rock (a physics polygon only: blocked), 'N' grass (a navigation polygon only:
## walkable), ' ' no tile (blocked).
const TILES := {
	".": Vector2i(0, 0),
	"~": Vector2i(1, 0),
	":": Vector2i(2, 0),
	"#": Vector2i(3, 0),
	"R": Vector2i(4, 0),
	"N": Vector2i(5, 0)
}
## What each tile is on the server: 0 blocked, else its cost.
const TILE_VALUES := {".": 1.0, "~": 3.0, ":": 2.25, "#": 0.0, "R": 0.0, "N": 1.0, " ": 0.0}
## A wall of rock (column 4) with one grass tile (4, 3) in it, the only way from the left
## half to the right one; mud and sand on the right.
const TILE_ROWS := [
	"###########",
	"#...R.....#",
	"#...R.~~~.#",
	"#...N.~~~.#",
	"#...R.~:~.#",
	"#...R.....#",
	"###########",
]
const TILE_MAP := "godot_tiles"
const TILE_SIZE := 16

# -- tile maps --------------------------------------------------------------------------------


## A TileSet with the custom data layers "walkable" (bool) and "cost" (float), one physics
## and one navigation layer, and the tiles of [constant TILES] in one atlas.
func make_tile_set(shape := TileSet.TILE_SHAPE_SQUARE) -> TileSet:
	var tile_set := TileSet.new()
	tile_set.tile_shape = shape
	tile_set.tile_size = Vector2i(TILE_SIZE, TILE_SIZE)
	tile_set.add_physics_layer()
	tile_set.add_navigation_layer()
	var source := add_test_tiles(tile_set, TILES.values())
	var square := PackedVector2Array(
		[Vector2(-8, -8), Vector2(8, -8), Vector2(8, 8), Vector2(-8, 8)]
	)
	for tile: String in ".~:":
		source.get_tile_data(TILES[tile], 0).set_custom_data("walkable", true)
	source.get_tile_data(TILES["~"], 0).set_custom_data("cost", 3.0)
	source.get_tile_data(TILES[":"], 0).set_custom_data("cost", 2.25)
	var rock := source.get_tile_data(TILES["R"], 0)
	rock.add_collision_polygon(0)
	rock.set_collision_polygon_points(0, 0, square)
	var navigation := NavigationPolygon.new()
	navigation.add_outline(square)
	source.get_tile_data(TILES["N"], 0).set_navigation_polygon(0, navigation)
	return tile_set


## A TileMapLayer drawn from [param rows] (characters of [constant TILES]) from layer cell
## [param at], placed at [param position] in the world and added to the tree.
func make_layer(rows: Array, at := Vector2i(-3, 2), position := Vector2(40, -24)) -> TileMapLayer:
	var layer := TileMapLayer.new()
	layer.tile_set = make_tile_set()
	layer.position = position
	for y in rows.size():
		for x in rows[y].length():
			var tile: String = rows[y][x]
			if TILES.has(tile):
				layer.set_cell(at + Vector2i(x, y), 0, TILES[tile])
	root.add_child(layer)
	return layer


## [param rows] as the server's cells: 0 blocked, else the cost rounded to 1..255.
func expected_cells(rows: Array) -> PackedByteArray:
	var cells := PackedByteArray()
	for row: String in rows:
		for tile in row:
			cells.append(clampi(roundi(TILE_VALUES[tile]), 0, 255))
	return cells


## The reading rules of put_tilemap, without a server: custom data, physics-only and
## navigation-only tiles, empty cells, the transform; other shapes and transforms refused.
func test_tile_map_reader() -> void:
	var rows := ["#.~N", "R: #"]
	var layer := make_layer(rows, Vector2i(-3, 2), Vector2(40, -24))
	var grid := PathServerTileMapReader.read(layer)
	check_equal(grid.error, "", "the reader reads a layer of square tiles")
	check_equal(grid.rect, Rect2i(-3, 2, 4, 2), "the grid covers the layer's used rect")
	check_equal(grid.cells, expected_cells(rows), "cells: custom data, else polygons, else blocked")
	check_equal(
		grid.costs,
		PackedFloat32Array([0, 1, 3, 1, 0, 2.25, 0, 0]),
		"costs: exact, since 2.25 is not a byte (0 on blocked cells)"
	)
	check_equal(
		grid.origin,
		Vector2(40 - 3 * 16, -24 + 2 * 16),
		"origin: the rect's top-left corner in global coordinates"
	)
	check_equal(grid.cell_size, 16.0, "cell_size: the tile size")
	var by_cell := PackedByteArray()
	var rules := PathServerTileMapReader.Rules.new(layer.tile_set, {})
	for y in range(2, 4):
		for x in range(-3, 1):
			by_cell.append(
				clampi(
					roundi(PathServerTileMapReader.cell_value(layer, Vector2i(x, y), rules)), 0, 255
				)
			)
	check_equal(
		grid.cells, by_cell, "the layer's data decoded directly = the layer asked cell by cell"
	)
	var open := PathServerTileMapReader.read(layer, {"empty_walkable": true})
	check_equal(open.cells[6], 1, "empty_walkable: an empty cell is walkable")
	layer.scale = Vector2(2, 2)
	check_equal(
		PathServerTileMapReader.read(layer).cell_size, 32.0, "a scaled layer: cell_size scales"
	)
	check_rotated_refused(layer, "layer")
	check_isometric_refused(layer)
	layer.tile_set.tile_shape = TileSet.TILE_SHAPE_HEXAGON
	var hexagons := PathServerTileMapReader.read(layer)
	check(
		hexagons.error == "" and hexagons.shape == "hex",
		"hexagon tiles make a hex map (hex_tests.gd)",
		hexagons.error
	)
	layer.queue_free()


# -- uploads ----------------------------------------------------------------------------------


## put_tilemap on a real layer: the server paths through the grass tile in the rock wall,
## in the layer's world coordinates; get_map gives back the cells the tiles say.
func test_put_tilemap() -> void:
	var layer := make_layer(TILE_ROWS)
	var upload := await client.put_tilemap_async(TILE_MAP, layer)
	check(
		(
			upload.ok
			and upload.info.get("width") == 11
			and upload.info.get("height") == 7
			and upload.info.get("rect") == Rect2i(-3, 2, 11, 7)
		),
		"put_tilemap uploads the layer's used rect (11 x 7)",
		upload
	)
	var back := await client.get_map_async(TILE_MAP)
	check_equal(
		back.info.get("cells"), expected_cells(TILE_ROWS), "get_map: the cells the tiles say"
	)
	check(
		back.info.get("costs") is PackedFloat32Array and back.info.costs[7 + 4 * 11] == 2.25,
		"get_map: the exact costs, the sand's 2.25 included",
		back.info.get("costs")
	)
	var to_world := func(cell: Vector2i) -> Vector2:
		return layer.to_global(layer.map_to_local(cell + Vector2i(-3, 2)))
	var found := await client.find_path_async(
		to_world.call(Vector2i(1, 1)),
		to_world.call(Vector2i(8, 1)),
		Vector2i.ONE,
		{"map": TILE_MAP, "smooth": "none"}
	)
	var wrong := []
	var through_grass := false
	for point in found.waypoints:
		var cell := layer.local_to_map(layer.to_local(point)) - Vector2i(-3, 2)
		var tile: String = TILE_ROWS[cell.y][cell.x]
		through_grass = through_grass or tile == "N"
		if TILE_VALUES[tile] == 0.0:
			wrong.append([cell, tile])
	check(
		(
			found.status == "found"
			and wrong.is_empty()
			and through_grass
			and found.waypoints[0] == to_world.call(Vector2i(1, 1))
		),
		(
			"a path on the uploaded layer, in its world coordinates, steps on walkable tiles "
			+ "only and through the grass (navigation polygon) tile"
		),
		[found, wrong]
	)
	var mud := await client.find_path_async(
		Vector2(6, 2),
		Vector2(8, 2),
		Vector2i.ONE,
		{"map": TILE_MAP, "space": "grid", "smooth": "none"}
	)
	var floor_path := await client.find_path_async(
		Vector2(5, 1),
		Vector2(7, 1),
		Vector2i.ONE,
		{"map": TILE_MAP, "space": "grid", "smooth": "none"}
	)
	check(
		mud.ok and floor_path.ok and mud.info.cost > floor_path.info.cost * 2.0,
		(
			"mud's cost (3) counts: two mud steps cost %.2f, two floor steps %.2f"
			% [mud.info.get("cost", 0.0), floor_path.info.get("cost", 0.0)]
		)
	)
	var bad := await client.put_tilemap_async(TILE_MAP, TileMapLayer.new())
	check(
		(
			not bad.ok
			and bad.code == "invalid_request"
			and bad.info.at == "layer"
			and bad.message.contains("no TileSet")
		),
		"put_tilemap of a layer without a TileSet: an error result the caller can read",
		bad
	)
	layer.queue_free()
	await client.drop_map_async(TILE_MAP)


## PathServerTileMapSync: uploads on ready, sends the tiles changed at runtime (one frame's
## edits together), a later path sees them, get_map returns the upload plus the edits; a tile
## placed outside the uploaded rect uploads the layer again.
func test_tile_map_sync() -> void:
	var layer := make_layer(TILE_ROWS, Vector2i.ZERO, Vector2.ZERO)
	var sync := PathServerTileMapSync.new()
	sync.map_name = TILE_MAP
	sync.client = client
	var events := []
	sync.uploaded.connect(func(gen: int) -> void: events.append(["uploaded", gen]))
	sync.synced.connect(func(gen: int, cells: int) -> void: events.append(["synced", gen, cells]))
	sync.sync_failed.connect(
		func(code: String, message: String) -> void: events.append(["failed", code, message])
	)
	var uploads := func() -> int:
		return events.filter(func(e: Array) -> bool: return e[0] == "uploaded").size()
	layer.add_child(sync)
	await wait_until(func() -> bool: return sync.is_synced(), 10.0)
	check(
		sync.gen >= 0 and events.size() == 1 and events[0][0] == "uploaded",
		"the sync node uploads its layer when ready",
		events
	)
	var options := {"map": TILE_MAP, "space": "grid"}
	var before := await client.find_path_async(Vector2(1, 1), Vector2(8, 1), Vector2i.ONE, options)
	# The debug overlay shows what the server has, fetched with get_map.
	var overlay := PathServerDebugDraw2D.new()
	overlay.map_name = TILE_MAP
	overlay.client = client
	root.add_child(overlay)
	await wait_until(func() -> bool: return overlay.gen == sync.gen, 10.0)
	check(
		(
			overlay.cells == expected_cells(TILE_ROWS)
			and overlay.map_size == Vector2i(11, 7)
			and overlay.cell_size == 16.0
		),
		"the debug overlay fetches the map's cells with get_map",
		[overlay.gen, overlay.map_size, overlay.cells]
	)
	var preview := PathServerDebugDraw2D.new()
	preview.tile_map_layer = layer
	root.add_child(preview)
	preview._preview()
	check(
		preview.cells == expected_cells(TILE_ROWS) and preview.origin == Vector2.ZERO,
		"the overlay's editor preview reads the layer as put_tilemap uploads it",
		preview.cells
	)
	preview.queue_free()
	# One frame: the grass becomes rock (the only way through is closed), a floor tile mud.
	layer.set_cell(Vector2i(4, 3), 0, TILES["R"])
	layer.set_cell(Vector2i(1, 5), 0, TILES["~"])
	await wait_until(func() -> bool: return events.size() >= 2 and sync.is_synced(), 10.0)
	check(
		(
			events.size() == 2
			and events[1][0] == "synced"
			and events[1][2] == 2
			and events[1][1] > events[0][1]
		),
		"two tiles changed in one frame are sent as one batch (a new generation)",
		events
	)
	var after := await client.find_path_async(Vector2(1, 1), Vector2(8, 1), Vector2i.ONE, options)
	check(
		before.status == "found" and after.status == "no_path",
		"the path after the edit sees it: the wall is closed (no_path)",
		[before, after]
	)
	var map := await client.get_map_async(TILE_MAP)
	var edited := expected_cells(TILE_ROWS)
	edited[4 + 3 * 11] = 0
	edited[1 + 5 * 11] = 3
	check(
		map.ok and map.info.cells == edited and map.info.gen == sync.gen,
		"get_map: what was uploaded plus the edits, at the sync node's generation",
		map.info
	)
	await wait_until(func() -> bool: return overlay.gen == sync.gen, 10.0)
	check(
		overlay.cells == edited,
		"the debug overlay fetches the map again when its generation changes (the edits)",
		[overlay.gen, sync.gen, overlay.cells]
	)
	overlay.enabled = false
	check(not overlay.visible, "the overlay's enabled toggles it")
	overlay.queue_free()
	layer.erase_cell(Vector2i(4, 3))
	await process_frame
	layer.set_cell(Vector2i(4, 3), 0, TILES["."])
	await wait_until(func() -> bool: return events.size() >= 3 and sync.is_synced(), 10.0)
	var reopened := await client.find_path_async(
		Vector2(1, 1), Vector2(8, 1), Vector2i.ONE, options
	)
	check(
		reopened.status == "found",
		"a tile erased then set again: the way is open again",
		[events, reopened]
	)
	layer.set_cell(Vector2i(11, 3), 0, TILES["."])
	await wait_until(func() -> bool: return uploads.call() == 2 and sync.is_synced(), 10.0)
	var grown := await client.get_map_async(TILE_MAP, Rect2i(0, 0, 1, 1))
	check(
		grown.ok and grown.info.size == Vector2i(12, 7),
		"a tile outside the uploaded rect: the layer is uploaded again (12 x 7)",
		[events, grown.info]
	)
	# Someone else edits the map: the sync node's next update conflicts (if_gen) and the layer,
	# the truth, is uploaded again.
	print("(the WARNING below, a conflict, is expected: another client edits the map)")
	await client.update_map_async(TILE_MAP, {"cells": [Vector2i(2, 2)], "solid": true})
	layer.set_cell(Vector2i(2, 1), 0, TILES["~"])
	await wait_until(func() -> bool: return uploads.call() == 3 and sync.is_synced(), 10.0)
	var restored := await client.get_map_async(TILE_MAP, Rect2i(2, 1, 1, 2))
	check(
		(
			restored.ok
			and restored.info.cells == PackedByteArray([3, 1])
			and events.any(func(e: Array) -> bool: return e[0] == "failed" and e[1] == "conflict")
		),
		"an update that conflicts (if_gen) makes the sync node upload the layer again",
		[events, restored.info]
	)
	layer.queue_free()
	await process_frame
	await client.drop_map_async(TILE_MAP)


## put_grid and get_map with every layer, a region, an update on top; drop_map, then the map
## is gone.
func test_get_map_round_trip() -> void:
	var cells := PackedByteArray([1, 1, 0, 1, 1, 2, 1, 0, 1, 1, 4, 1])
	var costs := PackedFloat32Array([1, 1, 0, 1, 1, 1.5, 1, 0, 1, 1, 4, 300])
	var heights := PackedFloat32Array([0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5])
	var tags := PackedByteArray([0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3])
	var put := await client.put_grid_async(
		"godot_grid",
		Vector2i(4, 3),
		cells,
		{
			"costs": costs,
			"heights": heights,
			"tags": tags,
			"origin": Vector2(-8, 16),
			"cell_size": 4.0
		}
	)
	check(
		(
			put.ok
			and put.info.get("width") == 4
			and put.info.get("height") == 3
			and put.info.get("gen") is int
		),
		"put_grid answers with the map's size and generation",
		put
	)
	var whole := await client.get_map_async("godot_grid")
	var rounded := PackedByteArray([1, 1, 0, 1, 1, 2, 1, 0, 1, 1, 4, 255])
	check(
		(
			whole.ok
			and whole.info.cells == rounded
			and whole.info.costs == costs
			and whole.info.heights == heights
			and whole.info.tags == tags
			and whole.info.origin == Vector2(-8, 16)
			and whole.info.cell_size == 4.0
			and whole.info.size == Vector2i(4, 3)
			and whole.info.region == Rect2i(0, 0, 4, 3)
		),
		(
			"get_map returns what put_grid uploaded (costs, heights and tags as float32 and "
			+ "bytes; a cost of 300 is the byte 255)"
		),
		whole.info
	)
	var edit := await client.update_map_async(
		"godot_grid", {"cells": [Vector2i(1, 1)], "solid": true}, put.info.gen
	)
	var region := await client.get_map_async("godot_grid", Rect2i(1, 1, 2, 2))
	check(
		(
			edit.ok
			and region.ok
			and region.info.cells == PackedByteArray([0, 1, 1, 4])
			and region.info.region == Rect2i(1, 1, 2, 2)
			and region.info.gen == edit.info.gen
		),
		"get_map of a region: the upload plus an update (with if_gen)",
		[edit, region.info]
	)
	var dropped := await client.drop_map_async("godot_grid")
	var gone := await client.find_path_async(
		Vector2(0, 0), Vector2(1, 0), Vector2i.ONE, {"map": "godot_grid", "space": "grid"}
	)
	check(
		dropped.ok and gone.code == "unknown_map",
		"drop_map: the map is gone (unknown_map)",
		[dropped, gone]
	)


## Bad uploads and edits give error results the caller can read: code, message, at.
func test_upload_errors() -> void:
	var cases := [
		[
			"cells of the wrong size",
			await client.put_grid_async("godot_bad", Vector2i(3, 2), PackedByteArray([1, 1, 1])),
			"invalid_request",
			"cells"
		],
		[
			"costs of the wrong size",
			await client.put_grid_async(
				"godot_bad",
				Vector2i(2, 1),
				PackedByteArray([1, 1]),
				{"costs": PackedFloat32Array([1])}
			),
			"invalid_request",
			"costs"
		],
		[
			"a NaN cost",
			await client.put_grid_async(
				"godot_bad",
				Vector2i(2, 1),
				PackedByteArray([1, 1]),
				{"costs": PackedFloat32Array([1, NAN])}
			),
			"non_finite",
			"costs"
		],
		[
			"width 0",
			await client.put_grid_async("godot_bad", Vector2i(0, 1), PackedByteArray()),
			"invalid_request",
			"width"
		],
		[
			"a map file's name",
			await client.put_grid_async(MAP, Vector2i(1, 1), PackedByteArray([1])),
			"conflict",
			null
		],
		["drop_map of a map file", await client.drop_map_async(MAP), "conflict", null],
		[
			"drop_map of a name never uploaded",
			await client.drop_map_async("godot_never"),
			"unknown_map",
			"map"
		],
		[
			"get_map of a region outside the map",
			await client.get_map_async(MAP, Rect2i(15, 5, 10, 2)),
			"out_of_bounds",
			"region"
		],
	]
	for case: Array in cases:
		var result: PathServerResult = case[1]
		check(
			(
				not result.ok
				and result.code == case[2]
				and (case[3] == null or result.info.get("at") == case[3])
				and result.message != ""
			),
			"%s: %s%s" % [case[0], case[2], "" if case[3] == null else " at %s" % case[3]],
			result
		)
	var upload := await client.put_grid_async("godot_bad", Vector2i(2, 1), PackedByteArray([1, 1]))
	var stale := await client.update_map_async(
		"godot_bad", {"cells": [Vector2i(0, 0)], "solid": true}, upload.info.gen + 100
	)
	check(
		not stale.ok and stale.code == "conflict" and stale.info.get("gen") == upload.info.gen,
		"update with a stale if_gen: conflict, info.gen the current generation",
		stale
	)
	await client.drop_map_async("godot_bad")


## put_tilemap of a 256 x 256 layer: how long reading it and uploading it take.
func test_put_tilemap_timing() -> void:
	var layer := TileMapLayer.new()
	layer.tile_set = make_tile_set()
	root.add_child(layer)
	var tiles: Array = TILES.values()
	for y in 256:
		for x in 256:
			layer.set_cell(Vector2i(x, y), 0, tiles[(x * 7 + y * 3) % tiles.size()])
	# The layer's own first update of 65,536 new tiles (rendering, collision) takes frames of
	# its own; not part of what is measured here.
	await process_frame
	await process_frame
	var started := Time.get_ticks_usec()
	var grid := PathServerTileMapReader.read(layer)
	var read_ms := (Time.get_ticks_usec() - started) / 1000.0
	started = Time.get_ticks_usec()
	var upload := await client.put_tilemap_async("godot_big", layer)
	var total_ms := (Time.get_ticks_usec() - started) / 1000.0
	check(
		grid.error == "" and upload.ok and total_ms < 5000.0,
		"put_tilemap of a 256 x 256 layer: %.0f ms (reading it: %.0f ms)" % [total_ms, read_ms],
		upload
	)
	var sync := PathServerTileMapSync.new()
	sync.map_name = "godot_big"
	sync.client = client
	layer.add_child(sync)
	await wait_until(func() -> bool: return sync.is_synced(), 10.0)
	var looks := 20
	started = Time.get_ticks_usec()
	for i in looks:
		sync._look_for_edits()
	var look_ms := (Time.get_ticks_usec() - started) / 1000.0 / looks
	layer.set_cell(Vector2i(100, 100), 0, TILES["#"])
	started = Time.get_ticks_usec()
	sync._look_for_edits()
	var diff_ms := (Time.get_ticks_usec() - started) / 1000.0
	check(
		sync._dirty.keys() == [Vector3i(100, 100, 0)],
		(
			(
				"the sync node's look for edits on 65,536 tiles: %.2f ms unchanged, "
				+ "%.2f ms to find one edited tile"
			)
			% [look_ms, diff_ms]
		),
		sync._dirty.keys().slice(0, 5)
	)
	layer.queue_free()
	await process_frame
	await client.drop_map_async("godot_big")


## A TileSet's custom data layer "tag" (String) becomes the uploaded map's tags and tag names.
func test_tile_map_tags() -> void:
	var layer := make_layer(TILE_ROWS)
	var tile_set := layer.tile_set
	tile_set.add_custom_data_layer()
	var tag_id := tile_set.get_custom_data_layers_count() - 1
	tile_set.set_custom_data_layer_name(tag_id, "tag")
	tile_set.set_custom_data_layer_type(tag_id, TYPE_STRING)
	var source := tile_set.get_source(0) as TileSetAtlasSource
	source.get_tile_data(TILES["~"], 0).set_custom_data("tag", "mud")
	source.get_tile_data(TILES[":"], 0).set_custom_data("tag", "sand")
	var grid := PathServerTileMapReader.read(layer)
	var width: int = grid.size.x
	check_equal(
		[grid.tag_names, grid.tags[2 * width + 6], grid.tags[4 * width + 7], grid.tags[width + 1]],
		[{"mud": 1, "sand": 2}, 1, 2, 0],
		"TileMapReader: a String custom data layer 'tag' gives each cell its tag, names numbered"
	)
	var upload := await client.put_tilemap_async(
		"godot_tagged_tiles", layer, {"classes": {"dry": {"mud": null, "sand": null}}}
	)
	var grid_options := {"space": "grid", "map": "godot_tagged_tiles"}
	var wet := await client.find_path_async(
		Vector2(1, 3), Vector2(7, 3), Vector2i.ONE, grid_options
	)
	grid_options["traversal"] = "dry"
	var dry := await client.find_path_async(
		Vector2(1, 3), Vector2(7, 3), Vector2i.ONE, grid_options
	)
	check_equal(
		[upload.ok, wet.status, wet.info.get("goal_snapped"), dry.info.get("goal_snapped")],
		[true, "found", false, true],
		"put_tilemap uploads the tags: the class 'dry' may not stand in the mud (the goal snaps)"
	)
	await client.drop_map_async("godot_tagged_tiles")
	layer.queue_free()
