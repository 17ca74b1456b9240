"""Would making some cells solid disconnect points from one another? Answered on the
16 x 16 blocks of :mod:`pathserver.core.components`, without changing the map.

The map is a graph of pieces: each connected piece of a block's standable cells (within
the block: :func:`block_pieces`, kept per unit layer) is a node, and two nodes are joined
where cells of theirs touch across a block border. (The block-local component labels
will not do: one label may cover two parts of a block joined only outside it, and a
placement elsewhere may part them.) Solid cells change only the blocks the unit's
footprint can reach from them; those are cut into pieces afresh (a flood fill of at most
256 cells each), the rest keep theirs. Points that were connected stay connected exactly
when a walk over this graph from one's node reaches the other's: a breadth-first search
over pieces rather than cells, which stops as soon as every point it looks for is found.
"""

import numpy as np
from numba import njit

from pathserver.core.avoid import anchor_box
from pathserver.core.components import BLOCK, BLOCK_SHIFT, component_at

#: A point the unit cannot stand on (before the cells are solid, or after).
NOT_STANDING = -1

_DX8 = (1, 0, -1, 0, 1, -1, -1, 1)
_DY8 = (0, 1, 0, -1, 1, 1, -1, -1)


@njit(cache=True, nogil=True, inline="always")
def _fill_block(grid, x0, y0, bw, bh, n_dirs, stack):
    # Number the pieces of one block in place: grid holds 255 on standable cells not
    # numbered yet (0 elsewhere), on a (bh, bw) window at (x0, y0). Returns the count.
    local = 0
    for sy in range(bh):
        for sx in range(bw):
            if grid[y0 + sy, x0 + sx] != 255:
                continue
            local += 1
            grid[y0 + sy, x0 + sx] = local
            top = 0
            stack[top] = sy * BLOCK + sx
            top += 1
            while top > 0:
                top -= 1
                cy = stack[top] >> BLOCK_SHIFT
                cx = stack[top] & (BLOCK - 1)
                for d in range(n_dirs):
                    nx = cx + _DX8[d]
                    ny = cy + _DY8[d]
                    if 0 <= nx < bw and 0 <= ny < bh and grid[y0 + ny, x0 + nx] == 255:
                        grid[y0 + ny, x0 + nx] = local
                        stack[top] = ny * BLOCK + nx
                        top += 1
    return local


@njit(cache=True, nogil=True)
def block_pieces(cells, eight):
    """The connected pieces of each 16 x 16 block's standable cells (``cells`` nonzero),
    within the block, 4-connected (8 with ``eight``): ``(pieces, first)``, pieces uint8
    (H, W) the piece's number in its block (1-based, 0 where the unit cannot stand),
    first int64 (B + 1,) where block ``b``'s node ids start (node ``first[b] + piece -
    1``; ``first[B]`` is the count of nodes)."""
    height, width = cells.shape
    per_row = (width + BLOCK - 1) >> BLOCK_SHIFT
    n_blocks = per_row * ((height + BLOCK - 1) >> BLOCK_SHIFT)
    pieces = np.zeros((height, width), dtype=np.uint8)
    for y in range(height):
        for x in range(width):
            if cells[y, x] != 0:
                pieces[y, x] = 255
    first = np.empty(n_blocks + 1, dtype=np.int64)
    stack = np.empty(BLOCK * BLOCK, dtype=np.int32)
    total = 0
    for b in range(n_blocks):
        first[b] = total
        y0 = (b // per_row) << BLOCK_SHIFT
        x0 = (b % per_row) << BLOCK_SHIFT
        total += _fill_block(pieces, x0, y0, min(BLOCK, width - x0), min(BLOCK, height - y0), 8 if eight else 4,
                             stack)
    first[n_blocks] = total
    return pieces, first


@njit(cache=True, nogil=True, inline="always")
def _label(block, fresh, affected, per_row, x, y):
    b = (y >> BLOCK_SHIFT) * per_row + (x >> BLOCK_SHIFT)
    a = affected[b]
    if a >= 0:
        return fresh[a, y & (BLOCK - 1), x & (BLOCK - 1)]
    return block[y, x]


@njit(cache=True, nogil=True, inline="always")
def _node(first, base, affected, per_row, x, y, local):
    b = (y >> BLOCK_SHIFT) * per_row + (x >> BLOCK_SHIFT)
    a = affected[b]
    if a >= 0:
        return base[a] + local - 1
    return first[b] + local - 1


@njit(cache=True, nogil=True)
def cut_pieces(cells, comps, block, first, eight, boxes, unit_w, unit_h, points, before, pieces):
    """Which piece each point lies in once the cells of ``boxes`` (int (K, 4) ``x0, y0,
    x1, y1``, ends excluded, clipped to the map) are solid for a ``unit_w x unit_h`` unit.

    cells, comps: the unit's block-local components (4-connected, or with ``eight`` 1 the
    8-connected ones of corner cutting); block, first: :func:`block_pieces` of ``cells``
    with the same ``eight``. points: int (P, 2) x, y, in bounds. Writes
    ``before`` (int64 (P,)): each point's component id now, 0 where the unit cannot stand;
    and ``pieces`` (int32 (P,)): NOT_STANDING where the unit cannot stand once the cells
    are solid, else a piece id: two points of the same component before share a piece id
    exactly when they are still connected after. Returns the count of nodes visited.
    """
    height, width = cells.shape
    per_row = (width + BLOCK - 1) >> BLOCK_SHIFT
    n_blocks = per_row * ((height + BLOCK - 1) >> BLOCK_SHIFT)
    n_dirs = 8 if eight != 0 else 4

    # The blocks the solid cells change: any holding an anchor whose footprint they touch.
    affected = np.full(n_blocks, -1, dtype=np.int32)
    listed = np.empty(n_blocks, dtype=np.int32)
    n_affected = 0
    anchors = np.empty((boxes.shape[0], 4), dtype=np.int64)
    for k in range(boxes.shape[0]):
        ax0, ay0, ax1, ay1 = anchor_box(boxes[k, 0], boxes[k, 1], boxes[k, 2], boxes[k, 3], unit_w, unit_h,
                                        width, height)
        anchors[k, 0] = ax0
        anchors[k, 1] = ay0
        anchors[k, 2] = ax1
        anchors[k, 3] = ay1
        if ax0 >= ax1 or ay0 >= ay1:
            continue
        for by in range(ay0 >> BLOCK_SHIFT, ((ay1 - 1) >> BLOCK_SHIFT) + 1):
            for bx in range(ax0 >> BLOCK_SHIFT, ((ax1 - 1) >> BLOCK_SHIFT) + 1):
                b = by * per_row + bx
                if affected[b] < 0:
                    affected[b] = n_affected
                    listed[n_affected] = b
                    n_affected += 1

    # Their cells standable after: standable before and no footprint on a solid cell.
    fresh = np.zeros((n_affected, BLOCK, BLOCK), dtype=np.uint8)
    for a in range(n_affected):
        b = listed[a]
        y0 = (b // per_row) << BLOCK_SHIFT
        x0 = (b % per_row) << BLOCK_SHIFT
        for y in range(y0, min(y0 + BLOCK, height)):
            for x in range(x0, min(x0 + BLOCK, width)):
                if cells[y, x] != 0:
                    fresh[a, y - y0, x - x0] = 255
    for k in range(anchors.shape[0]):
        ax0, ay0, ax1, ay1 = anchors[k, 0], anchors[k, 1], anchors[k, 2], anchors[k, 3]
        for y in range(ay0, ay1):
            for x in range(ax0, ax1):
                fresh[affected[(y >> BLOCK_SHIFT) * per_row + (x >> BLOCK_SHIFT)], y & (BLOCK - 1), x & (BLOCK - 1)] = 0

    # Cut each changed block into pieces afresh.
    counts = np.zeros(n_affected, dtype=np.int32)
    stack = np.empty(BLOCK * BLOCK, dtype=np.int32)
    for a in range(n_affected):
        b = listed[a]
        bh = min(BLOCK, height - ((b // per_row) << BLOCK_SHIFT))
        bw = min(BLOCK, width - ((b % per_row) << BLOCK_SHIFT))
        counts[a] = _fill_block(fresh[a], 0, 0, bw, bh, n_dirs, stack)

    # Node ids: the blocks' own for unchanged blocks, new ones past them for the rest.
    base = np.empty(n_affected, dtype=np.int64)
    total = first[n_blocks]
    for a in range(n_affected):
        base[a] = total
        total += counts[a]
    seen = np.full(total, -1, dtype=np.int32)
    found_at = np.zeros(total, dtype=np.int32)

    node_of = np.full(points.shape[0], -1, dtype=np.int64)
    component = before
    for i in range(points.shape[0]):
        px = points[i, 0]
        py = points[i, 1]
        pieces[i] = NOT_STANDING
        component[i] = component_at(cells, comps, px, py)
        local = _label(block, fresh, affected, per_row, px, py)
        if local != 0:
            node_of[i] = _node(first, base, affected, per_row, px, py, local)
            found_at[node_of[i]] += 1

    queue = np.empty(total, dtype=np.int64)
    queue_x = np.empty(total, dtype=np.int64)
    queue_y = np.empty(total, dtype=np.int64)
    visited = 0
    for i in range(points.shape[0]):
        start = node_of[i]
        if start < 0:
            continue
        if seen[start] < 0:
            # Look for the points of this component not yet placed in a piece.
            wanted = 0
            for j in range(i, points.shape[0]):
                if node_of[j] >= 0 and component[j] == component[i] and seen[node_of[j]] < 0:
                    wanted += 1
            seen[start] = i
            head = 0
            tail = 0
            queue[tail] = start
            queue_x[tail] = points[i, 0]
            queue_y[tail] = points[i, 1]
            tail += 1
            wanted -= found_at[start]
            while head < tail and wanted > 0:
                node = queue[head]
                # Any cell of the node: its block and local label are what count.
                qx = queue_x[head]
                qy = queue_y[head]
                head += 1
                visited += 1
                local = _label(block, fresh, affected, per_row, qx, qy)
                x0 = (qx >> BLOCK_SHIFT) << BLOCK_SHIFT
                y0 = (qy >> BLOCK_SHIFT) << BLOCK_SHIFT
                x1 = min(x0 + BLOCK, width)
                y1 = min(y0 + BLOCK, height)
                # The node's cells on the block's rim, and their neighbours outside it.
                for y in range(y0, y1):
                    rim_row = y == y0 or y == y1 - 1
                    x = x0
                    while x < x1:
                        if _label(block, fresh, affected, per_row, x, y) == local:
                            for d in range(n_dirs):
                                nx = x + _DX8[d]
                                ny = y + _DY8[d]
                                if nx < 0 or ny < 0 or nx >= width or ny >= height:
                                    continue
                                if x0 <= nx < x1 and y0 <= ny < y1:
                                    continue
                                other = _label(block, fresh, affected, per_row, nx, ny)
                                if other == 0:
                                    continue
                                target = _node(first, base, affected, per_row, nx, ny, other)
                                if seen[target] >= 0:
                                    continue
                                seen[target] = i
                                wanted -= found_at[target]
                                queue[tail] = target
                                queue_x[tail] = nx
                                queue_y[tail] = ny
                                tail += 1
                        # Inside rows only the first and last column are on the rim.
                        if rim_row or x == x1 - 1:
                            x += 1
                        else:
                            x = x1 - 1
        pieces[i] = seen[start]
    return visited
