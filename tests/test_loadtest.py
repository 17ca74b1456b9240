"""The load tester's own accounting, against fake ROUTER servers that misbehave on purpose,
and one short run against the real server."""

import json
import threading
import time

import msgpack
import pytest
import zmq

from pathserver import loadtest
from pathserver.loadtest import LoadConfig, LoadTestError, SpawnedServer, run_load
from sockets import bounded_socket

FAKE_MAPS = [{"name": "fake", "width": 32, "height": 32, "gen": 0}]


class FakeServer:
    """A ROUTER on a random loopback port answering ``maps`` and ``path``: it drops the
    reply to the ``drop``-th path request, sends the ``duplicate``-th twice, and before
    answering the ``stall_at``-th one stops reading for ``stall_s`` seconds; with
    ``refuse_maps`` it answers ``maps`` with an error."""

    def __init__(self, drop=None, duplicate=None, stall_at=None, stall_s=0.0, refuse_maps=False):
        self.drop, self.duplicate, self.refuse_maps = drop, duplicate, refuse_maps
        self.stall_at, self.stall_s = stall_at, stall_s
        self.paths = 0
        self.context = zmq.Context()
        self.router = bounded_socket(self.context, zmq.ROUTER)
        self.router.bind("tcp://127.0.0.1:*")
        self.endpoint = self.router.getsockopt_string(zmq.LAST_ENDPOINT)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(2)
        self.router.close(linger=0)
        self.context.term()

    def _serve(self):
        while not self.stop.is_set():
            if not self.router.poll(20, zmq.POLLIN):
                continue
            frames = self.router.recv_multipart()
            envelope, request = frames[:-1], msgpack.unpackb(frames[-1], raw=False)
            if request["op"] == "maps" and not self.refuse_maps:
                reply = {"id": request["id"], "ok": True, "maps": FAKE_MAPS}
            elif request["op"] == "path":
                self.paths += 1
                if self.paths == self.stall_at:
                    time.sleep(self.stall_s)
                if self.paths == self.drop:
                    continue
                reply = {"id": request["id"], "ok": True, "status": "found", "path": [request["start"], request["goal"]],
                         "cost": 1.0, "expanded": 1, "start": request["start"], "goal": request["goal"], "gen": 0}
            else:
                reply = {"id": request["id"], "ok": False, "retryable": False,
                         "error": {"code": "unknown_op", "message": "fake server", "at": "op"}}
            body = msgpack.packb(reply)
            self.router.send_multipart([*envelope, body])
            if request["op"] == "path" and self.paths == self.duplicate:
                self.router.send_multipart([*envelope, body])


def test_a_dropped_reply_is_lost_and_a_duplicate_is_unmatched():
    with FakeServer(drop=3, duplicate=5) as server:
        summary = run_load(LoadConfig(endpoint=server.endpoint, clients=2, inflight=2, requests=20, grace=0.3,
                                      connect_timeout=2))
    assert summary["requests"] == 20
    assert summary["replies"] == 19
    assert summary["lost"] == 1
    assert summary["unmatched"] == 1
    assert summary["unmatched_duplicates"] == 1
    assert summary["statuses"] == {"found": 19}
    assert summary["errors"] == {}


def test_the_command_prints_one_json_object_and_fails_on_lost_replies(capsys):
    with FakeServer(drop=2) as server:
        code = loadtest.main(["--endpoint", server.endpoint, "--requests", "10", "--inflight", "1",
                              "--grace", "0.3", "--json"])
    out = capsys.readouterr().out
    summary = json.loads(out)
    assert code == 1
    assert (summary["requests"], summary["replies"], summary["lost"], summary["unmatched"]) == (10, 9, 1, 0)
    assert set(summary["latency_ms"]) >= {"p50", "p90", "p99", "p999", "max"}
    assert summary["throughput_rps"] > 0


def test_open_loop_charges_a_stall_to_every_request_due_during_it():
    # 200 requests/s for 1 s; the server stops for 0.3 s at the 20th: about 60 requests
    # fall due meanwhile, waiting 0.3 s down to nothing, so the slowest 10% all waited
    # well over 0.1 s. A closed loop with one request in flight sees one slow reply.
    with FakeServer(stall_at=20, stall_s=0.3) as server:
        open_loop = run_load(LoadConfig(endpoint=server.endpoint, clients=2, rate=200, duration=1.0, grace=1.0))
    with FakeServer(stall_at=20, stall_s=0.3) as server:
        closed_loop = run_load(LoadConfig(endpoint=server.endpoint, clients=1, inflight=1, duration=1.0, grace=1.0))
    assert open_loop["lost"] == open_loop["unmatched"] == 0
    assert open_loop["latency_ms"]["max"] >= 250
    assert open_loop["latency_ms"]["p90"] >= 100
    assert closed_loop["latency_ms"]["max"] >= 250
    assert closed_loop["latency_ms"]["p90"] < 50


def test_no_server_is_a_clear_error():
    with zmq.Context() as context, bounded_socket(context, zmq.ROUTER) as unused:
        unused.bind("tcp://127.0.0.1:*")
        endpoint = unused.getsockopt_string(zmq.LAST_ENDPOINT)
    with pytest.raises(LoadTestError, match="no reply"):
        run_load(LoadConfig(endpoint=endpoint, inflight=1, requests=1, connect_timeout=0.3))


def test_a_refused_maps_request_is_a_clear_error():
    with FakeServer(refuse_maps=True) as server, pytest.raises(LoadTestError, match="refused the maps request"):
        run_load(LoadConfig(endpoint=server.endpoint, inflight=1, requests=1, connect_timeout=2))


def test_unknown_map_names_are_refused_before_the_run():
    with FakeServer() as server, pytest.raises(LoadTestError, match="does not serve nowhere"):
        run_load(LoadConfig(endpoint=server.endpoint, inflight=1, requests=1, map_names=("nowhere",)))


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib", reason="--plot needs the load extra: pip install 'pathserver[load]'")
    with FakeServer() as server:
        summary = run_load(LoadConfig(endpoint=server.endpoint, clients=2, inflight=2, requests=200, grace=0.3))
    out = tmp_path / "load.png"
    loadtest.plot(summary, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


SMALL_MAP = """type octile
height 16
width 24
map
........................
........................
....@@@@@@@@@@@.........
..............@.........
..............@.....@@..
..............@.....@@..
........................
..@@@@..................
..@@@@.......@@@@@@@@@..
.............@..........
.............@..........
.............@..........
........................
........................
........................
........................
"""


def test_a_short_run_against_the_real_server(tmp_path):
    (tmp_path / "small.map").write_text(SMALL_MAP)
    with SpawnedServer(tmp_path, timeout=120) as server:
        summary = run_load(LoadConfig(endpoint=server.endpoint, clients=3, inflight=4, requests=300, duration=3.0,
                                      unit_sizes=(1, 2, (2, 3)), updates_per_s=20, grace=1.0, seed=7))
    assert summary["lost"] == 0
    assert summary["unmatched"] == 0
    assert summary["replies"] == summary["requests"]
    assert summary["statuses"].get("found", 0) > 0
    assert summary["errors"] == {}


def test_map_rewrites_under_load_reload_on_a_copy_and_lose_nothing(tmp_path, capsys):
    folder = tmp_path / "maps"
    folder.mkdir()
    (folder / "small.map").write_text(SMALL_MAP)
    before = (folder / "small.map").stat().st_mtime_ns
    code = loadtest.main(["--spawn", "--maps", str(folder), "--clients", "2", "--inflight", "4",
                          "--duration", "1.5", "--rewrites-per-s", "20", "--grace", "1", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (summary["lost"], summary["unmatched"], summary["errors"]) == (0, 0, {})
    rewrites = summary["rewrites"]
    assert rewrites["written"] >= 10
    # None may fail. The watcher debounces, so rewrites close together may share one
    # reload (more of them on a busy machine): the first load and at least one reload.
    assert rewrites["reloads_failed"] == 0
    assert rewrites["reloads_ok"] >= 2
    assert (folder / "small.map").stat().st_mtime_ns == before  # the user's file was never touched


def test_rewrites_need_spawn(capsys):
    assert loadtest.main(["--endpoint", "tcp://127.0.0.1:9", "--requests", "1", "--rewrites-per-s", "5"]) == 2
    assert "--spawn" in capsys.readouterr().err
