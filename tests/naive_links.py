"""The slow, obviously correct reference for issue #35: Dijkstra over the cells of every
floor and the links between them, written from the issue's words and nothing of the
product's code.

A map is ``floors`` layers of ``H x W``; a point is ``(x, y, floor)``. Moves within a floor
are find_path's (naive.neighbours), entering a cell costing the step's length times its
terrain cost for the unit's footprint. A link ``{"from": p, "to": q, "cost": c,
"two_way": bool, "tag": name}`` is one move from p to q (and back when two-way) costing
exactly c, usable when the unit's footprint fits at both ends; ``rules`` (a traversal's
``{tag: None | multiplier}``) bar a link's tag (None) or multiply its cost; an avoided
cell at a link's end blocks it for the request.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

import naive


def point(p) -> tuple[int, int, int]:
    """``(x, y)`` (floor 0) or ``(x, y, floor)`` as a triple."""
    return (int(p[0]), int(p[1]), int(p[2]) if len(p) > 2 else 0)


def link_moves(links, rules=None):
    """``{source: [(target, cost, index), ...]}`` of the links as moves, both ways for
    two-way links, each link's cost under ``rules``; barred links left out."""
    moves: dict = {}
    for index, link in enumerate(links):
        cost = float(link["cost"])
        tag = link.get("tag")
        if rules and tag in rules:
            if rules[tag] is None:
                continue
            cost *= rules[tag]
        a, b = point(link["from"]), point(link["to"])
        moves.setdefault(a, []).append((b, cost, index))
        if link.get("two_way", True):
            moves.setdefault(b, []).append((a, cost, index))
    return moves


def costs_from(floors_passable, floors_cost, links, start, rules=None, diagonal="no_corner_cutting"):
    """``{(x, y, floor): cheapest cost from start}`` for every reachable cell.

    floors_passable: per floor, uint8 (H, W) where the unit stands (its footprint fits:
    naive.passable_for_unit, with avoided cells already blocked); floors_cost: per floor,
    float (H, W) the cost of entering each cell (the footprint's highest)."""
    moves = link_moves(links, rules)
    start = point(start)
    dist = {start: 0.0}
    queue = [(0.0, start)]
    done = set()
    while queue:
        d, here = heapq.heappop(queue)
        if here in done:
            continue
        done.add(here)
        x, y, f = here
        steps = [((nx, ny, f), step * floors_cost[f][ny, nx])
                 for nx, ny, step in naive.neighbours(floors_passable[f], x, y, diagonal)]
        for target, cost, _ in moves.get(here, ()):
            tx, ty, tf = target
            if 0 <= tf < len(floors_passable) and floors_passable[tf][ty, tx]:
                steps.append((target, cost))
        for there, cost in steps:
            nd = d + cost
            if nd < dist.get(there, math.inf) - 1e-12:
                dist[there] = nd
                heapq.heappush(queue, (nd, there))
    return dist


def cost(floors_passable, floors_cost, links, start, goal, rules=None, diagonal="no_corner_cutting") -> float:
    """The cheapest cost from start to goal (math.inf when there is no way)."""
    start = point(start)
    if not floors_passable[start[2]][start[1], start[0]]:
        return math.inf
    return costs_from(floors_passable, floors_cost, links, start, rules, diagonal).get(point(goal), math.inf)


def path_is_valid(floors_passable, links, path, link_steps, rules=None, diagonal="no_corner_cutting") -> bool:
    """Every point standable; each step a move within its floor, or (where ``link_steps``,
    ``{i: k}``, says the step from path[i] is link k) that link taken its own way."""
    moves = link_moves(links, rules)
    for i, (a, b) in enumerate(zip(path[:-1], path[1:])):
        a, b = point(a), point(b)
        if not floors_passable[b[2]][b[1], b[0]]:
            return False
        if i in link_steps:
            if not any(target == b and index == link_steps[i] for target, _, index in moves.get(a, ())):
                return False
            continue
        if a[2] != b[2] or (b[0], b[1]) not in {(nx, ny) for nx, ny, _ in
                                                naive.neighbours(floors_passable[a[2]], a[0], a[1], diagonal)}:
            return False
    return True


def random_links(rng, floors, width, height, walkable, count, tags=("ladder", "door")):
    """``count`` links between random walkable cells of random floors: costs 0 to 20,
    some one-way, some tagged."""
    cells = [(x, y, f) for f in range(floors) for y, x in np.argwhere(walkable[f])]
    links = []
    for _ in range(count):
        a, b = (cells[i] for i in rng.choice(len(cells), 2, replace=False))
        link = {"from": list(a), "to": list(b), "cost": float(rng.integers(0, 21)),
                "two_way": bool(rng.random() < 0.6)}
        if rng.random() < 0.4:
            link["tag"] = str(rng.choice(tags))
        links.append(link)
    return links



def random_floors(rng, floors, height, width, count):
    """``(walkable, cost, links)``: ``floors`` random floors of ``height x width`` (bool,
    a fifth blocked; float, a third costing 3) and ``count`` links of :func:`random_links`
    tagged ladder or door."""
    walkable = np.stack([rng.random((height, width)) > 0.2 for _ in range(floors)])
    cost = np.stack([np.where(rng.random((height, width)) < 0.3, 3.0, 1.0) for _ in range(floors)])
    return walkable, cost, random_links(rng, floors, width, height, walkable, count, tags=("ladder", "door"))


def floors_for_unit(walkable, cost, unit):
    """``(passable, costs)``, per floor: where a ``unit x unit`` footprint stands, and the
    terrain cost it pays there (its footprint's dearest cell)."""
    passable = [naive.passable_for_unit(w, unit, unit) for w in walkable]
    costs = [naive.footprint_max(np.where(w, c, 1.0), unit, unit) for w, c in zip(walkable, cost)]
    return passable, costs

# -- every op: the whole graph of moves ---------------------------------------------------


def avoided_anchors(floors_passable, unit, cells=(), rects=()):
    """Per floor, bool (H, W): the anchors whose ``unit x unit`` footprint overlaps an
    avoided cell; ``cells`` ``(x, y, floor)``, ``rects`` ``(x, y, w, h, floor)``."""
    out = []
    for f, passable in enumerate(floors_passable):
        covered = naive.covered(passable.shape, [c[:2] for c in cells if c[2] == f],
                                [r[:4] for r in rects if r[4] == f])
        out.append(naive.overlapping(covered, unit, unit))
    return out


def graph(floors_passable, floors_cost, links, rules=None, diagonal="no_corner_cutting", avoided=None,
          avoid_cost=None, heights=None, max_climb=None):
    """Every move as ``(from, to, cost)``, points ``(x, y, floor)``: each floor's moves
    (naive.edges: an avoided anchor may be left, not entered, or with ``avoid_cost``
    entered for at least that; with ``heights``, per floor, no climb past ``max_climb``)
    and each link the unit may take (both ends standable, neither avoided, its tag not
    barred; a link climbs any height)."""
    moves = []
    for f, passable in enumerate(floors_passable):
        for (x, y), (nx, ny), w in naive.edges(passable, diagonal, floors_cost[f],
                                                None if heights is None else heights[f], max_climb,
                                                avoided=None if avoided is None else avoided[f],
                                                avoid_cost=avoid_cost):
            moves.append(((x, y, f), (nx, ny, f), w))
    for source, targets in link_moves(links, rules).items():
        for target, cost, _ in targets:
            ends = (source, target)
            if not all(floors_passable[p[2]][p[1], p[0]] for p in ends):
                continue
            if avoided is not None and any(avoided[p[2]][p[1], p[0]] for p in ends):
                continue
            moves.append((source, target, cost))
    return moves


def nearness(cell, goals):
    """How near ``cell`` lies to the nearest of ``goals`` for a partial path's end: the
    squared distance to one on its floor, else past every such (inf)."""
    same = [(cell[0] - g[0]) ** 2 + (cell[1] - g[1]) ** 2 for g in goals if g[2] == cell[2]]
    return min(same) if same else math.inf


def joined_pairs(before, after, links, points, rules=None, diagonal="never"):
    """The pairs (i, j), i < j, of ``points`` joined in ``before`` (per floor, where the
    unit stands) and not in ``after``: joined when a way leads from either to the other."""
    def joined(passable):
        moves = graph(passable, [np.ones(p.shape) for p in passable], links, rules, diagonal)
        reach = [naive.costs_from(moves, point(p)) if passable[p[2]][p[1], p[0]] else {} for p in points]
        return lambda i, j: point(points[j]) in reach[i] or point(points[i]) in reach[j]

    was, now = joined(before), joined(after)
    return [(i, j) for i in range(len(points)) for j in range(i + 1, len(points)) if was(i, j) and not now(i, j)]
