"""CURVE on a real socket: only an allowed client key, talking to the right server key,
gets an answer; everyone else gets nothing at all (the handshake fails, no reply)."""

import asyncio
import os
import re
import selectors
import signal
import subprocess
import sys

import pytest
import zmq

from pathserver.client import AsyncClient, Client, ClientTimeoutError
from pathserver.security import SecurityError

#: How long a client that must get nothing waits for it (loopback handshakes fail in ~1 ms).
SILENCE_MS = 700
PING = {"id": 1, "op": "ping"}
PATH = {"id": 2, "op": "path", "map": "arena", "start": [0, 4], "goal": [9, 4]}


def test_allowed_key_is_served(curve_server, make_dealer, keys, curve_options):
    dealer = make_dealer(curve_server.endpoint, curve_options(keys.server.public, keys.alice))
    assert dealer.ask(PING) == {"id": 1, "ok": True, "protocol": 1}
    assert dealer.ask(PATH)["status"] == "found"


def test_unknown_client_key_gets_nothing(curve_server, make_dealer, keys, curve_options):
    mallory = make_dealer(curve_server.endpoint, curve_options(keys.server.public, keys.mallory))
    assert mallory.ask(PING, timeout_ms=SILENCE_MS) is None
    assert curve_server.stats()["requests"] == 0


def test_client_without_security_gets_nothing(curve_server, make_dealer):
    plain = make_dealer(curve_server.endpoint)
    assert plain.ask(PING, timeout_ms=SILENCE_MS) is None
    assert curve_server.stats()["requests"] == 0


def test_wrong_server_key_gets_nothing(curve_server, make_dealer, keys, curve_options):
    # Alice is allowed, but she was given mallory's key as the server's: she cannot be
    # talking to the real server, so the handshake fails.
    fooled = make_dealer(curve_server.endpoint, curve_options(keys.mallory.public, keys.alice))
    assert fooled.ask(PING, timeout_ms=SILENCE_MS) is None
    assert curve_server.stats()["requests"] == 0


def test_rejected_clients_do_not_disturb_allowed_ones(curve_server, make_dealer, keys, curve_options):
    intruders = [make_dealer(curve_server.endpoint) for _ in range(5)]
    intruders += [make_dealer(curve_server.endpoint, curve_options(keys.server.public, keys.mallory)) for _ in range(5)]
    for intruder in intruders:
        intruder.send(PING)
    alice = make_dealer(curve_server.endpoint, curve_options(keys.server.public, keys.alice))
    assert alice.ask(PATH)["status"] == "found"
    assert all(intruder.recv_frames(50) is None for intruder in intruders)


def test_python_client_with_key_files(curve_server, keys):
    with Client(curve_server.endpoint, server_public_key=keys.server.public_file,
                client_secret_key=keys.alice.secret_file) as client:
        assert client.find_path("arena", (0, 4), (9, 4))["status"] == "found"


def test_python_client_with_z85_keys(curve_server, keys):
    with Client(curve_server.endpoint, server_public_key=keys.server.public,
                client_secret_key=keys.alice.secret) as client:
        assert client.ping()["protocol"] == 1


def test_python_client_with_unknown_key_times_out(curve_server, keys):
    with Client(curve_server.endpoint, timeout=0.3, retries=1, server_public_key=keys.server.public_file,
                client_secret_key=keys.mallory.secret_file) as client:
        with pytest.raises(ClientTimeoutError):
            client.ping()


def test_async_client_with_curve(curve_server, keys):
    async def main():
        async with AsyncClient(curve_server.endpoint, server_public_key=keys.server.public_file,
                               client_secret_key=keys.alice.secret_file) as client:
            return await client.find_path("arena", (0, 4), (9, 4))

    assert asyncio.run(main())["status"] == "found"


def test_client_needs_both_keys(keys):
    with pytest.raises(SecurityError, match="both"):
        Client("tcp://127.0.0.1:1", server_public_key=keys.server.public_file)


READY = re.compile(r"^pathserver ready on (tcp://127\.0\.0\.1:\d+) \((\d+) maps?\)$")


def test_serve_with_curve_end_to_end(maps_dir, keys):
    """``serve(curve_keys=..., allowed_clients_dir=...)`` as a real process."""
    code = ("import sys; from pathserver.server import serve; "
            f"sys.exit(serve({str(maps_dir)!r}, 'tcp://127.0.0.1:0', threads=1, watch=False, "
            f"curve_keys={str(keys.root)!r}, allowed_clients_dir={str(keys.allowed)!r}))")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        assert selector.select(120), "no ready line"
        match = READY.match(process.stdout.readline().decode().rstrip("\n"))
        assert match
        endpoint = match.group(1)
        with Client(endpoint, server_public_key=keys.server.public_file,
                    client_secret_key=keys.alice.secret_file) as client:
            assert client.find_path("arena", (0, 4), (9, 4))["status"] == "found"
        with Client(endpoint, timeout=0.3, retries=0) as plain:
            with pytest.raises(ClientTimeoutError):
                plain.ping()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=5) == 0
        assert b"Traceback" not in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
