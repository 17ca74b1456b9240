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
## this one point.
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
## When false, no requests go out and units stand still.
@export var active := true

## Where the units go: the nearest of these points wins for each unit (up to 4096; a crowd
## spreads over an area when the goals cover it). [member target] sets one point.
var goals := PackedVector2Array()
## More options of the requests (see [constant PathServerClient.QUERY_OPTIONS]): "traversal",
## "avoid", "max_cost", ...
var options := {}
## The client to use; the [code]PathServer[/code] autoload when not set.
var client: PathServerClient
## Requests answered so far, all sizes together.
var replies := 0

var _batches: Array[Batch] = []


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


func _physics_process(delta: float) -> void:
	var now := Time.get_ticks_msec()
	for batch in _batches:
		_move(batch, delta)
	if spacing > 0.0:
		_separate(delta)
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
	if map_name != "":
		request_options["map"] = map_name
	var result := await client.next_steps_async(goals, positions, batch.size, request_options)
	batch.busy = false
	replies += 1
	if not result.ok:
		batch.retry_at_ms = Time.get_ticks_msec() + int(retry_interval * 1000.0)
		steps_failed.emit(result.code, result.message)
		return
	if version == batch.version:
		batch.steps = result.info.steps
		batch.remaining = result.info.remaining


func _move(batch: Batch, delta: float) -> void:
	var steps := batch.steps
	var remaining := batch.remaining
	if steps.size() != batch.units.size():
		return
	var reach := speed * delta
	for i in steps.size():
		var unit := batch.units[i]
		var velocity := Vector2.ZERO
		if not is_inf(remaining[i]):
			var to_step := steps[i] - unit.global_position
			var distance := to_step.length()
			if distance > 0.001:
				# Never past the step within one frame: it may be the last one.
				velocity = to_step * (minf(reach, distance) / distance / delta)
		if batch.bodies[i] == 1:
			var body := unit as CharacterBody2D
			body.velocity = velocity
			body.move_and_slide()
		else:
			unit.global_position += velocity * delta


## Pushes units closer than [member spacing] apart: units are bucketed by a coarse grid (a
## hash of the bucket into one flat table, a linked list of units per slot), so each unit is
## compared with its neighbours only.
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
	var slots := 1
	while slots < count * 2:
		slots *= 2
	var heads := PackedInt32Array()
	heads.resize(slots)
	heads.fill(-1)
	var next := PackedInt32Array()
	next.resize(count)
	var keys := PackedVector2Array()
	keys.resize(count)
	for i in count:
		var key := (positions[i] / bucket).floor()
		keys[i] = key
		var slot := _slot(key, slots)
		next[i] = heads[slot]
		heads[slot] = i
	var pushes := PackedVector2Array()
	pushes.resize(count)
	for i in count:
		var key := keys[i]
		for dy in range(-1, 2):
			for dx in range(-1, 2):
				var other := heads[_slot(key + Vector2(dx, dy), slots)]
				while other >= 0:
					if other > i:
						var apart := positions[i] - positions[other]
						var least := radii[i] + radii[other]
						var distance := apart.length()
						if distance < least:
							# Two units on one point part along a fixed, index-based direction.
							var direction := (
								apart / distance
								if distance > 0.001
								else Vector2.from_angle(float(i) * 2.399)
							)
							var push := direction * (least - distance) * 0.5
							pushes[i] += push
							pushes[other] -= push
					other = next[other]
	# At most half a unit's speed a frame, so walking wins over pushing.
	var most := speed * delta * 0.5
	var index := 0
	for batch in _batches:
		for unit in batch.units:
			var push := pushes[index]
			if push != Vector2.ZERO:
				unit.global_position += push.limit_length(most)
			index += 1


static func _slot(key: Vector2, slots: int) -> int:
	return (int(key.x) * 73856093 ^ int(key.y) * 19349663) & (slots - 1)


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
	## A request is in flight.
	var busy := false
	## Bumped when units join or leave: a reply to an older list is not used.
	var version := 0
	var retry_at_ms := 0
