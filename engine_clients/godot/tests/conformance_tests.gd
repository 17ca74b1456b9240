extends "res://suite_part.gd"
## The shared scenarios of engine_clients/conformance.json, the options against the
## server's own list, and the README's examples, run.

## The parameters of each query method the server defines as options (besides unit_size).
const QUERY_PARAMETERS := {
	"reachable": ["budget"],
	"field": ["goals"],
	"next_steps": ["goals"],
	"check_block": [],
}

# -- conformance ------------------------------------------------------------------------------


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
				scenario_place(request.start),
				scenario_place(request.goal) if request.has("goal") else Vector2.ZERO,
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
			for key: String in ["floors", "links"]:
				if fields.has(key):
					put_options[key] = fields[key]
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
				"start_floor": result.info.get("start_floor", 0),
				"goal_floor": result.info.get("goal_floor", 0),
				"waypoints": result.waypoints.size(),
				"start_snapped": result.info.start_snapped,
				"goal_snapped": result.info.goal_snapped,
				"links": result.links,
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


## A scenario's [x, y], or [x, y, floor] as a [Vector3i].
func scenario_place(point: Array) -> Variant:
	if point.size() == 3:
		return Vector3i(int(point[0]), int(point[1]), int(point[2]))
	return scenario_point(point)


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


# -- options ----------------------------------------------------------------------------------


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
