class_name PathServerReplies
extends RefCounted
## Reads the server's replies into [PathServerResult]s for [PathServerClient], and keeps the
## newest generation each reply names per map, and what the client learnt of each map's
## floors and links (what it uploaded, what [code]get_map[/code] and [code]maps[/code] said).

## A reply named a newer generation of [param map_name] than one seen before.
signal map_generation_changed(map_name: String, gen: int)

## The statuses of a path that was answered ("no_path" too).
const ANSWERS := ["found", "partial", "no_path"]
## Keys of a path reply [method path_head] looks for, each as its length (a fixstr's) times 256
## plus its first byte: the keys of a path reply differ in that.
const _ID := 2 << 8 | 0x69
const _OK := 2 << 8 | 0x6F
const _STATUS := 6 << 8 | 0x73
const _PATH := 4 << 8 | 0x70
const _START := 5 << 8 | 0x73
const _GEN := 3 << 8 | 0x67
const _LINKS := 5 << 8 | 0x6C
## Bytes after the type byte of float32, float64, uint8 to uint64 and int8 to int64 (0xCA on).
const SCALAR_BYTES: Array[int] = [4, 8, 1, 2, 4, 8, 1, 2, 4, 8]
## The type byte of an unsigned int by its encoded size: uint8 in 2 bytes, uint16 in 3, uint32
## in 5 (a positive fixint is 1 byte, its own type byte).
const TAIL_TAGS: Array[int] = [-1, -1, 0xCC, 0xCD, -1, 0xCE]

var _generations := {}
## Map name -> its floors, where more than one is known.
var _floors := {}
## Map name -> its links as last uploaded or read (the wire's dictionaries).
var _links := {}


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
	# On a map of several floors every point of the reply is a triple, start and goal too.
	var start: Variant = reply.get("start")
	var triples: bool = start is Array and start.size() == 3
	if path is PackedByteArray:
		var decoded := PathServerPacked.points_and_floors(
			path, request_body.get("space") == "grid", triples
		)
		result.waypoints = decoded[0]
		result.floors = decoded[1]
	else:
		result.waypoints = PathServerPacked.plain_points(path)
		result.floors = PathServerPacked.plain_floors(path)
	var taken: Variant = reply.get("links", [])
	result.links = taken if taken is Array else []
	# Everything the reply says besides the path, so fields the server adds later show up too.
	var info: Dictionary = reply.duplicate()
	info.erase("id")
	info.erase("ok")
	info.erase("path")
	info["start"] = PathServerPacked.plain_point(start)
	info["goal"] = PathServerPacked.plain_point(reply.get("goal"))
	if triples:
		info["start_floor"] = PathServerPacked.plain_floor(start)
		info["goal_floor"] = PathServerPacked.plain_floor(reply.get("goal"))
		if floors_of(str(request_body.get("map"))) < 2:
			note_floors(str(request_body.get("map")), 2)
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


## A packed [code]path[/code] reply read in part, for a synchronous call: its id, status,
## waypoints and generation, without decoding the rest (cost, length, start, ...), which
## [param result] reads only when its [member PathServerResult.info] or
## [member PathServerResult.reply] is first asked for. False, with [param result] untouched,
## when the reply is anything else (not [param result]'s, an error, points with floors,
## links): then [method read_path] reads it whole.
func read_path_head(
	result: PathServerResult, bytes: PackedByteArray, request_body: Dictionary
) -> bool:
	var head := path_head(bytes)
	if head.is_empty() or head[0] != result.id or not head[1] in ANSWERS:
		return false
	var map := str(request_body.get("map"))
	if floors_of(map) > 1:
		return false
	result.status = head[1]
	result.waypoints = PathServerPacked.points(head[2], request_body.get("space") == "grid")
	result.ok = true
	result.read_rest = read_path_bytes.bind(bytes, request_body)
	note_gen(map, head[3])
	return true


## [method read_path] of a reply's bytes.
func read_path_bytes(
	result: PathServerResult, bytes: PackedByteArray, request_body: Dictionary
) -> void:
	var decoded := PathServerMsgPack.decode(bytes)
	var reply: Variant = decoded[0]
	if decoded[1] != "":
		reply = client_error("bad_reply", decoded[1], result.id)
	read_path(result, reply, request_body)


## [code][id, status, path bin, gen][/code] of a successful packed path reply's bytes, the
## other members skipped; [code][][/code] when the bytes are anything else (a failed reply,
## start given as a triple, links, a value no path reply has).
static func path_head(data: PackedByteArray) -> Array:
	var size := data.size()
	if size == 0 or data[0] < 0x80 or data[0] > 0x8F:
		return []
	var head := [-1, "", null, -1]
	var pos := 1
	for entry in data[0] & 0x0F:
		if pos >= size:
			return []
		var key_size := data[pos] - 0xA0
		if key_size < 1 or key_size > 31 or pos + key_size + 1 >= size:
			return []
		var key := key_size << 8 | data[pos + 1]
		pos += key_size + 1
		var tag := data[pos]
		if tag == 0xCB or tag == 0xC2 or tag == 0xC3:
			# float64 and bool (cost, length, ok, start_snapped, ...): skipped here, cheaply.
			pos += 9 if tag == 0xCB else 1
			continue
		if key == _PATH:
			var width := tag - 0xC3  # bin8, bin16, bin32: a 1, 2 or 4 byte size
			if width < 1 or width > 3:
				return []
			width = 4 if width == 3 else width
			if pos + width >= size:
				return []
			var count := 0
			for i in width:
				count = count << 8 | data[pos + 1 + i]
			pos += 1 + width
			if pos + count > size:
				return []
			head[2] = data.slice(pos, pos + count)
			pos += count
			if entry == 3 and data[0] == 0x8C:
				# Twelve members, the path the fourth: a map without links, whose reply ends
				# with gen; the members between are left to the whole read.
				var gen := _tail_gen(data)
				if gen >= 0 and head[0] >= 0 and head[1] != "":
					head[3] = gen
					return head
			continue
		if key == _STATUS:
			if tag < 0xA0 or tag > 0xBF or pos + 1 + (tag & 0x1F) > size:
				return []
			head[1] = data.slice(pos + 1, pos + 1 + (tag & 0x1F)).get_string_from_ascii()
			pos += 1 + (tag & 0x1F)
			continue
		if key == _OK or key == _LINKS or key == _START and tag != 0x92:
			return []
		if key == _ID or key == _GEN:
			var value := _uint_at(data, pos)
			if value < 0:
				return []
			head[0 if key == _ID else 3] = value
		pos = _skip_scalars(data, pos)
		if pos < 0:
			return []
	if pos != size or head[2] == null or head[0] < 0:
		return []
	return head


## The value of a reply's last member when that is [code]gen[/code] (a positive fixint or a
## uint8 to uint32), else -1.
static func _tail_gen(data: PackedByteArray) -> int:
	var size := data.size()
	for value_size: int in [1, 2, 3, 5]:
		var key := size - value_size - 4
		if (
			key >= 0
			and data[key] == 0xA3
			and data[key + 1] == 0x67
			and data[key + 2] == 0x65
			and data[key + 3] == 0x6E
		):
			var tag := data[size - value_size]
			if tag == TAIL_TAGS[value_size] or value_size == 1 and tag < 0x80:
				return _uint_at(data, size - value_size)
	return -1


## A non-negative int at [param pos] (positive fixint, uint8 to uint32), else -1.
static func _uint_at(data: PackedByteArray, pos: int) -> int:
	var tag := data[pos]
	if tag < 0x80:
		return tag
	var width := 0
	if tag >= 0xCC and tag <= 0xCE:
		width = 1 << (tag - 0xCC)
	if width == 0 or pos + width >= data.size():
		return -1
	var value := 0
	for i in width:
		value = value << 8 | data[pos + 1 + i]
	return value


## Past the value at [param pos]: nil, a bool, an int, a float, a fixstr, or a fixarray of
## those; -1 for anything else.
static func _skip_scalars(data: PackedByteArray, pos: int) -> int:
	var tag := data[pos]
	var items := 1
	if tag >= 0x90 and tag <= 0x9F:
		items = tag & 0x0F
		pos += 1
	for i in items:
		if pos >= data.size():
			return -1
		tag = data[pos]
		if tag < 0x80 or tag >= 0xE0 or tag == 0xC0 or tag == 0xC2 or tag == 0xC3:
			pos += 1
		elif tag >= 0xA0 and tag <= 0xBF:
			pos += 1 + (tag & 0x1F)
		elif tag >= 0xCA and tag <= 0xD3:
			pos += 1 + SCALAR_BYTES[tag - 0xCA]
		else:
			return -1
	return pos if pos <= data.size() else -1


## The id of the reply in [param data]: read from its first member when that is the id (as the
## server writes every reply), else from the whole reply decoded; -1 when it has none.
static func reply_id(data: PackedByteArray) -> int:
	if data.size() > 4 and data[0] >= 0x80 and data[0] <= 0x8F and data[1] == 0xA2:
		if data[2] == 0x69 and data[3] == 0x64:
			var id := _uint_at(data, 4)
			if id >= 0:
				return id
	var reply: Variant = PathServerMsgPack.decode(data)[0]
	var id: Variant = reply.get("id") if reply is Dictionary else null
	return id if id is int else -1


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
## [code]info[/code] with [param extra_info] added. Notes the floors and links of what
## [param body] uploaded, once it is accepted, and those [code]maps[/code] lists.
func read_fields(
	result: PathServerResult, reply: Dictionary, extra_info: Dictionary, body := {}
) -> void:
	read_error(result, reply)
	result.ok = reply.get("ok") == true
	if result.ok:
		var map := str(body.get("map", ""))
		match body.get("op"):
			"put_map":
				note_floors(map, int(body.get("floors", 1)))
				note_links(map, body.get("links", []))
			"update":
				if body.has("links"):
					note_links(map, body.links)
			"drop_map":
				note_floors(map, 1)
				note_links(map, [])
			"maps":
				_note_listed_floors(reply.get("maps"))
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
		return
	note_floors(str(reply.get("map", "")), decoded.info.floors)
	note_links(str(reply.get("map", "")), decoded.info.links)


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


## The floors of [param map] as far as the client knows: 1 unless it uploaded the map with more,
## or a reply said so.
func floors_of(map: String) -> int:
	return _floors.get(map, 1)


## Notes that [param map] has [param floors] floors.
func note_floors(map: String, floors: int) -> void:
	if floors > 1:
		_floors[map] = floors
	else:
		_floors.erase(map)


## The links of [param map] as the client last uploaded or read them: the wire's
## dictionaries, in the map's order (a path's [member PathServerResult.links] index them).
func links_of(map: String) -> Array:
	return _links.get(map, [])


## Notes [param links] as the links of [param map].
func note_links(map: String, links: Variant) -> void:
	_links[map] = links if links is Array else []


## Notes the generation [param reply] names for [param map] (else for the reply's own map).
func note_generation(reply: Dictionary, map: String = "") -> void:
	if map == "":
		map = str(reply.get("map", ""))
	var gen: Variant = reply.get("gen")
	if gen is int:
		note_gen(map, gen)


## [method note_generation] of generation [param gen] of [param map].
func note_gen(map: String, gen: int) -> void:
	if map == "":
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
	var floors: PackedInt32Array = columns.floors
	var cost: PackedFloat32Array = columns.cost
	var errors: Dictionary = columns.errors
	# What every entry's info shares, for _entry_info: built on the info's first read.
	var shared := [cost, reply.get("gen"), body.get("map"), body.get("unit_size")]
	var with_floors := not floors.is_empty()
	batch.resize(status.size())
	for i in status.size():
		var item := PathServerResult.new()
		item.id = id
		batch[i] = item
		var code := status[i]
		if code >= PathServerPacked.ERROR_STATUS:
			var error: Variant = errors.get(i)
			if not error is Dictionary:
				error = {"code": "bad_reply", "message": "entry %d failed without an error" % i}
			read_error(item, {"ok": false, "error": error, "retryable": false})
			continue
		item.reply = reply
		item.ok = true
		item.status = PathServerPacked.STATUSES[code]
		item.waypoints = points.slice(offset[i], offset[i + 1])
		if with_floors:
			item.floors = floors.slice(offset[i], offset[i + 1])
		item.read_rest = _entry_info.bind(i, shared)


## A packed batch entry's [member PathServerResult.info]: its status and cost, the batch's gen,
## map and unit size ([param shared]).
static func _entry_info(result: PathServerResult, i: int, shared: Array) -> void:
	result.info = {
		"status": result.status,
		"cost": shared[0][i],
		"gen": shared[1],
		"map": shared[2],
		"unit_size": shared[3],
	}


## Notes the floors of every map a [code]maps[/code] reply lists.
func _note_listed_floors(listed: Variant) -> void:
	if listed is Dictionary:
		for name: Variant in listed:
			var entry: Variant = listed[name]
			if entry is Dictionary:
				note_floors(str(name), int(entry.get("floors", 1)))
	elif listed is Array:
		for entry: Variant in listed:
			if entry is Dictionary and entry.has("name"):
				note_floors(str(entry.name), int(entry.get("floors", 1)))
