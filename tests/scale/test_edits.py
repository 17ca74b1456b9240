"""The edit feed in one process: a Broker in a thread, and SharedEdits over real map
registries standing in for workers (no request path involved)."""

import random
import threading

import numpy as np
import pytest

from pathserver.editlog import SharedEdits, edit_endpoints
from pathserver.maps.registry import MapRegistry
from scale.cluster import settled


def cells(worker: SharedEdits):
    gridmap = worker.get("rooms")
    return gridmap.walkable.copy(), np.asarray(gridmap.cost).copy()


def random_edit(rng: random.Random) -> dict:
    x, y = rng.randrange(11), rng.randrange(5)
    if rng.random() < 0.5:
        return {"cells": [(x, y)], "solid": rng.random() < 0.5}
    return {"rects": [(x, y, rng.randint(1, 4), rng.randint(1, 3))], "solid": rng.random() < 0.5,
            "cost": float(rng.randint(1, 4))}


def test_concurrent_conflicting_edits_leave_every_worker_with_the_same_cells(broker, join):
    running = broker()
    workers = [join(running), join(running)]
    per_worker = 150

    def edit(worker, seed):
        rng = random.Random(seed)
        for _ in range(per_worker):
            worker.apply_edit("rooms", **random_edit(rng))

    threads = [threading.Thread(target=edit, args=(w, i)) for i, w in enumerate(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    settled(workers, 2 * per_worker)
    (walk_a, cost_a), (walk_b, cost_b) = cells(workers[0]), cells(workers[1])
    assert np.array_equal(walk_a, walk_b)
    assert np.array_equal(cost_a, cost_b)
    # A worker that joins afterwards replays the log and ends up the same.
    late = join(running)
    settled([late], 2 * per_worker)
    walk_late, cost_late = cells(late)
    assert np.array_equal(walk_late, walk_a)
    assert np.array_equal(cost_late, cost_a)
    for worker in workers:
        stats = worker.feed_stats()
        assert stats["epoch"] == running.epoch
        assert stats["sent"] == per_worker
        assert stats["applied"] == per_worker  # the other worker's edits
        assert stats["failed"] == stats["unconfirmed"] == stats["missed"] == 0


def test_an_edit_applies_where_it_was_made_before_the_reply(broker, join):
    running = broker()
    worker, other = join(running), join(running)
    before = worker.get("rooms").generation
    edited = worker.apply_edit("rooms", cells=[(5, 2)], solid=True)
    assert edited.generation > before
    assert not worker.get("rooms").walkable[2, 5]  # [y, x]
    settled([worker, other], 1)
    assert not other.get("rooms").walkable[2, 5]


def test_a_worker_joining_after_the_log_was_trimmed_counts_what_it_missed(broker, join):
    running = broker(edit_log=2)
    worker = join(running)
    for x in range(5):
        worker.apply_edit("rooms", cells=[(x, 0)], solid=True)
    settled([worker], 5)
    late = join(running)
    settled([late], 5)
    stats = late.feed_stats()
    # The log keeps between edit_log and twice that: here edits 3..5 of 5.
    assert stats["missed"] == 2
    assert stats["applied"] == 3


def test_an_edit_the_feed_never_delivered_arrives_through_the_periodic_resync(broker, join, maps_dir):
    running = broker()
    worker = join(running)
    registry = MapRegistry(maps_dir)
    registry.load_all()
    # Subscribed to a feed nobody publishes on: every edit it gets comes from the log.
    deaf = SharedEdits(registry, running.endpoints["edits"], "tcp://127.0.0.1:1", identity="deaf")
    deaf.start()
    try:
        assert deaf.caught_up.wait(5)
        worker.apply_edit("rooms", cells=[(5, 2)], solid=True)
        settled([deaf], 1, timeout=3.0)
        assert not deaf.get("rooms").walkable[2, 5]
    finally:
        deaf.close()


def test_the_edit_endpoints_default_to_the_next_two_ports():
    assert edit_endpoints("tcp://10.0.0.7:5556") == ("tcp://10.0.0.7:5557", "tcp://10.0.0.7:5558")
    with pytest.raises(ValueError):
        edit_endpoints("tcp://127.0.0.1:0")
