extends RefCounted
## Goal cells for a group of units sent to one point, so that they do not all stop on the same
## cell: each unit gets the cell nearest the point, by walking distance, where its footprint
## fits and overlaps no other unit's. Bigger units choose first: they fit in fewer places.

const STEPS: Array[Vector2i] = [Vector2i.RIGHT, Vector2i.DOWN, Vector2i.LEFT, Vector2i.UP]


## The cells a unit of [param size] covers when it stands on [param cell]: columns
## x - (w - 1) / 2 .. x + w / 2, rows likewise (the server's footprint rule).
static func footprint(cell: Vector2i, size: Vector2i) -> Array[Vector2i]:
	var covered: Array[Vector2i] = []
	for dy in range(-((size.y - 1) / 2), size.y / 2 + 1):
		for dx in range(-((size.x - 1) / 2), size.x / 2 + 1):
			covered.append(cell + Vector2i(dx, dy))
	return covered


## One goal cell per unit, in the order of [param sizes] (footprints in cells), around
## [param center]. [param walkable] is a [code]func(cell: Vector2i) -> bool[/code] for one cell.
## Cells are tried in breadth-first order from the centre, so no goal lands behind a wall; at
## most [param search_cells] of them. A unit that finds no place gets the centre (the server
## snaps it to a cell it can stand on).
static func goal_cells(
	center: Vector2i, sizes: Array[Vector2i], walkable: Callable, search_cells := 600
) -> Array[Vector2i]:
	var start := _nearest_walkable(center, walkable)
	var order: Array[Vector2i] = []
	var seen := {start: true}
	var queue: Array[Vector2i] = [start]
	var head := 0
	while head < queue.size() and order.size() < search_cells:
		var cell := queue[head]
		head += 1
		order.append(cell)
		for step in STEPS:
			var next := cell + step
			if not seen.has(next) and walkable.call(next):
				seen[next] = true
				queue.append(next)
	var by_area := range(sizes.size())
	by_area.sort_custom(
		func(a: int, b: int) -> bool: return sizes[a].x * sizes[a].y > sizes[b].x * sizes[b].y
	)
	var goals: Array[Vector2i] = []
	goals.resize(sizes.size())
	goals.fill(start)
	var taken := {}
	for unit: int in by_area:
		for cell in order:
			var covered := footprint(cell, sizes[unit])
			if covered.all(
				func(part: Vector2i) -> bool: return walkable.call(part) and not taken.has(part)
			):
				for part in covered:
					taken[part] = true
				goals[unit] = cell
				break
	return goals


## [param cell] itself when walkable, else the nearest walkable cell within 8 cells (a click
## on a wall), else [param cell].
static func _nearest_walkable(cell: Vector2i, walkable: Callable) -> Vector2i:
	if walkable.call(cell):
		return cell
	for radius in range(1, 9):
		var best := cell
		var best_distance := INF
		for dy in range(-radius, radius + 1):
			for dx in range(-radius, radius + 1):
				var candidate := cell + Vector2i(dx, dy)
				var distance := Vector2(dx, dy).length()
				if distance < best_distance and walkable.call(candidate):
					best = candidate
					best_distance = distance
		if best_distance < INF:
			return best
	return cell
