class_name PathServerAgent2D
extends Node
## Follows paths from pathserver, like [NavigationAgent2D]: give it a target position or node;
## it asks for a path for its unit size, moves its parent [Node2D] along the waypoints at
## [member speed], and asks again when the map's generation changes (a reload or a live
## obstacle edit) and when the target moves: at once when it moved more than
## [member repath_distance] from the path's goal, else at the end of the current path, so the
## unit always ends on the latest target. A stopped or arrived agent asks at once.
##
## Signals, for one target: [signal path_changed] for each path (the first, and every new one
## after a repath), then [signal target_reached] once, when the unit stands at the end of a
## complete path to the current target. When the server answers "no_path",
## [signal path_changed] comes with empty waypoints: the unit stands still until the target
## moves more than [member repath_distance] or the map changes. [signal path_failed] instead of
## [signal path_changed] on errors (a timeout, an unknown map, ...). The client's
## [signal PathServerClient.path_found] for the agent's request comes just before
## [signal path_changed].
##
## On a map of several floors the unit is on [member current_floor] and goes to
## [member target_floor]: its requests carry [code](x, y, floor)[/code] points, and
## [member current_floor] follows the path's floors as the unit passes its waypoints
## ([signal floor_changed]). Where the path takes a link (a [PathServerLink2D]: stairs, a
## ladder, a drop), [signal link_reached] comes as the unit stands at the link's start, then
## the unit moves on to its end, as along any other step: play the crossing's animation
## there.
##
## Add it as a child of the unit. With [member move_body] off it only steers: read
## [member velocity] or [method get_next_path_position] and move the body yourself (e.g. a
## [CharacterBody2D] with [code]move_and_slide()[/code]).
## [codeblock]
## @onready var agent: PathServerAgent2D = $PathServerAgent2D
##
## func _ready() -> void:
##     agent.target_reached.connect(func() -> void: print("arrived"))
##     agent.target_node = $"../Player"
## [/codeblock]

## A new path arrived and is being followed (start and goal included); empty when the server
## answered "no_path" (the unit stands still).
signal path_changed(waypoints: PackedVector2Array)
## The unit reached the end of a complete path to the target.
signal target_reached
## The request failed ("timeout", "unknown_map", ...; never "no_path", which is an answer).
## The agent asks again after [member retry_interval], or sooner when the target moves more
## than [member repath_distance].
signal path_failed(code: String, message: String)
## The unit stands at the start of a link its path takes next: link [param index] of the map
## (see [method PathServerClient.get_links], fetched when the client does not know them), its
## [param tag] ("" when untagged or not known yet), from [param from] to [param to] (world
## coordinates, the waypoints at its ends).
signal link_reached(index: int, tag: String, from: Vector2, to: Vector2)
## The unit passed onto another floor (a waypoint of the path on [param new_floor]).
signal floor_changed(new_floor: int)

## Follow this node's position (takes precedence over [member target_position]).
@export var target_node: Node2D:
	set = set_target_node
## The point to reach, in world coordinates.
@export var target_position := Vector2.ZERO:
	set = set_target_position
## The floor the unit is on (maps of several floors; it follows the path as the unit walks).
@export_range(0, 15) var current_floor := 0
## The floor of the point to reach.
@export_range(0, 15) var target_floor := 0:
	set = set_target_floor
## The unit's footprint in cells.
@export var unit_size := Vector2i.ONE
## World units per second.
@export var speed := 120.0
## How close to a waypoint counts as being on it.
@export var arrival_distance := 1.0
## Ask for a new path at once when the target is further than this from the current path's
## goal; a smaller move is picked up at the end of the current path.
@export var repath_distance := 16.0
## After a failed request, ask again after this many seconds.
@export var retry_interval := 1.0
## The map to path on; empty uses the client's [member PathServerClient.map_name].
@export var map_name := ""
## Extra options for every path request, e.g. [code]{"smooth": "corners"}[/code].
@export var path_options := {}
## Move the parent (or [member body]) along the path; turn off to steer a body yourself.
@export var move_body := true

## The node moved along the path; the parent when not set.
var body: Node2D
## The client to ask; the [code]PathServer[/code] autoload when not set.
var client: PathServerClient
## The path being followed, start and goal included.
var waypoints := PackedVector2Array()
## The velocity the agent wants this physics frame (world units per second).
var velocity := Vector2.ZERO
## The links the path takes, [code][[i, k], ...][/code]: from waypoint i, link k of the map
## (see [member PathServerResult.links]).
var path_links: Array = []

var _has_target := false
var _index := 0
var _path_goal := Vector2.INF
var _path_complete := false
var _reached := false
## A request is in flight; [member _asked] numbers them, so a stale answer is ignored.
var _asking := false
var _asked := 0
var _dirty := true
var _retry_at_ms := 0
## The floors of [member waypoints] (empty on a map of one floor), and waypoint -> link taken.
var _floors := PackedInt32Array()
var _links_at := {}
var _path_map := ""


func _ready() -> void:
	if body == null:
		body = get_parent() as Node2D
	if client == null:
		client = get_node_or_null("/root/PathServer") as PathServerClient
	if client == null:
		push_error("PathServerAgent2D: no client. Enable the PathServer plugin or set `client`.")
		return
	client.map_generation_changed.connect(_on_map_generation_changed)


func _physics_process(delta: float) -> void:
	if body == null or client == null or not _has_target:
		velocity = Vector2.ZERO
		return
	var target := get_target()
	if _needs_path(target):
		_ask(target)
	_follow(delta)


func set_target_position(value: Vector2) -> void:
	target_position = value
	_has_target = true
	if not value.is_equal_approx(_path_goal):
		_reached = false


func set_target_floor(value: int) -> void:
	if value != target_floor:
		_reached = false
		_dirty = true
	target_floor = value


func set_target_node(value: Node2D) -> void:
	if value != target_node:
		_reached = false
	target_node = value
	_has_target = true


## The point being chased: [member target_node]'s position when set, else
## [member target_position].
func get_target() -> Vector2:
	if is_instance_valid(target_node):
		return target_node.global_position
	return target_position


## The waypoint the unit is heading to (its own position when not moving).
func get_next_path_position() -> Vector2:
	if _index < waypoints.size():
		return waypoints[_index]
	return body.global_position if body else Vector2.ZERO


## The body's position followed by the waypoints still ahead.
func get_remaining_path() -> PackedVector2Array:
	var path := PackedVector2Array()
	if body:
		path.append(body.global_position)
	if _index < waypoints.size():
		path.append_array(waypoints.slice(_index))
	return path


## True after [signal target_reached], until the target moves away.
func is_target_reached() -> bool:
	return _reached


## Drops the current path and asks again now.
func request_path() -> void:
	_dirty = true
	_retry_at_ms = 0


## Stops chasing: the unit stays where it is.
func stop() -> void:
	target_node = null
	_has_target = false
	waypoints = PackedVector2Array()
	_index = 0
	_path_goal = Vector2.INF
	# An answer still coming is for a target given up: ignore it.
	_asked += 1
	_asking = false


func _needs_path(target: Vector2) -> bool:
	if _asking:
		return false
	var moved := _path_goal.distance_to(target)
	if Time.get_ticks_msec() < _retry_at_ms and moved <= repath_distance:
		return false
	if _dirty or moved > repath_distance:
		return true
	# A smaller move keeps the current path, but a unit at its end (arrived or idle) goes on.
	return _index >= waypoints.size() and not _path_goal.is_equal_approx(target)


func _ask(target: Vector2) -> void:
	var options := path_options.duplicate()
	if map_name != "":
		options["map"] = map_name
	_asked += 1
	var ticket := _asked
	_asking = true
	_dirty = false
	_reached = false
	var start: Variant = body.global_position
	var goal: Variant = target
	var map := map_name if map_name != "" else client.map_name
	if client.get_floors(map) > 1 or current_floor != 0 or target_floor != 0:
		start = Vector3(start.x, start.y, current_floor)
		goal = Vector3(goal.x, goal.y, target_floor)
	var result := await client.find_path_async(start, goal, unit_size, options)
	if ticket == _asked:
		_asking = false
		_on_path_result(result, target)


func _on_path_result(result: PathServerResult, asked_target: Vector2) -> void:
	if not result.ok:
		# The old path led to another target: stand still until a path comes.
		waypoints = PackedVector2Array()
		_floors = PackedInt32Array()
		path_links = []
		_links_at = {}
		_index = 0
		_path_complete = false
		_path_goal = asked_target
		# Ask again after the retry interval, or sooner if the target moves far (_needs_path).
		_dirty = true
		_retry_at_ms = Time.get_ticks_msec() + int(retry_interval * 1000.0)
		path_failed.emit(result.code, result.message)
		return
	waypoints = result.waypoints
	_floors = result.floors
	path_links = result.links
	_links_at = {}
	for taken: Variant in result.links:
		if taken is Array and taken.size() == 2:
			_links_at[int(taken[0])] = int(taken[1])
	_path_map = str(result.info.get("map", ""))
	if not _links_at.is_empty() and _links_at.values().max() >= client.get_links(_path_map).size():
		# A map the client never uploaded nor read (a map file's links): one cell of get_map
		# brings its links, their tags for link_reached, before the unit gets there.
		client.get_map(_path_map, Rect2i(0, 0, 1, 1))
	# The first waypoint is where the unit stood when it asked; it has moved on since.
	_index = 1 if waypoints.size() > 1 else 0
	_path_goal = asked_target
	_path_complete = result.status == "found"
	_reached = false
	path_changed.emit(waypoints)
	if not waypoints.is_empty():
		_pass_waypoint(0)


func _follow(delta: float) -> void:
	var position := body.global_position
	var budget := speed * delta
	var step := Vector2.ZERO
	while _index < waypoints.size():
		var to_next := waypoints[_index] - (position + step)
		var distance := to_next.length()
		if distance <= arrival_distance or (move_body and distance <= budget):
			step += to_next if move_body else Vector2.ZERO
			budget -= distance
			_index += 1
			_pass_waypoint(_index - 1)
			continue
		if move_body:
			step += to_next / distance * budget
		velocity = to_next / distance * speed
		break
	if move_body:
		body.global_position = position + step
		velocity = step / delta if delta > 0.0 else Vector2.ZERO
	if _index >= waypoints.size():
		velocity = Vector2.ZERO
		if (
			_path_complete
			and not _reached
			and not _asking
			and not waypoints.is_empty()
			and _path_goal.is_equal_approx(get_target())
		):
			_reached = true
			target_reached.emit()


## The unit stands on waypoint [param index]: its floor now, and the link it takes next.
func _pass_waypoint(index: int) -> void:
	if index < _floors.size() and _floors[index] != current_floor:
		current_floor = _floors[index]
		floor_changed.emit(current_floor)
	if _links_at.has(index) and index + 1 < waypoints.size():
		var link: int = _links_at[index]
		var known := client.get_links(_path_map)
		var tag := ""
		if link < known.size() and known[link] is Dictionary:
			tag = str(known[link].get("tag", ""))
		link_reached.emit(link, tag, waypoints[index], waypoints[index + 1])


func _on_map_generation_changed(changed_map: String, _gen: int) -> void:
	var followed := map_name if map_name != "" else client.map_name
	if changed_map == followed and _has_target:
		request_path()
