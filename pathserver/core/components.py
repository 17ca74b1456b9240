"""Connected components of a passability grid.

Under the no-corner-cutting rule a diagonal step needs both orthogonal neighbours
passable, so it never joins cells that were not already joined orthogonally: the
components are the 4-connected ones. Only ``diagonal="always"`` (corner cutting) joins
cells diagonally, hence the ``eight`` flag.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def label_components(passable, eight, labels):
    """Label the components of ``passable`` (uint8 (H, W), ``[y, x]``).

    labels: int32 (H, W) output: 0 on impassable cells, 1..n on passable ones.
    eight: 1 to join diagonal neighbours too. Returns n, the number of components.
    """
    height, width = passable.shape
    labels[:, :] = 0
    queue = np.empty(height * width, dtype=np.int32)
    count = 0
    for sy in range(height):
        for sx in range(width):
            if passable[sy, sx] == 0 or labels[sy, sx] != 0:
                continue
            count += 1
            labels[sy, sx] = count
            head = 0
            tail = 0
            queue[tail] = sy * width + sx
            tail += 1
            while head < tail:
                node = queue[head]
                head += 1
                y = node // width
                x = node - y * width
                for dy in range(-1, 2):
                    ny = y + dy
                    if ny < 0 or ny >= height:
                        continue
                    for dx in range(-1, 2):
                        if dx == 0 and dy == 0:
                            continue
                        if dx != 0 and dy != 0 and eight == 0:
                            continue
                        nx = x + dx
                        if nx < 0 or nx >= width:
                            continue
                        if passable[ny, nx] != 0 and labels[ny, nx] == 0:
                            labels[ny, nx] = count
                            queue[tail] = ny * width + nx
                            tail += 1
    return count


@njit(cache=True, nogil=True)
def nearest_with_label(labels, x, y, label, max_radius):
    """The cell nearest to ``(x, y)`` (Euclidean) whose label is ``label``, or any
    nonzero label when ``label`` is 0.

    Searches square rings of growing radius and stops once no farther ring can hold a
    nearer cell. Ties go to the first found (row-major within a ring).
    Returns (status, bx, by): status 0 found, 1 none within ``max_radius``.
    """
    height, width = labels.shape
    best = -1
    bx = -1
    by = -1
    for r in range(0, max_radius + 1):
        if best >= 0 and r * r > best:
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
                    lab = labels[yy, xx]
                    if lab != 0 and (label == 0 or lab == label):
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
