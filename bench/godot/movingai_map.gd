extends RefCounted
## A Moving AI .map read in GDScript, for the benches that run in headless Godot
## (bench_astar.gd, bench_hex.gd): '.', 'G' and 'S' walkable, everything else blocked.

var error := ""
var width := 0
var height := 0
## One byte a cell, row-major: 1 walkable, 0 blocked.
var walkable := PackedByteArray()
## The blocked cells, row by row.
var blocked: Array[Vector2i] = []


## Reads [param path]; [member error] says why not, else "".
func _init(path: String) -> void:
	var file := FileAccess.open(path, FileAccess.READ)
	if file == null:
		error = "cannot read %s" % path
		return
	var lines := file.get_as_text().replace("\r", "").split("\n")
	var row := 0
	while row < lines.size() and lines[row].strip_edges() != "map":
		var fields := lines[row].split(" ", false)
		if fields.size() == 2 and fields[0] == "width":
			width = int(fields[1])
		elif fields.size() == 2 and fields[0] == "height":
			height = int(fields[1])
		row += 1
	if width <= 0 or height <= 0 or lines.size() < row + 1 + height:
		error = "%s: not a Moving AI map" % path
		return
	walkable.resize(width * height)
	for y in height:
		var text: String = lines[row + 1 + y]
		if text.length() != width:
			error = "%s: row %d is not %d characters" % [path, y, width]
			return
		for x in width:
			var open := text[x] in [".", "G", "S"]
			walkable[y * width + x] = 1 if open else 0
			if not open:
				blocked.append(Vector2i(x, y))
