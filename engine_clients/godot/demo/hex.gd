extends Node2D
## The hex scene: a tactics map of pointy-top hexagons (a stacked TileSet, the wire's
## "odd-r") with two units, a small one of size 1 and a big one of size 2, whose footprint is
## its hex and the six around it. The selected unit's movement range this turn comes from one
## [code]reachable[/code] request (budget [constant MOVE_BUDGET]; forest costs double, rock
## and water block), drawn hex by hex; hovering a hex of it shows the path there
## ([code]find_path[/code], every hex), centre to centre; left click walks the unit there and
## asks for its new range. Tab, or a click on the other unit, selects it. Each unit's
## requests avoid the other's hexes (option [code]avoid[/code]). The big unit's range and
## paths keep all seven of its hexes clear of rock, water and the map's edge: the ridge's
## one-hex gap is the small unit's way east, the wide pass below the big one's.
##
## The level is a [TileMapLayer] built here and uploaded by a [PathServerTileMapSync] child,
## as the other scenes do. What this scene draws, it places with the server's geometry
## ([code]get_map[/code]'s origin, tile size and layout, through [PathServerHexes]) and the
## server's waypoints, never with the layer's: it lines up with the tiles only if both agree.
## F1 to F4: the demo's scenes.
##
## Command line (after `--`): `--demo-seconds=N` plays a scripted turn headless with simulated
## input (hover the small unit's farthest hex, Tab, hover the big unit's farthest hex, click
## it to move there, click the small unit), checks every range hex and waypoint (the
## footprint clear, on a tile's centre, one hex step apart, the path's cost the range's) and
## prints a summary line; `--screenshot=FILE.png[:S]` saves the window after S seconds
## (default 3), and in the scripted turn FILE.png once the small unit's path is shown and
## FILE-big.png once the big unit's is.

const Tiles := preload("res://demo_tiles.gd")

const TILE := Vector2i(44, 50)
const LEVEL_AT := Vector2(37, 72)
## The level, row by row: "." grass, "f" forest (cost 2), "#" rock, "~" water. Rock runs down
## column 8 with a one-hex gap at (8, 3) and a pass three hexes wide on rows 7 to 9.
const ROWS := [
	"........#....~~~",
	"..ff....#.....~~",
	".fff....#.......",
	"..ff............",
	"........#..ff...",
	"........#.fff...",
	"........#..ff.~~",
	".~~.........f~~~",
	"~~~.............",
	".~..............",
	"........#.....ff",
]
const TILE_OF := {".": Tiles.FLOOR, "f": Tiles.FOREST, "#": Tiles.WALL, "~": Tiles.WATER}
## The ridge's one-hex gap: in the small unit's range, never in the big unit's.
const GAP := Vector2i(8, 3)
## The most a move may cost this turn (1 a hex, forest 2).
const MOVE_BUDGET := 6.0
const PATH_COLOR := Color("fff176")
## How long the scripted turn waits for an answer to its simulated input.
const WAIT_SECONDS := 10.0

## The map as the server has it (get_map): its layout, origin, tile size and size.
var layout := ""
var origin := Vector2.ZERO
var tile_size := Vector2.ONE
var map_size := Vector2i.ZERO
## Hexes no unit may cover (rock, water), as the server has them.
var blocked := {}
var units: Array[HexUnit] = []
var selected := 0
## Hex -> cost of a move there for the selected unit, from the last reachable reply.
var move_range := {}
var path := PackedVector2Array()
## The hex the path leads to (-1, -1: none).
var path_goal := Vector2i(-1, -1)
var hovered := Vector2i(-1, -1)
## Hexes checked (range hexes and waypoints) and the problems found: failed requests, a
## footprint not clear, a hex off its tile, steps that are not one hex, a path's cost that
## is not its hex's in the range.
var counts := {"checked": 0, "failures": 0, "ranges": 0, "drawn": 0}
var _path_busy := false
var _moving := false
var _status: Label

@onready var level: TileMapLayer = $Level
@onready var sync: PathServerTileMapSync = $Level/Sync
@onready var overlay: Node2D = $Overlay


func _ready() -> void:
	_status = $Hud/Status
	level.position = LEVEL_AT
	level.tile_set = Tiles.make_hex_tile_set(TILE)
	for y in ROWS.size():
		for x in ROWS[y].length():
			level.set_cell(Vector2i(x, y), 0, TILE_OF[ROWS[y][x]])
	units.append(HexUnit.new("small", Vector2i(5, 2), 1, Color("4fc3f7")))
	units.append(HexUnit.new("big", Vector2i(4, 5), 2, Color("ff8a65")))
	overlay.draw.connect(_draw_overlay)
	var seconds := Tiles.user_arg("--demo-seconds=").to_float()
	if not await Tiles.wait_for_server(_show) or not await Tiles.wait_for_upload(sync, _show):
		if seconds > 0.0:
			_finish()
		return
	if not await _load_map():
		if seconds > 0.0:
			_finish()
		return
	for unit in units:
		unit.point = _center(unit.cell)
	await refresh_range()
	var screenshot := Tiles.user_arg("--screenshot=")
	if seconds > 0.0:
		_scripted_turn(seconds, screenshot)
	elif screenshot != "":
		var parts := screenshot.rsplit(":", true, 1)
		_save_screenshot(parts[0], parts[1].to_float() if parts.size() == 2 else 3.0)


func _unhandled_input(event: InputEvent) -> void:
	if Tiles.switch_scene(event, get_tree()) or layout == "" or _moving:
		return
	var key := event as InputEventKey
	if key and key.pressed and key.keycode == KEY_TAB:
		select((selected + 1) % units.size())
		return
	# The events' own positions, not the mouse's: simulated input has no mouse.
	var motion := event as InputEventMouseMotion
	if motion:
		hover(_cell_of(get_canvas_transform().affine_inverse() * motion.position))
	var click := event as InputEventMouseButton
	if click and click.pressed and click.button_index == MOUSE_BUTTON_LEFT:
		var cell := _cell_of(get_canvas_transform().affine_inverse() * click.position)
		for i in units.size():
			if i != selected and _footprint(units[i].cell, units[i].size).has(cell):
				select(i)
				return
		move_to(cell)


## Selects unit [param index] and asks for its range.
func select(index: int) -> void:
	selected = index
	await refresh_range()


## Asks for the selected unit's movement range, checks it and draws it.
func refresh_range() -> void:
	var unit := units[selected]
	var area := await PathServer.reachable_async(
		unit.point, MOVE_BUDGET, Vector2i(unit.size, unit.size), _options()
	)
	move_range.clear()
	path = PackedVector2Array()
	path_goal = Vector2i(-1, -1)
	hovered = Vector2i(-1, -1)
	counts.ranges += 1
	if not area.ok:
		_fail("no range for the %s unit: %s: %s" % [unit.name, area.code, area.message])
		overlay.queue_redraw()
		return
	var cells: Array = area.info.cells
	var costs: PackedFloat32Array = area.info.costs
	for i in cells.size():
		move_range[cells[i]] = costs[i]
		_check_hex(cells[i], "a hex of the %s unit's range" % unit.name)
	_show_help(
		(
			"the %s unit (size %d): %d hexes in range for a budget of %d"
			% [unit.name, unit.size, move_range.size(), MOVE_BUDGET]
		)
	)
	overlay.queue_redraw()


## Shows the path to [param cell] when it is in the selected unit's range (one request at a
## time: the last hovered hex wins).
func hover(cell: Vector2i) -> void:
	if cell == hovered:
		return
	hovered = cell
	overlay.queue_redraw()
	var unit := units[selected]
	if not move_range.has(cell) or cell == unit.cell:
		path = PackedVector2Array()
		path_goal = Vector2i(-1, -1)
		return
	if _path_busy:
		return
	_path_busy = true
	var options := _options()
	options["smooth"] = "none"
	var result := await PathServer.find_path_async(
		unit.point, _center(cell), Vector2i(unit.size, unit.size), options
	)
	_path_busy = false
	if units[selected] != unit or _moving:
		# Another unit selected, or this one set off, meanwhile: that path is no more wanted.
		return
	if hovered != cell:
		# The mouse moved on meanwhile: ask for where it is now.
		var now := hovered
		hovered = Vector2i(-1, -1)
		hover(now)
		return
	if result.status != "found":
		_fail("no path for the %s unit to %s: %s" % [unit.name, cell, result])
		return
	path = result.waypoints
	path_goal = cell
	_check_path(result, cell)
	overlay.queue_redraw()


## Walks the selected unit along the path to [param cell] (in range), then asks for its new
## range.
func move_to(cell: Vector2i) -> void:
	var unit := units[selected]
	if not move_range.has(cell) or cell == unit.cell:
		return
	if path_goal != cell:
		hovered = Vector2i(-1, -1)
		await hover(cell)
	if path_goal != cell:
		return
	_moving = true
	var walk := create_tween()
	for point in path.slice(1):
		walk.tween_property(unit, "point", point, 0.1)
	while walk.is_running():
		overlay.queue_redraw()
		await get_tree().process_frame
	unit.cell = cell
	_moving = false
	await refresh_range()


## The selected unit's requests: the level's map, the other unit's hexes avoided.
func _options() -> Dictionary:
	var others: Array[Vector2i] = []
	for i in units.size():
		if i != selected:
			others.append_array(_footprint(units[i].cell, units[i].size))
	return {"map": sync.get_map_name(), "avoid": {"cells": others}}


## Counts a problem with hex [param cell] the selected unit may stand on: its footprint off
## the map, on rock or water or on the other unit, or the hex not where the layer draws its
## tile.
func _check_hex(cell: Vector2i, what: String) -> void:
	counts.checked += 1
	var unit := units[selected]
	for covered in _footprint(cell, unit.size):
		if not _open(covered) or _others_cover(covered):
			_fail("%s, %s: a unit of size %d there covers %s" % [what, cell, unit.size, covered])
			return
	var tile := level.to_global(level.map_to_local(sync.to_layer_cell(cell)))
	if not _center(cell).is_equal_approx(tile):
		_fail("%s, %s: centred at %s, its tile at %s" % [what, cell, _center(cell), tile])


## Counts problems with a path to [param goal]: each waypoint a hex centre whose footprint is
## clear, one hex step after the other, from the unit's hex to [param goal], for the cost the
## range gave [param goal].
func _check_path(result: PathServerResult, goal: Vector2i) -> void:
	var unit := units[selected]
	var what := "a waypoint of the %s unit's path" % unit.name
	var previous := unit.cell
	for i in result.waypoints.size():
		var point := result.waypoints[i]
		var cell := _cell_of(point)
		_check_hex(cell, what)
		if not point.is_equal_approx(_center(cell)):
			_fail("%s, %s, is not its hex's centre" % [what, point])
		if i > 0 and PathServerHexes.distance(layout, previous, cell) != 1:
			_fail("%s: %s follows %s" % [what, cell, previous])
		previous = cell
	if _cell_of(result.waypoints[0]) != unit.cell or previous != goal:
		_fail("the %s unit's path does not go from %s to %s" % [unit.name, unit.cell, goal])
	if not is_equal_approx(float(result.info.get("cost", -1.0)), move_range[goal]):
		_fail(
			(
				"a path of cost %s to %s, in range for %s"
				% [result.info.get("cost"), goal, move_range[goal]]
			)
		)


func _draw_overlay() -> void:
	var unit := units[selected]
	for cell: Vector2i in move_range:
		var cheap := 1.0 - float(move_range[cell]) / (MOVE_BUDGET + 1.0)
		overlay.draw_colored_polygon(_hexagon(cell, 0.86), Color(unit.color, 0.25 + 0.35 * cheap))
		_draw_range_border(cell, unit.color)
	counts.drawn = move_range.size()
	if hovered.x >= 0:
		var inside := move_range.has(hovered)
		_outline(hovered, 0.96, Color.WHITE if inside else Color(1, 1, 1, 0.3), 2.0)
	if path.size() >= 2 and unit.size > 1:
		# The footprint at the path's end: the hexes the big unit will cover.
		for cell in _footprint(path_goal, unit.size):
			_outline(cell, 0.9, Color(PATH_COLOR, 0.7), 1.5)
	for i in units.size():
		_draw_unit(units[i], i == selected)
	if path.size() >= 2:
		overlay.draw_polyline(path, PATH_COLOR, 4.0)
		for point in path:
			overlay.draw_circle(point, 4.5, PATH_COLOR)


## The edges of range hex [param cell] whose hex across is out of range.
func _draw_range_border(cell: Vector2i, color: Color) -> void:
	var middle := _center(cell)
	var corners := PathServerHexes.polygon(layout, cell, origin, tile_size)
	for i in corners.size():
		var from := corners[i]
		var to := corners[(i + 1) % corners.size()]
		# The hex across an edge: its centre is the edge's middle mirrored through this one's.
		if not move_range.has(_cell_of(from + to - middle)):
			overlay.draw_line(from, to, color.lightened(0.3), 3.0)


func _draw_unit(unit: HexUnit, is_selected: bool) -> void:
	if unit.size > 1:
		for cell in _footprint(unit.cell, unit.size):
			var offset := unit.point - _center(unit.cell)
			var corners := _hexagon(cell, 0.94)
			for i in corners.size():
				corners[i] += offset
			overlay.draw_colored_polygon(corners, Color(unit.color, 0.35))
	var radius := TILE.x * (0.3 if unit.size == 1 else 0.6)
	overlay.draw_circle(unit.point, radius, unit.color)
	overlay.draw_arc(
		unit.point, radius, 0.0, TAU, 32, Color.WHITE if is_selected else Color(0, 0, 0, 0.6), 2.5
	)


func _outline(cell: Vector2i, scale_by: float, color: Color, width: float) -> void:
	var corners := _hexagon(cell, scale_by)
	corners.append(corners[0])
	overlay.draw_polyline(corners, color, width)


## The hexagon of [param cell], shrunk around its centre by [param scale_by].
func _hexagon(cell: Vector2i, scale_by: float) -> PackedVector2Array:
	var middle := _center(cell)
	var corners := PathServerHexes.polygon(layout, cell, origin, tile_size)
	for i in corners.size():
		corners[i] = middle + (corners[i] - middle) * scale_by
	return corners


## The scripted turn of the headless run, by simulated input: hover the small unit's
## farthest hex, Tab, hover the big unit's farthest hex, click it (the big unit moves there),
## click the small unit.
func _scripted_turn(seconds: float, screenshot: String) -> void:
	# The range as the overlay drew it, a frame later.
	await get_tree().process_frame
	await get_tree().process_frame
	var small_range: int = move_range.size()
	var small_drawn: int = counts.drawn
	var gap_small := move_range.has(GAP)
	var small_goal := _farthest()
	await _push_hover(small_goal)
	var small_path := path.size()
	if screenshot != "":
		await _save_screenshot(screenshot, 0.5)
	await _push_and_wait_range(_key(KEY_TAB))
	await get_tree().process_frame
	await get_tree().process_frame
	var big_range: int = move_range.size()
	var big_drawn: int = counts.drawn
	var gap_big := move_range.has(GAP)
	var big_goal := _farthest()
	await _push_hover(big_goal)
	var big_path := path.size()
	if screenshot != "":
		await _save_screenshot(screenshot.get_basename() + "-big.png", 0.5)
	await _push_and_wait_range(_click(_center(big_goal)))
	var moved_range: int = move_range.size()
	if units[1].cell != big_goal:
		_fail("the big unit was sent to %s and stands on %s" % [big_goal, units[1].cell])
	await _push_and_wait_range(_click(units[0].point))
	if small_drawn != small_range or big_drawn != big_range or selected != 0:
		_fail("ranges drawn %d and %d, selected %d" % [small_drawn, big_drawn, selected])
	await get_tree().create_timer(maxf(seconds - 2.0, 0.1)).timeout
	print(
		(
			(
				"hex summary: small unit: range %d hexes (%d drawn), path of %d hexes to %s; "
				+ "big unit: range %d hexes (%d drawn), path of %d hexes to %s, moved there, "
				+ "range %d hexes; the one-hex gap in range: small %s, big %s; "
				+ "%d hexes checked, %d failures"
			)
			% [
				small_range,
				small_drawn,
				small_path,
				small_goal,
				big_range,
				big_drawn,
				big_path,
				units[1].cell,
				moved_range,
				"yes" if gap_small else "no",
				"yes" if gap_big else "no",
				counts.checked,
				counts.failures,
			]
		)
	)
	_finish()


## The selected unit's dearest hex in range (eastmost, then southmost, among equals).
func _farthest() -> Vector2i:
	var farthest := units[selected].cell
	for cell: Vector2i in move_range:
		var cost: float = move_range[cell]
		var best: float = move_range.get(farthest, 0.0)
		var later := cell.x > farthest.x or (cell.x == farthest.x and cell.y > farthest.y)
		if cost > best or (cost == best and later):
			farthest = cell
	return farthest


## Moves the simulated mouse onto [param cell] and waits for the path there.
func _push_hover(cell: Vector2i) -> void:
	var motion := InputEventMouseMotion.new()
	motion.position = get_canvas_transform() * _center(cell)
	get_viewport().push_input(motion)
	if not await _wait_until(func() -> bool: return not _path_busy and path_goal == cell):
		_fail("no path shown to %s" % cell)


## Pushes [param event] and waits for the range it asks for.
func _push_and_wait_range(event: InputEvent) -> void:
	var ranges: int = counts.ranges
	get_viewport().push_input(event)
	if not await _wait_until(func() -> bool: return counts.ranges > ranges and not _moving):
		_fail("no range after %s" % event.as_text())


## Waits until [param condition] holds, at most [constant WAIT_SECONDS]; true when it did.
func _wait_until(condition: Callable) -> bool:
	return await Tiles.wait_until(get_tree(), condition, WAIT_SECONDS)


func _key(keycode: Key) -> InputEventKey:
	var key := InputEventKey.new()
	key.keycode = keycode
	key.pressed = true
	return key


func _click(point: Vector2) -> InputEventMouseButton:
	var click := InputEventMouseButton.new()
	click.button_index = MOUSE_BUTTON_LEFT
	click.pressed = true
	click.position = get_canvas_transform() * point
	return click


## Asks the server for the level as it has it: its geometry and blocked hexes.
func _load_map() -> bool:
	var map := await PathServer.get_map_async(sync.get_map_name())
	if not map.ok or map.info.get("shape") != "hex":
		_show("the server did not give the level back as a hex map: %s" % map)
		return false
	layout = map.info.layout
	origin = map.info.origin
	tile_size = map.info.cell_size
	map_size = map.info.size
	blocked.merge(Tiles.blocked_cells(map.info.cells, map_size.x))
	print(
		(
			"hex: level '%s' %dx%d uploaded from its TileMapLayer as %s hexes of %s, %d blocked"
			% [sync.get_map_name(), map_size.x, map_size.y, layout, tile_size, blocked.size()]
		)
	)
	return true


func _footprint(cell: Vector2i, size: int) -> Array[Vector2i]:
	return PathServerHexes.ball(layout, cell, size - 1)


func _open(cell: Vector2i) -> bool:
	return Rect2i(Vector2i.ZERO, map_size).has_point(cell) and not blocked.has(cell)


func _others_cover(cell: Vector2i) -> bool:
	for i in units.size():
		if i != selected and _footprint(units[i].cell, units[i].size).has(cell):
			return true
	return false


func _cell_of(point: Vector2) -> Vector2i:
	return PathServerHexes.cell_at(layout, point, origin, tile_size)


func _center(cell: Vector2i) -> Vector2:
	return PathServerHexes.world_center(layout, cell, origin, tile_size)


func _save_screenshot(file: String, delay: float) -> void:
	await get_tree().create_timer(delay).timeout
	var saved := get_viewport().get_texture().get_image().save_png(file)
	print("hex: screenshot saved to %s (%s)" % [file, error_string(saved)])


func _fail(message: String) -> void:
	Tiles.count_failure(counts, "hex: FAILED: " + message, 5)


## Shows [param line] above the controls.
func _show_help(line: String) -> void:
	_status.text = (
		line
		+ "\nTab or click a unit: select  |  hover: the path  |  left click: move there  |  "
		+ "F1-F4: scenes"
	)
	print("hex: ", line)


func _show(text: String) -> void:
	Tiles.show_status(_status, "hex", text)


func _finish() -> void:
	get_tree().quit()


## A unit on the map: its hex, its size (1: one hex; 2: seven) and where it is drawn.
class HexUnit:
	var name := ""
	var cell := Vector2i.ZERO
	var size := 1
	var color := Color.WHITE
	var point := Vector2.ZERO

	func _init(unit_name: String, at: Vector2i, unit_size: int, unit_color: Color) -> void:
		name = unit_name
		cell = at
		size = unit_size
		color = unit_color
