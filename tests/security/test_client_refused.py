"""A client the server refuses (wrong CURVE key) must time out as its options say, never
block: once libzmq drops the refused connection, a DEALER has nowhere to queue a message
and a plain send would wait forever."""

import asyncio
import threading
import time

import pytest

from pathserver.client import AsyncClient, Client, ClientTimeoutError

#: Longer than libzmq takes to drop a connection whose handshake failed (about a second).
IDLE_S = 2.0


def test_a_refused_client_times_out_instead_of_blocking(curve_server, keys):
    outcome = []

    def ask():
        with Client(curve_server.endpoint, timeout=0.3, retries=1, server_public_key=keys.server.public_file,
                    client_secret_key=keys.mallory.secret_file) as client:
            time.sleep(IDLE_S)
            try:
                client.ping()
            except ClientTimeoutError as exc:
                outcome.append(exc)

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(IDLE_S + 10)
    assert not thread.is_alive(), "the client blocked on a send"
    assert len(outcome) == 1


def test_a_refused_async_client_times_out_instead_of_blocking(curve_server, keys):
    async def ask():
        async with AsyncClient(curve_server.endpoint, timeout=0.3, retries=1, server_public_key=keys.server.public_file,
                               client_secret_key=keys.mallory.secret_file) as client:
            await client.ping()  # connects; refused

    async def main():
        with pytest.raises(ClientTimeoutError):
            await asyncio.wait_for(ask(), 10)
        async with AsyncClient(curve_server.endpoint, timeout=0.3, retries=1, server_public_key=keys.server.public_file,
                               client_secret_key=keys.mallory.secret_file) as client:
            with pytest.raises(ClientTimeoutError):
                await client.ping()
            await asyncio.sleep(IDLE_S)
            with pytest.raises(ClientTimeoutError):
                await asyncio.wait_for(client.ping(), 10)

    asyncio.run(main())
