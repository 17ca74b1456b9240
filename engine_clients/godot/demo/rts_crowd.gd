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
			if area.intersects(_footprint(unit.position, size, extent, cell)):
				return true
	return false


func _draw() -> void:
	if group == null:
		return
	if goal_radius > 0.0:
		draw_circle(target, goal_radius, Color(1, 1, 1, 0.07))
		draw_arc(target, goal_radius, 0.0, TAU, 48, Color(1, 1, 1, 0.5), 1.0)
	var sizes := group.get_unit_sizes()
	for i in sizes.size():
		var size := sizes[i]
		var extent := Vector2(size) * cell_size
		var color: Color = COLORS[mini(maxi(size.x, size.y) - 1, COLORS.size() - 1)]
		for unit in group.get_units_of_size(size):
			var box := _footprint(unit.position, size, extent, cell_size).grow(-1.0)
			draw_rect(box, color)


## An even-sized footprint is centred on its cell's lower-right corner (the server's rule).
static func _footprint(at: Vector2, size: Vector2i, extent: Vector2, cell: float) -> Rect2:
	var offset := Vector2(1 - size.x % 2, 1 - size.y % 2) * cell * 0.5
	return Rect2(at + offset - extent / 2.0, extent)
