class_name PathServerTileMapSync
extends Node
## Keeps a map on the server equal to a [TileMapLayer]: uploads the layer when ready
## ([method PathServerClient.put_tilemap]) and sends the tiles changed at runtime as
## [code]update[/code]s, the changes of one frame together. Opt-in: add it as a child of the
## layer (or set [member layer]). Agents on the map ask again for their paths when an edit
## lands (its new generation emits [signal PathServerClient.map_generation_changed]).
##
## How edits are found: Godot 4.6's [TileMapLayer] emits [signal TileMapLayer.changed] for
## its properties and its TileSet, not for [method TileMapLayer.set_cell]. So with
## [member watch] on, each frame (or every [member watch_interval] seconds) this node compares
## the layer's [member TileMapLayer.tile_map_data] with the last one it saw (done by the
## engine) and, when they differ, decodes only the stretches of it that differ. A
## [signal TileMapLayer.changed] (a TileSet edited, ...) uploads the layer again. With
## [member watch] off, report edits yourself: edit through [method set_cell] /
## [method erase_cell] here, or call [method mark_cells_changed] — for instance from
## [method TileMapLayer._update_cells], the virtual Godot 4.6 calls with the coordinates of
## the cells changed since the layer's last update, which only a script on the layer itself
## can override.
##
## One batch is in flight at a time, so edits land in the order they were made; each
## [code]update[/code] carries [code]if_gen[/code], the generation this node last saw: if
## someone else changed the map meanwhile (or the server restarted and forgot it), the layer
## is uploaded again. A change outside the uploaded rectangle (the layer grew) uploads it
## again too. Tags are read at each upload (an edit that changes only a tile's tag is not
## sent); heights are not synced; a moved layer needs [method upload]. A layer of hexagon
## tiles makes a hex map (see [PathServerTileMapReader]); [method to_grid_cell] and
## [method to_layer_cell] convert cells between the layer and the server's grid, which for
## the stairs and diamond layouts is more than a translation.
##
## Several floors: set [member floor_layers] to the layers, floor 0 first (they must lie on one
## another; see [method PathServerTileMapReader.read_floors]); each is watched, and an edit
## on floor f goes as the cells [code][x, y, f][/code]. Links: the [PathServerLink2D] nodes
## of the map (its name, or an empty [member PathServerLink2D.map_name] for the client's
## map) go with each upload, and when one of them changes (or one comes or goes) the whole
## list goes again as an [code]update[/code] with [code]links[/code], in turn with the edits.
## [codeblock]
## # As a child of the TileMapLayer "Ground":
## var sync := PathServerTileMapSync.new()
## sync.map_name = "level"
## $Ground.add_child(sync)
## await sync.uploaded
## $Ground.set_cell(Vector2i(4, 2), 0, WALL)  # sent as an update at the end of the frame
## [/codeblock]

## The layer was uploaded (the first time, or again); [param gen] is the map's generation.
signal uploaded(gen: int)
## A batch of edits landed on the server: [param cells] cells changed, the map is now at
## [param gen].
signal synced(gen: int, cells: int)
## The map's links went to the server (with an upload, or as an update): [param count]
## links, the map now at [param gen].
signal links_synced(gen: int, count: int)
## An upload or an edit failed ([param code] as in [PathServerResult]). A failed edit, or an
## upload that may work later (a timeout), is tried again (as an upload) after
## [member retry_interval] seconds; an upload the server refused waits for [method upload] or
## a change of the layer's TileSet.
signal sync_failed(code: String, message: String)

## The most cells one [code]update[/code] request carries (the server reads at most 1 MiB a
## request; a cell takes at most 11 bytes).
const MAX_CELLS_PER_UPDATE := 65536

## The layer to upload; the parent when not set and the parent is a [TileMapLayer]. With
## [member floor_layers], floor 0's.
@export var layer: TileMapLayer
## The floors of a map of several, floor 0 first; empty: [member layer] alone, one floor.
@export var floor_layers: Array[TileMapLayer] = []
## Upload the map's [PathServerLink2D] nodes with it, and keep them in sync.
@export var sync_links := true
## The name of the uploaded map; empty: the client's [member PathServerClient.map_name].
@export var map_name := ""
## The custom data layer that says whether a tile is walkable (see [PathServerTileMapReader]).
@export var walkable_layer := "walkable"
## The custom data layer holding a tile's terrain cost.
@export var cost_layer := "cost"
## Empty cells are walkable (cost 1) instead of blocked.
@export var empty_walkable := false
## Look for edits by comparing the layer's data (see the class description).
@export var watch := true
## The custom data layer holding a tile's tag (see [PathServerTileMapReader]), uploaded with
## the map for requests' [code]traversal[/code].
@export var tag_layer := "tag"
## The map's unit classes, uploaded with it ([code]{"boat": {"land": null}}[/code]; see
## [method PathServerClient.put_grid]).
@export var classes := {}
## Seconds between two looks; 0: every frame.
@export var watch_interval := 0.0
## Seconds before an upload or edit that failed is tried again.
@export var retry_interval := 1.0

## The client to use; the [code]PathServer[/code] autoload when not set.
var client: PathServerClient
## The map's generation after the last upload or edit this node made; -1 before the upload.
var gen := -1
## The layer cells the uploaded map covers.
var rect := Rect2i()
## Layer cells <-> the uploaded grid's cells (null before the upload).
var mapping: PathServerTileMapReader.Mapping
## The map's floors as uploaded.
var floors := 1
## The link nodes whose links the server has, in the map's order (a path's link k is
## [code]links[k][/code]), and those links as sent.
var links: Array = []
var wire_links: Array = []

## The value of each uploaded cell as the server has it (0 blocked, else the cost).
var _values := PackedFloat32Array()
## Each floor's layer data as last seen.
var _snapshots: Array[PackedByteArray] = []
## Cells to compare with the server's, as Vector3i(x, y, floor) of layer cells.
var _dirty := {}
var _links_dirty := false
var _busy := false
var _upload_wanted := true
var _retry_at_ms := 0
var _next_look_ms := 0
## Each floor's rules.
var _rules: Array[PathServerTileMapReader.Rules] = []


func _ready() -> void:
	if layer == null and not floor_layers.is_empty():
		layer = floor_layers[0]
	if layer == null:
		layer = get_parent() as TileMapLayer
	if client == null:
		client = get_node_or_null("/root/PathServer") as PathServerClient
	if layer == null or client == null:
		push_error(
			"PathServerTileMapSync: %s" % ("no client" if layer else "no TileMapLayer to sync")
		)
		set_process(false)
		return
	for each in get_layers():
		each.changed.connect(_on_layer_changed)
	client.connected.connect(_on_connected)
	# Links come and go with the nodes of the tree; each says when it changes.
	get_tree().node_added.connect(_watch_link)
	for node in get_tree().get_nodes_in_group(PathServerLink2D.GROUP):
		_watch_link(node)


func _process(_delta: float) -> void:
	var now := Time.get_ticks_msec()
	if watch and gen >= 0 and now >= _next_look_ms:
		_next_look_ms = now + int(watch_interval * 1000.0)
		_look_for_edits()
	if _busy or now < _retry_at_ms:
		return
	if _upload_wanted:
		upload()
	elif not _dirty.is_empty():
		_send_edits()
	elif _links_dirty and gen >= 0:
		_send_links()


## The map's name on the server.
func get_map_name() -> String:
	return map_name if map_name != "" else client.map_name


## The layers uploaded, floor 0 first: [member floor_layers], else [member layer].
func get_layers() -> Array[TileMapLayer]:
	if not floor_layers.is_empty():
		return floor_layers
	var one: Array[TileMapLayer] = [layer]
	return one


## True once the layer is uploaded and every edit seen so far has landed.
func is_synced() -> bool:
	return gen >= 0 and not _busy and not _upload_wanted and _dirty.is_empty() and not _links_dirty


## Uploads the whole layer now (the node does it by itself when ready, when the layer grows,
## after a conflict and after a reconnect). Returns the result of the upload.
func upload() -> PathServerResult:
	_busy = true
	_upload_wanted = false
	_dirty.clear()
	var options := {
		"walkable_layer": walkable_layer,
		"cost_layer": cost_layer,
		"empty_walkable": empty_walkable,
		"tag_layer": tag_layer,
	}
	var layers := get_layers()
	var grid := PathServerTileMapReader.read_floors(
		layers if layers.size() > 1 else layers[0], options
	)
	var result: PathServerResult
	var sent_links := []
	var link_nodes := []
	_links_dirty = false
	if grid.error != "":
		result = await client.put_tilemap_async(get_map_name(), layers, options)
	else:
		var put_options := {}
		PathServerRequests.add_grid_options(put_options, grid)
		if not classes.is_empty():
			put_options["classes"] = classes
		if sync_links:
			link_nodes = PathServerLink2D.of_map(get_tree(), get_map_name(), client)
			sent_links = _wire_links_of(link_nodes, grid.mapping)
			if not sent_links.is_empty():
				put_options["links"] = sent_links
				PathServerRequests.name_link_tags(put_options, grid.cells.size())
		_snapshots.clear()
		for each in layers:
			_snapshots.append(each.tile_map_data)
		result = await client.put_grid_async(get_map_name(), grid.size, grid.cells, put_options)
	_busy = false
	if not result.ok:
		# A timeout is worth another try; a refusal (a map file's name, a layer that cannot be
		# read) comes back until the layer or the settings change.
		_on_failed(result, result.retryable)
		return result
	rect = grid.rect
	mapping = grid.mapping
	floors = grid.floors
	_values = _values_of(grid)
	_rules.clear()
	for each in layers:
		_rules.append(PathServerTileMapReader.Rules.new(each.tile_set, options))
	links = link_nodes
	wire_links = sent_links
	gen = result.info.gen
	uploaded.emit(gen)
	if sync_links:
		links_synced.emit(gen, wire_links.size())
	return result


## The grid cell of the world point [param point] (after the upload): the cell a link's end
## or a unit stands on.
func world_to_grid_cell(point: Vector2) -> Vector2i:
	return mapping.to_grid(layer.local_to_map(layer.to_local(point)))


## Queues the map's links to be sent again (done by itself when a [PathServerLink2D]
## changes, comes or goes).
func mark_links_changed() -> void:
	_links_dirty = true


## The server's grid cell of layer cell [param coords] (after the upload; it may lie outside
## the grid).
func to_grid_cell(coords: Vector2i) -> Vector2i:
	return mapping.to_grid(coords)


## The layer cell of the server's grid cell [param cell] (after the upload), e.g. of a path
## asked in grid space or of a [code]reachable[/code] answer.
func to_layer_cell(cell: Vector2i) -> Vector2i:
	return mapping.to_layer(cell)


## Queues cells (layer coordinates: [Vector2i] on floor 0, or [Vector3i] with the floor) to be
## compared with the server's map and sent if they differ: for edits made while [member watch]
## is off.
func mark_cells_changed(cells: Array) -> void:
	for coords: Variant in cells:
		_dirty[_on_floor(coords)] = true


## [method TileMapLayer.set_cell] on the synced layer (of [param on_floor]), and the cell
## queued to be sent.
func set_cell(
	coords: Vector2i,
	source_id := -1,
	atlas_coords := Vector2i(-1, -1),
	alternative_tile := 0,
	on_floor := 0
) -> void:
	get_layers()[on_floor].set_cell(coords, source_id, atlas_coords, alternative_tile)
	_dirty[Vector3i(coords.x, coords.y, on_floor)] = true


## [method TileMapLayer.erase_cell] on the synced layer (of [param on_floor]), and the cell
## queued to be sent.
func erase_cell(coords: Vector2i, on_floor := 0) -> void:
	get_layers()[on_floor].erase_cell(coords)
	_dirty[Vector3i(coords.x, coords.y, on_floor)] = true


static func _on_floor(coords: Variant) -> Vector3i:
	if coords is Vector3i:
		return coords
	return Vector3i(coords.x, coords.y, 0)


func _look_for_edits() -> void:
	var layers := get_layers()
	for i in mini(layers.size(), _snapshots.size()):
		_look_for_edits_on(layers[i], i)


func _look_for_edits_on(floor_layer: TileMapLayer, on_floor: int) -> void:
	var data := floor_layer.tile_map_data
	var snapshot := _snapshots[on_floor]
	if data == snapshot:
		return
	# Cells are 12-byte records in the layer's own order; an edited tile keeps its place, a
	# new one is appended, an erased one shifts the rest. A record that changed is in a chunk
	# that differs on one side or the other, so the cells of those chunks are all that need
	# a look.
	var header := PathServerTileMapReader.DATA_HEADER
	var record := PathServerTileMapReader.DATA_CELL
	var known := (
		data.size() >= header
		and data.decode_u16(0) == PathServerTileMapReader.DATA_FORMAT
		and (snapshot.is_empty() or snapshot.decode_u16(0) == PathServerTileMapReader.DATA_FORMAT)
	)
	if not known:
		_upload_wanted = true
		_snapshots[on_floor] = data
		return
	var chunk := record * 256
	var end := maxi(data.size(), snapshot.size())
	for start in range(header, end, chunk):
		var now_part := data.slice(start, start + chunk)
		var before_part := snapshot.slice(start, start + chunk)
		if now_part != before_part:
			_mark_records(now_part, before_part, on_floor)
	_snapshots[on_floor] = data


## Marks the cells of the records that differ between two chunks of layer data (a record
## missing on one side differs).
func _mark_records(now_part: PackedByteArray, before_part: PackedByteArray, on_floor: int) -> void:
	var record := PathServerTileMapReader.DATA_CELL
	var now_words := now_part.to_int32_array()
	var before_words := before_part.to_int32_array()
	for i in range(0, maxi(now_words.size(), before_words.size()), record / 4):
		var now_cell := _record_cell(now_words, i)
		var before_cell := _record_cell(before_words, i)
		if (
			now_cell != before_cell
			or now_words[i + 1] != before_words[i + 1]
			or now_words[i + 2] != before_words[i + 2]
		):
			if now_cell != null:
				_dirty[Vector3i(now_cell.x, now_cell.y, on_floor)] = true
			if before_cell != null:
				_dirty[Vector3i(before_cell.x, before_cell.y, on_floor)] = true


## The cell of the record at word [param i] (x and y are signed 16-bit), or null past the end.
static func _record_cell(words: PackedInt32Array, i: int) -> Variant:
	if i + 2 >= words.size():
		return null
	return Vector2i(((words[i] & 0xFFFF) ^ 0x8000) - 0x8000, words[i] >> 16)


func _send_edits() -> void:
	# Cells whose value changed, grouped by value: one update (solid, or open with a cost) each.
	var groups := {}
	var changed := 0
	var layers := get_layers()
	var area := mapping.size.x * mapping.size.y
	for dirty: Vector3i in _dirty:
		var coords := Vector2i(dirty.x, dirty.y)
		if dirty.z >= layers.size() or dirty.z >= _rules.size():
			continue
		var rules := _rules[dirty.z]
		var value := PathServerTileMapReader.cell_value(layers[dirty.z], coords, rules)
		if not rect.has_point(coords):
			if value != rules.empty_value:
				# The layer grew: a new rectangle, so a new upload.
				_upload_wanted = true
				_dirty.clear()
				return
			continue
		var at := mapping.to_grid(coords)
		if _values[dirty.z * area + at.y * mapping.size.x + at.x] == value:
			continue
		if not groups.has(value):
			groups[value] = []
		# A map of one floor gets its cells as it always did, [x, y].
		groups[value].append(Vector3i(at.x, at.y, dirty.z) if floors > 1 else at)
		changed += 1
	_dirty.clear()
	if groups.is_empty():
		return
	_busy = true
	for value: float in groups:
		var cells: Array = groups[value]
		for from in range(0, cells.size(), MAX_CELLS_PER_UPDATE):
			var part := cells.slice(from, from + MAX_CELLS_PER_UPDATE)
			var fields := {"cells": part, "solid": true}
			if value > 0.0:
				fields = {"cells": part, "solid": false, "cost": value}
			var result := await client.update_map_async(get_map_name(), fields, gen)
			if not result.ok:
				_busy = false
				# A conflict (another edit), a lost map (a restart), a timeout: the layer is the
				# truth, upload it again.
				_on_failed(result, true)
				return
			gen = result.info.gen
			for at: Variant in part:
				var on_floor: int = at.z if at is Vector3i else 0
				_values[on_floor * area + at.y * mapping.size.x + at.x] = value
	_busy = false
	synced.emit(gen, changed)


## Sends the map's links again, when they differ from those the server has.
func _send_links() -> void:
	_links_dirty = false
	if not sync_links:
		return
	var link_nodes := PathServerLink2D.of_map(get_tree(), get_map_name(), client)
	var now := _wire_links_of(link_nodes, mapping)
	if now == wire_links:
		links = link_nodes
		return
	_busy = true
	var result := await client.update_map_async(get_map_name(), {"links": now}, gen)
	_busy = false
	if result.code == "invalid_request" and result.info.get("at") == "links":
		# A server that takes links only with the map (one with shared state, for now): the
		# upload carries them.
		_upload_wanted = true
		return
	if not result.ok:
		_on_failed(result, true)
		return
	gen = result.info.gen
	links = link_nodes
	wire_links = now
	links_synced.emit(gen, now.size())


func _wire_links_of(link_nodes: Array, cells: PathServerTileMapReader.Mapping) -> Array:
	var to_cell := func(point: Vector2) -> Vector2i:
		return cells.to_grid(layer.local_to_map(layer.to_local(point)))
	var wire := []
	for link: PathServerLink2D in link_nodes:
		wire.append(link.to_wire(to_cell))
	return wire


func _watch_link(node: Node) -> void:
	var link := node as PathServerLink2D
	if link == null:
		return
	if not link.link_changed.is_connected(mark_links_changed):
		link.link_changed.connect(mark_links_changed)
	_links_dirty = true


func _on_failed(result: PathServerResult, upload_again: bool) -> void:
	if upload_again:
		_upload_wanted = true
	_retry_at_ms = Time.get_ticks_msec() + int(retry_interval * 1000.0)
	push_warning(
		(
			"PathServerTileMapSync: syncing '%s' failed: %s: %s"
			% [get_map_name(), result.code, result.message]
		)
	)
	sync_failed.emit(result.code, result.message)


func _on_layer_changed() -> void:
	# The TileSet or the layer's settings: every tile may read differently now.
	if gen >= 0:
		_upload_wanted = true


func _on_connected() -> void:
	# A server that restarted has forgotten the upload; uploading again is cheap and safe.
	if gen >= 0:
		_upload_wanted = true


static func _values_of(grid: Dictionary) -> PackedFloat32Array:
	if not grid.costs.is_empty():
		return grid.costs
	var cells: PackedByteArray = grid.cells
	return PackedFloat32Array(Array(cells))
