extends "res://suite_part.gd"
## Embedded servers (a slow start, a failure, free and fixed ports, a restart with a
## request in flight), the server bundle's platforms and launch, the export plugin's plan
## and copy. run_tests.sh also exports the demo for real and runs the game.

const ExportPlugin := preload("res://addons/pathserver/export_plugin.gd")

# -- embedded servers -------------------------------------------------------------------------


## A client with an embedded server, added to the tree (which starts the server).
func embedded_client(client_timeout_ms := 60000) -> PathServerClient:
	var embedded := PathServerClient.new()
	embedded.embedded_server = true
	embedded.map_name = MAP
	embedded.timeout_ms = client_timeout_ms
	root.add_child(embedded)
	return embedded


## A server that takes longer to start than a request's timeout (numba compiling on a fresh
## machine): a wrapper prints a progress line on stderr and sleeps before it runs the real
## server. A request made at once waits for the ready line, then is sent; its timeout only
## starts then.
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


# -- the server bundle: where it is found, what the export plugin does with it ----------------


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
