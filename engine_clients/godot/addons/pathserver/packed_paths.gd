class_name PathServerPacked
extends RefCounted
## pathserver's packed forms, decoded and encoded with the engine's own array conversions:
## no GDScript loop over points.
##
## A packed point is a little-endian pair, 8 bytes: int32 [code]x, y[/code] in grid space,
## float32 in world space. A [code]path[/code] request with [code]"packed": true[/code] gets its
## [code]path[/code] as one bin of them; a [code]paths[/code] request gets, in place of
## [code]results[/code], one column an entry: [code]status[/code] (a byte: see
## [constant STATUSES]), [code]cost[/code] (float32), [code]count[/code] (uint32, the points of
## the entry's path), [code]points[/code] (every entry's points, one after the other) and
## [code]errors[/code] (entry index -> error object). A batch may also be sent packed, as
## [code]starts[/code] and [code]goals[/code] bins of pairs. See docs/protocol.md.
##
## On a map of several floors every bin of points a reply gives holds triples instead, 12
## bytes a point: [code]x, y, floor[/code], all int32 in grid space, all float32 in world
## space. Decoded, a path is its points ([PackedVector2Array]) and their floors
## ([PackedInt32Array], one a point); [method points_and_floors] reads either width. The bins
## a request sends hold pairs, points on floor 0: points on other floors go as arrays.
## [codeblock]
## var bin := PackedFloat32Array([1.5, 2.5, 3.5, 2.5]).to_byte_array()
## print(PathServerPacked.points(bin, false))  # [(1.5, 2.5), (3.5, 2.5)]
## [/codeblock]

## The status of a packed batch entry, by the byte of its [code]status[/code] column.
const STATUSES: Array[String] = ["found", "partial", "no_path", "error"]
## The status byte of an entry that failed (its error object is in [code]errors[/code]).
const ERROR_STATUS := 3
## Bytes of one packed point.
const POINT_BYTES := 8
## Bytes of one packed point on a map of several floors: [code]x, y, floor[/code].
const FLOOR_POINT_BYTES := 12
## 2^74 and 2^75: see [method points].
const SCALE_UP_FIRST := Transform2D(
	Vector2(1.8889465931478581e22, 0), Vector2(0, 1.8889465931478581e22), Vector2.ZERO
)
const SCALE_UP := Transform2D(
	Vector2(3.7778931862957162e22, 0), Vector2(0, 3.7778931862957162e22), Vector2.ZERO
)

## Null until [method points] first decodes cells, then whether subnormal floats survive.
static var _denormals_work: Variant = null


## A bin of pairs as a [PackedVector2Array], start and goal included, as
## [method AStarGrid2D.get_point_path] returns a path: float32 pairs (world space), or int32
## pairs when [param grid] (cells, never negative, as whole-number [Vector2]s). Empty when the
## bin is no whole number of pairs.
static func points(pairs: PackedByteArray, grid: bool) -> PackedVector2Array:
	if pairs.size() % POINT_BYTES != 0:
		return PackedVector2Array()
	var decoded := _as_vector2(pairs)
	if not grid:
		return decoded
	if _denormals_work == null:
		_denormals_work = _check_denormals()
	if _denormals_work:
		# Read as float32, a cell n >= 0 is the subnormal n * 2^-149: scaled back up by powers of
		# two, exactly, in two steps (2^149 is past float32's range), the engine transforming
		# every point in C++.
		return SCALE_UP * (SCALE_UP_FIRST * decoded)
	return PackedVector2Array(_cells_as_vector2(pairs.to_int32_array()))


## Whole-number points as cells, as [method AStarGrid2D.get_id_path] returns a path.
static func cells(from_points: PackedVector2Array) -> Array[Vector2i]:
	var out: Array[Vector2i] = []
	# A typed array converts each Vector2 to a Vector2i in C++.
	out.assign(Array(from_points))
	return out


## [param from_points] as a bin of pairs: float32 (world space), or int32 when [param grid]
## (cells: whole-number points; others lose their fraction).
static func to_bin(from_points: PackedVector2Array, grid: bool) -> PackedByteArray:
	var xy := _flat(from_points)
	if grid:
		return PackedInt32Array(Array(xy)).to_byte_array()
	return xy.to_byte_array()


## [code]next_steps[/code]' positions as they go: a bin of float32 pairs for a
## [PackedVector2Array] (or a [PackedVector3Array] all on floor 0), else the points as
## [code][x, y, floor][/code] arrays (units on other floors).
static func wire_positions(positions: Variant) -> Variant:
	if positions is PackedVector3Array:
		var on_ground := PackedVector2Array()
		for point in positions:
			if point.z != 0.0:
				return positions
			on_ground.append(Vector2(point.x, point.y))
		positions = on_ground
	return to_bin(positions, false)


## A bin of triples ([code]x, y, floor[/code]: float32 in world space, int32 when
## [param grid]) or of pairs ([param triples] false, every floor 0) as
## [code][points: PackedVector2Array, floors: PackedInt32Array][/code]; floors is empty for
## pairs. Both empty when the bin is no whole number of points.
static func points_and_floors(packed: PackedByteArray, grid: bool, triples: bool) -> Array:
	if not triples:
		return [points(packed, grid), PackedInt32Array()]
	if packed.size() % FLOOR_POINT_BYTES != 0:
		return [PackedVector2Array(), PackedInt32Array()]
	var count := packed.size() / FLOOR_POINT_BYTES
	var out := PackedVector2Array()
	var floors := PackedInt32Array()
	out.resize(count)
	floors.resize(count)
	if grid:
		var xyf := packed.to_int32_array()
		for i in count:
			out[i] = Vector2(xyf[3 * i], xyf[3 * i + 1])
			floors[i] = xyf[3 * i + 2]
	else:
		var xyf := packed.to_float32_array()
		for i in count:
			out[i] = Vector2(xyf[3 * i], xyf[3 * i + 1])
			floors[i] = roundi(xyf[3 * i + 2])
	return [out, floors]


## One packed [code]paths[/code] reply's columns, checked: [code]{"status": PackedByteArray,
## "cost": PackedFloat32Array, "count": PackedInt32Array, "offset": PackedInt32Array (where
## each entry's points begin; one more at the end), "points": PackedVector2Array,
## "errors": Dictionary}[/code], or [code]{"problem": String}[/code] when the columns do not
## agree with each other or with [param entries].
## On a map of several floors the points are triples (the counts say which) and
## [code]"floors"[/code] has each point's floor; else it is empty.
static func columns(reply: Dictionary, entries: int, grid: bool) -> Dictionary:
	var status: Variant = reply.get("status")
	var cost: Variant = reply.get("cost")
	var count: Variant = reply.get("count")
	var pairs: Variant = reply.get("points")
	var errors: Variant = reply.get("errors", {})
	if not (
		status is PackedByteArray
		and cost is PackedByteArray
		and count is PackedByteArray
		and pairs is PackedByteArray
	):
		return {"problem": "status, cost, count and points are not all bins"}
	if status.size() != entries or cost.size() != entries * 4 or count.size() != entries * 4:
		return {
			"problem":
			(
				"columns of %d, %d and %d bytes for %d entries"
				% [status.size(), cost.size(), count.size(), entries]
			)
		}
	var counts: PackedInt32Array = count.to_int32_array()
	var offset := PackedInt32Array()
	offset.resize(entries + 1)
	var total := 0
	for i in entries:
		offset[i] = total
		# A uint32 count above 2^31 reads as negative: no reply holds that many points.
		total += counts[i] if counts[i] >= 0 else pairs.size()
	offset[entries] = total
	var triples: bool = total > 0 and total * FLOOR_POINT_BYTES == pairs.size()
	if total * POINT_BYTES != pairs.size() and not triples:
		return {"problem": "counts of %d points for %d bytes of points" % [total, pairs.size()]}
	var decoded := points_and_floors(pairs, grid, triples)
	return {
		"status": status,
		"cost": cost.to_float32_array(),
		"count": counts,
		"offset": offset,
		"points": decoded[0],
		"floors": decoded[1],
		"errors": errors if errors is Dictionary else {},
	}


## A batch of [code][start, goal][/code] pairs as the packed [code]starts[/code] and
## [code]goals[/code] bins, or {} when it cannot go so (an entry with options of its own, many
## goals, cells that are not whole or are negative in grid space, points on other floors than
## 0, a packed reply not asked for: those go as requests).
static func batch_columns(requests: Array, fields: Dictionary) -> Dictionary:
	if fields.get("packed") != true or fields.has("goals") or requests.is_empty():
		return {}
	var starts := PackedVector2Array()
	var goals := PackedVector2Array()
	starts.resize(requests.size())
	goals.resize(requests.size())
	for i in requests.size():
		var item: Variant = requests[i]
		if not (item is Array and item.size() == 2):
			return {}
		var start: Variant = _on_floor_zero(item[0])
		var goal: Variant = _on_floor_zero(item[1])
		if start == null or goal == null:
			return {}
		starts[i] = start
		goals[i] = goal
	var grid: bool = fields.space == "grid"
	var columns := {"starts": to_bin(starts, grid), "goals": to_bin(goals, grid)}
	# Cells that come back the same from their int32 pairs are whole and not negative.
	if grid and (points(columns.starts, true) != starts or points(columns.goals, true) != goals):
		return {}
	return columns


## [param point] as a [Vector2] when it is one on floor 0 (a [Vector2], a [Vector2i], or a
## [Vector3] / [Vector3i] of floor 0), else null.
static func _on_floor_zero(point: Variant) -> Variant:
	if point is Vector2 or point is Vector2i:
		return Vector2(point)
	if (point is Vector3 or point is Vector3i) and point.z == 0:
		return Vector2(point.x, point.y)
	return null


## Every [code]avoid[/code] of [param body] (its own and, in a batch, each request's) with its
## cells as the wire's compact bin ([method wire_avoid]). Here, where every request passes, so
## that no op (nor [method request]) sends them the slow way. The caller's dictionaries and
## arrays are copied, never changed: they may be reused for the next request.
static func compact_avoids(body: Dictionary) -> void:
	if body.has("avoid"):
		body["avoid"] = wire_avoid(body["avoid"])
	var entries: Variant = body.get("requests")
	if not entries is Array:
		return
	var wire_entries := []
	wire_entries.resize(entries.size())
	for i in entries.size():
		var entry: Variant = entries[i]
		if entry is Dictionary and entry.has("avoid"):
			entry = entry.duplicate()
			entry["avoid"] = wire_avoid(entry["avoid"])
		wire_entries[i] = entry
	body["requests"] = wire_entries


## [param avoid] with its [code]cells[/code] as one bin of little-endian int32 x, y pairs
## (every platform Godot runs on is little-endian) when they are all whole cells: an Array of
## [Vector2i] or a [PackedInt32Array] of x, y pairs. As an array, the encoder would write a
## crowd's hundreds of cells one GDScript call at a time. Anything else goes as it is: floats
## for the server to read as the cells they fall in, the rest for it to refuse with the field
## it is about ([code]at: "avoid.cells[1]"[/code]), as it always has. Cells on a floor
## ([Vector3i]) go in the bin when all are on floor 0, else all as [code][x, y, floor][/code]
## arrays (the bin holds floor 0's cells only).
static func wire_avoid(avoid: Variant) -> Variant:
	if not (avoid is Dictionary and avoid.has("cells")):
		return avoid
	var avoided: Variant = avoid.cells
	var xy := PackedInt32Array()
	if avoided is PackedInt32Array:
		if avoided.size() % 2 != 0:
			return avoid
		xy = avoided
	elif avoided is Array:
		xy.resize(avoided.size() * 2)
		for i in avoided.size():
			var cell: Variant = avoided[i]
			if not (cell is Vector2i or (cell is Vector3i and cell.z == 0)):
				return avoid
			xy[2 * i] = cell.x
			xy[2 * i + 1] = cell.y
	else:
		return avoid
	var wire: Dictionary = avoid.duplicate()
	wire["cells"] = xy.to_byte_array()
	return wire


## A query reply's fields besides [code]id[/code] and [code]ok[/code], with its bins as packed
## arrays (see each query's method of [PathServerClient]): [code]{"info": Dictionary,
## "problem": String}[/code], the problem "" when the bins fit each other.
static func query_info(reply: Dictionary, op: String) -> Dictionary:
	var info := {}
	for key: Variant in reply:
		if key not in ["id", "ok"]:
			info[key] = reply[key]
	var problem := ""
	match op:
		"reachable":
			problem = _pair_problem(reply, "cells", "costs")
			if problem == "":
				var decoded := points_and_floors(reply.cells, true, _triples(reply, "cells"))
				info["cells"] = cells(decoded[0])
				info["floors"] = decoded[1]
				info["costs"] = reply.costs.to_float32_array()
		"field":
			var cost: Variant = reply.get("cost")
			var floors := maxi(1, _to_int(reply.get("floors", 1)))
			var count := _to_int(reply.get("width")) * _to_int(reply.get("height")) * floors
			if not (cost is PackedByteArray and cost.size() == count * 4):
				problem = "cost is not %d float32 of bin" % count
			else:
				info["cost"] = cost.to_float32_array()
				info["origin"] = Vector2i(plain_point(reply.get("origin")))
				info["floors"] = floors
		"next_steps":
			if reply.get("steps") is Array:
				# Positions sent as arrays (units on other floors than 0): steps as arrays.
				info["steps"] = plain_points(reply.steps)
				info["floors"] = plain_floors(reply.steps)
				var remaining: Variant = reply.get("remaining")
				if remaining is PackedByteArray and remaining.size() == reply.steps.size() * 4:
					info["remaining"] = remaining.to_float32_array()
				else:
					problem = "remaining is not one float32 a step"
				return {"info": info, "problem": problem}
			problem = _pair_problem(reply, "steps", "remaining")
			if problem == "":
				var decoded := points_and_floors(reply.steps, false, _triples(reply, "steps"))
				info["steps"] = decoded[0]
				info["floors"] = decoded[1]
				info["remaining"] = reply.remaining.to_float32_array()
		"check_block":
			if not reply.get("disconnected") is Array:
				problem = "disconnected is not an array"
	return {"info": info, "problem": problem}


## A [code]get_map[/code] reply as [method PathServerClient.get_map_async] gives it:
## [code]{"info": Dictionary, "problem": String}[/code], the problem "" when every bin holds
## one value a cell of the region on each floor ([code]info.floors[/code], 1 unless the map
## has more; the layers floor 0 first). [code]info.links[/code] is the map's links as the
## wire has them ([code]{"from": [x, y(, floor)], "to", "cost", "two_way", "tag"}[/code]),
## empty when it has none.
static func map_info(reply: Dictionary) -> Dictionary:
	var size := Vector2i(_to_int(reply.get("width")), _to_int(reply.get("height")))
	var region := Rect2i(Vector2i.ZERO, size)
	var wire_region: Variant = reply.get("region")
	if wire_region is Array and wire_region.size() == 4:
		region = Rect2i(
			_to_int(wire_region[0]),
			_to_int(wire_region[1]),
			_to_int(wire_region[2]),
			_to_int(wire_region[3])
		)
	var floors := maxi(1, _to_int(reply.get("floors", 1)))
	var count := region.size.x * region.size.y * floors
	var links: Variant = reply.get("links", [])
	var info := {
		"map": reply.get("map"),
		"gen": reply.get("gen"),
		"size": size,
		"origin": plain_point(reply.get("origin")),
		"cell_size": _cell_size(reply.get("cell_size", 1.0)),
		"shape": str(reply.get("shape", "square")),
		"layout": str(reply.get("layout", "")),
		"region": region,
		"cells": reply.get("cells"),
		"floors": floors,
		"links": links if links is Array else [],
		"tag_names": reply.get("tag_names", {}),
	}
	var problem := ""
	if not links is Array:
		problem = "links: not an array"
	if not (reply.get("cells") is PackedByteArray and reply.cells.size() == count):
		problem = "cells: not %d bytes of bin" % count
	for key: String in ["costs", "heights"]:
		if not reply.has(key):
			continue
		var raw: Variant = reply[key]
		if raw is PackedByteArray and raw.size() == count * 4:
			# Little-endian float32, as every platform Godot runs on stores them.
			info[key] = raw.to_float32_array()
		else:
			problem = "%s: not %d float32 of bin" % [key, count]
	if reply.has("tags"):
		if reply.tags is PackedByteArray and reply.tags.size() == count:
			info["tags"] = reply.tags
		else:
			problem = "tags: not %d bytes of bin" % count
	return {"info": info, "problem": problem}


## What is wrong with a reply's bins [param points] (a pair, or on a map of several floors a
## triple, a value) and [param values] (a float32 a value), which go together; "" when
## nothing is.
static func _pair_problem(reply: Dictionary, points_key: String, values_key: String) -> String:
	var pairs: Variant = reply.get(points_key)
	var values: Variant = reply.get(values_key)
	if not (pairs is PackedByteArray and values is PackedByteArray):
		return "%s and %s are not bins" % [points_key, values_key]
	if pairs.size() != values.size() * 2 and pairs.size() != values.size() * 3:
		return "%d bytes of %s for %d values" % [pairs.size(), points_key, values.size() / 4]
	return ""


## Whether the bin [param points_key] holds triples: 12 bytes for each float32 of the bin
## that goes with it (see [method _pair_problem]; an empty pair of bins holds pairs).
static func _triples(reply: Dictionary, points_key: String) -> bool:
	var values_key: String = {"cells": "costs", "steps": "remaining"}[points_key]
	var values: PackedByteArray = reply[values_key]
	return not values.is_empty() and reply[points_key].size() == values.size() * 3


## A map's cell size: a float, or a [Vector2] for a pair (a hex map's tile size).
static func _cell_size(value: Variant) -> Variant:
	if value is Array and value.size() == 2:
		return plain_point(value)
	return float(value) if value is int or value is float else 1.0


static func _to_int(value: Variant) -> int:
	return int(value) if value is int or value is float else 0


## A point in the plain form, [code][x, y][/code] or [code][x, y, floor][/code], as a
## [Vector2] (its floor left out; [constant Vector2.ZERO] when it is none).
static func plain_point(pair: Variant) -> Vector2:
	if pair is Array and (pair.size() == 2 or pair.size() == 3):
		return Vector2(float(pair[0]), float(pair[1]))
	return Vector2.ZERO


## The floor of a point in the plain form: its third value, 0 for a pair.
static func plain_floor(point: Variant) -> int:
	if point is Array and point.size() == 3 and (point[2] is int or point[2] is float):
		return int(point[2])
	return 0


## A path in the plain form, an array of [code][x, y][/code], point by point.
static func plain_points(pairs: Variant) -> PackedVector2Array:
	var out := PackedVector2Array()
	if pairs is Array:
		for pair: Variant in pairs:
			out.append(plain_point(pair))
	return out


## The floors of a path in the plain form: one a point when its points are
## [code][x, y, floor][/code], else empty (a map of one floor).
static func plain_floors(points_array: Variant) -> PackedInt32Array:
	var floors := PackedInt32Array()
	if points_array is Array and not points_array.is_empty():
		if not (points_array[0] is Array and points_array[0].size() == 3):
			return floors
		for point: Variant in points_array:
			floors.append(plain_floor(point))
	return floors


## Bytes of float32 pairs behind the header of the engine's binary serialization of a
## [PackedVector2Array] (a type word and a count): decoded in one call.
static func _as_vector2(pairs: PackedByteArray) -> PackedVector2Array:
	var encoded := PackedByteArray()
	encoded.resize(8)
	encoded.encode_u32(0, TYPE_PACKED_VECTOR2_ARRAY)
	encoded.encode_u32(4, pairs.size() / POINT_BYTES)
	encoded.append_array(pairs)
	return bytes_to_var(encoded)


## Whether this CPU keeps subnormal floats (no flush to zero): checked once, on cells that
## span every bit a cell may use.
static func _check_denormals() -> bool:
	var probe := PackedInt32Array([0, 1, 2, 3, 8388607, 4194304, 123457, 654321])
	var scaled: PackedVector2Array = (
		SCALE_UP * (SCALE_UP_FIRST * _as_vector2(probe.to_byte_array()))
	)
	return scaled == PackedVector2Array(_cells_as_vector2(probe))


static func _cells_as_vector2(xy: PackedInt32Array) -> Array:
	var out := []
	out.resize(xy.size() / 2)
	for i in out.size():
		out[i] = Vector2(xy[2 * i], xy[2 * i + 1])
	return out


static func _flat(from_points: PackedVector2Array) -> PackedFloat32Array:
	# A PackedVector2Array's bytes are its float32 pairs, unless the engine was built with
	# double-precision vectors (then 16 bytes a point): then pair by pair.
	if from_points.to_byte_array().size() == from_points.size() * POINT_BYTES:
		return from_points.to_byte_array().to_float32_array()
	var xy := PackedFloat32Array()
	xy.resize(from_points.size() * 2)
	for i in from_points.size():
		xy[2 * i] = from_points[i].x
		xy[2 * i + 1] = from_points[i].y
	return xy
