extends SceneTree
## What bench_astar.gd and sync_latency.gd share: a watchdog, the command line
## "-- PROBLEMS ENDPOINT MAP [ROUNDS]" with its problems file read (bench_problems.gd), and
## the last line, "TITLE done" or "TITLE FAILED: ...". A script extending this one sets
## [member title] and [member watchdog_seconds] and runs in [method _bench].

const BenchProblems := preload("res://bench_problems.gd")

var title := "bench"
var watchdog_seconds := 600.0
var problems: BenchProblems
var endpoint := ""
var map_name := ""
var rounds := 3
var _finished := false


func _initialize() -> void:
	create_timer(watchdog_seconds).timeout.connect(
		func() -> void: _finish("the run took more than %d s" % watchdog_seconds)
	)
	_start.call_deferred()


## The run, once the command line and the problems are read; ends with [method _finish].
func _bench() -> void:
	_finish("no bench")


## Called once as the run ends, before the last line.
func _closing() -> void:
	pass


func _start() -> void:
	var args := OS.get_cmdline_user_args()
	if args.size() < 3:
		_finish("usage: -- PROBLEMS ENDPOINT MAP [ROUNDS]")
		return
	rounds = int(args[3]) if args.size() > 3 else 3
	problems = BenchProblems.new(args[0])
	if problems.error != "":
		_finish(problems.error)
		return
	endpoint = args[1]
	map_name = args[2]
	await _bench()


func _finish(error: String) -> void:
	if _finished:
		return
	_finished = true
	_closing()
	if error == "":
		print("%s done" % title)
	else:
		print("%s FAILED: %s" % [title, error])
	quit(0 if error == "" else 1)
