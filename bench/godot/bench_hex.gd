extends SceneTree
## Godot's AStar2D wired with hex neighbours, for bench/hex.py: the way a Godot user searches
## a hex map today (one point a walkable cell, joined to the cells
## TileMapLayer.get_surrounding_cells() names), timed problem by problem on request.
##
##   godot --headless --path bench/godot -s res://bench_hex.gd -- PROBLEMS
##
## PROBLEMS: a first line "map PATH LAYOUT" (a Moving AI .map, read as a hex map: its cells
## are the hex map's; LAYOUT one of odd-r, even-r, odd-q, even-q), then one problem a line,
## "sx sy gx gy".
##
## The graph: a TileMapLayer with a hexagon TileSet in the layout's arrangement (odd:
## STACKED, even: STACKED_OFFSET; -r: offset axis horizontal, -q: vertical) gives each cell's
## neighbours and its centre (map_to_local). The centres are stretched across the rows (-r)
## or columns (-q) so that the hexagons are regular and neighbours 1 apart: each step then
## costs 1 (AStar2D's cost is the distance between the points, weight scale 1), and its
## estimate, the Euclidean distance, never exceeds the hex distance, so the paths are
## shortest. Building it is timed apart from the searches.
##
## Prints "ready-json: {...}" (set-up time, points, connections, version) once built, then
## answers one command a line on stdin:
##   round  get_id_path(start, goal) for every problem, each timed: "round-json: [us, ...]"
##   paths  the last round's answers: "paths-json: [[id, ...], ...]", a cell's id y * width + x
##   quit   "bench done", and quits
## An error prints "bench FAILED: ..." and quits with 1.

const MovingAIMap := preload("res://movingai_map.gd")
const TILE := 64
## Rows (-r) or columns (-q) of Godot's hexagons are 0.75 of a tile apart; regular hexagons
## with neighbours 1 apart have them sqrt(3) / 2 apart: this many times further.
const STRETCH := 1.1547005383792515
const LAYOUTS := ["odd-r", "even-r", "odd-q", "even-q"]

var width := 0
var height := 0
var layout := ""
## 1 walkable, 0 blocked; index y * width + x.
var walkable := PackedByteArray()
var starts := PackedInt64Array()
var goals := PackedInt64Array()
var astar := AStar2D.new()
var answers := []


func _initialize() -> void:
	var args := OS.get_cmdline_user_args()
	if args.size() != 1:
		_finish("usage: -- PROBLEMS")
		return
	var error := load_problems(args[0])
	if error == "":
		error = build()
	if error != "":
		_finish(error)
		return
	while true:
		var command := OS.read_string_from_stdin().strip_edges()
		match command:
			"round":
				print("round-json: " + JSON.stringify(run_round()))
			"paths":
				print("paths-json: " + JSON.stringify(answers))
			"quit", "":
				# An empty line is the end of stdin: the driver is gone.
				_finish("")
				return
			_:
				_finish("unknown command %s" % command)
				return


func build() -> String:
	var t0 := Time.get_ticks_usec()
	var tile_set := TileSet.new()
	tile_set.tile_shape = TileSet.TILE_SHAPE_HEXAGON
	tile_set.tile_size = Vector2i(TILE, TILE)
	if layout.begins_with("odd"):
		tile_set.tile_layout = TileSet.TILE_LAYOUT_STACKED
	else:
		tile_set.tile_layout = TileSet.TILE_LAYOUT_STACKED_OFFSET
	var pointy := layout.ends_with("-r")
	if pointy:
		tile_set.tile_offset_axis = TileSet.TILE_OFFSET_AXIS_HORIZONTAL
	else:
		tile_set.tile_offset_axis = TileSet.TILE_OFFSET_AXIS_VERTICAL
	var layer := TileMapLayer.new()
	layer.tile_set = tile_set
	var points := 0
	for cell in walkable:
		points += cell
	astar.reserve_space(points)
	for y in height:
		for x in width:
			if walkable[y * width + x] == 0:
				continue
			var centre := layer.map_to_local(Vector2i(x, y)) / TILE
			if pointy:
				centre.y *= STRETCH
			else:
				centre.x *= STRETCH
			astar.add_point(y * width + x, centre)
	var connections := 0
	for y in height:
		for x in width:
			var id := y * width + x
			if walkable[id] == 0:
				continue
			for next: Vector2i in layer.get_surrounding_cells(Vector2i(x, y)):
				var next_id := next.y * width + next.x
				# Each pair once: connect_points joins both ways.
				if is_open(next) and next_id > id:
					astar.connect_points(id, next_id)
					connections += 1
	layer.free()
	var setup_us := Time.get_ticks_usec() - t0
	for i in starts.size():
		if not (astar.has_point(starts[i]) and astar.has_point(goals[i])):
			return "problem %d: its start or goal is blocked" % (i + 1)
	var ready := {
		"setup_us": setup_us,
		"points": points,
		"connections": connections,
		"version": Engine.get_version_info().string,
	}
	print("ready-json: " + JSON.stringify(ready))
	return ""


## Every problem answered once, each get_id_path timed: the times in microseconds.
func run_round() -> Array:
	var times := []
	answers = []
	for i in starts.size():
		var t0 := Time.get_ticks_usec()
		var path := astar.get_id_path(starts[i], goals[i])
		times.append(Time.get_ticks_usec() - t0)
		answers.append(path)
	return times


func is_open(cell: Vector2i) -> bool:
	if cell.x < 0 or cell.y < 0 or cell.x >= width or cell.y >= height:
		return false
	return walkable[cell.y * width + cell.x] != 0


func load_problems(path: String) -> String:
	var file := FileAccess.open(path, FileAccess.READ)
	if file == null:
		return "cannot read %s" % path
	var lines := file.get_as_text().split("\n", false)
	var head := lines[0].split(" ", false) if not lines.is_empty() else PackedStringArray()
	if head.size() != 3 or head[0] != "map" or not head[2] in LAYOUTS:
		return "%s: the first line must be 'map PATH LAYOUT'" % path
	layout = head[2]
	var error := load_map(head[1])
	if error != "":
		return error
	for line in lines.slice(1):
		var fields := line.split(" ", false)
		if fields.size() != 4:
			return "%s: expected 4 fields: %s" % [path, line]
		starts.append(int(fields[1]) * width + int(fields[0]))
		goals.append(int(fields[3]) * width + int(fields[2]))
	return "" if not starts.is_empty() else "%s: no problems" % path


## A Moving AI .map: '.', 'G' and 'S' walkable, everything else blocked (movingai_map.gd).
func load_map(path: String) -> String:
	var read := MovingAIMap.new(path)
	width = read.width
	height = read.height
	walkable = read.walkable
	return read.error


func _finish(error: String) -> void:
	if error == "":
		print("bench done")
	else:
		print("bench FAILED: %s" % error)
	quit(0 if error == "" else 1)
