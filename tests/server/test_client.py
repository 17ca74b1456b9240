"""pathserver.client against a real server: API, pipelining, Lazy Pirate, asyncio."""

import asyncio
import socket
import threading
import time

import pytest

from pathserver.client import AsyncClient, Client, ClientTimeoutError, ServerError
from pathserver.maps.registry import MapRegistry
from pathserver.server.loop import Server


@pytest.fixture
def client(server):
    with Client(server.endpoint, timeout=2, retries=1) as c:
        yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_sync_api(client):
    assert client.ping()["protocol"] == 1
    reply = client.find_path("arena", (0, 4), (9, 4))
    assert reply["path"] == [[0, 4], [9, 4]]
    results = client.find_paths("arena", [((0, 0), (9, 0)), ((0, 0), (99, 0))], smooth="none")
    assert results[0]["ok"] and results[1]["error"]["code"] == "out_of_bounds"
    assert [m["name"] for m in client.maps()] == ["arena", "split"]
    gen = client.update("arena", cells=[(2, 4)], solid=True)["gen"]
    assert client.find_path("arena", (0, 4), (9, 4))["gen"] == gen
    assert client.stats()["ops"]["path"] == 2


def test_error_replies_raise_with_the_wire_code(client):
    with pytest.raises(ServerError) as info:
        client.find_path("atlantis", (0, 0), (1, 1))
    assert info.value.code == "unknown_map" and info.value.at == "map"


def test_numpy_inputs_are_sent_as_plain_numbers(client):
    np = pytest.importorskip("numpy")
    reply = client.find_path("arena", np.array([0, 4]), np.int32(9) * np.ones(2, dtype=np.int32) - [0, 5])
    assert reply["goal"] == [9, 4]


def test_packed_answers_are_numpy_arrays_of_the_plain_answers(client):
    np = pytest.importorskip("numpy")
    for space, dtype in (("grid", np.int32), ("world", np.float32)):
        plain = client.find_path("arena", (0, 0), (9, 4), space=space, smooth="none")
        packed = client.find_path("arena", (0, 0), (9, 4), space=space, smooth="none", packed=True)
        assert packed["path"].dtype == dtype and packed["path"].shape == (len(plain["path"]), 2)
        assert packed["path"].tolist() == np.array(plain["path"], dtype=dtype).tolist()
        assert {**packed, "path": None, "id": None} == {**plain, "path": None, "id": None}
    queries = [((0, 0), (9, 0)), ((0, 0), (99, 0)), ((0, 4), (9, 4))]
    results = client.find_paths("arena", queries, smooth="none")
    batch = client.find_paths("arena", queries, smooth="none", packed=True)
    assert batch.statuses == ["found", "error", "found"] and batch.count.tolist() == [10, 0, 10]
    assert [path.tolist() for path in batch.paths()] == [results[0]["path"], [], results[2]["path"]]
    assert batch.errors[1] == results[1]["error"]
    # The batch itself as two bins: numpy arrays in, the same answers out.
    starts, goals = np.array([q[0] for q in queries]), np.array([q[1] for q in queries], dtype=np.float64)
    columns = client.find_paths_packed("arena", starts, goals, smooth="none")
    assert columns.statuses == batch.statuses and columns.points.tolist() == batch.points.tolist()
    assert columns.errors[1]["at"] == "goals[1]" and columns.gen == batch.gen
    world = client.find_paths_packed("arena", starts + 0.5, goals + 0.5, smooth="none", space="world")
    assert world.points.dtype == np.float32 and (world.points - 0.5).tolist() == batch.points.tolist()


def test_pipelining_with_submit_and_result(client):
    ids = [client.submit("path", map="arena", start=[0, 0], goal=[x, 4]) for x in range(10)]
    answers = {rid: client.result(rid) for rid in reversed(ids)}
    assert [answers[rid]["goal"] for rid in ids] == [[x, 4] for x in range(10)]


def test_no_server_times_out_after_the_retries():
    with Client(f"tcp://127.0.0.1:{free_port()}", timeout=0.1, retries=2) as c:
        started = time.monotonic()
        with pytest.raises(ClientTimeoutError):
            c.ping()
        assert 0.25 < time.monotonic() - started < 2


def test_lazy_pirate_reaches_a_server_that_starts_late(maps_dir):
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    registry = MapRegistry(maps_dir)
    registry.load_all()
    server = Server(registry, endpoint)

    def start_later():
        time.sleep(0.3)
        server.bind()
        server.run()

    thread = threading.Thread(target=start_later, daemon=True)
    try:
        with Client(endpoint, timeout=0.2, retries=10) as c:
            thread.start()
            assert c.find_path("arena", (0, 4), (9, 4))["status"] == "found"
    finally:
        server.stop()
        thread.join(5)
        server.close()


def test_overloaded_is_retried_after_the_hint(start_server, gated):
    server = start_server(gated, inline_expansions=0, workers=1, queue_limit=1)
    with Client(server.endpoint, timeout=5, retries=1) as holder, Client(server.endpoint, retries=50) as c:
        held = holder.submit("path", map="gate", start=[0, 0], goal=[9, 4])
        assert gated.entered.wait(5)
        threading.Timer(0.2, gated.gate.set).start()
        assert c.find_path("arena", (0, 4), (9, 4))["status"] == "found"
        assert holder.result(held)["status"] == "found"
        assert c.stats()["errors"]["overloaded"] >= 1


def test_the_async_client(server):
    async def main():
        async with AsyncClient(server.endpoint, timeout=2, retries=1) as c:
            assert (await c.ping())["ok"]
            replies = await asyncio.gather(*(c.find_path("arena", (0, 0), (x % 10, 4)) for x in range(20)))
            assert [r["goal"] for r in replies] == [[x % 10, 4] for x in range(20)]
            assert len(await c.find_paths("arena", [((0, 0), (9, 4))] * 3)) == 3
            packed = await c.find_paths("arena", [((0, 0), (9, 4))] * 3, packed=True)
            assert packed.statuses == ["found"] * 3
            columns = await c.find_paths_packed("arena", [(0, 0)] * 3, [(9, 4)] * 3)
            assert columns.points.tolist() == packed.points.tolist()
            path = (await c.find_path("arena", (0, 0), (9, 4), packed=True))["path"]
            assert path.tolist() == packed.path(2).tolist()
            gen = (await c.update("arena", rects=[(2, 4, 1, 1)], solid=True))["gen"]
            assert (await c.find_path("arena", (0, 4), (9, 4)))["gen"] == gen
            with pytest.raises(ServerError) as info:
                await c.find_path("arena", (0, 0), (1, float("nan")))
            assert info.value.code == "non_finite"

    asyncio.run(main())


def test_the_async_client_times_out():
    async def main():
        async with AsyncClient(f"tcp://127.0.0.1:{free_port()}", timeout=0.1, retries=1) as c:
            with pytest.raises(ClientTimeoutError):
                await c.ping()

    asyncio.run(main())
