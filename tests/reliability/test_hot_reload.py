"""Hot reload under load, against the real server process (its own watcher, its defaults).

The map ``hot`` is rewritten many times while clients keep paths in flight. Its versions
differ where it matters: a wall splits the map at column WALL_X with a one-cell gap whose
row depends on the version, so a path across is valid for exactly one version; and
version ``v`` also blocks ``v`` pebbles in row 0, so the blocked-cell count, hence the
``walkable_share`` the ``maps`` op reports next to each ``gen``, names the version.

Which content is each generation? A poller asks ``maps`` every few milliseconds and
records ``gen -> version`` from the share. The writer waits until the poller has seen
each version before writing the next, so every version gets a generation. A generation
the poller never saw (a second reload of the same file between two polls) lies between
two it saw, and the path must be valid for one of those two versions; such answers are
counted separately. Every path (``smooth: none``: every cell) is checked cell by cell:
on the map, walkable, 8-adjacent, no corner cut, from start to goal.

Then malformed files are written under the same load: every request still succeeds on
the last good generation, and ``stats.reloads_failed`` counts every failure.

Rewrites: ``PATHSERVER_RELOAD_VERSIONS`` (default 24); ``--slow`` runs 36 (the gap rows
run out at 38).
"""

import os
import random
import threading
import time

import msgpack
import pytest
import zmq

from reliability.helpers import Dealer, ServerProcess, env_int, movingai, record, wait_for, write_atomically
from sockets import bounded_socket

WIDTH, HEIGHT = 48, 40
WALL_X = 24
VERSIONS = env_int("PATHSERVER_RELOAD_VERSIONS", 24)
LONG_VERSIONS = 36
CLIENTS, INFLIGHT = 4, 8


def gap_row(version: int) -> int:
    """Distinct for 38 consecutive versions (7 and 38 are coprime); never row 0."""
    return 1 + (version * 7) % (HEIGHT - 2)


def blocked(version: int) -> set:
    cells = {(WALL_X, y) for y in range(HEIGHT) if y != gap_row(version)}
    # The pebbles that make the share unique (never on the wall's own cell in row 0).
    cells |= {(x, 0) for x in [x for x in range(WIDTH) if x != WALL_X][:version]}
    return cells


def rows(version: int) -> list[str]:
    walls = blocked(version)
    return ["".join("@" if (x, y) in walls else "." for x in range(WIDTH)) for y in range(HEIGHT)]


def share(version: int) -> float:
    return 1.0 - len(blocked(version)) / (WIDTH * HEIGHT)


def version_of_share(value: float) -> int | None:
    blocked_cells = round((1.0 - value) * WIDTH * HEIGHT)
    version = blocked_cells - (HEIGHT - 1)
    return version if 0 <= version <= LONG_VERSIONS else None


MALFORMED = [
    ("fewer rows than the header", movingai(rows(0))[: len(movingai(rows(0))) // 2]),
    ("an unknown character", movingai(rows(0)).replace(".", "?", 1)),
    ("a row too long", movingai(rows(0)).replace("\n.", "\n..", 1)),
    ("an empty file", ""),
    ("binary garbage", "\x00\x01\x02 not a map \xff\xfe"),
    ("an absurd size", "type octile\nheight 999999999\nwidth 999999999\nmap\n....\n"),
    ("a wrong header", "type hexagonal\nheight 2\nwidth 2\nmap\n..\n..\n"),
]


def path_is_valid(path: list, start, goal, version: int) -> str | None:
    """None when ``path`` is a legal every-cell path on ``version``, else why not."""
    walls = blocked(version)
    if not path or list(path[0]) != list(start) or list(path[-1]) != list(goal):
        return "wrong ends"
    for (x, y) in path:
        if not (0 <= x < WIDTH and 0 <= y < HEIGHT) or (x, y) in walls:
            return f"({x}, {y}) blocked or off the map"
    for (x0, y0), (x1, y1) in zip(path, path[1:]):
        dx, dy = x1 - x0, y1 - y0
        if max(abs(dx), abs(dy)) != 1:
            return f"jump ({x0}, {y0}) -> ({x1}, {y1})"
        if dx and dy and ((x0 + dx, y0) in walls or (x0, y0 + dy) in walls):
            return f"corner cut at ({x0}, {y0})"
    return None


class Poller(threading.Thread):
    """Asks ``maps`` in a loop; keeps ``gen -> version`` for the map ``hot``."""

    def __init__(self, endpoint: str):
        super().__init__(daemon=True)
        self.endpoint = endpoint
        self.known: dict[int, int] = {}
        self.latest: tuple | None = None  # (gen, version, last_error)
        self.stop_event = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        context = zmq.Context()
        dealer = Dealer(context, self.endpoint)
        try:
            rid = 0
            while not self.stop_event.is_set():
                rid += 1
                for entry in dealer.ask({"id": rid, "op": "maps"})["maps"]:
                    if entry["name"] == "hot" and entry["gen"] is not None:
                        version = version_of_share(entry["walkable_share"])
                        assert version is not None, entry
                        assert self.known.setdefault(entry["gen"], version) == version, (entry, self.known)
                        self.latest = (entry["gen"], version, entry["last_error"])
                self.stop_event.wait(0.003)
        except BaseException as exc:
            self.error = exc
        finally:
            dealer.close()
            context.term()


class Load(threading.Thread):
    """CLIENTS DEALERs with INFLIGHT path requests each (and a ``paths`` batch now and
    then) across the wall of ``hot``; records every answer."""

    def __init__(self, endpoint: str, seed: int):
        super().__init__(daemon=True)
        self.endpoint = endpoint
        self.rng = random.Random(seed)
        self.answers: list = []  # (gen, path, start, goal)
        self.failures: list = []
        self.sent = 0
        self.lost = 0
        self.unmatched = 0
        self.stop_event = threading.Event()
        self.error: BaseException | None = None

    def _trip(self):
        start = (self.rng.randrange(0, WALL_X), self.rng.randrange(1, HEIGHT))
        goal = (self.rng.randrange(WALL_X + 1, WIDTH), self.rng.randrange(1, HEIGHT))
        return start, goal

    def _send(self, sock, pending: dict) -> None:
        self.sent += 1
        rid = self.sent
        if rid % 10 == 0:
            trips = [self._trip() for _ in range(4)]
            request = {"id": rid, "op": "paths", "map": "hot", "smooth": "none",
                       "requests": [{"start": list(s), "goal": list(g)} for s, g in trips]}
        else:
            trips = [self._trip()]
            (start, goal), = trips
            request = {"id": rid, "op": "path", "map": "hot", "start": list(start), "goal": list(goal),
                       "smooth": "none"}
        pending[rid] = trips
        sock.send(msgpack.packb(request))

    def _take(self, reply: dict, trips: list) -> None:
        if not reply["ok"]:
            self.failures.append(reply)
            return
        results = reply["results"] if "results" in reply else [reply]
        for result, (start, goal) in zip(results, trips):
            if not result["ok"] or result["status"] != "found":
                self.failures.append(result)
            else:
                self.answers.append((result["gen"], result["path"], start, goal))

    def run(self) -> None:
        context = zmq.Context()
        sockets = []
        try:
            poller = zmq.Poller()
            pending = {}
            for _ in range(CLIENTS):
                sock = bounded_socket(context, connect=self.endpoint)
                sockets.append(sock)
                poller.register(sock, zmq.POLLIN)
                pending[sock] = {}
                for _ in range(INFLIGHT):
                    self._send(sock, pending[sock])
            deadline = None
            while True:
                if self.stop_event.is_set() and deadline is None:
                    deadline = time.monotonic() + 5.0
                if deadline is not None and (not any(pending.values()) or time.monotonic() > deadline):
                    break
                for sock, _ in poller.poll(50):
                    while True:
                        try:
                            reply = msgpack.unpackb(sock.recv(zmq.NOBLOCK), raw=False)
                        except zmq.Again:
                            break
                        trips = pending[sock].pop(reply.get("id"), None)
                        if trips is None:
                            self.unmatched += 1
                            continue
                        self._take(reply, trips)
                        if not self.stop_event.is_set():
                            self._send(sock, pending[sock])
            self.lost = sum(len(p) for p in pending.values())
        except BaseException as exc:
            self.error = exc
        finally:
            for sock in sockets:
                sock.close(linger=0)
            context.term()


def versions_for(gen: int, known: dict) -> tuple:
    """The versions ``gen`` may hold: its own if the poller saw it, else those of the
    nearest generations seen below and above it."""
    if gen in known:
        return (known[gen],)
    below = [g for g in known if g < gen]
    above = [g for g in known if g > gen]
    return tuple({known[max(below)]} | ({known[min(above)]} if above else set())) if below else ()


@pytest.fixture
def hot_server(tmp_path):
    folder = tmp_path / "hot-maps"
    folder.mkdir()
    (folder / "hot.map").write_text(movingai(rows(0)))
    server = ServerProcess(folder)
    try:
        server.start()
        yield server, folder / "hot.map"
    finally:
        server.close()


def reload_under_load(hot_server, versions: int) -> None:
    server, path = hot_server
    poller = Poller(server.endpoint)
    poller.start()
    wait_for(lambda: poller.latest and poller.latest[1] == 0, what="version 0 seen")
    load = Load(server.endpoint, seed=3)
    load.start()
    failed_before = server.stats()["reloads_failed"]
    started = time.monotonic()
    try:
        # Good versions, alternately saved atomically and rewritten in place (a loader
        # may then read half a file: that must fail the load, not serve half a map).
        for version in range(1, versions + 1):
            text = movingai(rows(version))
            if version % 2:
                write_atomically(path, text)
            else:
                with open(path, "w") as file:
                    file.write(text)
            wait_for(lambda: poller.latest and poller.latest[1] == version, timeout=10,
                     what=f"version {version} served")
            assert load.is_alive() and poller.is_alive()
        rewrite_s = time.monotonic() - started
        good_gen = poller.latest[0]
        answers_before_bad = len(load.answers)
        failed_mid = server.stats()["reloads_failed"]
        for i, (_, text) in enumerate(MALFORMED):
            with open(path, "w") as file:
                file.write(text)
            wait_for(lambda: server.stats()["reloads_failed"] >= failed_mid + i + 1, timeout=10,
                     what=f"malformed file {i} refused")
            time.sleep(0.05)  # load keeps running on the good map meanwhile
        entry = next(e for e in server_maps(server) if e["name"] == "hot")
        assert entry["gen"] == good_gen and entry["last_error"], entry
        # Why, for people, but not where the server keeps its files.
        assert "Traceback" not in entry["last_error"] and str(path.parent) not in entry["last_error"]
        assert entry["last_error"].startswith("hot.map: "), entry["last_error"]
        failed_after_bad = server.stats()["reloads_failed"]
        # And a good file again clears the error.
        write_atomically(path, movingai(rows(versions + 1 if versions < LONG_VERSIONS else 0)))
        wait_for(lambda: poller.latest and poller.latest[0] > good_gen and poller.latest[2] is None, timeout=10,
                 what="good file served again")
    finally:
        load.stop_event.set()
        load.join(15)
        poller.stop_event.set()
        poller.join(5)
    assert load.error is None and poller.error is None, (load.error, poller.error)
    assert not load.failures, load.failures[:5]
    assert load.lost == 0 and load.unmatched == 0

    exact = bracketed = 0
    invalid = []
    for gen, cells, start, goal in load.answers:
        candidates = versions_for(gen, poller.known)
        assert candidates, f"gen {gen} older than any generation seen"
        reasons = [path_is_valid(cells, start, goal, v) for v in candidates]
        if all(reasons):
            invalid.append((gen, candidates, reasons))
        if len(candidates) == 1:
            exact += 1
        else:
            bracketed += 1
    during_bad = [a for a in load.answers[answers_before_bad:] if a[0] <= good_gen]
    record("reload", f"{versions} rewrites (half atomic, half in place) in {rewrite_s:.1f} s under "
                     f"{CLIENTS}x{INFLIGHT} in flight: {len(load.answers)} paths checked cell by cell, "
                     f"{len(invalid)} invalid for their generation ({exact} by an observed gen, "
                     f"{bracketed} by neighbouring gens), 0 failed requests, 0 lost")
    record("reload", f"{len(poller.known)} generations seen; loads failed on half-written in-place "
                     f"rewrites: {failed_mid - failed_before}; {len(MALFORMED)} malformed files -> "
                     f"reloads_failed +{failed_after_bad - failed_mid}, {len(during_bad)} paths served meanwhile "
                     f"on gen {good_gen}, all valid")
    assert not invalid, invalid[:5]
    assert failed_after_bad - failed_mid >= len(MALFORMED)
    assert len(during_bad) > 0


def server_maps(server) -> list:
    context = zmq.Context()
    dealer = Dealer(context, server.endpoint)
    try:
        return dealer.ask({"id": 1, "op": "maps"})["maps"]
    finally:
        dealer.close()
        context.term()


def test_hot_reload_under_load(hot_server):
    reload_under_load(hot_server, VERSIONS)


@pytest.mark.slow
def test_hot_reload_under_load_long(hot_server):
    reload_under_load(hot_server, LONG_VERSIONS)


def test_the_versions_tell_each_other_apart():
    """The check above is only as good as this: no path valid for one version is valid
    for another, and the share names the version."""
    for v in range(LONG_VERSIONS + 1):
        assert version_of_share(share(v)) == v
        crossing = [(x, gap_row(v)) for x in range(WALL_X - 2, WALL_X + 3)]
        assert path_is_valid(crossing, crossing[0], crossing[-1], v) is None
        others = [w for w in range(LONG_VERSIONS + 1) if gap_row(w) != gap_row(v)]
        assert all(path_is_valid(crossing, crossing[0], crossing[-1], w) for w in others)
    assert len({gap_row(v) for v in range(HEIGHT - 2)}) == HEIGHT - 2
    assert os.path.basename(__file__).startswith("test_")
