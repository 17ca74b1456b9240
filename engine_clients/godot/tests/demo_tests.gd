extends "res://suite_part.gd"
## The demo's level, formation and routes, checked as the demo uses them.

# -- the demo ---------------------------------------------------------------------------------


func demo_path(file: String) -> String:
	return (
		ProjectSettings
		. globalize_path("res://")
		. path_join("../demo")
		. path_join(file)
		. simplify_path()
	)


## Uploads the demo's level (demo/level.tscn, a TileMapLayer) as the demo does, under the
## name of [method demo_map].
func upload_demo_level() -> bool:
	var scene: PackedScene = load(demo_path("level.tscn"))
	var level: TileMapLayer = scene.instantiate()
	root.add_child(level)
	var upload := await client.put_tilemap_async(demo_map(), level)
	level.queue_free()
	check(upload.ok, "the demo's level (demo/level.tscn) uploads as '%s'" % demo_map(), upload)
	return upload.ok


## The map the demo's project settings ask for.
func demo_map() -> String:
	var project := ConfigFile.new()
	project.load(demo_path("project.godot"))
	return project.get_value("pathserver", "connection/default_map", "example")


## The demo sends its whole group to one point: each unit must get a cell of its own (they
## all used to stop on the clicked cell), on the clicked side of a wall.
func test_demo_formation() -> void:
	var formation: GDScript = load(demo_path("formation.gd"))
	var rows := [
		"..........",
		"..........",
		"....@.....",
		"....@.....",
		"....@.....",
		"..........",
	]
	var walkable := func(cell: Vector2i) -> bool:
		return (
			cell.x >= 0
			and cell.y >= 0
			and cell.y < rows.size()
			and cell.x < rows[0].length()
			and rows[cell.y][cell.x] == "."
		)
	var sizes: Array[Vector2i] = [
		Vector2i.ONE, Vector2i(2, 2), Vector2i.ONE, Vector2i(2, 2), Vector2i.ONE
	]
	var goals: Array[Vector2i] = formation.goal_cells(Vector2i(3, 3), sizes, walkable)
	var covered := {}
	var problems := []
	for i in goals.size():
		for cell: Vector2i in formation.footprint(goals[i], sizes[i]):
			if covered.has(cell) or not walkable.call(cell):
				problems.append([i, cell])
			covered[cell] = true
		if goals[i].x > 3 or Vector2(goals[i]).distance_to(Vector2(3, 3)) > 3.0:
			problems.append([i, goals[i], "not near the centre, on its side of the wall"])
	check(
		goals.size() == 5 and problems.is_empty(),
		"demo formation: five units of two sizes get five separate places near the point",
		[goals, problems]
	)


## Cells where a unit of [param size] can stand on [param map], found as the demo finds walls:
## a zero-length path with snapping off fails with start_blocked on the others.
func standable_cells(map: String, size: Vector2i, width: int, height: int) -> Array:
	var cells := []
	for y in height:
		for x in width:
			cells.append(Vector2i(x, y))
	var results := await client.find_paths_async(
		cells.map(func(cell: Vector2i) -> Dictionary: return {"start": cell, "goal": cell}),
		size,
		{"map": map, "space": "grid", "snap": false}
	)
	var standable := []
	for i in results.size():
		if results[i].ok:
			standable.append(cells[i])
	return standable


## A 2x2 demo unit could be trapped: the demo's map had rooms it fits in behind one-cell doors.
## The level is the demo's TileMapLayer, uploaded as the demo does.
## On the demo's map every cell a unit of either size can stand on must be reachable from
## every other for that size.
func test_demo_map_fits_its_units() -> void:
	if not await upload_demo_level():
		return
	var map := demo_map()
	var maps := await client.request_async("maps")
	var entry := {}
	for item: Dictionary in maps.reply.get("maps", []):
		if item.get("name") == map:
			entry = item
	if entry.is_empty():
		check(false, "the server serves the demo's map '%s'" % map, maps.reply)
		return
	for size in [Vector2i.ONE, Vector2i(2, 2)]:
		var cells := await standable_cells(map, size, entry.width, entry.height)
		var results := await client.find_paths_async(
			cells.map(func(cell: Vector2i) -> Array: return [cells[0], cell]),
			size,
			{"map": map, "space": "grid", "snap": false}
		)
		var unreachable := []
		for i in results.size():
			if results[i].status != "found":
				unreachable.append(cells[i])
		check(
			cells.size() > 100 and results.size() == cells.size() and unreachable.is_empty(),
			(
				"demo map '%s': a %dx%d unit reaches all %d cells it can stand on"
				% [map, size.x, size.y, cells.size()]
			),
			unreachable.slice(0, 10)
		)


## The demo shows two unit sizes taking different routes between its roaming areas: the small
## units through the middle wall's one-cell gap (row 8), the big ones by the wide gap below.
func test_demo_routes_differ_by_size() -> void:
	var options := {"map": demo_map(), "space": "grid", "smooth": "corners"}
	var small := await client.find_path_async(Vector2(12, 3), Vector2(40, 3), Vector2i.ONE, options)
	var big := await client.find_path_async(Vector2(12, 3), Vector2(40, 3), Vector2i(2, 2), options)
	check(
		(
			small.ok
			and big.ok
			and small.waypoints.has(Vector2(25, 8))
			and big.info.length > small.info.length * 1.5
		),
		(
			"demo: the 1x1 route takes the one-cell gap (length %.1f), the 2x2 one a detour (%.1f)"
			% [small.info.get("length", 0.0), big.info.get("length", 0.0)]
		),
		[small.waypoints, big.waypoints]
	)
	await client.drop_map_async(demo_map())
