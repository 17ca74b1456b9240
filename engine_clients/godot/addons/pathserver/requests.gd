class_name PathServerRequests
extends RefCounted
## The fields of [PathServerClient]'s requests, built from its methods' arguments: the map
## ([param map] unless the options name one), the unit size and space the wire wants, the
## options ([constant PathServerOptions.CLIENT_OPTIONS] left out), points and cells in their
## compact forms.
##
## A point is a [Vector2] (or [Vector2i]) on floor 0, or a [Vector3] / [Vector3i]
## [code](x, y, floor)[/code] on a map of several floors (the wire's [code][x, y, floor][/code],
## see [PathServerMsgPack]). The bins of points a request sends hold pairs, points on floor 0:
## points on other floors go as arrays of [code][x, y, floor][/code] instead.

## Keys of a path request's fields that change from one request to the next: its encoding is
## kept cut around their values (see [method path_request]).
const PATH_HOLES := ["id", "start", "goal"]
## Encodings kept at most; more kinds of path request than this start over.
const PATH_TEMPLATES := 16

var _steps_goals: Variant = PackedVector2Array()
var _steps_goals_encoded := PathServerMsgPack.Encoded.new(PackedVector2Array())
## Path requests' encodings by [code][map, unit size, option names, option values][/code]
## (see [method path_request]).
var _path_templates := {}


## The unit size as the wire wants it: an int for square units, else [w, h].
static func wire_unit_size(unit_size: Vector2i) -> Variant:
	return unit_size.x if unit_size.x == unit_size.y else [unit_size.x, unit_size.y]


## The request's body: "id" and "op" lead, as in every example of the protocol document,
## then [param fields], [code]avoid[/code]'s cells as one bin.
static func body(id: int, op: String, fields: Dictionary) -> Dictionary:
	var request := {"id": id, "op": op}
	request.merge(fields)
	PathServerPacked.compact_avoids(request)
	return request


## [param point] as a request carries it: a [Vector2i] as the [Vector2] it always went as
## (floats, world or grid alike), a point on a floor ([Vector3], [Vector3i]) as it is.
static func wire_point(point: Variant) -> Variant:
	return Vector2(point) if point is Vector2i else point


## A [code]path[/code] request with [param id]: [code][body, bytes][/code], the body as
## [method body] makes it of [method path]'s fields and its MessagePack bytes. A request whose
## map, unit size and options equal an earlier one's (the same names in the same order, values
## of the same type) reuses that one's encoding with its own id, start and goal written in: a
## game asks the same kind of path again and again, and encoding is most of a request's cost.
## The body is then the earlier one's without id, start and goal, shared and read-only.
## Points on a floor ([Vector3]) are encoded whole each time.
func path_request(
	id: int, map: String, start: Variant, goal: Variant, unit_size: Vector2i, options: Dictionary
) -> Array:
	start = wire_point(start)
	goal = wire_point(goal)
	if not (start is Vector2 and goal is Vector2):
		var whole := body(id, "path", path(map, start, goal, unit_size, options))
		return [whole, PathServerMsgPack.encode(whole)]
	# Dictionary keys compare element by element, types included: equal keys encode alike.
	var key := [map, unit_size, options.keys(), options.values()]
	var template: PathTemplate = _path_templates.get(key)
	if template == null:
		var body := body(id, "path", path(map, start, goal, unit_size, options))
		var bytes := PathServerMsgPack.encode(body)
		template = PathTemplate.cut(body, bytes, options)
		if template != null:
			if _path_templates.size() >= PATH_TEMPLATES:
				_path_templates.clear()
			_path_templates[key] = template
		return [body, bytes]
	return [template.body, template.fill(id, start, goal)]


## A [code]path[/code] request's fields.
static func path(
	map: String, start: Variant, goal: Variant, unit_size: Vector2i, options: Dictionary
) -> Dictionary:
	var fields := {
		"map": options.get("map", map),
		"start": wire_point(start),
		"goal": wire_point(goal),
		"unit_size": wire_unit_size(unit_size),
		"space": PathServerOptions.CLIENT_DEFAULTS.space,
		"packed": true,
	}
	if options.has("goals"):
		# Many goals go in place of the one goal (the server refuses both).
		fields.erase("goal")
	return _with_options(fields, options)


## A [code]paths[/code] request's fields: the batch as packed columns when it can be, else
## one Dictionary a request.
static func paths(
	map: String, requests: Array, unit_size: Vector2i, options: Dictionary
) -> Dictionary:
	var fields := {
		"map": options.get("map", map),
		"unit_size": wire_unit_size(unit_size),
		"space": PathServerOptions.CLIENT_DEFAULTS.space,
		"packed": true,
	}
	fields = _with_options(fields, options)
	var columns := PathServerPacked.batch_columns(requests, fields)
	if not columns.is_empty():
		fields.merge(columns)
		return fields
	var wire_requests := []
	for item: Variant in requests:
		if item is Dictionary:
			wire_requests.append(item)
		elif item is Array and item.size() == 2:
			wire_requests.append({"start": item[0], "goal": item[1]})
		else:
			push_error("PathServer.find_paths: each request is [start, goal] or a Dictionary")
			wire_requests.append({"start": null, "goal": null})
		if wire_requests[-1].get("space", fields.space) != fields.space:
			# One packed reply holds one space's points.
			fields.erase("packed")
	fields["requests"] = wire_requests
	return fields


## A [code]put_map[/code] request's fields, float arrays as bin.
static func put_map(
	name: String, size: Vector2i, cells: PackedByteArray, options: Dictionary
) -> Dictionary:
	# Keys in the order of the protocol's put_map; options the server does not know go out too,
	# for it to refuse (invalid_request), as with find_path.
	var fields := {"map": name, "width": size.x, "height": size.y, "cells": cells}
	var keys := [
		"floors",
		"costs",
		"heights",
		"shape",
		"layout",
		"origin",
		"cell_size",
		"tags",
		"tag_names",
		"classes",
		"links",
	]
	keys.append_array(options.keys().filter(func(key: Variant) -> bool: return key not in keys))
	for key: Variant in keys:
		if options.has(key) and key not in PathServerOptions.CLIENT_OPTIONS:
			var value: Variant = options[key]
			fields[key] = value.to_byte_array() if value is PackedFloat32Array else value
	return fields


## [param layers] (a [TileMapLayer], or an Array of them: the floors, floor 0 first) read as
## [PathServerTileMapReader] reads them, with [param options] split: the reader's, and
## [code]"upload"[/code], the options of its [method put_map] request (floors, shape and
## layout on hex maps, origin, cell size, costs and tags from the layers).
static func read_tilemap(layers: Variant, options: Dictionary) -> Dictionary:
	var reader_options := {}
	var upload := {}
	for key: Variant in options:
		if PathServerTileMapReader.OPTIONS.has(key):
			reader_options[key] = options[key]
		else:
			upload[key] = options[key]
	var grid := PathServerTileMapReader.read_floors(layers, reader_options)
	if grid.error != "":
		return grid
	add_grid_options(upload, grid)
	name_link_tags(upload, grid.cells.size())
	grid["upload"] = upload
	return grid


## Adds to [param upload], the options of a [method put_map] request, what [param grid] (read
## by [PathServerTileMapReader]) says of the map: its floors, shape and layout on hex maps,
## origin, cell size, costs and tags.
static func add_grid_options(upload: Dictionary, grid: Dictionary) -> void:
	if grid.floors > 1:
		upload["floors"] = grid.floors
	if grid.shape == "hex":
		upload["shape"] = "hex"
		upload["layout"] = grid.layout
	upload["origin"] = grid.origin
	upload["cell_size"] = grid.cell_size
	if not grid.costs.is_empty():
		upload["costs"] = grid.costs
	if not grid.tags.is_empty():
		upload["tags"] = grid.tags
		if not grid.tag_names.is_empty():
			upload["tag_names"] = grid.tag_names


## Names the tags of [param upload]'s [code]links[/code] (the options of a
## [code]put_map[/code] of [param cell_count] cells, floors included): a link's tag must be
## one of the map's [code]tag_names[/code], which need a [code]tags[/code] layer. A tag not
## named yet gets the next free value, and a map without tags gets a layer of zeros
## (untagged). Changes [param upload].
static func name_link_tags(upload: Dictionary, cell_count: int) -> void:
	var links: Variant = upload.get("links")
	if not links is Array:
		return
	var names: Dictionary = upload.get("tag_names", {}).duplicate()
	var used := {}
	for value: Variant in names.values():
		used[value] = true
	var next := 1
	for link: Variant in links:
		var tag: Variant = link.get("tag") if link is Dictionary else null
		if not (tag is String or tag is StringName) or str(tag) == "" or names.has(str(tag)):
			continue
		while used.has(next):
			next += 1
		if next > 255:
			# Left for the server to refuse, at the link's tag.
			return
		names[str(tag)] = next
		used[next] = true
	if names.is_empty():
		return
	upload["tag_names"] = names
	if not upload.has("tags"):
		var untagged := PackedByteArray()
		untagged.resize(cell_count)
		upload["tags"] = untagged


## A [code]get_map[/code] request's fields.
static func get_map(name: String, region: Rect2i, options: Dictionary) -> Dictionary:
	var fields := {"map": name}
	if region.has_area():
		fields["region"] = [region.position.x, region.position.y, region.size.x, region.size.y]
	return _with_options(fields, options)


## An [code]update[/code] request's fields.
static func update(name: String, fields: Dictionary, if_gen: int) -> Dictionary:
	var edit := {"map": name}
	for key: Variant in fields:
		if key not in PathServerOptions.CLIENT_OPTIONS:
			edit[key] = fields[key]
	if if_gen >= 0:
		edit["if_gen"] = if_gen
	return edit


## A [code]reachable[/code] request's fields.
static func reachable(
	map: String, start: Variant, budget: float, unit_size: Vector2i, options: Dictionary
) -> Dictionary:
	var fields := _query_fields(map, unit_size, options)
	fields["start"] = wire_point(start)
	fields["budget"] = budget
	return _with_options(fields, options)


## A [code]field[/code] request's fields.
static func field(
	map: String, goals: Variant, unit_size: Vector2i, options: Dictionary
) -> Dictionary:
	var fields := _query_fields(map, unit_size, options)
	fields["goals"] = goals
	return _with_options(fields, options)


## A [code]next_steps[/code] request's fields; the goals of the last call are not encoded
## again.
func next_steps(
	map: String, goals: Variant, positions: Variant, unit_size: Vector2i, options: Dictionary
) -> Dictionary:
	var fields := _query_fields(map, unit_size, options)
	# The same goals every frame: encoded once (a crowd's goal area may hold thousands).
	if typeof(goals) != typeof(_steps_goals) or goals != _steps_goals:
		_steps_goals = goals
		_steps_goals_encoded = PathServerMsgPack.Encoded.new(goals)
	fields["goals"] = _steps_goals_encoded
	# One bin of little-endian float32 pairs (every platform Godot runs on is little-endian):
	# the compact form, and the reply's steps come back the same way. Units on other floors
	# than 0 go as [x, y, floor] arrays, and their steps come back so.
	fields["positions"] = PathServerPacked.wire_positions(positions)
	return _with_options(fields, options)


## A [code]check_block[/code] request's fields.
static func check_block(
	map: String,
	cells: Array,
	rects: Array,
	points: Variant,
	unit_size: Vector2i,
	options: Dictionary
) -> Dictionary:
	var fields := _query_fields(map, unit_size, options)
	if not cells.is_empty():
		fields["cells"] = cells
	if not rects.is_empty():
		fields["rects"] = rects
	fields["points"] = points
	return _with_options(fields, options)


## The fields every query leads with: the map, the unit's size and the client's space.
static func _query_fields(map: String, unit_size: Vector2i, options: Dictionary) -> Dictionary:
	return {
		"map": options.get("map", map),
		"unit_size": wire_unit_size(unit_size),
		"space": PathServerOptions.CLIENT_DEFAULTS.space,
	}


static func _with_options(fields: Dictionary, options: Dictionary) -> Dictionary:
	for key: Variant in options:
		if key not in PathServerOptions.CLIENT_OPTIONS:
			fields[key] = options[key]
	return fields


## A path request's encoding cut around the values of [constant PATH_HOLES].
class PathTemplate:
	extends RefCounted

	## The bytes between the holes' values: one piece more than holes.
	var pieces: Array[PackedByteArray] = []
	## Which hole each cut is, in the body's order.
	var holes: Array[String] = []
	## The body without the holes' values, read-only: what reading the reply needs.
	var body := {}
	## When the holes are id, start and goal (a path request's order): every byte after the
	## id, reversed, with zeros for start's and goal's coordinates, and where each of those
	## four float64 goes (x and y of start, of goal). See [method fill].
	var _after_id := PackedByteArray()
	var _at := PackedInt32Array()

	## [param body]'s [param bytes] cut, or null when the options can't be told apart by == (a
	## container: a Dictionary in another key order encodes otherwise) or name a hole.
	static func cut(body: Dictionary, bytes: PackedByteArray, options: Dictionary) -> PathTemplate:
		for key: Variant in options:
			var value: Variant = options[key]
			if key in PATH_HOLES or value is Dictionary or value is Array or value is Object:
				return null
		var template := PathTemplate.new()
		# The map's header as the encoder wrote it, then each key and value.
		var piece := bytes.slice(0, 1 if body.size() < 16 else 3)
		for key: Variant in body:
			PathServerMsgPack.write(piece, key)
			if key in PATH_HOLES:
				template.pieces.append(piece)
				template.holes.append(key)
				piece = PackedByteArray()
			else:
				PathServerMsgPack.write(piece, body[key])
		template.pieces.append(piece)
		if template.holes == PATH_HOLES:
			template._cut_after_id()
		if template.fill(body.id, body.get("start"), body.get("goal")) != bytes:
			return null
		template.body = body.duplicate()
		for hole: String in PATH_HOLES:
			template.body.erase(hole)
		template.body.make_read_only()
		return template

	## The request's bytes with [param id], [param start] and [param goal] written in.
	func fill(id: int, start: Variant, goal: Variant) -> PackedByteArray:
		var out := pieces[0].duplicate()
		if not _at.is_empty():
			# A float64 goes out big-endian and encode_double writes little-endian: written
			# into the reversed bytes, then all reversed at once.
			var after_id := _after_id.duplicate()
			after_id.encode_double(_at[0], start.x)
			after_id.encode_double(_at[1], start.y)
			after_id.encode_double(_at[2], goal.x)
			after_id.encode_double(_at[3], goal.y)
			after_id.reverse()
			PathServerMsgPack.write(out, id)
			out.append_array(after_id)
			return out
		for i in holes.size():
			match holes[i]:
				"id":
					PathServerMsgPack.write(out, id)
				"start":
					PathServerMsgPack.write(out, start)
				"goal":
					PathServerMsgPack.write(out, goal)
			out.append_array(pieces[i + 1])
		return out

	func _cut_after_id() -> void:
		var after_id := pieces[1].duplicate()
		var at := PackedInt32Array()
		for i in 2:
			# [x, y]: a fixarray of two, each a float64 tag and eight bytes.
			var point := after_id.size()
			after_id.append_array(PackedByteArray([0x92, 0xCB, 0, 0, 0, 0, 0, 0, 0, 0, 0xCB]))
			after_id.append_array(PackedByteArray([0, 0, 0, 0, 0, 0, 0, 0]))
			after_id.append_array(pieces[i + 2])
			at.append_array([point + 2, point + 11])
		after_id.reverse()
		for i in at.size():
			# The value's eight bytes, seen from the end of the reversed array.
			at[i] = after_id.size() - at[i] - 8
		_after_id = after_id
		_at = at
