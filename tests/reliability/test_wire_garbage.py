"""Garbage on the wire: thousands of raw TCP connections to the real server process that
send random bytes, half a ZMTP greeting, a greeting and then nonsense, an absurd frame
length, or nothing at all and stall. A normal client is served promptly throughout; every
stalled connection is dropped by the server's handshake timeout (``HANDSHAKE_MS``) or its
heartbeat; afterwards the server's open descriptors return to their baseline and its
memory grows only a little.

Size: ``PATHSERVER_GARBAGE_CONNECTIONS`` (default 1 000); ``--slow`` runs 10 000.
"""

import errno
import random
import selectors
import socket
import threading
import time

import pytest
import zmq

from pathserver.server.loop import HANDSHAKE_MS, HEARTBEAT_IVL_MS, HEARTBEAT_TIMEOUT_MS, Server
from reliability.helpers import env_int, fd_settled, host_port, record, timed_ping

CONNECTIONS = env_int("PATHSERVER_GARBAGE_CONNECTIONS", 1_000)
LONG_CONNECTIONS = max(10_000, CONNECTIONS)
#: Raw sockets open at once on our side; the rest wait until a slot frees.
MAX_OPEN = 400

GREETING = b"\xff" + b"\x00" * 8 + b"\x7f\x03\x00" + b"NULL" + b"\x00" * 16 + b"\x00" + b"\x00" * 31
READY_DEALER = b"\x04\x1c\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER"

KINDS = (
    "random-then-close",   # noise, then FIN
    "random-then-stall",   # noise, then silence with the socket open
    "half-greeting",       # the first bytes of a valid greeting, then silence
    "silent",              # connect and say nothing
    "greeting-then-junk",  # a full greeting, then a command that is not one
    "huge-frame",          # a full handshake, then a frame claiming 2^62 bytes
    "reset",               # connect and abort with RST
)
#: The long run adds peers that finish the handshake and then go silent: the heartbeat
#: timeout (10 s) drops those, so they would double the default run's time.
LONG_KINDS = KINDS + ("ready-then-stall",)
STALLING = {"random-then-stall", "half-greeting", "silent", "ready-then-stall"}


def test_the_handshake_timeout_is_set_on_the_router():
    """The loop sets HANDSHAKE_IVL (and heartbeats): the stalls below rely on it."""
    assert 0 < HANDSHAKE_MS <= 10_000 and 0 < HEARTBEAT_TIMEOUT_MS <= 60_000

    class NoMaps:
        def names(self):
            return []

    server = Server(NoMaps(), "tcp://127.0.0.1:0", workers=1)
    try:
        server.bind()
        assert server._router.getsockopt(zmq.HANDSHAKE_IVL) == HANDSHAKE_MS
        assert server._router.getsockopt(zmq.HEARTBEAT_TIMEOUT) == HEARTBEAT_TIMEOUT_MS
        assert server._router.getsockopt(zmq.MAXMSGSIZE) > 0
    finally:
        server.close()


@pytest.mark.parametrize("first_bytes", [b"\x05", b"\x01\x00", b"GET / HTTP/1.1\r\n"],
                         ids=["zmtp1-length", "zmtp1-identity", "http"])
def test_a_zmtp1_greeting_then_silence_is_dropped_at_once(live, first_bytes):
    """Any first byte but 0xff reads as a ZMTP 1.0 greeting; libzmq then ends the
    handshake timer, and 1.0 has no heartbeats, so without the server's ZAP domain such a
    peer held its connection (and a descriptor) for as long as it liked."""
    with socket.create_connection(host_port(live.endpoint), timeout=5) as raw:
        raw.sendall(first_bytes)
        started = time.monotonic()
        try:
            while raw.recv(4096):
                pass
        except ConnectionResetError:
            pass
        assert time.monotonic() - started < 2.0


def _payload(kind: str, rng: random.Random) -> bytes:
    if kind.startswith("random"):
        noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
        # A few start like a greeting, so libzmq gets past the first byte before choking.
        return (b"\xff" + noise) if rng.random() < 0.3 else noise
    if kind == "half-greeting":
        return GREETING[: rng.randrange(1, len(GREETING))]
    if kind == "greeting-then-junk":
        return GREETING + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    if kind == "huge-frame":
        return GREETING + READY_DEALER + b"\x02" + (1 << 62).to_bytes(8, "big") + b"x" * 16
    if kind == "ready-then-stall":
        return GREETING + READY_DEALER
    return b""


def flood(endpoint: str, total: int, kinds: tuple, seed: int = 5) -> dict:
    """Open ``total`` raw connections (at most MAX_OPEN at a time); returns what the
    stalled ones saw: how long until the server closed each."""
    host, port = host_port(endpoint)
    rng = random.Random(seed)
    selector = selectors.DefaultSelector()
    opened_at = {}
    dropped_after = []
    refused = 0
    started = time.monotonic()
    # Stalled sockets are left to the server; the deadline only guards against a hang.
    deadline = started + 60 + total / 50

    def reap(timeout: float) -> None:
        for key, _ in selector.select(timeout):
            sock = key.fileobj
            try:
                data = sock.recv(65536)
            except OSError:
                data = b""
            if data:
                continue  # the server's own greeting or a PING; keep waiting for the close
            dropped_after.append(time.monotonic() - opened_at.pop(sock))
            selector.unregister(sock)
            sock.close()

    for i in range(total):
        while len(opened_at) >= MAX_OPEN:
            reap(0.05)
            assert time.monotonic() < deadline, "stalled connections were never dropped"
        kind = kinds[i % len(kinds)]
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.settimeout(2)
            sock.connect((host, port))
            payload = _payload(kind, rng)
            if payload:
                sock.sendall(payload)
        except OSError as exc:
            sock.close()
            if exc.errno in (errno.ECONNRESET, errno.EPIPE):
                continue  # the server already dropped it: that is fine too
            refused += 1
            continue
        if kind == "reset":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            sock.close()
        elif kind in STALLING:
            sock.setblocking(False)
            opened_at[sock] = time.monotonic()
            selector.register(sock, selectors.EVENT_READ)
        else:
            sock.close()
        if i % 50 == 0:
            reap(0)
    sent_at = time.monotonic()
    peak_open = len(opened_at)
    while opened_at and time.monotonic() < deadline:
        reap(0.1)
    left = len(opened_at)
    for sock in list(opened_at):
        sock.close()
    selector.close()
    return {"dropped_after": dropped_after, "left_open": left, "refused": refused,
            "send_s": sent_at - started, "peak_open": peak_open}


def garbage_run(server, total: int, kinds: tuple = KINDS) -> None:
    assert timed_ping(server.endpoint) < 1.0
    time.sleep(0.2)  # let the server close that client's connection
    fd_baseline = min(fd_settled(server, 0, 0) for _ in range(3))
    rss_before = server.rss_kb()
    report = {"fds_peak": 0, "pings": []}
    stop = threading.Event()

    def sampler():
        # A normal client, connecting afresh while the flood runs, must not wait behind it.
        while not stop.wait(0.25):
            report["fds_peak"] = max(report["fds_peak"], server.fd_count())
            report["pings"].append(timed_ping(server.endpoint))

    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    try:
        seen = flood(server.endpoint, total, kinds)
    finally:
        stop.set()
        thread.join(10)
    assert seen["left_open"] == 0, f"{seen['left_open']} stalled connections were never closed by the server"
    assert seen["refused"] == 0
    worst_drop = max(seen["dropped_after"], default=0.0)
    # Handshake stalls go at HANDSHAKE_MS; a completed handshake that then stays silent
    # goes at the heartbeat timeout, counted from a PING (sent every HEARTBEAT_IVL_MS).
    assert worst_drop < max(HANDSHAKE_MS, HEARTBEAT_IVL_MS + HEARTBEAT_TIMEOUT_MS) / 1000 + 3.0
    after_ping = timed_ping(server.endpoint)
    fds_after = fd_settled(server, fd_baseline + 2, timeout=5.0)
    rss_after = server.rss_kb()
    pings_ms = sorted(p * 1000 for p in report["pings"])
    record("garbage", f"{total} raw connections ({len(kinds)} kinds, {len(seen['dropped_after'])} stalled) "
                      f"sent in {seen['send_s']:.1f} s; stalls dropped by the server after "
                      f"max {worst_drop:.2f} s (HANDSHAKE_MS {HANDSHAKE_MS}, heartbeat timeout "
                      f"{HEARTBEAT_TIMEOUT_MS} ms)")
    record("garbage", f"server fds: baseline {fd_baseline}, peak {report['fds_peak']}, after {fds_after}; "
                      f"RSS {rss_before / 1024:.1f} -> {rss_after / 1024:.1f} MiB; new-client ping during flood "
                      f"max {pings_ms[-1] if pings_ms else float('nan'):.1f} ms ({len(pings_ms)} samples), "
                      f"after {after_ping * 1000:.1f} ms")
    assert pings_ms and pings_ms[-1] < 1000.0
    assert after_ping < 0.5
    assert fds_after <= fd_baseline + 2, (fd_baseline, fds_after)
    assert rss_after - rss_before < 32 * 1024, (rss_before, rss_after)


def test_garbage_connections(live):
    garbage_run(live, CONNECTIONS)


@pytest.mark.slow
def test_garbage_connections_long(live):
    garbage_run(live, LONG_CONNECTIONS, LONG_KINDS)
