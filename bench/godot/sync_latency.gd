extends "res://bench_script.gd"
## Where the addon's synchronous call spends its time, phase by phase, in one headless run.
##
##   godot --headless --path bench/godot -s res://sync_latency.gd -- PROBLEMS ENDPOINT MAP [ROUNDS]
##
## bench/sync_latency.py writes PROBLEMS (as for bench_astar.gd), starts the server and runs
## this; see bench/README.md. Each round asks every problem once a way, the ways in a shuffled
## order problem by problem (so a slow spell of the machine lands on all of them):
##   phases  the steps of PathServer.find_id_path_sync done one by one with the addon's own
##           classes, on a connection of their own, each timed: encode (the request's
##           bytes), send (framed and written to the socket), wait (until the reply is
##           there to read), frame (read and ZMTP frames parsed), decode (the reply's
##           head read into a PathServerResult: path, status, gen), result (its cells).
##           Once a way of waiting
##           (WAITS): the addon's, and others for comparison;
##   call    PathServer.find_id_path_sync itself, timed whole.
## Each phases record also carries the wall clock (us) when the request was written and when
## its reply was there, to be set beside the server's own stamps.
## Prints one line "calls-json: {way: [record per problem], ...}" a round, then
## "sync latency done" (or "sync latency FAILED: ...") last, and quits.

## Request ids of the phase calls: far above the client's own, so the server's records of
## the two never mix.
const PHASE_ID_BASE := 1000000
## Ways of waiting for the reply: [name, us spun without a system call between two reads of
## the socket, us slept (OS.delay_usec) between two reads, or -1]. The first is the addon's.
const WAITS := [
	["phases", 0, -1],
	["wait: a read every 20 us", 20, -1],
	["wait: delay_usec(1), read", 0, 1],
]

var starts: Array[Vector2i] = []
var goals: Array[Vector2i] = []
var client: PathServerClient
var dealer := PathServerZmtpDealer.new()
var replies := PathServerReplies.new()
var requests := PathServerRequests.new()
var options := {"space": "grid", "smooth": "none"}
var rng := RandomNumberGenerator.new()


func _init() -> void:
	title = "sync latency"


func _bench() -> void:
	starts = problems.starts
	goals = problems.goals
	options["map"] = map_name
	rng.seed = 0
	client = root.get_node("PathServer") as PathServerClient
	client.connect_to_server(endpoint)
	dealer.open(endpoint)
	var waited := Time.get_ticks_msec()
	while not dealer.is_ready() and Time.get_ticks_msec() - waited < 10000:
		dealer.poll()
		OS.delay_usec(1000)
	if not await client.wait_connected(10000) or not dealer.is_ready():
		_finish("no pathserver at %s" % endpoint)
		return
	# Untimed: the server builds the map's unit layer on its first path, as on any first use.
	if client.find_id_path_sync(starts[0], goals[0], Vector2i.ONE, options).is_empty():
		_finish("the first path failed: %s" % client.get_last_sync_result())
		return
	var next_id := PHASE_ID_BASE
	for r in rounds:
		var records := {"call": []}
		for wait: Array in WAITS:
			records[wait[0]] = []
		for i in starts.size():
			var cells := []
			# The ways in a shuffled order each problem: a way's time depends a little on the
			# one before it (the call leaves more behind in the caches than the phases do).
			var order := range(WAITS.size() + 1)
			shuffle(order)
			for way: int in order:
				var record := {}
				if way == WAITS.size():
					record = time_call(starts[i], goals[i])
					records.call.append(record)
				else:
					record = time_phases(next_id, starts[i], goals[i], WAITS[way])
					next_id += 1
					records[WAITS[way][0]].append(record)
				if record.has("error"):
					_finish("problem %d: %s" % [i, record.error])
					return
				cells.append(record.cells)
				record.erase("cells")
			if cells.count(cells[0]) != cells.size():
				_finish("problem %d: the ways' paths differ" % i)
				return
		# The engine's own frame between rounds, as a game's would come.
		await process_frame
		print("calls-json: " + JSON.stringify(records))
	_finish("")


## Shuffles [param items] in place with [member rng] (seeded: every run the same orders).
func shuffle(items: Array) -> void:
	for i in range(items.size() - 1, 0, -1):
		var j := rng.randi_range(0, i)
		var item: Variant = items[i]
		items[i] = items[j]
		items[j] = item


func time_call(start: Vector2i, goal: Vector2i) -> Dictionary:
	var t0 := Time.get_ticks_usec()
	var cells := client.find_id_path_sync(start, goal, Vector2i.ONE, options)
	var call_us := Time.get_ticks_usec() - t0
	if cells.is_empty():
		return {"error": str(client.get_last_sync_result())}
	return {"id": client.get_last_sync_result().id, "call": call_us, "cells": cells}


## One problem asked step by step as find_id_path_sync does, each step timed (us), waiting
## for the reply as [param wait] says; the wall clock (us) when the request was written and
## when its reply was there.
func time_phases(id: int, start: Vector2i, goal: Vector2i, wait: Array) -> Dictionary:
	var look_usec: int = wait[1]
	var sleep_usec: int = wait[2]
	var t0 := Time.get_ticks_usec()
	var request := requests.path_request(
		id, client.map_name, Vector2(start), Vector2(goal), Vector2i.ONE, options
	)
	var body: Dictionary = request[0]
	var bytes: PackedByteArray = request[1]
	var t1 := Time.get_ticks_usec()
	var sent_at := int(Time.get_unix_time_from_system() * 1e6)
	dealer.send([PackedByteArray(), bytes])
	var t2 := Time.get_ticks_usec()
	# Read until the reply is in: the last read's start is when it was there.
	var messages := []
	var t3 := t2
	var readable_at := sent_at
	while messages.is_empty() and dealer.is_ready():
		t3 = Time.get_ticks_usec()
		readable_at = int(Time.get_unix_time_from_system() * 1e6)
		messages = dealer.receive()
		if not messages.is_empty():
			break
		if sleep_usec >= 0:
			OS.delay_usec(sleep_usec)
		while Time.get_ticks_usec() < t3 + look_usec:
			pass
	var t4 := Time.get_ticks_usec()
	if messages.is_empty():
		return {"error": "the connection closed: %s" % dealer.last_error}
	var result := PathServerResult.new()
	result.id = id
	if not replies.read_path_head(result, messages[0][-1], body):
		replies.read_path(result, PathServerMsgPack.decode(messages[0][-1])[0], body)
	var t5 := Time.get_ticks_usec()
	var cells := result.get_cells()
	var t6 := Time.get_ticks_usec()
	if not result.ok:
		return {"error": str(result)}
	return {
		"id": id,
		"encode": t1 - t0,
		"send": t2 - t1,
		"wait": t3 - t2,
		"frame": t4 - t3,
		"decode": t5 - t4,
		"result": t6 - t5,
		"sent_at": sent_at,
		"readable_at": readable_at,
		"cells": cells,
	}


func _closing() -> void:
	dealer.close()
