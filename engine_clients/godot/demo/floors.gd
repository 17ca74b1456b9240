extends Node2D
## The floors scene: a two-storey level. The ground floor ([code]Ground[/code]) fills the map;
## the upper floor ([code]Upper[/code], drawn over it in warmer colours) is a gallery on the
## right half, with a wall across its top. Stairs (a two-way [PathServerLink2D]) lead up from
## the ground at the gallery's top left corner; from its bottom left edge a one-way drop leads
## down. One [PathServerTileMapSync] uploads both layers as the two floors of one map, and the
## link nodes with them. The unit is a [PathServerAgent2D]: a left click sends it to the cell
## under the cursor, upstairs where the gallery is (hold Shift for the ground under it); its
## path takes the stairs or the drop, and it bobs as it crosses ([signal
## PathServerAgent2D.link_reached]). S closes or opens the stairs (the link disabled: a gate),
## and the path changes. The [PathServerDebugDraw2D] overlay draws the server's links (the
## drop's arrow one-way) and the unit's path. F1 to F5: the demo's scenes.
##
## Command line (after `--`): `--demo-seconds=N` plays a scripted trip headless (up the
## stairs to the gallery's bottom right corner, then down to the ground's bottom left, which
## the drop makes the shorter way) and prints a summary line; `--screenshot=FILE.png[:S]` saves the
## window after S seconds (default 3), and in the scripted trip once the way down is shown.

const Tiles := preload("res://demo_tiles.gd")

const MAP := "godot_floors_demo"
const TILE := 24
const LEVEL_AT := Vector2(40, 64)
## The ground floor: "." floor, "#" wall, "~" mud.
const GROUND := [
	"##############################",
	"#............................#",
	"#............................#",
	"#............................#",
	"#.......#####................#",
	"#.......#....................#",
	"#.......#....................#",
	"#.......#....................#",
	"#............................#",
	"#............................#",
	"#.....~~~....................#",
	"#.....~~~....................#",
	"#.......#....................#",
	"#.......#....................#",
	"#.......#....................#",
	"#.......#####................#",
	"#............................#",
	"#............................#",
	"#............................#",
	"##############################",
]
## The upper floor: the gallery (" " no floor), a wall down its middle from the top.
const UPPER := [
	"                              ",
	"               ..............#",
	"               .......#......#",
	"               .......#......#",
	"               .......#......#",
	"               .......#......#",
	"               .......#......#",
	"               .......#......#",
	"               .......#......#",
	"               .......#......#",
	"               .......#......#",
	"               ..............#",
	"               ..............#",
	"               ..............#",
	"               ..............#",
	"               ..............#",
	"               ..............#",
	"               ..............#",
	"               ..............#",
	"                              ",
]
const TILE_OF := {".": Tiles.FLOOR, "#": Tiles.WALL, "~": Tiles.MUD}
## The links, as cells: [from, to, from's floor, to's floor, two-way, cost, tag].
const LINKS := [
	[Vector2i(13, 3), Vector2i(15, 3), 0, 1, true, 3.0, "stairs"],
	[Vector2i(15, 16), Vector2i(13, 16), 1, 0, false, 1.0, "drop"],
]
const START := Vector2i(3, 9)
## The scripted trip: up to the gallery's bottom right, then down to the ground's bottom left
## (by the drop: going back by the stairs is longer).
const UP_GOAL := Vector2i(27, 17)
const DOWN_GOAL := Vector2i(2, 17)
const SPEED_CELLS := 8.0
const COLORS := [Color("4fc3f7"), Color("ffee58")]
## The gallery's tiles: wooden floor, railing, (mud, unused).
const GALLERY_COLORS := [Color("6d5439"), Color("d7c49e"), Color("5d4a36")]
const WAIT_SECONDS := 20.0

var sync: PathServerTileMapSync
var agent: PathServerAgent2D
## The link nodes, in the map's order.
var links: Array[PathServerLink2D] = []
## What happened, for the summary: the trips, the links each path took and the agent
## signalled, failures.
var counts := {"arrived": 0, "failures": 0}
var _trip := {}
var _status: Label

@onready var ground: TileMapLayer = $Ground
@onready var upper: TileMapLayer = $Upper
@onready var unit: Node2D = $Unit
@onready var overlay: PathServerDebugDraw2D = $Overlay


func _ready() -> void:
	_status = $Hud/Status
	ground.tile_set = Tiles.make_tile_set(TILE)
	# The gallery above in wood, its walls a railing; a shadow under it on the ground.
	upper.tile_set = Tiles.make_tile_set(TILE, GALLERY_COLORS)
	for layer: TileMapLayer in [ground, upper]:
		layer.position = LEVEL_AT
	_paint(ground, GROUND)
	_paint(upper, UPPER)
	$Shadow.draw.connect(_draw_shadow)
	$Links.draw.connect(_draw_links)
	for link: Array in LINKS:
		links.append(_make_link(link))
	sync = PathServerTileMapSync.new()
	sync.map_name = MAP
	sync.floor_layers = [ground, upper]
	ground.add_child(sync)
	unit.position = _center(START)
	unit.draw.connect(_draw_unit)
	agent = PathServerAgent2D.new()
	agent.map_name = MAP
	agent.speed = SPEED_CELLS * TILE
	agent.path_options = {"smooth": "los"}
	unit.add_child(agent)
	agent.link_reached.connect(_on_link_reached)
	agent.floor_changed.connect(_on_floor_changed)
	agent.target_reached.connect(func() -> void: counts.arrived += 1)
	agent.path_failed.connect(
		func(code: String, message: String) -> void: _fail("%s: %s" % [code, message])
	)
	overlay.agent = agent
	var seconds := Tiles.user_arg("--demo-seconds=").to_float()
	if not await Tiles.wait_for_server(_show) or not await Tiles.wait_for_upload(sync, _show, true):
		if seconds > 0.0:
			_finish()
		return
	print(
		(
			"floors: level '%s' %dx%d on %d floors uploaded from two TileMapLayers, %d links"
			% [MAP, sync.mapping.size.x, sync.mapping.size.y, sync.floors, sync.links.size()]
		)
	)
	_show_help()
	var screenshot := Tiles.user_arg("--screenshot=")
	if seconds > 0.0:
		# Four times faster, but for a screenshot of the way down as it starts.
		Engine.time_scale = 4.0 if screenshot == "" else 1.0
		_scripted_trip(screenshot)
	elif screenshot != "":
		var parts := screenshot.rsplit(":", true, 1)
		_save_screenshot(parts[0], parts[1].to_float() if parts.size() == 2 else 3.0)


func _process(_delta: float) -> void:
	unit.queue_redraw()


func _unhandled_input(event: InputEvent) -> void:
	if Tiles.switch_scene(event, get_tree()) or not sync.is_synced():
		return
	var key := event as InputEventKey
	if key and key.pressed and key.keycode == KEY_S:
		links[0].enabled = not links[0].enabled
		_show_help()
		return
	var click := event as InputEventMouseButton
	if click and click.pressed and click.button_index == MOUSE_BUTTON_LEFT:
		var point := get_canvas_transform().affine_inverse() * click.position
		var cell := ground.local_to_map(ground.to_local(point))
		var on_floor := 1 if upper.get_cell_source_id(cell) >= 0 and not click.shift_pressed else 0
		go_to(cell, on_floor)


## Sends the unit to [param cell] on [param on_floor].
func go_to(cell: Vector2i, on_floor: int) -> void:
	agent.target_floor = on_floor
	agent.target_position = _center(cell)
	overlay.floor_shown = on_floor
	_show_help("going to %s on the %s" % [cell, _floor_name(on_floor)])


func _on_link_reached(index: int, tag: String, from: Vector2, to: Vector2) -> void:
	_trip.get_or_add("signals", []).append(tag)
	print("floors: link %d (%s) reached at %s, to %s" % [index, tag, from, to])
	# The crossing's animation: a climb swells the unit, a drop shrinks it, then back.
	var bob := create_tween()
	bob.tween_property(unit, "scale", Vector2.ONE * (1.5 if tag == "stairs" else 0.6), 0.15)
	bob.tween_property(unit, "scale", Vector2.ONE, 0.15)


func _on_floor_changed(new_floor: int) -> void:
	# Under the gallery on the ground, over it upstairs.
	unit.z_index = 2 if new_floor > 0 else 0
	overlay.floor_shown = new_floor
	_show_help("now on the %s" % _floor_name(new_floor))


## The scripted trip of the headless run: up to the gallery's bottom right corner, then down
## to the ground's bottom left.
func _scripted_trip(screenshot: String) -> void:
	var up := await _trip_to(UP_GOAL, 1)
	var down := await _trip_to(DOWN_GOAL, 0, screenshot)
	print(
		(
			(
				"floors summary: level %dx%d, %d floors, %d links; up: %s; down: %s; "
				+ "arrived %d, %d failures"
			)
			% [
				sync.mapping.size.x,
				sync.mapping.size.y,
				sync.floors,
				sync.links.size(),
				up,
				down,
				counts.arrived,
				counts.failures,
			]
		)
	)
	_finish()


## Sends the unit to [param cell] on [param on_floor] and waits until it is there; what the
## trip was, for the summary.
func _trip_to(cell: Vector2i, on_floor: int, screenshot := "") -> String:
	_trip = {"signals": []}
	var result: Array = []
	var take := func(_waypoints: PackedVector2Array) -> void: result.append(agent.waypoints)
	agent.path_changed.connect(take)
	var arrived: int = counts.arrived
	go_to(cell, on_floor)
	if not await _wait_until(func() -> bool: return not result.is_empty()):
		_fail("no path to %s on floor %d" % [cell, on_floor])
	agent.path_changed.disconnect(take)
	var taken := []
	for pair: Array in agent.path_links:
		taken.append(links[pair[1]].tag)
	if screenshot != "":
		await _save_screenshot(screenshot, 0.15)
	if not await _wait_until(func() -> bool: return counts.arrived > arrived):
		_fail("the unit did not reach %s on floor %d" % [cell, on_floor])
	if agent.current_floor != on_floor:
		_fail("the unit is on floor %d, not %d" % [agent.current_floor, on_floor])
	return (
		"path of %d waypoints to %s on floor %d taking %s, signals %s"
		% [
			agent.waypoints.size(),
			cell,
			on_floor,
			", ".join(taken) if not taken.is_empty() else "no link",
			", ".join(_trip.signals) if not _trip.signals.is_empty() else "none",
		]
	)


func _draw_unit() -> void:
	var on_floor := agent.current_floor if agent != null else 0
	var radius := TILE * 0.38
	unit.draw_circle(Vector2(2, 3), radius, Color(0, 0, 0, 0.35))
	unit.draw_circle(Vector2.ZERO, radius, COLORS[mini(on_floor, COLORS.size() - 1)])
	unit.draw_arc(Vector2.ZERO, radius, 0.0, TAU, 32, Color.WHITE, 2.0)


## The gallery's shadow on the ground: it stands above it.
func _draw_shadow() -> void:
	for cell in upper.get_used_cells():
		var corner := upper.to_global(upper.map_to_local(cell)) - Vector2(TILE, TILE) * 0.5
		$Shadow.draw_rect(Rect2(corner + Vector2(-8, 8), Vector2(TILE, TILE)), Color(0, 0, 0, 0.45))


## The stairs' steps and the drop's edge under the overlay's lines, and the floors' names.
func _draw_links() -> void:
	var font := ThemeDB.fallback_font
	var canvas: Node2D = $Links
	for i in links.size():
		var link := links[i]
		var from := link.get_global_start_position()
		var to := link.get_global_end_position()
		var across := (to - from).normalized().orthogonal() * TILE * 0.45
		if link.tag == "stairs":
			for step in 6:
				var at := from.lerp(to, (step + 0.5) / 6.0)
				canvas.draw_line(at - across, at + across, Color(0.85, 0.8, 0.7, 0.9), 3.0)
		var label_at := from.lerp(to, 0.5) + Vector2(-18, -TILE * 0.7)
		canvas.draw_string(font, label_at, link.tag, HORIZONTAL_ALIGNMENT_LEFT, -1, 13)
	canvas.draw_string(font, _center(Vector2i(1, 1)) + Vector2(-8, -16), "ground floor")
	canvas.draw_string(font, _center(Vector2i(15, 1)) + Vector2(-8, -16), "gallery (upper floor)")


func _make_link(link: Array) -> PathServerLink2D:
	var node := PathServerLink2D.new()
	node.name = str(link[6]).capitalize()
	node.map_name = MAP
	node.position = _center(link[0])
	node.end_position = _center(link[1]) - node.position
	node.start_floor = link[2]
	node.end_floor = link[3]
	node.bidirectional = link[4]
	node.cost = link[5]
	node.tag = link[6]
	$Links.add_child(node)
	return node


func _paint(layer: TileMapLayer, rows: Array) -> void:
	for y in rows.size():
		for x in rows[y].length():
			if TILE_OF.has(rows[y][x]):
				layer.set_cell(Vector2i(x, y), 0, TILE_OF[rows[y][x]])


func _center(cell: Vector2i) -> Vector2:
	return ground.to_global(ground.map_to_local(cell))


func _floor_name(on_floor: int) -> String:
	return "gallery (floor 1)" if on_floor == 1 else "ground (floor 0)"


## Waits until [param condition] holds, at most [constant WAIT_SECONDS]; true when it did.
func _wait_until(condition: Callable) -> bool:
	return await Tiles.wait_until(get_tree(), condition, WAIT_SECONDS)


func _save_screenshot(file: String, delay: float) -> void:
	await get_tree().create_timer(delay, true, false, true).timeout
	var saved := get_viewport().get_texture().get_image().save_png(file)
	print("floors: screenshot saved to %s (%s)" % [file, error_string(saved)])


func _fail(message: String) -> void:
	Tiles.count_failure(counts, "floors: FAILED: " + message, 5)


## Shows [param line] above the controls.
func _show_help(line := "") -> void:
	var stairs := "open" if links[0].enabled else "closed"
	_status.text = (
		(line + "\n" if line != "" else "")
		+ (
			"left click: go there (upstairs on the gallery; Shift: the ground)  |  S: stairs %s"
			% stairs
		)
		+ "  |  F1-F5: scenes"
	)
	if line != "":
		print("floors: ", line)


func _show(text: String) -> void:
	Tiles.show_status(_status, "floors", text)


func _finish() -> void:
	get_tree().quit()
