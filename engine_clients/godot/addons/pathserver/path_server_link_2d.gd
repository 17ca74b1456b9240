@tool
class_name PathServerLink2D
extends Node2D
## A link between two cells of a pathserver map, like [NavigationLink2D]: a ladder, stairs, a
## teleporter, a one-way drop, a lift. A path may take it as one move from its start to its
## end (and back when [member bidirectional]) for [member cost], whatever the terrain; the
## path's [member PathServerResult.links] say where, and [PathServerAgent2D] emits
## [signal PathServerAgent2D.link_reached] there, so that the game can play the climb.
##
## Its ends are [member start_position] and [member end_position], local to this node, each on
## a floor ([member start_floor], [member end_floor]) of a map of several floors. The map's
## [PathServerTileMapSync] uploads the links of its map with it and keeps them in sync: the
## server holds a map's links as one list, so when any link of the map changes (moved, its
## cost or tag, [member enabled] turned off and on: a door, a lift) the whole list goes again
## as an [code]update[/code]. The list holds the map's enabled links in tree order; a path's
## link [code]k[/code] is [method PathServerClient.get_links] [code][k][/code].
## World positions become cells with the layer's own conversion, as the sync node's
## [method PathServerTileMapSync.to_grid_cell] does.
## [codeblock]
## var ladder := PathServerLink2D.new()
## ladder.map_name = "house"
## ladder.start_position = Vector2(8, 8)
## ladder.end_position = Vector2(8, 40)
## ladder.end_floor = 1
## ladder.tag = "ladder"
## $Ground.add_child(ladder)  # sent with the map by its PathServerTileMapSync
## [/codeblock]
## Without a sync node (a map from a file, [method PathServerClient.put_grid]), send
## [method to_wire] yourself with [method PathServerClient.update_map]
## ([code]{"links": [...]}[/code]).

## Something the server's copy depends on changed: its ends, floors, cost, tag, map or
## [member enabled].
signal link_changed

## The group every link node is in, for the sync nodes to find them.
const GROUP := &"pathserver_links"

## A disabled link is left out of its map's list (a closed door, a lift elsewhere).
@export var enabled := true:
	set(value):
		enabled = value
		_changed()
## The link's first end, local to this node.
@export var start_position := Vector2.ZERO:
	set(value):
		start_position = value
		_changed()
## The link's other end, local to this node.
@export var end_position := Vector2(16, 0):
	set(value):
		end_position = value
		_changed()
## The floor of the first end (0 on a map of one floor).
@export_range(0, 15) var start_floor := 0:
	set(value):
		start_floor = value
		_changed()
## The floor of the other end.
@export_range(0, 15) var end_floor := 0:
	set(value):
		end_floor = value
		_changed()
## Both ways (stairs, a ladder); off: from start to end only (a drop, a one-way teleporter).
@export var bidirectional := true:
	set(value):
		bidirectional = value
		_changed()
## The cost of the move across (>= 0), not multiplied by the terrain.
@export var cost := 1.0:
	set(value):
		cost = value
		_changed()
## One of the map's tag names, for requests' [code]traversal[/code] ("ladder": a class may be
## barred from ladders or pay more); empty: untagged. The agent's signal passes it on.
@export var tag := "":
	set(value):
		tag = value
		_changed()
## The map the link belongs to; empty: the client's [member PathServerClient.map_name].
@export var map_name := "":
	set(value):
		map_name = value
		_changed()
@export var color := Color(0.3, 0.9, 1.0, 0.9)


func _enter_tree() -> void:
	add_to_group(GROUP)
	set_notify_transform(true)
	_changed()


func _exit_tree() -> void:
	# Still in the group until it leaves: the sync node reads the list at its next frame.
	link_changed.emit()


func _notification(what: int) -> void:
	if what == NOTIFICATION_TRANSFORM_CHANGED:
		_changed()


## The map the link belongs to, for [param client] (its default map when
## [member map_name] is empty).
func get_map_name(client: PathServerClient) -> String:
	if map_name != "" or client == null:
		return map_name
	return client.map_name


## The first end in world coordinates.
func get_global_start_position() -> Vector2:
	return global_transform * start_position


## The other end in world coordinates.
func get_global_end_position() -> Vector2:
	return global_transform * end_position


## The link as the wire has it: [code]{"from", "to", "cost", "two_way"(, "tag")}[/code], its
## ends the cells [param to_cell] ([code]func(world: Vector2) -> Vector2i[/code]) gives,
## with their floors when either is not 0.
func to_wire(to_cell: Callable) -> Dictionary:
	var from: Vector2i = to_cell.call(get_global_start_position())
	var to: Vector2i = to_cell.call(get_global_end_position())
	var wire := {
		"from":
		from if start_floor == 0 and end_floor == 0 else Vector3i(from.x, from.y, start_floor),
		"to": to if start_floor == 0 and end_floor == 0 else Vector3i(to.x, to.y, end_floor),
		"cost": cost,
		"two_way": bidirectional,
	}
	if tag != "":
		wire["tag"] = tag
	return wire


## The enabled links of the map [param name] under [param tree], in tree order: the map's list.
static func of_map(tree: SceneTree, name: String, client: PathServerClient) -> Array:
	var links := []
	for node: Node in tree.get_nodes_in_group(GROUP):
		var link := node as PathServerLink2D
		if link != null and link.enabled and link.get_map_name(client) == name:
			links.append(link)
	return links


func _changed() -> void:
	if is_inside_tree():
		link_changed.emit()
		if Engine.is_editor_hint():
			queue_redraw()


func _draw() -> void:
	# In the editor only; in the game PathServerDebugDraw2D draws the server's links.
	if not Engine.is_editor_hint():
		return
	draw_line(start_position, end_position, color, 2.0)
	draw_circle(start_position, 3.0, color)
	draw_circle(end_position, 3.0, color)
	if not bidirectional:
		var along := (end_position - start_position).normalized()
		var side := along.orthogonal() * 4.0
		draw_colored_polygon(
			PackedVector2Array(
				[end_position, end_position - along * 8.0 + side, end_position - along * 8.0 - side]
			),
			color
		)
