class_name PathServerReplies
extends RefCounted
## Reads the server's replies into [PathServerResult]s for [PathServerClient], and keeps the
## newest generation each reply names per map.

## A reply named a newer generation of [param map_name] than one seen before.
signal map_generation_changed(map_name: String, gen: int)

## The statuses of a path that was answered ("no_path" too).
const ANSWERS := ["found", "partial", "no_path"]

var _generations := {}


## An error reply as the server writes one, for errors the client finds itself.
static func client_error(code: String, message: String, id: int, retryable := false) -> Dictionary:
	return {
		"id": id,
		"ok": false,
		"error": {"code": code, "message": message, "at": null},
		"retryable": retryable,
	}


## Sets [param result]'s reply and, when the reply failed, its error (code, message,
## retryable, [code]info.at[/code]).
static func read_error(result: PathServerResult, reply: Dictionary) -> void:
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
	if reply.get("gen") is int:
		# A "conflict" from update's if_gen names the map's current generation.
		result.info["gen"] = reply.gen
	result.ok = false


## A reply to [param request_body], a [code]path[/code] request: status, waypoints (packed or
## not) and every other field in [code]info[/code]. [code]no_path[/code] is ok.
func read_path(result: PathServerResult, reply: Variant, request_body: Dictionary) -> void:
	if not reply is Dictionary:
		reply = client_error("bad_reply", "a path reply that is not a map: %s" % reply, result.id)
	read_error(result, reply)
	if reply.get("ok") != true:
		return
	result.status = str(reply.get("status", ""))
	var path: Variant = reply.get("path", [])
	result.waypoints = (
		PathServerPacked.points(path, request_body.get("space") == "grid")
		if path is PackedByteArray
		else PathServerPacked.plain_points(path)
	)
	# Everything the reply says besides the path, so fields the server adds later show up too.
	var info: Dictionary = reply.duplicate()
	info.erase("id")
	info.erase("ok")
	info.erase("path")
	info["start"] = PathServerPacked.plain_point(reply.get("start"))
	info["goal"] = PathServerPacked.plain_point(reply.get("goal"))
	info["map"] = request_body.get("map")
	info["unit_size"] = request_body.get("unit_size")
	result.info = info
	note_generation(reply, str(request_body.get("map")))
	# "no_path" is an answer like the others: ok, with empty waypoints.
	result.ok = result.status in ANSWERS
	if not result.ok:
		read_error(
			result,
			client_error("bad_reply", "a path reply with status '%s'" % result.status, result.id)
		)


## A reply to [param body], a [code]paths[/code] request: [param result] says whether the
## batch was answered, [param batch] gets one result an entry in order (each with the batch's
## error when the whole batch failed).
func read_batch(
	result: PathServerResult, batch: Array[PathServerResult], body: Dictionary, reply: Dictionary
) -> void:
	var entries: int = body.requests.size() if body.has("requests") else body.starts.size() / 8
	read_error(result, reply)
	var problem := ""
	var columns := {}
	if result.code == "" and reply.get("status") is PackedByteArray:
		columns = PathServerPacked.columns(reply, entries, body.space == "grid")
		problem = columns.get("problem", "")
		note_generation(reply, str(body.get("map")))
	elif (
		result.code == ""
		and not (reply.get("results") is Array and reply.results.size() == entries)
	):
		problem = "no result per request"
	if problem != "":
		read_error(result, client_error("bad_reply", "a batch reply: " + problem, result.id))
	result.ok = result.code == ""
	if result.ok and not columns.is_empty():
		_read_packed_entries(result.id, batch, body, columns, reply)
		return
	var failure := (
		reply if reply.has("error") else client_error(result.code, result.message, result.id)
	)
	for i in entries:
		var item := PathServerResult.new()
		item.id = result.id
		if not result.ok:
			read_error(item, failure)
		else:
			var request := body.duplicate()
			request.merge(body.requests[i], true)
			read_path(item, reply.results[i], request)
		batch.append(item)


## A reply of any other op ("put_map", "update", "ping", ...): ok, and the reply's fields in
## [code]info[/code] with [param extra_info] added.
func read_fields(result: PathServerResult, reply: Dictionary, extra_info: Dictionary) -> void:
	read_error(result, reply)
	result.ok = reply.get("ok") == true
	if result.ok:
		for key: Variant in reply:
			if key not in ["id", "ok"]:
				result.info[key] = reply[key]
		result.info.merge(extra_info)


## A [code]get_map[/code] reply, its bins decoded (see [method PathServerPacked.map_info]).
func read_map(result: PathServerResult, reply: Dictionary) -> void:
	read_error(result, reply)
	result.ok = reply.get("ok") == true
	if not result.ok:
		return
	var decoded := PathServerPacked.map_info(reply)
	result.info = decoded.info
	if decoded.problem != "":
		var message := "a get_map reply with bad %s" % decoded.problem
		read_error(result, client_error("bad_reply", message, result.id))


## A reply of the query [param op] ("reachable", "field", ...), its bins decoded into packed
## arrays (see [method PathServerPacked.query_info]).
func read_query(result: PathServerResult, reply: Dictionary, op: String) -> void:
	read_error(result, reply)
	result.ok = reply.get("ok") == true
	if not result.ok:
		return
	var decoded := PathServerPacked.query_info(reply, op)
	result.info = decoded.info
	if decoded.problem != "":
		var message := "a %s reply: %s" % [op, decoded.problem]
		read_error(result, client_error("bad_reply", message, result.id))


## Notes the generation [param reply] names for [param map] (else for the reply's own map).
func note_generation(reply: Dictionary, map: String = "") -> void:
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


## A packed batch's entries: each its slice of the points, no per-point work (the columns
## read once, out of the loop: this is the batch's cost per entry).
func _read_packed_entries(
	id: int,
	batch: Array[PathServerResult],
	body: Dictionary,
	columns: Dictionary,
	reply: Dictionary
) -> void:
	var status: PackedByteArray = columns.status
	var offset: PackedInt32Array = columns.offset
	var points: PackedVector2Array = columns.points
	var cost: PackedFloat32Array = columns.cost
	var errors: Dictionary = columns.errors
	var gen: Variant = reply.get("gen")
	var map: Variant = body.get("map")
	var unit_size: Variant = body.get("unit_size")
	batch.resize(status.size())
	for i in status.size():
		var item := PathServerResult.new()
		item.id = id
		batch[i] = item
		if status[i] >= PathServerPacked.ERROR_STATUS:
			var error: Variant = errors.get(i)
			if not error is Dictionary:
				error = {"code": "bad_reply", "message": "entry %d failed without an error" % i}
			read_error(item, {"ok": false, "error": error, "retryable": false})
			continue
		item.reply = reply
		item.ok = true
		item.status = PathServerPacked.STATUSES[status[i]]
		item.waypoints = points.slice(offset[i], offset[i + 1])
		item.info = {
			"status": item.status, "cost": cost[i], "gen": gen, "map": map, "unit_size": unit_size
		}
