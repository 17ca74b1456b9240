"""An indexed binary min-heap over node ids, in caller-owned arrays.

heap_nodes: int32 (N,) node ids in heap order; heap_f: float64 (N,) their f keys;
heap_h: float64 (N,) their h values, the tie-break (equal f: smaller h first, i.e.
toward the goal); pos: int32 (N,) each node's index in the heap, valid only while the
node is open (the search's stamps say so). Each function returns the new heap size.
"""

import numpy as np
from pathserver.core.jit import NO_REFCOUNT, njit


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _sift_up(heap_nodes, heap_f, heap_h, pos, i):
    node = heap_nodes[i]
    f = heap_f[i]
    h = heap_h[i]
    while i > 0:
        parent = (i - 1) >> 1
        pf = heap_f[parent]
        if pf < f or (pf == f and heap_h[parent] <= h):
            break
        heap_nodes[i] = heap_nodes[parent]
        heap_f[i] = pf
        heap_h[i] = heap_h[parent]
        pos[heap_nodes[i]] = i
        i = parent
    heap_nodes[i] = node
    heap_f[i] = f
    heap_h[i] = h
    pos[node] = i


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def heap_push(heap_nodes, heap_f, heap_h, pos, size, node, f, h):
    heap_nodes[size] = node
    heap_f[size] = f
    heap_h[size] = h
    _sift_up(heap_nodes, heap_f, heap_h, pos, size)
    return size + 1


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def heap_decrease(heap_nodes, heap_f, heap_h, pos, node, f, h):
    """Lower the key of an open node (its new key must not be larger)."""
    i = pos[node]
    heap_f[i] = f
    heap_h[i] = h
    _sift_up(heap_nodes, heap_f, heap_h, pos, i)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def heap_pop(heap_nodes, heap_f, heap_h, pos, size):
    """Remove the minimum; returns (node, new_size). The heap must not be empty."""
    top = heap_nodes[0]
    size -= 1
    if size == 0:
        return top, 0
    node = heap_nodes[size]
    f = heap_f[size]
    h = heap_h[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        right = child + 1
        if right < size and (heap_f[right] < heap_f[child] or (heap_f[right] == heap_f[child] and heap_h[right] < heap_h[child])):
            child = right
        cf = heap_f[child]
        if f < cf or (f == cf and h <= heap_h[child]):
            break
        heap_nodes[i] = heap_nodes[child]
        heap_f[i] = cf
        heap_h[i] = heap_h[child]
        pos[heap_nodes[i]] = i
        i = child
    heap_nodes[i] = node
    heap_f[i] = f
    heap_h[i] = h
    pos[node] = i
    return top, size


# -- one fused key per node ----------------------------------------------------------------
#
# For uniform-cost octile search the (f, h) pair fits one float: key = g + h * w * (1 + TIE).
# Two keys order like (f, then smaller h) unless their f values differ by less than
# TIE * h (~1e-6 on maps of a few thousand cells), and distinct octile costs a + b*sqrt(2)
# with a, b below a few thousand differ by far more (~1e-4): the order, and so the result,
# is the exact search's, with half the data moved per heap step.

TIE = 1e-9


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def key_sift_up(heap_nodes, heap_keys, pos, i):
    node = heap_nodes[i]
    key = heap_keys[i]
    while i > 0:
        parent = (i - 1) >> 1
        if heap_keys[parent] <= key:
            break
        heap_nodes[i] = heap_nodes[parent]
        heap_keys[i] = heap_keys[parent]
        pos[heap_nodes[i]] = i
        i = parent
    heap_nodes[i] = node
    heap_keys[i] = key
    pos[node] = i


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def key_pop(heap_nodes, heap_keys, pos, size):
    """Remove the minimum; returns (node, new_size). The heap must not be empty."""
    top = heap_nodes[0]
    size -= 1
    if size == 0:
        return top, 0
    node = heap_nodes[size]
    key = heap_keys[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and heap_keys[child + 1] < heap_keys[child]:
            child += 1
        if key <= heap_keys[child]:
            break
        heap_nodes[i] = heap_nodes[child]
        heap_keys[i] = heap_keys[child]
        pos[heap_nodes[i]] = i
        i = child
    heap_nodes[i] = node
    heap_keys[i] = key
    pos[node] = i
    return top, size


# -- (key, tag) pairs -----------------------------------------------------------------
#
# An indexed 4-ary heap (children of i: 4i+1 .. 4i+4, half the depth of a binary heap),
# ordered by a float64 key and then by an int64 tag, larger first, whose low 32 bits are
# the node id (the high bits may hold a tie-break, see :func:`pathserver.core.astar.astar`):
# every entry has its own place in the order, and three arrays move per step instead of
# four. heap_keys float64 (N,), heap_tags int64 (N,), pos int32 (N,) each node's index in
# the heap, valid while the node is open.

NODE_MASK = 0xFFFFFFFF
# Heap indices are unsigned: numba adds negative-index wraparound code to every access
# through a signed index, and these loops are the hottest of A*.
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U2 = np.uint64(2)
_U3 = np.uint64(3)
_U4 = np.uint64(4)
_MASK = np.uint64(NODE_MASK)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def pair_before(key_a, tag_a, key_b, tag_b):
    """Whether entry a comes before entry b: the smaller key, then the larger tag."""
    return (key_a < key_b) | ((key_a == key_b) & (tag_a > tag_b))


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def pair_sift_up(heap_keys, heap_tags, pos, i, key, tag):
    """Place (key, tag) at index i or above (its key no larger than the entry there had)."""
    i = np.uint64(i)
    while i > _U0:
        up = (i - _U1) >> _U2
        up_key = heap_keys[up]
        up_tag = heap_tags[up]
        if pair_before(up_key, up_tag, key, tag):
            break
        heap_keys[i] = up_key
        heap_tags[i] = up_tag
        pos[np.uint64(up_tag) & _MASK] = i
        i = up
    heap_keys[i] = key
    heap_tags[i] = tag
    pos[np.uint64(tag) & _MASK] = i


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _earlier(heap_keys, heap_tags, a, b):
    """a or b, whichever entry comes first, as arithmetic on the index: which one is a
    coin toss a branch predictor cannot learn, and LLVM turns a select in these loops
    back into a jump."""
    take = pair_before(heap_keys[b], heap_tags[b], heap_keys[a], heap_tags[a])
    return a + (b - a) * np.uint64(take)


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def _first_child(heap_keys, heap_tags, child, n):
    """The earliest of the children child .. child + 3 that are below n (child < n)."""
    if child + _U3 < n:
        return _earlier(heap_keys, heap_tags, _earlier(heap_keys, heap_tags, child, child + _U1),
                        _earlier(heap_keys, heap_tags, child + _U2, child + _U3))
    best = child
    other = child + _U1
    while other < n:
        best = _earlier(heap_keys, heap_tags, best, other)
        other += _U1
    return best


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def pair_pop(heap_keys, heap_tags, pos, size):
    """Remove the first entry (least key, then largest tag); returns (tag, new_size). The
    heap must not be empty.

    Bottom-up: the hole at the root goes down to a leaf along the earliest children, with
    no comparison against the last entry, which then goes in at the hole and rises (the
    last entry belongs near the bottom: it rarely rises far)."""
    top = heap_tags[0]
    size -= 1
    if size == 0:
        return top, 0
    n = np.uint64(size)
    key = heap_keys[n]
    tag = heap_tags[n]
    i = _U0
    child = _U1
    while child < n:
        child = _first_child(heap_keys, heap_tags, child, n)
        child_tag = heap_tags[child]
        heap_keys[i] = heap_keys[child]
        heap_tags[i] = child_tag
        pos[np.uint64(child_tag) & _MASK] = i
        i = child
        child = _U4 * i + _U1
    pair_sift_up(heap_keys, heap_tags, pos, i, key, tag)
    return top, size


@njit(cache=True, nogil=True, inline="always", **NO_REFCOUNT)
def pair_replace_top(heap_keys, heap_tags, pos, size, key, tag):
    """Remove the first entry and insert (key, tag) in one pass (``size`` >= 1 stays the
    size): the entry goes in at the root and sinks, which for an entry that comes early
    in the order is far shorter than a pop's sinking of the last entry and a push.
    Returns the removed entry's tag."""
    top = heap_tags[0]
    n = np.uint64(size)
    i = _U0
    child = _U1
    while child < n:
        child = _first_child(heap_keys, heap_tags, child, n)
        child_key = heap_keys[child]
        child_tag = heap_tags[child]
        if pair_before(key, tag, child_key, child_tag):
            break
        heap_keys[i] = child_key
        heap_tags[i] = child_tag
        pos[np.uint64(child_tag) & _MASK] = i
        i = child
        child = _U4 * i + _U1
    heap_keys[i] = key
    heap_tags[i] = tag
    pos[np.uint64(tag) & _MASK] = i
    return top
