extends "res://suite_part.gd"
## Requests against the real server: the connection, paths and batches, errors,
## cancel and timeouts, and PathServerAgent2D following its paths.

# -- the connection and path requests ---------------------------------------------------------


## wait_connected() returns at once when connected (an await of the connected signal would
## hang there), waits for a connection that is coming, and gives up on one that is not.
func test_wait_connected() -> void:
	var frame := Engine.get_process_frames()
	var at_once := await client.wait_connected()
	check(
		at_once and Engine.get_process_frames() == frame,
		"wait_connected() returns true at once when already connected",
		[at_once, Engine.get_process_frames() - frame]
	)
	var fresh := PathServerClient.new()
	fresh.endpoint = endpoint
	var heard := []
	fresh.connected.connect(func() -> void: heard.append("connected"))
	root.add_child(fresh)
	var was_connected := fresh.is_connected_to_server()
	var came := await fresh.wait_connected()
	check(
		not was_connected and came and heard == ["connected"] and fresh.is_connected_to_server(),
		"wait_connected() waits for a connection being made, then returns true",
		[was_connected, came, heard]
	)
	fresh.queue_free()
	var lonely := lonely_client()
	var began := Time.get_ticks_msec()
	var reached := await lonely.wait_connected(300)
	var waited := Time.get_ticks_msec() - began
	check(
		not reached and waited >= 280 and waited < 2000,
		"wait_connected(300) returns false when nothing listens (%d ms)" % waited,
		reached
	)
	lonely.queue_free()


## The first request on a new connection used to wait ~40 ms for Nagle's algorithm (the
## server's delayed ACK): the dealer sets TCP_NODELAY. Three fresh connections; the median
## must be well under that.
func test_first_path_latency() -> void:
	var figures: Array[float] = []
	for i in 3:
		var fresh := PathServerClient.new()
		fresh.endpoint = endpoint
		fresh.map_name = MAP
		root.add_child(fresh)
		if not await fresh.wait_connected():
			check(
				false,
				"a fresh client connects for the latency test",
				fresh._connection.dealer.last_error
			)
			fresh.queue_free()
			return
		var began := Time.get_ticks_usec()
		var result := await fresh.find_path_async(center(Vector2i(1, 1)), center(Vector2i(17, 9)))
		var elapsed_ms := (Time.get_ticks_usec() - began) / 1000.0
		print("first path after connect: %.1f ms" % elapsed_ms)
		figures.append(elapsed_ms if result.ok else INF)
		fresh.queue_free()
	figures.sort()
	check(
		figures[1] < 20.0,
		"the first path after connecting takes under 20 ms (median %.1f ms)" % figures[1],
		figures
	)


func test_ping_and_maps() -> void:
	var connected := await wait_until(client.is_connected_to_server, 10.0)
	check(connected, "connects to %s" % endpoint, client._connection.dealer.last_error)
	var ping := await client.request_async("ping")
	check(ping.ok, "ping", ping.reply)
	var maps := await client.request_async("maps")
	var arena := {}
	for entry: Dictionary in maps.reply.get("maps", []):
		if entry.get("name") == MAP:
			arena = entry
	check(
		arena.get("width") == 20 and arena.get("height") == 12 and arena.get("cell_size") == CELL,
		"maps lists %s with its size and cell size" % MAP,
		arena
	)


func test_pipelined_requests() -> void:
	var goals := {}
	var answers := {}
	var on_found := func(id: int, waypoints: PackedVector2Array, info: Dictionary) -> void:
		answers[id] = [waypoints, info]
	client.path_found.connect(on_found)
	var start := center(Vector2i(1, 1))
	for i in 24:
		var goal := center(Vector2i(11 + i % 9, i % 12))
		goals[client.find_path(start, goal)] = goal
	check_equal(client.get_pending_count(), 24, "24 requests in flight at once")
	await wait_until(func() -> bool: return answers.size() == goals.size(), 10.0)
	client.path_found.disconnect(on_found)
	var wrong := []
	for id: int in goals:
		var answer: Array = answers.get(id, [PackedVector2Array(), {}])
		var waypoints: PackedVector2Array = answer[0]
		if waypoints.is_empty() or waypoints[0] != start or waypoints[-1] != goals[id]:
			wrong.append([id, goals[id], waypoints])
	check(answers.size() == 24 and wrong.is_empty(), "24 pipelined replies matched by id", wrong)
	var info: Dictionary = answers.values()[0][1] if answers.size() > 0 else {}
	check(
		info.get("status") == "found" and info.get("gen") is int and info.get("cost") is float,
		"path info carries status, cost and gen",
		info
	)
	var grid := await client.find_path_async(
		Vector2(1, 1), Vector2(17, 9), Vector2i.ONE, {"space": "grid"}
	)
	check(
		grid.ok and grid.waypoints[0] == Vector2(1, 1) and grid.waypoints[-1] == Vector2(17, 9),
		"space grid gives cells",
		grid.waypoints
	)


func test_batch() -> void:
	var start := center(Vector2i(1, 1))
	var requests := [
		[start, center(Vector2i(8, 1))],
		[start, center(Vector2i(17, 9))],
		{"start": start, "goal": Vector2(999, 40)},
		[center(Vector2i(18, 10)), start],
	]
	var results := await client.find_paths_async(requests, Vector2i(2, 2))
	check_equal(results.size(), 4, "batch gives one result per request")
	if results.size() != 4:
		return
	check(
		results[0].ok and results[0].waypoints[-1] == center(Vector2i(8, 1)),
		"batch result 0 in order",
		results[0]
	)
	check(
		results[1].ok and results[1].waypoints[-1] == center(Vector2i(17, 9)),
		"batch result 1 in order",
		results[1]
	)
	check_equal(results[2].code, "out_of_bounds", "a bad batch entry fails only itself")
	check(
		results[3].ok and results[3].waypoints[-1] == start, "batch result 3 in order", results[3]
	)


func test_error_codes() -> void:
	var failures := {}
	var on_failed := func(id: int, code: String, message: String) -> void:
		failures[id] = [code, message]
	client.path_failed.connect(on_failed)
	var start := center(Vector2i(1, 1))
	var expected := {
		client.find_path(start, center(Vector2i(17, 9)), Vector2i.ONE, {"map": "no_such_map"}):
		"unknown_map",
		client.find_path(start, Vector2(-40, 8)): "out_of_bounds",
		client.find_path(start, center(Vector2i(17, 9)), Vector2i(0, 1)): "bad_unit_size",
		client.find_path(start, center(Vector2i(17, 9)), Vector2i.ONE, {"smooth": "wiggly"}):
		"invalid_request",
	}
	await wait_until(func() -> bool: return failures.size() == expected.size(), 10.0)
	client.path_failed.disconnect(on_failed)
	for id: int in expected:
		var got: Array = failures.get(id, ["(no reply)", ""])
		check(got[0] == expected[id] and got[1] != "", "error code %s" % expected[id], got)
	var unknown := await client.find_path_async(start, start, Vector2i.ONE, {"map": "no_such_map"})
	check(
		(
			not unknown.ok
			and unknown.code == "unknown_map"
			and unknown.info.get("at") == "map"
			and not unknown.retryable
		),
		"find_path_async reports the error code and its field",
		unknown
	)


## A unit too big for the wall's gap has no path: like AStarGrid2D's empty path, an answer
## (path_found, ok, status no_path, no waypoints), never path_failed.
func test_no_path_is_an_answer() -> void:
	var completed := {}
	var failed := {}
	var on_completed := func(id: int, waypoints: PackedVector2Array, info: Dictionary) -> void:
		completed[id] = [waypoints, info]
	var on_failed := func(id: int, code: String, _message: String) -> void: failed[id] = code
	client.path_found.connect(on_completed)
	client.path_failed.connect(on_failed)
	var start := center(Vector2i(1, 1))
	var id := client.find_path(start, center(Vector2i(17, 9)), Vector2i(3, 3))
	await wait_until(func() -> bool: return completed.has(id) or failed.has(id), 5.0)
	client.path_found.disconnect(on_completed)
	client.path_failed.disconnect(on_failed)
	var answer: Array = completed.get(id, [PackedVector2Array([Vector2.ONE]), {}])
	check(
		(
			not failed.has(id)
			and answer[0].is_empty()
			and answer[1].get("status") == "no_path"
			and answer[1].get("cost") == 0.0
		),
		"no_path comes as path_found with empty waypoints and status no_path",
		[answer, failed]
	)
	var awaited := await client.find_path_async(start, center(Vector2i(17, 9)), Vector2i(3, 3))
	check(
		(
			awaited.ok
			and awaited.status == "no_path"
			and awaited.code == ""
			and awaited.waypoints.is_empty()
			and str(awaited).ends_with("no_path, 0 waypoints)")
		),
		"an awaited no_path result is ok with status no_path",
		awaited
	)
	var batch := await client.find_paths_async(
		[[start, center(Vector2i(17, 9))], [start, center(Vector2i(2, 1))]], Vector2i(3, 3)
	)
	check(
		(
			batch.size() == 2
			and batch.all(func(r: PathServerResult) -> bool: return r.ok)
			and batch[0].status == "no_path"
		),
		"a batch entry with no path is ok too",
		batch
	)


func test_cancel() -> void:
	var heard := []
	var on_completed := func(id: int, _waypoints: PackedVector2Array, _info: Dictionary) -> void:
		heard.append(id)
	var on_failed := func(id: int, _code: String, _message: String) -> void: heard.append(id)
	client.path_found.connect(on_completed)
	client.path_failed.connect(on_failed)
	var id := client.find_path(center(Vector2i(1, 1)), center(Vector2i(17, 9)))
	client.cancel(id)
	var pending_after_cancel := client.get_pending_count()
	var later := await client.find_path_async(center(Vector2i(1, 1)), center(Vector2i(2, 1)))
	client.path_found.disconnect(on_completed)
	client.path_failed.disconnect(on_failed)
	check(
		pending_after_cancel == 0 and later.ok and id not in heard and later.id in heard,
		"a cancelled request is forgotten and emits nothing",
		[pending_after_cancel, heard]
	)


func test_timeout() -> void:
	var lonely := lonely_client()
	var began := Time.get_ticks_msec()
	var result := await lonely.find_path_async(
		Vector2.ZERO, Vector2.ONE, Vector2i.ONE, {"timeout_ms": 400}
	)
	var waited := Time.get_ticks_msec() - began
	check(
		result.code == "timeout" and result.retryable and waited >= 350 and waited < 2000,
		"a request with no server times out clearly (%d ms)" % waited,
		result
	)
	lonely.queue_free()


# -- the agent --------------------------------------------------------------------------------


func test_follower() -> void:
	var small := _spawn_unit(Vector2i(1, 1), Vector2i.ONE)
	var large := _spawn_unit(Vector2i(1, 10), Vector2i(2, 2))
	var target := Node2D.new()
	root.add_child(target)
	target.global_position = center(Vector2i(17, 9))
	small.agent.target_node = target
	large.agent.target_node = target
	var both_reached := func() -> bool: return small.reached and large.reached
	var arrived := await wait_until(both_reached, 15.0)
	check(
		arrived,
		"units of sizes 1 and 2 reach the target",
		[small.body.position, large.body.position]
	)
	check(
		small.body.position.distance_to(target.global_position) < 2.0,
		"the unit stands on the target",
		small.body.position
	)
	# Moving the target past the threshold makes the agents ask again.
	small.changes = 0
	target.global_position = center(Vector2i(18, 1))
	await wait_until(func() -> bool: return small.changes > 0, 5.0)
	check(small.changes > 0, "a moved target gets a new path")
	await wait_until(func() -> bool: return small.agent.is_target_reached(), 10.0)
	# A live edit closes the wall's gap: the agent's next path fails; reopening it makes a new
	# generation, which alone (the retry interval is long) makes the agent ask again.
	small.agent.retry_interval = 60.0
	var closed := await client.request_async(
		"update", {"map": MAP, "rects": [[10, 0, 1, 12]], "solid": true}
	)
	check(closed.ok, "update closes the gap", closed.reply)
	small.events.clear()
	small.agent.target_position = center(Vector2i(2, 8))
	small.agent.target_node = null
	await wait_until(func() -> bool: return not small.events.is_empty(), 5.0)
	check(
		small.events == ["path_changed"] and small.agent.waypoints.is_empty(),
		"the follower gets an empty path_changed for no_path, not path_failed",
		small.events
	)
	small.reached = false
	var opened := await client.request_async(
		"update", {"map": MAP, "rects": [[10, 5, 1, 2]], "solid": false}
	)
	check(
		opened.ok and opened.reply.get("gen", 0) > closed.reply.get("gen", 0),
		"update reopens the gap with a new gen",
		opened.reply
	)
	var rerouted := await wait_until(func() -> bool: return small.reached, 10.0)
	check(
		rerouted,
		"a new map generation makes the follower ask again and arrive",
		small.body.position
	)
	small.body.queue_free()
	large.body.queue_free()
	target.queue_free()


func _spawn_unit(cell: Vector2i, unit_size: Vector2i) -> Dictionary:
	var body := Node2D.new()
	body.position = center(cell)
	var agent := PathServerAgent2D.new()
	agent.unit_size = unit_size
	agent.speed = 600.0
	body.add_child(agent)
	root.add_child(body)
	var unit := {
		"body": body, "agent": agent, "reached": false, "changes": 0, "failures": [], "events": []
	}
	agent.target_reached.connect(
		func() -> void:
			unit.reached = true
			unit.events.append("target_reached")
	)
	agent.path_changed.connect(
		func(_waypoints: PackedVector2Array) -> void:
			unit.changes += 1
			unit.events.append("path_changed")
	)
	agent.path_failed.connect(
		func(code: String, _message: String) -> void:
			unit.failures.append(code)
			unit.events.append("path_failed")
	)
	return unit


## A new target within repath_distance of the last goal (one cell here) used to be ignored.
func test_agent_small_target_moves() -> void:
	var unit := _spawn_unit(Vector2i(1, 8), Vector2i.ONE)
	var agent: PathServerAgent2D = unit.agent
	var body: Node2D = unit.body
	var reached := func() -> bool: return unit.reached
	agent.target_position = center(Vector2i(6, 8))
	await wait_until(reached, 5.0)
	unit.reached = false
	agent.target_position = center(Vector2i(7, 8))
	await wait_until(reached, 5.0)
	check(
		unit.reached and body.position.distance_to(center(Vector2i(7, 8))) < 1.0,
		"an arrived agent walks to a new target one cell away (within repath_distance)",
		body.position
	)
	# While it walks a long path, the target moves one cell: it keeps its path, then walks on.
	agent.speed = 120.0
	unit.reached = false
	unit.events.clear()
	agent.target_position = center(Vector2i(1, 8))
	await wait_until(func() -> bool: return unit.changes >= 3, 5.0)
	await process_frame
	agent.target_position = center(Vector2i(1, 9))
	await wait_until(reached, 5.0)
	check(
		unit.reached and body.position.distance_to(center(Vector2i(1, 9))) < 1.0,
		"a target moved one cell while walking: the unit ends on the new target",
		[body.position, unit.events]
	)
	check_equal(
		unit.events,
		["path_changed", "path_changed", "target_reached"],
		"target_reached once, at the new target, after the path to it"
	)
	body.queue_free()


## The order the agent's signals fire in, as the README describes it: the client's
## path_found for the agent's request, then path_changed, then target_reached once; an
## empty path_changed alone when the server answers no_path.
func test_agent_signal_order() -> void:
	var unit := _spawn_unit(Vector2i(1, 1), Vector2i.ONE)
	var agent: PathServerAgent2D = unit.agent
	var events: Array = unit.events
	var on_found := func(_id: int, _waypoints: PackedVector2Array, _info: Dictionary) -> void:
		events.append("client path_found")
	client.path_found.connect(on_found)
	agent.target_position = center(Vector2i(17, 9))
	await wait_until(func() -> bool: return unit.reached, 5.0)
	for i in 5:
		await physics_frame
	check_equal(
		events,
		["client path_found", "path_changed", "target_reached"],
		"agent signals: the client's path_found, path_changed, target_reached"
	)
	events.clear()
	agent.unit_size = Vector2i(3, 3)
	agent.target_position = center(Vector2i(1, 1))
	await wait_until(func() -> bool: return not events.is_empty(), 5.0)
	for i in 5:
		await physics_frame
	check_equal(
		events,
		["client path_found", "path_changed"],
		"agent signals: an empty path_changed, no target_reached, when there is no path"
	)
	client.path_found.disconnect(on_found)
	unit.body.queue_free()


## A failed request is asked again after retry_interval: the agent used to wait for a new
## target or map generation. A no_path answer is not a failure: no timed retries.
func test_agent_retries_after_failure() -> void:
	var unit := _spawn_unit(Vector2i(2, 8), Vector2i.ONE)
	unit.agent.retry_interval = 0.2
	unit.agent.map_name = "no_such_map"
	unit.agent.target_position = center(Vector2i(17, 9))
	await wait_until(func() -> bool: return unit.failures.size() >= 3, 3.0)
	check(
		(
			unit.failures.size() >= 3
			and unit.failures.all(func(c: String) -> bool: return c == "unknown_map")
		),
		"a failing agent asks again every retry_interval",
		unit.failures
	)
	unit.body.queue_free()
	var stuck := _spawn_unit(Vector2i(2, 8), Vector2i(3, 3))
	stuck.agent.retry_interval = 0.2
	stuck.agent.target_position = center(Vector2i(17, 9))
	await create_timer(1.0).timeout
	check(
		stuck.events == ["path_changed"] and stuck.failures.is_empty(),
		"an agent answered no_path does not ask again on a timer",
		stuck.events
	)
	stuck.body.queue_free()
