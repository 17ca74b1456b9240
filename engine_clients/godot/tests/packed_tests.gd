extends "res://suite_part.gd"
## The packed answers and the synchronous calls, against the real server.
##
## The packed forms must answer exactly what the plain forms answer ([code]"packed": false[/code]
## asks for those), in both spaces, on random maps uploaded for the purpose.

## A map of RANDOM_SIZE cells, about one in four blocked, uploaded for each seed.
const RANDOM_MAP := "godot_packed_random"
const RANDOM_SIZE := Vector2i(48, 32)
const PAIRS := 24
const SEEDS := [3, 17]


func run() -> void:
	test_decoding()
	test_golden_vectors()
	test_path_head()
	await test_packed_requests()
	for random_seed: int in SEEDS:
		await test_packed_equals_plain(random_seed)
	await test_sync_calls()
	await test_sync_failures()
	await test_sync_holds_other_replies()
	await test_reply_in_the_next_frame()


func test_decoding() -> void:
	var world := PackedFloat32Array([1.5, 2.5, -3.25, 40.0]).to_byte_array()
	check_equal(
		PathServerPacked.points(world, false),
		PackedVector2Array([Vector2(1.5, 2.5), Vector2(-3.25, 40.0)]),
		"packed: float32 pairs decode as a PackedVector2Array"
	)
	var cells := PackedInt32Array([0, 0, 1, 2, 8388607, 4194304, 511, 300])
	var expected := PackedVector2Array(
		[Vector2(0, 0), Vector2(1, 2), Vector2(8388607, 4194304), Vector2(511, 300)]
	)
	check_equal(
		PathServerPacked.points(cells.to_byte_array(), true),
		expected,
		"packed: int32 pairs decode as whole-number points, up to 2^23 - 1"
	)
	var typed: Array[Vector2i] = [Vector2i(0, 0), Vector2i(1, 2)]
	check_equal(
		PathServerPacked.cells(expected.slice(0, 2)), typed, "packed: points as Array[Vector2i]"
	)
	check_equal(
		PathServerPacked.points(PackedByteArray([1, 2, 3]), false),
		PackedVector2Array(),
		"packed: a bin that is no whole number of pairs decodes as nothing"
	)
	check_equal(
		PathServerPacked.to_bin(expected, true),
		cells.to_byte_array(),
		"packed: cells encode as int32 pairs"
	)
	check_equal(
		PathServerPacked.to_bin(PackedVector2Array([Vector2(1.5, 2.5), Vector2(-3.25, 40)]), false),
		world,
		"packed: world points encode as float32 pairs"
	)
	var reply := {
		"status": PackedByteArray([0, 2, 3]),
		"cost": PackedFloat32Array([2.5, 0.0, 0.0]).to_byte_array(),
		"count": PackedInt32Array([2, 0, 0]).to_byte_array(),
		"points": PackedInt32Array([1, 1, 2, 2]).to_byte_array(),
		"errors": {2: {"code": "out_of_bounds", "message": "m", "at": "goals[2]"}},
	}
	var columns := PathServerPacked.columns(reply, 3, true)
	check(
		(
			not columns.has("problem")
			and columns.offset == PackedInt32Array([0, 2, 2, 2])
			and columns.points == PackedVector2Array([Vector2(1, 1), Vector2(2, 2)])
			and columns.cost == PackedFloat32Array([2.5, 0.0, 0.0])
		),
		"packed: a batch's columns decode, with where each entry's points begin",
		columns
	)
	reply["count"] = PackedInt32Array([3, 0, 0]).to_byte_array()
	check(
		PathServerPacked.columns(reply, 3, true).has("problem"),
		"packed: counts that disagree with the points are a problem, not a crash"
	)
	check(
		PathServerPacked.columns(reply, 4, true).has("problem"),
		"packed: columns shorter than the batch are a problem"
	)


## The golden vectors of the packed forms in docs/protocol.md: each decodes and encodes again
## byte for byte, and each reply, through the client's own completion, gives the points its
## request asked for.
func test_golden_vectors() -> void:
	var names := [
		"packed-path-request",
		"packed-path-reply",
		"packed-world-path-request",
		"packed-world-path-reply",
		"packed-paths-request",
		"packed-paths-reply",
	]
	var missing := names.filter(func(name: String) -> bool: return not golden.has(name))
	check(missing.is_empty(), "golden vectors of the packed forms in docs/protocol.md", missing)
	if not missing.is_empty():
		return
	var decoded := {}
	for name: String in names:
		var value := PathServerMsgPack.decode(golden[name])
		decoded[name] = value[0]
		check_equal(
			PathServerMsgPack.encode(value[0]).hex_encode(),
			golden[name].hex_encode(),
			"golden %s decoded and encoded again byte for byte" % name
		)
	var court := PackedVector2Array(
		[Vector2(0, 0), Vector2(1, 0), Vector2(2, 0), Vector2(3, 1), Vector2(3, 2)]
	)
	var centres := PackedVector2Array()
	for cell in court:
		centres.append(cell + Vector2(0.5, 0.5))
	var grid := completed(
		PathServerClient.Kind.PATH, decoded["packed-path-request"], decoded["packed-path-reply"]
	)
	var world := completed(
		PathServerClient.Kind.PATH,
		decoded["packed-world-path-request"],
		decoded["packed-world-path-reply"]
	)
	check(
		grid.result.ok and grid.result.waypoints == court,
		"golden packed-path-reply: the client's path is the five cells",
		grid.result
	)
	check(
		world.result.ok and world.result.waypoints == centres,
		"golden packed-world-path-reply: the client's path is the five cell centres",
		world.result
	)
	var entries := (
		completed(
			PathServerClient.Kind.PATHS,
			decoded["packed-paths-request"],
			decoded["packed-paths-reply"]
		)
		. batch
	)
	check(
		(
			entries.size() == 3
			and entries[0].status == "found"
			and (
				entries[0].waypoints
				== court.slice(0, 1) + PackedVector2Array([Vector2(0, 1), Vector2(0, 2)])
			)
			and entries[1].code == "out_of_bounds"
			and entries[1].info.get("at") == "goals[1]"
			and (
				entries[2].waypoints
				== PackedVector2Array([Vector2(3, 0), Vector2(3, 1), Vector2(3, 2)])
			)
			and is_equal_approx(entries[2].info.cost, 2.0)
		),
		"golden packed-paths-reply: three entries, the second failed at goals[1]",
		entries
	)


## A request of [param kind] whose body was [param request], completed with [param reply] on
## a client of its own (no signal reaches the tests).
func completed(kind: int, request: Dictionary, reply: Dictionary) -> PathServerConnection.Pending:
	var own := PathServerClient.new()
	var pending := PathServerConnection.Pending.new()
	pending.kind = kind
	pending.body = request.duplicate()
	pending.body["space"] = request.get("space", "grid")
	own._complete(pending, reply)
	own.free()
	return pending


## The client asks for the packed forms by itself: find_path, and find_paths as columns.
func test_packed_requests() -> void:
	var path := client._calls.find_path(Vector2.ZERO, Vector2.ONE, Vector2i.ONE, {})
	var batch := client._calls.find_paths([[Vector2.ZERO, Vector2.ONE]], Vector2i.ONE, {})
	var dictionaries := client._calls.find_paths(
		[{"start": Vector2.ZERO, "goal": Vector2.ONE}], Vector2i.ONE, {}
	)
	var plain := client._calls.find_path(Vector2.ZERO, Vector2.ONE, Vector2i.ONE, {"packed": false})
	check(
		(
			path.body.get("packed") == true
			and batch.body.get("packed") == true
			and batch.body.get("starts") is PackedByteArray
			and not batch.body.has("requests")
			and dictionaries.body.get("packed") == true
			and dictionaries.body.has("requests")
			and plain.body.get("packed") == false
		),
		"find_path and find_paths ask for packed answers; pairs go as starts and goals bins",
		[path.body, batch.body, dictionaries.body]
	)
	for pending: PathServerConnection.Pending in [path, batch, dictionaries, plain]:
		client.cancel(pending.result.id)
	await process_frame


## One random map, PAIRS random problems: packed and plain answers agree exactly, one by one
## and as a batch, in grid and world space.
func test_packed_equals_plain(random_seed: int) -> void:
	var rng := RandomNumberGenerator.new()
	rng.seed = random_seed
	var cells := PackedByteArray()
	cells.resize(RANDOM_SIZE.x * RANDOM_SIZE.y)
	for i in cells.size():
		cells[i] = 0 if rng.randf() < 0.25 else 1
	var put := await client.put_grid_async(
		RANDOM_MAP, RANDOM_SIZE, cells, {"cell_size": 8.0, "origin": Vector2(-40, 24)}
	)
	if not put.ok:
		check(false, "the random map (seed %d) uploads" % random_seed, put)
		return
	var pairs := []
	for i in PAIRS:
		var start := Vector2(
			rng.randi_range(0, RANDOM_SIZE.x - 1), rng.randi_range(0, RANDOM_SIZE.y - 1)
		)
		var goal := Vector2(
			rng.randi_range(0, RANDOM_SIZE.x - 1), rng.randi_range(0, RANDOM_SIZE.y - 1)
		)
		pairs.append([start, goal])
	# One entry off the map: it fails alone, in both forms alike.
	pairs.append([Vector2(1, 1), Vector2(RANDOM_SIZE.x + 5, 1)])
	for space: String in ["grid", "world"]:
		var requests := []
		for pair: Array in pairs:
			var ends := [pair[0], pair[1]]
			if space == "world":
				ends = [pair[0] * 8.0 + Vector2(-36, 28), pair[1] * 8.0 + Vector2(-36, 28)]
			requests.append(ends)
		var options := {"map": RANDOM_MAP, "space": space, "smooth": "none"}
		var plain_options := options.duplicate()
		plain_options["packed"] = false
		var different := []
		var sync_different := []
		for request: Array in requests:
			var packed := await client.find_path_async(
				request[0], request[1], Vector2i.ONE, options
			)
			var plain := await client.find_path_async(
				request[0], request[1], Vector2i.ONE, plain_options
			)
			if not same_result(packed, plain):
				different.append([request, packed, plain])
			client.find_path_sync(request[0], request[1], Vector2i.ONE, options)
			if not same_whole(client.get_last_sync_result(), packed):
				sync_different.append([request, client.get_last_sync_result(), packed])
		check(
			different.is_empty(),
			"seed %d, %s space: %d packed paths equal the plain ones" % [random_seed, space, PAIRS],
			different.slice(0, 2)
		)
		check(
			sync_different.is_empty(),
			(
				(
					"seed %d, %s space: a synchronous call's result (its reply read in part, the rest "
					+ "when asked) is the awaited one's, info and reply too"
				)
				% [random_seed, space]
			),
			sync_different.slice(0, 2)
		)
		var packed_batch := await client.find_paths_async(requests, Vector2i.ONE, options)
		var plain_batch := await client.find_paths_async(requests, Vector2i.ONE, plain_options)
		different = []
		for i in requests.size():
			if i >= packed_batch.size() or i >= plain_batch.size():
				different.append(i)
			elif not same_result(packed_batch[i], plain_batch[i], i):
				different.append([i, packed_batch[i], plain_batch[i]])
		check(
			different.is_empty() and packed_batch.size() == requests.size(),
			(
				"seed %d, %s space: a packed batch equals the plain one, its bad entry too"
				% [random_seed, space]
			),
			different.slice(0, 2)
		)
	await client.drop_map_async(RANDOM_MAP)


## Whether two answers agree; a batch entry's error is at [code]goals[i][/code] in the packed
## batch where the plain one says [code]requests[i].goal[/code] ([param entry] i).
func same_result(packed: PathServerResult, plain: PathServerResult, entry := -1) -> bool:
	var at: Variant = plain.info.get("at")
	if entry >= 0 and at is String:
		at = at.replace("requests[%d].goal" % entry, "goals[%d]" % entry)
		at = at.replace("requests[%d].start" % entry, "starts[%d]" % entry)
	return (
		packed.ok == plain.ok
		and packed.status == plain.status
		and packed.waypoints == plain.waypoints
		and packed.code == plain.code
		and packed.info.get("at") == at
		and is_equal_approx(packed.info.get("cost", 0.0), plain.info.get("cost", 0.0))
	)


## Whether two results of one request are the same in every member but the id.
func same_whole(a: PathServerResult, b: PathServerResult) -> bool:
	var a_reply := a.reply.duplicate()
	var b_reply := b.reply.duplicate()
	a_reply.erase("id")
	b_reply.erase("id")
	return (
		[a.ok, a.status, a.waypoints, a.floors, a.links, a.code, a.message, a.info, a_reply]
		== [b.ok, b.status, b.waypoints, b.floors, b.links, b.code, b.message, b.info, b_reply]
	)


## PathServerReplies.path_head reads a packed path reply's head, and nothing else.
func test_path_head() -> void:
	var cells := PackedInt32Array([3, 4, 5, 5]).to_byte_array()
	var reply := {
		"id": 70000,
		"ok": true,
		"status": "found",
		"path": cells,
		"cost": 2.414,
		"length": 2.414,
		"expanded": 300,
		"start": [3, 4],
		"goal": [5, 5],
		"start_snapped": false,
		"goal_snapped": true,
		"gen": 65537,
	}
	var bytes := PathServerMsgPack.encode(reply)
	check_equal(
		PathServerReplies.path_head(bytes),
		[70000, "found", cells, 65537],
		"path_head: id, status, the path's bin and gen of a packed path reply"
	)
	for gen: int in [0, 5, 200, 300, 70000]:
		check_equal(
			PathServerReplies.path_head(PathServerMsgPack.encode(reply.merged({"gen": gen}, true))),
			[70000, "found", cells, gen],
			"path_head: gen %d, read from the reply's end" % gen
		)
	var reordered := {}
	for key: String in ["id", "ok", "status", "path", "gen", "cost", "length", "expanded"]:
		reordered[key] = reply[key]
	reordered.merge(reply)
	check_equal(
		PathServerReplies.path_head(PathServerMsgPack.encode(reordered)),
		[70000, "found", cells, 65537],
		"path_head: gen elsewhere than last is read where it is"
	)
	var with_goal_index := reply.duplicate()
	with_goal_index["goal_index"] = null
	check_equal(
		PathServerReplies.path_head(PathServerMsgPack.encode(with_goal_index)),
		[70000, "found", cells, 65537],
		"path_head: a reply to many goals reads alike"
	)
	var others := {
		"a failed reply": PathServerReplies.client_error("unknown_map", "no such map", 7),
		"a plain path": reply.merged({"path": [[3, 4], [5, 5]]}, true),
		"points with floors":
		reply.merged({"start": [3, 4, 1], "goal": [5, 5, 0], "links": []}, true),
		"a path with links": reply.merged({"links": []}, true),
		"no path member": reply.merged({"path": null}, true),
	}
	for what: String in others:
		check_equal(
			PathServerReplies.path_head(PathServerMsgPack.encode(others[what])),
			[],
			"path_head: %s is left to the whole read" % what
		)
	for cut in [1, 5, bytes.size() - 40, bytes.size() - 1]:
		check_equal(
			PathServerReplies.path_head(bytes.slice(0, cut)),
			[],
			"path_head: a reply cut at byte %d is left to the whole read" % cut
		)
	check_equal(
		PathServerReplies.path_head(bytes + PackedByteArray([0])),
		[],
		"path_head: a byte after the reply is left to the whole read"
	)


func test_sync_calls() -> void:
	var start: Vector2 = center(Vector2i(1, 1))
	var goal: Vector2 = center(Vector2i(17, 9))
	var awaited := await client.find_path_async(start, goal)
	var frame := Engine.get_process_frames()
	var path := client.find_path_sync(start, goal)
	var result := client.get_last_sync_result()
	check(
		(
			Engine.get_process_frames() == frame
			and path == awaited.waypoints
			and not path.is_empty()
			and result.ok
			and result.status == "found"
		),
		"find_path_sync returns the path on the spot, the same as find_path_async",
		[path, awaited.waypoints, result]
	)
	var cells := client.find_id_path_sync(Vector2i(1, 1), Vector2i(17, 9), Vector2i(2, 2))
	var grid := await client.find_path_async(
		Vector2(1, 1), Vector2(17, 9), Vector2i(2, 2), {"space": "grid"}
	)
	check(
		(
			cells.get_typed_builtin() == TYPE_VECTOR2I
			and cells == grid.get_cells()
			and cells[0] == Vector2i(1, 1)
			and cells[-1] == Vector2i(17, 9)
		),
		"find_id_path_sync returns cells as an Array[Vector2i], as get_id_path does",
		[cells, grid.waypoints]
	)
	var batch := client.find_paths_sync([[start, goal], [goal, start]], Vector2i.ONE)
	check(
		(
			batch.size() == 2
			and batch[0].waypoints == awaited.waypoints
			and batch[1].waypoints[-1] == start
		),
		"find_paths_sync returns the batch's results on the spot",
		batch
	)
	var blocked := client.find_path_sync(start, goal, Vector2i(3, 3))
	result = client.get_last_sync_result()
	check(
		blocked.is_empty() and result.ok and result.status == "no_path",
		"find_path_sync: no path is an empty path, status no_path",
		result
	)
	var unknown := client.find_path_sync(start, goal, Vector2i.ONE, {"map": "no_such_map"})
	result = client.get_last_sync_result()
	check(
		unknown.is_empty() and not result.ok and result.code == "unknown_map",
		"find_path_sync: an error is an empty path, the error in get_last_sync_result()",
		result
	)


func test_sync_failures() -> void:
	var lonely := lonely_client()
	var began := Time.get_ticks_msec()
	var path := lonely.find_path_sync(Vector2.ZERO, Vector2.ONE, Vector2i.ONE, {"timeout_ms": 300})
	var waited := Time.get_ticks_msec() - began
	var result := lonely.get_last_sync_result()
	check(
		(
			path.is_empty()
			and result.code == "timeout"
			and result.retryable
			and waited >= 280
			and waited < 1500
		),
		"find_path_sync with no server returns after its timeout (%d ms), code timeout" % waited,
		result
	)
	check_equal(
		lonely.get_pending_count(), 0, "a timed-out synchronous call leaves nothing pending"
	)
	lonely.queue_free()


## Replies to other requests that come during a synchronous call are handed out after it, in
## the same frame, never inside it.
func test_sync_holds_other_replies() -> void:
	var start: Vector2 = center(Vector2i(1, 1))
	var answered := []
	var on_found := func(id: int, _waypoints: PackedVector2Array, _info: Dictionary) -> void:
		answered.append([id, Engine.get_process_frames()])
	client.path_found.connect(on_found)
	var frame := Engine.get_process_frames()
	var other := client.find_path(start, center(Vector2i(3, 9)))
	# Long enough for the other reply to arrive first.
	OS.delay_msec(30)
	var path := client.find_path_sync(start, center(Vector2i(17, 9)))
	var during := answered.duplicate()
	await wait_until(func() -> bool: return answered.size() >= 2, 5.0)
	client.path_found.disconnect(on_found)
	var sync_id := client.get_last_sync_result().id
	check(
		(
			not path.is_empty()
			and during.size() == 1
			and during[0][0] == sync_id
			and answered.size() == 2
			and answered[1] == [other, frame]
		),
		"a reply that came during find_path_sync is handed out after it, in the same frame",
		[during, answered, other, frame]
	)


## An awaited path resumes on the frame after the request, or the same one: the request is
## sent at once and the reply read by the next poll (tried three times, on a busy machine).
func test_reply_in_the_next_frame() -> void:
	var spans := []
	for i in 3:
		var frame := Engine.get_process_frames()
		var result := await client.find_path_async(center(Vector2i(1, 1)), center(Vector2i(17, 9)))
		spans.append(Engine.get_process_frames() - frame if result.ok else 99)
	check(spans.min() <= 1, "an awaited path resumes within one frame", spans)
	# Out of the poll that resumed the last await (its time holds what it resumes).
	await process_frame
	var before := client.get_main_thread_usec()
	var frame := Engine.get_process_frames()
	client.find_path_sync(center(Vector2i(1, 1)), center(Vector2i(17, 9)))
	var spent := client.get_main_thread_usec() - before
	check(
		spent > 0 and Engine.get_process_frames() == frame,
		"get_main_thread_usec() counts a synchronous call's wait (%d us)" % spent
	)
