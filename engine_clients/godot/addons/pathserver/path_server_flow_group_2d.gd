class_name PathServerFlowGroup2D
extends Node2D
## Steers many units to one target with one [method PathServerClient.next_steps] request per
## physics frame and unit size, instead of a path per unit: the server keeps the flow field
## toward the target, so each frame costs it a lookup per unit. Units are this node's
## [Node2D] children (added or removed at any time) and the nodes given to [method add_unit];
## a [CharacterBody2D] is moved with [method CharacterBody2D.move_and_slide], another [Node2D]
## by its position. A unit's size is its own [code]unit_size[/code] property ([Vector2i]) when
## it has one, else [member unit_size]; each size is its own request.
##
## Each physics frame every unit walks at [member speed] toward the step the last reply gave
## it (the next cell downhill, or with [member lookahead] "los" the farthest point of its way
## it sees), and a new request goes out for each size whose previous one was answered: never
## more than one in flight per size, so a slow server makes the steps older, not the queue
## longer. Units that cannot reach the target stand still. Positions are global, in the map's
## world coordinates (the client's default space).
## [codeblock]
## var group := PathServerFlowGroup2D.new()
## group.speed = 160.0
## add_child(group)
## for i in 200:
##     var unit := Sprite2D.new()
##     unit.texture = preload("res://unit.png")
##     unit.position = Vector2(40 + i % 20 * 16, 40 + i / 20 * 16)
##     group.add_child(unit)
## group.target = Vector2(900, 600)  # all 200 head there, around the walls
## [/codeblock]

## A [code]next_steps[/code] request of this group failed ([param code] as in
## [PathServerResult]); the units keep their last steps and the request is sent again after
## [member retry_interval] seconds.
signal steps_failed(code: String, message: String)

## Where the units go, in global (world) coordinates. Setting it replaces [member goals] with
## this one point (set [member goals] after it for a goal area around it).
## How many units of its bucket [method _separate] compares a unit with, at most.
const MAX_NEIGHBOURS := 4

@export var target := Vector2.ZERO:
	set(value):
		target = value
		goals = PackedVector2Array([value])
## The footprint in cells of units that have no [code]unit_size[/code] property of their own.
@export var unit_size := Vector2i.ONE
## World units a unit walks per second.
@export var speed := 100.0
## "cell": each unit heads for the neighbouring cell downhill; "los": for the farthest point of
## its way in clear sight of its whole footprint (straighter lines, fewer turns).
@export_enum("cell", "los") var lookahead := "cell"
## The least distance between the centres of two 1x1 units (for larger units, times their
## size), kept by pushing close units apart; 0: units may overlap (the cheapest).
@export var spacing := 0.0
## The map the units walk on; empty: the client's [member PathServerClient.map_name].
@export var map_name := ""
## Seconds before a failed request is sent again.
@export var retry_interval := 0.5
## Units that reached a goal keep walking, at half speed, toward [member target] for as long
## as the crowd's [member spacing] lets them: a crowd sent to a goal area fills it instead of
## stopping at its rim.
@export var gather := true
## When false, no requests go out and units stand still.
@export var active := true

## Where the units go: the nearest of these points wins for each unit (up to 4096; a crowd
## spreads over an area when the goals cover it). [member target] sets one point. New goals
## drop the steps in hand and the answers in flight: units wait for the new ones.
var goals := PackedVector2Array():
	set(value):
		goals = value
		for batch in _batches:
			batch.steps = PackedVector2Array()
			batch.remaining = PackedFloat32Array()
			batch.version += 1
## More options of the requests (see [member PathServerClient.QUERY_OPTIONS]): "traversal",
## "avoid", "max_cost", ...
var options := {}
## The client to use; the [code]PathServer[/code] autoload when not set.
var client: PathServerClient
## Requests answered so far, all sizes together.
var replies := 0
## Microseconds the last physics frame's steering took here (moving and spacing the units;
## the requests are answered meanwhile, in other frames).
var frame_usec := 0

var _batches: Array[Batch] = []
## The map's cells as get_map gave them (0 blocked), so that spacing never pushes a unit into
## a wall; reloaded when the map's generation changes.
var _map_cells := PackedByteArray()
var _map_size := Vector2i.ZERO
var _map_origin := Vector2.ZERO
var _map_cell_size := 1.0
var _map_stale := true
var _map_loading := false
var _map_retry_ms := 0
## 1 where a unit touched a neighbour nearer the target in the last spacing pass (by index
## over the batches in order): it stops gathering.
var _crowded := PackedByteArray()


func _ready() -> void:
	if client == null:
		client = get_node_or_null("/root/PathServer") as PathServerClient
	if client == null:
		push_error("PathServerFlowGroup2D: no client (no PathServer autoload)")
		set_physics_process(false)
		return
	for child in get_children():
		_on_child_entered(child)
	child_entered_tree.connect(_on_child_entered)
	client.map_generation_changed.connect(
		func(changed: String, _gen: int) -> void: _map_stale = _map_stale or changed == _map_name()
	)


func _physics_process(delta: float) -> void:
	var now := Time.get_ticks_msec()
	var started := Time.get_ticks_usec()
	var offset := 0
	for batch in _batches:
		_move(batch, delta, offset)
		offset += batch.units.size()
	if spacing > 0.0:
		_separate(delta)
		if _map_stale and not _map_loading and now >= _map_retry_ms:
			_load_map()
	frame_usec = Time.get_ticks_usec() - started
	if not active or goals.is_empty():
		return
	for batch in _batches:
		if not batch.busy and now >= batch.retry_at_ms and not batch.units.is_empty():
			_request(batch)


## Steers [param unit] with this group ([param size]: its footprint; zero: its own
## [code]unit_size[/code] property, else [member unit_size]). A unit that leaves the tree
## leaves the group.
func add_unit(unit: Node2D, size := Vector2i.ZERO) -> void:
	if size == Vector2i.ZERO:
		size = unit.get("unit_size") if unit.get("unit_size") is Vector2i else unit_size
	for batch in _batches:
		if batch.units.has(unit):
			return
	var batch := _batch_of(size)
	batch.units.append(unit)
	batch.bodies.append(1 if unit is CharacterBody2D else 0)
	batch.version += 1
	if not unit.tree_exiting.is_connected(remove_unit):
		unit.tree_exiting.connect(remove_unit.bind(unit), CONNECT_ONE_SHOT)


## Stops steering [param unit].
func remove_unit(unit: Node2D) -> void:
	for batch in _batches:
		var index := batch.units.find(unit)
		if index >= 0:
			batch.units.remove_at(index)
			batch.bodies.remove_at(index)
			# The steps in hand and in flight belong to the old list: wait for new ones.
			batch.steps = PackedVector2Array()
			batch.remaining = PackedFloat32Array()
			batch.version += 1


## How many units the group steers.
func get_unit_count() -> int:
	var count := 0
	for batch in _batches:
		count += batch.units.size()
	return count


## The unit sizes of the group: one request each per frame.
func get_unit_sizes() -> Array[Vector2i]:
	var sizes: Array[Vector2i] = []
	for batch in _batches:
		sizes.append(batch.size)
	return sizes


## The units of [param size] (the group's own list: do not change it).
func get_units_of_size(size: Vector2i) -> Array[Node2D]:
	for batch in _batches:
		if batch.size == size:
			return batch.units
	return []


## Each unit's cost left to the nearest goal, as the server last answered, in the order of
## [method get_units_of_size] ([constant @GDScript.INF]: no way; empty before the first answer).
func get_remaining(size: Vector2i) -> PackedFloat32Array:
	for batch in _batches:
		if batch.size == size:
			return batch.remaining
	return PackedFloat32Array()


## How many units have arrived: they stand on a goal's cell (the server's last answer).
func get_arrived_count() -> int:
	var count := 0
	for batch in _batches:
		for cost in batch.remaining:
			if cost == 0.0:
				count += 1
	return count


## How many units cannot reach any goal (the server's last answer).
func get_stranded_count() -> int:
	var count := 0
	for batch in _batches:
		for cost in batch.remaining:
			if is_inf(cost):
				count += 1
	return count


func _map_name() -> String:
	return map_name if map_name != "" else client.map_name


## Reads the map's cells (for [method _separate] to keep units off walls).
func _load_map() -> void:
	_map_loading = true
	_map_stale = false
	var map := await client.get_map_async(_map_name())
	_map_loading = false
	if not map.ok:
		# Not uploaded yet, say: again in a moment.
		_map_stale = true
		_map_retry_ms = Time.get_ticks_msec() + int(retry_interval * 1000.0)
	else:
		_map_cells = map.info.cells
		_map_size = map.info.size
		_map_origin = map.info.origin
		_map_cell_size = map.info.cell_size


## True when a unit of [param size] at [param point] stands on open cells (or the map is not
## known yet).
func _stands(point: Vector2, size: Vector2i) -> bool:
	if _map_cells.is_empty():
		return true
	var cell := Vector2i(((point - _map_origin) / _map_cell_size).floor())
	# The server's footprint: columns x - (w - 1) / 2 .. x + w / 2, rows alike.
	for y in range(cell.y - (size.y - 1) / 2, cell.y + size.y / 2 + 1):
		for x in range(cell.x - (size.x - 1) / 2, cell.x + size.x / 2 + 1):
			if x < 0 or y < 0 or x >= _map_size.x or y >= _map_size.y:
				return false
			if _map_cells[y * _map_size.x + x] == 0:
				return false
	return true


func _batch_of(size: Vector2i) -> Batch:
	for batch in _batches:
		if batch.size == size:
			return batch
	var batch := Batch.new()
	batch.size = size
	_batches.append(batch)
	return batch


func _on_child_entered(child: Node) -> void:
	if child is Node2D:
		add_unit(child)


func _request(batch: Batch) -> void:
	batch.busy = true
	var version := batch.version
	var count := batch.units.size()
	var positions := PackedVector2Array()
	positions.resize(count)
	for i in count:
		positions[i] = batch.units[i].global_position
	var request_options := options.duplicate()
	request_options["lookahead"] = lookahead
	request_options["map"] = _map_name()
	var result := await client.next_steps_async(goals, positions, batch.size, request_options)
	batch.busy = false
	replies += 1
	if not result.ok:
		batch.retry_at_ms = Time.get_ticks_msec() + int(retry_interval * 1000.0)
		steps_failed.emit(result.code, result.message)
		return
	if version != batch.version:
		return
	var remaining: PackedFloat32Array = result.info.remaining
	if batch.remaining.size() == count:
		for i in count:
			if is_inf(remaining[i]) and not is_inf(batch.remaining[i]):
				# Reachable a moment ago, not now: pushed into a wall by its neighbours (the
				# server does not snap positions), or the way was closed. Back to where it
				# last stood on open ground: nothing, in the second case.
				batch.units[i].global_position = batch.open[i]
			elif not is_inf(remaining[i]):
				batch.open[i] = positions[i]
	else:
		batch.open = positions
	batch.steps = result.info.steps
	batch.remaining = remaining


func _move(batch: Batch, delta: float, offset: int) -> void:
	var steps := batch.steps
	var remaining := batch.remaining
	if steps.size() != batch.units.size():
		return
	var reach := speed * delta
	var gathering := gather and spacing > 0.0 and _crowded.size() == get_unit_count()
	for i in steps.size():
		var unit := batch.units[i]
		var velocity := Vector2.ZERO
		if gathering and remaining[i] == 0.0:
			var to_target := target - unit.global_position
			# A unit touching one ahead of it stops: the crowd packs at its spacing.
			if to_target.length() > spacing and _crowded[offset + i] == 0:
				velocity = to_target.normalized() * speed * 0.5
		elif not is_inf(remaining[i]):
			var to_step := steps[i] - unit.global_position
			var distance := to_step.length()
			if distance > 0.001:
				# Never past the step within one frame: it may be the last one.
				velocity = to_step * (minf(reach, distance) / distance / delta)
		if batch.bodies[i] == 1:
			var body := unit as CharacterBody2D
			# The grid's walls slide it too, for bodies without shapes on the walls' layer.
			var from := body.global_position
			body.velocity = (_slide(from, velocity * delta, batch.size) - from) / delta
			body.move_and_slide()
		elif velocity != Vector2.ZERO:
			unit.global_position = _slide(unit.global_position, velocity * delta, batch.size)


## [param from] moved by [param motion], or along one axis only when the whole move would
## end in a wall: a unit off its cell's centre heading for the next cell's may otherwise clip
## a wall's corner.
func _slide(from: Vector2, motion: Vector2, size: Vector2i) -> Vector2:
	var to := from + motion
	if _map_cells.is_empty():
		return to
	var scale := 1.0 / _map_cell_size
	if ((to - _map_origin) * scale).floor() == ((from - _map_origin) * scale).floor():
		# Within its cell: nothing new under the footprint.
		return to
	if _stands(to, size) or not _stands(from, size):
		return to
	var across := Vector2(to.x, from.y)
	if _stands(across, size):
		return across
	var along := Vector2(from.x, to.y)
	return along if _stands(along, size) else from


## Pushes units closer than [member spacing] apart, never into a wall. Units are bucketed by
## a coarse grid (a hash of the bucket into one flat table, a linked list of units per slot)
## and compared only with (at most [constant MAX_NEIGHBOURS] of) the units of their own
## bucket: cheap enough for hundreds of units a frame in GDScript. The grid shifts by half a
## bucket every other frame, so two close units on either side of a bucket's edge share a
## bucket the next frame.
func _separate(delta: float) -> void:
	var positions := PackedVector2Array()
	var radii := PackedFloat32Array()
	var largest := 1
	for batch in _batches:
		var extent := maxi(batch.size.x, batch.size.y)
		largest = maxi(largest, extent)
		for unit in batch.units:
			positions.append(unit.global_position)
			radii.append(spacing * extent * 0.5)
	var count := positions.size()
	if count < 2:
		return
	var bucket := spacing * largest
	var shift := Vector2.ONE * (bucket * 0.5 if Engine.get_physics_frames() % 2 == 1 else 0.0)
	var slots := 1
	while slots < count * 2:
		slots *= 2
	var heads := PackedInt32Array()
	heads.resize(slots)
	heads.fill(-1)
	var next := PackedInt32Array()
	next.resize(count)
	for i in count:
		var key := ((positions[i] + shift) / bucket).floor()
		var slot := (int(key.x) * 73856093 ^ int(key.y) * 19349663) & (slots - 1)
		next[i] = heads[slot]
		heads[slot] = i
	var pushes := PackedVector2Array()
	pushes.resize(count)
	_crowded.resize(count)
	_crowded.fill(0)
	var far := PackedFloat32Array()
	far.resize(count)
	for i in count:
		far[i] = positions[i].distance_squared_to(target)
	var pushed := false
	for i in count:
		var other := next[i]
		# A bounded number of neighbours each: a dense knot costs no more than a spread crowd.
		var compared := 0
		while other >= 0 and compared < MAX_NEIGHBOURS:
			compared += 1
			var apart := positions[i] - positions[other]
			var least := radii[i] + radii[other]
			if apart.length_squared() < least * least:
				var distance := apart.length()
				# Two units on one point part along a fixed, index-based direction.
				var direction := (
					apart / distance if distance > 0.001 else Vector2.from_angle(float(i) * 2.399)
				)
				var push := direction * (least - distance) * 0.5
				pushes[i] += push
				pushes[other] -= push
				# The one farther from the target waits for the one ahead of it.
				if far[i] > far[other]:
					_crowded[i] = 1
				else:
					_crowded[other] = 1
				pushed = true
			other = next[other]
	if not pushed:
		return
	# At most a unit's speed a frame: a crowd queues at a gap instead of collapsing into it.
	var most := speed * delta
	var index := 0
	for batch in _batches:
		for unit in batch.units:
			var push := pushes[index]
			if push != Vector2.ZERO:
				var pushed_to := unit.global_position + push.limit_length(most)
				# Never into a wall: the server answers a unit there with no way (+inf).
				if _stands(pushed_to, batch.size):
					unit.global_position = pushed_to
			index += 1


## The units of one size and the server's last answer for them.
class Batch:
	extends RefCounted

	var size := Vector2i.ONE
	var units: Array[Node2D] = []
	## 1 where the unit is a CharacterBody2D.
	var bodies := PackedByteArray()
	## Where each unit heads and its cost to the goal, from the last reply (empty until then).
	var steps := PackedVector2Array()
	var remaining := PackedFloat32Array()
	## Where each unit last stood with a way to the goals.
	var open := PackedVector2Array()
	## A request is in flight.
	var busy := false
	## Bumped when units join or leave: a reply to an older list is not used.
	var version := 0
	var retry_at_ms := 0
