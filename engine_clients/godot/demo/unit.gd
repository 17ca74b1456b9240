extends Node2D
## A demo unit: a square of its footprint, moved by its PathServerAgent2D child (a
## PathServerDebugDraw2D beside it draws its path).

var size_cells := Vector2i.ONE
var cell_size := 1.0
var color := Color.WHITE
var agent := PathServerAgent2D.new()


func _ready() -> void:
	agent.unit_size = size_cells
	add_child(agent)


func _process(_delta: float) -> void:
	queue_redraw()


func _draw() -> void:
	# An even-sized footprint is centred on its cell's lower-right corner (the server's rule).
	var offset := Vector2(1 - size_cells.x % 2, 1 - size_cells.y % 2) * cell_size * 0.5
	var extent := Vector2(size_cells) * cell_size
	draw_rect(Rect2(offset - extent / 2.0, extent), color)
