# gdlint: disable=max-public-methods,max-file-lines
extends SceneTree
## The addon's tests, run headless inside Godot 4 against a real pathserver:
##
##   godot --headless --path tests -s res://test_pathserver.gd -- tcp://127.0.0.1:PORT
##
## The server must serve tests/maps/godot_arena.map (20 x 12 cells of 16 world units, a wall
## at column 10 with a two-cell gap at rows 5-6) and the repository's maps/. Environment:
##   PATHSERVER_MAPS             that server's maps folder, for the embedded servers this test
##                               starts
##   PATHSERVER_PYTHON           the Python that runs `-m pathserver serve` (default python3)
##   PATHSERVER_PROTOCOL         docs/protocol.md (default: found from this project's folder)
##   PATHSERVER_CONFORMANCE      engine_clients/conformance.json (default: found likewise)
##   PATHSERVER_SILENT_ENDPOINT  a ZeroMQ peer that never answers, for the timeout scenario
##   PATHSERVER_OPTIONS          the output of `pathserver options --json`, the server's options
## Prints one line per check, then exactly "N passed, N failed", and exits non-zero on failure.

const MAP := "godot_arena"
const CELL := 16.0
## The whole run must finish well inside run_tests.sh's timeout, closing line included.
const WATCHDOG_SECONDS := 150.0
## The tiles of the test TileSet: '.' floor (walkable: true), '~' mud (walkable, cost 3),
## ':' sand (walkable, cost 2.25: not a byte), '#' wall (no data: the bool layer's default,
## false), 'R' rock (a physics polygon only: blocked), 'N' grass (a navigation polygon only:
## walkable), ' ' no tile (blocked).
const TILES := {
	".": Vector2i(0, 0),
	"~": Vector2i(1, 0),
	":": Vector2i(2, 0),
	"#": Vector2i(3, 0),
	"R": Vector2i(4, 0),
	"N": Vector2i(5, 0)
}
## What each tile is on the server: 0 blocked, else its cost.
const TILE_VALUES := {".": 1.0, "~": 3.0, ":": 2.25, "#": 0.0, "R": 0.0, "N": 1.0, " ": 0.0}
## A wall of rock (column 4) with one grass tile (4, 3) in it, the only way from the left
## half to the right one; mud and sand on the right.
const TILE_ROWS := [
	"###########",
	"#...R.....#",
	"#...R.~~~.#",
	"#...N.~~~.#",
	"#...R.~:~.#",
	"#...R.....#",
	"###########",
]
const TILE_MAP := "godot_tiles"
const TILE_SIZE := 16
const ExportPlugin := preload("res://addons/pathserver/export_plugin.gd")
const PackedTests := preload("res://packed_tests.gd")
## The parameters of each query method the server defines as options (besides unit_size).
const QUERY_PARAMETERS := {
	"reachable": ["budget"],
	"field": ["goals"],
	"next_steps": ["goals"],
	"check_block": [],
}

var passed := 0
var failed := 0
var endpoint := ""
var client: PathServerClient
## The golden vectors of docs/protocol.md: name -> bytes.
var golden := {}
var _finished := false


func _initialize() -> void:
	var args := OS.get_cmdline_user_args()
	endpoint = args[0] if args.size() > 0 else "tcp://127.0.0.1:5555"
	create_timer(WATCHDOG_SECONDS).timeout.connect(_on_watchdog)
	_run.call_deferred()


func _run() -> void:
	print("pathserver addon tests against %s" % endpoint)
	test_msgpack_encoding()
	test_msgpack_decoding()
	test_zmtp_bytes()
	test_golden_vectors()
	test_query_golden_vectors()
	test_upload_encoding()
	test_avoid_encoding()
	await test_ping_pong_with_fake_router()
	client = root.get_node("PathServer") as PathServerClient
	client.map_name = MAP
	client.connect_to_server(endpoint)
	await test_ping_and_maps()
	await test_wait_connected()
	await test_first_path_latency()
	await test_golden_vectors_on_the_wire()
	await test_pipelined_requests()
	await test_batch()
	await PackedTests.new(self).run()
	await test_error_codes()
	await test_no_path_is_an_answer()
	await test_cancel()
	await test_timeout()
	await test_follower()
	await test_agent_small_target_moves()
	await test_agent_signal_order()
	await test_agent_retries_after_failure()
	test_tile_map_reader()
	await test_put_tilemap()
	await test_tile_map_sync()
	await test_get_map_round_trip()
	await test_upload_errors()
	await test_put_tilemap_timing()
	test_demo_formation()
	await test_demo_map_fits_its_units()
	await test_demo_routes_differ_by_size()
	await test_embedded_server_slow_start()
	await test_embedded_server_failure()
	await test_embedded_servers_ports()
	await test_embedded_server_and_reconnect()
	test_bundle_platforms()
	test_bundle_launch()
	test_export_plan()
	test_export_copy_folder()
	await test_embedded_server_without_bundle()
	await test_conformance()
	await test_queries()
	await test_traversal()
	await test_tile_map_tags()
	await test_flow_group()
	test_options_match_the_server()
	await test_readme_examples()
	check(
		client.get_pending_count() == 0 and client.is_connected_to_server(),
		"the main connection is still up with nothing pending",
		"pending %d" % client.get_pending_count()
	)
	# The server sends ZMTP PINGs every few seconds and drops peers that do not answer.
	check(
		client._connection.dealer.pings_answered > 0,
		"the server's heartbeats were answered (%d)" % client._connection.dealer.pings_answered
	)
	_finish()


func _finish() -> void:
	if _finished:
		return
	_finished = true
	print("%d passed, %d failed" % [passed, failed])
	quit(0 if failed == 0 else 1)


func _on_watchdog() -> void:
	check(false, "the run finished within %d s" % WATCHDOG_SECONDS, "watchdog fired")
	_finish()


func check(condition: bool, name: String, detail: Variant = "") -> void:
	if condition:
		passed += 1
		print("ok    ", name)
	else:
		failed += 1
		print("FAIL  ", name, ": ", detail)


func check_equal(actual: Variant, expected: Variant, name: String) -> void:
	check(
		typeof(actual) == typeof(expected) and actual == expected,
		name,
		"got %s, expected %s" % [var_to_str(actual), var_to_str(expected)]
	)


## World position of the centre of a cell of the test map.
func center(cell: Vector2i) -> Vector2:
	return (Vector2(cell) + Vector2(0.5, 0.5)) * CELL


## Polls frames until [param condition] holds or [param seconds] pass; returns the condition.
func wait_until(condition: Callable, seconds: float) -> bool:
	var deadline := Time.get_ticks_msec() + int(seconds * 1000.0)
	while not condition.call():
		if Time.get_ticks_msec() > deadline:
			return false
		await process_frame
	return true


func free_port() -> int:
	var server := TCPServer.new()
	server.listen(0, "127.0.0.1")
	var port := server.get_local_port()
	server.stop()
	return port


## The answers of [param of_client]'s path requests from now on, by id, as its signals bring
## them: the waypoints of a completed query, or [code][code, message][/code] of a failure.
func track_answers(of_client: PathServerClient) -> Dictionary:
	var answers := {}
	of_client.path_found.connect(
		func(id: int, waypoints: PackedVector2Array, _info: Dictionary) -> void:
			answers[id] = waypoints
	)
	of_client.path_failed.connect(
		func(id: int, code: String, message: String) -> void: answers[id] = [code, message]
	)
	return answers


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
	var refusals := {
		"truncated": "92a568656c6c",
		"trailing bytes": "c0c0",
		"unsupported type": "d40100",
		"uint64 above 2^63": "cfffffffffffffffff",
		"huge array header": "dd7fffffff",
		"nested deeper": "91".repeat(100) + "c0",
	}
	for what: String in refusals:
		var result := PathServerMsgPack.decode(refusals[what].hex_decode())
		check(result[0] == null and result[1] != "", "msgpack refuses %s" % what, result)


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


# -- against the real server ------------------------------------------------------------------


## wait_connected() returns at once when connected (an await of the connected signal would
## hang there), waits for a connection that is coming, and gives up on one that is not.
func test_wait_connected() -> void:
	var frame := Engine.get_process_frames()
	var at_once := await client.wait_connected()
	check(
		at_once and Engine.get_process_frames() == frame,
		"wait_connected() returns true at once when already connected",
		[at_once, Engine.get_process_frames() - frame]
	)
	var fresh := PathServerClient.new()
	fresh.endpoint = endpoint
	var heard := []
	fresh.connected.connect(func() -> void: heard.append("connected"))
	root.add_child(fresh)
	var was_connected := fresh.is_connected_to_server()
	var came := await fresh.wait_connected()
	check(
		not was_connected and came and heard == ["connected"] and fresh.is_connected_to_server(),
		"wait_connected() waits for a connection being made, then returns true",
		[was_connected, came, heard]
	)
	fresh.queue_free()
	var lonely := PathServerClient.new()
	lonely.endpoint = "tcp://127.0.0.1:%d" % free_port()
	root.add_child(lonely)
	var began := Time.get_ticks_msec()
	var reached := await lonely.wait_connected(300)
	var waited := Time.get_ticks_msec() - began
	check(
		not reached and waited >= 280 and waited < 2000,
		"wait_connected(300) returns false when nothing listens (%d ms)" % waited,
		reached
	)
	lonely.queue_free()


## The first request on a new connection used to wait ~40 ms for Nagle's algorithm (the
## server's delayed ACK): the dealer sets TCP_NODELAY. Three fresh connections; the median
## must be well under that.
func test_first_path_latency() -> void:
	var figures: Array[float] = []
	for i in 3:
		var fresh := PathServerClient.new()
		fresh.endpoint = endpoint
		fresh.map_name = MAP
		root.add_child(fresh)
		if not await fresh.wait_connected():
			check(
				false,
				"a fresh client connects for the latency test",
				fresh._connection.dealer.last_error
			)
			fresh.queue_free()
			return
		var began := Time.get_ticks_usec()
		var result := await fresh.find_path_async(center(Vector2i(1, 1)), center(Vector2i(17, 9)))
		var elapsed_ms := (Time.get_ticks_usec() - began) / 1000.0
		print("first path after connect: %.1f ms" % elapsed_ms)
		figures.append(elapsed_ms if result.ok else INF)
		fresh.queue_free()
	figures.sort()
	check(
		figures[1] < 20.0,
		"the first path after connecting takes under 20 ms (median %.1f ms)" % figures[1],
		figures
	)


func test_ping_and_maps() -> void:
	var connected := await wait_until(client.is_connected_to_server, 10.0)
	check(connected, "connects to %s" % endpoint, client._connection.dealer.last_error)
	var ping := await client.request_async("ping")
	check(ping.ok, "ping", ping.reply)
	var maps := await client.request_async("maps")
	var arena := {}
	for entry: Dictionary in maps.reply.get("maps", []):
		if entry.get("name") == MAP:
			arena = entry
	check(
		arena.get("width") == 20 and arena.get("height") == 12 and arena.get("cell_size") == CELL,
		"maps lists %s with its size and cell size" % MAP,
		arena
	)


func test_pipelined_requests() -> void:
	var goals := {}
	var answers := {}
	var on_found := func(id: int, waypoints: PackedVector2Array, info: Dictionary) -> void:
		answers[id] = [waypoints, info]
	client.path_found.connect(on_found)
	var start := center(Vector2i(1, 1))
	for i in 24:
		var goal := center(Vector2i(11 + i % 9, i % 12))
		goals[client.find_path(start, goal)] = goal
	check_equal(client.get_pending_count(), 24, "24 requests in flight at once")
	await wait_until(func() -> bool: return answers.size() == goals.size(), 10.0)
	client.path_found.disconnect(on_found)
	var wrong := []
	for id: int in goals:
		var answer: Array = answers.get(id, [PackedVector2Array(), {}])
		var waypoints: PackedVector2Array = answer[0]
		if waypoints.is_empty() or waypoints[0] != start or waypoints[-1] != goals[id]:
			wrong.append([id, goals[id], waypoints])
	check(answers.size() == 24 and wrong.is_empty(), "24 pipelined replies matched by id", wrong)
	var info: Dictionary = answers.values()[0][1] if answers.size() > 0 else {}
	check(
		info.get("status") == "found" and info.get("gen") is int and info.get("cost") is float,
		"path info carries status, cost and gen",
		info
	)
	var grid := await client.find_path_async(
		Vector2(1, 1), Vector2(17, 9), Vector2i.ONE, {"space": "grid"}
	)
	check(
		grid.ok and grid.waypoints[0] == Vector2(1, 1) and grid.waypoints[-1] == Vector2(17, 9),
		"space grid gives cells",
		grid.waypoints
	)


func test_batch() -> void:
	var start := center(Vector2i(1, 1))
	var requests := [
		[start, center(Vector2i(8, 1))],
		[start, center(Vector2i(17, 9))],
		{"start": start, "goal": Vector2(999, 40)},
		[center(Vector2i(18, 10)), start],
	]
	var results := await client.find_paths_async(requests, Vector2i(2, 2))
	check_equal(results.size(), 4, "batch gives one result per request")
	if results.size() != 4:
		return
	check(
		results[0].ok and results[0].waypoints[-1] == center(Vector2i(8, 1)),
		"batch result 0 in order",
		results[0]
	)
	check(
		results[1].ok and results[1].waypoints[-1] == center(Vector2i(17, 9)),
		"batch result 1 in order",
		results[1]
	)
	check_equal(results[2].code, "out_of_bounds", "a bad batch entry fails only itself")
	check(
		results[3].ok and results[3].waypoints[-1] == start, "batch result 3 in order", results[3]
	)


func test_error_codes() -> void:
	var failures := {}
	var on_failed := func(id: int, code: String, message: String) -> void:
		failures[id] = [code, message]
	client.path_failed.connect(on_failed)
	var start := center(Vector2i(1, 1))
	var expected := {
		client.find_path(start, center(Vector2i(17, 9)), Vector2i.ONE, {"map": "no_such_map"}):
		"unknown_map",
		client.find_path(start, Vector2(-40, 8)): "out_of_bounds",
		client.find_path(start, center(Vector2i(17, 9)), Vector2i(0, 1)): "bad_unit_size",
		client.find_path(start, center(Vector2i(17, 9)), Vector2i.ONE, {"smooth": "wiggly"}):
		"invalid_request",
	}
	await wait_until(func() -> bool: return failures.size() == expected.size(), 10.0)
	client.path_failed.disconnect(on_failed)
	for id: int in expected:
		var got: Array = failures.get(id, ["(no reply)", ""])
		check(got[0] == expected[id] and got[1] != "", "error code %s" % expected[id], got)
	var unknown := await client.find_path_async(start, start, Vector2i.ONE, {"map": "no_such_map"})
	check(
		(
			not unknown.ok
			and unknown.code == "unknown_map"
			and unknown.info.get("at") == "map"
			and not unknown.retryable
		),
		"find_path_async reports the error code and its field",
		unknown
	)


## A unit too big for the wall's gap has no path: like AStarGrid2D's empty path, an answer
## (path_found, ok, status no_path, no waypoints), never path_failed.
func test_no_path_is_an_answer() -> void:
	var completed := {}
	var failed := {}
	var on_completed := func(id: int, waypoints: PackedVector2Array, info: Dictionary) -> void:
		completed[id] = [waypoints, info]
	var on_failed := func(id: int, code: String, _message: String) -> void: failed[id] = code
	client.path_found.connect(on_completed)
	client.path_failed.connect(on_failed)
	var start := center(Vector2i(1, 1))
	var id := client.find_path(start, center(Vector2i(17, 9)), Vector2i(3, 3))
	await wait_until(func() -> bool: return completed.has(id) or failed.has(id), 5.0)
	client.path_found.disconnect(on_completed)
	client.path_failed.disconnect(on_failed)
	var answer: Array = completed.get(id, [PackedVector2Array([Vector2.ONE]), {}])
	check(
		(
			not failed.has(id)
			and answer[0].is_empty()
			and answer[1].get("status") == "no_path"
			and answer[1].get("cost") == 0.0
		),
		"no_path comes as path_found with empty waypoints and status no_path",
		[answer, failed]
	)
	var awaited := await client.find_path_async(start, center(Vector2i(17, 9)), Vector2i(3, 3))
	check(
		(
			awaited.ok
			and awaited.status == "no_path"
			and awaited.code == ""
			and awaited.waypoints.is_empty()
			and str(awaited).ends_with("no_path, 0 waypoints)")
		),
		"an awaited no_path result is ok with status no_path",
		awaited
	)
	var batch := await client.find_paths_async(
		[[start, center(Vector2i(17, 9))], [start, center(Vector2i(2, 1))]], Vector2i(3, 3)
	)
	check(
		(
			batch.size() == 2
			and batch.all(func(r: PathServerResult) -> bool: return r.ok)
			and batch[0].status == "no_path"
		),
		"a batch entry with no path is ok too",
		batch
	)


func test_cancel() -> void:
	var heard := []
	var on_completed := func(id: int, _waypoints: PackedVector2Array, _info: Dictionary) -> void:
		heard.append(id)
	var on_failed := func(id: int, _code: String, _message: String) -> void: heard.append(id)
	client.path_found.connect(on_completed)
	client.path_failed.connect(on_failed)
	var id := client.find_path(center(Vector2i(1, 1)), center(Vector2i(17, 9)))
	client.cancel(id)
	var pending_after_cancel := client.get_pending_count()
	var later := await client.find_path_async(center(Vector2i(1, 1)), center(Vector2i(2, 1)))
	client.path_found.disconnect(on_completed)
	client.path_failed.disconnect(on_failed)
	check(
		pending_after_cancel == 0 and later.ok and id not in heard and later.id in heard,
		"a cancelled request is forgotten and emits nothing",
		[pending_after_cancel, heard]
	)


func test_timeout() -> void:
	var lonely := PathServerClient.new()
	lonely.endpoint = "tcp://127.0.0.1:%d" % free_port()
	lonely.map_name = MAP
	root.add_child(lonely)
	var began := Time.get_ticks_msec()
	var result := await lonely.find_path_async(
		Vector2.ZERO, Vector2.ONE, Vector2i.ONE, {"timeout_ms": 400}
	)
	var waited := Time.get_ticks_msec() - began
	check(
		result.code == "timeout" and result.retryable and waited >= 350 and waited < 2000,
		"a request with no server times out clearly (%d ms)" % waited,
		result
	)
	lonely.queue_free()


func test_follower() -> void:
	var small := _spawn_unit(Vector2i(1, 1), Vector2i.ONE)
	var large := _spawn_unit(Vector2i(1, 10), Vector2i(2, 2))
	var target := Node2D.new()
	root.add_child(target)
	target.global_position = center(Vector2i(17, 9))
	small.agent.target_node = target
	large.agent.target_node = target
	var both_reached := func() -> bool: return small.reached and large.reached
	var arrived := await wait_until(both_reached, 15.0)
	check(
		arrived,
		"units of sizes 1 and 2 reach the target",
		[small.body.position, large.body.position]
	)
	check(
		small.body.position.distance_to(target.global_position) < 2.0,
		"the unit stands on the target",
		small.body.position
	)
	# Moving the target past the threshold makes the agents ask again.
	small.changes = 0
	target.global_position = center(Vector2i(18, 1))
	await wait_until(func() -> bool: return small.changes > 0, 5.0)
	check(small.changes > 0, "a moved target gets a new path")
	await wait_until(func() -> bool: return small.agent.is_target_reached(), 10.0)
	# A live edit closes the wall's gap: the agent's next path fails; reopening it makes a new
	# generation, which alone (the retry interval is long) makes the agent ask again.
	small.agent.retry_interval = 60.0
	var closed := await client.request_async(
		"update", {"map": MAP, "rects": [[10, 0, 1, 12]], "solid": true}
	)
	check(closed.ok, "update closes the gap", closed.reply)
	small.events.clear()
	small.agent.target_position = center(Vector2i(2, 8))
	small.agent.target_node = null
	await wait_until(func() -> bool: return not small.events.is_empty(), 5.0)
	check(
		small.events == ["path_changed"] and small.agent.waypoints.is_empty(),
		"the follower gets an empty path_changed for no_path, not path_failed",
		small.events
	)
	small.reached = false
	var opened := await client.request_async(
		"update", {"map": MAP, "rects": [[10, 5, 1, 2]], "solid": false}
	)
	check(
		opened.ok and opened.reply.get("gen", 0) > closed.reply.get("gen", 0),
		"update reopens the gap with a new gen",
		opened.reply
	)
	var rerouted := await wait_until(func() -> bool: return small.reached, 10.0)
	check(
		rerouted,
		"a new map generation makes the follower ask again and arrive",
		small.body.position
	)
	small.body.queue_free()
	large.body.queue_free()
	target.queue_free()


func _spawn_unit(cell: Vector2i, unit_size: Vector2i) -> Dictionary:
	var body := Node2D.new()
	body.position = center(cell)
	var agent := PathServerAgent2D.new()
	agent.unit_size = unit_size
	agent.speed = 600.0
	body.add_child(agent)
	root.add_child(body)
	var unit := {
		"body": body, "agent": agent, "reached": false, "changes": 0, "failures": [], "events": []
	}
	agent.target_reached.connect(
		func() -> void:
			unit.reached = true
			unit.events.append("target_reached")
	)
	agent.path_changed.connect(
		func(_waypoints: PackedVector2Array) -> void:
			unit.changes += 1
			unit.events.append("path_changed")
	)
	agent.path_failed.connect(
		func(code: String, _message: String) -> void:
			unit.failures.append(code)
			unit.events.append("path_failed")
	)
	return unit


## A new target within repath_distance of the last goal (one cell here) used to be ignored.
func test_agent_small_target_moves() -> void:
	var unit := _spawn_unit(Vector2i(1, 8), Vector2i.ONE)
	var agent: PathServerAgent2D = unit.agent
	var body: Node2D = unit.body
	var reached := func() -> bool: return unit.reached
	agent.target_position = center(Vector2i(6, 8))
	await wait_until(reached, 5.0)
	unit.reached = false
	agent.target_position = center(Vector2i(7, 8))
	await wait_until(reached, 5.0)
	check(
		unit.reached and body.position.distance_to(center(Vector2i(7, 8))) < 1.0,
		"an arrived agent walks to a new target one cell away (within repath_distance)",
		body.position
	)
	# While it walks a long path, the target moves one cell: it keeps its path, then walks on.
	agent.speed = 120.0
	unit.reached = false
	unit.events.clear()
	agent.target_position = center(Vector2i(1, 8))
	await wait_until(func() -> bool: return unit.changes >= 3, 5.0)
	await process_frame
	agent.target_position = center(Vector2i(1, 9))
	await wait_until(reached, 5.0)
	check(
		unit.reached and body.position.distance_to(center(Vector2i(1, 9))) < 1.0,
		"a target moved one cell while walking: the unit ends on the new target",
		[body.position, unit.events]
	)
	check_equal(
		unit.events,
		["path_changed", "path_changed", "target_reached"],
		"target_reached once, at the new target, after the path to it"
	)
	body.queue_free()


## The order the agent's signals fire in, as the README describes it: the client's
## path_found for the agent's request, then path_changed, then target_reached once; an
## empty path_changed alone when the server answers no_path.
func test_agent_signal_order() -> void:
	var unit := _spawn_unit(Vector2i(1, 1), Vector2i.ONE)
	var agent: PathServerAgent2D = unit.agent
	var events: Array = unit.events
	var on_found := func(_id: int, _waypoints: PackedVector2Array, _info: Dictionary) -> void:
		events.append("client path_found")
	client.path_found.connect(on_found)
	agent.target_position = center(Vector2i(17, 9))
	await wait_until(func() -> bool: return unit.reached, 5.0)
	for i in 5:
		await physics_frame
	check_equal(
		events,
		["client path_found", "path_changed", "target_reached"],
		"agent signals: the client's path_found, path_changed, target_reached"
	)
	events.clear()
	agent.unit_size = Vector2i(3, 3)
	agent.target_position = center(Vector2i(1, 1))
	await wait_until(func() -> bool: return not events.is_empty(), 5.0)
	for i in 5:
		await physics_frame
	check_equal(
		events,
		["client path_found", "path_changed"],
		"agent signals: an empty path_changed, no target_reached, when there is no path"
	)
	client.path_found.disconnect(on_found)
	unit.body.queue_free()


## A failed request is asked again after retry_interval: the agent used to wait for a new
## target or map generation. A no_path answer is not a failure: no timed retries.
func test_agent_retries_after_failure() -> void:
	var unit := _spawn_unit(Vector2i(2, 8), Vector2i.ONE)
	unit.agent.retry_interval = 0.2
	unit.agent.map_name = "no_such_map"
	unit.agent.target_position = center(Vector2i(17, 9))
	await wait_until(func() -> bool: return unit.failures.size() >= 3, 3.0)
	check(
		(
			unit.failures.size() >= 3
			and unit.failures.all(func(c: String) -> bool: return c == "unknown_map")
		),
		"a failing agent asks again every retry_interval",
		unit.failures
	)
	unit.body.queue_free()
	var stuck := _spawn_unit(Vector2i(2, 8), Vector2i(3, 3))
	stuck.agent.retry_interval = 0.2
	stuck.agent.target_position = center(Vector2i(17, 9))
	await create_timer(1.0).timeout
	check(
		stuck.events == ["path_changed"] and stuck.failures.is_empty(),
		"an agent answered no_path does not ask again on a timer",
		stuck.events
	)
	stuck.body.queue_free()


## Points the embedded-server settings at the test's Python and maps; false when the
## environment does not say where they are.
func configure_embedded_server(command := "") -> bool:
	var maps_dir := OS.get_environment("PATHSERVER_MAPS")
	if maps_dir == "":
		check(false, "PATHSERVER_MAPS is set for the embedded server tests")
		return false
	# Python, not a bundle someone put in the addon's bin/: these tests wrap the command.
	ProjectSettings.set_setting(PathServerClient.SETTING_EMBEDDED_MODE, "python")
	ProjectSettings.set_setting(
		PathServerClient.SETTING_EMBEDDED_COMMAND, command if command != "" else python()
	)
	ProjectSettings.set_setting(PathServerClient.SETTING_EMBEDDED_MAPS_DIR, maps_dir)
	ProjectSettings.set_setting(PathServerClient.SETTING_EMBEDDED_PORT, 0)
	return true


func python() -> String:
	var path := OS.get_environment("PATHSERVER_PYTHON")
	return path if path != "" else "python3"


## A client with an embedded server, added to the tree (which starts the server).
func embedded_client(client_timeout_ms := 60000) -> PathServerClient:
	var embedded := PathServerClient.new()
	embedded.embedded_server = true
	embedded.map_name = MAP
	embedded.timeout_ms = client_timeout_ms
	root.add_child(embedded)
	return embedded


## A server that takes longer to start than a request's timeout (numba compiling on a fresh
## machine took ~19 s, the timeout is 5 s): a wrapper prints a progress line on stderr and
## sleeps before it runs the real server. A request made at once waits for the ready line,
## then is sent; its timeout only starts then.
func test_embedded_server_slow_start() -> void:
	var wrapper := OS.get_user_data_dir().path_join("slow_pathserver.sh")
	var script := FileAccess.open(wrapper, FileAccess.WRITE)
	script.store_string(
		(
			"#!/bin/sh\necho 'pathserver: compiling the search kernels (slow start) ...' >&2\n"
			+ "sleep 1.5\nexec '%s' \"$@\"\n" % python()
		)
	)
	script.close()
	OS.execute("chmod", ["+x", wrapper])
	if not configure_embedded_server(wrapper):
		return
	var began := Time.get_ticks_msec()
	var embedded := embedded_client(500)
	var started := []
	embedded.embedded_server_started.connect(func(at: String) -> void: started.append(at))
	var result := await embedded.find_path_async(center(Vector2i(1, 1)), center(Vector2i(17, 9)))
	var waited := Time.get_ticks_msec() - began
	check(
		result.ok and waited > 1500,
		"a request made while the server starts (%d ms, timeout 500 ms) is answered" % waited,
		result
	)
	var log := embedded.get_embedded_server_log()
	check(
		log.has("pathserver: compiling the search kernels (slow start) ...") and log.size() >= 2,
		"the server's progress lines are read as they come (and printed)",
		log
	)
	var ready_line := Array(log).filter(
		func(line: String) -> bool: return line.begins_with("pathserver ready on ")
	)
	check(
		(
			embedded.get_embedded_server_state() == PathServerClient.ServerState.RUNNING
			and started.size() == 1
			and ready_line.size() == 1
			and ready_line[0].begins_with("pathserver ready on %s " % started[0])
			and embedded.endpoint == started[0]
		),
		"the client connects to the endpoint named by the ready line",
		[started, ready_line, embedded.endpoint]
	)
	embedded.queue_free()
	await process_frame


## A server that cannot start (no such maps folder): the client says so with the server's own
## error line, fails the requests waiting for it at once, and wait_connected() returns false.
func test_embedded_server_failure() -> void:
	if not configure_embedded_server():
		return
	ProjectSettings.set_setting(
		PathServerClient.SETTING_EMBEDDED_MAPS_DIR, "/nonexistent/pathserver-maps"
	)
	print("(the ERROR report below is expected: the server cannot start)")
	var embedded := embedded_client()
	var failures := []
	embedded.embedded_server_failed.connect(func(message: String) -> void: failures.append(message))
	var began := Time.get_ticks_msec()
	var answers := track_answers(embedded)
	var id := embedded.find_path(center(Vector2i(1, 1)), center(Vector2i(17, 9)))
	var connected := await embedded.wait_connected()
	await wait_until(func() -> bool: return answers.has(id), 30.0)
	var result: Array = answers.get(id, ["(no answer)", ""])
	var waited := Time.get_ticks_msec() - began
	var message: String = failures[0] if failures.size() == 1 else ""
	check(
		(
			failures.size() == 1
			and message.contains("exited with code 2 before it was ready")
			and message.contains("pathserver: error: map_load_error:")
			and message.contains("/nonexistent/pathserver-maps")
		),
		"a server that fails to start is reported with its last lines",
		failures
	)
	check(
		not connected and result == ["embedded_server_failed", message],
		"wait_connected() is false and waiting requests fail at once (%d ms)" % waited,
		[connected, result]
	)
	check(
		(
			waited < 30000
			and embedded.get_embedded_server_state() == PathServerClient.ServerState.FAILED
			and not await embedded.wait_connected()
		),
		"after the failure, waits return false at once",
		embedded.get_embedded_server_state()
	)
	embedded.queue_free()
	await process_frame


## Two games on one machine each start their own server: by default each binds a free port
## (`--bind tcp://127.0.0.1:*`) and connects where its ready line says. A fixed port is a
## project setting.
func test_embedded_servers_ports() -> void:
	if not configure_embedded_server():
		return
	var first := embedded_client()
	var second := embedded_client()
	var fixed_port := free_port()
	ProjectSettings.set_setting(PathServerClient.SETTING_EMBEDDED_PORT, fixed_port)
	var fixed := embedded_client()
	ProjectSettings.set_setting(PathServerClient.SETTING_EMBEDDED_PORT, 0)
	var answers := []
	for embedded: PathServerClient in [first, second, fixed]:
		var result := await embedded.find_path_async(center(Vector2i(1, 1)), center(Vector2i(2, 9)))
		answers.append(result.ok)
	var ports := [first, second].map(
		func(embedded: PathServerClient) -> int: return embedded.endpoint.get_slice(":", 2).to_int()
	)
	check(
		answers == [true, true, true] and ports[0] > 0 and ports[1] > 0 and ports[0] != ports[1],
		"two embedded servers on one machine bind two free ports (%s)" % [ports],
		[answers, first.endpoint, second.endpoint]
	)
	check_equal(
		fixed.endpoint, "tcp://127.0.0.1:%d" % fixed_port, "the port setting binds a fixed port"
	)
	for embedded: PathServerClient in [first, second, fixed]:
		embedded.queue_free()
	await process_frame


# -- the server bundle: where it is found, what the export plugin does with it ---------------
# run_tests.sh also exports the demo for real (Debian's export template) and runs the game.


## The one definition of the bundle folders' platform names, from Godot's feature tags.
func test_bundle_platforms() -> void:
	check_equal(
		[
			PathServerBundle.platform_name("linux", "x86_64"),
			PathServerBundle.platform_name("windows", "arm64"),
			PathServerBundle.platform_name("macos", "arm64"),
			PathServerBundle.platform_name("web", "wasm32"),
			PathServerBundle.platform_name("linux", "x86_32"),
		],
		["linux-x86_64", "windows-arm64", "macos-arm64", "", ""],
		"bundle platform names: <os>-<arch>, none for the web or 32-bit"
	)
	check_equal(
		[
			PathServerBundle.platform_of_features(["pc", "s3tc", "linux", "x86_64", "release"]),
			PathServerBundle.platform_of_features(["pc", "windows", "x86_64", "template"]),
			PathServerBundle.platform_of_features(["web", "wasm32"]),
		],
		["linux-x86_64", "windows-x86_64", ""],
		"an export's platform from its feature tags"
	)
	check_equal(
		[
			PathServerBundle.executable_name("linux-x86_64"),
			PathServerBundle.executable_name("windows-x86_64"),
			PathServerBundle.current_platform(),
		],
		["pathserver-server", "pathserver-server.exe", "linux-x86_64"],
		"executable names; this machine is linux-x86_64"
	)
	check_equal(
		PathServerBundle.exported_folder("/games/demo/demo.x86_64", "linux-x86_64"),
		"/games/demo/pathserver/linux-x86_64",
		"an exported game's bundle is beside its executable"
	)


## What the embedded server runs for each mode, in the editor (these tests run in it).
func test_bundle_launch() -> void:
	var platform := PathServerBundle.current_platform()
	var executable := PathServerBundle.project_folder(platform).path_join(
		PathServerBundle.executable_name(platform)
	)
	var python_launch := {"program": "py", "arguments": PackedStringArray(["-m", "pathserver"])}
	check_equal(
		PathServerBundle.server_launch("python", "py"),
		python_launch,
		"mode python: PY -m pathserver"
	)
	var unknown := PathServerBundle.server_launch("docker", "py")
	check(
		str(unknown.get("error", "")).contains("unknown embedded server mode 'docker'"),
		"an unknown mode is an error that names the modes",
		unknown
	)
	if FileAccess.file_exists(executable):
		print("(a bundle is in the addon's bin/: the no-bundle launch checks are skipped)")
		check_equal(
			PathServerBundle.server_launch("auto", "py"),
			{"program": executable, "arguments": PackedStringArray()},
			"mode auto: the addon's bundle when there is one"
		)
		return
	var bundle := PathServerBundle.server_launch("bundle", "py")
	check(
		str(bundle.get("error", "")).contains("no pathserver bundle at %s" % executable),
		"mode bundle without a bundle: an error that says where it was looked for",
		bundle
	)
	check_equal(
		PathServerBundle.server_launch("auto", "py"),
		python_launch,
		"mode auto in the editor without a bundle: Python"
	)


## The export plugin's decision for an export's features (its copy is exported for real by
## run_tests.sh).
func test_export_plan() -> void:
	var linux := PackedStringArray(["pc", "linux", "x86_64", "release"])
	var folder := PathServerBundle.project_folder("linux-x86_64")
	if FileAccess.file_exists(folder.path_join("pathserver-server")):
		var plan := ExportPlugin.export_plan(linux, "/games/demo/demo.x86_64", true)
		check_equal(
			plan,
			{"source": folder, "target": "/games/demo/pathserver/linux-x86_64"},
			"an export carries the addon's bundle beside the game"
		)
		return
	var missing := ExportPlugin.export_plan(linux, "/games/demo/demo.x86_64", true)
	check(
		(
			str(missing.get("warning", "")).contains("no pathserver bundle for linux-x86_64")
			and not missing.has("source")
		),
		"an export without a bundle for its platform warns (when the game starts a server)",
		missing
	)
	check_equal(
		ExportPlugin.export_plan(linux, "/games/demo/demo.x86_64", false),
		{},
		"no warning when the project starts no embedded server"
	)
	var web := ExportPlugin.export_plan(["web", "wasm32"], "/games/demo/index.html", true)
	check(
		str(web.get("warning", "")).contains("no pathserver bundle can run on"),
		"an export to a platform no bundle runs on warns",
		web
	)


## The export plugin's copy keeps the executable bit and links, and replaces an older copy.
func test_export_copy_folder() -> void:
	var base := OS.get_user_data_dir().path_join("copy_folder_test")
	ExportPlugin.remove_folder(base)
	var source := base.path_join("bundle")
	DirAccess.make_dir_recursive_absolute(source.path_join("_internal/libs"))
	var files := {
		"pathserver-server": "#!/bin/sh\n",
		"_internal/libs/libpath.so.1": "library",
		"_internal/manifest.json": "{}",
	}
	for name: String in files:
		var file := FileAccess.open(source.path_join(name), FileAccess.WRITE)
		file.store_string(files[name])
		file.close()
	var executable := (
		FileAccess.UNIX_READ_OWNER | FileAccess.UNIX_WRITE_OWNER | FileAccess.UNIX_EXECUTE_OWNER
	)
	FileAccess.set_unix_permissions(source.path_join("pathserver-server"), executable)
	DirAccess.open(source).create_link(
		"libs/libpath.so.1", source.path_join("_internal/libpath.so")
	)
	var target := base.path_join("game/pathserver/linux-x86_64")
	DirAccess.make_dir_recursive_absolute(target)
	FileAccess.open(target.path_join("stale.txt"), FileAccess.WRITE).close()
	var copied := ExportPlugin.copy_folder(source, target)
	var link := target.path_join("_internal/libpath.so")
	var target_dir := DirAccess.open(target)
	check(
		(
			copied == {"files": 4}
			and (
				FileAccess.get_unix_permissions(target.path_join("pathserver-server"))
				& FileAccess.UNIX_EXECUTE_OWNER
			)
			and target_dir.is_link(link)
			and target_dir.read_link(link) == "libs/libpath.so.1"
			and FileAccess.get_file_as_string(link) == "library"
			and not FileAccess.file_exists(target.path_join("stale.txt"))
		),
		"the bundle's copy keeps the executable bit and links, and replaces an older copy",
		copied
	)
	check(
		str(ExportPlugin.copy_folder(base.path_join("none"), target).get("error", "")).contains(
			"cannot open"
		),
		"a copy that cannot be made is an error, not silence"
	)
	ExportPlugin.remove_folder(base)


## Mode "bundle" without a bundle: the failure says where the bundle was looked for, and
## requests fail with embedded_server_failed at once.
func test_embedded_server_without_bundle() -> void:
	var platform := PathServerBundle.current_platform()
	var folder := PathServerBundle.project_folder(platform)
	if not configure_embedded_server() or DirAccess.dir_exists_absolute(folder):
		return
	ProjectSettings.set_setting(PathServerClient.SETTING_EMBEDDED_MODE, "bundle")
	print("(the ERROR report below is expected: there is no bundle)")
	var embedded := embedded_client()
	var result := await embedded.find_path_async(center(Vector2i(1, 1)), center(Vector2i(17, 9)))
	check(
		(
			result.code == "embedded_server_failed"
			and result.message.contains("cannot start: no pathserver bundle at %s" % folder)
			and result.message.contains(PathServerClient.SETTING_EMBEDDED_MODE)
			and embedded.get_embedded_server_state() == PathServerClient.ServerState.FAILED
		),
		"mode bundle without a bundle fails at once, saying where it looked",
		result.message
	)
	ProjectSettings.set_setting(PathServerClient.SETTING_EMBEDDED_MODE, "python")
	embedded.queue_free()
	await process_frame


# -- uploaded maps: put_grid, put_tilemap, get_map, drop_map, update_map, the sync node -------


## A TileSet with the custom data layers "walkable" (bool) and "cost" (float), one physics
## and one navigation layer, and the tiles of [constant TILES] in one atlas.
func make_tile_set(shape := TileSet.TILE_SHAPE_SQUARE) -> TileSet:
	var tile_set := TileSet.new()
	tile_set.tile_shape = shape
	tile_set.tile_size = Vector2i(TILE_SIZE, TILE_SIZE)
	tile_set.add_custom_data_layer()
	tile_set.set_custom_data_layer_name(0, "walkable")
	tile_set.set_custom_data_layer_type(0, TYPE_BOOL)
	tile_set.add_custom_data_layer()
	tile_set.set_custom_data_layer_name(1, "cost")
	tile_set.set_custom_data_layer_type(1, TYPE_FLOAT)
	tile_set.add_physics_layer()
	tile_set.add_navigation_layer()
	var source := TileSetAtlasSource.new()
	var image := Image.create(TILE_SIZE * TILES.size(), TILE_SIZE, false, Image.FORMAT_RGBA8)
	source.texture = ImageTexture.create_from_image(image)
	source.texture_region_size = Vector2i(TILE_SIZE, TILE_SIZE)
	for atlas: Vector2i in TILES.values():
		source.create_tile(atlas)
	tile_set.add_source(source, 0)
	var square := PackedVector2Array(
		[Vector2(-8, -8), Vector2(8, -8), Vector2(8, 8), Vector2(-8, 8)]
	)
	for tile: String in ".~:":
		source.get_tile_data(TILES[tile], 0).set_custom_data("walkable", true)
	source.get_tile_data(TILES["~"], 0).set_custom_data("cost", 3.0)
	source.get_tile_data(TILES[":"], 0).set_custom_data("cost", 2.25)
	var rock := source.get_tile_data(TILES["R"], 0)
	rock.add_collision_polygon(0)
	rock.set_collision_polygon_points(0, 0, square)
	var navigation := NavigationPolygon.new()
	navigation.add_outline(square)
	source.get_tile_data(TILES["N"], 0).set_navigation_polygon(0, navigation)
	return tile_set


## A TileMapLayer drawn from [param rows] (characters of [constant TILES]) from layer cell
## [param at], placed at [param position] in the world and added to the tree.
func make_layer(rows: Array, at := Vector2i(-3, 2), position := Vector2(40, -24)) -> TileMapLayer:
	var layer := TileMapLayer.new()
	layer.tile_set = make_tile_set()
	layer.position = position
	for y in rows.size():
		for x in rows[y].length():
			var tile: String = rows[y][x]
			if TILES.has(tile):
				layer.set_cell(at + Vector2i(x, y), 0, TILES[tile])
	root.add_child(layer)
	return layer


## [param rows] as the server's cells: 0 blocked, else the cost rounded to 1..255.
func expected_cells(rows: Array) -> PackedByteArray:
	var cells := PackedByteArray()
	for row: String in rows:
		for tile in row:
			cells.append(clampi(roundi(TILE_VALUES[tile]), 0, 255))
	return cells


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


## The reading rules of put_tilemap, without a server: custom data, physics-only and
## navigation-only tiles, empty cells, the transform; other shapes and transforms refused.
func test_tile_map_reader() -> void:
	var rows := ["#.~N", "R: #"]
	var layer := make_layer(rows, Vector2i(-3, 2), Vector2(40, -24))
	var grid := PathServerTileMapReader.read(layer)
	check_equal(grid.error, "", "the reader reads a layer of square tiles")
	check_equal(grid.rect, Rect2i(-3, 2, 4, 2), "the grid covers the layer's used rect")
	check_equal(grid.cells, expected_cells(rows), "cells: custom data, else polygons, else blocked")
	check_equal(
		grid.costs,
		PackedFloat32Array([0, 1, 3, 1, 0, 2.25, 0, 0]),
		"costs: exact, since 2.25 is not a byte (0 on blocked cells)"
	)
	check_equal(
		grid.origin,
		Vector2(40 - 3 * 16, -24 + 2 * 16),
		"origin: the rect's top-left corner in global coordinates"
	)
	check_equal(grid.cell_size, 16.0, "cell_size: the tile size")
	var by_cell := PackedByteArray()
	var rules := PathServerTileMapReader.Rules.new(layer.tile_set, {})
	for y in range(2, 4):
		for x in range(-3, 1):
			by_cell.append(
				clampi(
					roundi(PathServerTileMapReader.cell_value(layer, Vector2i(x, y), rules)), 0, 255
				)
			)
	check_equal(
		grid.cells, by_cell, "the layer's data decoded directly = the layer asked cell by cell"
	)
	var open := PathServerTileMapReader.read(layer, {"empty_walkable": true})
	check_equal(open.cells[6], 1, "empty_walkable: an empty cell is walkable")
	layer.scale = Vector2(2, 2)
	check_equal(
		PathServerTileMapReader.read(layer).cell_size, 32.0, "a scaled layer: cell_size scales"
	)
	layer.rotation = 0.5
	var rotated := PathServerTileMapReader.read(layer)
	check(
		rotated.error.contains("rotated") and rotated.at == "layer",
		"a rotated layer is refused",
		rotated
	)
	layer.rotation = 0.0
	layer.tile_set.tile_shape = TileSet.TILE_SHAPE_HEXAGON
	var hexagons := PathServerTileMapReader.read(layer)
	check(hexagons.error.contains("square tiles"), "hexagonal tiles are refused", hexagons.error)
	layer.queue_free()


## put_tilemap on a real layer: the server paths through the grass tile in the rock wall,
## in the layer's world coordinates; get_map gives back the cells the tiles say.
func test_put_tilemap() -> void:
	var layer := make_layer(TILE_ROWS)
	var upload := await client.put_tilemap_async(TILE_MAP, layer)
	check(
		(
			upload.ok
			and upload.info.get("width") == 11
			and upload.info.get("height") == 7
			and upload.info.get("rect") == Rect2i(-3, 2, 11, 7)
		),
		"put_tilemap uploads the layer's used rect (11 x 7)",
		upload
	)
	var back := await client.get_map_async(TILE_MAP)
	check_equal(
		back.info.get("cells"), expected_cells(TILE_ROWS), "get_map: the cells the tiles say"
	)
	check(
		back.info.get("costs") is PackedFloat32Array and back.info.costs[7 + 4 * 11] == 2.25,
		"get_map: the exact costs, the sand's 2.25 included",
		back.info.get("costs")
	)
	var to_world := func(cell: Vector2i) -> Vector2:
		return layer.to_global(layer.map_to_local(cell + Vector2i(-3, 2)))
	var found := await client.find_path_async(
		to_world.call(Vector2i(1, 1)),
		to_world.call(Vector2i(8, 1)),
		Vector2i.ONE,
		{"map": TILE_MAP, "smooth": "none"}
	)
	var wrong := []
	var through_grass := false
	for point in found.waypoints:
		var cell := layer.local_to_map(layer.to_local(point)) - Vector2i(-3, 2)
		var tile: String = TILE_ROWS[cell.y][cell.x]
		through_grass = through_grass or tile == "N"
		if TILE_VALUES[tile] == 0.0:
			wrong.append([cell, tile])
	check(
		(
			found.status == "found"
			and wrong.is_empty()
			and through_grass
			and found.waypoints[0] == to_world.call(Vector2i(1, 1))
		),
		(
			"a path on the uploaded layer, in its world coordinates, steps on walkable tiles "
			+ "only and through the grass (navigation polygon) tile"
		),
		[found, wrong]
	)
	var mud := await client.find_path_async(
		Vector2(6, 2),
		Vector2(8, 2),
		Vector2i.ONE,
		{"map": TILE_MAP, "space": "grid", "smooth": "none"}
	)
	var floor_path := await client.find_path_async(
		Vector2(5, 1),
		Vector2(7, 1),
		Vector2i.ONE,
		{"map": TILE_MAP, "space": "grid", "smooth": "none"}
	)
	check(
		mud.ok and floor_path.ok and mud.info.cost > floor_path.info.cost * 2.0,
		(
			"mud's cost (3) counts: two mud steps cost %.2f, two floor steps %.2f"
			% [mud.info.get("cost", 0.0), floor_path.info.get("cost", 0.0)]
		)
	)
	var bad := await client.put_tilemap_async(TILE_MAP, TileMapLayer.new())
	check(
		(
			not bad.ok
			and bad.code == "invalid_request"
			and bad.info.at == "layer"
			and bad.message.contains("no TileSet")
		),
		"put_tilemap of a layer without a TileSet: an error result the caller can read",
		bad
	)
	layer.queue_free()
	await client.drop_map_async(TILE_MAP)


## PathServerTileMapSync: uploads on ready, sends the tiles changed at runtime (one frame's
## edits together), a later path sees them, get_map returns the upload plus the edits; a tile
## placed outside the uploaded rect uploads the layer again.
func test_tile_map_sync() -> void:
	var layer := make_layer(TILE_ROWS, Vector2i.ZERO, Vector2.ZERO)
	var sync := PathServerTileMapSync.new()
	sync.map_name = TILE_MAP
	sync.client = client
	var events := []
	sync.uploaded.connect(func(gen: int) -> void: events.append(["uploaded", gen]))
	sync.synced.connect(func(gen: int, cells: int) -> void: events.append(["synced", gen, cells]))
	sync.sync_failed.connect(
		func(code: String, message: String) -> void: events.append(["failed", code, message])
	)
	layer.add_child(sync)
	await wait_until(func() -> bool: return sync.is_synced(), 10.0)
	check(
		sync.gen >= 0 and events.size() == 1 and events[0][0] == "uploaded",
		"the sync node uploads its layer when ready",
		events
	)
	var options := {"map": TILE_MAP, "space": "grid"}
	var before := await client.find_path_async(Vector2(1, 1), Vector2(8, 1), Vector2i.ONE, options)
	# The debug overlay shows what the server has, fetched with get_map.
	var overlay := PathServerDebugDraw2D.new()
	overlay.map_name = TILE_MAP
	overlay.client = client
	root.add_child(overlay)
	await wait_until(func() -> bool: return overlay.gen == sync.gen, 10.0)
	check(
		(
			overlay.cells == expected_cells(TILE_ROWS)
			and overlay.map_size == Vector2i(11, 7)
			and overlay.cell_size == 16.0
		),
		"the debug overlay fetches the map's cells with get_map",
		[overlay.gen, overlay.map_size, overlay.cells]
	)
	var preview := PathServerDebugDraw2D.new()
	preview.tile_map_layer = layer
	root.add_child(preview)
	preview._preview()
	check(
		preview.cells == expected_cells(TILE_ROWS) and preview.origin == Vector2.ZERO,
		"the overlay's editor preview reads the layer as put_tilemap uploads it",
		preview.cells
	)
	preview.queue_free()
	# One frame: the grass becomes rock (the only way through is closed), a floor tile mud.
	layer.set_cell(Vector2i(4, 3), 0, TILES["R"])
	layer.set_cell(Vector2i(1, 5), 0, TILES["~"])
	await wait_until(func() -> bool: return events.size() >= 2 and sync.is_synced(), 10.0)
	check(
		(
			events.size() == 2
			and events[1][0] == "synced"
			and events[1][2] == 2
			and events[1][1] > events[0][1]
		),
		"two tiles changed in one frame are sent as one batch (a new generation)",
		events
	)
	var after := await client.find_path_async(Vector2(1, 1), Vector2(8, 1), Vector2i.ONE, options)
	check(
		before.status == "found" and after.status == "no_path",
		"the path after the edit sees it: the wall is closed (no_path)",
		[before, after]
	)
	var map := await client.get_map_async(TILE_MAP)
	var edited := expected_cells(TILE_ROWS)
	edited[4 + 3 * 11] = 0
	edited[1 + 5 * 11] = 3
	check(
		map.ok and map.info.cells == edited and map.info.gen == sync.gen,
		"get_map: what was uploaded plus the edits, at the sync node's generation",
		map.info
	)
	await wait_until(func() -> bool: return overlay.gen == sync.gen, 10.0)
	check(
		overlay.cells == edited,
		"the debug overlay fetches the map again when its generation changes (the edits)",
		[overlay.gen, sync.gen, overlay.cells]
	)
	overlay.enabled = false
	check(not overlay.visible, "the overlay's enabled toggles it")
	overlay.queue_free()
	layer.erase_cell(Vector2i(4, 3))
	await process_frame
	layer.set_cell(Vector2i(4, 3), 0, TILES["."])
	await wait_until(func() -> bool: return events.size() >= 3 and sync.is_synced(), 10.0)
	var reopened := await client.find_path_async(
		Vector2(1, 1), Vector2(8, 1), Vector2i.ONE, options
	)
	check(
		reopened.status == "found",
		"a tile erased then set again: the way is open again",
		[events, reopened]
	)
	layer.set_cell(Vector2i(11, 3), 0, TILES["."])
	await wait_until(
		func() -> bool:
			return (
				events.filter(func(e: Array) -> bool: return e[0] == "uploaded").size() == 2
				and sync.is_synced()
			),
		10.0
	)
	var grown := await client.get_map_async(TILE_MAP, Rect2i(0, 0, 1, 1))
	check(
		grown.ok and grown.info.size == Vector2i(12, 7),
		"a tile outside the uploaded rect: the layer is uploaded again (12 x 7)",
		[events, grown.info]
	)
	# Someone else edits the map: the sync node's next update conflicts (if_gen) and the layer,
	# the truth, is uploaded again.
	print("(the WARNING below, a conflict, is expected: another client edits the map)")
	await client.update_map_async(TILE_MAP, {"cells": [Vector2i(2, 2)], "solid": true})
	layer.set_cell(Vector2i(2, 1), 0, TILES["~"])
	await wait_until(
		func() -> bool:
			return (
				events.filter(func(e: Array) -> bool: return e[0] == "uploaded").size() == 3
				and sync.is_synced()
			),
		10.0
	)
	var restored := await client.get_map_async(TILE_MAP, Rect2i(2, 1, 1, 2))
	check(
		(
			restored.ok
			and restored.info.cells == PackedByteArray([3, 1])
			and events.any(func(e: Array) -> bool: return e[0] == "failed" and e[1] == "conflict")
		),
		"an update that conflicts (if_gen) makes the sync node upload the layer again",
		[events, restored.info]
	)
	layer.queue_free()
	await process_frame
	await client.drop_map_async(TILE_MAP)


## put_grid and get_map with every layer, a region, an update on top; drop_map, then the map
## is gone.
func test_get_map_round_trip() -> void:
	var cells := PackedByteArray([1, 1, 0, 1, 1, 2, 1, 0, 1, 1, 4, 1])
	var costs := PackedFloat32Array([1, 1, 0, 1, 1, 1.5, 1, 0, 1, 1, 4, 300])
	var heights := PackedFloat32Array([0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5])
	var tags := PackedByteArray([0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3])
	var put := await client.put_grid_async(
		"godot_grid",
		Vector2i(4, 3),
		cells,
		{
			"costs": costs,
			"heights": heights,
			"tags": tags,
			"origin": Vector2(-8, 16),
			"cell_size": 4.0
		}
	)
	check(
		(
			put.ok
			and put.info.get("width") == 4
			and put.info.get("height") == 3
			and put.info.get("gen") is int
		),
		"put_grid answers with the map's size and generation",
		put
	)
	var whole := await client.get_map_async("godot_grid")
	var rounded := PackedByteArray([1, 1, 0, 1, 1, 2, 1, 0, 1, 1, 4, 255])
	check(
		(
			whole.ok
			and whole.info.cells == rounded
			and whole.info.costs == costs
			and whole.info.heights == heights
			and whole.info.tags == tags
			and whole.info.origin == Vector2(-8, 16)
			and whole.info.cell_size == 4.0
			and whole.info.size == Vector2i(4, 3)
			and whole.info.region == Rect2i(0, 0, 4, 3)
		),
		(
			"get_map returns what put_grid uploaded (costs, heights and tags as float32 and "
			+ "bytes; a cost of 300 is the byte 255)"
		),
		whole.info
	)
	var edit := await client.update_map_async(
		"godot_grid", {"cells": [Vector2i(1, 1)], "solid": true}, put.info.gen
	)
	var region := await client.get_map_async("godot_grid", Rect2i(1, 1, 2, 2))
	check(
		(
			edit.ok
			and region.ok
			and region.info.cells == PackedByteArray([0, 1, 1, 4])
			and region.info.region == Rect2i(1, 1, 2, 2)
			and region.info.gen == edit.info.gen
		),
		"get_map of a region: the upload plus an update (with if_gen)",
		[edit, region.info]
	)
	var dropped := await client.drop_map_async("godot_grid")
	var gone := await client.find_path_async(
		Vector2(0, 0), Vector2(1, 0), Vector2i.ONE, {"map": "godot_grid", "space": "grid"}
	)
	check(
		dropped.ok and gone.code == "unknown_map",
		"drop_map: the map is gone (unknown_map)",
		[dropped, gone]
	)


## Bad uploads and edits give error results the caller can read: code, message, at.
func test_upload_errors() -> void:
	var cases := [
		[
			"cells of the wrong size",
			await client.put_grid_async("godot_bad", Vector2i(3, 2), PackedByteArray([1, 1, 1])),
			"invalid_request",
			"cells"
		],
		[
			"costs of the wrong size",
			await client.put_grid_async(
				"godot_bad",
				Vector2i(2, 1),
				PackedByteArray([1, 1]),
				{"costs": PackedFloat32Array([1])}
			),
			"invalid_request",
			"costs"
		],
		[
			"a NaN cost",
			await client.put_grid_async(
				"godot_bad",
				Vector2i(2, 1),
				PackedByteArray([1, 1]),
				{"costs": PackedFloat32Array([1, NAN])}
			),
			"non_finite",
			"costs"
		],
		[
			"width 0",
			await client.put_grid_async("godot_bad", Vector2i(0, 1), PackedByteArray()),
			"invalid_request",
			"width"
		],
		[
			"a map file's name",
			await client.put_grid_async(MAP, Vector2i(1, 1), PackedByteArray([1])),
			"conflict",
			null
		],
		["drop_map of a map file", await client.drop_map_async(MAP), "conflict", null],
		[
			"drop_map of a name never uploaded",
			await client.drop_map_async("godot_never"),
			"unknown_map",
			"map"
		],
		[
			"get_map of a region outside the map",
			await client.get_map_async(MAP, Rect2i(15, 5, 10, 2)),
			"out_of_bounds",
			"region"
		],
	]
	for case: Array in cases:
		var result: PathServerResult = case[1]
		check(
			(
				not result.ok
				and result.code == case[2]
				and (case[3] == null or result.info.get("at") == case[3])
				and result.message != ""
			),
			"%s: %s%s" % [case[0], case[2], "" if case[3] == null else " at %s" % case[3]],
			result
		)
	var upload := await client.put_grid_async("godot_bad", Vector2i(2, 1), PackedByteArray([1, 1]))
	var stale := await client.update_map_async(
		"godot_bad", {"cells": [Vector2i(0, 0)], "solid": true}, upload.info.gen + 100
	)
	check(
		not stale.ok and stale.code == "conflict" and stale.info.get("gen") == upload.info.gen,
		"update with a stale if_gen: conflict, info.gen the current generation",
		stale
	)
	await client.drop_map_async("godot_bad")


## put_tilemap of a 256 x 256 layer: how long reading it and uploading it take.
func test_put_tilemap_timing() -> void:
	var layer := TileMapLayer.new()
	layer.tile_set = make_tile_set()
	root.add_child(layer)
	var tiles: Array = TILES.values()
	for y in 256:
		for x in 256:
			layer.set_cell(Vector2i(x, y), 0, tiles[(x * 7 + y * 3) % tiles.size()])
	# The layer's own first update of 65,536 new tiles (rendering, collision) takes frames of
	# its own; not part of what is measured here.
	await process_frame
	await process_frame
	var started := Time.get_ticks_usec()
	var grid := PathServerTileMapReader.read(layer)
	var read_ms := (Time.get_ticks_usec() - started) / 1000.0
	started = Time.get_ticks_usec()
	var upload := await client.put_tilemap_async("godot_big", layer)
	var total_ms := (Time.get_ticks_usec() - started) / 1000.0
	check(
		grid.error == "" and upload.ok and total_ms < 5000.0,
		"put_tilemap of a 256 x 256 layer: %.0f ms (reading it: %.0f ms)" % [total_ms, read_ms],
		upload
	)
	var sync := PathServerTileMapSync.new()
	sync.map_name = "godot_big"
	sync.client = client
	layer.add_child(sync)
	await wait_until(func() -> bool: return sync.is_synced(), 10.0)
	var looks := 20
	started = Time.get_ticks_usec()
	for i in looks:
		sync._look_for_edits()
	var look_ms := (Time.get_ticks_usec() - started) / 1000.0 / looks
	layer.set_cell(Vector2i(100, 100), 0, TILES["#"])
	started = Time.get_ticks_usec()
	sync._look_for_edits()
	var diff_ms := (Time.get_ticks_usec() - started) / 1000.0
	check(
		sync._dirty.keys() == [Vector2i(100, 100)],
		(
			(
				"the sync node's look for edits on 65,536 tiles: %.2f ms unchanged, "
				+ "%.2f ms to find one edited tile"
			)
			% [look_ms, diff_ms]
		),
		sync._dirty.keys().slice(0, 5)
	)
	layer.queue_free()
	await process_frame
	await client.drop_map_async("godot_big")


# -- the demo ---------------------------------------------------------------------------------


func demo_path(file: String) -> String:
	return (
		ProjectSettings
		. globalize_path("res://")
		. path_join("../demo")
		. path_join(file)
		. simplify_path()
	)


## Uploads the demo's level (demo/level.tscn, a TileMapLayer) as the demo does, under the
## name of [method demo_map].
func upload_demo_level() -> bool:
	var scene: PackedScene = load(demo_path("level.tscn"))
	var level: TileMapLayer = scene.instantiate()
	root.add_child(level)
	var upload := await client.put_tilemap_async(demo_map(), level)
	level.queue_free()
	check(upload.ok, "the demo's level (demo/level.tscn) uploads as '%s'" % demo_map(), upload)
	return upload.ok


## The map the demo's project settings ask for.
func demo_map() -> String:
	var project := ConfigFile.new()
	project.load(demo_path("project.godot"))
	return project.get_value("pathserver", "connection/default_map", "example")


## The demo sends its whole group to one point: each unit must get a cell of its own (they
## all used to stop on the clicked cell), on the clicked side of a wall.
func test_demo_formation() -> void:
	var formation: GDScript = load(demo_path("formation.gd"))
	var rows := [
		"..........",
		"..........",
		"....@.....",
		"....@.....",
		"....@.....",
		"..........",
	]
	var walkable := func(cell: Vector2i) -> bool:
		return (
			cell.x >= 0
			and cell.y >= 0
			and cell.y < rows.size()
			and cell.x < rows[0].length()
			and rows[cell.y][cell.x] == "."
		)
	var sizes: Array[Vector2i] = [
		Vector2i.ONE, Vector2i(2, 2), Vector2i.ONE, Vector2i(2, 2), Vector2i.ONE
	]
	var goals: Array[Vector2i] = formation.goal_cells(Vector2i(3, 3), sizes, walkable)
	var covered := {}
	var problems := []
	for i in goals.size():
		for cell: Vector2i in formation.footprint(goals[i], sizes[i]):
			if covered.has(cell) or not walkable.call(cell):
				problems.append([i, cell])
			covered[cell] = true
		if goals[i].x > 3 or Vector2(goals[i]).distance_to(Vector2(3, 3)) > 3.0:
			problems.append([i, goals[i], "not near the centre, on its side of the wall"])
	check(
		goals.size() == 5 and problems.is_empty(),
		"demo formation: five units of two sizes get five separate places near the point",
		[goals, problems]
	)


## Cells where a unit of [param size] can stand on [param map], found as the demo finds walls:
## a zero-length path with snapping off fails with start_blocked on the others.
func standable_cells(map: String, size: Vector2i, width: int, height: int) -> Array:
	var cells := []
	for y in height:
		for x in width:
			cells.append(Vector2i(x, y))
	var results := await client.find_paths_async(
		cells.map(func(cell: Vector2i) -> Dictionary: return {"start": cell, "goal": cell}),
		size,
		{"map": map, "space": "grid", "snap": false}
	)
	var standable := []
	for i in results.size():
		if results[i].ok:
			standable.append(cells[i])
	return standable


## A 2x2 demo unit could be trapped: the demo's map had rooms it fits in behind one-cell doors.
## The level is the demo's TileMapLayer, uploaded as the demo does.
## On the demo's map every cell a unit of either size can stand on must be reachable from
## every other for that size.
func test_demo_map_fits_its_units() -> void:
	if not await upload_demo_level():
		return
	var map := demo_map()
	var maps := await client.request_async("maps")
	var entry := {}
	for item: Dictionary in maps.reply.get("maps", []):
		if item.get("name") == map:
			entry = item
	if entry.is_empty():
		check(false, "the server serves the demo's map '%s'" % map, maps.reply)
		return
	for size in [Vector2i.ONE, Vector2i(2, 2)]:
		var cells := await standable_cells(map, size, entry.width, entry.height)
		var results := await client.find_paths_async(
			cells.map(func(cell: Vector2i) -> Array: return [cells[0], cell]),
			size,
			{"map": map, "space": "grid", "snap": false}
		)
		var unreachable := []
		for i in results.size():
			if results[i].status != "found":
				unreachable.append(cells[i])
		check(
			cells.size() > 100 and results.size() == cells.size() and unreachable.is_empty(),
			(
				"demo map '%s': a %dx%d unit reaches all %d cells it can stand on"
				% [map, size.x, size.y, cells.size()]
			),
			unreachable.slice(0, 10)
		)


## The demo shows two unit sizes taking different routes between its roaming areas: the small
## units through the middle wall's one-cell gap (row 8), the big ones by the wide gap below.
func test_demo_routes_differ_by_size() -> void:
	var options := {"map": demo_map(), "space": "grid", "smooth": "corners"}
	var small := await client.find_path_async(Vector2(12, 3), Vector2(40, 3), Vector2i.ONE, options)
	var big := await client.find_path_async(Vector2(12, 3), Vector2(40, 3), Vector2i(2, 2), options)
	check(
		(
			small.ok
			and big.ok
			and small.waypoints.has(Vector2(25, 8))
			and big.info.length > small.info.length * 1.5
		),
		(
			"demo: the 1x1 route takes the one-cell gap (length %.1f), the 2x2 one a detour (%.1f)"
			% [small.info.get("length", 0.0), big.info.get("length", 0.0)]
		),
		[small.waypoints, big.waypoints]
	)
	await client.drop_map_async(demo_map())


## Starts a second server as the client's embedded child, kills it with a request pending,
## starts it again: the request is sent again after the reconnect and completes.
func test_embedded_server_and_reconnect() -> void:
	if not configure_embedded_server():
		return
	var embedded := PathServerClient.new()
	embedded.embedded_server = true
	embedded.map_name = MAP
	embedded.timeout_ms = 60000
	var events := []
	embedded.connected.connect(func() -> void: events.append("connected"))
	embedded.disconnected.connect(func(_reason: String) -> void: events.append("disconnected"))
	root.add_child(embedded)
	var pid := embedded.get_embedded_server_pid()
	check(pid > 0 and OS.is_process_running(pid), "the embedded server process started", pid)
	var first := await embedded.find_path_async(center(Vector2i(1, 1)), center(Vector2i(17, 9)))
	check(first.ok, "a path from the embedded server", first)
	# Freeze the server, so the next request is sent and stays unanswered, then kill it.
	OS.execute("kill", ["-STOP", str(pid)])
	var answers := track_answers(embedded)
	var id := embedded.find_path(center(Vector2i(1, 1)), center(Vector2i(18, 2)))
	for i in 5:
		await process_frame
	check(
		embedded._connection.pending[id].sent and not answers.has(id),
		"a request is in flight to a frozen server"
	)
	embedded.stop_embedded_server()
	await wait_until(func() -> bool: return events.has("disconnected"), 5.0)
	check(events.has("disconnected"), "the client notices the server went away", events)
	for i in 10:
		await process_frame
	check(not answers.has(id), "the request waits while the server is down")
	embedded.start_embedded_server()
	var restarted_pid := embedded.get_embedded_server_pid()
	await wait_until(func() -> bool: return answers.has(id), 60.0)
	var answer: Variant = answers.get(id)
	check(
		answer is PackedVector2Array and answer[-1] == center(Vector2i(18, 2)),
		"the request in flight is sent again after reconnecting",
		answer
	)
	check(events.count("connected") == 2, "connected twice (reconnect with back-off)", events)
	embedded.queue_free()
	await process_frame
	await process_frame
	# Not OS.is_process_running: OS.kill already reaped the child, and asking again logs ECHILD.
	var proc_dir := "/proc/%d" % restarted_pid
	var gone := await wait_until(
		func() -> bool: return not DirAccess.dir_exists_absolute(proc_dir), 5.0
	)
	check(gone, "the embedded server stops when its client leaves the tree", restarted_pid)


# -- conformance and options -----------------------------------------------------------------


## A file named by [param variable], else [param fallback] next to this project.
func shared_file(variable: String, fallback: String) -> String:
	var path := OS.get_environment(variable)
	if path == "":
		path = ProjectSettings.globalize_path("res://").path_join(fallback)
	return path.simplify_path()


## The shared scenarios of engine_clients/conformance.json, through this client's public API
## ([code]await find_path_async[/code], [code]request_async[/code]): every outcome must be the
## scenario's expectation, as for the Python and C# clients (engine_clients/conformance.py
## describes the outcome's shape).
func test_conformance() -> void:
	var path := shared_file("PATHSERVER_CONFORMANCE", "../../conformance.json")
	var parsed: Variant = JSON.parse_string(FileAccess.get_file_as_string(path))
	if not parsed is Dictionary or not parsed.get("scenarios") is Array:
		check(false, "conformance scenarios read from %s" % path)
		return
	var silent := PathServerClient.new()
	silent.endpoint = OS.get_environment("PATHSERVER_SILENT_ENDPOINT")
	silent.auto_connect = silent.endpoint != ""
	root.add_child(silent)
	for scenario: Dictionary in parsed.scenarios:
		var name := "conformance: %s" % scenario.name
		if scenario.get("server") == "silent" and silent.endpoint == "":
			check(false, name, "PATHSERVER_SILENT_ENDPOINT is not set")
			continue
		var with_client := silent if scenario.get("server") == "silent" else client
		var got := await conformance_outcome(with_client, scenario)
		var wrong := conformance_mismatches(scenario.expect, got)
		check(wrong.is_empty(), name, "; ".join(wrong))
	silent.queue_free()


## What this client reports for one scenario (its before requests, its request, its after
## requests), in the shape of its expectation.
func conformance_outcome(with_client: PathServerClient, scenario: Dictionary) -> Dictionary:
	var got := {}
	for step: Dictionary in scenario.get("before", []):
		got = await conformance_step(with_client, step)
		if got.has("error"):
			break
	if not got.has("error"):
		got = await conformance_step(with_client, scenario.request)
	for step: Dictionary in scenario.get("after", []):
		await conformance_step(with_client, step)
	return got


## One request of a scenario through this client's public API.
func conformance_step(with_client: PathServerClient, request: Dictionary) -> Dictionary:
	var op: String = request.get("op", "path")
	# JSON numbers arrive as floats; the wire wants whole numbers as ints (sizes, cells).
	var fields: Dictionary = whole_numbers(request)
	var result: PathServerResult
	if op != "path" and request.size() == 1:
		# An op alone goes out as it is, required fields missing included.
		op = "raw"
	var size: Variant = fields.get("unit_size", 1)
	var unit_size := Vector2i(size[0], size[1]) if size is Array else Vector2i(size, size)
	var options: Dictionary = fields.get("options", {})
	if request.has("timeout_ms"):
		options["timeout_ms"] = fields.timeout_ms
	if request.has("map"):
		options["map"] = request.map
	if op in ["reachable", "field", "next_steps", "check_block"] and not options.has("space"):
		# A scenario is written in the wire's terms: its default space is the server's, grid.
		options["space"] = "grid"
	match op:
		"path":
			if request.has("goals"):
				options["goals"] = scenario_points(request.goals)
			result = await with_client.find_path_async(
				scenario_point(request.start),
				scenario_point(request.goal) if request.has("goal") else Vector2.ZERO,
				unit_size,
				options
			)
		"reachable":
			result = await with_client.reachable_async(
				scenario_point(request.start), float(request.budget), unit_size, options
			)
		"field":
			result = await with_client.distance_field_async(
				scenario_points(request.goals), unit_size, options
			)
		"next_steps":
			result = await with_client.next_steps_async(
				scenario_points(request.goals),
				scenario_points(request.positions),
				unit_size,
				options
			)
		"check_block":
			result = await with_client.check_block_async(
				fields.get("cells", []),
				fields.get("rects", []).map(
					func(r: Array) -> Rect2i: return Rect2i(r[0], r[1], r[2], r[3])
				),
				scenario_points(request.points),
				unit_size,
				options
			)
		"put_map":
			var put_options := {}
			for key: String in ["costs", "heights"]:
				if request.has(key):
					put_options[key] = PackedFloat32Array(scenario_numbers(request[key]))
			if request.has("origin"):
				put_options["origin"] = scenario_point(request.origin)
			if request.has("cell_size"):
				put_options["cell_size"] = float(request.cell_size)
			result = await with_client.put_grid_async(
				request.map,
				Vector2i(fields.width, fields.height),
				PackedByteArray(fields.cells),
				put_options
			)
		"get_map":
			var region: Array = fields.get("region", [0, 0, 0, 0])
			result = await with_client.get_map_async(
				request.map, Rect2i(region[0], region[1], region[2], region[3])
			)
		"drop_map":
			result = await with_client.drop_map_async(request.map)
		"update":
			var edit := fields.duplicate()
			edit.erase("op")
			edit.erase("map")
			edit.erase("if_gen")
			result = await with_client.update_map_async(request.map, edit, fields.get("if_gen", -1))
		_:
			result = await with_client.request_async(request.op)
	if not result.ok:
		return {"error": result.code, "at": result.info.get("at")}
	return conformance_answer(op, request, result)


## A completed request's outcome in the shape of conformance.py's (see [method conformance_step]).
func conformance_answer(op: String, request: Dictionary, result: PathServerResult) -> Dictionary:
	var got := {"status": "ok"}
	match op:
		"path":
			var start: Vector2 = result.info.start
			var goal: Vector2 = result.info.goal
			got = {
				"status": result.status,
				"cost": result.info.cost,
				"start": [start.x, start.y],
				"goal": [goal.x, goal.y],
				"waypoints": result.waypoints.size(),
				"start_snapped": result.info.start_snapped,
				"goal_snapped": result.info.goal_snapped,
			}
			if request.has("goals"):
				got["goal_index"] = result.info.get("goal_index")
		"reachable":
			var cells: Array[Vector2i] = result.info.cells
			var costs: PackedFloat32Array = result.info.costs
			got = {
				"status": "ok",
				"count": cells.size(),
				"first": [cells[0].x, cells[0].y] if not cells.is_empty() else null,
				"last_cost": costs[-1] if not costs.is_empty() else null,
			}
		"field":
			var origin: Vector2i = result.info.origin
			got = {
				"status": "ok",
				"width": result.info.width,
				"height": result.info.height,
				"origin": [origin.x, origin.y],
				"cost": listed(result.info.cost),
			}
		"next_steps":
			var steps: PackedVector2Array = result.info.steps
			got = {
				"status": "ok",
				"steps": Array(steps).map(func(step: Vector2) -> Array: return [step.x, step.y]),
				"remaining": listed(result.info.remaining),
			}
		"check_block":
			got = {"status": "ok", "disconnected": result.info.disconnected}
		"put_map":
			got = {"status": "ok", "width": result.info.width, "height": result.info.height}
		"get_map":
			var region: Rect2i = result.info.region
			got = {
				"status": "ok",
				"width": result.info.size.x,
				"height": result.info.size.y,
				"region": [region.position.x, region.position.y, region.size.x, region.size.y],
				"cells": Array(result.info.cells),
			}
			if result.info.has("costs"):
				got["costs"] = Array(result.info.costs)
	return got


## A scenario's [x, y]: numbers, or "nan" / "inf" / "-inf" (JSON has no such floats).
func scenario_point(pair: Array) -> Vector2:
	var xy := scenario_numbers(pair)
	return Vector2(xy[0], xy[1])


## A scenario's list of [x, y] points.
func scenario_points(pairs: Array) -> PackedVector2Array:
	return PackedVector2Array(pairs.map(scenario_point))


## Floats as a scenario writes them: "inf" for +inf (JSON has none).
func listed(values: PackedFloat32Array) -> Array:
	return Array(values).map(
		func(value: float) -> Variant: return "inf" if is_inf(value) and value > 0 else value
	)


## A scenario's list of numbers, "nan" / "inf" / "-inf" included.
func scenario_numbers(values: Array) -> Array:
	var named := {"nan": NAN, "inf": INF, "-inf": -INF}
	return values.map(func(v: Variant) -> float: return named[v] if v is String else float(v))


func whole_numbers(value: Variant) -> Variant:
	if value is float and value == floorf(value) and absf(value) < 1e15:
		return int(value)
	if value is Array:
		return value.map(whole_numbers)
	if value is Dictionary:
		var copy := {}
		for key: Variant in value:
			copy[key] = whole_numbers(value[key])
		return copy
	return value


## How [param got] differs from [param expect]: numbers to 1e-6, the rest exactly; for a
## path, start_snapped and goal_snapped are false unless expected true.
func conformance_mismatches(expect: Dictionary, got: Dictionary) -> PackedStringArray:
	var keys := expect.keys()
	if expect.get("status") in ["found", "partial", "no_path"]:
		for key: String in ["start_snapped", "goal_snapped"]:
			if not expect.has(key):
				keys.append(key)
	var wrong := PackedStringArray()
	for key: String in keys:
		var wanted: Variant = expect.get(key, false)
		if not same_value(wanted, got.get(key)):
			wrong.append(
				(
					"%s: expected %s, got %s"
					% [key, JSON.stringify(wanted), JSON.stringify(got.get(key))]
				)
			)
	return wrong


func same_value(wanted: Variant, value: Variant) -> bool:
	var numbers := [TYPE_INT, TYPE_FLOAT]
	if typeof(wanted) in numbers:
		return typeof(value) in numbers and absf(float(wanted) - float(value)) <= 1e-6
	if wanted is Array:
		if not value is Array or value.size() != wanted.size():
			return false
		for i in wanted.size():
			if not same_value(wanted[i], value[i]):
				return false
		return true
	return typeof(wanted) == typeof(value) and wanted == value


## The client's one table of options, [constant PathServerOptions.TABLE], checked against the
## server's (`pathserver options --json`, which engine_clients/test.sh writes): the same names,
## each with the server's ops (but where a method takes it as a parameter), each default the
## server's wire_default but the client's own (CLIENT_DEFAULTS); and the views by op,
## PATH_OPTIONS and QUERY_OPTIONS, with each query's parameters, are the server's per op.
func test_options_match_the_server() -> void:
	var path := OS.get_environment("PATHSERVER_OPTIONS")
	var parsed: Variant = (
		JSON.parse_string(FileAccess.get_file_as_string(path)) if path != "" else null
	)
	if not parsed is Dictionary or not parsed.get("options") is Array:
		check(
			false,
			"the server's options read from PATHSERVER_OPTIONS (`pathserver options --json`)",
			path
		)
		return
	var server := {}
	for option: Dictionary in parsed.options:
		server[option.name] = option
	var table := PathServerOptions.TABLE
	var is_parameter := func(name: String, op: String) -> bool:
		return name in QUERY_PARAMETERS.get(op, [])
	var wrong_ops := []
	for name: String in server:
		if name == "unit_size":
			continue
		var expected: Array = server[name].ops.filter(
			func(op: String) -> bool:
				return op in PathServerOptions.EVERY_OP and not is_parameter.call(name, op)
		)
		var ops: Array = table[name].ops if table.has(name) else []
		expected.sort()
		ops = ops.duplicate()
		ops.sort()
		if ops != expected:
			wrong_ops.append([name, ops, expected])
	var unknown := table.keys().filter(func(name: String) -> bool: return not server.has(name))
	check(
		unknown.is_empty() and wrong_ops.is_empty(),
		"PathServerOptions.TABLE: the server's options, each with the ops the server gives it",
		[unknown, wrong_ops]
	)
	# Per op, the views: the options the server's path and paths take are PATH_OPTIONS; each
	# query's are QUERY_OPTIONS[op] and the parameters of the query's method.
	var documented := PathServerClient.PATH_OPTIONS
	var by_op := {"path": documented.keys(), "paths": documented.keys()}
	for op: String in PathServerClient.QUERY_OPTIONS:
		by_op[op] = PathServerClient.QUERY_OPTIONS[op].keys() + QUERY_PARAMETERS[op]
	for op: String in by_op:
		var client_names: Array = by_op[op]
		var server_names := server.keys().filter(
			func(name: String) -> bool: return name != "unit_size" and op in server[name].ops
		)
		var unknown_here := client_names.filter(
			func(name: String) -> bool: return name not in server_names
		)
		var missing := server_names.filter(
			func(name: String) -> bool: return name not in client_names
		)
		check(
			unknown_here.is_empty() and missing.is_empty(),
			"the client's options of %s are the server's" % op,
			"not the server's: %s, missing: %s" % [unknown_here, missing]
		)
	var unknown_anywhere := server.keys().filter(
		func(name: String) -> bool:
			return (
				name != "unit_size"
				and not table.has(name)
				and not QUERY_PARAMETERS.values().any(
					func(names: Array) -> bool: return name in names
				)
			)
	)
	check(
		unknown_anywhere.is_empty(), "the client knows every option of the server", unknown_anywhere
	)
	var wrong := []
	for name: String in table:
		if not server.has(name):
			continue
		var option: Dictionary = server[name]
		var value: Variant = table[name].default
		if PathServerClient.CLIENT_DEFAULTS.has(name):
			# The client's own default: sent on every request, so it must be a valid choice.
			var choices: Array = option.choices if option.get("choices") is Array else [value]
			if value != PathServerClient.CLIENT_DEFAULTS[name] or value not in choices:
				wrong.append([name, value, option.get("choices")])
		elif not same_value(option.wire_default, value):
			wrong.append([name, value, option.wire_default])
	check(
		wrong.is_empty() and PathServerClient.CLIENT_DEFAULTS.keys() == ["space"],
		"the table's defaults are the server's wire_default (space: the client's own, world)",
		wrong
	)
	var arguments := {}
	for method: Dictionary in client.get_script().get_script_method_list():
		arguments[method.name] = method.args.map(func(arg: Dictionary) -> String: return arg.name)
	var methods := {"reachable": "reachable", "field": "distance_field", "next_steps": "next_steps"}
	var not_arguments := []
	for op: String in methods:
		for name: String in QUERY_PARAMETERS[op]:
			if name not in arguments.get(methods[op], []):
				not_arguments.append([methods[op], name])
	check(
		not_arguments.is_empty() and QUERY_PARAMETERS.check_block.is_empty(),
		"the queries' parameters the server counts as options are their methods' arguments",
		not_arguments
	)
	var defaults := {}
	for method: Dictionary in client.get_script().get_script_method_list():
		if method.name in ["find_path", "find_paths"]:
			defaults[method.name] = method.default_args
	var size_default: Variant = server.get("unit_size", {}).get("wire_default")
	var as_server := defaults.size() == 2
	for args: Array in defaults.values():
		var size_on_wire: Variant = PathServerClient.wire_unit_size(args[0])
		as_server = as_server and same_value(size_on_wire, size_default)
	check(
		as_server,
		"find_path's and find_paths' unit_size default is the server's (%s)" % size_default,
		defaults
	)


# -- the README -------------------------------------------------------------------------------


## The README's examples, run. Each ```gdscript block followed by a ```text block is compiled
## as the script of a Node2D at (2.5, 2.5) (the agent example's unit) with a
## PathServerAgent2D child, its print() calls collected, [code]PathServer[/code] standing for a
## fresh client of an embedded server that serves the repository's maps/ as
## `python -m pathserver serve` does; its output must be the text block, line for line.
## Fence flags: `gdscript no-server` runs against a port where nothing listens (shown as the
## default tcp://127.0.0.1:5555), `text any-order` compares the lines in any order.
func test_readme_examples() -> void:
	var readme_path := ProjectSettings.globalize_path("res://").path_join("../README.md")
	var readme := FileAccess.get_file_as_string(readme_path.simplify_path())
	if not configure_embedded_server():
		return
	var repository_maps := (
		ProjectSettings.globalize_path("res://").path_join("../../../maps").simplify_path()
	)
	ProjectSettings.set_setting(PathServerClient.SETTING_EMBEDDED_MAPS_DIR, repository_maps)
	var served := PathServerClient.new()
	served.embedded_server = true
	root.add_child(served)
	ProjectSettings.set_setting(
		PathServerClient.SETTING_EMBEDDED_MAPS_DIR, OS.get_environment("PATHSERVER_MAPS")
	)
	if not await served.wait_connected():
		check(
			false,
			"an embedded server serves the repository's maps",
			served.get_embedded_server_log()
		)
		served.queue_free()
		return
	var ready_lines := Array(served.get_embedded_server_log()).filter(
		func(line: String) -> bool: return line.begins_with("pathserver ready on ")
	)
	var shown_ready := RegEx.create_from_string("(?m)^\\s*(pathserver ready on .*)$").search(readme)
	check_equal(
		served.endpoint.get_slice(":", 2).to_int() > 0 and ready_lines.size() == 1,
		true,
		"README: the embedded server printed one ready line"
	)
	if shown_ready and ready_lines.size() == 1:
		check_equal(
			ready_lines[0].replace(served.endpoint, "tcp://127.0.0.1:5555"),
			shown_ready.get_string(1),
			"README: `python -m pathserver serve` prints its ready line"
		)
	var dead_endpoint := "tcp://127.0.0.1:%d" % free_port()
	var nobody := PathServerClient.new()
	nobody.endpoint = dead_endpoint
	root.add_child(nobody)
	var fences := RegEx.create_from_string("(?s)```(\\w*)([^\\n]*)\\n(.*?)```")
	var blocks := fences.search_all(readme)
	var examples := 0
	for i in blocks.size() - 1:
		var code := blocks[i]
		var shown := blocks[i + 1]
		if code.get_string(1) != "gdscript" or shown.get_string(1) != "text":
			continue
		examples += 1
		var expected := shown.get_string(3).strip_edges(false, true).split("\n")
		var no_server := code.get_string(2).split(" ", false).has("no-server")
		var output := await run_readme_example(
			code.get_string(3), nobody if no_server else served, expected.size()
		)
		for line_index in output.size():
			output[line_index] = output[line_index].replace(dead_endpoint, "tcp://127.0.0.1:5555")
		var first_line := code.get_string(3).strip_edges().get_slice("\n", 0)
		if shown.get_string(2).split(" ", false).has("any-order"):
			output.sort()
			expected.sort()
		check_equal(
			"\n".join(output), "\n".join(expected), "README example `%s`" % first_line.left(60)
		)
	check(examples >= 8, "README: %d examples with their output run" % examples)
	nobody.queue_free()
	served.queue_free()
	await process_frame


## Runs one README example (see [method test_readme_examples]) and returns what it printed,
## once it printed [param lines] lines or after 20 s.
func run_readme_example(
	code: String, with_client: PathServerClient, lines: int
) -> PackedStringArray:
	code = code.replace("PathServer.", "_client.").replace("print(", "_out(")
	if not (code.begins_with("func ") or code.begins_with("@") or code.contains("\nfunc ")):
		code = "func _ready() -> void:\n\t" + code.strip_edges().replace("\n", "\n\t")
	var script := GDScript.new()
	script.source_code = (
		"extends Node2D\n\nvar _client: PathServerClient\nvar _printed := PackedStringArray()\n\n\n"
		+ "func _out(...parts: Array) -> void:\n"
		+ '\t_printed.append("".join(parts.map(func(part: Variant) -> String: return str(part))))'
		+ "\n\n\n"
		+ code
	)
	if script.reload() != OK:
		return PackedStringArray(["(the example does not compile)"])
	var node := Node2D.new()
	node.set_script(script)
	node.set("_client", with_client)
	node.position = Vector2(2.5, 2.5)
	var agent := PathServerAgent2D.new()
	agent.name = "PathServerAgent2D"
	agent.client = with_client
	node.add_child(agent)
	root.add_child(node)
	await wait_until(func() -> bool: return node.get("_printed").size() >= lines, 20.0)
	var printed: PackedStringArray = node.get("_printed")
	node.queue_free()
	await process_frame
	return printed


# -- queries beyond one path ------------------------------------------------------------------


## Each query on the arena (20 x 12 cells of 16 units, a wall down column 10 with a gap at
## rows 5-6), in world space as a game calls them.
func test_queries() -> void:
	var goals := PackedVector2Array([center(Vector2i(18, 2)), center(Vector2i(3, 8))])
	var nearest := await client.find_path_to_any_async(center(Vector2i(2, 2)), goals)
	check_equal(
		[nearest.status, nearest.info.get("goal_index"), nearest.waypoints[-1]],
		["found", 1, center(Vector2i(3, 8))],
		"find_path_to_any: the nearer goal wins, goal_index says which"
	)
	var area := await client.reachable_async(center(Vector2i(2, 2)), 3.0)
	var cells: Array = area.info.get("cells", [])
	var costs: PackedFloat32Array = area.info.get("costs", PackedFloat32Array())
	var ascending := true
	for i in range(1, costs.size()):
		ascending = ascending and costs[i] >= costs[i - 1]
	check(
		(
			area.ok
			and cells[0] == Vector2i(2, 2)
			and costs[0] == 0.0
			and ascending
			and costs[-1] <= 3.0
			and cells.has(Vector2i(5, 2)) == false
			and cells.has(Vector2i(2, 5))
			and not cells.has(Vector2i(2, 6))
			and cells.size() == costs.size()
		),
		"reachable: grid cells within the budget, cheapest first (the block at (4, 2) in the way)",
		area
	)
	var field := await client.distance_field_async(
		PackedVector2Array([center(Vector2i(15, 5))]), Vector2i.ONE, {"region": Rect2i(9, 4, 2, 4)}
	)
	var cost: PackedFloat32Array = field.info.get("cost", PackedFloat32Array())
	check(
		(
			field.ok
			and [field.info.width, field.info.height, field.info.origin] == [2, 4, Vector2i(9, 4)]
			and cost.size() == 8
			and is_inf(cost[1])
			and is_equal_approx(cost[3], 5.0)
			and is_equal_approx(cost[5], 4.0 + sqrt(2.0))
			and is_inf(cost[7])
		),
		"distance_field: a region's costs row-major, +inf on the wall, exact through the gap",
		[field, Array(cost)]
	)
	var positions := PackedVector2Array(
		[center(Vector2i(2, 5)) + Vector2(3, -2), center(Vector2i(15, 5)), center(Vector2i(12, 3))]
	)
	var target := PackedVector2Array([center(Vector2i(15, 5))])
	var steps := await client.next_steps_async(target, positions)
	var remaining: PackedFloat32Array = steps.info.get("remaining", PackedFloat32Array())
	check(
		(
			steps.ok
			and (
				steps.info.steps
				== PackedVector2Array(
					[center(Vector2i(3, 5)), center(Vector2i(15, 5)), center(Vector2i(13, 4))]
				)
			)
			and Array(remaining).slice(0, 2) == [13.0, 0.0]
		),
		"next_steps: each unit's next cell (world centres), on the goal its own, the cost left",
		[steps, steps.info.get("steps"), Array(remaining)]
	)
	var far := await client.next_steps_async(target, positions, Vector2i.ONE, {"lookahead": "los"})
	check(
		far.ok and far.info.steps[0] == center(Vector2i(15, 5)),
		"next_steps: lookahead los heads straight for the goal it sees",
		far.info.get("steps")
	)
	var big := await client.next_steps_async(target, positions, Vector2i(3, 3))
	check(
		big.ok and is_inf(big.info.remaining[0]),
		"next_steps: a 3x3 unit cannot pass the two-cell gap (remaining +inf)",
		big.info.get("remaining")
	)
	var ends := PackedVector2Array([center(Vector2i(2, 2)), center(Vector2i(15, 2))])
	var gap := [center(Vector2i(10, 5)), center(Vector2i(10, 6))]
	var cut := await client.check_block_async(gap, [], ends)
	var cut_rect := await client.check_block_async([], [Rect2(160, 80, 16, 32)], ends)
	var elsewhere := await client.check_block_async([center(Vector2i(5, 8))], [], ends)
	check_equal(
		[
			cut.info.get("disconnected"),
			cut_rect.info.get("disconnected"),
			elsewhere.info.get("disconnected")
		],
		[[[0, 1]], [[0, 1]], []],
		"check_block: closing the gap (cells or a rect) cuts the halves apart, a cell elsewhere not"
	)
	var shut := {"avoid": {"cells": [Vector2i(10, 5), Vector2i(10, 6)]}}
	var around := await client.find_path_async(center(Vector2i(2, 5)), center(Vector2i(15, 5)))
	var avoided := await client.find_path_async(
		center(Vector2i(2, 5)), center(Vector2i(15, 5)), Vector2i.ONE, shut
	)
	shut["avoid_cost"] = 50.0
	var priced := await client.find_path_async(
		center(Vector2i(2, 5)), center(Vector2i(15, 5)), Vector2i.ONE, shut
	)
	check_equal(
		[around.status, avoided.status, priced.status, priced.info.get("cost", 0.0) > 50.0],
		["found", "no_path", "found", true],
		"avoid blocks cells for one request (the map untouched), avoid_cost prices them"
	)
	# The same cells as int32 pairs (the bin): the same answers, in a batch's entry too.
	var west := center(Vector2i(2, 5))
	var east := center(Vector2i(15, 5))
	var pairs := {"avoid": {"cells": PackedInt32Array([10, 5, 10, 6])}}
	var avoided_pairs := await client.find_path_async(west, east, Vector2i.ONE, pairs)
	pairs["avoid_cost"] = 50.0
	var priced_pairs := await client.find_path_async(west, east, Vector2i.ONE, pairs)
	var by_gap := center(Vector2i(9, 5))
	var range_cells := await client.reachable_async(by_gap, 4.0, Vector2i.ONE, shut)
	var range_pairs := await client.reachable_async(by_gap, 4.0, Vector2i.ONE, pairs)
	var batch := await client.find_paths_async(
		[{"start": west, "goal": east, "avoid": pairs.avoid}, [west, east]]
	)
	check_equal(
		[
			avoided_pairs.status,
			priced_pairs.status,
			priced_pairs.info.get("cost"),
			priced_pairs.waypoints,
			range_pairs.info.get("cells"),
			batch.map(func(result: PathServerResult) -> String: return result.status),
		],
		[
			avoided.status,
			priced.status,
			priced.info.get("cost"),
			priced.waypoints,
			range_cells.info.get("cells"),
			["no_path", "found"],
		],
		"avoid's cells as int32 pairs get the answers of the same cells as Vector2i"
	)
	var odd := await client.find_path_async(
		west, east, Vector2i.ONE, {"avoid": {"cells": PackedInt32Array([10, 5, 10])}}
	)
	var mixed := await client.find_path_async(
		west, east, Vector2i.ONE, {"avoid": {"cells": [Vector2i(10, 5), "10, 6"]}}
	)
	var floats := await client.find_path_async(
		west, east, Vector2i.ONE, {"avoid": {"cells": [Vector2i(10, 5), Vector2(10.5, 6.5)]}}
	)
	var not_a_map := await client.reachable_async(
		by_gap, 4.0, Vector2i.ONE, {"avoid": [Vector2i(10, 5)]}
	)
	check_equal(
		[
			[odd.ok, odd.code, odd.info.get("at")],
			[mixed.ok, mixed.code, mixed.info.get("at")],
			[not_a_map.ok, not_a_map.code, not_a_map.info.get("at")],
			floats.status,
		],
		[
			[false, "invalid_request", "avoid.cells[0]"],
			[false, "invalid_request", "avoid.cells[1]"],
			[false, "invalid_request", "avoid"],
			"no_path",
		],
		"avoid not as whole cells goes as given: odd pairs, a string, a non-map refused; floats read"
	)
	var off_map := await client.reachable_async(Vector2(-100, 0), 3.0)
	var bad_lookahead := await client.next_steps_async(
		target, positions, Vector2i.ONE, {"lookahead": "far"}
	)
	check_equal(
		[off_map.code, off_map.info.get("at"), bad_lookahead.code, bad_lookahead.info.get("at")],
		["out_of_bounds", "start", "invalid_request", "lookahead"],
		"query errors come back as results with the field they are about"
	)


## A map with a tag layer, its tags' names and a unit class, uploaded with put_grid; requests'
## traversal blocks or prices the tagged cells.
func test_traversal() -> void:
	# 5 x 3, every cell walkable; column 2 is water (tag 1).
	var cells := PackedByteArray()
	cells.resize(15)
	cells.fill(1)
	var tags := PackedByteArray([0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0])
	var upload := await client.put_grid_async(
		"godot_tagged",
		Vector2i(5, 3),
		cells,
		{"tags": tags, "tag_names": {"water": 1}, "classes": {"tank": {"water": null}}}
	)
	check(upload.ok, "put_grid: tags, tag_names and classes accepted", upload)
	var grid := {"space": "grid", "map": "godot_tagged", "smooth": "none"}
	var answers := []
	for traversal: Variant in [null, "tank", {"water": null}, {"water": 3.0}]:
		var options := grid.duplicate()
		if traversal != null:
			options["traversal"] = traversal
		var result := await client.find_path_async(
			Vector2(0, 1), Vector2(4, 1), Vector2i.ONE, options
		)
		answers.append([result.status, snappedf(result.info.get("cost", -1.0), 0.001)])
	check_equal(
		answers,
		[["found", 4.0], ["no_path", 0.0], ["no_path", 0.0], ["found", 6.0]],
		"traversal: a class of the map or rules block (null) or multiply the tagged cells' cost"
	)
	var back := await client.get_map_async("godot_tagged")
	check_equal(
		[back.info.get("tags"), back.reply.get("tag_names"), back.reply.get("classes")],
		[tags, {"water": 1}, {"tank": {"water": null}}],
		"get_map gives the tags, their names and the classes back"
	)
	await client.drop_map_async("godot_tagged")


## A TileSet's custom data layer "tag" (String) becomes the uploaded map's tags and tag names.
func test_tile_map_tags() -> void:
	var layer := make_layer(TILE_ROWS)
	var tile_set := layer.tile_set
	tile_set.add_custom_data_layer()
	var tag_id := tile_set.get_custom_data_layers_count() - 1
	tile_set.set_custom_data_layer_name(tag_id, "tag")
	tile_set.set_custom_data_layer_type(tag_id, TYPE_STRING)
	var source := tile_set.get_source(0) as TileSetAtlasSource
	source.get_tile_data(TILES["~"], 0).set_custom_data("tag", "mud")
	source.get_tile_data(TILES[":"], 0).set_custom_data("tag", "sand")
	var grid := PathServerTileMapReader.read(layer)
	var width: int = grid.size.x
	check_equal(
		[grid.tag_names, grid.tags[2 * width + 6], grid.tags[4 * width + 7], grid.tags[width + 1]],
		[{"mud": 1, "sand": 2}, 1, 2, 0],
		"TileMapReader: a String custom data layer 'tag' gives each cell its tag, names numbered"
	)
	var upload := await client.put_tilemap_async(
		"godot_tagged_tiles", layer, {"classes": {"dry": {"mud": null, "sand": null}}}
	)
	var grid_options := {"space": "grid", "map": "godot_tagged_tiles"}
	var wet := await client.find_path_async(
		Vector2(1, 3), Vector2(7, 3), Vector2i.ONE, grid_options
	)
	grid_options["traversal"] = "dry"
	var dry := await client.find_path_async(
		Vector2(1, 3), Vector2(7, 3), Vector2i.ONE, grid_options
	)
	check_equal(
		[upload.ok, wet.status, wet.info.get("goal_snapped"), dry.info.get("goal_snapped")],
		[true, "found", false, true],
		"put_tilemap uploads the tags: the class 'dry' may not stand in the mud (the goal snaps)"
	)
	await client.drop_map_async("godot_tagged_tiles")
	layer.queue_free()


## A PathServerFlowGroup2D steers 50 units of two sizes (some of them CharacterBody2D) across
## the arena's gap with one
## next_steps request per size at a time, until every unit stands on the target area.
func test_flow_group() -> void:
	var group := PathServerFlowGroup2D.new()
	group.client = client
	group.speed = 20.0 * CELL
	group.spacing = 0.0
	root.add_child(group)
	# Columns 0-3 and 6-9 of rows 1, 3, ... 9: clear of the block at (4, 2)-(5, 3).
	for i in 40:
		# Every eighth a CharacterBody2D (moved by move_and_slide), as in a top-down game.
		var unit: Node2D = Node2D.new()
		if i % 8 == 0:
			var body := CharacterBody2D.new()
			body.motion_mode = CharacterBody2D.MOTION_MODE_FLOATING
			unit = body
		unit.position = center(Vector2i(i % 8 + (2 if i % 8 >= 4 else 0), 1 + i / 8 * 2))
		group.add_child(unit)
	var big_units: Array[Node2D] = []
	for i in 10:
		var unit := Node2D.new()
		unit.position = center(Vector2i(2 + i % 5, 8 + i / 5 * 2))
		root.add_child(unit)
		group.add_unit(unit, Vector2i(2, 2))
		big_units.append(unit)
	var area := PackedVector2Array()
	for y in range(3, 10):
		for x in range(14, 19):
			area.append(center(Vector2i(x, y)))
	group.goals = area
	var most_pending := 0
	var frames := 0
	while frames < 600 and group.get_arrived_count() < 50:
		await physics_frame
		frames += 1
		most_pending = maxi(most_pending, client.get_pending_count())
	var right_side := group.get_children().all(
		func(unit: Node2D) -> bool: return unit.position.x > 13 * CELL
	)
	check(
		group.get_unit_count() == 50 and group.get_arrived_count() == 50 and right_side,
		(
			"flow group: 50 units of two sizes reach the target area through the gap (%d frames)"
			% frames
		),
		[group.get_arrived_count(), frames]
	)
	check(
		most_pending <= 2 and group.replies >= frames / 4,
		(
			"flow group: one next_steps request per size in flight at a time (%d replies)"
			% group.replies
		),
		most_pending
	)
	# Back to the left half with spacing: pushed apart, never into a wall (the map's cells,
	# read with get_map), and the crowd gathers on the goal area.
	group.spacing = 0.9 * CELL
	group.target = center(Vector2i(3, 6))
	var left_area := PackedVector2Array()
	for y in range(3, 10):
		for x in range(1, 7):
			left_area.append(center(Vector2i(x, y)))
	group.goals = left_area
	frames = 0
	var in_wall := 0
	while frames < 900 and group.get_arrived_count() < 50:
		await physics_frame
		frames += 1
		for unit: Node2D in group.get_children() as Array[Node2D]:
			var cell := Vector2i((unit.position / CELL).floor())
			if (cell.x == 10 and (cell.y < 5 or cell.y > 6)) or Rect2i(4, 2, 2, 2).has_point(cell):
				in_wall += 1
	check(
		group.get_arrived_count() == 50 and in_wall == 0,
		(
			"flow group: with spacing, back through the gap, no unit ever in a wall (%d frames)"
			% frames
		),
		[group.get_arrived_count(), in_wall]
	)
	big_units[0].queue_free()
	await physics_frame
	await physics_frame
	check_equal(group.get_unit_count(), 49, "flow group: a freed unit leaves the group")
	group.queue_free()
	for unit in big_units.slice(1):
		unit.queue_free()
	await process_frame


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
	builder._next_id = 7
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
	moat._next_id = 9
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
