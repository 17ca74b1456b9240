class_name PathServerResult
extends RefCounted
## The outcome of one request to pathserver, as returned by
## [method PathServerClient.find_path_async] and friends.
##
## [member ok] is true when [member waypoints] can be followed: status "found", or "partial"
## when the request asked for [code]allow_partial[/code]. Otherwise [member code] says why,
## with the server's error codes ("unknown_map", "out_of_bounds", ...), "no_path" when the goal
## cannot be reached, or the client's own "timeout", "cancelled" and "bad_reply".
## [codeblock]
## var result := await PathServer.find_path_async(Vector2(2.5, 2.5), Vector2(10.5, 2.5))
## if result.ok:
##     print(result.waypoints)  # [(2.5, 2.5), (10.5, 2.5)] on the sample map "example"
## else:
##     print(result.code, ": ", result.message)
## [/codeblock]

## Emitted once, when the request completes either way.
signal completed

## The request id, as passed to the client's signals.
var id := 0
var ok := false
## "found", "partial" or "no_path" when the server answered the search; "" on errors.
var status := ""
## The path in the requested space (world by default), start and goal included.
var waypoints := PackedVector2Array()
## "" on success, else a snake_case error code.
var code := ""
var message := ""
## True when the same request may succeed if sent again (e.g. "overloaded", "timeout").
var retryable := false
## Everything else the server said (status, cost, length, expanded, start and goal as
## [Vector2], gen, ...) plus the request's map and unit_size; "at" on errors.
var info := {}
## The raw reply Dictionary (empty when the client failed the request itself).
var reply := {}
## True once [signal completed] has been emitted.
var done := false


func _to_string() -> String:
	if ok:
		return "PathServerResult(id=%d, %s, %d waypoints)" % [id, status, waypoints.size()]
	return "PathServerResult(id=%d, %s: %s)" % [id, code, message]
