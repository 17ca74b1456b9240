"""The A* open list (pathserver.core.heap's pair_* heap) against a plain dict of the open
entries, whose first entry is found by scanning: the least key, then the largest tag."""

import numpy as np
import pytest

from pathserver.core.heap import NODE_MASK, pair_pop, pair_replace_top, pair_sift_up
from pathserver.core.jit import njit

PUSH, DECREASE, POP, REPLACE = 0, 1, 2, 3


@njit(cache=True)
def run_ops(ops, keys, tags, capacity):
    """Apply ops (PUSH / DECREASE / POP / REPLACE with keys[k], tags[k]) to an empty heap;
    returns the tags taken off it, in order, and the final size."""
    heap_keys = np.zeros(capacity)
    heap_tags = np.zeros(capacity, np.int64)
    pos = np.full(capacity, -1, np.int32)
    out = np.full(ops.shape[0], -1, np.int64)
    size = 0
    for k in range(ops.shape[0]):
        op = ops[k]
        if op == PUSH:
            pair_sift_up(heap_keys, heap_tags, pos, size, keys[k], tags[k])
            size += 1
        elif op == DECREASE:
            pair_sift_up(heap_keys, heap_tags, pos, pos[tags[k] & NODE_MASK], keys[k], tags[k])
        elif op == POP:
            out[k], size = pair_pop(heap_keys, heap_tags, pos, size)
        else:
            out[k] = pair_replace_top(heap_keys, heap_tags, pos, size, keys[k], tags[k])
        # pos must say where each entry is
        for i in range(size):
            if pos[heap_tags[i] & NODE_MASK] != i:
                out[k] = -2
    return out, size


def first(entries):
    return min(entries.items(), key=lambda item: (item[1][0], -item[1][1]))[0]


@pytest.mark.parametrize("seed", range(12))
def test_pair_heap_takes_entries_in_key_then_larger_tag_order(seed):
    rng = np.random.default_rng(seed)
    nodes = 300
    spread = [3, 20, 1000][seed % 3]  # few distinct keys: many ties, broken by the tag
    entries = {}  # node -> (key, tag)
    ops, keys, tags, expect = [], [], [], []
    fresh = list(rng.permutation(nodes))
    for _ in range(3000):
        choice = rng.random()
        key = float(rng.integers(0, spread)) / 4
        if entries and choice < 0.3:
            node = first(entries)
            expect.append(entries.pop(node)[1])
            ops.append(POP), keys.append(0.0), tags.append(0)
        elif entries and fresh and choice < 0.4:
            # REPLACE takes the first entry and puts a new one in its place
            node = int(fresh.pop())
            tag = (int(rng.integers(0, 4)) << 32) | node
            top = first(entries)
            expect.append(entries.pop(top)[1])
            entries[node] = (key, tag)
            ops.append(REPLACE), keys.append(key), tags.append(tag)
        elif entries and choice < 0.6:
            node = int(rng.choice(list(entries)))
            old_key, old_tag = entries[node]
            key = old_key - float(rng.integers(0, 3)) / 4  # no larger
            tag = (int(rng.integers(0, 4)) << 32) | node if key < old_key else old_tag
            entries[node] = (key, tag)
            ops.append(DECREASE), keys.append(key), tags.append(tag), expect.append(-1)
        elif fresh:
            node = int(fresh.pop())
            tag = (int(rng.integers(0, 4)) << 32) | node
            entries[node] = (key, tag)
            ops.append(PUSH), keys.append(key), tags.append(tag), expect.append(-1)
        else:
            continue
        if ops[-1] != PUSH and ops[-1] != DECREASE:
            fresh.append(int(expect[-1]) & NODE_MASK)
    while entries:
        node = first(entries)
        expect.append(entries.pop(node)[1])
        ops.append(POP), keys.append(0.0), tags.append(0)
    out, size = run_ops(np.array(ops, np.int64), np.array(keys), np.array(tags, np.int64), nodes)
    assert size == 0
    assert list(out) == expect
