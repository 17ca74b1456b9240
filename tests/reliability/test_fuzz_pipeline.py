"""Fuzzing the request pipeline: random bytes, valid requests of every op, and mutated
ones, first in-process through the real decode -> validate -> handle path (the loop's
inline shortcut included), then over a live socket to the real server process.

Properties: nothing raises; every body gets exactly one reply, a map starting ``id, ok``;
an error carries a code from the protocol's list and never ``internal`` (a server bug);
no reply carries a traceback or a server path; the id is echoed whenever it can be read;
in-process, a request that is not an edit or an upload (searches, the queries beyond one
path with their ``avoid``, ``check_block``'s placements) leaves its map as it was.

Sizes: ``PATHSERVER_FUZZ_EXAMPLES`` (in-process, default 10 000) and
``PATHSERVER_FUZZ_SOCKET_EXAMPLES`` (socket frames, default 2 000); ``--slow`` runs 100 000 and
20 000 (or the variables, when larger).
"""

import random
import time
import zlib

import msgpack
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reliability import strategies
from reliability.strategies import any_body, derived, genome_bodies, genome_request, random_bytes
from pathserver.errors import PathserverError
from pathserver.maps.registry import MapRegistry
from pathserver.options import OPTIONS, QUERY_OPS
from pathserver.protocol.codec import peek_id
from pathserver.protocol.requests import (DropMapRequest, PathRequest, PutMapRequest, StatsRequest,
                                          UpdateRequest)
from pathserver.server import handlers, ops, path_ops
from pathserver.server.loop import INLINE_DISTANCE, INLINE_EXPANSIONS
from reliability.helpers import Dealer, check_reply, env_int, record

IN_PROCESS = env_int("PATHSERVER_FUZZ_EXAMPLES", 10_000)
OVER_SOCKET = env_int("PATHSERVER_FUZZ_SOCKET_EXAMPLES", 2_000)
LONG_IN_PROCESS = max(100_000, IN_PROCESS)
LONG_OVER_SOCKET = max(20_000, OVER_SOCKET)

#: A stand-in for the loop's stats (the handler only copies it).
FAKE_STATS = {"requests": 1, "replies": 0}


def fuzz_settings(examples: int):
    return settings(max_examples=examples, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def registry(small_maps_dir, tmp_path_factory, compiled):
    # A copy of the folder: fuzzed ``update``s edit these maps in memory only, but keep
    # the shared server's folder out of it anyway.
    folder = tmp_path_factory.mktemp("fuzz-maps")
    for path in small_maps_dir.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    registry = MapRegistry(folder)
    registry.load_all()
    assert len(registry.names()) == 8, registry.info()
    return registry


def through_pipeline(body: bytes, registry) -> dict:
    """What the server does with one body, minus the socket: decode and validate; then
    for a ``path`` the loop's bounded inline attempt, which must agree with the worker's
    answer whenever it answers at all."""
    request, reply, _ = handlers.read_request(body)
    if request is None:
        return check_reply(body, reply)
    before = map_state(request, registry)
    if type(request) is PathRequest:
        bounded = path_ops.run_bounded(request, registry, INLINE_EXPANSIONS, INLINE_DISTANCE)
        full, _ = handlers.run(request, registry)
        if bounded is not None:
            assert bounded[0] == full, (msgpack.unpackb(bounded[0]), msgpack.unpackb(full))
        reply = full
    else:
        stats = FAKE_STATS if type(request) is StatsRequest else None
        reply, _ = handlers.run(request, registry, stats)
    assert map_state(request, registry) == before, ("the request changed its map", body)
    return check_reply(body, reply)


#: The requests that may change a map.
EDITS = (UpdateRequest, PutMapRequest, DropMapRequest)


def map_state(request, registry):
    """What a request must not change unless it is an edit: its map's generation and
    layers (None for an edit, or a request naming no map or one nothing serves)."""
    name = getattr(request, "map", None)
    if name is None or isinstance(request, EDITS):
        return None
    try:
        gridmap = registry.get(name)
    except PathserverError:
        return None
    layers = [gridmap.walkable, gridmap.cost, gridmap.heights, gridmap.tags]
    return gridmap.generation, [None if a is None else zlib.crc32(a.tobytes()) for a in layers]


#: Cases per hypothesis example in-process: the drawn body and this many derived ones.
DERIVED = 4
#: Share of the in-process cases drawn by the structured strategies (about 4 ms a draw);
#: the rest come from byte-string genomes (about 0.6 ms).
STRUCTURED_SHARE = 0.25


def run_in_process(registry, cases: int) -> None:
    seen = {"cases": 0, "ok": 0, "codes": {}}

    def one_body(body):
        for one in (body, *derived(body, DERIVED)):
            reply = through_pipeline(one, registry)
            seen["cases"] += 1
            if reply["ok"]:
                seen["ok"] += 1
            else:
                code = reply["error"]["code"]
                seen["codes"][code] = seen["codes"].get(code, 0) + 1

    structured = -(-int(cases * STRUCTURED_SHARE) // (1 + DERIVED))
    from_genomes = -(-(cases - structured * (1 + DERIVED)) // (1 + DERIVED))
    started = time.perf_counter()
    for strategy, examples in ((any_body, structured), (genome_bodies, from_genomes)):
        given(strategy)(fuzz_settings(examples)(lambda body: one_body(body)))()
    elapsed = time.perf_counter() - started
    codes = ", ".join(f"{k} {v}" for k, v in sorted(seen["codes"].items(), key=lambda kv: -kv[1]))
    record("fuzz", f"in-process: {seen['cases']} cases in {elapsed:.1f} s, 0 failures; "
                   f"{seen['ok']} ok; errors: {codes}")
    assert seen["cases"] >= cases
    # The mix reaches past validation into the searches, not only into the decoder.
    assert seen["ok"] > cases // 20 and len(seen["codes"]) >= 8, seen


def test_every_op_and_option_reaches_the_fuzzers():
    """Each op of the protocol, and each option (``pathserver.options``) on each op taking
    it, appears in the bodies the genomes build (which feed both the in-process and the
    socket runs); the structured strategies draw from the same option lists (their
    ``search_options`` asserts it has a value for every option of the op). Mutations then
    reach them: each option is a field name the mutations set, and has good values."""
    assert set(ops.NAMES) <= set(strategies._OPS_ORDER)
    names = {option.name for option in OPTIONS}
    assert names <= set(strategies.FIELD_NAMES) and names <= set(strategies.GOOD_VALUES)
    assert {"tags", "tag_names", "classes", "positions", "points"} <= set(strategies.FIELD_NAMES)
    rng = random.Random(5)
    seen = set()
    for _ in range(6000):
        request = genome_request(rng.randbytes(rng.randrange(49)))
        if type(request) is dict and type(request.get("op")) is str:
            seen.update((request["op"], key) for key in request)
    wanted = {(op, option.name) for option in OPTIONS for op in option.ops}
    wanted |= {(op, "map") for op in QUERY_OPS} | {("put_map", key) for key in ("tags", "tag_names", "classes")}
    wanted |= {("path", "packed"), ("paths", "packed"), ("paths", "starts")}
    assert not wanted - seen, sorted(wanted - seen)


def test_fuzz_in_process(registry):
    run_in_process(registry, IN_PROCESS)


@pytest.mark.slow
def test_fuzz_in_process_long(registry):
    run_in_process(registry, LONG_IN_PROCESS)


# -- over the socket ----------------------------------------------------------------------------



def _socket_body(drawn) -> bytes:
    kind, body, junk = drawn
    if kind < 7:
        return body
    return junk if kind == 7 else derived(body, 4)[kind - 8]


#: Seven in ten requests that get past the decoder; raw bytes and damaged requests too.
socket_bodies = st.tuples(st.integers(0, 9), genome_bodies, random_bytes).map(_socket_body)
#: Mostly good envelopes, so most bodies reach the handlers; one in five is refused whole.
envelopes = st.sampled_from(["delimited"] * 6 + ["bare"] * 2 + ["bad-first-frame", "three-frames"])


def run_over_socket(server, context, frames_wanted: int) -> None:
    dealer = Dealer(context, server.endpoint)
    before = server.stats()
    seen = {"cases": 0, "codes": {}}

    def exchange(body: bytes, envelope: str) -> None:
        prefix = {"bare": [], "delimited": [b""], "bad-first-frame": [b"\x00junk"],
                  "three-frames": [b"", b""]}[envelope]
        dealer.socket.send_multipart([*prefix, body])
        frames = dealer.recv_frames()
        assert frames[:-1] == prefix  # the reply mirrors the envelope
        if envelope in ("bare", "delimited"):
            reply = check_reply(body, frames[-1])
        else:
            reply = check_reply(body, frames[-1], ids={None, peek_id(body)})
            assert reply["error"]["code"] == "malformed"
        seen["cases"] += 1
        code = "ok" if reply["ok"] else reply["error"]["code"]
        seen["codes"][code] = seen["codes"].get(code, 0) + 1

    # Structured draws cost milliseconds each; over the socket the cheap genomes and raw
    # bytes carry the volume (the in-process run covers the structured strategies).
    @fuzz_settings(frames_wanted)
    @given(socket_bodies, envelopes)
    def case(body, envelope):
        exchange(body, envelope)

    started = time.perf_counter()
    try:
        case()
        assert dealer.nothing_more(300), "a frame got more than one reply"
    finally:
        dealer.close()
    elapsed = time.perf_counter() - started
    after = server.stats()
    # Counted between the two stats requests: the first one's reply, not the second one.
    received = after["requests"] - before["requests"] - 1
    answered = after["replies"] + after["dropped_replies"] - before["replies"] - before["dropped_replies"] - 1
    assert received == answered == seen["cases"], (before, after, seen)
    codes = ", ".join(f"{k} {v}" for k, v in sorted(seen["codes"].items(), key=lambda kv: -kv[1]))
    record("fuzz", f"socket: {seen['cases']} frames in {elapsed:.1f} s, each exactly one reply, "
                   f"server alive; {codes}")
    assert seen["cases"] >= frames_wanted


def test_fuzz_over_the_socket(live, context):
    run_over_socket(live, context, OVER_SOCKET)


@pytest.mark.slow
def test_fuzz_over_the_socket_long(live, context):
    run_over_socket(live, context, LONG_OVER_SOCKET)


def test_pipelined_garbage_gets_one_reply_each(live, context):
    """Hundreds of mixed bodies in flight at once on one connection: one reply per body,
    matched by id (each valid body carries a unique id)."""
    rng = random.Random(11)
    dealer = Dealer(context, live.endpoint)
    try:
        expected = {}
        for i in range(600):
            kind = i % 4
            if kind == 0:
                body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
            else:
                request = {"id": 10_000 + i, "op": "path", "map": "open64",
                           "start": [rng.randrange(64), rng.randrange(64)],
                           "goal": [rng.randrange(-4, 68), rng.randrange(64)]}
                if kind == 3:
                    request["smooth"] = rng.choice(["los", 7, None, "x"])
                body = msgpack.packb(request)
            rid = peek_id(body)
            expected[rid] = expected.get(rid, 0) + 1
            dealer.socket.send_multipart([b"", body], zmq.NOBLOCK)
        got = {}
        for _ in range(sum(expected.values())):
            reply = msgpack.unpackb(dealer.recv_frames()[-1], raw=False)
            got[reply["id"]] = got.get(reply["id"], 0) + 1
        assert dealer.nothing_more(300)
        assert got == expected
    finally:
        dealer.close()
