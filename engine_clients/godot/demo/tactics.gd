extends Node2D
## The tactics scene: a unit's movement range this turn, from one [code]reachable[/code]
## request, drawn as a tinted area (brighter where a move is cheaper; mud costs double);
## hovering a cell of the range shows the path to it ([code]find_path[/code], every cell);
## left click moves the unit there. Right click places an obstacle, or removes one, after
## asking [code]check_block[/code] whether it would cut the unit off from the exit (the
## flag): such a placement is refused, the map left as it is.
##
## The level (24 x 14 cells of 32 pixels) is a [TileMapLayer] built here and uploaded by a
## [PathServerTileMapSync] child, as the other scenes do; the sync sends each obstacle as an
## [code]update[/code], and the range is asked again once it landed. H makes the unit heavy:
## its requests carry [code]{"traversal": "heavy"}[/code], a unit class uploaded with the map
## that may not enter the mud (the tiles' custom data "tag"). F1 to F4: the demo's scenes.
##
## Command line (after `--`): `--demo-seconds=N` plays a short scripted turn headless (hover
## the farthest cell, try to block the door, place an obstacle elsewhere, move) and prints a
## summary line; `--screenshot=FILE.png[:S]` saves the window after S seconds (default 3).

const Tiles := preload("res://demo_tiles.gd")

const CELL := 32
const SIZE := Vector2i(24, 14)
const LEVEL_AT := Vector2(16, 56)
## The most a move may cost this turn (1 a cell, sqrt(2) diagonally, mud double).
const MOVE_BUDGET := 6.0
const UNIT_START := Vector2i(4, 7)
const EXIT := Vector2i(21, 7)
## The one door in the wall down column 12: blocking it would cut the unit off.
const DOOR := Vector2i(12, 9)
const RANGE_COLOR := Color(0.3, 0.75, 1.0)
## The map's unit classes, uploaded with it: a heavy unit may not enter the mud (the tiles'
## custom data "tag" is "mud", uploaded as the map's tags).
const UNIT_CLASSES := {"heavy": {"mud": null}}

var unit_cell := UNIT_START
var unit_point := Vector2.ZERO
## Cell -> cost of a move there, from the last reachable reply.
var move_range := {}
var path := PackedVector2Array()
var hovered := Vector2i(-1, -1)
var obstacles := {}
var counts := {"refused": 0, "placed": 0, "ranges": 0, "paths": 0, "drawn": 0}
## The unit is of the class "heavy" (H): its requests carry {"traversal": "heavy"}.
var heavy := false
var _path_busy := false
var _moving := false
var _refused_cell := Vector2i(-1, -1)
var _status: Label

@onready var level: TileMapLayer = $Level
@onready var sync: PathServerTileMapSync = $Level/Sync
@onready var overlay: Node2D = $Overlay


func _ready() -> void:
	_status = $Hud/Status
	level.position = LEVEL_AT
	level.tile_set = Tiles.make_tile_set(CELL)
	sync.classes = UNIT_CLASSES
	_build_level()
	unit_point = _center(unit_cell)
	overlay.draw.connect(_draw_overlay)
	sync.synced.connect(func(_gen: int, _cells: int) -> void: refresh_range())
	var seconds := Tiles.user_arg("--demo-seconds=").to_float()
	if not await Tiles.wait_for_first_upload(sync, _show):
		if seconds > 0.0:
			_finish()
		return
	_show(
		(
			"hover: the path  |  left click: move there  |  right click: place/remove an "
			+ "obstacle (refused if it cuts the way to the flag)  |  H: heavy (no mud)  |  "
			+ "F1-F4: scenes"
		)
	)
	await refresh_range()
	var screenshot := Tiles.user_arg("--screenshot=")
	if seconds > 0.0:
		_scripted_turn(seconds, screenshot)
	elif screenshot != "":
		_save_screenshot(screenshot)


func _process(_delta: float) -> void:
	if _moving or sync.gen < 0 or Tiles.user_arg("--demo-seconds=") != "":
		return
	hover(_cell_of(get_global_mouse_position()))


func _unhandled_input(event: InputEvent) -> void:
	if Tiles.switch_scene(event, get_tree()):
		return
	var key := event as InputEventKey
	if key and key.pressed and key.keycode == KEY_H and not _moving:
		toggle_heavy()
	var click := event as InputEventMouseButton
	if click and click.pressed and not _moving:
		var cell := _cell_of(get_canvas_transform().affine_inverse() * click.position)
		if click.button_index == MOUSE_BUTTON_LEFT:
			move_to(cell)
		elif click.button_index == MOUSE_BUTTON_RIGHT:
			toggle_obstacle(cell)


## Asks for the unit's movement range and draws it.
func refresh_range() -> void:
	var area := await PathServer.reachable_async(unit_point, MOVE_BUDGET, Vector2i.ONE, _options())
	if not area.ok:
		_show("no range: %s: %s" % [area.code, area.message])
		return
	move_range.clear()
	var cells: Array = area.info.cells
	var costs: PackedFloat32Array = area.info.costs
	for i in cells.size():
		move_range[cells[i]] = costs[i]
	counts.ranges += 1
	path = PackedVector2Array()
	hovered = Vector2i(-1, -1)
	overlay.queue_redraw()


## Makes the unit heavy (no mud: the map's class "heavy") or light again, and asks for its
## range.
func toggle_heavy() -> void:
	heavy = not heavy
	_show("the unit is %s" % ('heavy: no mud (traversal "heavy")' if heavy else "light"))
	await refresh_range()


## The options of this unit's requests: the level's map, and its class when heavy.
func _options() -> Dictionary:
	var options := {"map": sync.get_map_name()}
	if heavy:
		options["traversal"] = "heavy"
	return options


## Shows the path to [param cell] when it is in range (one request at a time: the last
## hovered cell wins).
func hover(cell: Vector2i) -> void:
	if cell == hovered:
		return
	hovered = cell
	overlay.queue_redraw()
	if not move_range.has(cell) or cell == unit_cell:
		path = PackedVector2Array()
		return
	if _path_busy:
		return
	_path_busy = true
	var options := _options()
	options["smooth"] = "none"
	var result := await PathServer.find_path_async(unit_point, _center(cell), Vector2i.ONE, options)
	_path_busy = false
	if hovered != cell:
		# The mouse moved on meanwhile: ask for where it is now.
		var now := hovered
		hovered = Vector2i(-1, -1)
		hover(now)
		return
	path = result.waypoints
	counts.paths += 1
	overlay.queue_redraw()


## Walks the unit along the path to [param cell] (in range), then asks for its new range.
func move_to(cell: Vector2i) -> void:
	if not move_range.has(cell) or cell == unit_cell:
		return
	hovered = Vector2i(-1, -1)
	await hover(cell)
	if path.is_empty():
		return
	_moving = true
	var walk := create_tween()
	for point in path.slice(1):
		walk.tween_property(self, "unit_point", point, 0.08)
	walk.tween_callback(overlay.queue_redraw)
	while walk.is_running():
		overlay.queue_redraw()
		await get_tree().process_frame
	unit_cell = cell
	_moving = false
	await refresh_range()


## Places an obstacle on [param cell], unless it would cut the unit off from the exit (asked
## with check_block first), or removes the one there.
func toggle_obstacle(cell: Vector2i) -> bool:
	if not Rect2i(Vector2i.ONE, SIZE - Vector2i(2, 2)).has_point(cell):
		return false
	if obstacles.has(cell):
		obstacles.erase(cell)
		level.set_cell(cell, 0, Tiles.FLOOR)
		return true
	if level.get_cell_atlas_coords(cell) == Tiles.WALL or cell in [unit_cell, EXIT]:
		return false
	var ends := PackedVector2Array([unit_point, _center(EXIT)])
	var cut := await PathServer.check_block_async(
		[_center(cell)], [], ends, Vector2i.ONE, _options()
	)
	if not cut.ok or not cut.info.disconnected.is_empty():
		counts.refused += 1
		_refused_cell = cell
		_show("refused: an obstacle at %s would cut the way to the flag" % cell)
		overlay.queue_redraw()
		get_tree().create_timer(0.6).timeout.connect(_clear_refused)
		return false
	obstacles[cell] = true
	level.set_cell(cell, 0, Tiles.WALL)
	counts.placed += 1
	_show("obstacle at %s: the range is asked again once the server has it" % cell)
	return true


func _clear_refused() -> void:
	_refused_cell = Vector2i(-1, -1)
	overlay.queue_redraw()


func _draw_overlay() -> void:
	var tile := Vector2(CELL, CELL)
	for cell: Vector2i in move_range:
		var cheap := 1.0 - float(move_range[cell]) / (MOVE_BUDGET + 1.0)
		overlay.draw_rect(
			Rect2(_corner(cell), tile).grow(-1.0), Color(RANGE_COLOR, 0.15 + 0.35 * cheap)
		)
	counts.drawn = move_range.size()
	if hovered.x >= 0:
		var inside := move_range.has(hovered)
		overlay.draw_rect(
			Rect2(_corner(hovered), tile), Color.WHITE if inside else Color(1, 1, 1, 0.3), false, 2
		)
	if path.size() >= 2:
		overlay.draw_polyline(path, Color("fff176"), 4.0)
		for point in path:
			overlay.draw_circle(point, 4.0, Color("fff176"))
	if _refused_cell.x >= 0:
		overlay.draw_rect(Rect2(_corner(_refused_cell), tile), Color(1, 0.2, 0.2, 0.6))
	var flag := _center(EXIT)
	overlay.draw_line(flag + Vector2(-6, 12), flag + Vector2(-6, -12), Color.WHITE, 3.0)
	overlay.draw_colored_polygon(
		PackedVector2Array(
			[flag + Vector2(-6, -12), flag + Vector2(10, -6), flag + Vector2(-6, 0)]
		),
		Color("e53935")
	)
	overlay.draw_circle(unit_point, CELL * 0.35, Color("ff8a65"))
	overlay.draw_arc(unit_point, CELL * 0.35, 0.0, TAU, 24, Color.WHITE, 2.0)


## Border, a wall down column 12 with one door, pillars and mud (the same every run).
func _build_level() -> void:
	for y in SIZE.y:
		for x in SIZE.x:
			var cell := Vector2i(x, y)
			var tile := Tiles.FLOOR
			if x == 0 or y == 0 or x == SIZE.x - 1 or y == SIZE.y - 1:
				tile = Tiles.WALL
			elif x == 12 and cell != DOOR:
				tile = Tiles.WALL
			elif cell in [Vector2i(6, 4), Vector2i(7, 4), Vector2i(6, 10), Vector2i(17, 5)]:
				tile = Tiles.WALL
			elif Rect2i(2, 2, 3, 3).has_point(cell) or Rect2i(7, 7, 3, 2).has_point(cell):
				tile = Tiles.MUD
			elif Rect2i(15, 9, 4, 3).has_point(cell):
				tile = Tiles.MUD
			level.set_cell(cell, 0, tile)


## The scripted turn of the headless run: hover the farthest cell of the range, try to block
## the door (refused), place an obstacle in the open (placed, the range asked again), move.
func _scripted_turn(seconds: float, screenshot: String) -> void:
	var first_range: int = move_range.size()
	# The range as the overlay drew it, a frame later.
	await get_tree().process_frame
	await get_tree().process_frame
	var first_drawn: int = counts.drawn
	var farthest := unit_cell
	for cell: Vector2i in move_range:
		if move_range[cell] > move_range.get(farthest, 0.0):
			farthest = cell
	await hover(farthest)
	var path_cells := path.size()
	if screenshot != "":
		await _save_screenshot(screenshot)
	await toggle_obstacle(DOOR)
	var ranges: int = counts.ranges
	await toggle_obstacle(UNIT_START + Vector2i(1, -2))
	while counts.ranges == ranges:
		await get_tree().process_frame
	var second_range: int = move_range.size()
	await move_to(farthest)
	await toggle_heavy()
	var heavy_range: int = move_range.size()
	await get_tree().create_timer(maxf(seconds - 2.0, 0.1)).timeout
	print(
		(
			(
				"tactics summary: range of %d cells (%d drawn), path of %d cells to %s, "
				+ "%d placements refused, %d placed, range after %d cells, unit at %s, "
				+ "range as heavy %d cells"
			)
			% [
				first_range,
				first_drawn,
				path_cells,
				farthest,
				counts.refused,
				counts.placed,
				second_range,
				unit_cell,
				heavy_range,
			]
		)
	)
	_finish()


func _save_screenshot(argument: String) -> void:
	var parts := argument.rsplit(":", true, 1)
	await get_tree().create_timer(parts[1].to_float() if parts.size() == 2 else 3.0).timeout
	var saved := get_viewport().get_texture().get_image().save_png(parts[0])
	print("tactics: screenshot saved to %s (%s)" % [parts[0], error_string(saved)])


func _cell_of(point: Vector2) -> Vector2i:
	return Vector2i(((point - LEVEL_AT) / CELL).floor())


func _corner(cell: Vector2i) -> Vector2:
	return LEVEL_AT + Vector2(cell * CELL)


func _center(cell: Vector2i) -> Vector2:
	return _corner(cell) + Vector2(CELL, CELL) / 2.0


func _show(text: String) -> void:
	Tiles.show_status(_status, "tactics", text)


func _finish() -> void:
	get_tree().quit()
