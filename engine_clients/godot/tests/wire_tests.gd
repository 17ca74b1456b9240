extends "res://suite_part.gd"
## The wire without a server (msgpack, ZMTP, the golden vectors of docs/protocol.md, the
## requests' encodings), and the golden requests sent to the real server.

# -- msgpack ----------------------------------------------------------------------------------


func test_msgpack_encoding() -> void:
	# Expected bytes are msgpack-python's (packb with its defaults) for the same values.
	var cases := [
		[null, "c0"],
		[true, "c3"],
		[false, "c2"],
		[0, "00"],
		[127, "7f"],
		[128, "cc80"],
		[255, "ccff"],
		[256, "cd0100"],
		[65535, "cdffff"],
		[65536, "ce00010000"],
		[4294967296, "cf0000000100000000"],
		[-1, "ff"],
		[-32, "e0"],
		[-33, "d0df"],
		[-128, "d080"],
		[-129, "d1ff7f"],
		[-32768, "d18000"],
		[-32769, "d2ffff7fff"],
		[-2147483649, "d3ffffffff7fffffff"],
		[1.5, "cb3ff8000000000000"],
		[-0.1, "cbbfb999999999999a"],
		["hello", "a568656c6c6f"],
		["a".repeat(31), "bf" + "61".repeat(31)],
		["b".repeat(32), "d920" + "62".repeat(32)],
		["c".repeat(256), "da0100" + "63".repeat(256)],
		["héllo→", "a968c3a96c6c6fe28692"],
		[PackedByteArray([0, 1, 255]), "c4030001ff"],
		[range(15), "9f000102030405060708090a0b0c0d0e"],
		[range(16), "dc0010000102030405060708090a0b0c0d0e0f"],
		[
			{"id": 7, "op": "path", "start": Vector2(1, 2), "unit_size": Vector2i(2, 3)},
			(
				"84a2696407a26f70a470617468a5737461727492cb3ff0000000000000cb4000000000000000"
				+ "a9756e69745f73697a65920203"
			)
		],
	]
	var wide := {}
	for i in 16:
		wide["k%d" % i] = i
	cases.append(
		[
			wide,
			(
				"de0010a26b3000a26b3101a26b3202a26b3303a26b3404a26b3505a26b3606a26b3707a26b3808"
				+ "a26b3909a36b31300aa36b31310ba36b31320ca36b31330da36b31340ea36b31350f"
			)
		]
	)
	var mismatches := []
	for case: Array in cases:
		var got := PathServerMsgPack.encode(case[0]).hex_encode()
		if got != case[1]:
			mismatches.append("%s -> %s, expected %s" % [str(case[0]).left(40), got, case[1]])
	check(
		mismatches.is_empty(),
		"msgpack encodes %d values as msgpack-python does" % cases.size(),
		mismatches
	)


func test_msgpack_decoding() -> void:
	var value := {
		"id": 12,
		"ok": true,
		"path": [[1.5, -2.0], [300, -70000]],
		"none": null,
		"text": "x".repeat(300),
		"bin": PackedByteArray([9, 8]),
		"big": 9007199254740993,
		"nested": {"a": [{"b": [false]}]},
	}
	var decoded := PathServerMsgPack.decode(PathServerMsgPack.encode(value))
	check(decoded[1] == "" and decoded[0] == value, "msgpack round trip", decoded)
	# float32, uint64 and fixext bytes the encoder never writes.
	check_equal(
		PathServerMsgPack.decode("ca3fc00000".hex_decode())[0], 1.5, "msgpack decodes float32"
	)
	check_equal(
		PathServerMsgPack.decode("cf7fffffffffffffff".hex_decode())[0],
		9223372036854775807,
		"msgpack decodes uint64"
	)
	# A map's keys and scalar values are read on a path of their own: the same values, and
	# below, the same refusals.
	var reply := {
		"id": 300,
		"ok": true,
		"status": "found",
		"path": PackedByteArray([1, 0, 0, 0, 2, 0, 0, 0]),
		"cost": 1.5,
		"length": -0.25,
		"expanded": 0,
		"start": [1, 2],
		"start_snapped": false,
		"none": null,
		"negative": -5,
		"text": "héllo",
		"wide": "w".repeat(40),
	}
	decoded = PathServerMsgPack.decode(PathServerMsgPack.encode(reply))
	check(decoded[1] == "" and decoded[0] == reply, "msgpack round trip of a reply", decoded)
	var refusals := {
		"truncated": "92a568656c6c",
		"trailing bytes": "c0c0",
		"unsupported type": "d40100",
		"uint64 above 2^63": "cfffffffffffffffff",
		"huge array header": "dd7fffffff",
		"nested deeper": "91".repeat(100) + "c0",
		"a float cut short in a map": "82a161cb3ff0",
		"a string cut short in a map": "81a161a56162",
		"a key cut short": "81a56162",
		"a map without its last value": "82a161c3a162",
		"maps nested deeper": "81a161".repeat(70) + "c0",
	}
	for what: String in refusals:
		var result := PathServerMsgPack.decode(refusals[what].hex_decode())
		check(result[0] == null and result[1] != "", "msgpack refuses %s" % what, result)
	var deep := PathServerMsgPack.decode(("81a161".repeat(64) + "c0").hex_decode())
	check(deep[1] == "", "msgpack reads maps nested 64 deep", deep[1])


# -- ZMTP -------------------------------------------------------------------------------------


func test_zmtp_bytes() -> void:
	var greeting := "ff00000000000000007f03004e554c4c" + "00".repeat(48)
	check_equal(PathServerZmtpDealer.greeting().hex_encode(), greeting, "ZMTP greeting bytes")
	var ready := "041c055245414459" + "0b536f636b65742d5479706500000006" + "4445414c4552"
	check_equal(PathServerZmtpDealer.ready_command().hex_encode(), ready, "ZMTP READY bytes")
	var short := PathServerZmtpDealer.encode_frame(PackedByteArray([1, 2]), true, false)
	check_equal(short.hex_encode(), "01020102", "ZMTP short frame with MORE")
	var body := PackedByteArray()
	body.resize(300)
	var long := PathServerZmtpDealer.encode_frame(body, false, false)
	check_equal(long.slice(0, 9).hex_encode(), "02000000000000012c", "ZMTP long frame header")
	check_equal(long.size(), 309, "ZMTP long frame size")
	var router_ready := (
		"0429055245414459"
		+ "0b536f636b65742d5479706500000006524f55544552"
		+ "084964656e7469747900000000"
	)
	var frame := router_ready.hex_decode().slice(2)
	var properties: Variant = PathServerZmtpDealer.parse_properties(frame, 6)
	check(
		(
			properties is Dictionary
			and properties.get("Socket-Type") == "ROUTER".to_ascii_buffer()
			and properties.get("Identity") == PackedByteArray()
		),
		"ZMTP READY properties parsed generically",
		properties
	)
	check_equal(
		PathServerZmtpDealer.parse_endpoint("tcp://localhost:5555"),
		["127.0.0.1", 5555],
		"endpoint parsing"
	)
	check_equal(PathServerZmtpDealer.parse_endpoint("ipc:///tmp/x"), [], "non-tcp endpoint refused")


## Plays a libzmq ROUTER over a TCPServer: answers the greeting as libzmq does (padding 01,
## version 3.1), sends PING, a long frame and a two-frame message, and expects PONG back.
func test_ping_pong_with_fake_router() -> void:
	var server := TCPServer.new()
	server.listen(0, "127.0.0.1")
	var dealer := PathServerZmtpDealer.new()
	dealer.open("tcp://127.0.0.1:%d" % server.get_local_port())
	var peer: StreamPeerTCP = null
	var inbox := PackedByteArray()
	var received := []
	var phase := 0
	# The long message, then the golden replies when the protocol document provides them.
	var expected_messages := 3 if golden.has("ping-reply-zmtp-bare") else 1
	var deadline := Time.get_ticks_msec() + 5000
	while phase < 3 and Time.get_ticks_msec() < deadline:
		received.append_array(dealer.poll())
		if peer == null and server.is_connection_available():
			peer = server.take_connection()
		if peer != null:
			peer.poll()
			if peer.get_available_bytes() > 0:
				inbox.append_array(peer.get_data(peer.get_available_bytes())[1])
		if phase == 0 and inbox.size() >= 64:
			var answer := "ff00000000000000017f03014e554c4c".hex_decode()
			answer.resize(64)
			peer.put_data(answer)
			peer.put_data(
				(
					(
						"04290552454144590b536f636b65742d5479706500000006524f55544552"
						+ "084964656e7469747900000000"
					)
					. hex_decode()
				)
			)
			inbox = inbox.slice(64)
			phase = 1
		elif phase == 1 and dealer.is_ready() and inbox.size() >= 30:
			var ready := "041c055245414459" + "0b536f636b65742d5479706500000006" + "4445414c4552"
			check_equal(inbox.slice(0, 30).hex_encode(), ready, "fake router got READY DEALER")
			inbox = inbox.slice(30)
			# PING with a TTL of 0x0064 and the context "ctx", which PONG must echo.
			peer.put_data(("040a04" + "50494e47" + "0064" + "637478").hex_decode())
			var payload := PackedByteArray()
			payload.resize(300)
			payload.fill(7)
			var message := PathServerZmtpDealer.encode_frame(PackedByteArray(), true, false)
			message.append_array(PathServerZmtpDealer.encode_frame(payload, false, false))
			peer.put_data(message)
			# The golden replies as the server frames them, with and without the delimiter.
			peer.put_data(golden.get("ping-reply-zmtp-delimited", PackedByteArray()))
			peer.put_data(golden.get("ping-reply-zmtp-bare", PackedByteArray()))
			phase = 2
		elif phase == 2 and inbox.size() >= 10 and received.size() >= expected_messages:
			phase = 3
		await process_frame
	check_equal(inbox.slice(0, 10).hex_encode(), "040804504f4e47637478", "PING answered with PONG")
	check(
		(
			received.size() == expected_messages
			and received[0].size() == 2
			and received[0][1].size() == 300
		),
		"long frame and multipart message received",
		received
	)
	if expected_messages == 3:
		var reply: PackedByteArray = golden["ping-reply"]
		check(
			(
				received.size() == 3
				and received[1] == [PackedByteArray(), reply]
				and received[2] == [reply]
			),
			"golden ping-reply-zmtp-delimited and -bare parsed into their frames",
			received.slice(1)
		)
	dealer.close()
	if peer:
		peer.disconnect_from_host()
	server.stop()


# -- golden vectors ---------------------------------------------------------------------------


func protocol_doc_path() -> String:
	var path := OS.get_environment("PATHSERVER_PROTOCOL")
	if path == "":
		path = ProjectSettings.globalize_path("res://").path_join("../../../docs/protocol.md")
	return path.simplify_path()


## Reads every block fenced as ```hex name=NAME of the protocol document.
func load_golden_vectors() -> Dictionary:
	var vectors := {}
	var text := FileAccess.get_file_as_string(protocol_doc_path())
	var blocks := RegEx.create_from_string("```hex name=([A-Za-z0-9_-]+)\\s*\\n([^`]*)```")
	var spaces := RegEx.create_from_string("\\s+")
	for found in blocks.search_all(text):
		vectors[found.get_string(1)] = spaces.sub(found.get_string(2), "", true).hex_decode()
	return vectors


func test_golden_vectors() -> void:
	golden = load_golden_vectors()
	var needed := [
		"ping-request",
		"ping-reply",
		"ping-request-zmtp-delimited",
		"ping-reply-zmtp-delimited",
		"ping-request-zmtp-bare",
		"ping-reply-zmtp-bare",
		"malformed-request",
		"malformed-reply",
		"invalid-request",
		"invalid-reply",
		"path-request",
	]
	var missing := needed.filter(func(name: String) -> bool: return not golden.has(name))
	check(missing.is_empty(), "golden vectors found in %s" % protocol_doc_path(), missing)
	if not missing.is_empty():
		return
	var requests := {
		"ping-request": {"id": 1, "op": "ping"},
		"invalid-request": {"id": 2, "op": "ping", "x": 1},
		"path-request":
		{
			"id": 5,
			"op": "path",
			"map": "example",
			"start": Vector2(1.5, 2.0),
			"goal": Vector2i(30, 12),
			"unit_size": PathServerClient.wire_unit_size(Vector2i(2, 2)),
			"space": "world",
		},
	}
	for name: String in requests:
		var encoded := PathServerMsgPack.encode(requests[name])
		check_equal(encoded.hex_encode(), golden[name].hex_encode(), "golden %s encoded" % name)
	var replies := {
		"ping-reply": {"id": 1, "ok": true, "protocol": 1},
		"malformed-reply":
		{
			"id": null,
			"ok": false,
			"error": {"code": "malformed", "message": "request is not valid msgpack", "at": null},
			"retryable": false,
		},
		"invalid-reply":
		{
			"id": 2,
			"ok": false,
			"error":
			{
				"code": "invalid_request",
				"message": "unknown field 'x' for op 'ping'; accepted: id, op",
				"at": "x",
			},
			"retryable": false,
		},
	}
	for name: String in replies:
		var decoded := PathServerMsgPack.decode(golden[name])
		check(decoded[1] == "" and decoded[0] == replies[name], "golden %s decoded" % name, decoded)
		var again := PathServerMsgPack.encode(decoded[0]).hex_encode()
		check_equal(again, golden[name].hex_encode(), "golden %s re-encoded byte for byte" % name)
	var body: PackedByteArray = golden["ping-request"]
	var delimited := PathServerZmtpDealer.encode_frame(PackedByteArray(), true, false)
	delimited.append_array(PathServerZmtpDealer.encode_frame(body, false, false))
	check_equal(
		delimited.hex_encode(),
		golden["ping-request-zmtp-delimited"].hex_encode(),
		"golden ping-request-zmtp-delimited framed"
	)
	check_equal(
		PathServerZmtpDealer.encode_frame(body, false, false).hex_encode(),
		golden["ping-request-zmtp-bare"].hex_encode(),
		"golden ping-request-zmtp-bare framed"
	)


## Sends the golden requests' exact bytes to the real server through a bare dealer and expects
## the golden replies byte for byte, with and without the empty delimiter.
func test_golden_vectors_on_the_wire() -> void:
	if not golden.has("ping-request"):
		return
	var dealer := PathServerZmtpDealer.new()
	dealer.open(endpoint)
	var cases := [
		[[PackedByteArray(), golden["ping-request"]], 2, "ping-reply", "delimited"],
		[[golden["ping-request"]], 1, "ping-reply", "bare"],
		[[PackedByteArray(), golden["malformed-request"]], 2, "malformed-reply", "delimited"],
		[[PackedByteArray(), golden["invalid-request"]], 2, "invalid-reply", "delimited"],
	]
	var ready := await wait_until(
		func() -> bool: return dealer.poll().is_empty() and dealer.is_ready(), 5.0
	)
	check(ready, "a bare dealer completes the handshake with the server", dealer.last_error)
	for case: Array in cases:
		dealer.send(case[0])
		var received := []
		await wait_until(
			func() -> bool:
				received.append_array(dealer.poll())
				return not received.is_empty(),
			5.0
		)
		var message: Array = received[0] if received.size() > 0 else []
		check(
			(
				message.size() == case[1]
				and message[-1] == golden[case[2]]
				and (case[1] == 1 or message[0].is_empty())
			),
			"server answers golden %s %s with its bytes" % [case[2], case[3]],
			message
		)
	dealer.close()


## The golden vectors of the queries beyond one path: the requests as this client's types
## encode them, and the replies as its results decode them (bins into packed arrays).
func test_query_golden_vectors() -> void:
	var court := "court"
	var positions := PackedFloat32Array([0.5, 0.5, 3.5, 0.5]).to_byte_array()
	var requests := {
		"court-put-request":
		{
			"id": 1,
			"op": "put_map",
			"map": court,
			"width": 4,
			"height": 3,
			"cells": PackedByteArray([1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1]),
		},
		"goals-request":
		{
			"id": 2,
			"op": "path",
			"map": court,
			"start": Vector2i(0, 0),
			"goals": [Vector2i(3, 2), Vector2i(0, 2)],
			"smooth": "none",
		},
		"reachable-request":
		{"id": 3, "op": "reachable", "map": court, "start": Vector2i(0, 0), "budget": 2},
		"field-request":
		{
			"id": 4,
			"op": "field",
			"map": court,
			"goals": [Vector2i(3, 2)],
			"region": Rect2i(0, 0, 2, 2),
		},
		"next-steps-request":
		{
			"id": 5,
			"op": "next_steps",
			"map": court,
			"goals": [Vector2i(3, 2)],
			"positions": positions,
		},
		"check-block-request":
		{
			"id": 6,
			"op": "check_block",
			"map": court,
			"rects": [Rect2i(2, 0, 1, 3)],
			"points": [Vector2i(0, 0), Vector2i(3, 0), Vector2i(0, 2)],
		},
		"traversal-class-request":
		{
			"id": 10,
			"op": "path",
			"map": "moat",
			"start": Vector2i(0, 0),
			"goal": Vector2i(2, 0),
			"traversal": "walker",
		},
		"traversal-rules-request":
		{
			"id": 11,
			"op": "path",
			"map": "moat",
			"start": Vector2i(0, 0),
			"goal": Vector2i(2, 0),
			"smooth": "none",
			"traversal": {"water": 2.5},
		},
	}
	for name: String in requests:
		if not golden.has(name):
			check(false, "golden %s found in %s" % [name, protocol_doc_path()])
			continue
		var encoded := PathServerMsgPack.encode(requests[name]).hex_encode()
		check_equal(encoded, golden[name].hex_encode(), "golden %s encoded" % name)
	# The avoid requests as the client builds them: its own conversion must turn the cells,
	# Vector2i or int32 pairs, into the vectors' bin, leaving the caller's options as they were.
	var builder := PathServerClient.new()
	builder.auto_connect = false
	root.add_child(builder)
	var avoid_fields := {
		"map": court,
		"start": Vector2i(0, 0),
		"goal": Vector2i(0, 2),
		"smooth": "none",
		"avoid": {"cells": [Vector2i(0, 1)]},
	}
	var cost_fields := avoid_fields.duplicate(true)
	cost_fields.avoid.cells = PackedInt32Array([0, 1])
	cost_fields["avoid_cost"] = 3.0
	builder._calls.next_id = 7
	var avoid_id := builder.request("path", avoid_fields)
	var cost_id := builder.request("path", cost_fields)
	check_equal(
		[
			builder._connection.pending[avoid_id].bytes.hex_encode(),
			builder._connection.pending[cost_id].bytes.hex_encode(),
		],
		[
			golden.get("avoid-request", PackedByteArray()).hex_encode(),
			golden.get("avoid-cost-request", PackedByteArray()).hex_encode(),
		],
		"golden avoid-request (Vector2i cells) and avoid-cost-request (int32 pairs) built by the client"
	)
	check_equal(
		[avoid_fields.avoid, cost_fields.avoid],
		[{"cells": [Vector2i(0, 1)]}, {"cells": PackedInt32Array([0, 1])}],
		"the caller's avoid is left as it was (the bin goes in a copy)"
	)
	builder.queue_free()
	var decoder := PathServerReplies.new()
	var answers := {}
	for op: String in ["reachable", "field", "next_steps", "check_block"]:
		var name := op.replace("_", "-") + "-reply"
		var result := PathServerResult.new()
		decoder.read_query(result, PathServerMsgPack.decode(golden[name])[0], op)
		answers[op] = result
	var goals_result := PathServerResult.new()
	decoder.read_path(goals_result, PathServerMsgPack.decode(golden["goals-reply"])[0], {})
	var field_cost: PackedFloat32Array = answers.field.info.cost
	check_equal(
		[
			goals_result.info.goal_index,
			goals_result.waypoints,
			answers.reachable.info.cells,
			answers.reachable.info.costs,
			answers.next_steps.info.steps,
			answers.check_block.info.disconnected,
			[answers.field.info.width, answers.field.info.height, answers.field.info.origin],
		],
		[
			1,
			PackedVector2Array([Vector2(0, 0), Vector2(0, 1), Vector2(0, 2)]),
			[Vector2i(0, 0), Vector2i(1, 0), Vector2i(0, 1), Vector2i(2, 0), Vector2i(0, 2)],
			PackedFloat32Array([0, 1, 1, 2, 2]),
			PackedVector2Array([Vector2(1, 0), Vector2(3, 1)]),
			[[0, 1], [1, 2]],
			[2, 2, Vector2i(0, 0)],
		],
		"golden query replies decoded: goal_index, cells, costs, steps, disconnected, the window"
	)
	check(
		(
			is_equal_approx(field_cost[0], 3.0 + sqrt(2.0))
			and is_equal_approx(field_cost[2], 4.0)
			and is_inf(field_cost[3])
			and is_equal_approx(answers.next_steps.info.remaining[0], 3.0 + sqrt(2.0))
		),
		"golden field and next_steps costs decoded (float32, +inf on the wall)",
		[Array(field_cost), answers.next_steps.info.remaining]
	)
	# Avoided cells and unit classes: the paths as results (status, waypoints, cost, gen).
	var paths := []
	for name: String in ["avoid", "avoid-cost", "traversal-class", "traversal-rules"]:
		var path := PathServerResult.new()
		decoder.read_path(path, PathServerMsgPack.decode(golden[name + "-reply"])[0], {})
		paths.append([path.ok, path.status, Array(path.waypoints), path.info.cost, path.info.gen])
	var round_the_wall := [[0, 0], [1, 0], [2, 0], [2, 1], [2, 2], [1, 2], [0, 2]].map(
		func(xy: Array) -> Vector2: return Vector2(xy[0], xy[1])
	)
	check_equal(
		paths,
		[
			[true, "found", round_the_wall, 6.0, 1],
			[true, "found", [Vector2(0, 0), Vector2(0, 1), Vector2(0, 2)], 4.0, 1],
			[true, "no_path", [], 0.0, 2],
			[true, "found", [Vector2(0, 0), Vector2(1, 0), Vector2(2, 0)], 3.5, 2],
		],
		"golden avoid, avoid-cost, traversal-class and traversal-rules replies read as path results"
	)
	# The moat's upload as put_grid writes it (tags, tag_names and classes in the protocol's
	# order), and its reply read as the client reads it.
	var moat := PathServerClient.new()
	moat.auto_connect = false
	root.add_child(moat)
	moat._calls.next_id = 9
	var moat_options := {
		"tags": PackedByteArray([0, 1, 0, 0, 1, 0]),
		"tag_names": {"water": 1},
		"classes": {"walker": {"water": null}},
	}
	var moat_cells := PackedByteArray([1, 1, 1, 1, 1, 1])
	var put_id := moat.put_grid("moat", Vector2i(3, 2), moat_cells, moat_options)
	var put: Variant = moat._connection.pending[put_id]
	check_equal(
		put.bytes.hex_encode(),
		golden["moat-put-request"].hex_encode(),
		"golden moat-put-request encoded by put_grid (tags, tag_names, classes)"
	)
	moat._connection.receive([golden["moat-put-reply"]])
	check(
		put.result.ok and put.result.info.gen == 2 and put.result.info.map == "moat",
		"golden moat-put-reply read as a result (gen 2)",
		put.result.info
	)
	moat.queue_free()


# -- request encodings ------------------------------------------------------------------------


## put_map's body as msgpack-python packs it (bin for the bytes and the float32 arrays), and
## get_map's, update's and drop_map's.
func test_upload_encoding() -> void:
	var offline := PathServerClient.new()
	offline.auto_connect = false
	root.add_child(offline)
	var put_id := (
		offline
		. put_grid(
			"room",
			Vector2i(3, 2),
			PackedByteArray([1, 1, 0, 1, 2, 1]),
			{
				"costs": PackedFloat32Array([1, 1.5, 0, 1, 2, 1]),
				"origin": Vector2(8, -4),
				"cell_size": 16.0,
				"tags": PackedByteArray([0, 1, 0, 0, 0, 2]),
			}
		)
	)
	var get_id := offline.get_map("room", Rect2i(1, 0, 2, 2))
	var edit_id := offline.update_map("room", {"cells": [Vector2i(2, 0)], "solid": true}, 7)
	var drop_id := offline.drop_map("room")
	var expected := {
		put_id:
		(
			"8aa2696401a26f70a77075745f6d6170a36d6170a4726f6f6da5776964746803a668656967687402"
			+ "a563656c6c73c406010100010201a5636f737473c4180000803f0000c03f000000000000803f0000"
			+ "00400000803fa66f726967696e92cb4020000000000000cbc010000000000000a963656c6c5f7369"
			+ "7a65cb4030000000000000a474616773c406000100000002"
		),
		get_id: "84a2696402a26f70a76765745f6d6170a36d6170a4726f6f6da6726567696f6e9401000202",
		edit_id:
		(
			"86a2696403a26f70a6757064617465a36d6170a4726f6f6da563656c6c7391920200a5736f6c"
			+ "6964c3a669665f67656e07"
		),
		drop_id: "83a2696404a26f70a864726f705f6d6170a36d6170a4726f6f6d",
	}
	var wrong := []
	for id: int in expected:
		var got: String = offline._connection.pending[id].bytes.hex_encode()
		if got != expected[id]:
			wrong.append([id, got])
	check(
		wrong.is_empty(),
		(
			"put_map (cells, costs and tags as bin, float32 little-endian), get_map, update "
			+ "with if_gen and drop_map encode as msgpack-python does"
		),
		wrong
	)
	# The golden session of docs/protocol.md: the client's requests byte for byte, its replies
	# read as the client reads them (a decoding test: the doc's bytes, not a server).
	var yard := PathServerClient.new()
	yard.auto_connect = false
	root.add_child(yard)
	var session := [
		[
			"put-map-request",
			yard.put_grid("yard", Vector2i(3, 2), PackedByteArray([1, 1, 0, 1, 2, 1]))
		],
		["get-map-request", yard.get_map("yard")],
		[
			"conflict-request",
			yard.update_map("yard", {"cells": [Vector2i(0, 0)], "solid": true}, 0)
		],
		["drop-map-request", yard.drop_map("yard")],
	]
	var results := {}
	for step: Array in session:
		var pending: Variant = yard._connection.pending[step[1]]
		results[step[1]] = pending.result
		check_equal(
			pending.bytes.hex_encode(),
			golden[step[0]].hex_encode(),
			"golden %s encoded by the client" % step[0]
		)
	for reply: String in ["put-map-reply", "get-map-reply", "conflict-reply", "drop-map-reply"]:
		yard._connection.receive([golden[reply]])
	var put: PathServerResult = results[session[0][1]]
	var got: PathServerResult = results[session[1][1]]
	var conflict: PathServerResult = results[session[2][1]]
	var drop: PathServerResult = results[session[3][1]]
	check(
		(
			put.ok
			and put.info.gen == 1
			and got.ok
			and got.info.cells == PackedByteArray([1, 1, 0, 1, 2, 1])
			and got.info.size == Vector2i(3, 2)
			and got.info.region == Rect2i(0, 0, 3, 2)
			and not got.info.has("costs")
			and not conflict.ok
			and conflict.code == "conflict"
			and conflict.info.at == "if_gen"
			and conflict.info.gen == 1
			and drop.ok
			and drop.info.gen == 1
		),
		"golden put-map, get-map, conflict and drop-map replies read as results",
		[put.info, got.info, conflict, conflict.info, drop.info]
	)
	yard.queue_free()
	var decoded := PathServerMsgPack.decode(PackedByteArray([0xC4, 3, 0, 1, 255]))
	check_equal(
		decoded[0], PackedByteArray([0, 1, 255]), "msgpack bin decodes to a PackedByteArray"
	)
	offline.queue_free()


## Without a server: a path request whose map, unit size and options came before is written
## from that one's encoding, its id, start and goal put in; the bytes are those of encoding
## its body, whatever the options, the order of their names and the width of the id.
func test_path_request_encoding() -> void:
	var offline := PathServerClient.new()
	offline.auto_connect = false
	root.add_child(offline)
	var grid := {"space": "grid", "smooth": "none"}
	var cases := [
		[Vector2(2, 3), Vector2(40, 50), Vector2i.ONE, grid],
		[Vector2(2.5, -3.25), Vector2(1e9, 0.1), Vector2i.ONE, grid],
		[Vector2(7, 8), Vector2(9, 10), Vector2i.ONE, {"smooth": "none", "space": "grid"}],
		[Vector2(7, 8), Vector2(9, 10), Vector2i(2, 3), grid],
		[Vector2(7, 8), Vector2(9, 10), Vector2i.ONE, {}],
		[Vector2(7, 8), Vector2(9, 10), Vector2i.ONE, {"weight": 1}],
		[Vector2(7, 8), Vector2(9, 10), Vector2i.ONE, {"weight": 1.0}],
		[Vector2(7, 8), Vector2(9, 10), Vector2i.ONE, {"map": "other", "timeout_ms": 300}],
		[Vector2(7, 8), Vector2(9, 10), Vector2i.ONE, {"goals": PackedVector2Array([Vector2.ONE])}],
		[Vector2(7, 8), Vector2(9, 10), Vector2i.ONE, {"avoid": {"cells": [Vector2i(1, 1)]}}],
		[Vector2(7, 8), Vector2(9, 10), Vector2i.ONE, {"start": Vector2(5, 5)}],
	]
	var wrong := []
	# Ids of each width msgpack has: fixint, uint8, uint16, uint32.
	for first_id: int in [1, 200, 300, 70000, 5000000000]:
		offline._calls.next_id = first_id
		for repeat in 2:
			for case: Array in cases:
				var id := offline.find_path(case[0], case[1], case[2], case[3])
				var fields := PathServerRequests.path(
					offline.map_name, case[0], case[1], case[2], case[3]
				)
				var body := PathServerRequests.body(id, "path", fields)
				var pending: Variant = offline._connection.pending[id]
				if pending.bytes != PathServerMsgPack.encode(body):
					wrong.append([id, case, pending.bytes.hex_encode()])
				if [pending.body.map, pending.body.space] != [body.map, body.space]:
					wrong.append([id, case, pending.body])
	check(
		wrong.is_empty(),
		"path requests reuse an earlier one's encoding, byte for byte what encoding gives",
		wrong
	)
	offline.queue_free()


## Without a server: an "overloaded" reply puts its request back to be sent after its
## retry_after_ms while its deadline allows, else completes it with the error.
func test_overloaded_retry() -> void:
	var connection := PathServerConnection.new()
	var completed := []
	connection.completed.connect(
		func(request: PathServerConnection.Pending, reply: Dictionary) -> void:
			completed.append([request.result.id, reply.get("ok")])
	)
	var now := Time.get_ticks_msec()
	for id: int in [1, 2]:
		var request := PathServerConnection.Pending.new()
		request.result.id = id
		request.sent = true
		request.deadline_ms = now + (10000 if id == 1 else 50)
		connection.add(request)
	for id: int in [1, 2]:
		var overloaded := {
			"id": id,
			"ok": false,
			"error": {"code": "overloaded", "message": "busy", "at": null},
			"retryable": true,
			"retry_after_ms": 100,
		}
		connection.receive([PathServerMsgPack.encode(overloaded)])
	var first: PathServerConnection.Pending = connection.pending.get(1)
	check(
		(
			first != null
			and not first.sent
			and first.retry_at_ms >= now + 100
			and completed == [[2, false]]
			and not connection.pending.has(2)
		),
		"overloaded: sent again after retry_after_ms, or failed when past the deadline",
		[completed, first.retry_at_ms - now if first != null else null]
	)
	connection.receive([PathServerMsgPack.encode({"id": 1, "ok": true})])
	check_equal(completed, [[2, false], [1, true]], "the request sent again completes")


## Without a server: every op that takes avoid sends its cells, Vector2i or int32 pairs, as the
## one bin of int32 pairs, a batch's own requests too; anything else goes as it was given.
func test_avoid_encoding() -> void:
	var offline := PathServerClient.new()
	offline.auto_connect = false
	root.add_child(offline)
	var cells: Array[Vector2i] = [Vector2i(3, 4), Vector2i(-1, 70000)]
	var pairs := PackedInt32Array([3, 4, -1, 70000])
	var bin := pairs.to_byte_array()
	var options := {"avoid": {"cells": cells, "rects": [Rect2i(0, 0, 2, 1)]}, "avoid_cost": 2.0}
	var point := Vector2(8, 8)
	var points := PackedVector2Array([point])
	var ids := [
		offline.find_path(point, point, Vector2i.ONE, options),
		offline.find_path_to_any(point, points, Vector2i.ONE, options),
		offline.find_paths([[point, point]], Vector2i.ONE, options),
		offline.reachable(point, 3.0, Vector2i.ONE, options),
		offline.distance_field(points, Vector2i.ONE, options),
		offline.next_steps(points, points, Vector2i.ONE, options),
		offline.request("path", options),
	]
	var sent := []
	for id: int in ids:
		var wire: Dictionary = PathServerMsgPack.decode(offline._connection.pending[id].bytes)[0]
		sent.append(wire.avoid)
	var expected := []
	expected.resize(ids.size())
	expected.fill({"cells": bin, "rects": [[0, 0, 2, 1]]})
	check_equal(
		sent,
		expected,
		"avoid's Vector2i cells go as a bin of int32 pairs on path, paths, reachable, field, ..."
	)
	var entry := {"start": point, "goal": point, "avoid": {"cells": pairs}}
	var batch_id := offline.find_paths([entry, [point, point], {"start": point, "goal": point}])
	var entries: Array = (
		PathServerMsgPack.decode(offline._connection.pending[batch_id].bytes)[0].requests
	)
	check_equal(
		[entries[0].avoid, entries[1].has("avoid"), entries[2].has("avoid"), entry.avoid.cells],
		[{"cells": bin}, false, false, pairs],
		"a batch entry's avoid as int32 pairs goes as the bin (the caller's entry untouched)"
	)
	var as_given := [
		{"cells": [Vector2(3, 4)]},
		{"cells": [Vector2i(3, 4), Vector2(1, 2)]},
		{"cells": PackedInt32Array([3, 4, 5])},
		{"cells": PackedFloat32Array([3, 4])},
		{"rects": [Rect2i(0, 0, 1, 1)]},
		[Vector2i(3, 4)],
	]
	var unchanged := []
	for avoid: Variant in as_given:
		var id := offline.find_path(point, point, Vector2i.ONE, {"avoid": avoid})
		unchanged.append(is_same(offline._connection.pending[id].body.avoid, avoid))
	check(
		not unchanged.has(false),
		"avoid goes as given when its cells are not all whole cells (floats, odd pairs, no map)",
		unchanged
	)
	offline.queue_free()
