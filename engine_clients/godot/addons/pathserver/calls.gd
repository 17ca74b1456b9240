class_name PathServerCalls
extends RefCounted
## [PathServerClient]'s calls made into requests and queued: each method takes a call's
## arguments, builds its request with the next id ([PathServerRequests]), encodes it, puts it
## on the connection with its deadline and returns it, a [PathServerConnection.Pending] for the
## client to await or wait for. The client's [member PathServerClient.map_name] and
## [member PathServerClient.timeout_ms] apply where the options name no other.
##
## Requests are queued at once when connected and written by the client's poll at the end of
## the frame (the requests of a frame in one write), which also hands out the replies that came
## by then; a synchronous call writes at once. Only the poll hands replies out (a synchronous
## call, its own), so none comes before the caller awaits it.

## The id the next request gets.
var next_id := 1
## Requests the client answers itself, completed at its next poll.
var local_replies: Array[PathServerConnection.Pending] = []
## Whether the client's poll is queued for the end of this frame.
var poll_queued := false

var _client: PathServerClient
var _connection: PathServerConnection
var _requests := PathServerRequests.new()


func _init(client: PathServerClient, connection: PathServerConnection) -> void:
	_client = client
	_connection = connection


## Has the client poll at the end of this frame, once however many ask.
func queue_poll() -> void:
	if not poll_queued:
		poll_queued = true
		_client.poll.call_deferred()


func find_path(
	start: Variant, goal: Variant, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var pending := _new_pending(PathServerClient.Kind.PATH)
	var request := _requests.path_request(
		pending.result.id, _client.map_name, start, goal, unit_size, options
	)
	return _queue(pending, request[0], request[1], options)


## A synchronous path call's quick way, taken when nothing else waits to go out: the request
## written at once and its reply read on the spot ([method PathServerConnection.read_reply]).
## Returns the [PathServerResult] when that reply is a path that reads in part
## ([method PathServerReplies.read_path_head]); else a [PathServerConnection.Pending] to wait
## for, as [method find_path]'s request: when the connection is not ready, the reply is an
## error or "overloaded" (retried as any request's), or none came within
## [constant PathServerConnection.SYNC_POLL_USEC].
func find_path_now(
	start: Variant,
	goal: Variant,
	unit_size: Vector2i,
	options: Dictionary,
	replies: PathServerReplies
) -> Variant:
	var dealer := _connection.dealer
	if _connection.hold_for != 0 or not dealer.is_ready() or dealer.has_output():
		return find_path(start, goal, unit_size, options)
	var result := PathServerResult.new()
	result.id = _take_id()
	var request := _requests.path_request(
		result.id, _client.map_name, start, goal, unit_size, options
	)
	dealer.send([PackedByteArray(), request[1]])
	var reply := _connection.read_reply(result.id)
	if not reply.is_empty() and replies.read_path_head(result, reply, request[0]):
		return result
	var pending := _new_pending(PathServerClient.Kind.PATH, result)
	pending.sent = true
	_fill(pending, request[0], request[1], options)
	_connection.pending[result.id] = pending
	if not reply.is_empty():
		_connection.receive([reply])
	return pending


func find_paths(
	requests: Array, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var fields := PathServerRequests.paths(_client.map_name, requests, unit_size, options)
	return submit("paths", fields, PathServerClient.Kind.PATHS, options)


func put_grid(
	name: String, size: Vector2i, cells: PackedByteArray, options: Dictionary
) -> PathServerConnection.Pending:
	var fields := PathServerRequests.put_map(name, size, cells, options)
	return submit("put_map", fields, PathServerClient.Kind.RAW, options)


func put_tilemap(name: String, layer: Variant, options: Dictionary) -> PathServerConnection.Pending:
	var grid := PathServerRequests.read_tilemap(layer, options)
	if grid.error != "":
		# Answered at the next poll, so that its signal comes after the caller has its id.
		var pending := _new_pending(PathServerClient.Kind.RAW)
		var error := PathServerReplies.client_error(
			"invalid_request", grid.error, pending.result.id
		)
		error.error.at = grid.at
		pending.local_reply = error
		local_replies.append(pending)
		return pending
	var uploaded := put_grid(name, grid.size, grid.cells, grid.upload)
	uploaded.extra_info = {"rect": grid.rect, "mapping": grid.mapping}
	return uploaded


func get_map(name: String, region: Rect2i, options: Dictionary) -> PathServerConnection.Pending:
	var fields := PathServerRequests.get_map(name, region, options)
	return submit("get_map", fields, PathServerClient.Kind.MAP, options)


func update_map(name: String, fields: Dictionary, if_gen: int) -> PathServerConnection.Pending:
	var body := PathServerRequests.update(name, fields, if_gen)
	return submit("update", body, PathServerClient.Kind.RAW, fields)


func find_path_to_any(
	start: Variant, goals: Variant, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var with_goals := options.duplicate()
	with_goals["goals"] = goals
	return find_path(start, Vector2.ZERO, unit_size, with_goals)


func reachable(
	start: Variant, budget: float, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var fields := PathServerRequests.reachable(_client.map_name, start, budget, unit_size, options)
	return submit("reachable", fields, PathServerClient.Kind.QUERY, options)


func distance_field(
	goals: Variant, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var fields := PathServerRequests.field(_client.map_name, goals, unit_size, options)
	return submit("field", fields, PathServerClient.Kind.QUERY, options)


func next_steps(
	goals: Variant, positions: Variant, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var fields := _requests.next_steps(_client.map_name, goals, positions, unit_size, options)
	return submit("next_steps", fields, PathServerClient.Kind.QUERY, options)


func check_block(
	cells: Array, rects: Array, points: Variant, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var map := _client.map_name
	var fields := PathServerRequests.check_block(map, cells, rects, points, unit_size, options)
	return submit("check_block", fields, PathServerClient.Kind.QUERY, options)


## Any op with [param fields], its reply read as [param kind] says.
func submit(
	op: String, fields: Dictionary, kind: PathServerClient.Kind, options := {}
) -> PathServerConnection.Pending:
	var pending := _new_pending(kind)
	var body := PathServerRequests.body(pending.result.id, op, fields)
	return _queue(pending, body, PathServerMsgPack.encode(body), options)


## Sends [param pending] with its [param body] encoded as [param bytes].
func _queue(
	pending: PathServerConnection.Pending,
	body: Dictionary,
	bytes: PackedByteArray,
	options: Dictionary
) -> PathServerConnection.Pending:
	_fill(pending, body, bytes, options)
	_connection.add(pending)
	queue_poll()
	return pending


## Gives [param pending] its body, bytes and deadline.
func _fill(
	pending: PathServerConnection.Pending,
	body: Dictionary,
	bytes: PackedByteArray,
	options: Dictionary
) -> void:
	pending.body_map = str(body.get("map", ""))
	pending.body = body
	pending.bytes = bytes
	var wait_ms: int = options.get("timeout_ms", _client.timeout_ms)
	pending.deadline_ms = Time.get_ticks_msec() + wait_ms
	pending.timeout_ms = wait_ms


## A request of [param kind] with the next id; given [param result], that one's (its id taken
## already).
func _new_pending(
	kind: PathServerClient.Kind, result: PathServerResult = null
) -> PathServerConnection.Pending:
	var pending := PathServerConnection.Pending.new()
	pending.kind = kind
	if result != null:
		pending.result = result
	else:
		pending.result.id = _take_id()
	return pending


## The next request id, taken.
func _take_id() -> int:
	next_id += 1
	return next_id - 1
