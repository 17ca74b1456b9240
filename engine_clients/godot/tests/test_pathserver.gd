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
## The tests themselves are in the scripts beside this one, one a topic (wire_tests.gd,
## client_tests.gd, ...: see suite_part.gd), run in the order of [method _run].
## Prints one line per check, then exactly "N passed, N failed", and exits non-zero on failure.

## The whole run must finish well inside run_tests.sh's timeout, closing line included.
const WATCHDOG_SECONDS := 150.0
const SuitePart := preload("res://suite_part.gd")
const WireTests := preload("res://wire_tests.gd")
const ClientTests := preload("res://client_tests.gd")
const PackedTests := preload("res://packed_tests.gd")
const MapTests := preload("res://map_tests.gd")
const DemoTests := preload("res://demo_tests.gd")
const EmbeddedTests := preload("res://embedded_tests.gd")
const ConformanceTests := preload("res://conformance_tests.gd")
const QueryTests := preload("res://query_tests.gd")
const HexTests := preload("res://hex_tests.gd")
const FloorsTests := preload("res://floors_tests.gd")

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
	var wire := WireTests.new(self)
	var requests := ClientTests.new(self)
	var maps := MapTests.new(self)
	var demo := DemoTests.new(self)
	var embedded := EmbeddedTests.new(self)
	var shared := ConformanceTests.new(self)
	var queries := QueryTests.new(self)
	var hexes := HexTests.new(self)
	wire.test_msgpack_encoding()
	wire.test_msgpack_decoding()
	wire.test_zmtp_bytes()
	wire.test_golden_vectors()
	wire.test_query_golden_vectors()
	wire.test_upload_encoding()
	wire.test_avoid_encoding()
	wire.test_path_request_encoding()
	wire.test_overloaded_retry()
	await wire.test_ping_pong_with_fake_router()
	client = root.get_node("PathServer") as PathServerClient
	client.map_name = SuitePart.MAP
	client.connect_to_server(endpoint)
	await requests.test_ping_and_maps()
	await requests.test_wait_connected()
	await requests.test_first_path_latency()
	await wire.test_golden_vectors_on_the_wire()
	await requests.test_pipelined_requests()
	await requests.test_batch()
	await PackedTests.new(self).run()
	await requests.test_error_codes()
	await requests.test_no_path_is_an_answer()
	await requests.test_cancel()
	await requests.test_timeout()
	await requests.test_follower()
	await requests.test_agent_small_target_moves()
	await requests.test_agent_signal_order()
	await requests.test_agent_retries_after_failure()
	maps.test_tile_map_reader()
	hexes.test_helpers()
	hexes.test_helpers_match_golden_values()
	hexes.test_helpers_match_the_engine()
	hexes.test_reader_converts_every_layout()
	hexes.test_reader_refusals()
	await hexes.test_debug_draw_hexes()
	await maps.test_put_tilemap()
	await maps.test_tile_map_sync()
	await maps.test_get_map_round_trip()
	await maps.test_upload_errors()
	await maps.test_put_tilemap_timing()
	await hexes.test_put_hex_tilemap()
	await hexes.test_paths_match_astar2d()
	await hexes.test_hex_tile_map_sync()
	demo.test_demo_formation()
	await demo.test_demo_map_fits_its_units()
	await demo.test_demo_routes_differ_by_size()
	await embedded.test_embedded_server_slow_start()
	await embedded.test_embedded_server_failure()
	await embedded.test_embedded_servers_ports()
	await embedded.test_embedded_server_and_reconnect()
	embedded.test_bundle_platforms()
	embedded.test_bundle_launch()
	embedded.test_export_plan()
	embedded.test_export_copy_folder()
	await embedded.test_embedded_server_without_bundle()
	await shared.test_conformance()
	await queries.test_queries()
	await queries.test_traversal()
	await maps.test_tile_map_tags()
	await queries.test_flow_group()
	await FloorsTests.new(self).run()
	shared.test_options_match_the_server()
	await shared.test_readme_examples()
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
