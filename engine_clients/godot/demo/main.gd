extends Node2D
## The pathserver demo: a map made for two unit sizes, drawn from what the server itself
## answers, and one group of units (three of 1x1 cells, two of 2x2) sent together to a point.
## The middle wall has a one-cell gap the small units take and a wide gap further down, the
## big units' detour; the right half has a one-cell gap and a three-cell door. Each unit gets
## its own goal cell, a small formation around the point (formation.gd). Click to send the
## group; left alone, it goes back and forth between the top left and the top right.
##
## The map is demo/maps/godot_demo.map, 16 world units a cell like 16-pixel tiles, served by
## the embedded server the project settings start (see the README).
##
## Command line (after `--`): `--endpoint=tcp://HOST:PORT` uses a running server instead of
## the embedded one; `--demo-seconds=N` quits N seconds after the map loaded, with a summary
## line (the headless smoke run, which also runs the game four times faster).

const Unit := preload("res://unit.gd")
const Target := preload("res://target.gd")
const Formation := preload("res://formation.gd")

## One `paths` batch holds at most this many requests (the server's MAX_BATCH).
const PROBE_BATCH := 4096
const UNIT_SIZES: Array[Vector2i] = [
	Vector2i.ONE, Vector2i.ONE, Vector2i.ONE, Vector2i(2, 2), Vector2i(2, 2)
]
const COLORS: Array[Color] = [
	Color("4fc3f7"), Color("81c784"), Color("fff176"), Color("ff8a65"), Color("ba68c8")
]
## Cells a unit moves per second.
const SPEED_CELLS := 10.0
## Seconds the group rests between two roaming moves.
const REST_SECONDS := 0.6
## Rows the roaming moves stay above: where the small and the big units' routes differ most.
const ROAM_ROWS := 15

var cell_size := 1.0
var origin := Vector2.ZERO
var grid_size := Vector2i.ZERO
## Cells the server refused as a start: walls.
var blocked := {}
var target: Target
var units: Array[Unit] = []
var counts := {"paths": 0, "arrivals": 0, "failures": 0, "moves": 0, "overlaps": 0}
var _status: Label
var _moving := false


func _ready() -> void:
	_status = Label.new()
	_status.position = Vector2(8, 4)
	var hud := CanvasLayer.new()
	hud.add_child(_status)
	add_child(hud)
	var endpoint := _user_arg("--endpoint=")
	if endpoint != "":
		PathServer.stop_embedded_server()
		PathServer.connect_to_server(endpoint)
	var seconds := _user_arg("--demo-seconds=").to_float()
	if seconds > 0.0:
		Engine.time_scale = 4.0
	_show("waiting for the server...")
	if not await PathServer.wait_connected():
		_show(
			(
				"no server at %s: see the output, or start one with " % PathServer.endpoint
				+ "`python -m pathserver serve --maps engine_clients/godot/demo/maps`"
			)
		)
		if seconds > 0.0:
			_finish()
		return
	_show("asking %s for map '%s'..." % [PathServer.endpoint, PathServer.map_name])
	if not await _load_map():
		if seconds > 0.0:
			_finish()
		return
	if seconds > 0.0:
		get_tree().create_timer(seconds, true, false, true).timeout.connect(_finish)
	# A camera zoom, not a scale on this node: agents work in global coordinates, which must
	# stay the map's world coordinates.
	var camera := Camera2D.new()
	var extent := Vector2(grid_size) * cell_size
	var fit := Vector2(get_viewport_rect().size) / (extent + Vector2(2, 3) * cell_size)
	camera.zoom = Vector2.ONE * minf(fit.x, fit.y)
	camera.position = origin + extent / 2.0
	add_child(camera)
	queue_redraw()
	target = Target.new()
	target.radius = cell_size * 0.5
	add_child(target)
	var start_cells := Formation.goal_cells(_roam_cell(true), UNIT_SIZES, _walkable)
	for i in UNIT_SIZES.size():
		_spawn_unit(UNIT_SIZES[i], COLORS[i], _cell_center(start_cells[i]))
	_show("click to send the group  |  small units take the one-cell gaps, big ones go around")
	_send_group(_cell_center(_roam_cell(false)))


func _unhandled_input(event: InputEvent) -> void:
	var click := event as InputEventMouseButton
	if target and click and click.pressed and click.button_index == MOUSE_BUTTON_LEFT:
		_send_group(get_global_mouse_position())


func _draw() -> void:
	var area := Rect2(origin, Vector2(grid_size) * cell_size)
	draw_rect(area, Color("263238"))
	for cell: Vector2i in blocked:
		draw_rect(
			Rect2(origin + Vector2(cell) * cell_size, Vector2.ONE * cell_size), Color("78909c")
		)


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


## Reads the map's size and transform from `maps`, then finds its walls with `paths`: a
## zero-length path from each cell to itself with snapping off fails with "start_blocked"
## exactly on the cells no unit can stand on.
func _load_map() -> bool:
	var maps := await PathServer.request_async("maps")
	if not maps.ok:
		_show("the server at %s did not list its maps (%s)" % [PathServer.endpoint, maps.code])
		return false
	var entry := {}
	for item: Dictionary in maps.reply.get("maps", []):
		if item.get("name") == PathServer.map_name:
			entry = item
	if entry.is_empty():
		_show("the server has no map '%s'" % PathServer.map_name)
		return false
	grid_size = Vector2i(entry.width, entry.height)
	cell_size = float(entry.cell_size)
	origin = Vector2(entry.origin[0], entry.origin[1])
	var cells: Array[Vector2i] = []
	for y in grid_size.y:
		for x in grid_size.x:
			cells.append(Vector2i(x, y))
	for from in range(0, cells.size(), PROBE_BATCH):
		var chunk := cells.slice(from, from + PROBE_BATCH)
		var requests := chunk.map(
			func(cell: Vector2i) -> Dictionary: return {"start": cell, "goal": cell}
		)
		var results := await PathServer.find_paths_async(
			requests, Vector2i.ONE, {"space": "grid", "snap": false}
		)
		for i in results.size():
			if results[i].code == "start_blocked":
				blocked[chunk[i]] = true
	print(
		(
			"demo: map '%s' %dx%d, %d blocked cells"
			% [PathServer.map_name, grid_size.x, grid_size.y, blocked.size()]
		)
	)
	return true


func _walkable(cell: Vector2i) -> bool:
	return (
		cell.x >= 0
		and cell.y >= 0
		and cell.x < grid_size.x
		and cell.y < grid_size.y
		and not blocked.has(cell)
	)


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
	unit.agent.path_changed.connect(func(_points: PackedVector2Array) -> void: counts.paths += 1)
	unit.agent.target_reached.connect(_on_unit_arrived)
	unit.agent.path_failed.connect(_on_path_failed)


func _on_path_failed(code: String, message: String) -> void:
	counts.failures += 1
	if counts.failures <= 3:
		print("demo: a path request failed: %s: %s" % [code, message])


func _show(text: String) -> void:
	_status.text = text
	print("demo: ", text)


func _user_arg(prefix: String) -> String:
	for arg in OS.get_cmdline_user_args():
		if arg.begins_with(prefix):
			return arg.trim_prefix(prefix)
	return ""


func _finish() -> void:
	print(
		(
			"demo summary: %d units, %d paths, %d arrivals, %d failures, %d group moves, %d overlaps"
			% [
				units.size(),
				counts.paths,
				counts.arrivals,
				counts.failures,
				counts.moves,
				counts.overlaps
			]
		)
	)
	get_tree().quit()
