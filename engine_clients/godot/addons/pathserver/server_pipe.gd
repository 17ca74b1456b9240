class_name PathServerPipe
extends RefCounted
## One of the embedded server's output pipes ([method OS.execute_with_pipe]), read without
## blocking, line by line: what [PathServerClient] shows of the server it started.

var file: FileAccess
var partial := PackedByteArray()


func _init(pipe: FileAccess) -> void:
	file = pipe


## The complete lines written since the last call; [param flush] also returns an
## unterminated last line (the process exited).
func read_lines(flush: bool) -> PackedStringArray:
	# get_length() is what the pipe holds now (FIONREAD), so get_buffer() never waits.
	var available := file.get_length()
	if available > 0:
		partial.append_array(file.get_buffer(available))
	var lines := PackedStringArray()
	var start := 0
	var newline := partial.find(10)
	while newline >= 0:
		lines.append(partial.slice(start, newline).get_string_from_utf8().strip_edges(false))
		start = newline + 1
		newline = partial.find(10, start)
	partial = partial.slice(start)
	if flush and not partial.is_empty():
		lines.append(partial.get_string_from_utf8().strip_edges(false))
		partial.clear()
	return lines
