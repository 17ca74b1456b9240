class_name PathServerClient
extends Node
## A client for pathserver, the grid pathfinding service. The plugin registers one as the
## autoload [code]PathServer[/code]; more can be created with [code]PathServerClient.new()[/code].
##
## Requests return an id at once; replies arrive as signals (or through the [code]_async[/code]
## variants with [code]await[/code]), matched by id, in whatever order the server finishes them.
## All network work happens in [method _process] and never blocks a frame. Coordinates are world
## coordinates by default (the map's origin and cell size apply); pass
## [code]{"space": "grid"}[/code] in [param options] for cells.
## [codeblock]
## func _ready() -> void:
##     PathServer.path_found.connect(_on_path_found)
##     PathServer.find_path(Vector2(24, 24), Vector2(200, 40))
##
## func _on_path_found(id: int, waypoints: PackedVector2Array, info: Dictionary) -> void:
##     print(id, " ", waypoints, " cost ", info.cost)
## [/codeblock]
## When the connection drops, the client reconnects with back-off and sends again whatever was
## in flight. A request with no answer within its timeout fails with the code "timeout".

## A path was found ([code]info.status[/code] is "found", or "partial" when asked for).
## [param info] holds the reply's fields besides the path (status, cost, length, expanded,
## start and goal as [Vector2], gen, ...) plus the request's map and unit_size.
signal path_found(id: int, waypoints: PackedVector2Array, info: Dictionary)
## A request failed; [param code] is a server error code ("unknown_map", "out_of_bounds", ...),
## "no_path", or the client's own "timeout" or "bad_reply".
signal path_failed(id: int, code: String, message: String)
## A [method find_paths] batch completed: one [PathServerResult] per request, in order.
signal paths_completed(id: int, results: Array)
## A [method request] got its reply (ok or not); [param reply] is the server's Dictionary.
signal reply_received(id: int, reply: Dictionary)
## The ZeroMQ handshake with the server completed.
signal connected
## The connection dropped; the client is reconnecting.
signal disconnected(reason: String)
## A reply revealed a newer generation of a map (a reload or a live obstacle edit).
signal map_generation_changed(map_name: String, gen: int)

enum Kind { PATH, PATHS, RAW }

const SETTING_ENDPOINT := "pathserver/connection/endpoint"
const SETTING_DEFAULT_MAP := "pathserver/connection/default_map"
const SETTING_TIMEOUT_MS := "pathserver/connection/timeout_ms"
const SETTING_EMBEDDED := "pathserver/embedded_server/enabled"
const SETTING_EMBEDDED_COMMAND := "pathserver/embedded_server/command"
const SETTING_EMBEDDED_MAPS_DIR := "pathserver/embedded_server/maps_dir"
const SETTING_EMBEDDED_ARGUMENTS := "pathserver/embedded_server/extra_arguments"
## Every project setting with its default; [code]plugin.gd[/code] registers them.
const SETTINGS := {
	SETTING_ENDPOINT: "tcp://127.0.0.1:5555",
	SETTING_DEFAULT_MAP: "example",
	SETTING_TIMEOUT_MS: 5000,
	SETTING_EMBEDDED: false,
	SETTING_EMBEDDED_COMMAND: "python3",
	SETTING_EMBEDDED_MAPS_DIR: "",
	SETTING_EMBEDDED_ARGUMENTS: [],
}
## Options read by the client itself and never sent to the server.
const CLIENT_OPTIONS := ["map", "timeout_ms"]
const RECONNECT_MIN_MS := 100
const RECONNECT_MAX_MS := 2000

## "tcp://HOST:PORT" of the server. Change it with [method connect_to_server].
var endpoint: String = setting(SETTING_ENDPOINT)
## The map requests use unless their options name another.
var map_name: String = setting(SETTING_DEFAULT_MAP)
## How long a request may wait for its reply, in milliseconds, including time spent
## reconnecting. Per request: [code]{"timeout_ms": 500}[/code] in options.
var timeout_ms: int = setting(SETTING_TIMEOUT_MS)
## Start [code]pathserver serve[/code] as a child process in [method _ready] and stop it on exit.
var embedded_server: bool = setting(SETTING_EMBEDDED)
## Connect in [method _ready]; when false, call [method connect_to_server] yourself.
var auto_connect := true

var _dealer := PathServerZmtpDealer.new()
var _pending := {}
var _next_id := 1
var _was_ready := false
var _active := false
var _reconnect_at_ms := 0
var _backoff_ms := RECONNECT_MIN_MS
var _server_pid := -1
var _server_check_ms := 0
var _generations := {}


## The value of a pathserver project setting, or its default when the project has none.
static func setting(name: String) -> Variant:
	return ProjectSettings.get_setting(name, SETTINGS[name])


func _ready() -> void:
	# Keep answering while the game is paused: a paused game still has requests in flight.
	process_mode = Node.PROCESS_MODE_ALWAYS
	if embedded_server:
		start_embedded_server()
	if auto_connect:
		connect_to_server(endpoint)


func _process(_delta: float) -> void:
	poll()


func _exit_tree() -> void:
	_dealer.close()
	stop_embedded_server()


func _notification(what: int) -> void:
	if what == NOTIFICATION_PREDELETE:
		stop_embedded_server()


## Connects (or reconnects) to [param to_endpoint]; requests already made are sent once the
## handshake completes.
func connect_to_server(to_endpoint: String = endpoint) -> void:
	endpoint = to_endpoint
	_active = true
	_backoff_ms = RECONNECT_MIN_MS
	_reconnect_at_ms = 0
	_dealer.close()
	_on_connection_lost("reconnecting to %s" % endpoint)


## Closes the connection. Requests in flight stay pending until their timeout or a new
## [method connect_to_server].
func disconnect_from_server() -> void:
	_active = false
	_dealer.close()
	_on_connection_lost("closed by the client")


## True once the ZeroMQ handshake with the server has completed.
func is_connected_to_server() -> bool:
	return _dealer.is_ready()


## How many requests are waiting for a reply.
func get_pending_count() -> int:
	return _pending.size()


## Asks for a path from [param start] to [param goal] for a unit whose footprint is
## [param unit_size] cells. Returns the request id; the answer comes as [signal path_found] or
## [signal path_failed] with that id. [param options] may hold any field of the server's
## [code]path[/code] op ("space", "smooth", "allow_partial", "snap", "max_expansions",
## "heuristic", "diagonal", "max_climb", "algorithm"), plus "map" and "timeout_ms".
func find_path(start: Vector2, goal: Vector2, unit_size := Vector2i.ONE, options := {}) -> int:
	return _find_path(start, goal, unit_size, options).result.id


## Like [method find_path], awaitable:
## [code]var result := await PathServer.find_path_async(a, b)[/code].
func find_path_async(
	start: Vector2, goal: Vector2, unit_size := Vector2i.ONE, options := {}
) -> PathServerResult:
	var result := _find_path(start, goal, unit_size, options).result
	if not result.done:
		await result.completed
	return result


## Asks for many paths in one round trip. [param requests] holds [code][start, goal][/code]
## pairs or Dictionaries [code]{"start": Vector2, "goal": Vector2, ...}[/code] with per-request
## options. The answer comes as [signal paths_completed] with one [PathServerResult] each; if the
## whole batch is refused, [signal path_failed] with the batch id.
func find_paths(requests: Array, unit_size := Vector2i.ONE, options := {}) -> int:
	return _find_paths(requests, unit_size, options).result.id


## Like [method find_paths], awaitable; returns an Array of [PathServerResult], in order.
func find_paths_async(requests: Array, unit_size := Vector2i.ONE, options := {}) -> Array:
	var pending := _find_paths(requests, unit_size, options)
	if not pending.result.done:
		await pending.result.completed
	return pending.batch


## Sends any other op ("maps", "stats", "ping", "update") with [param fields]; the reply comes
## as [signal reply_received]. Returns the request id.
func request(op: String, fields := {}) -> int:
	return _submit(op, fields, Kind.RAW).result.id


## Like [method request], awaitable. The result's [member PathServerResult.reply] is the
## server's reply; [member PathServerResult.ok] and [member PathServerResult.code] tell how it
## went.
func request_async(op: String, fields := {}) -> PathServerResult:
	var result := _submit(op, fields, Kind.RAW).result
	if not result.done:
		await result.completed
	return result


## The result object of a request still in flight, or null once it completed or was cancelled.
## Connect to its [signal PathServerResult.completed] to hear about that one request only.
func get_request(id: int) -> PathServerResult:
	var pending: Pending = _pending.get(id)
	return pending.result if pending else null


## Forgets a request: its result completes with the code "cancelled" (so an [code]await[/code]
## on it resumes), no signal is emitted, and a late reply is ignored.
func cancel(id: int) -> void:
	var pending: Pending = _pending.get(id)
	if pending == null:
		return
	_pending.erase(id)
	_fill_error(pending.result, _client_error("cancelled", "cancelled by the caller", id))
	pending.result.done = true
	pending.result.completed.emit()


## Advances the connection and delivers replies. [method _process] calls it every frame; call it
## yourself only when this node is not in the scene tree.
func poll() -> void:
	if not _active:
		_expire(Time.get_ticks_msec())
		return
	var now := Time.get_ticks_msec()
	if _dealer.state == PathServerZmtpDealer.State.CLOSED and now >= _reconnect_at_ms:
		_dealer.open(endpoint)
		_reconnect_at_ms = now + _backoff_ms
		_backoff_ms = mini(_backoff_ms * 2, RECONNECT_MAX_MS)
	for message: Array in _dealer.poll():
		_on_message(message)
	if _dealer.is_ready():
		if not _was_ready:
			_was_ready = true
			_backoff_ms = RECONNECT_MIN_MS
			connected.emit()
		_send_unsent(now)
	elif _was_ready and _dealer.state == PathServerZmtpDealer.State.CLOSED:
		_on_connection_lost(_dealer.last_error)
		_reconnect_at_ms = now + _backoff_ms
	_expire(now)
	if _server_pid > 0 and now >= _server_check_ms:
		_server_check_ms = now + 1000
		if not OS.is_process_running(_server_pid):
			push_error(
				"PathServer: the embedded server (pid %d) exited; see its output." % _server_pid
			)
			_server_pid = -1


## Starts [code]COMMAND -m pathserver serve --bind ENDPOINT [--maps DIR] [ARGS][/code] from the
## project settings as a child process. Returns its process id, or -1.
func start_embedded_server() -> int:
	stop_embedded_server()
	var command: String = setting(SETTING_EMBEDDED_COMMAND)
	var arguments := PackedStringArray(["-m", "pathserver", "serve", "--bind", endpoint])
	var maps_dir: String = setting(SETTING_EMBEDDED_MAPS_DIR)
	if maps_dir != "":
		arguments.append_array(["--maps", ProjectSettings.globalize_path(maps_dir)])
	arguments.append_array(PackedStringArray(setting(SETTING_EMBEDDED_ARGUMENTS)))
	_server_pid = OS.create_process(command, arguments)
	if _server_pid < 0:
		var hint := "Set %s to a Python with pathserver installed." % SETTING_EMBEDDED_COMMAND
		push_error("PathServer: could not start '%s %s'. %s" % [command, " ".join(arguments), hint])
	return _server_pid


## Stops the embedded server, if this client started one.
func stop_embedded_server() -> void:
	if _server_pid > 0:
		OS.kill(_server_pid)
		_server_pid = -1


## The id of the embedded server's process, or -1.
func get_embedded_server_pid() -> int:
	return _server_pid


## The unit size as the wire wants it: an int for square units, else [w, h].
static func wire_unit_size(unit_size: Vector2i) -> Variant:
	return unit_size.x if unit_size.x == unit_size.y else [unit_size.x, unit_size.y]


func _find_path(start: Vector2, goal: Vector2, unit_size: Vector2i, options: Dictionary) -> Pending:
	var fields := {
		"map": options.get("map", map_name),
		"start": start,
		"goal": goal,
		"unit_size": wire_unit_size(unit_size),
		"space": "world",
	}
	return _submit("path", _with_options(fields, options), Kind.PATH, options)


func _find_paths(requests: Array, unit_size: Vector2i, options: Dictionary) -> Pending:
	var wire_requests := []
	for item: Variant in requests:
		if item is Dictionary:
			wire_requests.append(item)
		elif item is Array and item.size() == 2:
			wire_requests.append({"start": item[0], "goal": item[1]})
		else:
			push_error("PathServer.find_paths: each request is [start, goal] or a Dictionary")
			wire_requests.append({"start": null, "goal": null})
	var fields := {
		"map": options.get("map", map_name),
		"unit_size": wire_unit_size(unit_size),
		"space": "world",
	}
	fields = _with_options(fields, options)
	fields["requests"] = wire_requests
	return _submit("paths", fields, Kind.PATHS, options)


func _with_options(fields: Dictionary, options: Dictionary) -> Dictionary:
	for key: Variant in options:
		if key not in CLIENT_OPTIONS:
			fields[key] = options[key]
	return fields


func _submit(op: String, fields: Dictionary, kind: Kind, options := {}) -> Pending:
	var pending := Pending.new()
	pending.kind = kind
	pending.result.id = _next_id
	_next_id += 1
	# "id" and "op" lead, as in every example of the protocol document.
	var body := {"id": pending.result.id, "op": op}
	body.merge(fields)
	pending.body = body
	pending.bytes = PathServerMsgPack.encode(body)
	var wait_ms: int = options.get("timeout_ms", timeout_ms)
	pending.deadline_ms = Time.get_ticks_msec() + wait_ms
	pending.timeout_ms = wait_ms
	_pending[pending.result.id] = pending
	# Sending waits for poll(): a reply can never arrive before the caller awaits it.
	return pending


func _on_connection_lost(reason: String) -> void:
	_mark_unsent()
	if _was_ready:
		_was_ready = false
		disconnected.emit(reason)


func _mark_unsent() -> void:
	for pending: Pending in _pending.values():
		pending.sent = false


func _send_unsent(now: int) -> void:
	for pending: Pending in _pending.values():
		if not pending.sent and now >= pending.retry_at_ms:
			if not _dealer.send([PackedByteArray(), pending.bytes]):
				return
			pending.sent = true


func _expire(now: int) -> void:
	var expired: Array[Pending] = []
	for pending: Pending in _pending.values():
		if now >= pending.deadline_ms:
			expired.append(pending)
	for pending in expired:
		_pending.erase(pending.result.id)
		var why := "waiting for the connection" if not pending.sent else "after sending"
		if not _dealer.is_ready() and _dealer.last_error != "":
			why += " (%s)" % _dealer.last_error
		var message := "no reply from %s within %d ms, %s" % [endpoint, pending.timeout_ms, why]
		_complete(pending, _client_error("timeout", message, pending.result.id, true))


func _on_message(frames: Array) -> void:
	var decoded := PathServerMsgPack.decode(frames[-1])
	var reply: Variant = decoded[0]
	if decoded[1] != "" or not reply is Dictionary:
		push_warning("PathServer: unreadable reply ignored: %s" % decoded[1])
		return
	var id: Variant = reply.get("id")
	if not id is int or not _pending.has(id):
		# A reply to a request that timed out or was cancelled, or one the server could not
		# read (id nil: a client bug worth seeing).
		if id == null:
			push_warning("PathServer: the server could not read a request: %s" % reply)
		return
	var pending: Pending = _pending[id]
	var error: Dictionary = reply.get("error", {}) if reply.get("error") is Dictionary else {}
	var retry_ms: int = reply.get("retry_after_ms", 0) if reply.get("retry_after_ms") is int else 0
	var now := Time.get_ticks_msec()
	if error.get("code") == "overloaded" and now + retry_ms < pending.deadline_ms:
		# The server asked to come back later; the deadline still bounds the wait.
		pending.sent = false
		pending.retry_at_ms = now + retry_ms
		return
	_pending.erase(id)
	_complete(pending, reply)


func _complete(pending: Pending, reply: Dictionary) -> void:
	var result := pending.result
	match pending.kind:
		Kind.PATH:
			_fill_path_result(result, reply, pending.body)
			if result.ok:
				path_found.emit(result.id, result.waypoints, result.info)
			else:
				path_failed.emit(result.id, result.code, result.message)
		Kind.PATHS:
			_fill_error(result, reply)
			var answers: Variant = reply.get("results")
			if (
				result.code == ""
				and not (answers is Array and answers.size() == pending.body.requests.size())
			):
				_fill_error(
					result,
					_client_error(
						"bad_reply", "a batch reply without one result per request", result.id
					)
				)
			for i in pending.body.requests.size():
				var item := PathServerResult.new()
				item.id = result.id
				if result.code != "":
					_fill_error(
						item,
						(
							reply
							if reply.has("error")
							else _client_error(result.code, result.message, result.id)
						)
					)
				else:
					_fill_path_result(item, answers[i], _batch_request(pending.body, i))
				pending.batch.append(item)
			result.ok = result.code == ""
			if result.ok:
				paths_completed.emit(result.id, pending.batch)
			else:
				path_failed.emit(result.id, result.code, result.message)
		Kind.RAW:
			_fill_error(result, reply)
			result.ok = reply.get("ok") == true
			_note_generation(reply)
			reply_received.emit(result.id, reply)
	result.done = true
	result.completed.emit()


func _batch_request(body: Dictionary, index: int) -> Dictionary:
	var merged := body.duplicate()
	merged.merge(body.requests[index], true)
	return merged


func _fill_error(result: PathServerResult, reply: Dictionary) -> void:
	result.reply = reply
	if reply.get("ok") == true:
		return
	var error: Variant = reply.get("error")
	if not error is Dictionary:
		error = {"code": "bad_reply", "message": "a failed reply without an error: %s" % reply}
	result.code = str(error.get("code", "bad_reply"))
	result.message = str(error.get("message", ""))
	result.retryable = reply.get("retryable") == true
	result.info["at"] = error.get("at")
	result.ok = false


func _fill_path_result(result: PathServerResult, reply: Variant, request_body: Dictionary) -> void:
	if not reply is Dictionary:
		reply = _client_error("bad_reply", "a path reply that is not a map: %s" % reply, result.id)
	_fill_error(result, reply)
	if reply.get("ok") != true:
		return
	result.status = str(reply.get("status", ""))
	result.waypoints = _to_points(reply.get("path", []))
	# Everything the reply says besides the path, so fields the server adds later show up too.
	result.info = {}
	for key: Variant in reply:
		if key not in ["id", "ok", "path"]:
			result.info[key] = reply[key]
	result.info["start"] = _to_point(reply.get("start"))
	result.info["goal"] = _to_point(reply.get("goal"))
	result.info["map"] = request_body.get("map")
	result.info["unit_size"] = request_body.get("unit_size")
	_note_generation(reply, str(request_body.get("map")))
	result.ok = result.status == "found" or result.status == "partial"
	if not result.ok:
		result.code = "no_path" if result.status == "no_path" else "bad_reply"
		result.message = (
			"no path from %s to %s on map '%s' for unit size %s"
			% [request_body.start, request_body.goal, request_body.map, request_body.unit_size]
		)


func _note_generation(reply: Dictionary, map: String = "") -> void:
	if map == "":
		map = str(reply.get("map", ""))
	var gen: Variant = reply.get("gen")
	if map == "" or not gen is int:
		return
	var known: int = _generations.get(map, -1)
	if gen > known:
		_generations[map] = gen
		if known >= 0:
			map_generation_changed.emit(map, gen)


static func _to_point(pair: Variant) -> Vector2:
	if pair is Array and pair.size() == 2:
		return Vector2(float(pair[0]), float(pair[1]))
	return Vector2.ZERO


static func _to_points(pairs: Variant) -> PackedVector2Array:
	var points := PackedVector2Array()
	if pairs is Array:
		for pair: Variant in pairs:
			points.append(_to_point(pair))
	return points


static func _client_error(code: String, message: String, id: int, retryable := false) -> Dictionary:
	return {
		"id": id,
		"ok": false,
		"error": {"code": code, "message": message, "at": null},
		"retryable": retryable,
	}


## A request waiting for its reply.
class Pending:
	extends RefCounted

	var result := PathServerResult.new()
	var kind := 0
	var body := {}
	var bytes := PackedByteArray()
	var deadline_ms := 0
	var timeout_ms := 0
	var sent := false
	## When the server answered "overloaded": not before this time.
	var retry_at_ms := 0
	## PATHS only: one PathServerResult per request, filled on completion.
	var batch: Array[PathServerResult] = []
