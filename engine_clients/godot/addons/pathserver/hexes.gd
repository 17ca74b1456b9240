class_name PathServerHexes
extends RefCounted
## Hex map coordinates, as the server has them (the Python module [code]pathserver.hexes[/code]
## is the reference; both are pinned to values from Godot, tests/data/hex_godot.json).
##
## A hex map's cells are [code](x, y)[/code] = (column, row) in one of four offset layouts:
## [code]"odd-r"[/code] / [code]"even-r"[/code] (pointy-top, the odd / even rows shoved right
## by half a hex: a [TileSet] with [constant TileSet.TILE_OFFSET_AXIS_HORIZONTAL], layout
## [constant TileSet.TILE_LAYOUT_STACKED] / [constant TileSet.TILE_LAYOUT_STACKED_OFFSET]) and
## [code]"odd-q"[/code] / [code]"even-q"[/code] (flat-top, columns shoved down:
## [constant TileSet.TILE_OFFSET_AXIS_VERTICAL]). Moves and distances go through axial
## coordinates [code](q, r)[/code]. A cell's world centre is
## [code]origin + center(layout, cell) * tile_size[/code], as [method TileMapLayer.map_to_local]
## puts it; [method cell_at] is [method TileMapLayer.local_to_map]'s hexagon.
## [codeblock]
## var next := PathServerHexes.neighbours("odd-r", Vector2i(3, 4))
## var steps := PathServerHexes.distance("odd-r", Vector2i(0, 0), Vector2i(3, 4))  # 5
## [/codeblock]
## The layer helpers ([method layer_to_axial], [method axial_to_layer], [method base_layout])
## cover every hexagon layout a TileSet has, stairs and diamonds included.

const LAYOUTS: Array[String] = ["odd-r", "even-r", "odd-q", "even-q"]
## The six axial directions, in the order [method neighbours] lists them: counter-clockwise
## on screen, from east on "-r" layouts, from south-east on "-q" ones.
const DIRECTIONS: Array[Vector2i] = [
	Vector2i(1, 0),
	Vector2i(1, -1),
	Vector2i(0, -1),
	Vector2i(-1, 0),
	Vector2i(-1, 1),
	Vector2i(0, 1)
]
## Rows ("-r") or columns ("-q") are this many tile heights (widths) apart.
const OVERLAP := 0.75


## True for "odd-r" and "even-r" (pointy-top, rows shoved).
static func is_pointy(layout: String) -> bool:
	return layout.ends_with("-r")


## 1 when row ("-r") or column ("-q") [param index] is shoved by half a hex, else 0.
static func shoved(layout: String, index: int) -> int:
	return index & 1 if layout.begins_with("odd") else 1 - (index & 1)


## Offset cell -> axial [code](q, r)[/code].
static func to_axial(layout: String, cell: Vector2i) -> Vector2i:
	if is_pointy(layout):
		return Vector2i(cell.x - _half(layout, cell.y), cell.y)
	return Vector2i(cell.x, cell.y - _half(layout, cell.x))


## Axial [code](q, r)[/code] -> offset cell; the inverse of [method to_axial].
static func from_axial(layout: String, axial: Vector2i) -> Vector2i:
	if is_pointy(layout):
		return Vector2i(axial.x + _half(layout, axial.y), axial.y)
	return Vector2i(axial.x, axial.y + _half(layout, axial.x))


## Offset cell -> cube [code](q, r, s)[/code], q + r + s = 0.
static func to_cube(layout: String, cell: Vector2i) -> Vector3i:
	var axial := to_axial(layout, cell)
	return Vector3i(axial.x, axial.y, -axial.x - axial.y)


## Hex steps between two cells.
static func distance(layout: String, a: Vector2i, b: Vector2i) -> int:
	var d := to_axial(layout, a) - to_axial(layout, b)
	return (absi(d.x) + absi(d.y) + absi(d.x + d.y)) / 2


## The six cells next to [param cell], in [constant DIRECTIONS]' order (no map bounds).
static func neighbours(layout: String, cell: Vector2i) -> Array[Vector2i]:
	var axial := to_axial(layout, cell)
	var around: Array[Vector2i] = []
	for direction in DIRECTIONS:
		around.append(from_axial(layout, axial + direction))
	return around


## The cells within [param radius] steps of [param cell] (a unit of size k covers those
## within k - 1), row by row.
static func ball(layout: String, cell: Vector2i, radius: int) -> Array[Vector2i]:
	var axial := to_axial(layout, cell)
	var cells: Array[Vector2i] = []
	for dq in range(-radius, radius + 1):
		for dr in range(maxi(-radius, -dq - radius), mini(radius, -dq + radius) + 1):
			cells.append(from_axial(layout, axial + Vector2i(dq, dr)))
	cells.sort_custom(
		func(a: Vector2i, b: Vector2i) -> bool: return a.y < b.y or (a.y == b.y and a.x < b.x)
	)
	return cells


## The cell's centre in tile units ([method TileMapLayer.map_to_local] / tile size).
static func center(layout: String, cell: Vector2i) -> Vector2:
	if is_pointy(layout):
		return Vector2(cell.x + 0.5 + 0.5 * shoved(layout, cell.y), OVERLAP * cell.y + 0.5)
	return Vector2(OVERLAP * cell.x + 0.5, cell.y + 0.5 + 0.5 * shoved(layout, cell.x))


## The cell's centre in world units.
static func world_center(
	layout: String, cell: Vector2i, origin: Vector2, tile_size: Vector2
) -> Vector2:
	return origin + center(layout, cell) * tile_size


## The six corners of the cell's hexagon in world units, clockwise on screen.
static func polygon(
	layout: String, cell: Vector2i, origin: Vector2, tile_size: Vector2
) -> PackedVector2Array:
	var middle := world_center(layout, cell, origin, tile_size)
	var corners := PackedVector2Array()
	for corner: Vector2 in [
		Vector2(0, -0.5),
		Vector2(0.5, -0.25),
		Vector2(0.5, 0.25),
		Vector2(0, 0.5),
		Vector2(-0.5, 0.25),
		Vector2(-0.5, -0.25)
	]:
		var turned := corner if is_pointy(layout) else Vector2(corner.y, corner.x)
		corners.append(middle + turned * tile_size)
	if not is_pointy(layout):
		corners.reverse()
	return corners


## The cell whose hexagon contains the world point [param point] (maybe outside the map),
## on shared edges as [method TileMapLayer.local_to_map] decides.
static func cell_at(
	layout: String, point: Vector2, origin: Vector2, tile_size: Vector2
) -> Vector2i:
	var tiles := (point - origin) / tile_size
	var pointy := is_pointy(layout)
	var along := tiles.x if pointy else tiles.y
	var across := (tiles.y if pointy else tiles.x) / OVERLAP
	# Rows (columns) as unit bands; in a band, a cell's box is a unit square whose two corners
	# on the previous band's side belong to that band's cells.
	var band := floori(across)
	var shift := shoved(layout, band)
	var shifted := along - 0.5 * shift
	var line := floori(shifted)
	var inside_across := across - band
	var inside_along := shifted - line - 0.5
	var slope := 1.0 / OVERLAP - 1.0
	var first: bool
	var second: bool
	if pointy:
		first = inside_along * slope + 0.5 * inside_across <= 0.0
		second = inside_along * slope - 0.5 * inside_across > 0.0
	else:
		first = -0.5 * inside_across - inside_along * slope > 0.0
		second = 0.5 * inside_across - inside_along * slope <= 0.0
	if first:
		line += shift - 1
		band -= 1
	elif second:
		line += shift
		band -= 1
	return Vector2i(line, band) if pointy else Vector2i(band, line)


## The wire layout whose cells are a [TileSet]'s own cells: STACKED -> "odd-r" / "odd-q",
## STACKED_OFFSET -> "even-r" / "even-q" (by [param offset_axis]); for the stairs and diamond
## layouts "odd-r" / "odd-q", through [method layer_to_axial].
static func base_layout(tile_layout: int, offset_axis: int) -> String:
	var even := tile_layout == TileSet.TILE_LAYOUT_STACKED_OFFSET
	if offset_axis == TileSet.TILE_OFFSET_AXIS_HORIZONTAL:
		return "even-r" if even else "odd-r"
	return "even-q" if even else "odd-q"


## [param layout] with its shoved rows (columns) swapped, as a grid whose first row (column)
## is an odd one of [param layout]'s sees it.
static func flipped(layout: String) -> String:
	return ("even" if layout.begins_with("odd") else "odd") + layout.substr(layout.find("-"))


## A layer cell of a hexagon [TileSet] with [param tile_layout] and [param offset_axis] ->
## axial [code](q, r)[/code] (the same axial coordinates as [method to_axial] of
## [method base_layout]'s cell, centres alike).
static func layer_to_axial(tile_layout: int, offset_axis: int, coords: Vector2i) -> Vector2i:
	var x := coords.x
	var y := coords.y
	if offset_axis == TileSet.TILE_OFFSET_AXIS_HORIZONTAL:
		match tile_layout:
			TileSet.TILE_LAYOUT_STAIRS_RIGHT:
				return Vector2i(x, y)
			TileSet.TILE_LAYOUT_STAIRS_DOWN:
				return Vector2i(-y, x + 2 * y)
			TileSet.TILE_LAYOUT_DIAMOND_RIGHT:
				return Vector2i(x, y - x)
			TileSet.TILE_LAYOUT_DIAMOND_DOWN:
				return Vector2i(-y, x + y)
	else:
		match tile_layout:
			TileSet.TILE_LAYOUT_STAIRS_RIGHT:
				return Vector2i(2 * x + y, -x)
			TileSet.TILE_LAYOUT_STAIRS_DOWN:
				return Vector2i(x, y)
			TileSet.TILE_LAYOUT_DIAMOND_RIGHT:
				return Vector2i(x + y, -x)
			TileSet.TILE_LAYOUT_DIAMOND_DOWN:
				return Vector2i(x - y, y)
	return to_axial(base_layout(tile_layout, offset_axis), coords)


## The inverse of [method layer_to_axial].
static func axial_to_layer(tile_layout: int, offset_axis: int, axial: Vector2i) -> Vector2i:
	var q := axial.x
	var r := axial.y
	if offset_axis == TileSet.TILE_OFFSET_AXIS_HORIZONTAL:
		match tile_layout:
			TileSet.TILE_LAYOUT_STAIRS_RIGHT:
				return Vector2i(q, r)
			TileSet.TILE_LAYOUT_STAIRS_DOWN:
				return Vector2i(r + 2 * q, -q)
			TileSet.TILE_LAYOUT_DIAMOND_RIGHT:
				return Vector2i(q, r + q)
			TileSet.TILE_LAYOUT_DIAMOND_DOWN:
				return Vector2i(r + q, -q)
	else:
		match tile_layout:
			TileSet.TILE_LAYOUT_STAIRS_RIGHT:
				return Vector2i(-r, q + 2 * r)
			TileSet.TILE_LAYOUT_STAIRS_DOWN:
				return Vector2i(q, r)
			TileSet.TILE_LAYOUT_DIAMOND_RIGHT:
				return Vector2i(-r, q + r)
			TileSet.TILE_LAYOUT_DIAMOND_DOWN:
				return Vector2i(q + r, r)
	return from_axial(base_layout(tile_layout, offset_axis), axial)


## How far the shoved coordinate [param index] moves the other one between offset and axial
## (exact: the numerator is even, so truncating division is floor division here).
static func _half(layout: String, index: int) -> int:
	if layout.begins_with("odd"):
		return (index - (index & 1)) / 2
	return (index + (index & 1)) / 2
