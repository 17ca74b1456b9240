extends Node2D
## The demo's moving target: it roams between random walkable spots, found with its own
## PathServerAgent2D, and goes where the player clicks.

var radius := 0.5
## World positions to roam between.
var walkable: Array[Vector2] = []
var agent := PathServerAgent2D.new()


func _ready() -> void:
	add_child(agent)
	agent.target_reached.connect(roam)


func _process(_delta: float) -> void:
	queue_redraw()


## Heads for a random walkable spot.
func roam() -> void:
	if not walkable.is_empty():
		agent.target_position = walkable.pick_random()


func go_to(point: Vector2) -> void:
	agent.target_position = point


func _draw() -> void:
	draw_circle(Vector2.ZERO, radius, Color.WHITE)
	draw_arc(Vector2.ZERO, radius * 1.6, 0.0, TAU, 24, Color(1, 1, 1, 0.6), radius * 0.25)
