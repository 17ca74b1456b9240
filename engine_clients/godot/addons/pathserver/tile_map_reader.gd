class_name PathServerTileMapReader
extends RefCounted
## Turns a [TileMapLayer] into the grid that [method PathServerClient.put_tilemap] uploads:
## one byte per cell (0 blocked, else its terrain cost) and, when a cost is not a whole number
## from 1 to 255, a float32 cost per cell.
##
## A tile is read in this order:
## [br]1. the TileSet's custom data layer [code]walkable[/code] (any type that converts to
## bool; the name is the option [code]walkable_layer[/code]) and [code]cost[/code] (a
## number >= 1; option [code]cost_layer[/code]);
## [br]2. where a tile has no such data, its polygons: a physics (collision) polygon on any
## physics layer makes it blocked, else a navigation polygon makes it walkable;
## [br]3. else the walkable layer's default when the TileSet has that layer (false for a bool
## layer: blocked), walkable when it has none.
## [br]Godot stores a custom data value only where it differs from the layer's default, so a
## tile showing the default ([code]false[/code] for a bool layer, [code]0[/code] for a number)
## counts as having no such data. A walkable tile without a cost has cost 1. Empty cells are
## blocked ([code]empty_walkable[/code]: true makes them walkable, cost 1).
## [br]Tags (kinds of ground, for requests' [code]traversal[/code]): a custom data layer
## [code]tag[/code] (option [code]tag_layer[/code]) of type String names each tile's tag
## ("water", "forest"; empty: untagged), numbered 1, 2, ... in the order of their names among
## all the TileSet's tiles; of type int it holds the tag value (1..255) itself.
##
## The grid covers [method TileMapLayer.get_used_rect] (option [code]rect[/code]: a
## [Rect2i] of layer cells instead); cell (0, 0) of the grid is the rect's top-left tile.
## World space is the layer's global coordinates: [code]origin[/code] is that tile's top-left
## corner and [code]cell_size[/code] the tile size times the layer's scale, so positions of
## nodes beside the layer go straight into path requests. Square tiles must be squares; a
## rotated, skewed or unevenly scaled layer is refused with an error saying so.
## [br]Hexagon tiles ([constant TileSet.TILE_SHAPE_HEXAGON], any tile size, every layout)
## make a hex map ([code]shape[/code] "hex"): its [code]layout[/code] is the wire's
## ("odd-r", "even-r" for [constant TileSet.TILE_OFFSET_AXIS_HORIZONTAL], "odd-q", "even-q"
## for vertical), [code]cell_size[/code] a [Vector2] (the tile size times the layer's scale,
## which may differ on the two axes) and [code]origin[/code] such that the world centre of
## grid cell c is [code]origin + PathServerHexes.center(layout, c) * cell_size[/code], exactly
## where the layer draws its tile. Stacked layouts map layer cells to grid cells by a
## translation, as square tiles do (the rect's first row or column decides odd or even);
## the stairs and diamond layouts are converted through axial coordinates, the grid then
## covering the rect's cells with blocked cells around them. [code]mapping[/code] converts
## cells either way ([method Mapping.to_grid], [method Mapping.to_layer]).
## Other tile shapes, and a rotated or skewed hex layer, are refused.
## [br]Several layers make a map of several floors ([method read_floors]): one layer a floor,
## floor 0 first, each read as above over the same rect of layer cells (the union of their
## used rects), one after the other in [code]cells[/code] (and [code]costs[/code],
## [code]tags[/code]); the layers must lie on one another (the same transform and tile
## geometry), as a building's storeys seen from above do.
## [codeblock]
## var grid := PathServerTileMapReader.read($Ground)
## if grid.error != "":
##     push_error(grid.error)
## else:
##     print(grid.size, " ", grid.cells.count(0), " blocked cells")
## [/codeblock]

## The option names [method read] knows, with their defaults.
const OPTIONS := {
	"walkable_layer": "walkable",
	"cost_layer": "cost",
	"empty_walkable": false,
	"tag_layer": "tag",
	"rect": null,
}
## [member TileMapLayer.tile_map_data]'s layout this reader decodes directly (a 2-byte
## format number, then 12 bytes a cell); any other format is read cell by cell instead.
const DATA_FORMAT := 0
const DATA_HEADER := 2
const DATA_CELL := 12
## The most floors a map has (the server's bound).
const MAX_FLOORS := 16


## Reads [param layer]. Returns a Dictionary: [code]error[/code] ("" when it worked, else why
## not) and [code]at[/code] (the option or "layer" the error is about); on success
## [code]rect[/code] (the layer cells covered), [code]size[/code] ([Vector2i] width, height),
## [code]cells[/code] ([PackedByteArray], row-major from the top-left, index y * width + x),
## [code]costs[/code] (a [PackedFloat32Array] of the exact costs, 0 on blocked cells; empty
## when every cost is a whole number from 1 to 255, which [code]cells[/code] then holds),
## [code]origin[/code] ([Vector2]) and [code]cell_size[/code] (float; a [Vector2] on hex
## maps); [code]shape[/code] ("square" or "hex"), [code]layout[/code] ("" on square maps),
## [code]mapping[/code] (a [PathServerTileMapReader.Mapping]: layer cells <-> grid cells);
## with a tag layer, [code]tags[/code] ([PackedByteArray], a byte a cell, 0 untagged; else
## empty) and [code]tag_names[/code] ([code]{name: value}[/code], empty for an int layer).
static func read(layer: TileMapLayer, options := {}) -> Dictionary:
	var unknown := options.keys().filter(func(key: Variant) -> bool: return not OPTIONS.has(key))
	if not unknown.is_empty():
		return _error("unknown option %s; known: %s" % [unknown[0], OPTIONS.keys()], unknown[0])
	if layer == null:
		return _error("no TileMapLayer given", "layer")
	var geometry := layer_geometry(layer)
	if geometry.error != "":
		return geometry
	var rect: Rect2i = (
		options.get("rect") if options.get("rect") is Rect2i else layer.get_used_rect()
	)
	if rect.size.x <= 0 or rect.size.y <= 0:
		return _error(
			"the TileMapLayer '%s' has no tiles (and no rect was given)" % layer.name, "layer"
		)
	var mapping := Mapping.new(layer.tile_set, rect)
	var rules := Rules.new(layer.tile_set, options)
	var tags := PackedByteArray()
	if rules.has_tags():
		tags.resize(mapping.size.x * mapping.size.y)
	var values := _read_values(layer, mapping, rules, tags)
	var whole := true
	for value: float in rules.values_seen:
		whole = whole and (value == 0.0 or (value == roundf(value) and value <= 255.0))
	# Whole values are bytes already: converted by the engine, without a loop in GDScript.
	var cells := PackedByteArray(Array(values)) if whole else _bytes_of(values)
	var transform: Transform2D = geometry.transform
	var origin := transform * Vector2(rect.position * layer.tile_set.tile_size)
	if mapping.shape == "hex":
		# Where the layer draws grid cell (0, 0), less its centre in the wire's convention.
		origin = (
			transform
			* (
				layer.map_to_local(mapping.to_layer(Vector2i.ZERO))
				- (
					PathServerHexes.center(mapping.layout, Vector2i.ZERO)
					* Vector2(layer.tile_set.tile_size)
				)
			)
		)
	return {
		"error": "",
		"at": null,
		"rect": rect,
		"size": mapping.size,
		"cells": cells,
		"costs": PackedFloat32Array() if whole else values,
		"origin": origin,
		"cell_size": geometry.cell_size,
		"shape": mapping.shape,
		"layout": mapping.layout,
		"mapping": mapping,
		"tags": tags,
		"tag_names": rules.tag_names,
	}


## Reads [param layers], a [TileMapLayer] or an Array of them (the floors, floor 0 first), as
## one map: [method read]'s Dictionary for the rect covering every layer's used cells (or
## [code]rect[/code]), with [code]floors[/code] (the number of layers) and [code]cells[/code],
## [code]costs[/code] and [code]tags[/code] holding one layer of [code]size[/code] a floor,
## floor 0 first. An error (at "layer") when the layers do not lie on one another (another
## transform, tile shape, size or layout), or their tag layers name tags differently.
static func read_floors(layers: Variant, options := {}) -> Dictionary:
	if layers == null or layers is TileMapLayer:
		var one := read(layers, options)
		one["floors"] = 1
		return one
	if not layers is Array or layers.is_empty() or layers.size() > MAX_FLOORS:
		return _error("give 1 to %d TileMapLayers, floor 0 first" % MAX_FLOORS, "layer")
	var first: Variant = layers[0]
	var rect := Rect2i()
	for i in layers.size():
		var layer: Variant = layers[i]
		if not layer is TileMapLayer:
			return _error("floor %d is not a TileMapLayer" % i, "layer")
		var geometry := layer_geometry(layer)
		if geometry.error != "":
			return geometry
		if i > 0 and not _lie_on_one_another(first, layer):
			return _error(
				(
					(
						"the TileMapLayers '%s' and '%s' are floors of one map: they need the "
						+ "same transform and tile shape, size and layout"
					)
					% [first.name, layer.name]
				),
				"layer"
			)
		var used: Rect2i = layer.get_used_rect()
		if used.has_area():
			rect = used if not rect.has_area() else rect.merge(used)
	var per_floor := options.duplicate()
	if not options.get("rect") is Rect2i:
		if not rect.has_area():
			return _error("the TileMapLayers have no tiles (and no rect was given)", "layer")
		per_floor["rect"] = rect
	var reads := []
	for layer: TileMapLayer in layers:
		var grid := read(layer, per_floor)
		if grid.error != "":
			return grid
		if not reads.is_empty() and grid.tag_names != reads[0].tag_names:
			return _error(
				(
					"the floors' TileSets name their tags differently: %s, %s"
					% [reads[0].tag_names, grid.tag_names]
				),
				"layer"
			)
		reads.append(grid)
	return _stack(reads)


## The value of one layer cell as the grid holds it: 0.0 blocked, else its cost.
static func cell_value(layer: TileMapLayer, coords: Vector2i, rules: Rules) -> float:
	return rules.value_of(
		layer.get_cell_source_id(coords),
		layer.get_cell_atlas_coords(coords),
		layer.get_cell_alternative_tile(coords)
	)


## The layer's world transform and cell size, or an error when its tiles are not squares
## aligned with the world axes, or hexagons along them.
static func layer_geometry(layer: TileMapLayer) -> Dictionary:
	var tile_set := layer.tile_set
	if tile_set == null:
		return _error("the TileMapLayer '%s' has no TileSet" % layer.name, "layer")
	if tile_set.tile_shape == TileSet.TILE_SHAPE_HEXAGON:
		return _hex_geometry(layer)
	if tile_set.tile_shape != TileSet.TILE_SHAPE_SQUARE:
		return _error(
			(
				(
					"only square and hexagon tiles are supported: the TileSet of '%s' has "
					+ "another tile_shape"
				)
				% layer.name
			),
			"layer"
		)
	if tile_set.tile_size.x != tile_set.tile_size.y or tile_set.tile_size.x <= 0:
		return _error(
			(
				"only square tiles are supported: the TileSet of '%s' has tile_size %s"
				% [layer.name, tile_set.tile_size]
			),
			"layer"
		)
	var transform := layer.global_transform if layer.is_inside_tree() else layer.transform
	var scale := transform.get_scale()
	if (
		not is_zero_approx(transform.get_rotation())
		or not is_zero_approx(transform.get_skew())
		or not is_equal_approx(scale.x, scale.y)
		or scale.x <= 0.0
	):
		return _error(
			(
				(
					"the TileMapLayer '%s' must not be rotated, skewed or unevenly scaled: "
					+ "grid cells are squares along the world axes"
				)
				% layer.name
			),
			"layer"
		)
	return {"error": "", "transform": transform, "cell_size": tile_set.tile_size.x * scale.x}


## [method layer_geometry] of a layer of hexagon tiles: any tile size, any positive scale.
static func _hex_geometry(layer: TileMapLayer) -> Dictionary:
	var transform := layer.global_transform if layer.is_inside_tree() else layer.transform
	var scale := transform.get_scale()
	if (
		not is_zero_approx(transform.get_rotation())
		or not is_zero_approx(transform.get_skew())
		or scale.x <= 0.0
		or scale.y <= 0.0
	):
		return _error(
			(
				(
					"the TileMapLayer '%s' must not be rotated, skewed or flipped: hex maps "
					+ "have their rows and columns along the world axes"
				)
				% layer.name
			),
			"layer"
		)
	return {
		"error": "", "transform": transform, "cell_size": Vector2(layer.tile_set.tile_size) * scale
	}


## Reads each cell's value and, when [param tags] is not empty, its tag.
static func _read_values(
	layer: TileMapLayer, mapping: Mapping, rules: Rules, tags: PackedByteArray
) -> PackedFloat32Array:
	var rect := mapping.rect
	var values := PackedFloat32Array()
	values.resize(mapping.size.x * mapping.size.y)
	values.fill(rules.empty_value)
	if not mapping.is_translation and rules.empty_value != 0.0:
		# Grid cells around a stairs or diamond layer's rect: no layer cell was read there.
		for i in values.size():
			if not rect.has_point(
				mapping.to_layer(Vector2i(i % mapping.size.x, i / mapping.size.x))
			):
				values[i] = 0.0
	var data := layer.tile_map_data
	if data.size() < DATA_HEADER or data.decode_u16(0) != DATA_FORMAT:
		# An unknown layout (a later Godot): ask the layer for each used cell instead.
		for coords: Vector2i in layer.get_used_cells():
			if rect.has_point(coords):
				var at := mapping.to_grid(coords)
				values[at.y * mapping.size.x + at.x] = cell_value(layer, coords, rules)
				if not tags.is_empty():
					tags[at.y * mapping.size.x + at.x] = rules.tag_of(
						layer.get_cell_source_id(coords),
						layer.get_cell_atlas_coords(coords),
						layer.get_cell_alternative_tile(coords)
					)
		return values
	# Each cell is three little-endian int32s: x | y << 16, source | atlas.x << 16,
	# atlas.y | alternative << 16 (x and y signed 16-bit, the rest unsigned).
	var words := data.slice(DATA_HEADER).to_int32_array()
	var left := rect.position.x
	var top := rect.position.y
	var right := rect.end.x
	var bottom := rect.end.y
	var width := mapping.size.x
	var translation := mapping.is_translation
	var tile_values := rules.tile_values
	var tile_tags := rules.tile_tags
	var tagged := not tags.is_empty()
	for i in range(0, words.size(), 3):
		var position := words[i]
		var x := ((position & 0xFFFF) ^ 0x8000) - 0x8000
		var y := position >> 16
		if x < left or x >= right or y < top or y >= bottom:
			continue
		var key := (words[i + 1] << 32) | (words[i + 2] & 0xFFFFFFFF)
		var value: Variant = tile_values.get(key)
		if value == null:
			value = rules.value_of_words(words[i + 1], words[i + 2])
			tile_values[key] = value
			if tagged:
				tile_tags[key] = rules.tag_of_words(words[i + 1], words[i + 2])
		var index := (y - top) * width + x - left
		if not translation:
			var at := mapping.to_grid(Vector2i(x, y))
			index = at.y * width + at.x
		values[index] = value
		if tagged:
			tags[index] = tile_tags[key]
	return values


## The cell bytes of [param values]: 0 blocked, else the cost rounded to the nearest whole
## number, clamped to 1..255 (as the server's get_map reports them).
static func _bytes_of(values: PackedFloat32Array) -> PackedByteArray:
	var bytes := PackedByteArray()
	bytes.resize(values.size())
	for i in values.size():
		var value := values[i]
		bytes[i] = 0 if value <= 0.0 else clampi(roundi(value), 1, 255)
	return bytes


## [param reads] (one [method read] a floor, over one rect) as one map's grid.
static func _stack(reads: Array) -> Dictionary:
	var stacked: Dictionary = reads[0].duplicate()
	var exact := reads.any(func(grid: Dictionary) -> bool: return not grid.costs.is_empty())
	var tagged := reads.any(func(grid: Dictionary) -> bool: return not grid.tags.is_empty())
	var cells := PackedByteArray()
	var costs := PackedFloat32Array()
	var tags := PackedByteArray()
	for grid: Dictionary in reads:
		cells.append_array(grid.cells)
		if exact:
			# A floor of whole costs: its bytes are its costs (0 where blocked).
			costs.append_array(
				grid.costs if not grid.costs.is_empty() else PackedFloat32Array(Array(grid.cells))
			)
		if tagged:
			var floor_tags: PackedByteArray = grid.tags
			if floor_tags.is_empty():
				floor_tags.resize(grid.cells.size())
			tags.append_array(floor_tags)
	stacked["cells"] = cells
	stacked["costs"] = costs
	stacked["tags"] = tags
	stacked["floors"] = reads.size()
	return stacked


## Whether two layers draw their cells on the same spots of the world.
static func _lie_on_one_another(first: TileMapLayer, other: TileMapLayer) -> bool:
	var one := first.tile_set
	var two := other.tile_set
	var first_transform := first.global_transform if first.is_inside_tree() else first.transform
	var other_transform := other.global_transform if other.is_inside_tree() else other.transform
	return (
		first_transform.is_equal_approx(other_transform)
		and one.tile_shape == two.tile_shape
		and one.tile_size == two.tile_size
		and one.tile_layout == two.tile_layout
		and one.tile_offset_axis == two.tile_offset_axis
	)


static func _error(message: String, at: Variant) -> Dictionary:
	return {"error": message, "at": at}


## Where the read layer cells are on the grid, and back: grid cell = layer cell - the rect's
## position for square tiles and stacked hexagon layouts; through axial coordinates for the
## stairs and diamond ones.
class Mapping:
	extends RefCounted

	## "square" or "hex".
	var shape := "square"
	## The grid's wire layout on hex maps ("odd-r", ...), else "".
	var layout := ""
	## The layer cells read.
	var rect := Rect2i()
	## The grid's width and height.
	var size := Vector2i.ZERO
	## True when grid cell = layer cell - [member offset].
	var is_translation := true
	## The layer cell (or, through axial coordinates, the cell of the base layout) that is grid
	## cell (0, 0).
	var offset := Vector2i.ZERO
	var _tile_layout := TileSet.TILE_LAYOUT_STACKED
	var _offset_axis := TileSet.TILE_OFFSET_AXIS_HORIZONTAL
	var _base := ""

	func _init(tile_set: TileSet, layer_rect: Rect2i) -> void:
		rect = layer_rect
		offset = rect.position
		size = rect.size
		if tile_set.tile_shape != TileSet.TILE_SHAPE_HEXAGON:
			return
		shape = "hex"
		_tile_layout = tile_set.tile_layout
		_offset_axis = tile_set.tile_offset_axis
		_base = PathServerHexes.base_layout(_tile_layout, _offset_axis)
		is_translation = (
			_tile_layout == TileSet.TILE_LAYOUT_STACKED
			or _tile_layout == TileSet.TILE_LAYOUT_STACKED_OFFSET
		)
		if not is_translation:
			# The corners bound the base layout's cells: its offset coordinates are floors of
			# linear functions of the layer's.
			var last := rect.end - Vector2i.ONE
			var low := _base_cell(rect.position)
			var high := low
			for corner: Vector2i in [
				Vector2i(last.x, rect.position.y), Vector2i(rect.position.x, last.y), last
			]:
				low = low.min(_base_cell(corner))
				high = high.max(_base_cell(corner))
			offset = low
			size = high - low + Vector2i.ONE
		# A grid starting on a shoved row (column) of the base layout has the other parity.
		var first := offset.y if PathServerHexes.is_pointy(_base) else offset.x
		layout = _base if first & 1 == 0 else PathServerHexes.flipped(_base)

	## The grid cell of layer cell [param coords] (maybe outside the grid).
	func to_grid(coords: Vector2i) -> Vector2i:
		if is_translation:
			return coords - offset
		return _base_cell(coords) - offset

	## The layer cell of grid cell [param cell].
	func to_layer(cell: Vector2i) -> Vector2i:
		if is_translation:
			return cell + offset
		return PathServerHexes.axial_to_layer(
			_tile_layout, _offset_axis, PathServerHexes.to_axial(_base, cell + offset)
		)

	func _base_cell(coords: Vector2i) -> Vector2i:
		return PathServerHexes.from_axial(
			_base, PathServerHexes.layer_to_axial(_tile_layout, _offset_axis, coords)
		)


## How tiles become values, with a cache per tile: built once per read.
class Rules:
	extends RefCounted

	## The value of an empty cell.
	var empty_value := 0.0
	## Every value a tile gave so far (to know whether bytes can hold them all).
	var values_seen := {}
	## Tile key (the two int32 words of the layer's data) -> value.
	var tile_values := {}
	## Tile key -> tag (when the TileSet has a tag layer).
	var tile_tags := {}
	## Tag name -> value, for a String tag layer.
	var tag_names := {}
	var _tile_set: TileSet
	var _walkable_id := -1
	var _walkable_default: Variant = null
	var _cost_id := -1
	var _cost_default: Variant = null
	var _tag_id := -1

	func _init(tile_set: TileSet, options: Dictionary) -> void:
		_tile_set = tile_set
		empty_value = 1.0 if options.get("empty_walkable", false) else 0.0
		values_seen[empty_value] = true
		var walkable_layer: String = options.get("walkable_layer", OPTIONS.walkable_layer)
		var cost_layer: String = options.get("cost_layer", OPTIONS.cost_layer)
		_walkable_id = tile_set.get_custom_data_layer_by_name(walkable_layer)
		if _walkable_id >= 0:
			_walkable_default = type_convert(
				null, tile_set.get_custom_data_layer_type(_walkable_id)
			)
		_cost_id = tile_set.get_custom_data_layer_by_name(cost_layer)
		if _cost_id >= 0:
			_cost_default = type_convert(null, tile_set.get_custom_data_layer_type(_cost_id))
		_tag_id = tile_set.get_custom_data_layer_by_name(
			options.get("tag_layer", OPTIONS.tag_layer)
		)
		if _tag_id >= 0 and tile_set.get_custom_data_layer_type(_tag_id) == TYPE_STRING:
			_number_tag_names()

	## True when the TileSet has the tag layer.
	func has_tags() -> bool:
		return _tag_id >= 0

	## The tag of a cell holding this tile: 0 untagged.
	func tag_of(source_id: int, atlas_coords: Vector2i, alternative: int) -> int:
		var tile_data := _tile_data(source_id, atlas_coords, alternative)
		if _tag_id < 0 or tile_data == null:
			return 0
		var tag: Variant = tile_data.get_custom_data_by_layer_id(_tag_id)
		if tag is String or tag is StringName:
			return tag_names.get(str(tag), 0)
		return clampi(int(tag), 0, 255) if tag is int or tag is float else 0

	## [method tag_of] from the two tile words of [member TileMapLayer.tile_map_data].
	func tag_of_words(first: int, second: int) -> int:
		var source := first & 0xFFFF
		if source == 0xFFFF:
			return 0
		return tag_of(
			source, Vector2i((first >> 16) & 0xFFFF, second & 0xFFFF), (second >> 16) & 0xFFFF
		)

	## Numbers the tag names of every tile of the TileSet, in the order of the names, so that
	## a name keeps its value whichever tiles the layer uses.
	func _number_tag_names() -> void:
		var names := {}
		for s in _tile_set.get_source_count():
			var source := _tile_set.get_source(_tile_set.get_source_id(s)) as TileSetAtlasSource
			if source == null:
				continue
			for t in source.get_tiles_count():
				var coords := source.get_tile_id(t)
				for a in source.get_alternative_tiles_count(coords):
					var data := source.get_tile_data(
						coords, source.get_alternative_tile_id(coords, a)
					)
					var tag := str(data.get_custom_data_by_layer_id(_tag_id))
					if tag != "":
						names[tag] = true
		var sorted := names.keys()
		sorted.sort()
		for i in mini(sorted.size(), 255):
			tag_names[sorted[i]] = i + 1

	func _tile_data(source_id: int, atlas_coords: Vector2i, alternative: int) -> TileData:
		if source_id < 0 or not _tile_set.has_source(source_id):
			return null
		var source := _tile_set.get_source(source_id) as TileSetAtlasSource
		if (
			source == null
			or not source.has_tile(atlas_coords)
			or not source.has_alternative_tile(atlas_coords, alternative)
		):
			return null
		return source.get_tile_data(atlas_coords, alternative)

	## The value of a cell holding this tile (source -1: an empty cell).
	func value_of(source_id: int, atlas_coords: Vector2i, alternative: int) -> float:
		var value := empty_value
		if source_id >= 0:
			var source := (
				_tile_set.get_source(source_id) if _tile_set.has_source(source_id) else null
			)
			var tile_data: TileData = null
			if (
				source is TileSetAtlasSource
				and source.has_tile(atlas_coords)
				and source.has_alternative_tile(atlas_coords, alternative)
			):
				tile_data = source.get_tile_data(atlas_coords, alternative)
			value = _tile_value(tile_data)
		values_seen[value] = true
		return value

	## [method value_of] for a cell of [member TileMapLayer.tile_map_data], from its two
	## tile words.
	func value_of_words(first: int, second: int) -> float:
		var source := first & 0xFFFF
		if source == 0xFFFF:
			# A cell erased this frame, removed from the data at the layer's next update.
			return value_of(-1, Vector2i(-1, -1), -1)
		return value_of(
			source, Vector2i((first >> 16) & 0xFFFF, second & 0xFFFF), (second >> 16) & 0xFFFF
		)

	func _tile_value(tile_data: TileData) -> float:
		if tile_data == null:
			# A cell pointing at a tile its TileSet does not have (a scene tile, a removed
			# tile): nothing to stand on.
			return 0.0
		var walkable: Variant = null
		var stated: Variant = null
		if _walkable_id >= 0:
			stated = tile_data.get_custom_data_by_layer_id(_walkable_id)
			if stated != null and stated != _walkable_default:
				walkable = bool(stated)
		if walkable == null:
			if _has_collision(tile_data):
				walkable = false
			elif _has_navigation(tile_data):
				walkable = true
			elif _walkable_id >= 0:
				walkable = bool(stated) if stated != null else false
			else:
				walkable = true
		if not walkable:
			return 0.0
		if _cost_id >= 0:
			var cost: Variant = tile_data.get_custom_data_by_layer_id(_cost_id)
			if (cost is float or cost is int) and cost != _cost_default:
				# A cost below 1 goes to the server as it is, which refuses it (at "costs").
				return float(cost)
		return 1.0

	func _has_collision(tile_data: TileData) -> bool:
		for layer in _tile_set.get_physics_layers_count():
			if tile_data.get_collision_polygons_count(layer) > 0:
				return true
		return false

	func _has_navigation(tile_data: TileData) -> bool:
		for layer in _tile_set.get_navigation_layers_count():
			if tile_data.get_navigation_polygon(layer) != null:
				return true
		return false
