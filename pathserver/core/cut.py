"""Would making some cells solid disconnect points from one another? Answered on the
16 x 16 blocks of :mod:`pathserver.core.components`, without changing the map.

The map is a graph of pieces: each connected piece of a block's standable cells (within
the block: :func:`block_pieces`, kept per unit layer) is a node, and two nodes are joined
where cells of theirs touch across a block border. (The block-local component labels
will not do: one label may cover two parts of a block joined only outside it, and a
placement elsewhere may part them.) Solid cells change only the blocks the unit's
footprint can reach from them; those are cut into pieces afresh (a flood fill of at most
256 cells each), the rest keep theirs. Then a breadth-first search over pieces rather than
cells, started next to the solid cells (see :func:`cut_pieces`), says which pieces of
each component hang together; a placement that cuts nothing settles that within a few
blocks of itself, whatever the map's size.
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.avoid import anchor_box
from pathserver.core.components import BLOCK, BLOCK_SHIFT, component_at
from pathserver.core.moves import hex_move

#: A point the unit cannot stand on (before the cells are solid, or after).
NOT_STANDING = -1

_DX8 = (1, 0, -1, 0, 1, -1, -1, 1)
_DY8 = (0, 1, 0, -1, 1, 1, -1, -1)


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _fill_block(grid, x0, y0, bw, bh, eight, stack):
    # Number the pieces of one block in place: grid holds 255 on standable cells not
    # numbered yet (0 elsewhere), on a (bh, bw) window at (x0, y0). Returns the count.
    # A block starts on even coordinates: its local ones have the parity a hex map's
    # neighbours depend on.
    n_dirs = 8 if eight != 0 else 4
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
                    if not hex_move(eight, cx, cy, d):
                        continue
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
        total += _fill_block(pieces, x0, y0, min(BLOCK, width - x0), min(BLOCK, height - y0), eight,
                             stack)
    first[n_blocks] = total
    return pieces, first


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _block_edges(pieces, first, b, per_row, n_nodes, eight, keys):
    """The edges of block ``b``'s nodes (its rim cells' neighbours in other blocks) into
    ``keys`` as ``source * n_nodes + target``, sorted and without repeats; the count."""
    height, width = pieces.shape
    n_dirs = 8 if eight != 0 else 4
    x0 = (b % per_row) << BLOCK_SHIFT
    y0 = (b // per_row) << BLOCK_SHIFT
    x1 = min(x0 + BLOCK, width)
    y1 = min(y0 + BLOCK, height)
    count = 0
    for y in range(y0, y1):
        rim_row = y == y0 or y == y1 - 1
        x = x0
        while x < x1:
            local = pieces[y, x]
            if local != 0:
                for d in range(n_dirs):
                    if not hex_move(eight, x, y, d):
                        continue
                    nx = x + _DX8[d]
                    ny = y + _DY8[d]
                    if nx < 0 or ny < 0 or nx >= width or ny >= height or (x0 <= nx < x1 and y0 <= ny < y1):
                        continue
                    other = pieces[ny, nx]
                    if other != 0:
                        source = first[b] + local - 1
                        target = first[(ny >> BLOCK_SHIFT) * per_row + (nx >> BLOCK_SHIFT)] + other - 1
                        keys[count] = source * n_nodes + target
                        count += 1
            if rim_row or x == x1 - 1:
                x += 1
            else:
                x = x1 - 1
    # Insertion sort: a block's rim has a few dozen edges (a sort of a slice each block
    # was slower: bench/queries.py, check_block).
    for k in range(1, count):
        key = keys[k]
        j = k - 1
        while j >= 0 and keys[j] > key:
            keys[j + 1] = keys[j]
            j -= 1
        keys[j + 1] = key
    kept = 0
    for k in range(count):
        if k == 0 or keys[k] != keys[k - 1]:
            keys[kept] = keys[k]
            kept += 1
    return kept


@njit(cache=True, nogil=True)
def piece_graph(pieces, first, eight):
    """The graph of :func:`block_pieces`' nodes: ``(offsets, targets, cells)``, offsets
    int64 (M + 1,) and targets int64 (E,) the neighbours of node ``i`` (pieces touching
    across a block border, 4- or with ``eight`` 8-connected) being ``targets[offsets[i]:
    offsets[i + 1]]``, and cells int64 (M, 2) a cell ``x, y`` of each node."""
    height, width = pieces.shape
    per_row = (width + BLOCK - 1) >> BLOCK_SHIFT
    n_blocks = per_row * ((height + BLOCK - 1) >> BLOCK_SHIFT)
    n_nodes = first[n_blocks]
    n_dirs = 8 if eight != 0 else 4
    cells = np.full((n_nodes, 2), -1, dtype=np.int64)
    for y in range(height):
        for x in range(width):
            local = pieces[y, x]
            if local != 0:
                node = first[(y >> BLOCK_SHIFT) * per_row + (x >> BLOCK_SHIFT)] + local - 1
                if cells[node, 0] < 0:
                    cells[node, 0] = x
                    cells[node, 1] = y
    # Each block's edges, counted in a first pass, written in a second.
    degree = np.zeros(n_nodes + 1, dtype=np.int64)
    keys = np.empty(4 * BLOCK * n_dirs, dtype=np.int64)
    for b in range(n_blocks):
        for k in range(_block_edges(pieces, first, b, per_row, n_nodes, eight, keys)):
            degree[keys[k] // n_nodes + 1] += 1
    offsets = np.cumsum(degree)
    targets = np.empty(offsets[n_nodes], dtype=np.int64)
    for b in range(n_blocks):
        count = _block_edges(pieces, first, b, per_row, n_nodes, eight, keys)
        # A block's keys are sorted by source: its nodes' lists are consecutive.
        if count > 0:
            base = offsets[keys[0] // n_nodes]
            for k in range(count):
                targets[base + k] = keys[k] % n_nodes
    return offsets, targets, cells


@njit(cache=True, nogil=True)
def update_pieces(cells, old_cells, old_pieces, old_first, old_offsets, old_targets, old_node_cells, eight):
    """:func:`block_pieces` and :func:`piece_graph` of ``cells`` from those of
    ``old_cells`` (same shape: the generation before an edit), redoing only the blocks
    whose cells changed and the edges of the blocks beside them; the rest is copied, its
    node ids shifted. Returns ``(pieces, first, offsets, targets, node_cells)``, equal to
    a fresh build's."""
    height, width = cells.shape
    per_row = (width + BLOCK - 1) >> BLOCK_SHIFT
    per_column = (height + BLOCK - 1) >> BLOCK_SHIFT
    n_blocks = per_row * per_column
    n_dirs = 8 if eight != 0 else 4
    changed = np.zeros(n_blocks, dtype=np.bool_)
    for y in range(height):
        row = (y >> BLOCK_SHIFT) * per_row
        for x in range(width):
            if (cells[y, x] != 0) != (old_cells[y, x] != 0):
                changed[row + (x >> BLOCK_SHIFT)] = True
    pieces = old_pieces.copy()
    first = np.empty(n_blocks + 1, dtype=np.int64)
    stack = np.empty(BLOCK * BLOCK, dtype=np.int32)
    total = 0
    for b in range(n_blocks):
        first[b] = total
        if not changed[b]:
            total += old_first[b + 1] - old_first[b]
            continue
        y0 = (b // per_row) << BLOCK_SHIFT
        x0 = (b % per_row) << BLOCK_SHIFT
        bw = min(BLOCK, width - x0)
        bh = min(BLOCK, height - y0)
        for y in range(y0, y0 + bh):
            for x in range(x0, x0 + bw):
                pieces[y, x] = 255 if cells[y, x] != 0 else 0
        total += _fill_block(pieces, x0, y0, bw, bh, eight, stack)
    first[n_blocks] = total
    n_nodes = total
    old_nodes = old_first[n_blocks]
    # Blocks whose edges are redone: the changed ones and their eight neighbours.
    redo = changed.copy()
    for b in range(n_blocks):
        if changed[b]:
            bx = b % per_row
            by = b // per_row
            for ny in range(max(by - 1, 0), min(by + 2, per_column)):
                for nx in range(max(bx - 1, 0), min(bx + 2, per_row)):
                    redo[ny * per_row + nx] = True
    # Each old node's block, to shift the targets copied.
    old_block = np.empty(old_nodes, dtype=np.int64)
    for b in range(n_blocks):
        for node in range(old_first[b], old_first[b + 1]):
            old_block[node] = b
    node_cells = np.full((n_nodes, 2), -1, dtype=np.int64)
    degree = np.zeros(n_nodes + 1, dtype=np.int64)
    keys = np.empty(4 * BLOCK * n_dirs, dtype=np.int64)
    for b in range(n_blocks):
        if changed[b]:
            y0 = (b // per_row) << BLOCK_SHIFT
            x0 = (b % per_row) << BLOCK_SHIFT
            for y in range(y0, min(y0 + BLOCK, height)):
                for x in range(x0, min(x0 + BLOCK, width)):
                    local = pieces[y, x]
                    if local != 0 and node_cells[first[b] + local - 1, 0] < 0:
                        node_cells[first[b] + local - 1, 0] = x
                        node_cells[first[b] + local - 1, 1] = y
        else:
            shift = first[b] - old_first[b]
            for node in range(old_first[b], old_first[b + 1]):
                node_cells[node + shift, 0] = old_node_cells[node, 0]
                node_cells[node + shift, 1] = old_node_cells[node, 1]
        if redo[b]:
            for k in range(_block_edges(pieces, first, b, per_row, n_nodes, eight, keys)):
                degree[keys[k] // n_nodes + 1] += 1
        else:
            shift = first[b] - old_first[b]
            for node in range(old_first[b], old_first[b + 1]):
                degree[node + shift + 1] = old_offsets[node + 1] - old_offsets[node]
    offsets = np.cumsum(degree)
    targets = np.empty(offsets[n_nodes], dtype=np.int64)
    for b in range(n_blocks):
        if redo[b]:
            count = _block_edges(pieces, first, b, per_row, n_nodes, eight, keys)
            if count > 0:
                base = offsets[keys[0] // n_nodes]
                for k in range(count):
                    targets[base + k] = keys[k] % n_nodes
            continue
        shift = first[b] - old_first[b]
        for node in range(old_first[b], old_first[b + 1]):
            at = offsets[node + shift]
            for k in range(old_offsets[node], old_offsets[node + 1]):
                target = old_targets[k]
                # Not beside a changed block: every target's block is unchanged.
                ob = old_block[target]
                targets[at] = target + first[ob] - old_first[ob]
                at += 1
    return pieces, first, offsets, targets, node_cells


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _reach(target, tx, ty, mine, owner, union, pending, queue, queue_x, queue_y, tail, active):
    # The search of set `mine` meets node `target` (a cell of it: tx, ty): claims it, or
    # joins the set that has. Returns the new (tail, active).
    if owner[target] < 0:
        owner[target] = mine
        if pending[mine] == 0:
            active += 1
        pending[mine] += 1
        queue[tail] = target
        queue_x[tail] = tx
        queue_y[tail] = ty
        return tail + 1, active
    theirs = _find(union, owner[target])
    if theirs != mine:
        growing = (pending[mine] > 0) + (pending[theirs] > 0)
        union[theirs] = mine
        pending[mine] += pending[theirs]
        active += (pending[mine] > 0) - growing
    return tail, active


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _label(block, fresh, affected, per_row, x, y):
    b = (y >> BLOCK_SHIFT) * per_row + (x >> BLOCK_SHIFT)
    a = affected[b]
    if a >= 0:
        return fresh[a, y & (BLOCK - 1), x & (BLOCK - 1)]
    return block[y, x]


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _node(first, base, affected, per_row, x, y, local):
    b = (y >> BLOCK_SHIFT) * per_row + (x >> BLOCK_SHIFT)
    a = affected[b]
    if a >= 0:
        return base[a] + local - 1
    return first[b] + local - 1


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def _find(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@njit(cache=True, nogil=True)
def cut_pieces(cells, comps, block, first, offsets, targets, node_cells, eight, boxes, unit_w, unit_h, points,
               before, pieces):
    """Which piece each point lies in once the cells of ``boxes`` (int (K, 4) ``x0, y0,
    x1, y1``, ends excluded, clipped to the map) are solid for a ``unit_w x unit_h`` unit.

    cells, comps: the unit's block-local components (4-connected, or with ``eight`` 1 the
    8-connected ones of corner cutting); block, first: :func:`block_pieces` of ``cells``
    with the same ``eight``; offsets, targets, node_cells: :func:`piece_graph` of those.
    points: int (P, 2) x, y, in bounds. Writes ``before`` (int64
    (P,)): each point's component id now, 0 where the unit cannot stand; and ``pieces``
    (int64 (P,)): NOT_STANDING where the unit cannot stand once the cells are solid, else
    a piece id: two points of the same component before share a piece id exactly when they
    are still connected after. Returns the count of nodes the search visited.

    A component the solid cells split falls into pieces that each touch them (it was
    connected). So the search starts at once from every piece next to the solid cells
    (the seeds, in the blocks they change, grown by a cell), breadth-first in step, joining
    seeds whose searches meet, and stops when at most one search can still grow: every
    other has filled its piece, and whatever it has not reached belongs to the last one.
    A placement that cuts nothing stops within a few blocks of it.
    """
    height, width = cells.shape
    per_row = (width + BLOCK - 1) >> BLOCK_SHIFT
    n_blocks = per_row * ((height + BLOCK - 1) >> BLOCK_SHIFT)
    n_dirs = 8 if eight != 0 else 4

    # The blocks the solid cells change, and those next to them.
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
        gx0 = max(ax0 - 1, 0)
        gy0 = max(ay0 - 1, 0)
        gx1 = min(ax1 + 1, width)
        gy1 = min(ay1 + 1, height)
        for by in range(gy0 >> BLOCK_SHIFT, ((gy1 - 1) >> BLOCK_SHIFT) + 1):
            for bx in range(gx0 >> BLOCK_SHIFT, ((gx1 - 1) >> BLOCK_SHIFT) + 1):
                b = by * per_row + bx
                if affected[b] < 0:
                    affected[b] = n_affected
                    listed[n_affected] = b
                    n_affected += 1

    # Blocks whose pieces' edges may have changed: the changed ones and their neighbours.
    near = np.zeros(n_blocks, dtype=np.uint8)
    rows = (height + BLOCK - 1) >> BLOCK_SHIFT
    for a in range(n_affected):
        b = listed[a]
        by = b // per_row
        bx = b - by * per_row
        for ny in range(max(by - 1, 0), min(by + 2, rows)):
            for nx in range(max(bx - 1, 0), min(bx + 2, per_row)):
                near[ny * per_row + nx] = 1

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
        for y in range(anchors[k, 1], anchors[k, 3]):
            for x in range(anchors[k, 0], anchors[k, 2]):
                fresh[affected[(y >> BLOCK_SHIFT) * per_row + (x >> BLOCK_SHIFT)], y & (BLOCK - 1), x & (BLOCK - 1)] = 0

    # Cut each changed block into pieces afresh; each piece is a seed, with a cell of it.
    counts = np.zeros(n_affected, dtype=np.int32)
    stack = np.empty(BLOCK * BLOCK, dtype=np.int32)
    n_seeds = 0
    for a in range(n_affected):
        b = listed[a]
        bh = min(BLOCK, height - ((b // per_row) << BLOCK_SHIFT))
        bw = min(BLOCK, width - ((b % per_row) << BLOCK_SHIFT))
        counts[a] = _fill_block(fresh[a], 0, 0, bw, bh, eight, stack)
        n_seeds += counts[a]
    base = np.empty(n_affected, dtype=np.int64)
    total = first[n_blocks]
    for a in range(n_affected):
        base[a] = total
        total += counts[a]
    seed_node = np.empty(n_seeds, dtype=np.int64)
    seed_x = np.empty(n_seeds, dtype=np.int64)
    seed_y = np.empty(n_seeds, dtype=np.int64)
    seed_component = np.empty(n_seeds, dtype=np.int64)
    n_seeds = 0
    for a in range(n_affected):
        b = listed[a]
        y0 = (b // per_row) << BLOCK_SHIFT
        x0 = (b % per_row) << BLOCK_SHIFT
        done = n_seeds
        for y in range(y0, min(y0 + BLOCK, height)):
            for x in range(x0, min(x0 + BLOCK, width)):
                local = fresh[a, y - y0, x - x0]
                # Pieces are numbered in the order a row-major scan meets them.
                if local != 0 and local == n_seeds - done + 1:
                    seed_node[n_seeds] = base[a] + local - 1
                    seed_x[n_seeds] = x
                    seed_y[n_seeds] = y
                    seed_component[n_seeds] = component_at(cells, comps, x, y)
                    n_seeds += 1

    # The search, one component at a time, from all its seeds in step.
    owner = np.full(total, -1, dtype=np.int64)  # the seed whose search reached a node
    union = np.arange(n_seeds)  # seeds joined when their searches meet
    pending = np.zeros(n_seeds, dtype=np.int64)  # queued nodes of each joined set
    rest = np.full(n_seeds, -1, dtype=np.int64)  # per seed: its component's unfinished set
    queue = np.empty(total, dtype=np.int64)
    queue_x = np.empty(total, dtype=np.int64)
    queue_y = np.empty(total, dtype=np.int64)
    order = np.argsort(seed_component, kind="mergesort")
    visited = 0
    lo = 0
    while lo < n_seeds:
        hi = lo
        while hi < n_seeds and seed_component[order[hi]] == seed_component[order[lo]]:
            hi += 1
        head = 0
        tail = 0
        for k in range(lo, hi):
            seed = order[k]
            owner[seed_node[seed]] = seed
            pending[seed] = 1
            queue[tail] = seed_node[seed]
            queue_x[tail] = seed_x[seed]
            queue_y[tail] = seed_y[seed]
            tail += 1
        active = hi - lo  # sets that may still grow
        while head < tail and active > 1:
            qx = queue_x[head]
            qy = queue_y[head]
            mine = _find(union, owner[queue[head]])
            head += 1
            visited += 1
            pending[mine] -= 1
            if pending[mine] == 0:
                active -= 1
            node = queue[head - 1]
            b = (qy >> BLOCK_SHIFT) * per_row + (qx >> BLOCK_SHIFT)
            if near[b] == 0:
                # Far from the solid cells: the piece graph's edges hold.
                for k in range(offsets[node], offsets[node + 1]):
                    target = targets[k]
                    tail, active = _reach(target, node_cells[target, 0], node_cells[target, 1], mine, owner, union,
                                          pending, queue, queue_x, queue_y, tail, active)
                continue
            local = _label(block, fresh, affected, per_row, qx, qy)
            x0 = (qx >> BLOCK_SHIFT) << BLOCK_SHIFT
            y0 = (qy >> BLOCK_SHIFT) << BLOCK_SHIFT
            x1 = min(x0 + BLOCK, width)
            y1 = min(y0 + BLOCK, height)
            # The node's cells on its block's rim, and their neighbours outside it.
            for y in range(y0, y1):
                rim_row = y == y0 or y == y1 - 1
                x = x0
                while x < x1:
                    if _label(block, fresh, affected, per_row, x, y) == local:
                        for d in range(n_dirs):
                            if not hex_move(eight, x, y, d):
                                continue
                            nx = x + _DX8[d]
                            ny = y + _DY8[d]
                            if nx < 0 or ny < 0 or nx >= width or ny >= height:
                                continue
                            if x0 <= nx < x1 and y0 <= ny < y1:
                                continue
                            other = _label(block, fresh, affected, per_row, nx, ny)
                            if other != 0:
                                tail, active = _reach(_node(first, base, affected, per_row, nx, ny, other), nx, ny,
                                                      mine, owner, union, pending, queue, queue_x, queue_y, tail,
                                                      active)
                    # Inside rows only the first and last column are on the rim.
                    if rim_row or x == x1 - 1:
                        x += 1
                    else:
                        x = x1 - 1
        unfinished = -1
        for k in range(lo, hi):
            seed = _find(union, order[k])
            if pending[seed] > 0:
                unfinished = seed
        for k in range(lo, hi):
            rest[order[k]] = unfinished
        lo = hi

    # Each point: its set, else its component's unfinished set, else (a component the
    # cells leave whole) the component itself.
    sorted_components = seed_component[order]
    for i in range(points.shape[0]):
        px = points[i, 0]
        py = points[i, 1]
        before[i] = component_at(cells, comps, px, py)
        pieces[i] = NOT_STANDING
        local = _label(block, fresh, affected, per_row, px, py)
        if local == 0:
            continue
        node = _node(first, base, affected, per_row, px, py, local)
        if node < owner.shape[0] and owner[node] >= 0:
            pieces[i] = _find(union, owner[node])
            continue
        at = np.searchsorted(sorted_components, before[i])
        if at < n_seeds and sorted_components[at] == before[i] and rest[order[at]] >= 0:
            pieces[i] = rest[order[at]]
        else:
            pieces[i] = n_seeds + before[i]
    return visited
