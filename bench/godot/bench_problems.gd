extends RefCounted
## The problems file bench/godot_astar.py writes, read for bench_astar.gd and
## sync_latency.gd: a line "map PATH", then a line a problem "sx sy gx gy optimal tolerance".

var error := ""
var map_file := ""
var starts: Array[Vector2i] = []
var goals: Array[Vector2i] = []
var optimal := PackedFloat64Array()
var tolerance := PackedFloat64Array()


## Reads [param path]; [member error] says why not, else "".
func _init(path: String) -> void:
	var file := FileAccess.open(path, FileAccess.READ)
	if file == null:
		error = "cannot read %s" % path
		return
	var lines := file.get_as_text().split("\n", false)
	if lines.is_empty() or not lines[0].begins_with("map "):
		error = "%s: the first line must be 'map PATH'" % path
		return
	map_file = lines[0].substr(4).strip_edges()
	for line in lines.slice(1):
		var fields := line.split(" ", false)
		if fields.size() != 6:
			error = "%s: expected 6 fields: %s" % [path, line]
			return
		starts.append(Vector2i(int(fields[0]), int(fields[1])))
		goals.append(Vector2i(int(fields[2]), int(fields[3])))
		optimal.append(float(fields[4]))
		tolerance.append(float(fields[5]))
	if starts.is_empty():
		error = "%s: no problems" % path
