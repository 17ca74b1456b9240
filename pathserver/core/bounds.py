"""Goal bounds for JPS+: for each node a search may expand and each of its eight
directions, the bounding box of the cells that some shortest path from the node reaches
with a first step in that direction (goal bounding, after Rabin's JPS+ with goal bounding,
and Wilt and Botea's bounding boxes for A*).

A JPS+ search that expands node ``n`` toward goal ``t`` then skips each direction whose
box at ``n`` does not hold ``t``: answers keep their cost, with fewer expansions and
pushes. The nodes are the jump points a straight move finds (:func:`bound_rows` gives each
a row). The boxes need one flood of the grid from each, so they are kept for small maps
only (the caller bounds the work, rows times passable cells). Why a skipped direction never
holds the answer, and how a flood keeps every tie: docs/design.md, "Goal bounds".

The boxes: int16 (rows, 32), for direction ``d`` (in the order of
:data:`pathserver.core.jpsplus.DIRECTION_X`) ``xmin, ymin, xmax, ymax`` at ``4 d``; an
empty box has ``xmin`` > ``xmax``.
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.jpsplus import DIRECTION_X, DIRECTION_Y, has_forced, is_free
from pathserver.core.moves import SQRT2, move_bits
from pathserver.core.status import DIAGONAL_NO_CORNER_CUTTING, SEARCH_FOUND

#: Numbers a row of boxes holds: four a direction.
ROW = 32
#: A side longer than this cannot be held in the int16 boxes.
MAX_SIDE = 32767


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def bound_rows(cells, rows, nodes):
    """Number the cells a JPS+ search may expand other than its start: ``rows[v]`` (int32
    (H * W,)) gets the row of cell ``v``, -1 for the others, and ``nodes[r]`` (int32, at
    least as long as there are such cells, or empty to count them) the cell of row ``r``.
    Returns their count."""
    height, width = cells.shape
    flat = cells.reshape(-1)
    count = 0
    for y in range(height):
        for x in range(width):
            v = y * width + x
            rows[v] = -1
            if flat[v] == 0:
                continue
            forced = False
            for d in range(4):
                # Entered straight in direction d from a free cell, with a forced neighbour.
                dx = DIRECTION_X[d]
                dy = DIRECTION_Y[d]
                if is_free(flat, width, height, x - dx, y - dy) and has_forced(flat, width, height, x, y, dx, dy):
                    forced = True
            if forced:
                rows[v] = count
                if nodes.shape[0] > 0:
                    nodes[count] = v
                count += 1
    return count


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _cost(straight, diagonal):
    return straight + diagonal * SQRT2


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def legal_moves(cells, moves):
    """Each cell's legal moves (no corner cutting) as bits, bit d for direction d, into
    ``moves`` (uint8 (H * W,)); 0 for a blocked cell."""
    height, width = cells.shape
    flat = cells.reshape(-1)
    for node in range(height * width):
        if flat[node] == 0:
            moves[node] = 0
            continue
        y = node // width
        moves[node] = move_bits(flat, width, height, node, node - y * width, y, DIAGONAL_NO_CORNER_CUTTING)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def fill_bounds(moves, width, nodes, first_row, end_row, bounds, steps, marks, buckets):
    """Flood from the cells of rows ``first_row`` to ``end_row`` - 1 (``nodes`` as
    :func:`bound_rows` left it) over the grid of ``moves`` (:func:`legal_moves`, ``width``
    cells a row) and write their rows of ``bounds`` (int16 (rows, ROW)).

    Work arrays, each with an entry a cell, shared by the calls of one build: steps
    (int64: a cell's cost as its count of straight steps times 2**32 plus its count of
    diagonal ones), marks (int32, zero before the build's first call: row r's flood marks
    a cell ``(2 r + 1) << 8`` open and ``(2 r + 2) << 8`` closed, its first steps as bits
    in the low byte), buckets (int32 (3, H * W + 1), a bucket's count in its last
    column). Returns SEARCH_FOUND."""
    n = moves.shape[0]
    offsets = (1, width, -1, -width, width + 1, width - 1, -width - 1, 1 - width)
    # The cost of a step as a pair: one straight (1 << 32) or one diagonal (1).
    pairs = (1 << 32, 1 << 32, 1 << 32, 1 << 32, 1, 1, 1, 1)
    for row in range(first_row, end_row):
        source = nodes[row]
        open_mark = (2 * row + 1) << 8
        closed_mark = (2 * row + 2) << 8
        for d in range(8):
            bounds[row, 4 * d] = MAX_SIDE
            bounds[row, 4 * d + 1] = MAX_SIDE
            bounds[row, 4 * d + 2] = -1
            bounds[row, 4 * d + 3] = -1
        steps[source] = 0
        marks[source] = open_mark
        buckets[0, n] = 1
        buckets[1, n] = 0
        buckets[2, n] = 0
        buckets[0, 0] = source
        bucket = 0
        idle = 0
        while idle < 3:
            b = bucket % 3
            if buckets[b, n] == 0:
                idle += 1
                bucket += 1
                continue
            idle = 0
            i = 0
            while i < buckets[b, n]:
                node = buckets[b, i]
                i += 1
                mark = marks[node]
                if mark & -256 == closed_mark:
                    continue  # settled from an earlier bucket
                bits = np.int64(mark & 255)
                marks[node] = closed_mark
                if bits != 0:
                    y = node // width
                    x = node - y * width
                    left = bits
                    while left != 0:
                        d = 0
                        while (left >> d) & 1 == 0:
                            d += 1
                        left &= left - 1
                        at = 4 * d
                        if x < bounds[row, at]:
                            bounds[row, at] = x
                        if y < bounds[row, at + 1]:
                            bounds[row, at + 1] = y
                        if x > bounds[row, at + 2]:
                            bounds[row, at + 2] = x
                        if y > bounds[row, at + 3]:
                            bounds[row, at + 3] = y
                here = steps[node]
                legal = np.int64(moves[node])
                for d in range(8):
                    if (legal >> d) & 1 == 0:
                        continue
                    to = node + offsets[d]
                    mark = marks[to]
                    stamp = mark & -256
                    if stamp == closed_mark:
                        continue
                    pair = here + pairs[d]
                    way = (1 << d) if node == source else bits
                    cost = _cost(pair >> 32, pair & 0xFFFFFFFF)
                    if stamp == open_mark:
                        known = steps[to]
                        if pair == known:
                            marks[to] = mark | way  # another shortest way in
                            continue
                        old = _cost(known >> 32, known & 0xFFFFFFFF)
                        if cost >= old:
                            continue
                        steps[to] = pair
                        marks[to] = open_mark | way
                        if int(cost) == int(old):
                            continue  # already queued in this bucket
                    else:
                        steps[to] = pair
                        marks[to] = open_mark | way
                    q = int(cost) % 3
                    buckets[q, buckets[q, n]] = to
                    buckets[q, n] += 1
            buckets[b, n] = 0
            bucket += 1
    return SEARCH_FOUND
