extends RefCounted
## The base of the test scripts test_pathserver.gd runs, one a topic: its check(), which
## counts; the run's client, endpoint and golden vectors; helpers; and the SceneTree's root,
## frames and timers, as the tests use them.
##
##   var maps := preload("res://map_tests.gd").new(self)  # in test_pathserver.gd
##   await maps.test_put_tilemap()

## The test map the server serves: 20 x 12 cells of CELL world units, a wall at column 10
## with a two-cell gap at rows 5-6.
const MAP := "godot_arena"
const CELL := 16.0

## test_pathserver.gd.
var suite: Variant
## The main client, the autoload, connected to the server.
var client: PathServerClient:
	get:
		return suite.client
var endpoint: String:
	get:
		return suite.endpoint
## The golden vectors of docs/protocol.md: name -> bytes.
var golden: Dictionary:
	get:
		return suite.golden
	set(value):
		suite.golden = value
var root: Window:
	get:
		return suite.root
var process_frame: Signal:
	get:
		return suite.process_frame
var physics_frame: Signal:
	get:
		return suite.physics_frame


func _init(test_suite: SceneTree) -> void:
	suite = test_suite


func check(condition: bool, name: String, detail: Variant = "") -> void:
	suite.check(condition, name, detail)


func check_equal(actual: Variant, expected: Variant, name: String) -> void:
	check(
		typeof(actual) == typeof(expected) and actual == expected,
		name,
		"got %s, expected %s" % [var_to_str(actual), var_to_str(expected)]
	)


## Adds to [param tile_set] the custom data layers "walkable" (bool) and "cost" (float), and
## one atlas source (id 0) of blank [param tiles] (atlas coordinates) of its tile size, which
## it returns.
func add_test_tiles(tile_set: TileSet, tiles: Array) -> TileSetAtlasSource:
	tile_set.add_custom_data_layer()
	tile_set.set_custom_data_layer_name(0, "walkable")
	tile_set.set_custom_data_layer_type(0, TYPE_BOOL)
	tile_set.add_custom_data_layer()
	tile_set.set_custom_data_layer_name(1, "cost")
	tile_set.set_custom_data_layer_type(1, TYPE_FLOAT)
	var size := tile_set.tile_size
	var source := TileSetAtlasSource.new()
	var image := Image.create(size.x * tiles.size(), size.y, false, Image.FORMAT_RGBA8)
	source.texture = ImageTexture.create_from_image(image)
	source.texture_region_size = size
	for atlas: Vector2i in tiles:
		source.create_tile(atlas)
	tile_set.add_source(source, 0)
	return source


## Checks that [PathServerTileMapReader] refuses [param layer] rotated ("a rotated
## [param what] is refused"), then turns it back.
func check_rotated_refused(layer: TileMapLayer, what: String) -> void:
	layer.rotation = 0.5
	var rotated := PathServerTileMapReader.read(layer)
	check(
		rotated.error.contains("rotated") and rotated.at == "layer",
		"a rotated %s is refused" % what,
		rotated
	)
	layer.rotation = 0.0


## Makes [param layer]'s tiles isometric and checks that [PathServerTileMapReader] refuses them.
func check_isometric_refused(layer: TileMapLayer) -> void:
	layer.tile_set.tile_shape = TileSet.TILE_SHAPE_ISOMETRIC
	var isometric := PathServerTileMapReader.read(layer)
	check(
		isometric.error.contains("square and hexagon tiles"),
		"isometric tiles are refused",
		isometric.error
	)


## World position of the centre of a cell of the test map.
func center(cell: Vector2i) -> Vector2:
	return (Vector2(cell) + Vector2(0.5, 0.5)) * CELL


## Polls frames until [param condition] holds or [param seconds] pass; returns the condition.
func wait_until(condition: Callable, seconds: float) -> bool:
	var deadline := Time.get_ticks_msec() + int(seconds * 1000.0)
	while not condition.call():
		if Time.get_ticks_msec() > deadline:
			return false
		await process_frame
	return true


## A client of the test map, in the tree, whose endpoint is a free port nobody listens on.
func lonely_client() -> PathServerClient:
	var lonely := PathServerClient.new()
	lonely.endpoint = "tcp://127.0.0.1:%d" % free_port()
	lonely.map_name = MAP
	root.add_child(lonely)
	return lonely


func free_port() -> int:
	var server := TCPServer.new()
	server.listen(0, "127.0.0.1")
	var port := server.get_local_port()
	server.stop()
	return port


## The answers of [param of_client]'s path requests from now on, by id, as its signals bring
## them: the waypoints of a completed query, or [code][code, message][/code] of a failure.
func track_answers(of_client: PathServerClient) -> Dictionary:
	var answers := {}
	of_client.path_found.connect(
		func(id: int, waypoints: PackedVector2Array, _info: Dictionary) -> void:
			answers[id] = waypoints
	)
	of_client.path_failed.connect(
		func(id: int, code: String, message: String) -> void: answers[id] = [code, message]
	)
	return answers


## Points the embedded-server settings at the test's Python and maps; false when the
## environment does not say where they are.
func configure_embedded_server(command := "") -> bool:
	var maps_dir := OS.get_environment("PATHSERVER_MAPS")
	if maps_dir == "":
		check(false, "PATHSERVER_MAPS is set for the embedded server tests")
		return false
	# Python, not a bundle someone put in the addon's bin/: these tests wrap the command.
	ProjectSettings.set_setting(PathServerClient.SETTING_EMBEDDED_MODE, "python")
	ProjectSettings.set_setting(
		PathServerClient.SETTING_EMBEDDED_COMMAND, command if command != "" else python()
	)
	ProjectSettings.set_setting(PathServerClient.SETTING_EMBEDDED_MAPS_DIR, maps_dir)
	ProjectSettings.set_setting(PathServerClient.SETTING_EMBEDDED_PORT, 0)
	return true


func python() -> String:
	var path := OS.get_environment("PATHSERVER_PYTHON")
	return path if path != "" else "python3"


func create_timer(seconds: float) -> SceneTreeTimer:
	return suite.create_timer(seconds)
