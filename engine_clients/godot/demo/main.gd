extends Node2D
## The pathserver demo: the server's map, drawn from what the server itself answers, and units
## of two sizes (1x1 and 2x2 cells) following a target that roams the map. Click to move the
## target. Everything is in the map's world coordinates; a camera zooms them to pixels.
##
## Command line (after `--`): `--endpoint=tcp://HOST:PORT` overrides the project setting;
## `--demo-seconds=N` quits after N seconds with a summary line (the headless smoke run).

const Unit := preload("res://unit.gd")
const Target := preload("res://target.gd")

## Pixels per map cell on screen.
const TILE_PIXELS := 12.0
## One `paths` batch holds at most this many requests (the server's MAX_BATCH).
const PROBE_BATCH := 4096
const UNIT_SIZES: Array[Vector2i] = [
	Vector2i.ONE, Vector2i.ONE, Vector2i.ONE, Vector2i(2, 2), Vector2i(2, 2)
]
const COLORS: Array[Color] = [
	Color("4fc3f7"), Color("81c784"), Color("fff176"), Color("ff8a65"), Color("ba68c8")
]

var cell_size := 1.0
var origin := Vector2.ZERO
var grid_size := Vector2i.ZERO
## Cells the server refused as a start: walls.
var blocked := {}
var target: Target
var counts := {"paths": 0, "arrivals": 0, "failures": 0}
var _status: Label


func _ready() -> void:
	_status = Label.new()
	_status.position = Vector2(8, 4)
	var hud := CanvasLayer.new()
	hud.add_child(_status)
	add_child(hud)
	var endpoint := _user_arg("--endpoint=")
	if endpoint != "":
		PathServer.connect_to_server(endpoint)
	var seconds := _user_arg("--demo-seconds=").to_float()
	if seconds > 0.0:
		get_tree().create_timer(seconds).timeout.connect(_finish)
	_show("asking %s for map '%s'..." % [PathServer.endpoint, PathServer.map_name])
	if not await _load_map():
		return
	# A camera zoom, not a scale on this node: agents work in global coordinates, which must
	# stay the map's world coordinates.
	var camera := Camera2D.new()
	camera.zoom = Vector2.ONE * TILE_PIXELS / cell_size
	camera.position = origin + Vector2(grid_size) * cell_size / 2.0
	add_child(camera)
	queue_redraw()
	target = Target.new()
	target.radius = cell_size * 0.5
	target.walkable = _walkable_cells(Vector2i(2, 2))
	target.agent.speed = 6.0 * cell_size
	add_child(target)
	target.position = target.walkable.pick_random()
	target.roam()
	var starts := _walkable_cells(Vector2i(2, 2))
	starts.shuffle()
	for i in UNIT_SIZES.size():
		_spawn_unit(UNIT_SIZES[i], COLORS[i], starts[i])
	_show(
		"click to move the target  |  units of 1x1 and 2x2 cells  |  map '%s'" % PathServer.map_name
	)


func _unhandled_input(event: InputEvent) -> void:
	var click := event as InputEventMouseButton
	if target and click and click.pressed and click.button_index == MOUSE_BUTTON_LEFT:
		target.go_to(get_global_mouse_position())


func _draw() -> void:
	var area := Rect2(origin, Vector2(grid_size) * cell_size)
	draw_rect(area, Color("263238"))
	for cell: Vector2i in blocked:
		draw_rect(
			Rect2(origin + Vector2(cell) * cell_size, Vector2.ONE * cell_size), Color("78909c")
		)


## Reads the map's size and transform from `maps`, then finds its walls with `paths`: a
## zero-length path from each cell to itself with snapping off fails with "start_blocked"
## exactly on the cells no unit can stand on.
func _load_map() -> bool:
	var maps := await PathServer.request_async("maps")
	if not maps.ok:
		_show(
			(
				"no server at %s (%s): start one with `python -m pathserver serve`"
				% [PathServer.endpoint, maps.code]
			)
		)
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


## World positions where a unit of [param size] fits (its footprint clear of walls).
func _walkable_cells(size: Vector2i) -> Array[Vector2]:
	var spots: Array[Vector2] = []
	for y in grid_size.y:
		for x in grid_size.x:
			if _fits(Vector2i(x, y), size):
				spots.append(origin + (Vector2(x, y) + Vector2(0.5, 0.5)) * cell_size)
	return spots


## The server's footprint rule: a unit at (x, y) covers x - (w - 1) / 2 .. x + w / 2.
func _fits(cell: Vector2i, size: Vector2i) -> bool:
	for dy in range(-((size.y - 1) / 2), size.y / 2 + 1):
		for dx in range(-((size.x - 1) / 2), size.x / 2 + 1):
			var covered := cell + Vector2i(dx, dy)
			if (
				covered.x < 0
				or covered.y < 0
				or covered.x >= grid_size.x
				or covered.y >= grid_size.y
			):
				return false
			if blocked.has(covered):
				return false
	return true


func _spawn_unit(size: Vector2i, color: Color, at: Vector2) -> void:
	var unit := Unit.new()
	unit.size_cells = size
	unit.cell_size = cell_size
	unit.color = color
	unit.position = at
	add_child(unit)
	unit.agent.speed = 10.0 * cell_size
	unit.agent.repath_distance = 2.0 * cell_size
	unit.agent.arrival_distance = 0.05 * cell_size
	unit.agent.target_node = target
	unit.agent.path_changed.connect(func(_points: PackedVector2Array) -> void: counts.paths += 1)
	unit.agent.target_reached.connect(func() -> void: counts.arrivals += 1)
	unit.agent.path_failed.connect(_on_path_failed)


func _on_path_failed(code: String, message: String) -> void:
	counts.failures += 1
	if counts.failures <= 3:
		print("demo: a unit got no path: %s: %s" % [code, message])


func _show(text: String) -> void:
	_status.text = text
	print("demo: ", text)


func _user_arg(prefix: String) -> String:
	for arg in OS.get_cmdline_user_args():
		if arg.begins_with(prefix):
			return arg.trim_prefix(prefix)
	return ""


func _finish() -> void:
	var units := get_children().filter(func(child: Node) -> bool: return child is Unit).size()
	print(
		(
			"demo summary: %d units, %d paths, %d arrivals, %d failures"
			% [units, counts.paths, counts.arrivals, counts.failures]
		)
	)
	get_tree().quit()
