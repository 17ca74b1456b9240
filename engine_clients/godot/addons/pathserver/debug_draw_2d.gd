@tool
class_name PathServerDebugDraw2D
extends Node2D
## Draws what pathserver knows, over the game: a map's blocked cells (and costlier terrain),
## as the server has them, and a path with its waypoints and the unit's footprint along it.
## Toggle it with [member enabled]. It draws in world coordinates wherever it sits in the tree.
##
## The cells come from [method PathServerClient.get_map] and are fetched again whenever the
## map's generation changes (a live edit, a new upload), so what you see is what paths are
## computed on. In the editor, where no game runs, they come from [member tile_map_layer]
## instead, read as [method PathServerClient.put_tilemap] would upload it: a preview of what
## the server will get.
##
## The path is [member agent]'s (a [PathServerAgent2D]: the rest of its path, redrawn every
## frame, with its [member PathServerAgent2D.unit_size]), else [member path] with
## [member unit_size]. The footprint is the cells the unit covers at each waypoint and along
## the way (the server's rule: columns x - (w - 1) / 2 .. x + w / 2, rows likewise).
## On a hex map (its [code]shape[/code] "hex") cells are drawn as the hexagons of its
## [code]layout[/code], and a unit of size k covers the cells within k - 1 hex steps.
## On a map of several floors the cells drawn are [member floor_shown]'s. The map's links
## (from the same [code]get_map[/code]: what the server has) are drawn as lines from cell
## centre to cell centre: two-way ones in [member link_color] with a dot at each end, one-way
## ones in [member one_way_color] with an arrowhead at their end; an end on another floor
## than [member floor_shown] is a ring.
## [codeblock]
## var overlay := PathServerDebugDraw2D.new()
## overlay.map_name = "level"
## overlay.agent = $Unit/PathServerAgent2D
## add_child(overlay)
## [/codeblock]

## Cells with a terrain cost this much above 1 are drawn in the full [member cost_color].
const COST_SCALE := 8.0
const CELLS_SHADER := """
shader_type canvas_item;
uniform vec4 blocked_color : source_color;
uniform vec4 cost_color : source_color;
uniform float cost_scale;

void fragment() {
	float cell = floor(texture(TEXTURE, UV).r * 255.0 + 0.5);
	if (cell < 0.5) {
		COLOR = blocked_color;
	} else if (cell > 1.5) {
		COLOR = vec4(cost_color.rgb, cost_color.a * clamp((cell - 1.0) / cost_scale, 0.2, 1.0));
	} else {
		COLOR = vec4(0.0);
	}
}
"""

## Draw or not (nothing is fetched while off).
@export var enabled := true:
	set = set_enabled
## The map to show; empty: the client's [member PathServerClient.map_name].
@export var map_name := ""
## Draw the map's cells (turn off for an overlay that only shows a path).
@export var show_cells := true
## Draw the map's links.
@export var show_links := true:
	set(value):
		show_links = value
		queue_redraw()
## On a map of several floors, the floor whose cells are drawn.
@export_range(0, 15) var floor_shown := 0:
	set(value):
		floor_shown = value
		if floors > 1:
			_show_cells(map_size, cells, origin, tile_size, shape, layout, floors)
## In the editor: the layer whose cells to preview (no server is asked there).
@export var tile_map_layer: TileMapLayer
## The agent whose path to draw.
@export var agent: PathServerAgent2D
## A path to draw when there is no [member agent] (world coordinates).
@export var path := PackedVector2Array():
	set(value):
		path = value
		queue_redraw()
## The footprint drawn along [member path], in cells.
@export var unit_size := Vector2i.ONE:
	set(value):
		unit_size = value
		queue_redraw()
@export var blocked_color := Color(0.95, 0.25, 0.2, 0.45):
	set(value):
		blocked_color = value
		_update_material()
@export var cost_color := Color(0.95, 0.75, 0.2, 0.5):
	set(value):
		cost_color = value
		_update_material()
@export var path_color := Color(1, 1, 1, 0.9)
@export var link_color := Color(0.3, 0.9, 1.0, 0.9)
@export var one_way_color := Color(1.0, 0.55, 0.9, 0.9)
@export var footprint_color := Color(0.3, 0.8, 1.0, 0.25)

## The client to ask; the [code]PathServer[/code] autoload when not set.
var client: PathServerClient
## What was last drawn: the map's generation (-1: none yet), size in cells, origin and
## cell size in world units (on a hex map the smaller side of [member tile_size]).
var gen := -1
var map_size := Vector2i.ZERO
var origin := Vector2.ZERO
var cell_size := 1.0
## The map's shape ("square" or "hex") and, on hex maps, its layout and tile size (world
## units; see [PathServerHexes]).
var shape := "square"
var layout := ""
var tile_size := Vector2.ONE
## The cells as fetched (0 blocked, else the cost rounded to 1..255), row-major, a layer a
## floor (floor 0 first).
var cells := PackedByteArray()
## The map's floors, and its links as the server has them (the wire's dictionaries).
var floors := 1
var links: Array = []

var _cells_item: Node2D
var _cells_material: ShaderMaterial
var _texture: ImageTexture
var _fetching := false
var _fetch_again := false
var _retry_at_ms := 0
var _preview_data := PackedByteArray()


func _ready() -> void:
	_cells_item = Node2D.new()
	_cells_item.texture_filter = CanvasItem.TEXTURE_FILTER_NEAREST
	_cells_item.show_behind_parent = true
	# Built whole, then assigned: set through _cells_item.material.shader.code instead, the
	# shader never applied and the raw texture was drawn (Godot 4.6, compatibility renderer).
	var shader := Shader.new()
	shader.code = CELLS_SHADER
	_cells_material = ShaderMaterial.new()
	_cells_material.shader = shader
	_cells_item.material = _cells_material
	_cells_item.draw.connect(_draw_cells)
	add_child(_cells_item, false, INTERNAL_MODE_FRONT)
	_update_material()
	if Engine.is_editor_hint():
		return
	if client == null:
		client = get_node_or_null("/root/PathServer") as PathServerClient
	if client != null:
		client.map_generation_changed.connect(_on_map_generation_changed)


func _process(_delta: float) -> void:
	if not enabled:
		return
	if Engine.is_editor_hint():
		_preview()
	elif client != null and gen < 0 and Time.get_ticks_msec() >= _retry_at_ms:
		refresh()
	if agent != null:
		queue_redraw()


func set_enabled(value: bool) -> void:
	enabled = value
	visible = value
	if value and gen < 0 and is_inside_tree() and not Engine.is_editor_hint():
		refresh()


## The map's name as asked for: [member map_name], else the agent's, else the client's.
func get_map_name() -> String:
	if map_name != "":
		return map_name
	if agent != null and agent.map_name != "":
		return agent.map_name
	return client.map_name if client != null else ""


## Fetches the map's cells now (done by itself when the map's generation changes). With
## [member show_cells] off only the map's size and transform are fetched (one cell).
func refresh() -> void:
	if _fetching:
		_fetch_again = true
		return
	if client == null:
		return
	_fetching = true
	var region := Rect2i() if show_cells else Rect2i(0, 0, 1, 1)
	var result := await client.get_map_async(get_map_name(), region)
	_fetching = false
	if result.ok:
		var info := result.info
		links = info.links
		_show_cells(
			info.size, info.cells, info.origin, info.cell_size, info.shape, info.layout, info.floors
		)
		gen = result.info.gen
	else:
		# Not uploaded yet, or no server yet: ask again in a while.
		_retry_at_ms = Time.get_ticks_msec() + 1000
	if _fetch_again:
		_fetch_again = false
		refresh()


## The cell containing the world point [param point].
func cell_of(point: Vector2) -> Vector2i:
	if shape == "hex":
		return PathServerHexes.cell_at(layout, point, origin, tile_size)
	return Vector2i(((point - origin) / cell_size).floor())


## The world centre of [param cell].
func cell_center(cell: Vector2i) -> Vector2:
	if shape == "hex":
		return PathServerHexes.world_center(layout, cell, origin, tile_size)
	return origin + (Vector2(cell) + Vector2(0.5, 0.5)) * cell_size


func _on_map_generation_changed(changed_map: String, _gen: int) -> void:
	# A path overlay has the map's transform already; edits of cells do not change it, but
	# edits of links do.
	if enabled and (show_cells or show_links) and changed_map == get_map_name():
		refresh()


func _show_cells(
	size: Vector2i,
	data: PackedByteArray,
	at: Vector2,
	world_cell: Variant,
	map_shape := "square",
	map_layout := "",
	map_floors := 1
) -> void:
	map_size = size
	cells = data
	origin = at
	shape = map_shape
	layout = map_layout
	floors = map_floors
	var area := size.x * size.y
	if floors > 1 and data.size() == area * floors:
		# One floor's layer: floor_shown's.
		var shown := clampi(floor_shown, 0, floors - 1)
		data = data.slice(area * shown, area * (shown + 1))
	tile_size = world_cell if world_cell is Vector2 else Vector2(world_cell, world_cell)
	cell_size = minf(tile_size.x, tile_size.y)
	# Hexagons are drawn as polygons in their colours; the shader colours a texture's cells.
	_cells_item.material = _cells_material if shape != "hex" else null
	if shape == "hex":
		_texture = null
	elif show_cells and size.x > 0 and size.y > 0 and data.size() == size.x * size.y:
		var image := Image.create_from_data(size.x, size.y, false, Image.FORMAT_R8, data)
		if _texture != null and _texture.get_size() == Vector2(size):
			_texture.update(image)
		else:
			_texture = ImageTexture.create_from_image(image)
	else:
		_texture = null
	_cells_item.queue_redraw()
	queue_redraw()


func _preview() -> void:
	if tile_map_layer == null or not show_cells:
		return
	var data := tile_map_layer.tile_map_data
	if data == _preview_data:
		return
	_preview_data = data
	var grid := PathServerTileMapReader.read(tile_map_layer)
	if grid.error == "":
		_show_cells(grid.size, grid.cells, grid.origin, grid.cell_size, grid.shape, grid.layout)
		links = []


func _update_material() -> void:
	if _cells_item == null:
		return
	_cells_material.set_shader_parameter("blocked_color", blocked_color)
	_cells_material.set_shader_parameter("cost_color", cost_color)
	_cells_material.set_shader_parameter("cost_scale", COST_SCALE)
	if shape == "hex":
		_cells_item.queue_redraw()


func _draw_cells() -> void:
	if shape == "hex" and show_cells:
		_draw_hex_cells()
		return
	if _texture == null or not show_cells:
		return
	_cells_item.draw_set_transform_matrix(_cells_item.get_global_transform().affine_inverse())
	_cells_item.draw_texture_rect(_texture, Rect2(origin, Vector2(map_size) * cell_size), false)


## The blocked and costlier cells of a hex map, in the colours the shader gives square ones.
func _draw_hex_cells() -> void:
	var area := map_size.x * map_size.y
	if cells.size() != area * floors:
		return
	var shown := clampi(floor_shown, 0, floors - 1)
	_cells_item.draw_set_transform_matrix(_cells_item.get_global_transform().affine_inverse())
	for i in area:
		var value := cells[shown * area + i]
		if value == 1:
			continue
		var color := blocked_color
		if value > 1:
			color = Color(cost_color, cost_color.a * clampf((value - 1.0) / COST_SCALE, 0.2, 1.0))
		var cell := Vector2i(i % map_size.x, i / map_size.x)
		_cells_item.draw_colored_polygon(
			PathServerHexes.polygon(layout, cell, origin, tile_size), color
		)


## The cells a unit of [param size] covers standing on [param cell].
func _footprint(cell: Vector2i, size: Vector2i) -> Array[Vector2i]:
	if shape == "hex":
		return PathServerHexes.ball(layout, cell, maxi(size.x, size.y) - 1)
	var covered: Array[Vector2i] = []
	var low := Vector2i((size.x - 1) / 2, (size.y - 1) / 2)
	for y in size.y:
		for x in size.x:
			covered.append(cell - low + Vector2i(x, y))
	return covered


func _draw() -> void:
	var points := path
	var size := unit_size
	if agent != null:
		points = agent.get_remaining_path()
		size = agent.unit_size
	# World coordinates, wherever this node is.
	draw_set_transform_matrix(get_global_transform().affine_inverse())
	var width := maxf(1.0, cell_size * 0.12)
	if show_links and map_size != Vector2i.ZERO:
		_draw_links(width)
	if points.size() < 2:
		return
	if map_size == Vector2i.ZERO:
		# No map yet to say where cells are: the path alone.
		draw_polyline(points, path_color, width)
		return
	if shape == "hex":
		_draw_hex_path(points, size, width)
		return
	var covered := {}
	for point in _along(points, cell_size * 0.5):
		covered[cell_of(point)] = true
	var low := Vector2i((size.x - 1) / 2, (size.y - 1) / 2)
	var extent := Vector2(size) * cell_size
	for cell: Vector2i in covered:
		draw_rect(Rect2(origin + Vector2(cell - low) * cell_size, extent), footprint_color)
	draw_polyline(points, path_color, width)
	for i in points.size():
		var corner := origin + Vector2(cell_of(points[i]) - low) * cell_size
		draw_rect(Rect2(corner, extent), Color(path_color, 0.8), false, width * 0.5)
		draw_circle(points[i], width * 1.6, path_color)


## Points along the path [param points] at most [param spacing] apart: each segment cut in
## equal steps, both its ends included.
static func _along(points: PackedVector2Array, spacing: float) -> PackedVector2Array:
	var along := PackedVector2Array()
	for i in points.size() - 1:
		var from := points[i]
		var to := points[i + 1]
		var steps := maxi(1, ceili(from.distance_to(to) / spacing))
		for step in steps + 1:
			along.append(from.lerp(to, float(step) / steps))
	return along


## [method _draw]'s path on a hex map: the hexagons covered along it, the path, and the
## footprint's outline at each waypoint.
func _draw_hex_path(points: PackedVector2Array, size: Vector2i, width: float) -> void:
	var covered := {}
	for point in _along(points, cell_size * 0.25):
		for cell in _footprint(cell_of(point), size):
			covered[cell] = true
	for cell: Vector2i in covered:
		draw_colored_polygon(
			PathServerHexes.polygon(layout, cell, origin, tile_size), footprint_color
		)
	draw_polyline(points, path_color, width)
	for point in points:
		for cell in _footprint(cell_of(point), size):
			var corners := PathServerHexes.polygon(layout, cell, origin, tile_size)
			corners.append(corners[0])
			draw_polyline(corners, Color(path_color, 0.8), width * 0.5)
		draw_circle(point, width * 1.6, path_color)


## The map's links: a line from end to end, dots at a two-way link's ends, an arrowhead at a
## one-way link's end; an end on another floor than [member floor_shown] a ring.
func _draw_links(width: float) -> void:
	for link: Variant in links:
		if not (link is Dictionary and link.get("from") is Array and link.get("to") is Array):
			continue
		var from: Array = link.from
		var to: Array = link.to
		if from.size() < 2 or to.size() < 2:
			continue
		var one_way: bool = link.get("two_way", true) == false
		var color := one_way_color if one_way else link_color
		var start := cell_center(Vector2i(int(from[0]), int(from[1])))
		var end := cell_center(Vector2i(int(to[0]), int(to[1])))
		var radius := cell_size * 0.22
		if start.is_equal_approx(end):
			# A link between floors at one spot: a ring around it.
			draw_arc(start, cell_size * 0.4, 0.0, TAU, 24, color, width)
		else:
			draw_line(start, end, color, width)
		for end_index in 2:
			var point := start if end_index == 0 else end
			var on_floor := PathServerPacked.plain_floor(from if end_index == 0 else to)
			if on_floor != floor_shown and floors > 1:
				draw_arc(point, radius, 0.0, TAU, 16, color, width * 0.6)
			elif end_index == 0 or not one_way:
				draw_circle(point, radius, color)
		if one_way and not start.is_equal_approx(end):
			var along := (end - start).normalized()
			var side := along.orthogonal() * cell_size * 0.25
			var back := end - along * cell_size * 0.45
			draw_colored_polygon(PackedVector2Array([end, back + side, back - side]), color)
