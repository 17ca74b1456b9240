class_name PathServerRequests
extends RefCounted
## The fields of [PathServerClient]'s requests, built from its methods' arguments: the map
## ([param map] unless the options name one), the unit size and space the wire wants, the
## options ([constant PathServerOptions.CLIENT_OPTIONS] left out), points and cells in their
## compact forms.

var _steps_goals := PackedVector2Array()
var _steps_goals_encoded := PathServerMsgPack.Encoded.new(PackedVector2Array())


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


## A [code]path[/code] request's fields.
static func path(
	map: String, start: Vector2, goal: Vector2, unit_size: Vector2i, options: Dictionary
) -> Dictionary:
	var fields := {
		"map": options.get("map", map),
		"start": start,
		"goal": goal,
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
		"costs", "heights", "shape", "layout", "origin", "cell_size", "tags", "tag_names", "classes"
	]
	keys.append_array(options.keys().filter(func(key: Variant) -> bool: return key not in keys))
	for key: Variant in keys:
		if options.has(key) and key not in PathServerOptions.CLIENT_OPTIONS:
			var value: Variant = options[key]
			fields[key] = value.to_byte_array() if value is PackedFloat32Array else value
	return fields


## [param layer] read as [PathServerTileMapReader] reads it, with [param options] split:
## the reader's, and [code]"upload"[/code], the options of its [method put_map] request
## (shape and layout on hex maps, origin, cell size, costs and tags from the layer).
static func read_tilemap(layer: TileMapLayer, options: Dictionary) -> Dictionary:
	var reader_options := {}
	var upload := {}
	for key: Variant in options:
		if PathServerTileMapReader.OPTIONS.has(key):
			reader_options[key] = options[key]
		else:
			upload[key] = options[key]
	var grid := PathServerTileMapReader.read(layer, reader_options)
	if grid.error != "":
		return grid
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
	grid["upload"] = upload
	return grid


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
	map: String, start: Vector2, budget: float, unit_size: Vector2i, options: Dictionary
) -> Dictionary:
	var fields := _query_fields(map, unit_size, options)
	fields["start"] = start
	fields["budget"] = budget
	return _with_options(fields, options)


## A [code]field[/code] request's fields.
static func field(
	map: String, goals: PackedVector2Array, unit_size: Vector2i, options: Dictionary
) -> Dictionary:
	var fields := _query_fields(map, unit_size, options)
	fields["goals"] = goals
	return _with_options(fields, options)


## A [code]next_steps[/code] request's fields; the goals of the last call are not encoded
## again.
func next_steps(
	map: String,
	goals: PackedVector2Array,
	positions: PackedVector2Array,
	unit_size: Vector2i,
	options: Dictionary
) -> Dictionary:
	var fields := _query_fields(map, unit_size, options)
	# The same goals every frame: encoded once (a crowd's goal area may hold thousands).
	if goals != _steps_goals:
		_steps_goals = goals
		_steps_goals_encoded = PathServerMsgPack.Encoded.new(goals)
	fields["goals"] = _steps_goals_encoded
	# One bin of little-endian float32 pairs (every platform Godot runs on is little-endian):
	# the compact form, and the reply's steps come back the same way.
	fields["positions"] = PathServerPacked.to_bin(positions, false)
	return _with_options(fields, options)


## A [code]check_block[/code] request's fields.
static func check_block(
	map: String,
	cells: Array,
	rects: Array,
	points: PackedVector2Array,
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
