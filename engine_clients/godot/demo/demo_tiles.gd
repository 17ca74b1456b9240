extends RefCounted
## What the demo's scenes share: their TileSets, made in code (square floor, wall, mud;
## hexagon grass, rock, forest, water), the keys that switch between the scenes, the waits for
## the server and the level's upload, the status line, the failure count and the command line.

## Atlas coordinates of the tiles in [method make_tile_set]'s one source (id 0).
const FLOOR := Vector2i(0, 0)
const WALL := Vector2i(1, 0)
const MUD := Vector2i(2, 0)
## Terrain cost of mud (custom data "cost").
const MUD_COST := 2.0
## Atlas coordinates of the hexagon tiles in [method make_hex_tile_set]'s source (id 0): grass
## (FLOOR), rock (WALL), forest and water.
const FOREST := Vector2i(2, 0)
const WATER := Vector2i(3, 0)
## Terrain cost of forest (custom data "cost").
const FOREST_COST := 2.0
## The demo's scenes, by the name `--scene=NAME` and the keys F1 to F5 use.
const SCENES := {
	"formation": "res://main.tscn",
	"rts": "res://rts.tscn",
	"tactics": "res://tactics.tscn",
	"hex": "res://hex.tscn",
	"floors": "res://floors.tscn",
}
const SCENE_KEYS := {
	KEY_F1: "formation", KEY_F2: "rts", KEY_F3: "tactics", KEY_F4: "hex", KEY_F5: "floors"
}


## A TileSet of square tiles of [param size] pixels: floor (walkable), wall (walkable false)
## and mud (walkable, cost 2, tagged "mud"), in the custom data layers
## [PathServerTileMapReader] reads, drawn in [param colors] (floor, wall, mud).
static func make_tile_set(
	size: int, colors := [Color("26323a"), Color("78909c"), Color("5d4a36")]
) -> TileSet:
	var tile_set := TileSet.new()
	tile_set.tile_size = Vector2i(size, size)
	_add_custom_data_layers(tile_set)
	var image := Image.create(size * 3, size, false, Image.FORMAT_RGBA8)
	for i in colors.size():
		image.fill_rect(Rect2i(i * size, 0, size, size), colors[i])
		# A darker rim, so cells read as cells.
		var rim: Color = colors[i].darkened(0.25)
		image.fill_rect(Rect2i(i * size, size - 1, size, 1), rim)
		image.fill_rect(Rect2i(i * size + size - 1, 0, 1, size), rim)
	_add_source(tile_set, image, [FLOOR, WALL, MUD], [MUD, MUD_COST, "mud"])
	return tile_set


## A TileSet of pointy-top hexagons of [param size] pixels (stacked, the odd rows shoved
## right: the wire's "odd-r"), drawn in code: grass (walkable), rock and water (not walkable)
## and forest (walkable, cost 2, tagged "forest"), in the custom data layers
## [PathServerTileMapReader] reads.
static func make_hex_tile_set(size: Vector2i) -> TileSet:
	var tile_set := TileSet.new()
	tile_set.tile_shape = TileSet.TILE_SHAPE_HEXAGON
	tile_set.tile_layout = TileSet.TILE_LAYOUT_STACKED
	tile_set.tile_offset_axis = TileSet.TILE_OFFSET_AXIS_HORIZONTAL
	tile_set.tile_size = size
	_add_custom_data_layers(tile_set)
	var tiles := [FLOOR, WALL, FOREST, WATER]
	var colors := [Color("3f5f3a"), Color("8a8f98"), Color("2c4a2a"), Color("2b5d8c")]
	var image := Image.create(size.x * tiles.size(), size.y, false, Image.FORMAT_RGBA8)
	for i in tiles.size():
		_draw_hexagon_tile(image, Vector2i(i * size.x, 0), size, colors[i], tiles[i])
	_add_source(tile_set, image, tiles, [FOREST, FOREST_COST, "forest"])
	return tile_set


## Switches scenes on F1 to F5; true when [param event] did.
static func switch_scene(event: InputEvent, tree: SceneTree) -> bool:
	var key := event as InputEventKey
	if key and key.pressed and SCENE_KEYS.has(key.keycode):
		tree.change_scene_to_file.call_deferred(SCENES[SCENE_KEYS[key.keycode]])
		return true
	return false


## Waits for the server, telling the player through [param show] (a
## [code]func(text: String)[/code]); false, once told, when there is none.
static func wait_for_server(show: Callable) -> bool:
	show.call("waiting for the server...")
	if await PathServer.wait_connected():
		return true
	show.call("no server at %s: see the output" % PathServer.endpoint)
	return false


## Waits for the server, then until [param sync]'s first upload has landed (one that failed
## is tried again, see [member PathServerTileMapSync.retry_interval]), telling the player
## through [param show]; false, once told, when there is no server.
static func wait_for_first_upload(sync: PathServerTileMapSync, show: Callable) -> bool:
	if not await wait_for_server(show):
		return false
	while sync.gen < 0:
		await sync.get_tree().process_frame
	return true


## Waits until [param sync] has uploaded its layer (with [param whole], until all of it is
## on the server: edits and links too) or failed, telling the player through [param show]
## when it failed; true when it is there.
static func wait_for_upload(sync: PathServerTileMapSync, show: Callable, whole := false) -> bool:
	var failures := []
	sync.sync_failed.connect(
		func(code: String, message: String) -> void: failures.append([code, message])
	)
	var done := func() -> bool: return sync.is_synced() if whole else sync.gen >= 0
	while not done.call() and failures.is_empty():
		await sync.get_tree().process_frame
	if done.call():
		return true
	show.call("the level could not be uploaded: %s: %s" % failures[0])
	return false


## The cells of a [code]get_map[/code] reply's [param cells] (a byte a cell, row-major,
## [param width] cells a row) that are blocked (0), as a set: cell -> true.
static func blocked_cells(cells: PackedByteArray, width: int) -> Dictionary:
	var blocked := {}
	for i in cells.size():
		if cells[i] == 0:
			blocked[Vector2i(i % width, i / width)] = true
	return blocked


## Waits until [param condition] holds, at most [param seconds]; true when it did.
static func wait_until(tree: SceneTree, condition: Callable, seconds: float) -> bool:
	var deadline := Time.get_ticks_msec() + int(seconds * 1000.0)
	while not condition.call():
		if Time.get_ticks_msec() > deadline:
			return false
		await tree.process_frame
	return true


## Shows [param text] in [param status] and prints it after the scene's [param name].
static func show_status(status: Label, name: String, text: String) -> void:
	status.text = text
	print(name, ": ", text)


## Counts a failure in [code]counts.failures[/code] and prints [param line] for the first
## [param most] of them, so that a flood does not drown the output.
static func count_failure(counts: Dictionary, line: String, most: int) -> void:
	counts.failures += 1
	if counts.failures <= most:
		print(line)


## The value of a `--NAME=VALUE` argument after `--` on the command line, or "".
static func user_arg(prefix: String) -> String:
	for arg in OS.get_cmdline_user_args():
		if arg.begins_with(prefix):
			return arg.trim_prefix(prefix)
	return ""


static func _add_custom_data_layers(tile_set: TileSet) -> void:
	for layer: Array in [["walkable", TYPE_BOOL], ["cost", TYPE_FLOAT], ["tag", TYPE_STRING]]:
		tile_set.add_custom_data_layer()
		var id := tile_set.get_custom_data_layers_count() - 1
		tile_set.set_custom_data_layer_name(id, layer[0])
		tile_set.set_custom_data_layer_type(id, layer[1])


## Adds [param image] to [param tile_set] as its one atlas source (id 0), cut into
## [param tiles] (atlas coordinates) of the TileSet's tile size: FLOOR walkable, and
## [param costly] [code][atlas, cost, tag][/code] walkable at that cost with that tag.
static func _add_source(tile_set: TileSet, image: Image, tiles: Array, costly: Array) -> void:
	var source := TileSetAtlasSource.new()
	source.texture = ImageTexture.create_from_image(image)
	source.texture_region_size = tile_set.tile_size
	for atlas: Vector2i in tiles:
		source.create_tile(atlas)
	tile_set.add_source(source, 0)
	source.get_tile_data(FLOOR, 0).set_custom_data("walkable", true)
	var data := source.get_tile_data(costly[0], 0)
	data.set_custom_data("walkable", true)
	data.set_custom_data("cost", costly[1])
	data.set_custom_data("tag", costly[2])


## One pointy-top hexagon filling the [param size] box at [param corner] of [param image], as
## Godot lays a hexagon tile out (corners at the middle of the top and bottom edges, and a
## quarter of the height down and up the sides), with a darker rim so hexes read as hexes;
## forest gets trees, water ripples.
static func _draw_hexagon_tile(
	image: Image, corner: Vector2i, size: Vector2i, color: Color, tile: Vector2i
) -> void:
	for y in size.y:
		for x in size.x:
			# The pixel's centre in tile units, from the tile's centre.
			var at := (Vector2(x, y) + Vector2(0.5, 0.5)) / Vector2(size) - Vector2(0.5, 0.5)
			var reach := maxf(absf(at.x), absf(at.y) + 0.5 * absf(at.x))
			if reach > 0.5:
				continue
			var pixel := color if reach < 0.45 else color.darkened(0.35)
			if tile == FOREST and reach < 0.45:
				for tree: Vector2 in [Vector2(-0.17, -0.1), Vector2(0.15, -0.14), Vector2(0, 0.16)]:
					if (at - tree).length() < 0.11:
						pixel = Color("1b3319")
			elif tile == WATER and reach < 0.45 and posmod(y + (x / 6) % 2, 7) == 0:
				pixel = color.lightened(0.25)
			elif tile == WALL and reach < 0.45 and at.y < -0.1 - 0.3 * at.x:
				pixel = color.lightened(0.15)
			image.set_pixel(corner.x + x, corner.y + y, pixel)
