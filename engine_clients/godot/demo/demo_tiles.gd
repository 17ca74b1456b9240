extends RefCounted
## What the RTS and tactics scenes share: their TileSet, made in code (floor, wall, mud),
## the keys that switch between the demo's scenes, and the command line.

## Atlas coordinates of the tiles in [method make_tile_set]'s one source (id 0).
const FLOOR := Vector2i(0, 0)
const WALL := Vector2i(1, 0)
const MUD := Vector2i(2, 0)
## Terrain cost of mud (custom data "cost").
const MUD_COST := 2.0
## The demo's scenes, by the name `--scene=NAME` and the keys F1, F2, F3 use.
const SCENES := {
	"formation": "res://main.tscn",
	"rts": "res://rts.tscn",
	"tactics": "res://tactics.tscn",
}
const SCENE_KEYS := {KEY_F1: "formation", KEY_F2: "rts", KEY_F3: "tactics"}


## A TileSet of square tiles of [param size] pixels: floor (walkable), wall (walkable false)
## and mud (walkable, cost 2, tagged "mud"), in the custom data layers
## [PathServerTileMapReader] reads.
static func make_tile_set(size: int) -> TileSet:
	var tile_set := TileSet.new()
	tile_set.tile_size = Vector2i(size, size)
	for layer: Array in [["walkable", TYPE_BOOL], ["cost", TYPE_FLOAT], ["tag", TYPE_STRING]]:
		tile_set.add_custom_data_layer()
		var id := tile_set.get_custom_data_layers_count() - 1
		tile_set.set_custom_data_layer_name(id, layer[0])
		tile_set.set_custom_data_layer_type(id, layer[1])
	var image := Image.create(size * 3, size, false, Image.FORMAT_RGBA8)
	var colors := [Color("26323a"), Color("78909c"), Color("5d4a36")]
	for i in colors.size():
		image.fill_rect(Rect2i(i * size, 0, size, size), colors[i])
		# A darker rim, so cells read as cells.
		var rim: Color = colors[i].darkened(0.25)
		image.fill_rect(Rect2i(i * size, size - 1, size, 1), rim)
		image.fill_rect(Rect2i(i * size + size - 1, 0, 1, size), rim)
	var source := TileSetAtlasSource.new()
	source.texture = ImageTexture.create_from_image(image)
	source.texture_region_size = Vector2i(size, size)
	for atlas in [FLOOR, WALL, MUD]:
		source.create_tile(atlas)
	tile_set.add_source(source, 0)
	source.get_tile_data(FLOOR, 0).set_custom_data("walkable", true)
	source.get_tile_data(MUD, 0).set_custom_data("walkable", true)
	source.get_tile_data(MUD, 0).set_custom_data("cost", MUD_COST)
	source.get_tile_data(MUD, 0).set_custom_data("tag", "mud")
	return tile_set


## Switches scenes on F1 / F2 / F3; true when [param event] did.
static func switch_scene(event: InputEvent, tree: SceneTree) -> bool:
	var key := event as InputEventKey
	if key and key.pressed and SCENE_KEYS.has(key.keycode):
		tree.change_scene_to_file.call_deferred(SCENES[SCENE_KEYS[key.keycode]])
		return true
	return false


## The value of a `--NAME=VALUE` argument after `--` on the command line, or "".
static func user_arg(prefix: String) -> String:
	for arg in OS.get_cmdline_user_args():
		if arg.begins_with(prefix):
			return arg.trim_prefix(prefix)
	return ""
