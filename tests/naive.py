"""Slow, obviously correct references the kernels are checked against.

Plain Python on plain nested loops: no numba, no cleverness, so a reader can check each
one by eye. Grids are numpy arrays indexed [y, x]; points are (x, y).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

SQRT2 = math.sqrt(2.0)


def footprint_cells(x, y, unit_w, unit_h):
    """Cells covered by a unit at (x, y): centred, upper-left of centre for even sizes."""
    left = x - (unit_w - 1) // 2
    top = y - (unit_h - 1) // 2
    return [(cx, cy) for cy in range(top, top + unit_h) for cx in range(left, left + unit_w)]


def passable_for_unit(walkable, unit_w, unit_h):
    """uint8 grid: 1 where every footprint cell is inside the map and walkable."""
    height, width = walkable.shape
    out = np.zeros((height, width), dtype=np.uint8)
    for y in range(height):
        for x in range(width):
            cells = footprint_cells(x, y, unit_w, unit_h)
            if all(0 <= cx < width and 0 <= cy < height and walkable[cy, cx] for cx, cy in cells):
                out[y, x] = 1
    return out


def neighbours(passable, x, y, diagonal="no_corner_cutting", heights=None, max_climb=None):
    height, width = passable.shape
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            if dx == 0 and dy == 0:
                continue
            nx, ny = x + dx, y + dy
            if not (0 <= nx < width and 0 <= ny < height) or not passable[ny, nx]:
                continue
            if dx and dy:
                if diagonal == "never":
                    continue
                if diagonal == "no_corner_cutting" and not (passable[y, nx] and passable[ny, x]):
                    continue
            if heights is not None and max_climb is not None and abs(float(heights[ny, nx]) - float(heights[y, x])) > max_climb:
                continue
            yield nx, ny, (SQRT2 if dx and dy else 1.0)


def dijkstra(passable, start, goal, diagonal="no_corner_cutting", cost=None, heights=None, max_climb=None):
    """The cheapest cost from start to goal, or math.inf. Entering a cell costs the
    step length times that cell's terrain cost."""
    dist = {start: 0.0}
    queue = [(0.0, start)]
    done = set()
    while queue:
        d, (x, y) = heapq.heappop(queue)
        if (x, y) in done:
            continue
        if (x, y) == goal:
            return d
        done.add((x, y))
        for nx, ny, step in neighbours(passable, x, y, diagonal, heights, max_climb):
            nd = d + step * (1.0 if cost is None else float(cost[ny, nx]))
            if nd < dist.get((nx, ny), math.inf):
                dist[(nx, ny)] = nd
                heapq.heappush(queue, (nd, (nx, ny)))
    return math.inf


def path_is_valid(passable, path, diagonal="no_corner_cutting", heights=None, max_climb=None):
    """Every cell passable, consecutive cells are legal single moves."""
    for x, y in path:
        if not passable[y, x]:
            return False
    for (x0, y0), (x1, y1) in zip(path[:-1], path[1:]):
        moves = {(nx, ny) for nx, ny, _ in neighbours(passable, x0, y0, diagonal, heights, max_climb)}
        if (x1, y1) not in moves:
            return False
    return True


def path_cost(path, cost=None):
    total = 0.0
    for (x0, y0), (x1, y1) in zip(path[:-1], path[1:]):
        step = SQRT2 if (x0 != x1 and y0 != y1) else 1.0
        total += step * (1.0 if cost is None else float(cost[y1, x1]))
    return total


def flood(passable, steps):
    """Labels of the components of ``passable`` (0 = impassable), cells joined to
    ``steps(x, y)``'s cells, by flood fill from each unlabelled cell in row order,
    numbered in that order; ``(labels, count)``."""
    height, width = passable.shape
    labels = np.zeros((height, width), dtype=np.int64)
    count = 0
    for y in range(height):
        for x in range(width):
            if passable[y, x] and not labels[y, x]:
                count += 1
                stack = [(x, y)]
                labels[y, x] = count
                while stack:
                    cx, cy = stack.pop()
                    for nx, ny in steps(cx, cy):
                        if 0 <= nx < width and 0 <= ny < height and passable[ny, nx] and not labels[ny, nx]:
                            labels[ny, nx] = count
                            stack.append((nx, ny))
    return labels, count


def components(passable):
    """Labels of 4-connected components by flood fill (0 = impassable)."""
    return flood(passable, lambda x, y: ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)))


def random_grid(rng, width, height, density):
    return rng.random((height, width)) >= density


# -- the queries beyond one path ----------------------------------------------------------


def covered(walkable_shape, cells=(), rects=()):
    """bool grid: the cells (x, y) and rectangles (x, y, w, h) given, clipped to the map."""
    height, width = walkable_shape
    out = np.zeros((height, width), dtype=bool)
    for x, y in cells:
        if 0 <= x < width and 0 <= y < height:
            out[y, x] = True
    for x, y, w, h in rects:
        for cy in range(y, y + h):
            for cx in range(x, x + w):
                if 0 <= cx < width and 0 <= cy < height:
                    out[cy, cx] = True
    return out


def overlapping(solid, unit_w, unit_h):
    """bool grid: the cells where a unit's footprint would cover a cell of ``solid``."""
    height, width = solid.shape
    out = np.zeros((height, width), dtype=bool)
    for y in range(height):
        for x in range(width):
            out[y, x] = any(0 <= cx < width and 0 <= cy < height and solid[cy, cx]
                            for cx, cy in footprint_cells(x, y, unit_w, unit_h))
    return out


def edges(passable, diagonal="no_corner_cutting", cost=None, heights=None, max_climb=None, avoided=None,
          avoid_cost=None):
    """Every move of the unit's graph as (from, to, cost). ``avoided``: bool grid of the
    cells the unit may not enter (or, with ``avoid_cost``, enters for at least that cost);
    a unit may still leave one."""
    enter = passable.copy()
    if avoided is not None and avoid_cost is None:
        enter[avoided] = 0
    height, width = passable.shape
    out = []
    for y in range(height):
        for x in range(width):
            if not passable[y, x]:
                continue
            for nx, ny, step in neighbours(enter, x, y, diagonal, heights, max_climb):
                price = 1.0 if cost is None else float(cost[ny, nx])
                if avoided is not None and avoid_cost is not None and avoided[ny, nx]:
                    price = max(price, avoid_cost)
                out.append(((x, y), (nx, ny), step * price))
    return out


def costs_from(graph, start):
    """{cell: cheapest cost from start} over the (from, to, cost) moves of ``graph``."""
    following = {}
    for a, b, w in graph:
        following.setdefault(a, []).append((b, w))
    dist = {start: 0.0}
    queue = [(0.0, start)]
    done = set()
    while queue:
        d, cell = heapq.heappop(queue)
        if cell in done:
            continue
        done.add(cell)
        for b, w in following.get(cell, ()):
            if d + w < dist.get(b, math.inf):
                dist[b] = d + w
                heapq.heappush(queue, (d + w, b))
    return dist


def costs_to(graph, goals):
    """{cell: cheapest cost from it to any of ``goals``}: costs_from on the reversed moves."""
    reverse = [(b, a, w) for a, b, w in graph]
    best = {}
    for goal in goals:
        for cell, d in costs_from(reverse, goal).items():
            best[cell] = min(d, best.get(cell, math.inf))
    return best


def components8(passable):
    """Labels of 8-connected components by flood fill (0 = impassable)."""
    return flood(passable, lambda x, y: ((x + dx, y + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)))


def cut_pairs(passable_before, passable_after, points, eight=False, label=None):
    """The pairs (i, j), i < j, of points connected in passable_before and not in
    passable_after, by flood fill (``label``: another labelling, as :func:`flood`'s)."""
    label = label or (components8 if eight else components)
    before, _ = label(passable_before)
    after, _ = label(passable_after)
    pairs = []
    for i in range(len(points)):
        for j in range(i + 1, len(points)):
            (xi, yi), (xj, yj) = points[i], points[j]
            if before[yi, xi] and before[yi, xi] == before[yj, xj]:
                if not after[yi, xi] or after[yi, xi] != after[yj, xj]:
                    pairs.append((i, j))
    return pairs


def footprint_max(cost, unit_w, unit_h):
    """The highest cost under each anchor's footprint (the part inside the map)."""
    height, width = cost.shape
    out = np.ones((height, width), dtype=np.float64)
    for y in range(height):
        for x in range(width):
            inside = [cost[cy, cx] for cx, cy in footprint_cells(x, y, unit_w, unit_h)
                      if 0 <= cx < width and 0 <= cy < height]
            out[y, x] = max(inside)
    return out


# -- JPS+ jump distances ------------------------------------------------------------------

JUMP_DIRECTIONS = [(1, 0), (0, 1), (-1, 0), (0, -1), (1, 1), (-1, 1), (-1, -1), (1, -1)]


def _free(passable, x, y):
    height, width = passable.shape
    return 0 <= x < width and 0 <= y < height and bool(passable[y, x])


def straight_stop(passable, x, y, dx, dy):
    """Whether a straight scan along (dx, dy) stops at the free cell (x, y): a side cell
    is free and the cell behind it (toward where the scan came from) is blocked."""
    for s in (-1, 1):
        side = (x + s * dy, y + s * dx) if dx else (x + s, y)
        behind = (side[0] - dx, side[1] - dy)
        if _free(passable, *side) and not _free(passable, *behind):
            return True
    return False


def jump_distance(passable, x, y, dx, dy):
    """The JPS+ distance from (x, y) along (dx, dy), walked step by step: k > 0 when the
    k-th step reaches a jump point (straight: a stop; diagonal: a cell from which a
    straight scan along dx or dy reaches a stop), else -(legal steps before a dead end)."""
    if not _free(passable, x, y):
        return 0
    steps = 0
    while True:
        nx, ny = x + dx, y + dy
        if not _free(passable, nx, ny) or not _free(passable, nx, y) or not _free(passable, x, ny):
            return -steps
        x, y = nx, ny
        steps += 1
        if dx and dy:
            if jump_distance(passable, x, y, dx, 0) > 0 or jump_distance(passable, x, y, 0, dy) > 0:
                return steps
        elif straight_stop(passable, x, y, dx, dy):
            return steps


def jump_distances(passable):
    """int (H * W, 8): :func:`jump_distance` of every cell in each of JUMP_DIRECTIONS."""
    height, width = passable.shape
    out = np.zeros((height * width, 8), dtype=np.int64)
    for y in range(height):
        for x in range(width):
            for d, (dx, dy) in enumerate(JUMP_DIRECTIONS):
                out[y * width + x, d] = jump_distance(passable, x, y, dx, dy)
    return out


# -- JPS+ goal bounds -----------------------------------------------------------------------

def jump_points(passable):
    """The cells a straight scan enters (from a free cell) and stops at, in row-major
    order."""
    height, width = passable.shape
    return [(x, y) for y in range(height) for x in range(width)
            if passable[y, x] and any(_free(passable, x - dx, y - dy) and straight_stop(passable, x, y, dx, dy)
                                      for dx, dy in JUMP_DIRECTIONS[:4])]


def goal_boxes(passable, node):
    """For each of JUMP_DIRECTIONS, the bounding box (xmin, ymin, xmax, ymax) of the cells
    t whose cheapest cost from ``node`` equals the cost of its first step that way plus
    the cheapest cost from there to t (no corner cutting), or None for no such cell."""
    graph = edges(passable)
    base = costs_from(graph, node)
    moves = {(b[0] - node[0], b[1] - node[1]): w for a, b, w in graph if a == node}
    boxes = []
    for dx, dy in JUMP_DIRECTIONS:
        if (dx, dy) not in moves:
            boxes.append(None)
            continue
        after = costs_from(graph, (node[0] + dx, node[1] + dy))
        cells = [t for t, d in base.items() if abs(d - (moves[dx, dy] + after.get(t, math.inf))) < 1e-9]
        if not cells:
            boxes.append(None)
            continue
        xs, ys = [c[0] for c in cells], [c[1] for c in cells]
        boxes.append((min(xs), min(ys), max(xs), max(ys)))
    return boxes
