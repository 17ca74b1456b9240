# gdlint: disable=max-public-methods,max-file-lines
class_name PathServerClient
extends Node
## A client for pathserver, the grid pathfinding service. The plugin registers one as the
## autoload [code]PathServer[/code]; more can be created with [code]PathServerClient.new()[/code].
##
## Each request has two forms. To wait for the answer, [code]await[/code] the
## [code]_async[/code] method: [method find_path_async], [method find_paths_async],
## [method request_async] return a [PathServerResult] (an Array of them for a batch); this is
## the one way to await. To fire and forget, the plain method ([method find_path],
## [method find_paths], [method request]) returns the request id at once, and the answer comes
## as a signal with that id. Replies are matched by id, in whatever order the server finishes
## them; every request emits its signal, awaited or not.
##
## The game's own world: [method put_grid] and [method put_tilemap] upload a map (a
## [TileMapLayer] as it is), [method get_map] reads one back, [method drop_map] drops it,
## [method update_map] edits one live (with [code]if_gen[/code]); each with its
## [code]_async[/code] twin. [PathServerTileMapSync] keeps an uploaded layer in sync.
##
## A path query that finds no path is an answer, not a failure (like [AStarGrid2D]'s empty
## path): [signal path_found] with empty waypoints and [code]info.status == "no_path"[/code],
## a result with [member PathServerResult.ok] true. Only errors (a bad request, an unknown map,
## a timeout, ...) are [signal path_failed].
##
## For code written for [AStarGrid2D], [method find_path_sync], [method find_id_path_sync] and
## [method find_paths_sync] wait on the spot and return the answer, blocking the frame for the
## round trip. Paths come packed (one bin of points, decoded by the engine's own conversions,
## see [PathServerPacked]).
##
## Otherwise network work happens in [method poll] ([method _process] calls it, and once more
## at the end of a frame in which a request was made) and never blocks a frame. Coordinates
## are world coordinates by default (the map's origin and cell size apply); pass
## [code]{"space": "grid"}[/code] in [param options] for cells.
## [codeblock]
## func _ready() -> void:
##     var result := await PathServer.find_path_async(Vector2(2.5, 2.5), Vector2(60.5, 60.5))
##     print(result.status, " ", result.waypoints)
##
##     PathServer.path_found.connect(_on_path_found)
##     PathServer.find_path(Vector2(2.5, 2.5), Vector2(60.5, 60.5))
##
## func _on_path_found(id: int, waypoints: PackedVector2Array, info: Dictionary) -> void:
##     print(id, " ", info.status, " ", waypoints, " cost ", info.cost)
## [/codeblock]
## When the connection drops, the client reconnects with back-off and sends again whatever was
## in flight. A request with no answer within its timeout fails with the code "timeout".
## [code]await PathServer.wait_connected()[/code] waits for the connection (it returns at once
## when there is one).

## Emitted for every completed [method find_path] query: [code]info.status[/code] is "found",
## "partial" (with [code]allow_partial[/code]) or "no_path" ([param waypoints] empty, like
## [AStarGrid2D]'s empty path: the goal cannot be reached). Errors are [signal path_failed].
## [param info] holds the reply's fields besides the path (status, cost, length, expanded,
## start and goal as [Vector2], start_snapped, goal_snapped, gen, ...) plus the request's map
## and unit_size.
signal path_found(id: int, waypoints: PackedVector2Array, info: Dictionary)
## A request failed: [param code] is a server error code ("unknown_map", "out_of_bounds", ...)
## or the client's own "timeout", "bad_reply" or "embedded_server_failed". Never "no_path":
## that is an answer, see [signal path_found].
signal path_failed(id: int, code: String, message: String)
## A [method find_paths] batch completed: one [PathServerResult] per request, in order.
signal paths_completed(id: int, results: Array)
## A [method request] got its reply (ok or not); [param reply] is the server's Dictionary.
signal reply_received(id: int, reply: Dictionary)
## The ZeroMQ handshake with the server completed. To wait for the connection, use
## [method wait_connected]: it also returns when the client is already connected.
signal connected
## The connection dropped; the client is reconnecting.
signal disconnected(reason: String)
## A reply revealed a newer generation of a map (a reload or a live obstacle edit).
signal map_generation_changed(map_name: String, gen: int)
## The embedded server printed its ready line; the client connects to [param server_endpoint].
signal embedded_server_started(server_endpoint: String)
## The embedded server could not start, or exited on its own. [param message] says how and
## ends with its last output lines; requests waiting for it fail with the code
## "embedded_server_failed".
signal embedded_server_failed(message: String)

enum Kind { PATH, PATHS, RAW, MAP, QUERY }
## Where the embedded server is: not started by this client, starting (compiling, loading
## maps), running (its ready line came), or failed (see [signal embedded_server_failed]).
enum ServerState { NONE, STARTING, RUNNING, FAILED }

const SETTING_ENDPOINT := "pathserver/connection/endpoint"
const SETTING_DEFAULT_MAP := "pathserver/connection/default_map"
const SETTING_TIMEOUT_MS := "pathserver/connection/timeout_ms"
const SETTING_EMBEDDED := "pathserver/embedded_server/enabled"
const SETTING_EMBEDDED_MODE := "pathserver/embedded_server/mode"
const SETTING_EMBEDDED_COMMAND := "pathserver/embedded_server/command"
const SETTING_EMBEDDED_MAPS_DIR := "pathserver/embedded_server/maps_dir"
const SETTING_EMBEDDED_ARGUMENTS := "pathserver/embedded_server/extra_arguments"
const SETTING_EMBEDDED_PORT := "pathserver/embedded_server/port"
const SETTING_EMBEDDED_START_TIMEOUT_MS := "pathserver/embedded_server/start_timeout_ms"
## Every project setting with its default; [code]plugin.gd[/code] registers them.
const SETTINGS := {
	SETTING_ENDPOINT: "tcp://127.0.0.1:5555",
	SETTING_DEFAULT_MAP: "example",
	SETTING_TIMEOUT_MS: 5000,
	SETTING_EMBEDDED: false,
	SETTING_EMBEDDED_MODE: "auto",
	SETTING_EMBEDDED_COMMAND: "python3",
	SETTING_EMBEDDED_MAPS_DIR: "",
	SETTING_EMBEDDED_ARGUMENTS: [],
	SETTING_EMBEDDED_PORT: 0,
	SETTING_EMBEDDED_START_TIMEOUT_MS: 300000,
}
## What the embedded server runs ([constant SETTING_EMBEDDED_MODE]): "auto" the platform's
## bundle when there is one, else (in the editor only) Python; "bundle" the bundle only;
## "python" [code]COMMAND -m pathserver[/code] only. See [method PathServerBundle.server_launch].
const EMBEDDED_MODES := ["auto", "bundle", "python"]
## Defaults this client applies and always sends where they differ from the server's:
## positions in a game are world coordinates.
const CLIENT_DEFAULTS := PathServerOptions.CLIENT_DEFAULTS
## Options read by the client itself and never sent to the server.
const CLIENT_OPTIONS := PathServerOptions.CLIENT_OPTIONS
## A synchronous call looks at the socket without pausing for this long (the answer usually
## comes within it), then sleeps this long between looks.
const SYNC_SPIN_USEC := 2000
const SYNC_SLEEP_USEC := 100

## The options of [method find_path] and [method find_paths], each with what a request gets
## when [param options] leave it out (null: no limit, or the server chooses). A view of
## [constant PathServerOptions.TABLE], the one definition.
# gdlint:ignore = class-variable-name
static var PATH_OPTIONS := PathServerOptions.of_op("path")
## The options of [method reachable], [method distance_field], [method next_steps] and
## [method check_block], by op ("reachable", "field", "next_steps", "check_block"), as
## [member PATH_OPTIONS]. The methods' own parameters are not options.
# gdlint:ignore = class-variable-name
static var QUERY_OPTIONS := PathServerOptions.of_queries()

## "tcp://HOST:PORT" of the server. Change it with [method connect_to_server]. With an
## embedded server, the endpoint its ready line names.
var endpoint: String = setting(SETTING_ENDPOINT)
## The map requests use unless their options name another.
var map_name: String = setting(SETTING_DEFAULT_MAP)
## How long a request may wait for its reply, in milliseconds, including time spent
## reconnecting. Per request: [code]{"timeout_ms": 500}[/code] in options.
var timeout_ms: int = setting(SETTING_TIMEOUT_MS)
## Start [code]pathserver serve[/code] as a child process in [method _ready], connect to it once
## it is ready, and stop it on exit.
var embedded_server: bool = setting(SETTING_EMBEDDED)
## Connect in [method _ready] (to [member endpoint], or to the embedded server once it is
## ready); when false, call [method connect_to_server] yourself.
var auto_connect := true

var _connection := PathServerConnection.new()
var _server := PathServerProcess.new()
var _requests := PathServerRequests.new()
var _replies := PathServerReplies.new()
var _next_id := 1
var _local_replies: Array[PathServerConnection.Pending] = []
var _sync_result := PathServerResult.new()
var _poll_queued := false
var _main_thread_usec := 0
var _timing_depth := 0


## The value of a pathserver project setting, or its default when the project has none.
static func setting(name: String) -> Variant:
	return ProjectSettings.get_setting(name, SETTINGS[name])


## The unit size as the wire wants it: an int for square units, else [w, h].
static func wire_unit_size(unit_size: Vector2i) -> Variant:
	return PathServerRequests.wire_unit_size(unit_size)


func _init() -> void:
	_connection.connected.connect(connected.emit)
	_connection.disconnected.connect(disconnected.emit)
	_connection.completed.connect(_complete)
	_server.started.connect(_on_server_started)
	_server.failed.connect(_on_server_failed)
	_replies.map_generation_changed.connect(map_generation_changed.emit)


func _ready() -> void:
	# Keep answering while the game is paused: a paused game still has requests in flight.
	process_mode = Node.PROCESS_MODE_ALWAYS
	if embedded_server:
		# The server names its endpoint in its ready line; the client connects then.
		start_embedded_server()
	elif auto_connect:
		connect_to_server(endpoint)


func _process(_delta: float) -> void:
	poll()


func _exit_tree() -> void:
	_connection.dealer.close()
	stop_embedded_server()


func _notification(what: int) -> void:
	if what == NOTIFICATION_PREDELETE:
		stop_embedded_server()


## Connects (or reconnects) to [param to_endpoint]; requests already made are sent once the
## handshake completes.
func connect_to_server(to_endpoint: String = endpoint) -> void:
	endpoint = to_endpoint
	_connection.open(endpoint)


## Closes the connection. Requests in flight stay pending until their timeout or a new
## [method connect_to_server].
func disconnect_from_server() -> void:
	_connection.stop("closed by the client")
	_connection.finish_waiters(false)


## True once the ZeroMQ handshake with the server has completed.
func is_connected_to_server() -> bool:
	return _connection.dealer.is_ready()


## Waits for the connection: [code]await PathServer.wait_connected()[/code] returns true at once
## when the client is connected, else when it connects. It returns false when
## [param max_wait_ms] (default [member timeout_ms]) passes first, when the embedded server
## fails, or on [method disconnect_from_server]. As for requests, the time an embedded server
## spends starting does not count: the wait starts when it is ready.
## [codeblock]
## if not await PathServer.wait_connected():
##     push_warning("no pathserver at %s" % PathServer.endpoint)
## [/codeblock]
func wait_connected(max_wait_ms := -1) -> bool:
	if is_connected_to_server():
		return true
	if _server.state == ServerState.FAILED and not _connection.active:
		return false
	var waiter := PathServerConnection.Waiter.new()
	waiter.timeout_ms = timeout_ms if max_wait_ms < 0 else max_wait_ms
	waiter.deadline_ms = Time.get_ticks_msec() + waiter.timeout_ms
	_connection.waiters.append(waiter)
	return await waiter.finished


## How many requests are waiting for a reply.
func get_pending_count() -> int:
	return _connection.pending.size()


## Asks for a path from [param start] to [param goal] for a unit whose footprint is
## [param unit_size] cells, fire and forget. Returns the request id; the answer comes as
## [signal path_found] (found, partial or no_path) or [signal path_failed] (an error) with
## that id. [param options] may hold any of [member PATH_OPTIONS] (the server's
## [code]path[/code] fields), plus "map" and "timeout_ms". With [code]"goals"[/code] (an
## array of points) [param goal] is ignored: see [method find_path_to_any]. [code]"avoid"[/code]
## ([code]{"cells": [Vector2i, ...], "rects": [Rect2i, ...]}[/code], always grid cells) blocks
## cells for this request only, or prices them with [code]"avoid_cost"[/code]; its cells may
## also be a [PackedInt32Array] of x, y pairs, and either way go out as one compact bin of
## int32 pairs (the other ops' [code]avoid[/code] and each [method find_paths] request's too);
## [code]"traversal"[/code] names a unit class of the map or gives its rules
## ([code]{"water": null, "forest": 3.0}[/code]).
func find_path(start: Vector2, goal: Vector2, unit_size := Vector2i.ONE, options := {}) -> int:
	return _find_path(start, goal, unit_size, options).result.id


## [method find_path], awaited: [code]var result := await PathServer.find_path_async(a, b)[/code]
## returns its [PathServerResult] (the signals are emitted too).
func find_path_async(
	start: Vector2, goal: Vector2, unit_size := Vector2i.ONE, options := {}
) -> PathServerResult:
	var pending := _find_path(start, goal, unit_size, options)
	await _completion(pending)
	return pending.result


## Asks for many paths in one round trip. [param requests] holds [code][start, goal][/code]
## pairs or Dictionaries [code]{"start": Vector2, "goal": Vector2, ...}[/code] with per-request
## options. The answer comes as [signal paths_completed] with one [PathServerResult] each; if the
## whole batch is refused, [signal path_failed] with the batch id.
func find_paths(requests: Array, unit_size := Vector2i.ONE, options := {}) -> int:
	return _find_paths(requests, unit_size, options).result.id


## [method find_paths], awaited: returns an Array of [PathServerResult], one per request in
## order (each failed one with its error when the whole batch was refused).
func find_paths_async(requests: Array, unit_size := Vector2i.ONE, options := {}) -> Array:
	var pending := _find_paths(requests, unit_size, options)
	await _completion(pending)
	return pending.batch


## [method find_path], waited for on the spot, as [method AStarGrid2D.get_point_path] answers:
## [code]var path := PathServer.find_path_sync(a, b)[/code]. It blocks the frame for the round
## trip, at most the request's timeout, and returns the waypoints (start and goal included):
## empty for "no_path" and on errors, with [method get_last_sync_result] saying which. Replies
## to other requests that come meanwhile are handed out after it, in the same frame.
func find_path_sync(
	start: Vector2, goal: Vector2, unit_size := Vector2i.ONE, options := {}
) -> PackedVector2Array:
	var pending := _find_path(start, goal, unit_size, options)
	_wait_now(pending)
	return pending.result.waypoints


## [method find_path_sync] between cells, as [method AStarGrid2D.get_id_path] answers: the
## path's cells, start and goal included (grid space whatever [param options] say).
func find_id_path_sync(
	start: Vector2i, goal: Vector2i, unit_size := Vector2i.ONE, options := {}
) -> Array[Vector2i]:
	var grid := options.duplicate()
	grid["space"] = "grid"
	var pending := _find_path(Vector2(start), Vector2(goal), unit_size, grid)
	_wait_now(pending)
	return pending.result.get_cells()


## [method find_paths], waited for on the spot (see [method find_path_sync]): an Array of
## [PathServerResult], one per request in order.
func find_paths_sync(requests: Array, unit_size := Vector2i.ONE, options := {}) -> Array:
	var pending := _find_paths(requests, unit_size, options)
	_wait_now(pending)
	return pending.batch


## The outcome of the last synchronous call ([method find_path_sync], ...): its status
## ("found", "partial", "no_path") or, when not [member PathServerResult.ok], its error.
func get_last_sync_result() -> PathServerResult:
	return _sync_result


## Sends any other op ("maps", "stats", "ping", "update") with [param fields]; the reply comes
## as [signal reply_received]. Returns the request id.
func request(op: String, fields := {}) -> int:
	return _submit(op, fields, Kind.RAW).result.id


## [method request], awaited. The result's [member PathServerResult.reply] is the server's
## reply; [member PathServerResult.ok] and [member PathServerResult.code] tell how it went.
func request_async(op: String, fields := {}) -> PathServerResult:
	var pending := _submit(op, fields, Kind.RAW)
	await _completion(pending)
	return pending.result


## Uploads a map of [param size] cells under [param name], fire and forget (op
## [code]put_map[/code]); the answer comes as [signal reply_received] with the returned id. A
## name already uploaded is replaced (with a higher generation); the name of a map file the
## server serves is refused with the code "conflict".
## [br][param cells]: one byte per cell, row-major from the top-left (index y * width + x):
## 0 blocked, 1..255 walkable with that terrain cost (1 plain). Sent as msgpack bin.
## [br][param options]: [code]costs[/code] ([PackedFloat32Array], one exact cost >= 1 per
## cell, overriding the bytes on walkable cells), [code]heights[/code]
## ([PackedFloat32Array]), [code]tags[/code] ([PackedByteArray], a byte a cell: kinds of
## ground, 0 untagged), [code]tag_names[/code] ([code]{name: value 1..255}[/code], for requests'
## [code]traversal[/code]), [code]classes[/code] (the map's unit classes,
## [code]{"boat": {"land": null, "shallows": 2.0}}[/code]: a request's
## [code]{"traversal": "boat"}[/code] applies them; null blocks a tag, a number >= 1 multiplies
## its cost), [code]origin[/code]
## ([Vector2], the world position of the grid's top-left corner, default (0, 0)),
## [code]cell_size[/code] (world units a cell, default 1), and [code]timeout_ms[/code]. Float
## arrays go out as bin of little-endian float32 ([method PackedFloat32Array.to_byte_array]:
## every platform Godot runs on is little-endian). The server checks the sizes: a wrong one
## is the error "invalid_request" at "cells" (or "costs", ...).
## [codeblock]
## var cells := PackedByteArray([1, 1, 1, 0, 0, 1, 1, 1, 1])
## var result := await PathServer.put_grid_async("room", Vector2i(3, 3), cells, {"cell_size": 16.0})
## print(result.ok, " gen ", result.info.gen)
## [/codeblock]
func put_grid(name: String, size: Vector2i, cells: PackedByteArray, options := {}) -> int:
	return _put_grid(name, size, cells, options).result.id


## [method put_grid], awaited. The result's [code]info[/code] holds the reply's
## [code]map[/code], [code]gen[/code], [code]width[/code] and [code]height[/code].
func put_grid_async(
	name: String, size: Vector2i, cells: PackedByteArray, options := {}
) -> PathServerResult:
	var pending := _put_grid(name, size, cells, options)
	await _completion(pending)
	return pending.result


## Uploads a [TileMapLayer] as the map [param name] (see [method put_grid]): walkability and
## cost come from its TileSet's custom data layers [code]walkable[/code] and [code]cost[/code],
## else from the tiles' physics polygons (blocked) and navigation polygons (walkable); empty
## cells are blocked ([PathServerTileMapReader] has the rules). The grid covers the layer's
## used rect, in the layer's global coordinates: positions of nodes beside the layer go
## straight into path requests. Square tiles only.
## [br][param options]: [code]walkable_layer[/code], [code]cost_layer[/code] (the custom data
## layers' names), [code]tag_layer[/code] (the custom data layer of the tiles' tags, default
## "tag": see [PathServerTileMapReader]), [code]classes[/code] (the map's unit classes, as
## [method put_grid]'s), [code]empty_walkable[/code] (bool), [code]rect[/code] (a [Rect2i] of layer
## cells instead of the used rect), [code]timeout_ms[/code]. A layer that cannot be read
## (no TileSet, no tiles, tiles that are not squares) fails at once, without a request:
## [code]code[/code] "invalid_request", [code]info.at[/code] "layer", and a message saying why.
## On success [code]info[/code] also holds [code]rect[/code], the layer cells uploaded.
func put_tilemap(name: String, layer: TileMapLayer, options := {}) -> int:
	return _put_tilemap(name, layer, options).result.id


## [method put_tilemap], awaited.
func put_tilemap_async(name: String, layer: TileMapLayer, options := {}) -> PathServerResult:
	var pending := _put_tilemap(name, layer, options)
	await _completion(pending)
	return pending.result


## Asks for the cells of the map [param name] (op [code]get_map[/code]): the whole map, or the
## cells of [param region] (grid cells; it must lie inside the map, else "out_of_bounds"). Works
## for uploaded and file maps alike, live edits included. The answer comes as
## [signal reply_received]; awaited ([method get_map_async]) the result's [code]info[/code]
## holds [code]map[/code], [code]gen[/code], [code]size[/code] ([Vector2i], the whole map's),
## [code]origin[/code] ([Vector2]), [code]cell_size[/code], [code]region[/code] ([Rect2i]),
## [code]cells[/code] ([PackedByteArray] of the region, row-major: 0 blocked, else the cost
## rounded and clamped to 1..255) and, when the map has them, [code]costs[/code] and
## [code]heights[/code] ([PackedFloat32Array]) and [code]tags[/code] ([PackedByteArray]).
func get_map(name: String, region := Rect2i(), options := {}) -> int:
	return _get_map(name, region, options).result.id


## [method get_map], awaited.
## [codeblock]
## var room := await PathServer.get_map_async("room")
## print(room.info.size, " ", room.info.cells)  # (3, 3) [1, 1, 1, 0, 0, 1, 1, 1, 1]
## [/codeblock]
func get_map_async(name: String, region := Rect2i(), options := {}) -> PathServerResult:
	var pending := _get_map(name, region, options)
	await _completion(pending)
	return pending.result


## Stops serving the uploaded map [param name] (op [code]drop_map[/code]); requests already
## in flight on it finish. An unknown name is "unknown_map", a map file's name "conflict".
func drop_map(name: String, options := {}) -> int:
	return _submit("drop_map", {"map": name}, Kind.RAW, options).result.id


## [method drop_map], awaited; [code]info.gen[/code] is the generation dropped.
func drop_map_async(name: String, options := {}) -> PathServerResult:
	var pending := _submit("drop_map", {"map": name}, Kind.RAW, options)
	await _completion(pending)
	return pending.result


## A live edit of the map [param name] (op [code]update[/code]): [param fields] are the op's
## ([code]rects[/code] or [code]cells[/code] ([Array] of [Vector2i] work), [code]solid[/code]
## and/or [code]cost[/code], [code]space[/code]), plus [code]timeout_ms[/code]. With
## [param if_gen] >= 0 the edit applies only if the map's generation is still that one; else
## the result is the error "conflict" and [code]info.gen[/code] the current generation. The
## reply's new [code]gen[/code] emits [signal map_generation_changed].
func update_map(name: String, fields: Dictionary, if_gen := -1) -> int:
	return _update_map(name, fields, if_gen).result.id


## [method update_map], awaited; [code]info.gen[/code] is the map's new generation.
## [codeblock]
## var door := {"cells": [Vector2i(1, 1)], "solid": true}
## var edit := await PathServer.update_map_async("room", door, gen)
## if edit.code == "conflict":
##     print("someone else edited the map; it is at generation ", edit.info.gen)
## [/codeblock]
func update_map_async(name: String, fields: Dictionary, if_gen := -1) -> PathServerResult:
	var pending := _update_map(name, fields, if_gen)
	await _completion(pending)
	return pending.result


# -- queries beyond one path ------------------------------------------------------------------


## [method find_path] to the cheapest of many goals ([param goals], 1 to 4096 points), in one
## search: [code]info.goal_index[/code] says which goal the path reaches (null when none is
## reached: "no_path"). The same as [method find_path] with [code]"goals"[/code] in
## [param options].
func find_path_to_any(
	start: Vector2, goals: PackedVector2Array, unit_size := Vector2i.ONE, options := {}
) -> int:
	return _find_path_to_any(start, goals, unit_size, options).result.id


## [method find_path_to_any], awaited.
## [codeblock]
## var goals := PackedVector2Array([Vector2(60.5, 60.5), Vector2(40.5, 5.5)])
## var nearest := await PathServer.find_path_to_any_async(Vector2(1.5, 1.5), goals)
## print(nearest.info.goal_index, " ", nearest.waypoints[-1])
## [/codeblock]
func find_path_to_any_async(
	start: Vector2, goals: PackedVector2Array, unit_size := Vector2i.ONE, options := {}
) -> PathServerResult:
	var pending := _find_path_to_any(start, goals, unit_size, options)
	await _completion(pending)
	return pending.result


## The movement range (op [code]reachable[/code]): every cell a unit of [param unit_size] at
## [param start] can reach for at most [param budget] (its move costs), cheapest first, the
## start's cell (after snapping) first at cost 0. Fire and forget: the answer comes as
## [signal reply_received]; awaited ([method reachable_async]) the result's [code]info[/code]
## holds [code]cells[/code] (an [code]Array[Vector2i][/code] of grid cells, whatever the space),
## [code]costs[/code] ([PackedFloat32Array], one a cell) and [code]gen[/code].
## [param options]: [member QUERY_OPTIONS].reachable ([code]avoid[/code],
## [code]traversal[/code], ...), "map", "timeout_ms".
func reachable(start: Vector2, budget: float, unit_size := Vector2i.ONE, options := {}) -> int:
	return _reachable(start, budget, unit_size, options).result.id


## [method reachable], awaited.
## [codeblock]
## var grid := {"space": "grid"}
## var area := await PathServer.reachable_async(Vector2(1, 1), 2.0, Vector2i.ONE, grid)
## print(area.info.cells.size(), " cells, the farthest costs ", area.info.costs[-1])
## [/codeblock]
func reachable_async(
	start: Vector2, budget: float, unit_size := Vector2i.ONE, options := {}
) -> PathServerResult:
	var pending := _reachable(start, budget, unit_size, options)
	await _completion(pending)
	return pending.result


## The distance field (Dijkstra map, op [code]field[/code]): each cell's cost to the nearest of
## [param goals] for a unit of [param unit_size], [constant @GDScript.INF] where it cannot stand
## or reach one (or past the option [code]max_cost[/code]). Awaited ([method
## distance_field_async]) the result's [code]info[/code] holds [code]width[/code],
## [code]height[/code], [code]origin[/code] ([Vector2i], the grid cell of the window's top-left:
## option [code]region[/code], a [Rect2i] of grid cells, default the whole map),
## [code]cost[/code] ([PackedFloat32Array], row-major: cell (x, y) of the window at
## [code](y - origin.y) * width + x - origin.x[/code]) and [code]gen[/code].
func distance_field(goals: PackedVector2Array, unit_size := Vector2i.ONE, options := {}) -> int:
	return _distance_field(goals, unit_size, options).result.id


## [method distance_field], awaited.
func distance_field_async(
	goals: PackedVector2Array, unit_size := Vector2i.ONE, options := {}
) -> PathServerResult:
	var pending := _distance_field(goals, unit_size, options)
	await _completion(pending)
	return pending.result


## Steers many units of one [param unit_size] down one field (op [code]next_steps[/code]):
## for each of [param positions], where the unit heads next toward the nearest of
## [param goals]: the neighbouring cell downhill, or with [code]{"lookahead": "los"}[/code] the
## farthest turn of its descent it can see. The server keeps the field (per map generation,
## goals, size and options), so calling this every frame with the same goals costs a lookup per
## unit. Positions go out as one bin of float32 pairs. Awaited ([method next_steps_async]) the
## result's [code]info[/code] holds [code]steps[/code] ([PackedVector2Array] in the request's
## space: world cell centres by default) and [code]remaining[/code] ([PackedFloat32Array], each
## unit's cost to its goal; [constant @GDScript.INF]: it cannot reach one, and its step is its
## own cell; 0: it is on a goal). [PathServerFlowGroup2D] does this every physics frame.
func next_steps(
	goals: PackedVector2Array,
	positions: PackedVector2Array,
	unit_size := Vector2i.ONE,
	options := {}
) -> int:
	return _next_steps(goals, positions, unit_size, options).result.id


## [method next_steps], awaited.
## [codeblock]
## var goal := PackedVector2Array([Vector2(10.5, 2.5)])
## var units := PackedVector2Array([Vector2(2.5, 2.5), Vector2(4.5, 3.5)])
## var steps := await PathServer.next_steps_async(goal, units)
## print(steps.info.steps, " ", steps.info.remaining)
## [/codeblock]
func next_steps_async(
	goals: PackedVector2Array,
	positions: PackedVector2Array,
	unit_size := Vector2i.ONE,
	options := {}
) -> PathServerResult:
	var pending := _next_steps(goals, positions, unit_size, options)
	await _completion(pending)
	return pending.result


## Would placing this cut the way (op [code]check_block[/code])? Without changing the map:
## would making [param cells] and [param rects] solid (in the request's space, as
## [method update_map]'s) disconnect any two of [param points] for a unit of
## [param unit_size]? Awaited ([method check_block_async]) the result's
## [code]info.disconnected[/code] lists the pairs [code][i, j][/code] (i < j) connected now and
## not after; empty: the placement cuts nothing. Fast enough to ask on every mouse move.
## [param cells]: [Vector2] or [Vector2i] points; [param rects]: [Rect2] or [Rect2i].
func check_block(
	cells: Array, rects: Array, points: PackedVector2Array, unit_size := Vector2i.ONE, options := {}
) -> int:
	return _check_block(cells, rects, points, unit_size, options).result.id


## [method check_block], awaited.
## [codeblock]
## var door := [Vector2(50, 56)]
## var ends := PackedVector2Array([Vector2(1, 1), Vector2(60, 60)])
## var cut := await PathServer.check_block_async(door, [], ends, Vector2i.ONE, {"space": "grid"})
## print(cut.info.disconnected)
## [/codeblock]
func check_block_async(
	cells: Array, rects: Array, points: PackedVector2Array, unit_size := Vector2i.ONE, options := {}
) -> PathServerResult:
	var pending := _check_block(cells, rects, points, unit_size, options)
	await _completion(pending)
	return pending.result


## Forgets a request made with [method find_path], [method find_paths] or [method request]:
## no signal is emitted for it and a late reply is ignored.
func cancel(id: int) -> void:
	var pending: PathServerConnection.Pending = _connection.pending.get(id)
	if pending == null:
		return
	_connection.pending.erase(id)
	var cancelled := PathServerReplies.client_error("cancelled", "cancelled by the caller", id)
	PathServerReplies.read_error(pending.result, cancelled)
	pending.finish()


## Advances the connection and delivers replies. [method _process] calls it every frame; call it
## yourself only when this node is not in the scene tree.
func poll() -> void:
	var began := _timing_begin()
	_poll_queued = false
	var now := Time.get_ticks_msec()
	_connection.release_held()
	if not _local_replies.is_empty():
		var answered := _local_replies
		_local_replies = []
		for pending in answered:
			_complete(pending, pending.local_reply)
	if _server.pid > 0:
		_server.poll(now)
	if _connection.active:
		_connection.poll(now, endpoint)
	_expire(now)
	_timing_end(began)


## The time this client has spent in [method poll] and in synchronous calls since it started,
## in microseconds: reading, decoding and handing out replies (with the signal handlers and
## awaits they resume), waiting on the spot. With the time the request methods take to
## encode and send, what pathserver costs the game's main thread.
func get_main_thread_usec() -> int:
	return _main_thread_usec


## Starts [code]pathserver serve --bind tcp://127.0.0.1:PORT [--maps DIR] [ARGS][/code] from
## the project settings as a child process (PORT [code]*[/code], a free port, unless the port
## setting names one): the platform's bundle or [code]COMMAND -m pathserver[/code], as the
## mode setting says ([constant EMBEDDED_MODES]). Its progress lines show in the output; the
## client connects when its ready line names the endpoint, and requests made meanwhile wait
## for it. Returns the process id, or -1 (then [signal embedded_server_failed] says why).
func start_embedded_server() -> int:
	return _server.start()


## Stops the embedded server, if this client started one. Requests in flight wait (within
## their timeout) for a server to come back.
func stop_embedded_server() -> void:
	_server.stop()


## The id of the embedded server's process, or -1.
func get_embedded_server_pid() -> int:
	return _server.pid


## Whether the embedded server is starting, running or failed; see [enum ServerState].
func get_embedded_server_state() -> ServerState:
	return _server.state


## The embedded server's last output lines (stdout and stderr, as they came).
func get_embedded_server_log() -> PackedStringArray:
	return _server.output


func _find_path(
	start: Vector2, goal: Vector2, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var fields := PathServerRequests.path(map_name, start, goal, unit_size, options)
	return _submit("path", fields, Kind.PATH, options)


func _find_paths(
	requests: Array, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var fields := PathServerRequests.paths(map_name, requests, unit_size, options)
	return _submit("paths", fields, Kind.PATHS, options)


func _put_grid(
	name: String, size: Vector2i, cells: PackedByteArray, options: Dictionary
) -> PathServerConnection.Pending:
	var fields := PathServerRequests.put_map(name, size, cells, options)
	return _submit("put_map", fields, Kind.RAW, options)


func _put_tilemap(
	name: String, layer: TileMapLayer, options: Dictionary
) -> PathServerConnection.Pending:
	var grid := PathServerRequests.read_tilemap(layer, options)
	if grid.error != "":
		# Answered at the next poll, so that its signal comes after the caller has its id.
		var pending := _new_pending(Kind.RAW)
		var error := PathServerReplies.client_error(
			"invalid_request", grid.error, pending.result.id
		)
		error.error.at = grid.at
		pending.local_reply = error
		_local_replies.append(pending)
		return pending
	var uploaded := _put_grid(name, grid.size, grid.cells, grid.upload)
	uploaded.extra_info = {"rect": grid.rect}
	return uploaded


func _get_map(name: String, region: Rect2i, options: Dictionary) -> PathServerConnection.Pending:
	return _submit("get_map", PathServerRequests.get_map(name, region, options), Kind.MAP, options)


func _update_map(name: String, fields: Dictionary, if_gen: int) -> PathServerConnection.Pending:
	return _submit("update", PathServerRequests.update(name, fields, if_gen), Kind.RAW, fields)


func _find_path_to_any(
	start: Vector2, goals: PackedVector2Array, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var with_goals := options.duplicate()
	with_goals["goals"] = goals
	return _find_path(start, Vector2.ZERO, unit_size, with_goals)


func _reachable(
	start: Vector2, budget: float, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var fields := PathServerRequests.reachable(map_name, start, budget, unit_size, options)
	return _submit("reachable", fields, Kind.QUERY, options)


func _distance_field(
	goals: PackedVector2Array, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var fields := PathServerRequests.field(map_name, goals, unit_size, options)
	return _submit("field", fields, Kind.QUERY, options)


func _next_steps(
	goals: PackedVector2Array,
	positions: PackedVector2Array,
	unit_size: Vector2i,
	options: Dictionary
) -> PathServerConnection.Pending:
	var fields := _requests.next_steps(map_name, goals, positions, unit_size, options)
	return _submit("next_steps", fields, Kind.QUERY, options)


func _check_block(
	cells: Array, rects: Array, points: PackedVector2Array, unit_size: Vector2i, options: Dictionary
) -> PathServerConnection.Pending:
	var fields := PathServerRequests.check_block(map_name, cells, rects, points, unit_size, options)
	return _submit("check_block", fields, Kind.QUERY, options)


func _submit(
	op: String, fields: Dictionary, kind: Kind, options := {}
) -> PathServerConnection.Pending:
	var pending := _new_pending(kind)
	pending.body_map = str(fields.get("map", ""))
	pending.body = PathServerRequests.body(pending.result.id, op, fields)
	pending.bytes = PathServerMsgPack.encode(pending.body)
	var wait_ms: int = options.get("timeout_ms", timeout_ms)
	pending.deadline_ms = Time.get_ticks_msec() + wait_ms
	pending.timeout_ms = wait_ms
	# Queued at once when connected, written by the poll at the end of this frame (the requests
	# of a frame in one write), which also hands out the replies that came by then; a
	# synchronous call writes at once. Only poll() hands replies out (a synchronous call, its
	# own), so none comes before the caller awaits it.
	_connection.add(pending)
	if not _poll_queued:
		_poll_queued = true
		poll.call_deferred()
	return pending


func _new_pending(kind: Kind) -> PathServerConnection.Pending:
	var pending := PathServerConnection.Pending.new()
	pending.kind = kind
	pending.result.id = _next_id
	_next_id += 1
	return pending


## Resumes when [param pending] completed (at once when it already has): what the
## [code]_async[/code] methods await.
func _completion(pending: PathServerConnection.Pending) -> void:
	if not pending.done:
		await pending.finished


## Waits for [param pending] on the spot, looking at the socket until its reply came or its
## timeout passed: what the synchronous calls block on.
func _wait_now(pending: PathServerConnection.Pending) -> void:
	var timing := _timing_begin()
	_sync_result = pending.result
	var outer := _connection.hold_for
	_connection.hold_for = pending.result.id
	var began := Time.get_ticks_usec()
	var deadline := began + pending.timeout_ms * 1000
	while not pending.done:
		var now := Time.get_ticks_usec()
		if now >= deadline or not (_connection.active or _server.state == ServerState.STARTING):
			break
		if now - began > SYNC_SPIN_USEC:
			OS.delay_usec(SYNC_SLEEP_USEC)
		if _server.pid > 0:
			_server.poll(now / 1000)
		if _connection.active:
			_connection.poll(now / 1000, endpoint)
	_connection.hold_for = outer
	if not pending.done:
		_connection.pending.erase(pending.result.id)
		var message := "no reply from %s within %d ms, waited for" % [endpoint, pending.timeout_ms]
		_complete(
			pending, PathServerReplies.client_error("timeout", message, pending.result.id, true)
		)
	if outer != 0:
		# Called from a handler while another call waited: the outer one's reply may be held.
		_connection.release_held()
	elif not _connection.held.is_empty() and not _poll_queued:
		_poll_queued = true
		poll.call_deferred()
	_timing_end(timing)


## Time spent inside another timed span (a handler polling) is counted once, by the outer one.
func _timing_begin() -> int:
	_timing_depth += 1
	return Time.get_ticks_usec()


func _timing_end(began: int) -> void:
	_timing_depth -= 1
	if _timing_depth == 0:
		_main_thread_usec += Time.get_ticks_usec() - began


## The embedded server's ready line came: what waited for it gets its whole timeout from now.
func _on_server_started(server_endpoint: String) -> void:
	_connection.restart_deadlines(Time.get_ticks_msec())
	embedded_server_started.emit(server_endpoint)
	connect_to_server(server_endpoint)


## Nothing listens any more: stop reconnecting, fail what waits for this server.
func _on_server_failed(message: String) -> void:
	_connection.stop("the embedded server failed")
	embedded_server_failed.emit(message)
	_expire(Time.get_ticks_msec())


func _expire(now: int) -> void:
	if _server.state == ServerState.STARTING:
		# Requests wait for the embedded server's ready line; their timeout starts then.
		return
	var failed := _server.state == ServerState.FAILED and not _connection.active
	_connection.expire(now, endpoint, _server.failure if failed else "")


func _complete(pending: PathServerConnection.Pending, reply: Dictionary) -> void:
	var result := pending.result
	match pending.kind:
		Kind.PATH:
			_replies.read_path(result, reply, pending.body)
			if result.ok:
				path_found.emit(result.id, result.waypoints, result.info)
			else:
				path_failed.emit(result.id, result.code, result.message)
		Kind.PATHS:
			_replies.read_batch(result, pending.batch, pending.body, reply)
			if result.ok:
				paths_completed.emit(result.id, pending.batch)
			else:
				path_failed.emit(result.id, result.code, result.message)
		Kind.RAW:
			_replies.read_fields(result, reply, pending.extra_info)
			_replies.note_generation(reply, pending.body_map)
			reply_received.emit(result.id, reply)
		Kind.MAP:
			_replies.read_map(result, reply)
			_replies.note_generation(reply, pending.body_map)
			reply_received.emit(result.id, reply)
		Kind.QUERY:
			_replies.read_query(result, reply, pending.body.op)
			_replies.note_generation(reply, pending.body_map)
			reply_received.emit(result.id, reply)
	pending.finish()
