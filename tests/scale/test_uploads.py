"""Uploaded maps behind a broker: the edit log keeps the newest upload of each name (and
only that), workers apply other workers' puts and drops in the broker's order, and a
worker that joins later gets them, also after the log was trimmed."""

import threading
import time

import numpy as np

from pathserver import find_path
from pathserver.client import Client
from pathserver.editlog import _ENTRY, _LOG, EditLog, SharedEdits
from pathserver.server.handlers import build_upload
from pathserver.protocol.cells import MapCells
from scale.cluster import settled, worker_identity
from scale.test_cluster import stats_by_worker


def seqs(reply: list) -> list[int]:
    return [_ENTRY.unpack(reply[i])[1] for i in range(2, len(reply), 2)]


# -- the broker's log, alone ---------------------------------------------------------------


def test_a_later_put_or_drop_of_a_name_leaves_only_a_stub_of_the_older_put():
    log = EditLog(limit=100, epoch=1)
    log.append_upload(b"a", b"A1" * 1000, b"stub-a1")
    log.append(b"edit")
    log.append_upload(b"b", b"B1" * 1000, b"stub-b1")
    log.append_upload(b"a", b"A2" * 1000, b"stub-a2")
    assert log.upload_bytes() == 4000
    reply = log.catch_up(0)
    assert seqs(reply) == [1, 2, 3, 4]
    assert reply[3] == b"stub-a1" and reply[5] == b"edit" and reply[9] == b"A2" * 1000
    log.append_drop(b"a", b"drop-a")
    assert log.upload_bytes() == 2000
    assert log.catch_up(0)[9] == b"stub-a2"


def test_trimming_keeps_the_newest_upload_of_each_name_and_sends_it_first():
    log = EditLog(limit=2, epoch=1)
    log.append_upload(b"a", b"A1", b"stub")  # 1: superseded by 5
    log.append_upload(b"b", b"B1", b"stub")  # 2: kept
    log.append(b"e3")
    log.append(b"e4")
    log.append_upload(b"a", b"A2", b"stub")  # 5: kept
    for i in range(6, 12):
        log.append(f"e{i}".encode())
    reply = log.catch_up(0)
    _, oldest, newest = _LOG.unpack(reply[1])
    assert newest == 11 and oldest > 5
    assert seqs(reply)[:2] == [2, 5] and reply[3] == b"B1" and reply[5] == b"A2"
    assert seqs(reply)[2:] == list(range(oldest, 12))
    # Past the snapshot: only the log.
    assert seqs(log.catch_up(5)) == list(range(oldest, 12))
    log.append_drop(b"b", b"drop-b")
    assert seqs(log.catch_up(0))[:1] == [5]


def test_a_catch_up_reply_stops_at_the_byte_budget(monkeypatch):
    monkeypatch.setattr("pathserver.editlog.FETCH_BYTES", 2500)
    log = EditLog(limit=100, epoch=1)
    for name in (b"a", b"b", b"c"):
        log.append_upload(name, b"x" * 1000, b"stub")
    assert seqs(log.catch_up(0)) == [1, 2]
    assert seqs(log.catch_up(2)) == [3]


# -- workers in one process ----------------------------------------------------------------


def put(worker: SharedEdits, name: str, walkable: np.ndarray, cost=None, tags=None, **more):
    """What the server's put_map handler does on ``worker`` (``more``: tag_names, classes)."""
    cells = MapCells.from_arrays(walkable, costs=cost, tags=tags)
    fields = {"map": name, "width": cells.width, "height": cells.height, **cells.to_wire(),
              "origin": [0.0, 0.0], "cell_size": 1.0, **more}
    return worker.put_map(name, build_upload(fields), wire=fields)


def test_a_put_reaches_every_worker_and_one_that_joins_later(broker, join):
    running = broker()
    first, second = join(running), join(running)
    rng = np.random.default_rng(3)
    walkable = rng.random((40, 30)) > 0.3
    cost = rng.integers(1, 9, size=walkable.shape).astype(float)
    put(first, "world", walkable, cost)
    settled([first, second], 1)
    for worker in (first, second):
        gridmap = worker.get("world")
        assert np.array_equal(gridmap.walkable, walkable)
        assert np.array_equal(gridmap.cost[walkable], cost[walkable])
    late = join(running)
    settled([late], 1)
    assert np.array_equal(late.get("world").walkable, walkable)
    assert late.info()[-1]["source"] == "upload"
    assert first.feed_stats()["reapplied"] == 0  # its own put, not rebuilt when it came back


def test_a_put_with_tags_and_unit_classes_reaches_every_worker(broker, join):
    running = broker()
    first, second = join(running), join(running)
    walkable = np.ones((3, 6), dtype=bool)
    tags = np.zeros(walkable.shape, dtype=np.uint8)
    tags[:, 2:4] = 1
    put(first, "river", walkable, tags=tags, tag_names={"water": 1}, classes={"tank": {"water": None}})
    settled([first, second], 1)
    gridmap = second.get("river")
    assert gridmap.tag_names == {"water": 1} and gridmap.classes == {"tank": {"water": None}}
    assert find_path(gridmap, (0, 1), (5, 1), traversal="tank").status == "no_path"
    assert find_path(gridmap, (0, 1), (5, 1)).status == "found"


def test_puts_edits_and_drops_from_two_workers_converge(broker, join):
    running = broker()
    workers = [join(running), join(running)]
    open_map = np.ones((8, 12), dtype=bool)

    def churn(worker, seed):
        rng = np.random.default_rng(seed)
        for _ in range(15):
            choice = rng.integers(4)
            try:
                if choice == 0:
                    put(worker, "shared", rng.random(open_map.shape) > 0.2)
                elif choice == 1:
                    worker.drop_map("shared")
                else:
                    worker.apply_edit("shared", cells=[(int(rng.integers(12)), int(rng.integers(8)))],
                                      solid=bool(rng.integers(2)))
            except Exception:
                pass  # no map of that name here now: an unknown_map reply, nothing sent

    threads = [threading.Thread(target=churn, args=(w, i)) for i, w in enumerate(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    # Every change queued is numbered once none is pending: settled on the count of them all.
    settled(workers, sum(w._own_seq for w in workers))
    put(workers[0], "shared", open_map)
    settled(workers, sum(w._own_seq for w in workers))
    workers[1].apply_edit("shared", rects=[(3, 3, 2, 2)], solid=True)
    sent = sum(w._own_seq for w in workers)
    settled(workers, sent)
    late = join(running)
    settled([late], sent)
    states = []
    for worker in [*workers, late]:
        served = "shared" in worker.names()
        states.append((served, worker.get("shared").walkable.tobytes() if served else None))
    assert states[0] == states[1] == states[2]
    assert states[0][0] and not late.get("shared").walkable[3, 3]


def test_a_worker_joining_after_the_log_was_trimmed_still_gets_the_upload(broker, join):
    running = broker(edit_log=2)
    worker = join(running)
    walkable = np.ones((6, 6), dtype=bool)
    walkable[2, 1:5] = False
    put(worker, "keep", walkable)
    for x in range(6):
        worker.apply_edit("rooms", cells=[(x, 0)], solid=True)
    settled([worker], 7)
    late = join(running)
    settled([late], 7)
    assert np.array_equal(late.get("keep").walkable, walkable)


# -- processes, through the client ---------------------------------------------------------


def test_an_upload_through_the_broker_is_served_by_every_worker_and_a_later_one(cluster):
    cluster.start_broker()
    first, second = cluster.start_workers(2)
    identities = [worker_identity(first), worker_identity(second)]
    walkable = np.ones((20, 30), dtype=bool)
    walkable[:, 15] = False
    walkable[10, 15] = True  # one door
    with Client(cluster.front, timeout=5.0) as client:
        reply = client.put_map("uploaded", walkable)
        assert reply["width"] == 30 and reply["height"] == 20
        deadline = time.monotonic() + 10
        while True:
            seen = stats_by_worker(client, identities)
            if all(s["edit_feed"]["seq"] >= 1 and s["edit_feed"]["pending"] == 0 for s in seen.values()):
                break
            assert time.monotonic() < deadline, seen
        answers = [client.find_path("uploaded", [0, 0], [29, 19]) for _ in range(6)]
        assert {a["status"] for a in answers} == {"found"}
        assert len({a["cost"] for a in answers}) == 1
        (late,) = cluster.start_workers(1)
        first.kill()
        second.kill()
        assert client.find_path("uploaded", [0, 0], [29, 19])["cost"] == answers[0]["cost"]
        got = client.get_map("uploaded")
        assert np.array_equal(got.walkable, walkable)
        assert client.stats()["worker"] == worker_identity(late)
        client.drop_map("uploaded")
        assert "uploaded" not in [entry["name"] for entry in client.maps()]
