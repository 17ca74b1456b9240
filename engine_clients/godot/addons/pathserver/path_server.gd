# gdlint: disable=max-public-methods
# (Games call every public method here: the client's API is one class, as AStarGrid2D's is.)
class_name PathServerClient
extends Node
## A client for pathserver, the grid pathfinding service. The plugin registers one as the
## autoload [code]PathServer[/code]; more can be created with [code]PathServerClient.new()[/code].
##
## Each request has two forms: [code]await[/code] the [code]_async[/code] method for its
## [PathServerResult] (an Array of them for a batch), or call the plain method, which returns
## the request id at once; the answer then comes as a signal with that id, awaited or not.
## The [code]_sync[/code] methods wait on the spot instead, blocking the frame.
##
## A path query that finds no path is an answer, not a failure: [signal path_found] with empty
## waypoints and [code]info.status == "no_path"[/code]. Positions are world coordinates; pass
## [code]{"space": "grid"}[/code] in [param options] for cells. Network work happens in
## [method poll], once a frame; a dropped connection is reopened with back-off and what was in
## flight sent again.
##
## On a map of several floors (see [method put_tilemap]) a point is a [Vector3] (or
## [Vector3i]) [code](x, y, floor)[/code]; a [Vector2] is on floor 0. A path's waypoints stay
## [Vector2]s, with their floors in [member PathServerResult.floors] and the links it takes
## (ladders, stairs, teleporters) in [member PathServerResult.links].
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

## Emitted for every completed [method find_path] query: [code]info.status[/code] is "found",
## "partial" (with [code]allow_partial[/code]) or "no_path" ([param waypoints] empty). [param info]
## holds the reply's fields besides the path (status, cost, length, expanded, start and goal
## as [Vector2], start_snapped, goal_snapped, gen, ...) plus the request's map and unit_size.
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
## How a synchronous call waits: see [method PathServerConnection.wait_for].
const SYNC_SPIN_USEC := PathServerConnection.SYNC_SPIN_USEC
const SYNC_SLEEP_USEC := PathServerConnection.SYNC_SLEEP_USEC
const SYNC_POLL_USEC := PathServerConnection.SYNC_POLL_USEC

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
var _replies := PathServerReplies.new()
var _calls := PathServerCalls.new(self, _connection)
var _sync_result := PathServerResult.new()
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


## Waits for the connection: [code]await PathServer.wait_connected()[/code] is true at once
## when connected, else when it connects; false when [param max_wait_ms] (default
## [member timeout_ms], not counting an embedded server's start) passes first, when the
## embedded server fails, or on [method disconnect_from_server].
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


## The floors of the map [param name] as this client knows them: 1 unless it uploaded the map
## with more or a reply ([code]get_map[/code], [code]maps[/code], a path) said so.
func get_floors(name: String) -> int:
	return _replies.floors_of(name)


## The links of the map [param name] as this client last uploaded ([method put_tilemap],
## [method update_map]) or read ([method get_map]) them, the wire's dictionaries
## ([code]{"from", "to", "cost", "two_way", "tag"}[/code]) in the map's order: what a path's
## [member PathServerResult.links] index. Empty when it knows none.
func get_links(name: String) -> Array:
	return _replies.links_of(name)


## Asks for a path from [param start] to [param goal] for a unit whose footprint is
## [param unit_size] cells; returns the request id. The answer comes as [signal path_found] or
## [signal path_failed]. [param options]: any of [member PATH_OPTIONS], "map", "timeout_ms";
## with [code]"goals"[/code], [param goal] is ignored (see [method find_path_to_any]).
## [code]"avoid"[/code] ([code]{"cells": [Vector2i, ...], "rects": [Rect2i, ...]}[/code], cells
## also as a [PackedInt32Array] of x, y pairs) blocks grid cells for this request only, or
## prices them with [code]"avoid_cost"[/code]; [code]"traversal"[/code] names a unit class of
## the map or gives its rules ([code]{"water": null, "forest": 3.0}[/code]).
## [param start] and [param goal] are [Vector2]s, or on a map of several floors [Vector3]s
## [code](x, y, floor)[/code]: the answer's [code]floors[/code] and [code]links[/code] then
## say where the path changes floor (see [PathServerResult]).
func find_path(start: Variant, goal: Variant, unit_size := Vector2i.ONE, options := {}) -> int:
	return _calls.find_path(start, goal, unit_size, options).result.id


## [method find_path], awaited: [code]var result := await PathServer.find_path_async(a, b)[/code]
## returns its [PathServerResult] (the signals are emitted too).
func find_path_async(
	start: Variant, goal: Variant, unit_size := Vector2i.ONE, options := {}
) -> PathServerResult:
	var pending := _calls.find_path(start, goal, unit_size, options)
	await _completion(pending)
	return pending.result


## Asks for many paths in one round trip. [param requests] holds [code][start, goal][/code]
## pairs or Dictionaries [code]{"start": Vector2, "goal": Vector2, ...}[/code] with per-request
## options. The answer comes as [signal paths_completed] with one [PathServerResult] each; if the
## whole batch is refused, [signal path_failed] with the batch id.
func find_paths(requests: Array, unit_size := Vector2i.ONE, options := {}) -> int:
	return _calls.find_paths(requests, unit_size, options).result.id


## [method find_paths], awaited: returns an Array of [PathServerResult], one per request in
## order (each failed one with its error when the whole batch was refused).
func find_paths_async(requests: Array, unit_size := Vector2i.ONE, options := {}) -> Array:
	var pending := _calls.find_paths(requests, unit_size, options)
	await _completion(pending)
	return pending.batch


## [method find_path], waited for on the spot (blocking the frame, at most the timeout), as
## [method AStarGrid2D.get_point_path] answers: the waypoints, empty for "no_path" and on
## errors ([method get_last_sync_result] says which). Other replies wait until it returns.
func find_path_sync(
	start: Variant, goal: Variant, unit_size := Vector2i.ONE, options := {}
) -> PackedVector2Array:
	return _find_path_now(start, goal, unit_size, options).waypoints


## [method find_path_sync] between cells, as [method AStarGrid2D.get_id_path] answers: the
## path's cells, start and goal included (grid space whatever [param options] say); cells on
## a floor are [Vector3i], and their floors are the last sync result's.
func find_id_path_sync(
	start: Variant, goal: Variant, unit_size := Vector2i.ONE, options := {}
) -> Array[Vector2i]:
	var grid := options
	if options.get("space") != "grid":
		grid = options.duplicate()
		grid["space"] = "grid"
	return _find_path_now(start, goal, unit_size, grid).get_cells()


## [method find_paths], waited for on the spot (see [method find_path_sync]): an Array of
## [PathServerResult], one per request in order.
func find_paths_sync(requests: Array, unit_size := Vector2i.ONE, options := {}) -> Array:
	var pending := _calls.find_paths(requests, unit_size, options)
	_wait_now(pending)
	return pending.batch


## The outcome of the last synchronous call ([method find_path_sync], ...): its status
## ("found", "partial", "no_path") or, when not [member PathServerResult.ok], its error.
func get_last_sync_result() -> PathServerResult:
	return _sync_result


## Sends any other op ("maps", "stats", "ping", "update") with [param fields]; the reply comes
## as [signal reply_received]. Returns the request id.
func request(op: String, fields := {}) -> int:
	return _calls.submit(op, fields, Kind.RAW).result.id


## [method request], awaited. The result's [member PathServerResult.reply] is the server's
## reply; [member PathServerResult.ok] and [member PathServerResult.code] tell how it went.
func request_async(op: String, fields := {}) -> PathServerResult:
	var pending := _calls.submit(op, fields, Kind.RAW)
	await _completion(pending)
	return pending.result


## Uploads a map of [param size] cells as [param name] (op [code]put_map[/code]), replacing
## an upload of that name; returns the request id, answered by [signal reply_received].
## [param cells]: a byte a cell, row-major: 0 blocked, 1..255 walkable with that cost.
## [param options]: [code]costs[/code] and [code]heights[/code] ([PackedFloat32Array], a value
## a cell), [code]tags[/code] ([PackedByteArray]), [code]tag_names[/code]
## ([code]{name: 1..255}[/code]), [code]classes[/code] (unit classes,
## [code]{"boat": {"land": null, "shallows": 2.0}}[/code]), [code]origin[/code] ([Vector2]),
## [code]cell_size[/code], [code]timeout_ms[/code]; for a hex map [code]shape[/code] "hex",
## its [code]layout[/code] ("odd-r", "even-r", "odd-q", "even-q") and [code]cell_size[/code]
## a number or a [Vector2], the tile size (see [PathServerHexes]).
func put_grid(name: String, size: Vector2i, cells: PackedByteArray, options := {}) -> int:
	return _calls.put_grid(name, size, cells, options).result.id


## [method put_grid], awaited. The result's [code]info[/code] holds the reply's
## [code]map[/code], [code]gen[/code], [code]width[/code] and [code]height[/code].
func put_grid_async(
	name: String, size: Vector2i, cells: PackedByteArray, options := {}
) -> PathServerResult:
	var pending := _calls.put_grid(name, size, cells, options)
	await _completion(pending)
	return pending.result


## Uploads a [TileMapLayer]'s used rect as the map [param name] (see [method put_grid]), in
## the layer's global coordinates; [PathServerTileMapReader] has the rules and the
## [param options] besides [code]classes[/code] and [code]timeout_ms[/code]. A layer that
## cannot be read fails at once with "invalid_request" at "layer". On success
## [code]info.rect[/code] is the layer cells uploaded and [code]info.mapping[/code] converts
## layer cells to the map's cells and back ([PathServerTileMapReader.Mapping]). A layer of
## hexagon tiles uploads a hex map ([code]shape[/code] "hex", its [code]layout[/code]).
## [param layer] may be an Array of layers, the floors of a map of several (floor 0 first;
## see [method PathServerTileMapReader.read_floors]); [code]links[/code] in [param options]
## go with the upload ([code][{"from": Vector3i, "to": Vector3i, "cost": 2.0, "two_way":
## false, "tag": "ladder"}, ...][/code], grid cells; [PathServerLink2D] builds them).
func put_tilemap(name: String, layer: Variant, options := {}) -> int:
	return _calls.put_tilemap(name, layer, options).result.id


## [method put_tilemap], awaited.
func put_tilemap_async(name: String, layer: Variant, options := {}) -> PathServerResult:
	var pending := _calls.put_tilemap(name, layer, options)
	await _completion(pending)
	return pending.result


## Asks for the cells of the map [param name] (op [code]get_map[/code]): the whole map, or
## [param region] (grid cells inside the map). Awaited ([method get_map_async]),
## [code]info[/code] holds [code]map[/code], [code]gen[/code], [code]size[/code],
## [code]origin[/code], [code]cell_size[/code], [code]region[/code], [code]cells[/code]
## ([PackedByteArray]) and, when the map has them, [code]costs[/code], [code]heights[/code]
## and [code]tags[/code]; [code]shape[/code] ("square" or "hex") and [code]layout[/code]
## ("" on square maps); on hex maps [code]cell_size[/code] is a [Vector2], the tile size.
## [code]floors[/code] (1 on a map of one floor; the layers hold the region's cells on each
## floor, floor 0 first) and [code]links[/code] (the map's links as the wire has them).
func get_map(name: String, region := Rect2i(), options := {}) -> int:
	return _calls.get_map(name, region, options).result.id


## [method get_map], awaited.
func get_map_async(name: String, region := Rect2i(), options := {}) -> PathServerResult:
	var pending := _calls.get_map(name, region, options)
	await _completion(pending)
	return pending.result


## Stops serving the uploaded map [param name] (op [code]drop_map[/code]); requests already
## in flight on it finish. An unknown name is "unknown_map", a map file's name "conflict".
func drop_map(name: String, options := {}) -> int:
	return _calls.submit("drop_map", {"map": name}, Kind.RAW, options).result.id


## [method drop_map], awaited; [code]info.gen[/code] is the generation dropped.
func drop_map_async(name: String, options := {}) -> PathServerResult:
	var pending := _calls.submit("drop_map", {"map": name}, Kind.RAW, options)
	await _completion(pending)
	return pending.result


## A live edit of the map [param name] (op [code]update[/code]): [param fields] are the op's
## ([code]rects[/code] or [code]cells[/code], [code]solid[/code] and/or [code]cost[/code],
## [code]space[/code], [code]links[/code]: the map's whole new list of links, [code][][/code]
## for none) plus [code]timeout_ms[/code]. With [param if_gen] >= 0 it applies only
## at that generation, else the result is "conflict" with the current [code]info.gen[/code].
func update_map(name: String, fields: Dictionary, if_gen := -1) -> int:
	return _calls.update_map(name, fields, if_gen).result.id


## [method update_map], awaited; [code]info.gen[/code] is the map's new generation.
## [codeblock]
## var door := {"cells": [Vector2i(1, 1)], "solid": true}
## var edit := await PathServer.update_map_async("room", door, gen)
## if edit.code == "conflict":
##     print("someone else edited the map; it is at generation ", edit.info.gen)
## [/codeblock]
func update_map_async(name: String, fields: Dictionary, if_gen := -1) -> PathServerResult:
	var pending := _calls.update_map(name, fields, if_gen)
	await _completion(pending)
	return pending.result


# -- queries beyond one path ------------------------------------------------------------------


## [method find_path] to the cheapest of [param goals] (1 to 4096 points) in one search:
## [code]info.goal_index[/code] says which goal the path reaches (null for "no_path").
func find_path_to_any(
	start: Variant, goals: Variant, unit_size := Vector2i.ONE, options := {}
) -> int:
	return _calls.find_path_to_any(start, goals, unit_size, options).result.id


## [method find_path_to_any], awaited.
func find_path_to_any_async(
	start: Variant, goals: Variant, unit_size := Vector2i.ONE, options := {}
) -> PathServerResult:
	var pending := _calls.find_path_to_any(start, goals, unit_size, options)
	await _completion(pending)
	return pending.result


## The movement range (op [code]reachable[/code]): every cell a unit at [param start] reaches
## for at most [param budget], cheapest first. Awaited ([method reachable_async]),
## [code]info.cells[/code] ([code]Array[Vector2i][/code]) and [code]info.costs[/code]
## ([PackedFloat32Array]); on a map of several floors [code]info.floors[/code] has each
## cell's floor (else it is empty). [param options]: [code]QUERY_OPTIONS.reachable[/code],
## "map", "timeout_ms".
func reachable(start: Variant, budget: float, unit_size := Vector2i.ONE, options := {}) -> int:
	return _calls.reachable(start, budget, unit_size, options).result.id


## [method reachable], awaited.
func reachable_async(
	start: Variant, budget: float, unit_size := Vector2i.ONE, options := {}
) -> PathServerResult:
	var pending := _calls.reachable(start, budget, unit_size, options)
	await _completion(pending)
	return pending.result


## The distance field (op [code]field[/code]): each cell's cost to the nearest of
## [param goals], [constant @GDScript.INF] where none is reached. Awaited
## ([method distance_field_async]), [code]info[/code] holds [code]width[/code],
## [code]height[/code], [code]origin[/code] (the window's top-left cell; option
## [code]region[/code]) and [code]cost[/code] ([PackedFloat32Array], row-major; on a map of
## several floors, [code]info.floors[/code] windows one after the other, floor 0 first).
## [param goals]: a [PackedVector2Array], or an Array holding points on floors ([Vector3]).
func distance_field(goals: Variant, unit_size := Vector2i.ONE, options := {}) -> int:
	return _calls.distance_field(goals, unit_size, options).result.id


## [method distance_field], awaited.
func distance_field_async(
	goals: Variant, unit_size := Vector2i.ONE, options := {}
) -> PathServerResult:
	var pending := _calls.distance_field(goals, unit_size, options)
	await _completion(pending)
	return pending.result


## Steers many units down one field (op [code]next_steps[/code]): for each of
## [param positions], where it heads next toward the nearest of [param goals]. Awaited
## ([method next_steps_async]), [code]info.steps[/code] ([PackedVector2Array]) and
## [code]info.remaining[/code] ([PackedFloat32Array], [constant @GDScript.INF] when a unit
## cannot reach a goal). [PathServerFlowGroup2D] calls it every physics frame. On a map of
## several floors [param positions] may be a [PackedVector3Array] (z the floor), and
## [code]info.floors[/code] has each step's floor.
func next_steps(
	goals: Variant, positions: Variant, unit_size := Vector2i.ONE, options := {}
) -> int:
	return _calls.next_steps(goals, positions, unit_size, options).result.id


## [method next_steps], awaited.
func next_steps_async(
	goals: Variant, positions: Variant, unit_size := Vector2i.ONE, options := {}
) -> PathServerResult:
	var pending := _calls.next_steps(goals, positions, unit_size, options)
	await _completion(pending)
	return pending.result


## Would making [param cells] ([Vector2] or [Vector2i]) and [param rects] ([Rect2] or
## [Rect2i]) solid disconnect any two of [param points]? (op [code]check_block[/code]; the map
## is not changed.) Awaited ([method check_block_async]), [code]info.disconnected[/code] lists
## the pairs [code][i, j][/code] cut apart; empty: none.
func check_block(
	cells: Array, rects: Array, points: Variant, unit_size := Vector2i.ONE, options := {}
) -> int:
	return _calls.check_block(cells, rects, points, unit_size, options).result.id


## [method check_block], awaited.
func check_block_async(
	cells: Array, rects: Array, points: Variant, unit_size := Vector2i.ONE, options := {}
) -> PathServerResult:
	var pending := _calls.check_block(cells, rects, points, unit_size, options)
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
	_calls.poll_queued = false
	var now := Time.get_ticks_msec()
	_connection.release_held()
	if not _calls.local_replies.is_empty():
		var answered := _calls.local_replies
		_calls.local_replies = []
		for pending in answered:
			_complete(pending, pending.local_reply)
	if _server.pid > 0:
		_server.poll(now)
	if _connection.active:
		_connection.poll(now, endpoint)
	_expire(now)
	_timing_end(began)


## The time this client has spent in [method poll] and in synchronous calls, in microseconds
## (with the signal handlers and awaits they resume): what it costs the game's main thread
## besides the request methods themselves.
func get_main_thread_usec() -> int:
	return _main_thread_usec


## Starts [code]pathserver serve --bind tcp://127.0.0.1:PORT [--maps DIR] [ARGS][/code] as a
## child process, as the embedded_server project settings say (PORT: a free one unless set;
## the bundle or Python: [constant EMBEDDED_MODES]). The client connects when its ready line
## comes; requests made meanwhile wait for it. Returns the process id, or -1 (then
## [signal embedded_server_failed] says why).
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


## Resumes when [param pending] completed (at once when it already has): what the
## [code]_async[/code] methods await.
func _completion(pending: PathServerConnection.Pending) -> void:
	if not pending.done:
		await pending.finished


## A synchronous path call's result: [method PathServerCalls.find_path_now], then waited for
## as any synchronous call when that did not complete it.
func _find_path_now(
	start: Variant, goal: Variant, unit_size: Vector2i, options: Dictionary
) -> PathServerResult:
	var timing := _timing_begin()
	var outcome: Variant = _calls.find_path_now(start, goal, unit_size, options, _replies)
	var result: PathServerResult
	if outcome is PathServerResult:
		result = outcome
		_sync_result = result
		if path_found.has_connections():
			path_found.emit(result.id, result.waypoints, result.info)
		if not _connection.held.is_empty():
			_calls.queue_poll()
	else:
		result = outcome.result
		_wait_now(outcome)
	_timing_end(timing)
	return result


## Waits for [param pending] on the spot, looking at the socket until its reply came or its
## timeout passed: what the synchronous calls block on.
func _wait_now(pending: PathServerConnection.Pending) -> void:
	var timing := _timing_begin()
	_sync_result = pending.result
	_connection.wait_for(pending, endpoint, _server)
	if _connection.hold_for == 0 and not _connection.held.is_empty():
		_calls.queue_poll()
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
			_replies.read_fields(result, reply, pending.extra_info, pending.body)
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
