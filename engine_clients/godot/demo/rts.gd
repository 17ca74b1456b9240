extends Node2D
## The RTS scene: 500 units of two sizes (400 of 1x1 cells, 100 of 2x2) sent to a clicked
## point by one [PathServerFlowGroup2D]: one [code]next_steps[/code] request per unit size
## each physics frame instead of 500 paths. The goals are every cell of a disc around the
## point, so the crowd spreads over it instead of piling on one cell.
##
## The level (100 x 70 cells of 8 pixels) is a [TileMapLayer] built here and uploaded by a
## [PathServerTileMapSync] child, as the formation scene does. Two walls cut it in three:
## the left one has a one-cell gap (small units only) and a wide one, the right one a
## three-cell gap and a one-cell one. Left click: send the crowd. Right click: place or remove
## a 2x2 block of wall (the sync sends it as an [code]update[/code]; the server's field for
## the new generation reroutes every unit). G: close or open the left wall's wide gap (the
## big units then have no way through and wait). F1 to F4: the demo's scenes.
##
## Command line (after `--`): `--demo-seconds=N` runs headless checks for N seconds (the crowd
## is sent, the gap closed after 2 s) and prints a summary line; `--screenshot=FILE.png[:S]`
## saves the window after S seconds (default 4).

const Tiles := preload("res://demo_tiles.gd")
const Crowd := preload("res://rts_crowd.gd")

const CELL := 8
const SIZE := Vector2i(100, 70)
const SMALL_UNITS := 400
const BIG_UNITS := 100
const SPEED_CELLS := 12.0
## Radius in cells of the goal disc around a clicked point.
const GOAL_RADIUS := 17
## The left wall's wide gap, which G closes and opens.
const WIDE_GAP := Rect2i(33, 50, 1, 5)
const FIRST_TARGET := Vector2i(84, 30)

var walls := PackedByteArray()
var counts := {"walls": 0, "gates": 0, "clicks": 0, "failures": 0, "rerouted": 0}
var frame_ms_total := 0.0
var frames := 0
var _gate_closed := false
var _spawn := PackedVector2Array()
var _status: Label

@onready var level: TileMapLayer = $Level
@onready var sync: PathServerTileMapSync = $Level/Sync
@onready var group: PathServerFlowGroup2D = $Group
@onready var crowd: Crowd = $Crowd


func _ready() -> void:
	_status = $Hud/Status
	level.tile_set = Tiles.make_tile_set(CELL)
	_build_level()
	group.speed = SPEED_CELLS * CELL
	group.spacing = CELL * 0.9
	group.active = false
	group.steps_failed.connect(_on_steps_failed)
	_spawn_units()
	crowd.group = group
	var seconds := Tiles.user_arg("--demo-seconds=").to_float()
	if seconds > 0.0:
		Engine.time_scale = 2.0
	if not await Tiles.wait_for_first_upload(sync, _show):
		if seconds > 0.0:
			_finish()
		return
	_show("left click: send  |  right click: a wall  |  G: the wide gap  |  F1-F4: scenes")
	send_to(_cell_center(FIRST_TARGET))
	if seconds > 0.0:
		get_tree().create_timer(seconds, true, false, true).timeout.connect(_finish)
		get_tree().create_timer(1.0, true, false, true).timeout.connect(_press_gate_key)
		get_tree().create_timer(1.5, true, false, true).timeout.connect(_click_wall)
	var screenshot := Tiles.user_arg("--screenshot=")
	if screenshot != "":
		var parts := screenshot.rsplit(":", true, 1)
		await get_tree().create_timer(parts[1].to_float() if parts.size() == 2 else 4.0).timeout
		var saved := get_viewport().get_texture().get_image().save_png(parts[0])
		print("rts: screenshot saved to %s (%s)" % [parts[0], error_string(saved)])


func _physics_process(_delta: float) -> void:
	if group.active:
		frame_ms_total += group.frame_usec / 1000.0
		frames += 1
	var stranded := group.get_stranded_count()
	_status.text = (
		_status.text.get_slice("\n", 0)
		+ (
			"\n%d units: %d arrived, %d with no way%s  |  %d next_steps replies"
			% [
				group.get_unit_count(),
				group.get_arrived_count(),
				stranded,
				" (the big ones: the wide gap is closed)" if stranded > 0 and _gate_closed else "",
				group.replies,
			]
		)
	)


func _unhandled_input(event: InputEvent) -> void:
	if Tiles.switch_scene(event, get_tree()):
		return
	var click := event as InputEventMouseButton
	if click and click.pressed:
		var point := get_canvas_transform().affine_inverse() * click.position
		if click.button_index == MOUSE_BUTTON_LEFT:
			send_to(point)
		elif click.button_index == MOUSE_BUTTON_RIGHT:
			toggle_wall(Vector2i((point / CELL).floor()))
	var key := event as InputEventKey
	if key and key.pressed and key.keycode == KEY_G:
		toggle_gate()


## Sends the crowd to [param point]: the goals are the walkable cells within
## [constant GOAL_RADIUS] of it.
func send_to(point: Vector2) -> void:
	var middle := Vector2i((point / CELL).floor())
	var goals := PackedVector2Array()
	for y in range(middle.y - GOAL_RADIUS, middle.y + GOAL_RADIUS + 1):
		for x in range(middle.x - GOAL_RADIUS, middle.x + GOAL_RADIUS + 1):
			var cell := Vector2i(x, y)
			if (cell - middle).length_squared() <= GOAL_RADIUS * GOAL_RADIUS and _open(cell):
				goals.append(_cell_center(cell))
	if goals.is_empty():
		goals.append(point)
	group.target = point
	group.goals = goals
	group.active = true
	crowd.target = point
	crowd.goal_radius = GOAL_RADIUS * CELL
	counts.clicks += 1


## Places a 2x2 block of wall with its top-left at [param cell], or removes the wall there;
## refused under a unit (it would stand in the wall) and on the border.
func toggle_wall(cell: Vector2i) -> bool:
	var block := Rect2i(cell, Vector2i(2, 2))
	if not Rect2i(Vector2i.ONE, SIZE - Vector2i(2, 2)).encloses(block):
		return false
	var wall := walls[cell.y * SIZE.x + cell.x] == 0
	if wall and crowd.covers(block, CELL):
		_show("a unit stands there")
		return false
	for y in range(block.position.y, block.end.y):
		for x in range(block.position.x, block.end.x):
			_set_wall(Vector2i(x, y), wall)
	counts.walls += 1
	return true


## Closes the left wall's wide gap, or opens it again. Units standing in it are shoved out to
## the side their centre is on first (a unit inside a wall would have no way anywhere).
func toggle_gate() -> void:
	_gate_closed = not _gate_closed
	if _gate_closed:
		var gate := Rect2(Vector2(WIDE_GAP.position * CELL), Vector2(WIDE_GAP.size * CELL))
		var middle := gate.get_center().x
		for size in group.get_unit_sizes():
			var extent := Vector2(size) * CELL
			for unit in group.get_units_of_size(size):
				if gate.intersects(Crowd.footprint(unit.position, size, extent, CELL)):
					# Clear of the gate by the unit's footprint (the server's rule for even sizes).
					var left := unit.position.x < middle
					var cell_x := WIDE_GAP.position.x - size.x / 2 - 1 if left else WIDE_GAP.end.x
					cell_x += 0 if left else (size.x - 1) / 2
					unit.position.x = (cell_x + 0.5) * CELL
	for y in range(WIDE_GAP.position.y, WIDE_GAP.end.y):
		_set_wall(Vector2i(WIDE_GAP.position.x, y), _gate_closed)
	counts.gates += 1
	_show("the wide gap is %s" % ("closed" if _gate_closed else "open"))


## The smoke run's G key, as a player presses it; then, once the server has the closed gap
## and answered for the new map, counts the units whose way got longer.
func _press_gate_key() -> void:
	var before := {}
	for size in group.get_unit_sizes():
		before[size] = group.get_remaining(size).duplicate()
	var key := InputEventKey.new()
	key.keycode = KEY_G
	key.pressed = true
	var gen := sync.gen
	get_viewport().push_input(key)
	while sync.gen == gen or not sync.is_synced():
		await get_tree().physics_frame
	var replies := group.replies
	while group.replies < replies + 4:
		await get_tree().physics_frame
	for size in group.get_unit_sizes():
		var after := group.get_remaining(size)
		var earlier: PackedFloat32Array = before[size]
		for i in mini(after.size(), earlier.size()):
			if after[i] > earlier[i] + 2.0 and not is_inf(earlier[i]):
				counts.rerouted += 1


## The smoke run's right click: a 2x2 wall on open ground in the middle of the level.
func _click_wall() -> void:
	for y in range(40, 60):
		for x in range(40, 60):
			var block := Rect2i(x, y, 2, 2)
			if _open(block.position) and _open(block.end - Vector2i.ONE):
				if _open(Vector2i(x + 1, y)) and _open(Vector2i(x, y + 1)):
					if not crowd.covers(block, CELL):
						var click := InputEventMouseButton.new()
						click.button_index = MOUSE_BUTTON_RIGHT
						click.pressed = true
						click.position = get_canvas_transform() * _cell_center(block.position)
						get_viewport().push_input(click)
						return


func _set_wall(cell: Vector2i, wall: bool) -> void:
	walls[cell.y * SIZE.x + cell.x] = 1 if wall else 0
	level.set_cell(cell, 0, Tiles.WALL if wall else Tiles.FLOOR)


func _open(cell: Vector2i) -> bool:
	return Rect2i(Vector2i.ZERO, SIZE).has_point(cell) and walls[cell.y * SIZE.x + cell.x] == 0


func _cell_center(cell: Vector2i) -> Vector2:
	return (Vector2(cell) + Vector2(0.5, 0.5)) * CELL


## Border, two walls with their gaps, and rocks (the same every run).
func _build_level() -> void:
	walls.resize(SIZE.x * SIZE.y)
	var rocks := RandomNumberGenerator.new()
	rocks.seed = 15
	var blocks: Array[Rect2i] = []
	for i in 26:
		var at := Vector2i(rocks.randi_range(3, SIZE.x - 9), rocks.randi_range(3, SIZE.y - 8))
		blocks.append(Rect2i(at, Vector2i(rocks.randi_range(2, 6), rocks.randi_range(2, 5))))
	for y in SIZE.y:
		for x in SIZE.x:
			var cell := Vector2i(x, y)
			var wall := x == 0 or y == 0 or x == SIZE.x - 1 or y == SIZE.y - 1
			wall = wall or (x == 33 and y != 12 and not WIDE_GAP.has_point(cell))
			wall = wall or (x == 66 and not (y >= 20 and y <= 22) and y != 58)
			# Rocks right of the left wall (the spawn area), clear of both walls' gaps.
			if x > 35 and (x < 64 or x > 68):
				for block in blocks:
					wall = wall or block.has_point(cell)
			walls[y * SIZE.x + x] = 1 if wall else 0
			level.set_cell(cell, 0, Tiles.WALL if wall else Tiles.FLOOR)


## 400 small units on the cells of the top left area, 100 big ones on a lattice below them.
func _spawn_units() -> void:
	var placed := 0
	for y in range(2, 31):
		for x in range(2, 32):
			if placed < SMALL_UNITS and (x + y) % 2 == 0:
				_add_unit(Vector2i(x, y), Vector2i.ONE)
				placed += 1
	placed = 0
	for y in range(31, 68, 3):
		for x in range(1, 32, 3):
			if placed < BIG_UNITS and _open(Vector2i(x, y)) and _open(Vector2i(x + 1, y + 1)):
				if _open(Vector2i(x + 1, y)) and _open(Vector2i(x, y + 1)):
					_add_unit(Vector2i(x, y), Vector2i(2, 2))
					placed += 1


func _add_unit(cell: Vector2i, size: Vector2i) -> void:
	var unit := Node2D.new()
	unit.position = _cell_center(cell)
	group.add_unit(unit, size)
	group.add_child(unit)
	_spawn.append(unit.position)


func _on_steps_failed(code: String, message: String) -> void:
	Tiles.count_failure(counts, "rts: next_steps failed: %s: %s" % [code, message], 3)


func _show(text: String) -> void:
	Tiles.show_status(_status, "rts", text)


func _finish() -> void:
	var moved := 0
	var index := 0
	for unit in group.get_children():
		if (unit as Node2D).position.distance_to(_spawn[index]) > 2.0 * CELL:
			moved += 1
		index += 1
	print(
		(
			(
				"rts summary: %d units, %d sizes, %d moved, %d arrived, %d stranded, "
				+ "%d next_steps replies, %d failures, %d gate toggles, "
				+ "%d walls placed, %d units re-routed, map gen %d, "
				+ "%.2f ms of steering a physics frame"
			)
			% [
				group.get_unit_count(),
				group.get_unit_sizes().size(),
				moved,
				group.get_arrived_count(),
				group.get_stranded_count(),
				group.replies,
				counts.failures,
				counts.gates,
				counts.walls,
				counts.rerouted,
				sync.gen,
				frame_ms_total / maxf(frames, 1.0),
			]
		)
	)
	get_tree().quit()
