extends "res://suite_part.gd"
## The queries beyond one path against the real server, traversal on tagged maps, and
## PathServerFlowGroup2D steering a crowd.

# -- queries ----------------------------------------------------------------------------------


## Each query on the arena (20 x 12 cells of 16 units, a wall down column 10 with a gap at
## rows 5-6), in world space as a game calls them.
func test_queries() -> void:
	var goals := PackedVector2Array([center(Vector2i(18, 2)), center(Vector2i(3, 8))])
	var nearest := await client.find_path_to_any_async(center(Vector2i(2, 2)), goals)
	check_equal(
		[nearest.status, nearest.info.get("goal_index"), nearest.waypoints[-1]],
		["found", 1, center(Vector2i(3, 8))],
		"find_path_to_any: the nearer goal wins, goal_index says which"
	)
	var area := await client.reachable_async(center(Vector2i(2, 2)), 3.0)
	var cells: Array = area.info.get("cells", [])
	var costs: PackedFloat32Array = area.info.get("costs", PackedFloat32Array())
	var ascending := true
	for i in range(1, costs.size()):
		ascending = ascending and costs[i] >= costs[i - 1]
	check(
		(
			area.ok
			and cells[0] == Vector2i(2, 2)
			and costs[0] == 0.0
			and ascending
			and costs[-1] <= 3.0
			and cells.has(Vector2i(5, 2)) == false
			and cells.has(Vector2i(2, 5))
			and not cells.has(Vector2i(2, 6))
			and cells.size() == costs.size()
		),
		"reachable: grid cells within the budget, cheapest first (the block at (4, 2) in the way)",
		area
	)
	var field := await client.distance_field_async(
		PackedVector2Array([center(Vector2i(15, 5))]), Vector2i.ONE, {"region": Rect2i(9, 4, 2, 4)}
	)
	var cost: PackedFloat32Array = field.info.get("cost", PackedFloat32Array())
	check(
		(
			field.ok
			and [field.info.width, field.info.height, field.info.origin] == [2, 4, Vector2i(9, 4)]
			and cost.size() == 8
			and is_inf(cost[1])
			and is_equal_approx(cost[3], 5.0)
			and is_equal_approx(cost[5], 4.0 + sqrt(2.0))
			and is_inf(cost[7])
		),
		"distance_field: a region's costs row-major, +inf on the wall, exact through the gap",
		[field, Array(cost)]
	)
	var positions := PackedVector2Array(
		[center(Vector2i(2, 5)) + Vector2(3, -2), center(Vector2i(15, 5)), center(Vector2i(12, 3))]
	)
	var target := PackedVector2Array([center(Vector2i(15, 5))])
	var steps := await client.next_steps_async(target, positions)
	var remaining: PackedFloat32Array = steps.info.get("remaining", PackedFloat32Array())
	check(
		(
			steps.ok
			and (
				steps.info.steps
				== PackedVector2Array(
					[center(Vector2i(3, 5)), center(Vector2i(15, 5)), center(Vector2i(13, 4))]
				)
			)
			and Array(remaining).slice(0, 2) == [13.0, 0.0]
		),
		"next_steps: each unit's next cell (world centres), on the goal its own, the cost left",
		[steps, steps.info.get("steps"), Array(remaining)]
	)
	var far := await client.next_steps_async(target, positions, Vector2i.ONE, {"lookahead": "los"})
	check(
		far.ok and far.info.steps[0] == center(Vector2i(15, 5)),
		"next_steps: lookahead los heads straight for the goal it sees",
		far.info.get("steps")
	)
	var big := await client.next_steps_async(target, positions, Vector2i(3, 3))
	check(
		big.ok and is_inf(big.info.remaining[0]),
		"next_steps: a 3x3 unit cannot pass the two-cell gap (remaining +inf)",
		big.info.get("remaining")
	)
	var ends := PackedVector2Array([center(Vector2i(2, 2)), center(Vector2i(15, 2))])
	var gap := [center(Vector2i(10, 5)), center(Vector2i(10, 6))]
	var cut := await client.check_block_async(gap, [], ends)
	var cut_rect := await client.check_block_async([], [Rect2(160, 80, 16, 32)], ends)
	var elsewhere := await client.check_block_async([center(Vector2i(5, 8))], [], ends)
	check_equal(
		[
			cut.info.get("disconnected"),
			cut_rect.info.get("disconnected"),
			elsewhere.info.get("disconnected")
		],
		[[[0, 1]], [[0, 1]], []],
		"check_block: closing the gap (cells or a rect) cuts the halves apart, a cell elsewhere not"
	)
	var shut := {"avoid": {"cells": [Vector2i(10, 5), Vector2i(10, 6)]}}
	var around := await client.find_path_async(center(Vector2i(2, 5)), center(Vector2i(15, 5)))
	var avoided := await client.find_path_async(
		center(Vector2i(2, 5)), center(Vector2i(15, 5)), Vector2i.ONE, shut
	)
	shut["avoid_cost"] = 50.0
	var priced := await client.find_path_async(
		center(Vector2i(2, 5)), center(Vector2i(15, 5)), Vector2i.ONE, shut
	)
	check_equal(
		[around.status, avoided.status, priced.status, priced.info.get("cost", 0.0) > 50.0],
		["found", "no_path", "found", true],
		"avoid blocks cells for one request (the map untouched), avoid_cost prices them"
	)
	# The same cells as int32 pairs (the bin): the same answers, in a batch's entry too.
	var west := center(Vector2i(2, 5))
	var east := center(Vector2i(15, 5))
	var pairs := {"avoid": {"cells": PackedInt32Array([10, 5, 10, 6])}}
	var avoided_pairs := await client.find_path_async(west, east, Vector2i.ONE, pairs)
	pairs["avoid_cost"] = 50.0
	var priced_pairs := await client.find_path_async(west, east, Vector2i.ONE, pairs)
	var by_gap := center(Vector2i(9, 5))
	var range_cells := await client.reachable_async(by_gap, 4.0, Vector2i.ONE, shut)
	var range_pairs := await client.reachable_async(by_gap, 4.0, Vector2i.ONE, pairs)
	var batch := await client.find_paths_async(
		[{"start": west, "goal": east, "avoid": pairs.avoid}, [west, east]]
	)
	check_equal(
		[
			avoided_pairs.status,
			priced_pairs.status,
			priced_pairs.info.get("cost"),
			priced_pairs.waypoints,
			range_pairs.info.get("cells"),
			batch.map(func(result: PathServerResult) -> String: return result.status),
		],
		[
			avoided.status,
			priced.status,
			priced.info.get("cost"),
			priced.waypoints,
			range_cells.info.get("cells"),
			["no_path", "found"],
		],
		"avoid's cells as int32 pairs get the answers of the same cells as Vector2i"
	)
	var odd := await client.find_path_async(
		west, east, Vector2i.ONE, {"avoid": {"cells": PackedInt32Array([10, 5, 10])}}
	)
	var mixed := await client.find_path_async(
		west, east, Vector2i.ONE, {"avoid": {"cells": [Vector2i(10, 5), "10, 6"]}}
	)
	var floats := await client.find_path_async(
		west, east, Vector2i.ONE, {"avoid": {"cells": [Vector2i(10, 5), Vector2(10.5, 6.5)]}}
	)
	var not_a_map := await client.reachable_async(
		by_gap, 4.0, Vector2i.ONE, {"avoid": [Vector2i(10, 5)]}
	)
	check_equal(
		[
			[odd.ok, odd.code, odd.info.get("at")],
			[mixed.ok, mixed.code, mixed.info.get("at")],
			[not_a_map.ok, not_a_map.code, not_a_map.info.get("at")],
			floats.status,
		],
		[
			[false, "invalid_request", "avoid.cells[0]"],
			[false, "invalid_request", "avoid.cells[1]"],
			[false, "invalid_request", "avoid"],
			"no_path",
		],
		"avoid not as whole cells goes as given: odd pairs, a string, a non-map refused; floats read"
	)
	var off_map := await client.reachable_async(Vector2(-100, 0), 3.0)
	var bad_lookahead := await client.next_steps_async(
		target, positions, Vector2i.ONE, {"lookahead": "far"}
	)
	check_equal(
		[off_map.code, off_map.info.get("at"), bad_lookahead.code, bad_lookahead.info.get("at")],
		["out_of_bounds", "start", "invalid_request", "lookahead"],
		"query errors come back as results with the field they are about"
	)


## A map with a tag layer, its tags' names and a unit class, uploaded with put_grid; requests'
## traversal blocks or prices the tagged cells.
func test_traversal() -> void:
	# 5 x 3, every cell walkable; column 2 is water (tag 1).
	var cells := PackedByteArray()
	cells.resize(15)
	cells.fill(1)
	var tags := PackedByteArray([0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0])
	var upload := await client.put_grid_async(
		"godot_tagged",
		Vector2i(5, 3),
		cells,
		{"tags": tags, "tag_names": {"water": 1}, "classes": {"tank": {"water": null}}}
	)
	check(upload.ok, "put_grid: tags, tag_names and classes accepted", upload)
	var grid := {"space": "grid", "map": "godot_tagged", "smooth": "none"}
	var answers := []
	for traversal: Variant in [null, "tank", {"water": null}, {"water": 3.0}]:
		var options := grid.duplicate()
		if traversal != null:
			options["traversal"] = traversal
		var result := await client.find_path_async(
			Vector2(0, 1), Vector2(4, 1), Vector2i.ONE, options
		)
		answers.append([result.status, snappedf(result.info.get("cost", -1.0), 0.001)])
	check_equal(
		answers,
		[["found", 4.0], ["no_path", 0.0], ["no_path", 0.0], ["found", 6.0]],
		"traversal: a class of the map or rules block (null) or multiply the tagged cells' cost"
	)
	var back := await client.get_map_async("godot_tagged")
	check_equal(
		[back.info.get("tags"), back.reply.get("tag_names"), back.reply.get("classes")],
		[tags, {"water": 1}, {"tank": {"water": null}}],
		"get_map gives the tags, their names and the classes back"
	)
	await client.drop_map_async("godot_tagged")


## A PathServerFlowGroup2D steers 50 units of two sizes (some of them CharacterBody2D) across
## the arena's gap with one
## next_steps request per size at a time, until every unit stands on the target area.
func test_flow_group() -> void:
	var group := PathServerFlowGroup2D.new()
	group.client = client
	group.speed = 20.0 * CELL
	group.spacing = 0.0
	root.add_child(group)
	# Columns 0-3 and 6-9 of rows 1, 3, ... 9: clear of the block at (4, 2)-(5, 3).
	for i in 40:
		# Every eighth a CharacterBody2D (moved by move_and_slide), as in a top-down game.
		var unit: Node2D = Node2D.new()
		if i % 8 == 0:
			var body := CharacterBody2D.new()
			body.motion_mode = CharacterBody2D.MOTION_MODE_FLOATING
			unit = body
		unit.position = center(Vector2i(i % 8 + (2 if i % 8 >= 4 else 0), 1 + i / 8 * 2))
		group.add_child(unit)
	var big_units: Array[Node2D] = []
	for i in 10:
		var unit := Node2D.new()
		unit.position = center(Vector2i(2 + i % 5, 8 + i / 5 * 2))
		root.add_child(unit)
		group.add_unit(unit, Vector2i(2, 2))
		big_units.append(unit)
	var area := PackedVector2Array()
	for y in range(3, 10):
		for x in range(14, 19):
			area.append(center(Vector2i(x, y)))
	group.goals = area
	var most_pending := 0
	var frames := 0
	while frames < 600 and group.get_arrived_count() < 50:
		await physics_frame
		frames += 1
		most_pending = maxi(most_pending, client.get_pending_count())
	var right_side := group.get_children().all(
		func(unit: Node2D) -> bool: return unit.position.x > 13 * CELL
	)
	check(
		group.get_unit_count() == 50 and group.get_arrived_count() == 50 and right_side,
		(
			"flow group: 50 units of two sizes reach the target area through the gap (%d frames)"
			% frames
		),
		[group.get_arrived_count(), frames]
	)
	check(
		most_pending <= 2 and group.replies >= frames / 4,
		(
			"flow group: one next_steps request per size in flight at a time (%d replies)"
			% group.replies
		),
		most_pending
	)
	# Back to the left half with spacing: pushed apart, never into a wall (the map's cells,
	# read with get_map), and the crowd gathers on the goal area.
	group.spacing = 0.9 * CELL
	group.target = center(Vector2i(3, 6))
	var left_area := PackedVector2Array()
	for y in range(3, 10):
		for x in range(1, 7):
			left_area.append(center(Vector2i(x, y)))
	group.goals = left_area
	frames = 0
	var in_wall := 0
	while frames < 900 and group.get_arrived_count() < 50:
		await physics_frame
		frames += 1
		for unit: Node2D in group.get_children() as Array[Node2D]:
			var cell := Vector2i((unit.position / CELL).floor())
			if (cell.x == 10 and (cell.y < 5 or cell.y > 6)) or Rect2i(4, 2, 2, 2).has_point(cell):
				in_wall += 1
	check(
		group.get_arrived_count() == 50 and in_wall == 0,
		(
			"flow group: with spacing, back through the gap, no unit ever in a wall (%d frames)"
			% frames
		),
		[group.get_arrived_count(), in_wall]
	)
	big_units[0].queue_free()
	await physics_frame
	await physics_frame
	check_equal(group.get_unit_count(), 49, "flow group: a freed unit leaves the group")
	group.queue_free()
	for unit in big_units.slice(1):
		unit.queue_free()
	await process_frame
