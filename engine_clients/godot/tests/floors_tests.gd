extends "res://suite_part.gd"
## Floors and links (issue #35) against the real server: two TileMapLayers uploaded as the
## floors of one map with links, paths across them (their floors and the links they take),
## update replacing the links, a batch and a range across floors, the agent's link signal,
## the sync node with PathServerLink2D nodes, the debug overlay's links, and bad input as
## results the caller can read. The encodings are checked without a server first.

const MapTests := preload("res://map_tests.gd")
const FLOORS_MAP := "godot_floors"
const SYNCED_MAP := "godot_floors_sync"
## Floor 0: a ring of floor around a block. Floor 1: two rooms split by a wall, reached by the
## stairs (left room) and the ladder (right room); the drop leads down from the right room.
const GROUND := [
	"#######",
	"#.....#",
	"#.###.#",
	"#.....#",
	"#######",
]
const UPSTAIRS := [
	"#######",
	"#..#..#",
	"#..#..#",
	"#..#..#",
	"#######",
]
## Links 0, 1 and 2 of the map: stairs (two-way), a drop (one-way, down) and a ladder.
const STAIRS := {"from": Vector3i(1, 1, 0), "to": Vector3i(1, 1, 1), "cost": 2.0, "tag": "stairs"}
const DROP := {
	"from": Vector3i(5, 3, 1), "to": Vector3i(5, 3, 0), "cost": 1.0, "two_way": false, "tag": "drop"
}
const LADDER := {"from": Vector3i(5, 1, 0), "to": Vector3i(5, 1, 1), "cost": 3.0, "tag": "ladder"}

var _tiles: MapTests


func _init(test_suite: SceneTree) -> void:
	super(test_suite)
	_tiles = MapTests.new(test_suite)


func run() -> void:
	test_encodings()
	var layers := await test_floors_upload()
	await test_path_across_links()
	await test_update_replaces_links()
	await test_batch_and_range_across_floors()
	await test_field_and_steps_across_floors()
	await test_avoid_and_check_block_on_floors()
	await test_agent_takes_links()
	await test_debug_draw_links()
	await test_bad_input()
	for layer in layers:
		layer.queue_free()
	await client.drop_map_async(FLOORS_MAP)
	await test_sync_with_link_nodes()


## A point on a floor at the centre of [param cell], in world coordinates.
func at(cell: Vector2i, on_floor: int) -> Vector3:
	var middle := center(cell)
	return Vector3(middle.x, middle.y, on_floor)


## The cells of a path on the test map, [code]Vector3i(x, y, floor)[/code].
func cells_of(result: PathServerResult) -> Array:
	var out := []
	for i in result.waypoints.size():
		var cell := Vector2i((result.waypoints[i] / CELL).floor())
		out.append(Vector3i(cell.x, cell.y, result.get_floor(i)))
	return out


## The links a path takes, by index: [code]{k: [from cell, to cell]}[/code].
func links_taken(result: PathServerResult) -> Dictionary:
	var cells := cells_of(result)
	var taken := {}
	for pair: Array in result.links:
		taken[int(pair[1])] = [cells[int(pair[0])], cells[int(pair[0]) + 1]]
	return taken


## The bytes of points on floors, packed answers of triples and the link tags an upload
## names: without a server.
func test_encodings() -> void:
	check_equal(
		PathServerMsgPack.encode([Vector3i(1, 2, 1), Vector3(1.5, 2.5, 1.0)]).hex_encode(),
		"929301020193cb3ff8000000000000cb400400000000000001",
		"msgpack: Vector3i and Vector3 go as [x, y, floor], the floor an int"
	)
	var grid_triples := PackedInt32Array([3, 4, 0, 3, 4, 1, 7, 8, 1]).to_byte_array()
	var decoded := PathServerPacked.points_and_floors(grid_triples, true, true)
	check(
		(
			decoded[0] == PackedVector2Array([Vector2(3, 4), Vector2(3, 4), Vector2(7, 8)])
			and decoded[1] == PackedInt32Array([0, 1, 1])
		),
		"a packed path of int32 triples: cells and their floors",
		decoded
	)
	var world_triples := PackedFloat32Array([1.5, 2.5, 0.0, 8.5, 9.5, 2.0]).to_byte_array()
	decoded = PathServerPacked.points_and_floors(world_triples, false, true)
	check(
		(
			decoded[0] == PackedVector2Array([Vector2(1.5, 2.5), Vector2(8.5, 9.5)])
			and decoded[1] == PackedInt32Array([0, 2])
		),
		"a packed path of float32 triples: world points and their floors",
		decoded
	)
	var reply := {
		"status": PackedByteArray([0, 2]),
		"cost": PackedFloat32Array([2.0, 0.0]).to_byte_array(),
		"count": PackedInt32Array([2, 0]).to_byte_array(),
		"points": PackedInt32Array([1, 1, 0, 1, 1, 1]).to_byte_array(),
	}
	var columns := PathServerPacked.columns(reply, 2, true)
	check(
		(
			columns.get("floors") == PackedInt32Array([0, 1])
			and columns.get("points") == PackedVector2Array([Vector2(1, 1), Vector2(1, 1)])
		),
		"a packed batch of triples: its counts say the points are triples",
		columns
	)
	var avoid: Dictionary = PathServerPacked.wire_avoid(
		{"cells": [Vector3i(1, 2, 0), Vector2i(3, 4)]}
	)
	var upstairs: Dictionary = PathServerPacked.wire_avoid(
		{"cells": [Vector3i(1, 2, 1), Vector2i(3, 4)]}
	)
	check(
		(
			avoid.cells == PackedInt32Array([1, 2, 3, 4]).to_byte_array()
			and upstairs.cells == [Vector3i(1, 2, 1), Vector2i(3, 4)]
			and PathServerMsgPack.encode(upstairs).hex_encode().ends_with("9293010201920304")
		),
		"avoid's cells: one bin of pairs on floor 0, else [x, y, floor] arrays",
		[avoid, upstairs]
	)
	var batch := PathServerPacked.batch_columns(
		[[Vector3(0.5, 0.5, 0), Vector2(2.5, 0.5)]], {"packed": true, "space": "world"}
	)
	var upstairs_batch := PathServerPacked.batch_columns(
		[[Vector3(0.5, 0.5, 1), Vector2(2.5, 0.5)]], {"packed": true, "space": "world"}
	)
	check(
		(
			batch.get("starts") == PackedFloat32Array([0.5, 0.5]).to_byte_array()
			and upstairs_batch.is_empty()
		),
		"a batch on floor 0 goes as bins of pairs, one with a point upstairs as requests",
		[batch, upstairs_batch]
	)
	var upload := {"links": [STAIRS, LADDER, {"from": [0, 0], "to": [1, 0], "cost": 1}]}
	upload["tag_names"] = {"stairs": 1}
	upload["tags"] = PackedByteArray([0, 1])
	PathServerRequests.name_link_tags(upload, 2)
	var bare := {"links": [DROP]}
	PathServerRequests.name_link_tags(bare, 6)
	check(
		(
			upload.tag_names == {"stairs": 1, "ladder": 2}
			and upload.tags == PackedByteArray([0, 1])
			and bare.tag_names == {"drop": 1}
			and bare.tags == PackedByteArray([0, 0, 0, 0, 0, 0])
		),
		"an upload names its links' tags (next free value; untagged cells when it has no tags)",
		[upload, bare]
	)


## Two TileMapLayers uploaded as the floors of one map, with links: get_map gives both floors'
## cells and the links back; the client knows the map's floors and links.
func test_floors_upload() -> Array[TileMapLayer]:
	var ground := _tiles.make_layer(GROUND, Vector2i.ZERO, Vector2.ZERO)
	var upstairs := _tiles.make_layer(UPSTAIRS, Vector2i.ZERO, Vector2.ZERO)
	var layers: Array[TileMapLayer] = [ground, upstairs]
	var upload := await client.put_tilemap_async(
		FLOORS_MAP, [ground, upstairs], {"links": [STAIRS, DROP, LADDER]}
	)
	check(
		upload.ok and upload.info.get("width") == 7 and upload.info.get("height") == 5,
		"put_tilemap of two layers: one map of 7 x 5 cells a floor",
		upload
	)
	var back := await client.get_map_async(FLOORS_MAP)
	var expected := _tiles.expected_cells(GROUND)
	expected.append_array(_tiles.expected_cells(UPSTAIRS))
	check(
		back.ok and back.info.get("floors") == 2 and back.info.get("cells") == expected,
		"get_map: two floors, each layer's cells, floor 0 first",
		back
	)
	var links: Array = back.info.get("links", [])
	check(
		(
			links.size() == 3
			and links[0].get("from") == [1, 1, 0]
			and links[0].get("to") == [1, 1, 1]
			and links[1].get("two_way") == false
			and links[2].get("tag") == "ladder"
		),
		"get_map: the three links as uploaded, their ends on their floors",
		links
	)
	check(
		client.get_floors(FLOORS_MAP) == 2 and client.get_links(FLOORS_MAP).size() == 3,
		"the client knows the map's floors and links",
		[client.get_floors(FLOORS_MAP), client.get_links(FLOORS_MAP)]
	)
	return layers


## A path from floor 0 to floor 1 takes the stairs: its floors, the link in its links, the
## link's two ends consecutive waypoints (smoothing never crosses a link), in world and grid
## space, packed or not; a path between the two upstairs rooms goes down and up again.
func test_path_across_links() -> void:
	var options := {"map": FLOORS_MAP, "smooth": "none"}
	var up := await client.find_path_async(
		at(Vector2i(3, 3), 0), at(Vector2i(2, 2), 1), Vector2i.ONE, options
	)
	var cells := cells_of(up)
	var taken := links_taken(up)
	check(
		(
			up.status == "found"
			and up.floors.size() == up.waypoints.size()
			and cells.front() == Vector3i(3, 3, 0)
			and cells.back() == Vector3i(2, 2, 1)
			and taken.keys() == [0]
			and taken[0] == [Vector3i(1, 1, 0), Vector3i(1, 1, 1)]
			and up.info.get("start_floor") == 0
			and up.info.get("goal_floor") == 1
		),
		"a path up takes the stairs, link 0: (1, 1) on floor 0, then (1, 1) on floor 1",
		[up, cells, up.links]
	)
	var plain_options := options.duplicate()
	plain_options["packed"] = false
	var plain := await client.find_path_async(
		at(Vector2i(3, 3), 0), at(Vector2i(2, 2), 1), Vector2i.ONE, plain_options
	)
	check(
		(
			plain.status == "found"
			and plain.waypoints == up.waypoints
			and plain.floors == up.floors
			and plain.links == up.links
		),
		"the same path unpacked: the same waypoints, floors and links",
		[plain, plain.floors, plain.links]
	)
	var grid := await client.find_path_async(
		Vector3i(3, 3, 0),
		Vector3i(2, 2, 1),
		Vector2i.ONE,
		{"map": FLOORS_MAP, "smooth": "none", "space": "grid"}
	)
	check(
		(
			grid.status == "found"
			and grid.get_cells()[0] == Vector2i(3, 3)
			and grid.floors == up.floors
		),
		"the same path in grid space, from Vector3i cells",
		[grid, grid.floors]
	)
	var across := await client.find_path_async(
		at(Vector2i(2, 2), 1), at(Vector2i(4, 2), 1), Vector2i.ONE, {"map": FLOORS_MAP}
	)
	taken = links_taken(across)
	check(
		(
			across.status == "found"
			and taken.has(0)
			and taken.has(2)
			and not taken.has(1)
			and across.get_link_at(across.links[0][0]) == across.links[0][1]
		),
		(
			"between the upstairs rooms, smoothed: down the stairs and up the ladder, each "
			+ "link's ends waypoints"
		),
		[across, cells_of(across), across.links]
	)


## update with links replaces the map's links: without the ladder the right room upstairs is
## reached by nothing, but it leads down by the drop; the three again, the ladder again.
func test_update_replaces_links() -> void:
	var options := {"map": FLOORS_MAP, "smooth": "none"}
	var edit := await client.update_map_async(FLOORS_MAP, {"links": [STAIRS, DROP]})
	check(
		edit.ok and client.get_links(FLOORS_MAP).size() == 2,
		"update with links: a new generation, the client knows the two links",
		edit
	)
	var up := await client.find_path_async(
		at(Vector2i(3, 3), 0), at(Vector2i(4, 2), 1), Vector2i.ONE, options
	)
	var down := await client.find_path_async(
		at(Vector2i(4, 2), 1), at(Vector2i(3, 3), 0), Vector2i.ONE, options
	)
	check(
		up.ok and up.status == "no_path" and up.waypoints.is_empty(),
		"without the ladder: no path up to the right room (the drop is one-way)",
		up
	)
	check(
		down.status == "found" and links_taken(down).keys() == [1],
		"without the ladder: down from the right room by the drop, link 1",
		[down, down.links]
	)
	edit = await client.update_map_async(FLOORS_MAP, {"links": [STAIRS, DROP, LADDER]})
	up = await client.find_path_async(
		at(Vector2i(3, 3), 0), at(Vector2i(4, 2), 1), Vector2i.ONE, options
	)
	check(
		edit.ok and up.status == "found" and links_taken(up).keys() == [2],
		"the ladder back: up to the right room by link 2",
		[edit, up, up.links]
	)


## A packed batch across floors (bins of triples both ways) and a range across floors.
func test_batch_and_range_across_floors() -> void:
	var results := await (
		client
		. find_paths_async(
			[
				[at(Vector2i(3, 3), 0), at(Vector2i(2, 2), 1)],
				[at(Vector2i(2, 2), 1), at(Vector2i(1, 3), 0)],
				[center(Vector2i(1, 3)), center(Vector2i(5, 3))],
			],
			Vector2i.ONE,
			{"map": FLOORS_MAP, "smooth": "none"}
		)
	)
	var single := await client.find_path_async(
		at(Vector2i(3, 3), 0),
		at(Vector2i(2, 2), 1),
		Vector2i.ONE,
		{"map": FLOORS_MAP, "smooth": "none"}
	)
	check(
		(
			results.size() == 3
			and results[0].waypoints == single.waypoints
			and results[0].floors == single.floors
			and results[1].floors[0] == 1
			and results[1].floors[-1] == 0
			and results[2].floors.count(0) == results[2].floors.size()
		),
		"a packed batch across floors: each entry's waypoints and floors as one by one",
		results
	)
	var area := await client.reachable_async(
		at(Vector2i(1, 2), 0), 3.5, Vector2i.ONE, {"map": FLOORS_MAP}
	)
	var upstairs := []
	if area.ok:
		for i in area.info.cells.size():
			if area.info.floors[i] == 1:
				upstairs.append(area.info.cells[i])
	check(
		(
			area.ok
			and area.info.floors.size() == area.info.cells.size()
			and upstairs.has(Vector2i(1, 1))
			and not upstairs.has(Vector2i(2, 3))
		),
		"a range across floors: the stairs' top (1 + 2) in it, farther upstairs cells not",
		[area, upstairs]
	)


## A distance field has one window a floor; next_steps steers a unit upstairs (sent as an
## [x, y, floor] array, its step coming back so) down the stairs to a goal on the ground.
func test_field_and_steps_across_floors() -> void:
	var field := await client.distance_field_async(
		PackedVector2Array([center(Vector2i(1, 3))]), Vector2i.ONE, {"map": FLOORS_MAP}
	)
	# A reply the client could not read leaves its raw bin here: typed only once checked.
	var cost: Variant = field.info.get("cost")
	check(
		(
			field.ok
			and cost is PackedFloat32Array
			and field.info.get("floors") == 2
			and cost.size() == 7 * 5 * 2
			and is_equal_approx(cost[35 + 1 * 7 + 1], 2.0 + 2.0)
			and is_inf(cost[35 + 0])
		),
		"a field on two floors: a window a floor, the stairs' top at 2 steps + 2",
		field
	)
	var steps := await client.next_steps_async(
		PackedVector2Array([center(Vector2i(1, 3))]),
		PackedVector3Array([at(Vector2i(2, 2), 1), at(Vector2i(3, 1), 0)]),
		Vector2i.ONE,
		{"map": FLOORS_MAP}
	)
	var step_points: Variant = steps.info.get("steps")
	check(
		(
			steps.ok
			and step_points is PackedVector2Array
			and step_points.size() == 2
			and step_points[0] == center(Vector2i(1, 1))
			and steps.info.get("floors") == PackedInt32Array([1, 0])
			and step_points[1] == center(Vector2i(2, 1))
		),
		"next_steps across floors: upstairs, toward the stairs' top; downstairs, along the ground",
		steps
	)


## avoid on a link's end blocks the link for that request (cells upstairs go as
## [x, y, floor] arrays, floor 0's as the bin of pairs); check_block: placing a block on the
## stairs' top cuts the ground from the room upstairs.
func test_avoid_and_check_block_on_floors() -> void:
	var options := {"map": FLOORS_MAP, "smooth": "none"}
	var results := []
	for avoided: Variant in [Vector3i(1, 1, 1), Vector3i(1, 1, 0), Vector3i(2, 1, 1)]:
		var with_avoid := options.duplicate()
		with_avoid["avoid"] = {"cells": [avoided]}
		var found := await client.find_path_async(
			at(Vector2i(3, 3), 0), at(Vector2i(2, 2), 1), Vector2i.ONE, with_avoid
		)
		results.append(found.status if found.ok else found.code)
	check_equal(
		results,
		["no_path", "no_path", "found"],
		"avoid on the stairs' top or foot blocks them; a cell beside the top does not"
	)
	# check_block's cells are in the request's space (world), avoid's are grid cells.
	var cut := await client.check_block_async(
		[at(Vector2i(1, 1), 1)],
		[],
		[at(Vector2i(3, 3), 0), at(Vector2i(2, 2), 1), at(Vector2i(1, 3), 0)],
		Vector2i.ONE,
		{"map": FLOORS_MAP}
	)
	check(
		cut.ok and cut.info.get("disconnected") == [[0, 1], [1, 2]],
		"check_block on the stairs' top: the room upstairs cut from the ground's two points",
		[cut, cut.info.get("disconnected")]
	)


## The agent follows a path up the stairs: link_reached with the stairs' index and tag (which
## it asks the server for, as on a map file's), its floor follows the path, it reaches the
## target on floor 1.
func test_agent_takes_links() -> void:
	# The client forgets the links it uploaded, as if the map came from a file.
	client._replies.note_links(FLOORS_MAP, [])
	var body := Node2D.new()
	body.position = center(Vector2i(3, 3))
	var agent := PathServerAgent2D.new()
	agent.map_name = FLOORS_MAP
	agent.speed = 400.0
	agent.path_options = {"smooth": "none"}
	body.add_child(agent)
	root.add_child(body)
	var events := []
	agent.link_reached.connect(
		func(index: int, tag: String, from: Vector2, to: Vector2) -> void:
			events.append(["link", index, tag, from, to, agent.current_floor])
	)
	agent.floor_changed.connect(func(new_floor: int) -> void: events.append(["floor", new_floor]))
	agent.target_reached.connect(func() -> void: events.append(["reached"]))
	agent.target_floor = 1
	agent.target_position = center(Vector2i(2, 2))
	var arrived := await wait_until(func() -> bool: return agent.is_target_reached(), 10.0)
	check(
		(
			arrived
			and agent.current_floor == 1
			and (
				events
				== [
					["link", 0, "stairs", center(Vector2i(1, 1)), center(Vector2i(1, 1)), 0],
					["floor", 1],
					["reached"],
				]
			)
		),
		(
			'the agent takes the stairs: link_reached(0, "stairs") on floor 0 (its tag fetched), '
			+ "then floor 1, then the target"
		),
		events
	)
	body.queue_free()


## PathServerDebugDraw2D fetches the map's links and floors with its cells and draws the
## floor asked for.
func test_debug_draw_links() -> void:
	var overlay := PathServerDebugDraw2D.new()
	overlay.map_name = FLOORS_MAP
	overlay.client = client
	overlay.floor_shown = 1
	root.add_child(overlay)
	var fetched := await wait_until(func() -> bool: return overlay.gen >= 0, 5.0)
	check(
		(
			fetched
			and overlay.links.size() == 3
			and overlay.floors == 2
			and overlay.cells.size() == 70
			and overlay._texture != null
			and overlay._texture.get_size() == Vector2(7, 5)
		),
		"the debug overlay has the map's three links and draws floor 1's cells (its wall)",
		[overlay.links, overlay.floors]
	)
	await process_frame
	overlay.queue_free()


## Bad input gives results the caller can read: a negative link cost, a link off the map, a
## point on a floor the map does not have, layers that do not lie on one another.
func test_bad_input() -> void:
	var ground := _tiles.make_layer(GROUND, Vector2i.ZERO, Vector2.ZERO)
	var shifted := _tiles.make_layer(UPSTAIRS, Vector2i.ZERO, Vector2(8, 0))
	var negative := STAIRS.duplicate()
	negative["cost"] = -1.0
	var refused := await client.put_tilemap_async(
		"godot_floors_bad", [ground, ground], {"links": [negative]}
	)
	check(
		(
			not refused.ok
			and refused.code == "invalid_request"
			and refused.info.get("at") == "links[0].cost"
		),
		"a link of negative cost: invalid_request at links[0].cost",
		refused
	)
	var off := STAIRS.duplicate()
	off["to"] = Vector3i(9, 1, 1)
	refused = await client.put_tilemap_async("godot_floors_bad", [ground, ground], {"links": [off]})
	check(
		(
			not refused.ok
			and refused.code == "out_of_bounds"
			and str(refused.info.get("at")).begins_with("links[0].to")
		),
		"a link off the map: out_of_bounds at links[0].to",
		refused
	)
	var missing := await client.find_path_async(
		at(Vector2i(1, 1), 0), at(Vector2i(1, 1), 5), Vector2i.ONE, {"map": FLOORS_MAP}
	)
	check(
		(
			not missing.ok
			and missing.code == "out_of_bounds"
			and str(missing.info.get("at")).begins_with("goal")
		),
		"a goal on a floor the map does not have: out_of_bounds at the goal",
		missing
	)
	refused = await client.put_tilemap_async("godot_floors_bad", [ground, shifted])
	check(
		(
			not refused.ok
			and refused.code == "invalid_request"
			and refused.info.get("at") == "layer"
			and refused.message.contains("same transform")
		),
		"layers that do not lie on one another: refused by the client, at layer",
		refused
	)
	ground.queue_free()
	shifted.queue_free()


## PathServerTileMapSync with two floor layers and PathServerLink2D nodes: the links go with
## the upload, in tree order; disabling one (a closed door) sends the whole list again and
## paths change; a moved link sends its new cell; an edit upstairs goes as [x, y, 1].
func test_sync_with_link_nodes() -> void:
	var ground := _tiles.make_layer(GROUND, Vector2i.ZERO, Vector2.ZERO)
	var upstairs := _tiles.make_layer(UPSTAIRS, Vector2i.ZERO, Vector2.ZERO)
	var nodes: Array[PathServerLink2D] = []
	for wire: Dictionary in [STAIRS, DROP, LADDER]:
		var link := PathServerLink2D.new()
		link.map_name = SYNCED_MAP
		link.position = center(Vector2i(wire.from.x, wire.from.y))
		link.end_position = center(Vector2i(wire.to.x, wire.to.y)) - link.position
		link.start_floor = wire.from.z
		link.end_floor = wire.to.z
		link.cost = wire.cost
		link.bidirectional = wire.get("two_way", true)
		link.tag = wire.tag
		root.add_child(link)
		nodes.append(link)
	var sync := PathServerTileMapSync.new()
	sync.map_name = SYNCED_MAP
	sync.client = client
	sync.floor_layers = [ground, upstairs]
	var synced := []
	sync.links_synced.connect(func(gen: int, count: int) -> void: synced.append([gen, count]))
	ground.add_child(sync)
	var ready := await wait_until(func() -> bool: return sync.is_synced(), 10.0)
	var back := await client.get_map_async(SYNCED_MAP)
	check(
		(
			ready
			and back.info.get("floors") == 2
			and back.info.get("links", []).size() == 3
			and back.info.links[0].from == [1, 1, 0]
			and back.info.links[2].to == [5, 1, 1]
			and back.info.get("tag_names", {}).has("ladder")
			and sync.links.size() == 3
			and sync.links[0] == nodes[0]
			and sync.links[2] == nodes[2]
		),
		"the sync node uploads both floors and the three link nodes, in tree order",
		[back, synced]
	)
	var before := synced.size()
	nodes[2].enabled = false
	var sent := await wait_until(
		func() -> bool: return synced.size() > before and sync.is_synced(), 5.0
	)
	var up := await client.find_path_async(
		at(Vector2i(3, 3), 0), at(Vector2i(4, 2), 1), Vector2i.ONE, {"map": SYNCED_MAP}
	)
	check(
		(
			sent
			and synced[-1][1] == 2
			and client.get_links(SYNCED_MAP).size() == 2
			and up.status == "no_path"
		),
		"a link node disabled (a door closed): the list of two sent, no path up the ladder",
		[synced, up]
	)
	before = synced.size()
	nodes[2].enabled = true
	nodes[0].position = center(Vector2i(2, 1))
	sent = await wait_until(func() -> bool: return synced.size() > before and sync.is_synced(), 5.0)
	back = await client.get_map_async(SYNCED_MAP)
	check(
		sent and back.info.links.size() == 3 and back.info.links[0].from == [2, 1, 0],
		"a link enabled and one moved: the list sent again, the stairs from (2, 1)",
		back.info.get("links")
	)
	var edits := []
	sync.synced.connect(func(gen: int, cells: int) -> void: edits.append([gen, cells]))
	sync.set_cell(Vector2i(1, 2), 0, MapTests.TILES["#"], 0, 1)
	var edited := await wait_until(func() -> bool: return not edits.is_empty(), 5.0)
	back = await client.get_map_async(SYNCED_MAP)
	check(
		edited and back.info.cells[35 + 2 * 7 + 1] == 0 and back.info.cells[2 * 7 + 1] == 1,
		"a wall set upstairs through the sync node: cell (1, 2) of floor 1 blocked, floor 0's not",
		[edits, back.info.get("cells")]
	)
	sync.queue_free()
	for link in nodes:
		link.queue_free()
	ground.queue_free()
	upstairs.queue_free()
	await process_frame
	await client.drop_map_async(SYNCED_MAP)
