class_name PathServerResult
extends RefCounted
## The outcome of one request to pathserver, as [code]await[/code] returns it from
## [method PathServerClient.find_path_async], [method PathServerClient.find_paths_async] (one
## per entry) and [method PathServerClient.request_async].
##
## [member ok] is true when the server answered the query. For a path that means a
## [member status]: "found", "partial" (with [code]allow_partial[/code]) or "no_path" — the
## goal cannot be reached, [member waypoints] is empty: an answer, like the empty path of
## [AStarGrid2D], not an error. [member ok] is false only on errors: [member code] is the
## server's error code ("unknown_map", "out_of_bounds", ...) or the client's own "timeout",
## "cancelled", "bad_reply" or "embedded_server_failed".
## [codeblock]
## var result := await PathServer.find_path_async(Vector2(2.5, 2.5), Vector2(10.5, 2.5))
## if not result.ok:
##     print(result.code, ": ", result.message)
## elif result.status == "no_path":
##     print("unreachable")
## else:
##     print(result.waypoints)  # [(2.5, 2.5), (10.5, 2.5)] on the sample map "example"
## [/codeblock]

## The request id, as passed to the client's signals.
var id := 0
## True when the server answered (for paths: found, partial or no_path); false on errors.
var ok := false
## "found", "partial" or "no_path" when the server answered a path query; "" otherwise.
var status := ""
## The path in the requested space (world by default), start and goal included, as
## [method AStarGrid2D.get_point_path] gives one; empty for "no_path" and on errors. In grid
## space, [method get_cells] gives the same as [Vector2i] cells.
var waypoints := PackedVector2Array()
## On a map of several floors, the floor of each waypoint (one a waypoint); empty on a map of
## one floor, where every waypoint is on floor 0 ([method get_floor] reads either).
var floors := PackedInt32Array()
## The links the path takes, [code][[i, k], ...][/code]: the move from waypoint [code]i[/code]
## to waypoint [code]i + 1[/code] is link [code]k[/code] of the map (its index in the map's
## list of links), so the game can play the ladder's animation there. Empty when it takes
## none (and always for an entry of a packed batch, whose reply gives no links).
var links: Array = []
## "" when [member ok], else a snake_case error code.
var code := ""
var message := ""
## True when the same request may succeed if sent again (e.g. "overloaded", "timeout").
var retryable := false
## Everything else the server said (status, cost, length, expanded, start and goal as
## [Vector2], start_snapped, goal_snapped, gen, ...) plus the request's map and unit_size;
## "at" (the request field an error is about) on errors.
var info := {}:
	get:
		_read_rest()
		return info
## The raw reply Dictionary (empty when the client failed the request itself); for an entry
## of a packed batch, the batch's reply.
var reply := {}:
	get:
		_read_rest()
		return reply
## Set when only the head of the reply was read (a synchronous call's path): reads the rest
## into this result, on the first look at [member info] or [member reply].
var read_rest := Callable()


func _read_rest() -> void:
	if read_rest.is_valid():
		var read := read_rest
		read_rest = Callable()
		read.call(self)


## The path's cells, as [method AStarGrid2D.get_id_path] gives them: [member waypoints] as
## [Vector2i], for a path asked in grid space ([code]{"space": "grid"}[/code]).
func get_cells() -> Array[Vector2i]:
	return PathServerPacked.cells(waypoints)


## The floor of waypoint [param index]: 0 on a map of one floor.
func get_floor(index: int) -> int:
	return floors[index] if index < floors.size() else 0


## The index of the link taken from waypoint [param index] to the next, or -1 when that move is
## no link.
func get_link_at(index: int) -> int:
	for taken: Variant in links:
		if taken is Array and taken.size() == 2 and int(taken[0]) == index:
			return int(taken[1])
	return -1


func _to_string() -> String:
	if ok and status != "":
		return "PathServerResult(id=%d, %s, %d waypoints)" % [id, status, waypoints.size()]
	if ok:
		return "PathServerResult(id=%d, ok)" % id
	return "PathServerResult(id=%d, %s: %s)" % [id, code, message]
