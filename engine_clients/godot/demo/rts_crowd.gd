extends Node2D
## Draws the RTS scene's crowd in one pass (a rectangle a unit, its footprint's size) and the
## goal disc: 500 nodes with a _draw each would cost more.

const COLORS := [Color("4fc3f7"), Color("ff8a65")]

var group: PathServerFlowGroup2D
var target := Vector2.ZERO
var goal_radius := 0.0
var cell_size := 8.0


func _process(_delta: float) -> void:
	queue_redraw()


## True when a unit's footprint overlaps [param block] (grid cells of [param cell] pixels).
func covers(block: Rect2i, cell: float) -> bool:
	var area := Rect2(Vector2(block.position) * cell, Vector2(block.size) * cell)
	for size in group.get_unit_sizes():
		var extent := Vector2(size) * cell
		for unit in group.get_units_of_size(size):
			if area.intersects(footprint(unit.position, size, extent, cell)):
				return true
	return false


func _draw() -> void:
	if group == null:
		return
	if goal_radius > 0.0:
		draw_circle(target, goal_radius, Color(1, 1, 1, 0.07))
		draw_arc(target, goal_radius, 0.0, TAU, 48, Color(1, 1, 1, 0.5), 1.0)
	var sizes := group.get_unit_sizes()
	# The big units first: the small ones stay visible among them.
	sizes.sort_custom(func(a: Vector2i, b: Vector2i) -> bool: return a.x * a.y > b.x * b.y)
	for size in sizes:
		var extent := Vector2(size) * cell_size
		var color: Color = COLORS[mini(maxi(size.x, size.y) - 1, COLORS.size() - 1)]
		for unit in group.get_units_of_size(size):
			var box := footprint(unit.position, size, extent, cell_size).grow(-1.0)
			draw_rect(box, color)


## The rectangle a unit at [param at] covers: an even-sized footprint is centred on its
## cell's lower-right corner (the server's rule).
static func footprint(at: Vector2, size: Vector2i, extent: Vector2, cell: float) -> Rect2:
	var offset := Vector2(1 - size.x % 2, 1 - size.y % 2) * cell * 0.5
	return Rect2(at + offset - extent / 2.0, extent)
