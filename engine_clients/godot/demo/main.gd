extends Node2D
## The pathserver demo: the game's own level, a [TileMapLayer] ([code]Level[/code]) whose
## TileSet says which tiles are walkable (custom data [code]walkable[/code]), uploaded to the
## server by a [PathServerTileMapSync] child: no map file. One group of units (three of 1x1
## cells, two of 2x2) is sent together to a point. The middle wall has a one-cell gap the small
## units take and a wide gap further down, the big units' detour; the right half has a
## one-cell gap and a three-cell door. Each unit gets its own goal cell, a small formation
## around the point (formation.gd). Left click sends the group; left alone, it goes back and
## forth between the top left and the top right. Right click places or removes a wall: the
## sync node sends it as an update, and every unit asks for a new path. The
## [PathServerDebugDraw2D] [code]Overlay[/code] shows the server's blocked cells (red) over the
## tiles, and one overlay a unit its path and footprint; D toggles them.
##
## The level is 48x32 tiles of 16 pixels; world coordinates are the layer's, so the units'
## positions go straight into path requests. The embedded server the project settings start
## serves it once uploaded (see the README).
##
## Command line (after `--`): `--endpoint=tcp://HOST:PORT` uses a running server instead of
## the embedded one; `--demo-seconds=N` quits N seconds after the level was uploaded, with a
## summary line (the headless smoke run, which also runs the game four times faster, and
## places a wall in the small units' gap with a simulated right click);
## `--screenshot=FILE.png` saves what the window shows that many seconds in (the number after
## a colon, default 4: `--screenshot=/tmp/demo.png:6`); `--scene=rts`, `--scene=tactics` or
## `--scene=hex` opens the RTS, the tactics or the hex scene instead (rts.gd, tactics.gd,
## hex.gd; F1 to F4 switch at any time).

const Unit := preload("res://unit.gd")
const Target := preload("res://target.gd")
const Formation := preload("res://formation.gd")
const Tiles := preload("res://demo_tiles.gd")

const UNIT_SIZES: Array[Vector2i] = [
	Vector2i.ONE, Vector2i.ONE, Vector2i.ONE, Vector2i(2, 2), Vector2i(2, 2)
]
const COLORS: Array[Color] = [
	Color("4fc3f7"), Color("81c784"), Color("fff176"), Color("ff8a65"), Color("ba68c8")
]
## The level's tiles (atlas coordinates in its TileSet's one source, id 0).
const FLOOR := Vector2i(0, 0)
const WALL := Vector2i(1, 0)
## The one-cell gap of the middle wall, the small units' way between the two halves: where
## the smoke run places its wall.
const GAP := Vector2i(24, 8)
## Cells a unit moves per second.
const SPEED_CELLS := 10.0
## Seconds the group rests between two roaming moves.
const REST_SECONDS := 0.6
## Rows the roaming moves stay above: where the small and the big units' routes differ most.
const ROAM_ROWS := 15
## The smoke run's simulated right click comes this many seconds after the upload.
const WALL_CLICK_SECONDS := 1.5

var cell_size := 1.0
var origin := Vector2.ZERO
var grid_size := Vector2i.ZERO
## Cells no unit can stand on, as the server has them (get_map), kept up to date with the
## walls placed since.
var blocked := {}
var target: Target
var units: Array[Unit] = []
var counts := {
	"paths": 0,
	"arrivals": 0,
	"failures": 0,
	"moves": 0,
	"overlaps": 0,
	"walls": 0,
	"rerouted": 0,
	"routes_changed": 0,
}
var _status: Label
var _moving := false
var _wall_gen := -1
var _rerouted := {}

@onready var level: TileMapLayer = $Level
@onready var sync: PathServerTileMapSync = $Level/Sync
@onready var overlay: PathServerDebugDraw2D = $Overlay


func _ready() -> void:
	# `--scene=rts` / `tactics` / `hex`: the demo's other scenes (F2 to F4 switch to them too).
	var scene := Tiles.user_arg("--scene=")
	if Tiles.SCENES.has(scene) and Tiles.SCENES[scene] != scene_file_path:
		get_tree().change_scene_to_file.call_deferred(Tiles.SCENES[scene])
		return
	_status = Label.new()
	_status.position = Vector2(8, 4)
	var hud := CanvasLayer.new()
	hud.add_child(_status)
	add_child(hud)
	var endpoint := Tiles.user_arg("--endpoint=")
	if endpoint != "":
		PathServer.stop_embedded_server()
		PathServer.connect_to_server(endpoint)
	var seconds := Tiles.user_arg("--demo-seconds=").to_float()
	if seconds > 0.0:
		Engine.time_scale = 4.0
	_show("waiting for the server...")
	if not await PathServer.wait_connected():
		_show(
			(
				"no server at %s: see the output, or start one with " % PathServer.endpoint
				+ "`python -m pathserver serve`"
			)
		)
		if seconds > 0.0:
			_finish()
		return
	_show("uploading the level to %s as '%s'..." % [PathServer.endpoint, sync.get_map_name()])
	if not await Tiles.wait_for_upload(sync, _show) or not await _load_map():
		if seconds > 0.0:
			_finish()
		return
	if seconds > 0.0:
		get_tree().create_timer(seconds, true, false, true).timeout.connect(_finish)
		get_tree().create_timer(WALL_CLICK_SECONDS, true, false, true).timeout.connect(_click_gap)
	# A camera zoom, not a scale on this node: agents work in global coordinates, which must
	# stay the level's world coordinates.
	var camera := Camera2D.new()
	var extent := Vector2(grid_size) * cell_size
	var fit := Vector2(get_viewport_rect().size) / (extent + Vector2(2, 3) * cell_size)
	camera.zoom = Vector2.ONE * minf(fit.x, fit.y)
	camera.position = origin + extent / 2.0
	add_child(camera)
	target = Target.new()
	target.radius = cell_size * 0.5
	add_child(target)
	var start_cells := Formation.goal_cells(_roam_cell(true), UNIT_SIZES, _walkable)
	for i in UNIT_SIZES.size():
		_spawn_unit(UNIT_SIZES[i], COLORS[i], _cell_center(start_cells[i]))
	PathServer.map_generation_changed.connect(_on_map_generation_changed)
	overlay.add_to_group("pathserver_overlays")
	_show(
		(
			"left click: send the group  |  right click: place or remove a wall  |  D: overlay"
			+ "\nsmall units take the one-cell gaps, big ones go around  |  F2: RTS, F3: tactics, "
			+ "F4: hex"
		)
	)
	_send_group(_cell_center(_roam_cell(false)))
	var screenshot := Tiles.user_arg("--screenshot=")
	if screenshot != "":
		var parts := screenshot.rsplit(":", true, 1)
		var delay := parts[1].to_float() if parts.size() == 2 else 4.0
		await get_tree().create_timer(delay, true, false, true).timeout
		var saved := get_viewport().get_texture().get_image().save_png(parts[0])
		print("demo: screenshot saved to %s (%s)" % [parts[0], error_string(saved)])


func _unhandled_input(event: InputEvent) -> void:
	if Tiles.switch_scene(event, get_tree()):
		return
	var click := event as InputEventMouseButton
	if target and click and click.pressed:
		# The event's own position, not the mouse's: simulated clicks have no mouse.
		var point := get_canvas_transform().affine_inverse() * click.position
		if click.button_index == MOUSE_BUTTON_LEFT:
			_send_group(point)
		elif click.button_index == MOUSE_BUTTON_RIGHT:
			toggle_wall(_cell_of(point))
	var key := event as InputEventKey
	if key and key.pressed and key.keycode == KEY_D:
		var shown := not overlay.enabled
		for node in get_tree().get_nodes_in_group("pathserver_overlays"):
			node.enabled = shown


## Places a wall on [param cell] or removes the one there: an edit of the level's tiles, which
## its PathServerTileMapSync sends to the server at the end of the frame. Refused on the
## level's border and under a unit. Returns true when the tile changed.
func toggle_wall(cell: Vector2i) -> bool:
	var inner := Rect2i(Vector2i.ONE, grid_size - Vector2i(2, 2))
	if not inner.has_point(cell):
		return false
	var wall := not blocked.has(cell)
	if wall:
		for unit in units:
			if Formation.footprint(_cell_of(unit.global_position), unit.size_cells).has(cell):
				_show("a unit stands on %s" % cell)
				return false
	level.set_cell(cell + _level_offset(), 0, WALL if wall else FLOOR)
	if wall:
		blocked[cell] = true
		counts.walls += 1
	else:
		blocked.erase(cell)
	_show("%s %s: the units ask for new paths" % ["wall at" if wall else "no wall at", cell])
	return true


## Grid cell (0, 0) is the uploaded rectangle's top-left tile.
func _level_offset() -> Vector2i:
	return sync.rect.position


## The smoke run's right click on the middle wall's one-cell gap, as a player would do it;
## then checks that the small units' route between the halves changed. Tried again while a
## unit stands in the gap.
func _click_gap() -> void:
	var before := await _small_route()
	var click := InputEventMouseButton.new()
	click.button_index = MOUSE_BUTTON_RIGHT
	click.pressed = true
	click.position = get_canvas_transform() * _cell_center(GAP)
	var walls: int = counts.walls
	get_viewport().push_input(click)
	if counts.walls == walls:
		get_tree().create_timer(0.25, true, false, true).timeout.connect(_click_gap)
		return
	# The route once the server has the wall: a new generation, after the sync's update.
	var placed_gen := sync.gen
	while sync.gen == placed_gen or not sync.is_synced():
		await get_tree().process_frame
	var after := await _small_route()
	if before.has(GAP) and not after.is_empty() and not after.has(GAP):
		counts.routes_changed += 1
	print(
		"demo: wall at %s; the 1x1 route had %d cells, now %d" % [GAP, before.size(), after.size()]
	)


## The cells of a 1x1 unit's route from the top left to the top right (empty: none).
func _small_route() -> Array[Vector2i]:
	var route: Array[Vector2i] = []
	var result := await PathServer.find_path_async(
		Vector2(12, 3), Vector2(40, 3), Vector2i.ONE, {"space": "grid", "smooth": "none"}
	)
	for point in result.waypoints:
		route.append(Vector2i(point))
	return route


func _on_map_generation_changed(changed_map: String, gen: int) -> void:
	if changed_map == sync.get_map_name() and counts.walls > 0 and _wall_gen < 0:
		_wall_gen = gen


## Sends every unit to its own cell of a formation around [param point].
func _send_group(point: Vector2) -> void:
	var goals := Formation.goal_cells(_cell_of(point), UNIT_SIZES, _walkable)
	target.position = point
	target.queue_redraw()
	for i in units.size():
		units[i].agent.target_position = _cell_center(goals[i])
	counts.moves += 1
	_moving = true


## Called on each arrival: once the whole group stands still, counts units that share a cell
## (the formation should leave none), rests, then roams to the other side.
func _on_unit_arrived() -> void:
	counts.arrivals += 1
	if (
		not _moving
		or not units.all(func(unit: Unit) -> bool: return unit.agent.is_target_reached())
	):
		return
	_moving = false
	var covered := {}
	for unit in units:
		for cell in Formation.footprint(_cell_of(unit.global_position), unit.size_cells):
			if covered.has(cell):
				counts.overlaps += 1
			covered[cell] = true
	var moves: int = counts.moves
	await get_tree().create_timer(REST_SECONDS).timeout
	if counts.moves == moves:
		_send_group(_cell_center(_roam_cell(_cell_of(target.position).x > grid_size.x / 2)))


## A random cell of the top rows, left or right of the middle, where a 2x2 unit fits.
func _roam_cell(left: bool) -> Vector2i:
	var cells: Array[Vector2i] = []
	for y in mini(ROAM_ROWS, grid_size.y):
		for x in grid_size.x:
			var cell := Vector2i(x, y)
			if (x < grid_size.x / 2) == left and _fits(cell, Vector2i(2, 2)):
				cells.append(cell)
	return cells.pick_random() if not cells.is_empty() else grid_size / 2


## Asks the server for the level as it has it (get_map): its size, transform and blocked
## cells.
func _load_map() -> bool:
	var map := await PathServer.get_map_async(sync.get_map_name())
	if not map.ok:
		_show("the server did not give the level back (%s: %s)" % [map.code, map.message])
		return false
	grid_size = map.info.size
	cell_size = map.info.cell_size
	origin = map.info.origin
	blocked.merge(Tiles.blocked_cells(map.info.cells, grid_size.x))
	print(
		(
			"demo: level '%s' %dx%d uploaded from its TileMapLayer, %d blocked cells"
			% [sync.get_map_name(), grid_size.x, grid_size.y, blocked.size()]
		)
	)
	return true


func _walkable(cell: Vector2i) -> bool:
	return Rect2i(Vector2i.ZERO, grid_size).has_point(cell) and not blocked.has(cell)


## True when a unit of [param size] fits at [param cell] (its footprint clear of walls).
func _fits(cell: Vector2i, size: Vector2i) -> bool:
	return Formation.footprint(cell, size).all(_walkable)


func _cell_of(point: Vector2) -> Vector2i:
	return Vector2i(((point - origin) / cell_size).floor())


func _cell_center(cell: Vector2i) -> Vector2:
	return origin + (Vector2(cell) + Vector2(0.5, 0.5)) * cell_size


func _spawn_unit(size: Vector2i, color: Color, at: Vector2) -> void:
	var unit := Unit.new()
	unit.size_cells = size
	unit.cell_size = cell_size
	unit.color = color
	unit.position = at
	add_child(unit)
	units.append(unit)
	unit.agent.speed = SPEED_CELLS * cell_size
	unit.agent.repath_distance = 2.0 * cell_size
	unit.agent.arrival_distance = 0.05 * cell_size
	unit.agent.path_changed.connect(_on_path_changed.bind(unit))
	unit.agent.target_reached.connect(_on_unit_arrived)
	unit.agent.path_failed.connect(_on_path_failed)
	var path_overlay := PathServerDebugDraw2D.new()
	path_overlay.show_cells = false
	path_overlay.agent = unit.agent
	path_overlay.path_color = color
	path_overlay.footprint_color = Color(color, 0.18)
	path_overlay.add_to_group("pathserver_overlays")
	add_child(path_overlay)


func _on_path_changed(_points: PackedVector2Array, unit: Unit) -> void:
	counts.paths += 1
	if _wall_gen >= 0 and not _rerouted.has(unit):
		# A path asked for after the wall landed: the map's new generation made the unit ask.
		_rerouted[unit] = true
		counts.rerouted += 1


func _on_path_failed(code: String, message: String) -> void:
	Tiles.count_failure(counts, "demo: a path request failed: %s: %s" % [code, message], 3)


func _show(text: String) -> void:
	Tiles.show_status(_status, "demo", text)


func _finish() -> void:
	print(
		(
			(
				"demo summary: %d units, %d paths, %d arrivals, %d failures, %d group moves, "
				+ "%d overlaps, %d walls placed, %d routes changed, %d units re-routed"
			)
			% [
				units.size(),
				counts.paths,
				counts.arrivals,
				counts.failures,
				counts.moves,
				counts.overlaps,
				counts.walls,
				counts.routes_changed,
				counts.rerouted,
			]
		)
	)
	get_tree().quit()
