"""The golden vectors of docs/protocol.md, byte for byte: the encoder, the decoder and
the whole read -> handle -> encode pipeline (the live-socket check is in tests/server)."""

import re
from pathlib import Path

import msgpack
import numpy as np
import pytest

from pathserver.maps.registry import MapRegistry
from pathserver.protocol.codec import decode_request, encode
from pathserver.server.handlers import respond

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def golden_vectors() -> dict[str, bytes]:
    """Every ```hex name=...``` block of docs/protocol.md as bytes."""
    blocks = re.findall(r"```hex name=([\w-]+)\n(.*?)```", DOC.read_text(), flags=re.S)
    return {name: bytes.fromhex("".join(text.split())) for name, text in blocks}


VECTORS = golden_vectors()


def test_the_document_has_the_vectors_the_engine_clients_use():
    assert {
        "ping-request", "ping-reply", "ping-request-zmtp-delimited", "ping-reply-zmtp-delimited",
        "ping-request-zmtp-bare", "ping-reply-zmtp-bare", "malformed-request", "malformed-reply",
        "invalid-request", "invalid-reply", "path-request",
        "put-map-request", "put-map-reply", "get-map-request", "get-map-reply", "conflict-request",
        "conflict-reply", "drop-map-request", "drop-map-reply",
    } <= set(VECTORS)


@pytest.mark.parametrize("name", ["ping", "malformed", "invalid"])
def test_reply_vectors_byte_for_byte(name):
    assert respond(VECTORS[f"{name}-request"], registry=None) == VECTORS[f"{name}-reply"]


def test_encoder_vectors():
    assert encode({"id": 1, "op": "ping"}) == VECTORS["ping-request"]
    assert encode({"id": 1, "ok": True, "protocol": 1}) == VECTORS["ping-reply"]
    assert encode({"id": 2, "op": "ping", "x": 1}) == VECTORS["invalid-request"]
    path = {"id": 5, "op": "path", "map": "example", "start": [1.5, 2.0], "goal": [30, 12],
            "unit_size": 2, "space": "world"}
    assert encode(path) == VECTORS["path-request"]
    assert decode_request(VECTORS["path-request"]) == path


def test_zmtp_vectors_are_the_bodies_framed():
    ping, pong = VECTORS["ping-request"], VECTORS["ping-reply"]
    assert VECTORS["ping-request-zmtp-bare"] == bytes([0, len(ping)]) + ping
    assert VECTORS["ping-request-zmtp-delimited"] == b"\x01\x00" + bytes([0, len(ping)]) + ping
    assert VECTORS["ping-reply-zmtp-bare"] == bytes([0, len(pong)]) + pong
    assert VECTORS["ping-reply-zmtp-delimited"] == b"\x01\x00" + bytes([0, len(pong)]) + pong


def test_the_map_op_vectors_are_one_session_byte_for_byte(tmp_path):
    """put_map, get_map, a stale if_gen and drop_map against a server serving nothing yet."""
    registry = MapRegistry(tmp_path)
    registry.load_all()
    for name in ("put-map", "get-map", "conflict", "drop-map"):
        assert respond(VECTORS[f"{name}-request"], registry) == VECTORS[f"{name}-reply"], name
    assert registry.names() == []


def test_map_op_request_vectors_are_what_the_encoder_writes():
    put = {"id": 1, "op": "put_map", "map": "yard", "width": 3, "height": 2, "cells": bytes([1, 1, 0, 1, 2, 1])}
    assert encode(put) == VECTORS["put-map-request"]
    assert decode_request(VECTORS["put-map-request"]) == put
    assert encode({"id": 2, "op": "get_map", "map": "yard"}) == VECTORS["get-map-request"]
    update = {"id": 3, "op": "update", "map": "yard", "cells": [[0, 0]], "solid": True, "if_gen": 0}
    assert encode(update) == VECTORS["conflict-request"]
    assert encode({"id": 4, "op": "drop_map", "map": "yard"}) == VECTORS["drop-map-request"]


#: The session of the queries beyond one path, in order (docs/protocol.md).
QUERY_SESSION = ("court-put", "goals", "reachable", "field", "next-steps", "check-block", "avoid", "avoid-cost",
                 "moat-put", "traversal-class", "traversal-rules", "packed-path", "packed-world-path", "packed-paths")


def test_the_query_vectors_are_one_session_byte_for_byte(tmp_path):
    registry = MapRegistry(tmp_path)
    registry.load_all()
    for name in QUERY_SESSION:
        assert respond(VECTORS[f"{name}-request"], registry) == VECTORS[f"{name}-reply"], name
    # avoid's cells as the bin the engine clients send, or as pairs: the same reply.
    request = decode_request(VECTORS["avoid-request"])
    assert np.frombuffer(request["avoid"]["cells"], "<i4").tolist() == [0, 1]
    assert respond(encode({**request, "avoid": {"cells": [[0, 1]]}}), registry) == VECTORS["avoid-reply"]


def test_the_query_vectors_say_what_the_document_says():
    def reply(name):
        return msgpack.unpackb(VECTORS[f"{name}-reply"])

    assert reply("goals")["goal_index"] == 1 and reply("goals")["path"] == [[0, 0], [0, 1], [0, 2]]
    cells = np.frombuffer(reply("reachable")["cells"], "<i4").reshape(-1, 2).tolist()
    assert cells == [[0, 0], [1, 0], [0, 1], [2, 0], [0, 2]]
    assert np.frombuffer(reply("reachable")["costs"], "<f4").tolist() == [0, 1, 1, 2, 2]
    root2 = np.float32(2 ** 0.5)
    cost = np.frombuffer(reply("field")["cost"], "<f4")
    assert cost.tolist() == [np.float32(3 + root2), np.float32(2 + root2), 4.0, np.inf]
    assert np.frombuffer(reply("next-steps")["steps"], "<f4").tolist() == [1, 0, 3, 1]
    assert reply("check-block")["disconnected"] == [[0, 1], [1, 2]]
    request = decode_request(VECTORS["next-steps-request"])
    assert np.frombuffer(request["positions"], "<f4").tolist() == [0.5, 0.5, 3.5, 0.5]
    assert reply("avoid")["path"] == [[0, 0], [1, 0], [2, 0], [2, 1], [2, 2], [1, 2], [0, 2]]
    assert reply("avoid")["cost"] == 6.0
    assert reply("avoid-cost")["path"] == [[0, 0], [0, 1], [0, 2]] and reply("avoid-cost")["cost"] == 4.0
    assert reply("moat-put")["gen"] == 2
    assert reply("traversal-class")["status"] == "no_path"
    assert reply("traversal-rules")["path"] == [[0, 0], [1, 0], [2, 0]] and reply("traversal-rules")["cost"] == 3.5
    moat = decode_request(VECTORS["moat-put-request"])
    assert moat["classes"] == {"walker": {"water": None}} and moat["tags"] == bytes([0, 1, 0, 0, 1, 0])


def test_reply_keys_start_with_id_then_ok():
    for name in ("ping-reply", "malformed-reply", "invalid-reply", "put-map-reply", "get-map-reply",
                 "conflict-reply", "drop-map-reply"):
        assert list(msgpack.unpackb(VECTORS[name]))[:2] == ["id", "ok"]


def test_the_packed_vectors_say_what_the_document_says():
    def reply(name):
        return msgpack.unpackb(VECTORS[f"{name}-reply"], strict_map_key=False)

    trip = [[0, 0], [1, 0], [2, 0], [3, 1], [3, 2]]
    assert np.frombuffer(reply("packed-path")["path"], "<i4").reshape(-1, 2).tolist() == trip
    world = np.frombuffer(reply("packed-world-path")["path"], "<f4").reshape(-1, 2)
    assert (world - 0.5).tolist() == trip
    assert reply("packed-path")["cost"] == reply("packed-world-path")["cost"] == 3 + 2 ** 0.5
    batch = reply("packed-paths")
    assert list(batch) == ["id", "ok", "gen", "status", "cost", "count", "points", "errors"]
    assert list(batch["status"]) == [0, 3, 0]
    assert np.frombuffer(batch["cost"], "<f4").tolist() == [2, 0, 2]
    assert np.frombuffer(batch["count"], "<u4").tolist() == [3, 0, 3]
    points = np.frombuffer(batch["points"], "<i4").reshape(-1, 2).tolist()
    assert points == [[0, 0], [0, 1], [0, 2], [3, 0], [3, 1], [3, 2]]
    assert batch["errors"] == {1: {"code": "out_of_bounds", "message": "goal (9, 9) is outside the map (4x3)",
                                   "at": "goals[1]"}}
    request = decode_request(VECTORS["packed-paths-request"])
    assert np.frombuffer(request["starts"], "<i4").tolist() == [0, 0, 0, 0, 3, 0]
    assert np.frombuffer(request["goals"], "<i4").tolist() == [0, 2, 9, 9, 3, 2]


def test_the_python_client_writes_and_reads_the_packed_vectors():
    from pathserver.client.messages import columns_fields, encode, path_reply
    from pathserver.protocol.packed import PackedPaths

    starts, goals = np.array([[0, 0], [0, 0], [3, 0]]), np.array([[0, 2], [9, 9], [3, 2]])
    fields = columns_fields("court", starts, goals, 1, {"smooth": "none"})
    assert encode({"id": 14, "op": "paths", **fields}) == VECTORS["packed-paths-request"]
    batch = PackedPaths.from_reply(msgpack.unpackb(VECTORS["packed-paths-reply"], strict_map_key=False))
    assert batch.statuses == ["found", "error", "found"] and batch.gen == 1
    assert [path.tolist() for path in batch.paths()] == [[[0, 0], [0, 1], [0, 2]], [], [[3, 0], [3, 1], [3, 2]]]
    assert batch.errors[1]["at"] == "goals[1]"
    world = path_reply(msgpack.unpackb(VECTORS["packed-world-path-reply"]), {"space": "world", "packed": True})
    assert world["path"].dtype == np.float32 and world["path"][-1].tolist() == [3.5, 2.5]


def test_the_packed_vectors_answer_what_the_plain_forms_answer(tmp_path):
    registry = MapRegistry(tmp_path)
    registry.load_all()
    assert respond(VECTORS["court-put-request"], registry) == VECTORS["court-put-reply"]

    def plain(name, **changes):
        request = {**decode_request(VECTORS[f"{name}-request"]), **changes}
        request.pop("packed")
        return msgpack.unpackb(respond(encode(request), registry), strict_map_key=False)

    for name, dtype in (("packed-path", "<i4"), ("packed-world-path", "<f4")):
        packed = msgpack.unpackb(VECTORS[f"{name}-reply"])
        answer = plain(name)
        assert np.frombuffer(packed.pop("path"), dtype).reshape(-1, 2).tolist() == answer.pop("path")
        assert packed == answer
    starts = np.frombuffer(decode_request(VECTORS["packed-paths-request"])["starts"], "<i4").reshape(-1, 2)
    goals = np.frombuffer(decode_request(VECTORS["packed-paths-request"])["goals"], "<i4").reshape(-1, 2)
    results = plain("packed-paths", starts=None, goals=None,
                    requests=[{"start": s, "goal": g} for s, g in zip(starts.tolist(), goals.tolist())])["results"]
    assert [entry.get("path") for entry in results] == [[[0, 0], [0, 1], [0, 2]], None, [[3, 0], [3, 1], [3, 2]]]
    assert results[1]["error"]["at"] == "requests[1].goal"
