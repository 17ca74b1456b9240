class_name PathServerProcess
extends RefCounted
## The embedded server's child process, for [PathServerClient]: started from the project
## settings, its output read without blocking in [method poll], its ready line, its exit and
## its start timeout turned into [signal started] and [signal failed].

## The server printed its ready line: it listens on [param server_endpoint].
signal started(server_endpoint: String)
## The server could not start, or exited on its own: [param message] says how and ends with
## its last output lines.
signal failed(message: String)

## The one line the server prints on stdout once it listens, followed by its endpoint.
const READY_LINE_PREFIX := "pathserver ready on "
## How many of the server's last output lines a failure report quotes.
const LOG_LINES := 20
## How often to ask whether the process is still alive.
const CHECK_MS := 200

## The process id, or -1.
var pid := -1
## Starting, running, failed, or none (see [enum PathServerClient.ServerState]).
var state := PathServerClient.ServerState.NONE
## The server's last output lines (stdout and stderr, as they came).
var output := PackedStringArray()
## What [signal failed] said last.
var failure := ""

var _command := ""
var _hint := ""
var _started_ms := 0
var _check_ms := 0
var _pipes: Array[PathServerPipe] = []


## Starts [code]pathserver serve[/code] as the project settings say (see
## [method PathServerClient.start_embedded_server]); returns the process id, or -1 after
## [signal failed].
func start() -> int:
	stop()
	var mode: String = PathServerClient.setting(PathServerClient.SETTING_EMBEDDED_MODE)
	var launch := PathServerBundle.server_launch(
		mode, PathServerClient.setting(PathServerClient.SETTING_EMBEDDED_COMMAND)
	)
	var port: int = PathServerClient.setting(PathServerClient.SETTING_EMBEDDED_PORT)
	var bind := "tcp://127.0.0.1:%s" % (str(port) if port > 0 else "*")
	var arguments := PackedStringArray(launch.get("arguments", []))
	arguments.append_array(["serve", "--bind", bind])
	var maps_dir: String = PathServerClient.setting(PathServerClient.SETTING_EMBEDDED_MAPS_DIR)
	if maps_dir != "":
		arguments.append_array(["--maps", ProjectSettings.globalize_path(maps_dir)])
	arguments.append_array(
		PackedStringArray(PathServerClient.setting(PathServerClient.SETTING_EMBEDDED_ARGUMENTS))
	)
	var program: String = launch.get("program", "")
	var shown := PackedStringArray([program if program != "" else "(%s mode)" % mode])
	shown.append_array(arguments)
	_command = " ".join(shown)
	var runs_python := PackedStringArray(launch.get("arguments", [])).has("-m")
	_hint = (
		"Check %s (a Python with pathserver installed)" % PathServerClient.SETTING_EMBEDDED_COMMAND
		if runs_python
		else "Check %s, the bundle (`pathserver bundle`)" % PathServerClient.SETTING_EMBEDDED_MODE
	)
	_hint += " and the other embedded_server settings."
	output.clear()
	state = PathServerClient.ServerState.STARTING
	_started_ms = Time.get_ticks_msec()
	_check_ms = _started_ms + CHECK_MS
	if launch.has("error"):
		_fail("cannot start: %s" % launch.error)
		return -1
	# Non-blocking pipes: each frame reads what the server has written so far, never waits.
	var process := OS.execute_with_pipe(program, arguments, false)
	if process.is_empty():
		_fail("could not be run")
		return -1
	pid = process.pid
	_pipes = [PathServerPipe.new(process.stdio), PathServerPipe.new(process.stderr)]
	print("PathServer: starting the embedded server: %s" % _command)
	return pid


## Kills the process, if there is one.
func stop() -> void:
	if pid > 0:
		OS.kill(pid)
	_close()
	state = PathServerClient.ServerState.NONE


## Reads what the server wrote and, every [constant CHECK_MS], whether it still runs and
## whether it is late with its ready line. [param now]: [method Time.get_ticks_msec].
func poll(now: int) -> void:
	for pipe in _pipes:
		for line in pipe.read_lines(false):
			_on_line(line, pipe == _pipes[0])
	if pid <= 0 or now < _check_ms:
		return
	_check_ms = now + CHECK_MS
	if not OS.is_process_running(pid):
		for pipe in _pipes:
			for line in pipe.read_lines(true):
				_on_line(line, pipe == _pipes[0])
		var code := OS.get_process_exit_code(pid)
		var when := " before it was ready" if state == PathServerClient.ServerState.STARTING else ""
		_fail("exited with code %d%s" % [code, when])
	elif state == PathServerClient.ServerState.STARTING:
		var limit: int = PathServerClient.setting(
			PathServerClient.SETTING_EMBEDDED_START_TIMEOUT_MS
		)
		if now - _started_ms > limit:
			OS.kill(pid)
			_fail("printed no ready line within %d s; stopped" % (limit / 1000))


func _on_line(line: String, from_stdout: bool) -> void:
	# The server's progress lines ("pathserver: ...") go to the game's output as they come.
	print(line)
	output.append(line)
	if output.size() > LOG_LINES:
		output = output.slice(output.size() - LOG_LINES)
	if not from_stdout or state != PathServerClient.ServerState.STARTING:
		return
	if line.begins_with(READY_LINE_PREFIX):
		state = PathServerClient.ServerState.RUNNING
		started.emit(line.trim_prefix(READY_LINE_PREFIX).get_slice(" ", 0))


func _fail(how: String) -> void:
	failure = "the embedded server (%s) %s." % [_command, how]
	if output.is_empty():
		failure += " It printed nothing."
	else:
		failure += " Its last lines:\n  " + "\n  ".join(output)
	failure += "\n" + _hint
	_close()
	state = PathServerClient.ServerState.FAILED
	push_error("PathServer: " + failure)
	failed.emit(failure)


func _close() -> void:
	pid = -1
	_pipes.clear()
