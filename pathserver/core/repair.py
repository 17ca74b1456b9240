"""Mending a shortest path that a request's avoided cells cut, at its own cost.

Blocking cells only takes moves away, so no path on the blocked grid is cheaper than the
shortest path on the grid before (the plain path). Where the plain path steps on a
blocked cell, another path of exactly its cost often goes round it: an open grid holds
many shortest paths, and the blocked cell may lie on one of them only. :func:`mend`
looks for one near each cut (a detour between the path's cells some steps before and
after it, searched only among cells on a way of the cut stretch's very cost), and
splices it in. When every cut mends, the mended path costs what the plain one did, the
lower bound: it is a shortest path on the blocked grid, found without a second search of
the map. When a cut does not mend, the caller searches the blocked grid.

A detour of equal cost has as many straight and as many diagonal steps as the stretch it
replaces (``s + d * sqrt(2)`` fixes both integers), so it takes exactly its cells' room
in the path and nothing after it moves. Grids follow JPS's rule: 8-connected, uniform
cost, no corner cutting.

Workspace (the convention of :mod:`pathserver.core.astar`): g in ``work_float[0]``,
the open list as :mod:`pathserver.core.jpsplus`'s heap in rows 1 and 2, parents in
``work_int[0]``, stamps in ``work_int[3]`` under the workspace's pass ids. It leaves
JPS+'s records (rows 3 and 4) and the answer (``work_int`` rows 1 and 2) alone.
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.astar import next_pass_id, octile
from pathserver.core.heap import TIE
from pathserver.core.jpsplus import strided_pop, strided_push
from pathserver.core.moves import SQRT2

#: Steps kept before and after a cut, tried in turn: a wider stretch has more ways of
#: its cost round the cut, and a dearer search.
REACHES = (8, 32)
#: Nodes one detour may close before the cut counts as not mended.
DETOUR_LIMIT = 1024
#: A path cut in more places than this has the avoided cells on its way, not beside it:
#: :func:`mend` and :func:`relax` leave it to a search round all of them
#: (bench/queries.py --only avoid: Boston, 200 cells round the route, the detours mend
#: none, and 2 to 3 relaxed searches cost more than that one).
MANY_CUTS = 4


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def cut_at(path, i, passable):
    """Whether the step into ``path[i]`` (``i >= 1``) is illegal on ``passable``: the cell
    blocked, or a diagonal whose two sides are not both open."""
    x = path[i, 0]
    y = path[i, 1]
    if passable[y, x] == 0:
        return True
    px = path[i - 1, 0]
    py = path[i - 1, 1]
    return px != x and py != y and (passable[py, x] == 0 or passable[y, px] == 0)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def detour(path, first, last, passable, work_float, work_int):
    """Replace ``path[first + 1:last]`` with cells of a path from ``path[first]`` to
    ``path[last]`` legal on ``passable`` and as dear as the stretch it replaces, if one
    exists whose search closes at most :data:`DETOUR_LIMIT` nodes. The stretch must be a
    shortest way between its ends on a grid holding ``passable``'s moves. Takes a pass id
    from the workspace. Returns (mended: 1 or 0, nodes closed)."""
    height, width = passable.shape
    straight = 0
    diagonal = 0
    for i in range(first + 1, last + 1):
        if path[i, 0] != path[i - 1, 0] and path[i, 1] != path[i - 1, 1]:
            diagonal += 1
        else:
            straight += 1
    bound = straight + diagonal * SQRT2 + 1e-9
    ax = path[first, 0]
    ay = path[first, 1]
    bx = path[last, 0]
    by = path[last, 1]
    goal = by * width + bx
    n = work_float.shape[1]
    g = work_float[0]
    keys = work_float.reshape(-1)
    nodes = keys.view(np.int64)
    parent = work_int[0]
    stamp = work_int[3]
    open_mark = next_pass_id(work_int)
    closed_mark = open_mark + 1
    start = ay * width + ax
    g[start] = 0.0
    stamp[start] = open_mark
    parent[start] = start
    # Keyed f, then nearer the end (as JPS+'s heap): every way in the band is as dear,
    # so the search runs along one instead of filling the band.
    h_scale = 1.0 + TIE
    size = strided_push(keys, nodes, n, 0, start, octile(ax, ay, bx, by) * h_scale)
    closed = 0
    reached = False
    while size > 0:
        node, size = strided_pop(keys, nodes, n, size)
        if stamp[node] == closed_mark:
            continue  # improved and closed since this entry was pushed
        if node == goal:
            reached = True
            break
        if closed >= DETOUR_LIMIT:
            return 0, closed
        stamp[node] = closed_mark
        closed += 1
        y = node // width
        x = node - y * width
        for d in range(8):
            dx = (1, 0, -1, 0, 1, -1, -1, 1)[d]
            dy = (0, 1, 0, -1, 1, 1, -1, -1)[d]
            nx = x + dx
            ny = y + dy
            if nx < 0 or ny < 0 or nx >= width or ny >= height or passable[ny, nx] == 0:
                continue
            if d >= 4:
                if passable[y, nx] == 0 or passable[ny, x] == 0:
                    continue
                step = g[node] + SQRT2
            else:
                step = g[node] + 1.0
            # Only ways as cheap as the stretch count: the search stays in their band.
            h = octile(nx, ny, bx, by)
            if step + h > bound:
                continue
            other = ny * width + nx
            mark = stamp[other]
            if mark == closed_mark or (mark == open_mark and g[other] <= step):
                continue
            g[other] = step
            stamp[other] = open_mark
            parent[other] = node
            size = strided_push(keys, nodes, n, size, other, step + h * h_scale)
    if not reached:
        return 0, closed
    # As dear, so as many steps: the detour fills the stretch's cells exactly.
    steps = 0
    node = goal
    while node != start:
        node = parent[node]
        steps += 1
    if steps != last - first:
        return 0, closed
    node = parent[goal]
    for i in range(last - 1, first, -1):
        y = node // width
        path[i, 0] = node - y * width
        path[i, 1] = y
        node = parent[node]
    return 1, closed


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def mend(path, count, passable, work_float, work_int, limit):
    """Make ``path[:count]`` (a shortest cell path on a grid that holds ``passable``'s
    moves and more, its ends open in ``passable``) legal on ``passable`` at the same cost,
    detour by detour (:func:`detour`; each cut tried with every reach of
    :data:`REACHES`), giving up once the detours have closed more than ``limit`` nodes
    (0: no limit).

    Returns (mended: 1 if the whole path is now legal, else 0; nodes closed). A path not
    mended may be left partly changed; one cut in more than :data:`MANY_CUTS` places is
    left as it is."""
    cuts = 0
    for i in range(1, count):
        if cut_at(path, i, passable):
            cuts += 1
    if cuts > MANY_CUTS:
        return 0, 0
    closed = 0
    i = 1
    while i < count:
        if not cut_at(path, i, passable):
            i += 1
            continue
        mended = 0
        for reach in REACHES:
            first = max(i - reach, 0)
            last = min(i + reach, count - 1)
            # The stretch ends on a cell the unit may stand on.
            while last < count - 1 and passable[path[last, 1], path[last, 0]] == 0:
                last += 1
            mended, more = detour(path, first, last, passable, work_float, work_int)
            closed += more
            if limit > 0 and closed > limit:
                return 0, closed
            if mended != 0:
                i = last + 1  # the detour's steps, the one into path[last] too, are legal
                break
        if mended == 0:
            return 0, closed
    return 1, closed


#: How far round a step the avoided cells cut :func:`relax` blocks the avoided anchors
#: (on each axis): the next path mostly keeps near the last one.
RELAX_RADIUS = 3
#: :func:`relax`'s answers other than a count: the path is cut in more than ``max_cuts``
#: places (nothing blocked); the boxes are full.
RELAX_MANY_CUTS = -1
RELAX_FULL = -2


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def relax(path, count, passable, relaxed, radius, max_cuts, boxes, n):
    """One round of searching round only the avoided cells that matter. ``relaxed``: a
    relaxation of ``passable`` (the grid before a request's avoided anchors were blocked,
    with some of them blocked), on which ``path[:count]`` was found. Blocks in ``relaxed``
    every anchor within ``radius`` (on each axis) of a step illegal on ``passable`` that
    ``passable`` blocks and ``relaxed`` does not, and notes each as the box ``x, y, x + 1,
    y + 1`` in ``boxes[n:]`` (int64 (K, 4)). A step legal on ``relaxed`` but not on
    ``passable`` involves such an anchor within one step, so every round with a cut
    blocks at least one more.

    Returns the new count of boxes; RELAX_MANY_CUTS, with nothing blocked, when more than
    ``max_cuts`` steps are illegal; RELAX_FULL when ``boxes`` is full (``relaxed`` then
    has all K of them blocked)."""
    height, width = passable.shape
    cuts = 0
    for i in range(1, count):
        if cut_at(path, i, passable):
            cuts += 1
    if cuts > max_cuts:
        return RELAX_MANY_CUTS
    for i in range(1, count):
        if not cut_at(path, i, passable):
            continue
        cx = path[i, 0]
        cy = path[i, 1]
        for y in range(max(cy - radius, 0), min(cy + radius + 1, height)):
            for x in range(max(cx - radius, 0), min(cx + radius + 1, width)):
                if passable[y, x] == 0 and relaxed[y, x] != 0:
                    if n >= boxes.shape[0]:
                        return RELAX_FULL
                    relaxed[y, x] = 0
                    boxes[n, 0] = x
                    boxes[n, 1] = y
                    boxes[n, 2] = x + 1
                    boxes[n, 3] = y + 1
                    n += 1
    return n
