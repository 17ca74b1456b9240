"""``pathserver relay``: plain ZeroMQ on loopback in, CURVE out, frames untouched."""

import argparse
import threading

import msgpack
import pytest
import zmq

from pathserver import security
from pathserver.security import Relay, client_curve_options

PING = {"id": 1, "op": "ping"}
PATH = {"id": 2, "op": "path", "map": "arena", "start": [0, 4], "goal": [9, 4]}


@pytest.fixture
def start_relay():
    running = []

    def start(connect: str, options: dict, **kwargs) -> Relay:
        relay = Relay("tcp://127.0.0.1:0", connect, curve_options=options, **kwargs)
        relay.bind()
        thread = threading.Thread(target=relay.run, name="test-relay", daemon=True)
        thread.start()
        running.append((relay, thread))
        return relay

    yield start
    for relay, thread in running:
        relay.stop()
        thread.join(5)
        relay.close()


@pytest.fixture
def alice_relay(start_relay, curve_server, keys):
    return start_relay(curve_server.endpoint, client_curve_options(keys.server.public_file, keys.alice.secret_file))


def test_plain_engine_reaches_curve_server_through_relay(alice_relay, make_dealer):
    engine = make_dealer(alice_relay.endpoint)
    assert engine.ask(PING) == {"id": 1, "ok": True, "protocol": 1}
    assert engine.ask(PATH)["status"] == "found"


def test_relay_keeps_envelopes_and_error_replies(alice_relay, make_dealer):
    engine = make_dealer(alice_relay.endpoint)
    engine.send(PING, delimiter=False)
    assert engine.recv_frames() == [msgpack.packb({"id": 1, "ok": True, "protocol": 1})]
    engine.send(b"\xc1")
    frames = engine.recv_frames()
    assert frames[0] == b"" and msgpack.unpackb(frames[1])["error"]["code"] == "malformed"
    engine.socket.send_multipart([b"x", b"", msgpack.packb(PING)])  # a bad envelope reaches the server as is
    assert msgpack.unpackb(engine.recv_frames()[-1])["error"]["code"] == "malformed"


def test_relay_serves_req_sockets_and_many_engines(alice_relay, make_dealer):
    req = make_dealer(alice_relay.endpoint, socket_type=zmq.REQ)
    assert req.ask(PING, delimiter=False)["ok"]  # REQ adds the empty frame itself
    engines = [make_dealer(alice_relay.endpoint) for _ in range(8)]
    for i, engine in enumerate(engines):
        engine.send({**PATH, "id": i})
    assert [engine.recv_frames() is not None for engine in engines] == [True] * 8


def test_relay_with_unknown_key_gets_nothing(start_relay, curve_server, keys, make_dealer):
    relay = start_relay(curve_server.endpoint, client_curve_options(keys.server.public_file, keys.mallory.secret_file))
    assert not relay.probe(timeout=0.5)
    assert make_dealer(relay.endpoint).ask(PING, timeout_ms=500) is None


def test_relay_probe_sees_the_server(alice_relay):
    assert alice_relay.probe(timeout=5)


def test_relay_evicts_the_least_recently_active_engine(start_relay, curve_server, keys, make_dealer):
    relay = start_relay(curve_server.endpoint, client_curve_options(keys.server.public_file, keys.alice.secret_file),
                        max_peers=2)
    engines = [make_dealer(relay.endpoint) for _ in range(4)]
    for engine in engines:
        assert engine.ask(PING)["ok"]  # each new engine past two closes the oldest's server socket
    assert len(relay._peers) == 2
    assert engines[0].ask(PING)["ok"]  # an evicted engine just gets a fresh one


def test_relay_refuses_exposed_listen_and_needs_keys(keys):
    parser = argparse.ArgumentParser()
    security.add_relay_arguments(parser)
    args = parser.parse_args(["--listen", "tcp://0.0.0.0:0", "--connect", "tcp://127.0.0.1:1",
                              "--server-key", keys.server.public_file, "--client-key", keys.alice.secret_file])
    with pytest.raises(security.BindRefusedError):
        security.run_relay(args)
    args = parser.parse_args(["--connect", "tcp://127.0.0.1:1", "--server-key", keys.server.public_file,
                              "--client-key", keys.alice.public_file])
    with pytest.raises(security.SecurityError, match="only a public key"):
        security.run_relay(args)
