extends Node2D
## The demo's marker for where the group was sent.

var radius := 0.5


func _draw() -> void:
	draw_circle(Vector2.ZERO, radius, Color.WHITE)
	draw_arc(Vector2.ZERO, radius * 1.6, 0.0, TAU, 24, Color(1, 1, 1, 0.6), radius * 0.25)
