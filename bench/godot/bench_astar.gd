extends "res://bench_script.gd"
## "Why not just use AStarGrid2D?": the same Moving AI problems answered by Godot's own
## AStarGrid2D and by the pathserver addon, side by side in one headless run.
##
##   godot --headless --path bench/godot -s res://bench_astar.gd -- PROBLEMS ENDPOINT MAP [ROUNDS]
##
## bench/godot_astar.py writes PROBLEMS, starts the server and runs this; see bench/README.md.
## PROBLEMS: a first line "map PATH" (a Moving AI .map), then one problem a line,
## "sx sy gx gy optimal tolerance". ENDPOINT: a pathserver serving that map as MAP.
##
## Engines, taking turns round by round (the order rotates); each figure is the lowest
## round's, or for engines timed path by path the mean of each problem's fastest time, so a
## slow spell on a shared machine is dropped:
##   AStarGrid2D           region, DIAGONAL_MODE_ONLY_IF_NO_OBSTACLES, octile heuristics,
##                         update(), set_point_solid() on each blocked cell (the set-up,
##                         timed apart), then get_id_path() per problem
##   AStarGrid2D jumping   the same with jumping_enabled
##   addon, sync           var cells := PathServer.find_id_path_sync(start, goal, ...) per
##                         problem: the answer on the next line, as get_id_path gives it
##   addon, one batch      PathServer.find_paths(all the problems), packed both ways, the
##                         answer taken from paths_completed
##   addon, batch, los     the batch with the addon's default smoothing, "los" (string-pulled
##                         waypoints, a few a path): checked by the reply's cost
##   addon, all in flight  every problem sent at once with find_path(), the answers counted
##                         from path_found
##   addon, await each     await PathServer.find_path_async(start, goal, ...) per problem
## The addon asks with {"space": "grid", "smooth": "none"}: every cell, as get_id_path gives.
## Headless Godot has nothing to draw, so it sleeps between frames
## (low_processor_usage_mode_sleep_usec, 6.9 ms by default): here IDLE_SLEEP_USEC, so an answer
## is picked up within a fraction of a millisecond of its arrival.
## main-thread us: the time the game's own thread spends on the paths: AStarGrid2D's whole
## query; the addon's request calls (encoding, sending) plus its client's time in poll() and
## in synchronous calls (PathServerClient.get_main_thread_usec()): reading, decoding, handing
## out.
## Prints the table, a line "rows-json: [...]" for bench/godot_astar.py, then "bench done" (or
## "bench FAILED: ...") last, and quits.

const MovingAIMap := preload("res://movingai_map.gd")
## The engine's idle sleep between frames: short, yet the CPU is the server's meanwhile (a
## headless engine never sleeping would take a core from it, as rendering would not).
const IDLE_SLEEP_USEC := 250
const SQRT2 := 1.4142135623730951
## A float32 cost (the packed batch's) holds about 7 digits.
const FLOAT32_RELATIVE := 2e-7
const ENGINES := [
	"AStarGrid2D",
	"AStarGrid2D jumping",
	"addon, sync",
	"addon, one batch",
	"addon, batch, los",
	"addon, all in flight",
	"addon, await each",
]
## Engines timed path by path: their figure is the mean of each problem's fastest time.
const TIMED_EACH := ["AStarGrid2D", "AStarGrid2D jumping", "addon, sync"]

## Printed under the table; BLOCKED becomes the number of blocked cells.
const NOTES := [
	"us / path: AStarGrid2D and the sync call, the mean of each problem's fastest call over the",
	"rounds; the other addon rows, the lowest round's time from the first request to the last",
	"answer in hand / problems. x AStarGrid2D: times faster than AStarGrid2D without jumping.",
	"main-thread us / path: what the game's own thread spends (see the top of bench_astar.gd).",
	"set-up (ms): AStarGrid2D's region, update() and set_point_solid() on the BLOCKED blocked",
	"cells; the addon's (one figure for its rows): put_grid_async of the same cells until the",
	"reply + the first path on that map (the server builds the unit layer then). frames: process",
	"frames the round spanned. optimal: the octile length of the returned cells (1 and sqrt(2),",
	"no corner cut) equals the scenario's; for the string-pulled rows, the reply's cost does.",
]

var width := 0
var height := 0
## 1 walkable, 0 blocked; index y * width + x.
var walkable := PackedByteArray()
var blocked: Array[Vector2i] = []
var starts: Array[Vector2i] = []
var goals: Array[Vector2i] = []
## [start, goal] pairs of Vector2, as a game holds them before asking.
var pairs := []
var optimal := PackedFloat64Array()
var tolerance := PackedFloat64Array()
var map_file := ""
var client: PathServerClient
var options := {"space": "grid", "smooth": "none"}


func _init() -> void:
	watchdog_seconds = 900.0


func _bench() -> void:
	starts = problems.starts
	goals = problems.goals
	optimal = problems.optimal
	tolerance = problems.tolerance
	map_file = problems.map_file
	var map_error := load_map(map_file)
	if map_error != "":
		_finish(map_error)
		return
	for i in starts.size():
		pairs.append([Vector2(starts[i]), Vector2(goals[i])])
	options["map"] = map_name
	OS.low_processor_usage_mode_sleep_usec = IDLE_SLEEP_USEC
	client = root.get_node("PathServer") as PathServerClient
	client.connect_to_server(endpoint)
	if not await client.wait_connected(10000):
		_finish("no pathserver at %s" % endpoint)
		return
	# Untimed: the server builds the map's unit layer on its first path, as on any first use.
	var first := await client.find_path_async(
		Vector2(starts[0]), Vector2(goals[0]), Vector2i.ONE, options
	)
	if not first.ok:
		_finish("the addon's first path failed: %s" % first)
		return

	var stats := {}
	for engine: String in ENGINES:
		stats[engine] = {
			"per_query_us": [], "main_us": [], "setup_us": [], "frames": [], "decode": []
		}
	for r in rounds:
		for k in ENGINES.size():
			var engine: String = ENGINES[(r + k) % ENGINES.size()]
			# Each engine from the top of a frame: an await the last one resumed runs inside
			# the client's poll, whose time would hold this engine's too.
			await process_frame
			var outcome: Dictionary = await run_engine(engine)
			if outcome.has("error"):
				_finish("%s: %s" % [engine, outcome.error])
				return
			for key: String in ["per_query_us", "main_us", "setup_us", "frames", "decode"]:
				if outcome.has(key):
					stats[engine][key].append(outcome[key])
			stats[engine].answers = outcome.answers
			stats[engine].costs = outcome.get("costs", PackedFloat64Array())
			if outcome.has("times_us"):
				var fastest: PackedInt64Array = stats[engine].get("fastest_us", outcome.times_us)
				for i in fastest.size():
					fastest[i] = mini(fastest[i], outcome.times_us[i])
				stats[engine]["fastest_us"] = fastest
	var upload_us := await time_upload()
	print_table(stats, rounds, upload_us)
	_finish("")


## One engine answers every problem once: its mean time per problem, its main thread's, its
## set-up, and its answers (per problem, an Array of cells, empty for no path).
func run_engine(engine: String) -> Dictionary:
	var outcome := {}
	match engine:
		"AStarGrid2D":
			outcome = run_astar_grid(false)
		"AStarGrid2D jumping":
			outcome = run_astar_grid(true)
		"addon, sync":
			outcome = run_addon_sync()
		"addon, one batch":
			outcome = await run_addon_batch(options)
		"addon, batch, los":
			var smoothed := options.duplicate()
			smoothed.erase("smooth")
			outcome = await run_addon_batch(smoothed)
		"addon, all in flight":
			outcome = await run_addon_in_flight()
		_:
			outcome = await run_addon_each()
	return outcome


func run_astar_grid(jumping: bool) -> Dictionary:
	var t0 := Time.get_ticks_usec()
	var grid := AStarGrid2D.new()
	grid.region = Rect2i(0, 0, width, height)
	grid.diagonal_mode = AStarGrid2D.DIAGONAL_MODE_ONLY_IF_NO_OBSTACLES
	grid.default_compute_heuristic = AStarGrid2D.HEURISTIC_OCTILE
	grid.default_estimate_heuristic = AStarGrid2D.HEURISTIC_OCTILE
	grid.jumping_enabled = jumping
	grid.update()
	for cell in blocked:
		grid.set_point_solid(cell)
	var setup_us := Time.get_ticks_usec() - t0
	var outcome := time_each(grid.get_id_path)
	outcome["setup_us"] = setup_us
	return outcome


## One synchronous call per problem.
func run_addon_sync() -> Dictionary:
	var failures := []
	var frames := Engine.get_process_frames()
	var outcome := time_each(
		func(start: Vector2i, goal: Vector2i) -> Array[Vector2i]:
			var cells := client.find_id_path_sync(start, goal, Vector2i.ONE, options)
			if cells.is_empty() and not client.get_last_sync_result().ok:
				failures.append(client.get_last_sync_result())
			return cells
	)
	if not failures.is_empty():
		return {"error": "a path failed: %s" % failures[0]}
	outcome["frames"] = Engine.get_process_frames() - frames
	return outcome


## Every problem answered by [param answer] (start, goal -> cells), timed one by one: the
## whole call is the main thread's.
func time_each(answer: Callable) -> Dictionary:
	var paths := []
	var times := PackedInt64Array()
	for i in starts.size():
		var t0 := Time.get_ticks_usec()
		paths.append(answer.call(starts[i], goals[i]))
		times.append(Time.get_ticks_usec() - t0)
	var elapsed := 0
	for t in times:
		elapsed += t
	return {
		"per_query_us": float(elapsed) / starts.size(),
		"main_us": float(elapsed) / starts.size(),
		"times_us": times,
		"answers": paths,
	}


func run_addon_batch(batch_options: Dictionary) -> Dictionary:
	var answer := []
	var on_completed := func(id: int, results: Array) -> void:
		answer.append_array([id, results, Time.get_ticks_usec()])
	var on_failed := func(id: int, code: String, message: String) -> void:
		answer.append_array([id, "%s: %s" % [code, message], Time.get_ticks_usec()])
	client.paths_completed.connect(on_completed)
	client.path_failed.connect(on_failed)
	var frames := Engine.get_process_frames()
	var polled := client.get_main_thread_usec()
	var t0 := Time.get_ticks_usec()
	var id := client.find_paths(pairs, Vector2i.ONE, batch_options)
	var request_us := Time.get_ticks_usec() - t0
	while answer.is_empty():
		await process_frame
	client.paths_completed.disconnect(on_completed)
	client.path_failed.disconnect(on_failed)
	if answer[0] != id or not answer[1] is Array:
		return {"error": "the batch failed: %s" % [answer[1]]}
	var main_us := request_us + client.get_main_thread_usec() - polled
	var outcome := addon_outcome(answer[1], answer[2] - t0, main_us, frames)
	outcome["decode"] = time_decode(answer[1])
	return outcome


## What the addon takes to decode this batch's reply: the reply encoded again (the same
## values, so the same bytes as the server's), then decoded as the client does.
## [bytes, msgpack us, columns us].
func time_decode(results: Array) -> Array:
	var reply: Dictionary = results[0].reply
	var body := PathServerMsgPack.encode(reply)
	var t0 := Time.get_ticks_usec()
	var decoded := PathServerMsgPack.decode(body)
	var decode_us := Time.get_ticks_usec() - t0
	t0 = Time.get_ticks_usec()
	PathServerPacked.columns(decoded[0], results.size(), true)
	return [body.size(), decode_us, Time.get_ticks_usec() - t0]


func run_addon_in_flight() -> Dictionary:
	var by_id := {}
	var on_found := func(id: int, waypoints: PackedVector2Array, info: Dictionary) -> void:
		var result := PathServerResult.new()
		result.ok = true
		result.status = info.get("status", "")
		result.waypoints = waypoints
		result.info = info
		by_id[id] = result
	var on_failed := func(id: int, code: String, message: String) -> void:
		var result := PathServerResult.new()
		result.code = code
		result.message = message
		by_id[id] = result
	client.path_found.connect(on_found)
	client.path_failed.connect(on_failed)
	var frames := Engine.get_process_frames()
	var polled := client.get_main_thread_usec()
	var t0 := Time.get_ticks_usec()
	var ids := []
	for pair: Array in pairs:
		ids.append(client.find_path(pair[0], pair[1], Vector2i.ONE, options))
	var request_us := Time.get_ticks_usec() - t0
	while by_id.size() < ids.size():
		await process_frame
	var elapsed := Time.get_ticks_usec() - t0
	client.path_found.disconnect(on_found)
	client.path_failed.disconnect(on_failed)
	var results := []
	for id: int in ids:
		results.append(by_id[id])
	var main_us := request_us + client.get_main_thread_usec() - polled
	return addon_outcome(results, elapsed, main_us, frames)


## One await after the other: each resumes inside the client's poll, so the client's time
## holds the next request's too.
func run_addon_each() -> Dictionary:
	var results := []
	var frames := Engine.get_process_frames()
	var polled := client.get_main_thread_usec()
	var t0 := Time.get_ticks_usec()
	for pair: Array in pairs:
		results.append(await client.find_path_async(pair[0], pair[1], Vector2i.ONE, options))
	var elapsed := Time.get_ticks_usec() - t0
	return addon_outcome(results, elapsed, client.get_main_thread_usec() - polled, frames)


func addon_outcome(results: Array, elapsed_us: int, main_us: int, frames: int) -> Dictionary:
	var paths := []
	var costs := PackedFloat64Array()
	for result: PathServerResult in results:
		if not result.ok:
			return {"error": "a path failed: %s" % result}
		paths.append(result.get_cells())
		costs.append(result.info.get("cost", -1.0))
	return {
		"per_query_us": float(elapsed_us) / starts.size(),
		"main_us": float(main_us) / starts.size(),
		"frames": Engine.get_process_frames() - frames,
		"answers": paths,
		"costs": costs,
	}


## The addon's set-up for a map of its own: put_grid_async of the same cells until the reply
## (the server has built the map when it answers), then its first path (the unit layer).
func time_upload() -> Array:
	var cells := walkable.duplicate()
	var t0 := Time.get_ticks_usec()
	var put := await client.put_grid_async("bench_upload", Vector2i(width, height), cells)
	var put_us := Time.get_ticks_usec() - t0
	if not put.ok:
		return []
	t0 = Time.get_ticks_usec()
	var upload_options := options.duplicate()
	upload_options["map"] = "bench_upload"
	await client.find_path_async(
		Vector2(starts[0]), Vector2(goals[0]), Vector2i.ONE, upload_options
	)
	var first_us := Time.get_ticks_usec() - t0
	await client.drop_map_async("bench_upload")
	return [put_us, first_us]


## The octile length of a path of cells, or -1 when it is no valid path from
## [param start] to [param goal]: a step that is not to a neighbour along a straight or
## diagonal line, a blocked cell, or a diagonal step past a blocked cell (a cut corner, -2).
## Segments longer than one cell (a jump point list) are walked cell by cell.
func path_length(cells: Array, start: Vector2i, goal: Vector2i) -> float:
	if cells.is_empty() or cells[0] != start or cells[-1] != goal:
		return -1.0
	var length := 0.0
	for i in range(1, cells.size()):
		var from: Vector2i = cells[i - 1]
		var delta: Vector2i = cells[i] - from
		var steps := maxi(absi(delta.x), absi(delta.y))
		if steps == 0 or (delta.x != 0 and delta.y != 0 and absi(delta.x) != absi(delta.y)):
			return -1.0
		var step := delta / steps
		var at := from
		for s in steps:
			var next := at + step
			if not is_open(next):
				return -1.0
			if step.x != 0 and step.y != 0:
				if not (is_open(Vector2i(next.x, at.y)) and is_open(Vector2i(at.x, next.y))):
					return -2.0
				length += SQRT2
			else:
				length += 1.0
			at = next
	return length


func is_open(cell: Vector2i) -> bool:
	if cell.x < 0 or cell.y < 0 or cell.x >= width or cell.y >= height:
		return false
	return walkable[cell.y * width + cell.x] != 0


## How many answers are optimal, and what the others are. By cells (every step walked) or, for
## string-pulled paths, by the reply's cost.
func check_answers(answers: Array, costs: PackedFloat64Array, by_cost: bool) -> Dictionary:
	var tally := {"optimal": 0, "longer": 0, "no_path": 0, "invalid": 0, "cut_corners": 0}
	for i in answers.size():
		var cells: Array = answers[i]
		if cells.is_empty():
			tally.no_path += 1
			continue
		var length := costs[i] if by_cost else path_length(cells, starts[i], goals[i])
		var slack := tolerance[i] + (FLOAT32_RELATIVE * optimal[i] if by_cost else 0.0)
		if by_cost and (cells[0] != starts[i] or cells[-1] != goals[i]):
			tally.invalid += 1
		elif length == -2.0:
			tally.cut_corners += 1
		elif length < 0.0:
			tally.invalid += 1
		elif absf(length - optimal[i]) <= slack:
			tally.optimal += 1
		else:
			tally.longer += 1
	return tally


func print_table(stats: Dictionary, rounds: int, upload_us: Array) -> void:
	var n := starts.size()
	var reference := per_query_figure(stats["AStarGrid2D"])
	print(
		(
			"AStarGrid2D against the pathserver addon: %s (%d x %d), %d problems, %d rounds"
			% [map_file.get_file(), width, height, n, rounds]
		)
	)
	print("Godot %s; the addon asks %s" % [Engine.get_version_info().string, options])
	print("")
	var head := "%-22s %10s %10s %14s %10s  %s"
	print(head % ["engine", "us / path", "x AStar", "main-thread us", "set-up ms", "answers"])
	var rows := []
	for engine: String in ENGINES:
		var s: Dictionary = stats[engine]
		var per_query := per_query_figure(s)
		# Timed call by call, the whole call is the main thread's: the same figure.
		var main_us: float = per_query if engine in TIMED_EACH else s.main_us.min()
		var setup := "-"
		if not s.setup_us.is_empty():
			setup = "%.1f" % (s.setup_us.min() / 1000.0)
		elif engine == "addon, sync" and not upload_us.is_empty():
			setup = "%.1f + %.1f" % [upload_us[0] / 1000.0, upload_us[1] / 1000.0]
		var tally := check_answers(s.answers, s.costs, engine == "addon, batch, los")
		var answers := "%d/%d optimal" % [tally.optimal, n]
		for key: String in ["longer", "no_path", "invalid", "cut_corners"]:
			if tally[key] > 0:
				answers += ", %d %s" % [tally[key], key.replace("_", " ")]
		if not s.frames.is_empty():
			answers += ", %d frames" % s.frames.min()
		print(
			(
				"%-22s %10.1f %9.1fx %14.1f %10s  %s"
				% [engine, per_query, reference / per_query, main_us, setup, answers]
			)
		)
		(
			rows
			. append(
				{
					"engine": engine,
					"us_per_path": snappedf(per_query, 0.01),
					"main_thread_us_per_path": snappedf(main_us, 0.01),
					"optimal": tally.optimal,
					"problems": n,
				}
			)
		)
	for engine: String in ["addon, one batch", "addon, batch, los"]:
		var decode: Array = stats[engine].decode
		if decode.is_empty():
			continue
		decode.sort_custom(func(a: Array, b: Array) -> bool: return a[1] < b[1])
		print(
			(
				"%s: the reply %d bytes; the addon's msgpack decoding %.2f ms + columns %.2f ms"
				% [engine, decode[0][0], decode[0][1] / 1000.0, decode[0][2] / 1000.0]
			)
		)
	print("")
	for line in NOTES:
		print(line.replace("BLOCKED", str(blocked.size())))
	print("rows-json: " + JSON.stringify(rows))


## An engine's time per path: the mean of each problem's fastest time over the rounds where
## problems are timed one by one (AStarGrid2D: a preemption by other work then lands on one
## problem of one round, not on the figure), else the lowest round mean.
func per_query_figure(s: Dictionary) -> float:
	if s.has("fastest_us"):
		var total := 0
		for t: int in s.fastest_us:
			total += t
		return float(total) / s.fastest_us.size()
	return s.per_query_us.min()


## A Moving AI .map: '.', 'G' and 'S' walkable, everything else blocked (movingai_map.gd).
func load_map(path: String) -> String:
	var read := MovingAIMap.new(path)
	width = read.width
	height = read.height
	walkable = read.walkable
	blocked = read.blocked
	return read.error
