"""Connected components of a passability grid, and their compact block-local form.

Under the no-corner-cutting rule a diagonal step needs both orthogonal neighbours
passable, so it never joins cells that were not already joined orthogonally: the
components are the 4-connected ones. Only ``diagonal="always"`` (corner cutting) joins
cells diagonally, hence the ``eight`` flag.

Block-local labels. A per-cell component id needs two or four bytes; the cache holds one
byte a cell instead. The grid is cut into 16 x 16 blocks; each cell holds the index
(1-based, 0 = the unit cannot stand there) of its component among the components present
in its block, and a small int32 table ``comps`` maps (block, local index) to the global
id: ``comps[b]`` is where block ``b``'s ids start in ``comps`` (``b = (y >> 4) *
blocks_per_row + (x >> 4)``), and the id of local index ``l`` is ``comps[comps[b] + l -
1]``. A block holds at most 128 components (two 4-adjacent free cells of a block are one
component, so a checkerboard is the worst case), so the local index fits a byte. The
same byte grid is the passability grid every search reads (nonzero = standable).
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit

from pathserver.core.moves import hex_diagonals, hex_distance
from pathserver.core.status import DIAGONAL_HEX


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _root(parent, label):
    """The root of ``label`` in the union-find forest ``parent``, halving the path."""
    while parent[label] != label:
        parent[label] = parent[parent[label]]
        label = parent[label]
    return label


@njit(cache=True, nogil=True)
def label_components(passable, eight, labels):
    """Label the components of ``passable`` (uint8 (H, W), ``[y, x]``).

    labels: int32 (H, W) output: 0 on impassable cells, 1..n on passable ones, numbered in
    the order of each component's first cell, row by row. eight: 1 to join diagonal
    neighbours too; a DIAGONAL_HEX_* code, the hex layout's neighbours. Returns n, the
    number of components.

    Two passes over runs (maximal stretches of passable cells in a row), as union-find
    labellers do: the first gives each run a provisional label and joins it with every
    run of the row above it touches (overlapping columns; one more on each side with
    ``eight``); the second writes each cell its component's final number. Each cell is
    read a few times in memory order, where a flood fill's queue wandered.
    """
    height, width = passable.shape
    # Provisional labels: at most one per run, and a row holds at most ceil(W / 2) runs.
    parent = np.empty(height * ((width + 1) // 2) + 1, dtype=np.int32)
    parent[0] = 0
    provisional = 0
    for y in range(height):
        x = 0
        while x < width:
            if passable[y, x] == 0:
                labels[y, x] = 0
                x += 1
                continue
            start = x
            while x < width and passable[y, x] != 0:
                x += 1
            provisional += 1
            run = provisional
            parent[run] = run
            if y > 0:
                if eight >= DIAGONAL_HEX:
                    # Only the run's end cells reach past it: up-left (6) and up-right (7).
                    lo = max(start - ((hex_diagonals(eight, start, y) >> 6) & 1), 0)
                    hi = min(x + ((hex_diagonals(eight, x - 1, y) >> 7) & 1), width)
                else:
                    lo = max(start - eight, 0)
                    hi = min(x + eight, width)
                last = 0
                for ax in range(lo, hi):
                    above = labels[y - 1, ax]
                    if above != 0 and above != last:
                        last = above
                        a = _root(parent, above)
                        b = _root(parent, run)
                        # The smaller label is the root: the earlier run in row order.
                        if a < b:
                            parent[b] = a
                        elif b < a:
                            parent[a] = b
            for cx in range(start, x):
                labels[y, cx] = run
    final = np.zeros(provisional + 1, dtype=np.int32)
    count = 0
    for y in range(height):
        previous = 0
        resolved = 0
        for x in range(width):
            label = labels[y, x]
            if label == 0:
                continue
            if label != previous:
                previous = label
                root = _root(parent, label)
                if final[root] == 0:
                    count += 1
                    final[root] = count
                resolved = final[root]
            labels[y, x] = resolved
    return count


BLOCK_SHIFT = 4
BLOCK = 1 << BLOCK_SHIFT


@njit(cache=True, nogil=True)
def block_labels(labels, count, cells):
    """The block-local form of ``labels`` (int32 (H, W) from :func:`label_components`,
    ``count`` components): writes uint8 ``cells`` (H, W) and returns the int32 ``comps``
    table (see the module docstring)."""
    height, width = labels.shape
    per_row = (width + BLOCK - 1) >> BLOCK_SHIFT
    n_blocks = per_row * ((height + BLOCK - 1) >> BLOCK_SHIFT)
    seen = np.full(count + 1, -1, dtype=np.int32)  # the block a component was last seen in
    local = np.zeros(count + 1, dtype=np.int32)  # its local index there
    # First pass: how many (block, component) pairs, to size the table.
    total = 0
    for b in range(n_blocks):
        y0 = (b // per_row) << BLOCK_SHIFT
        x0 = (b % per_row) << BLOCK_SHIFT
        for y in range(y0, min(y0 + BLOCK, height)):
            for x in range(x0, min(x0 + BLOCK, width)):
                c = labels[y, x]
                if c != 0 and seen[c] != b:
                    seen[c] = b
                    total += 1
    comps = np.empty(n_blocks + total, dtype=np.int32)
    seen[:] = -1
    end = n_blocks
    for b in range(n_blocks):
        comps[b] = end
        n_local = 0
        y0 = (b // per_row) << BLOCK_SHIFT
        x0 = (b % per_row) << BLOCK_SHIFT
        for y in range(y0, min(y0 + BLOCK, height)):
            for x in range(x0, min(x0 + BLOCK, width)):
                c = labels[y, x]
                if c == 0:
                    cells[y, x] = 0
                    continue
                if seen[c] != b:
                    seen[c] = b
                    n_local += 1
                    local[c] = n_local
                    comps[end] = c
                    end += 1
                cells[y, x] = local[c]
    return comps


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def component_at(cells, comps, x, y):
    """The global component id at ``(x, y)`` of a block-local grid, 0 where blocked."""
    local = cells[y, x]
    if local == 0:
        return 0
    per_row = (cells.shape[1] + BLOCK - 1) >> BLOCK_SHIFT
    return comps[comps[(y >> BLOCK_SHIFT) * per_row + (x >> BLOCK_SHIFT)] + local - 1]


@njit(cache=True, nogil=True, **NO_REFCOUNT)
def nearest_with_label(cells, comps, x, y, label, max_radius, diagonal):
    """The cell nearest to ``(x, y)`` (Euclidean; by hex distance on a hex map,
    ``diagonal`` >= DIAGONAL_HEX) in component ``label`` of the block-local grid
    ``cells`` / ``comps``, or any standable cell when ``label`` is 0.

    Searches square rings of growing radius and stops once no farther ring can hold a
    nearer cell (a hex move changes x and y by at most 1: ring r holds no cell nearer
    than r). Ties go to the first found (row-major within a ring).
    Returns (status, bx, by): status 0 found, 1 none within ``max_radius``.
    """
    height, width = cells.shape
    best = -1
    bx = -1
    by = -1
    for r in range(0, max_radius + 1):
        if best >= 0 and (r > best if diagonal >= DIAGONAL_HEX else r * r > best):
            break
        y_lo = y - r
        y_hi = y + r
        for yy in range(y_lo, y_hi + 1):
            if yy < 0 or yy >= height:
                continue
            edge_row = yy == y_lo or yy == y_hi
            step = 1 if edge_row else 2 * r
            xx = x - r
            while xx <= x + r:
                if 0 <= xx < width:
                    if cells[yy, xx] != 0 and (label == 0 or component_at(cells, comps, xx, yy) == label):
                        if diagonal >= DIAGONAL_HEX:
                            d = hex_distance(diagonal, xx, yy, x, y)
                        else:
                            d = (xx - x) * (xx - x) + (yy - y) * (yy - y)
                        if best < 0 or d < best:
                            best = d
                            bx = xx
                            by = yy
                if step == 0:
                    break
                xx += step
    if best < 0:
        return 1, -1, -1
    return 0, bx, by
