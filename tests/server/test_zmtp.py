"""The golden ZMTP vectors of docs/protocol.md over a raw TCP connection: what a
hand-written engine client (GDScript, C#) sends and receives, byte for byte."""

import re
import socket
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
VECTORS = {
    name: bytes.fromhex("".join(text.split()))
    for name, text in re.findall(r"```hex name=([\w-]+)\n(.*?)```", DOC.read_text(), flags=re.S)
}


class RawDealer:
    """Just enough ZMTP 3 (NULL mechanism) to be a DEALER."""

    def __init__(self, endpoint: str):
        host, port = endpoint.rsplit("/", 1)[1].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.sock.sendall(b"\xff" + b"\x00" * 8 + b"\x7f\x03\x00NULL" + b"\x00" * 48)
        greeting = self._read(64)
        assert greeting[0] == 0xFF and greeting[10] == 3 and greeting[12:16] == b"NULL"
        self.sock.sendall(b"\x04\x1c\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER")
        flags, body = self._frame()
        assert flags & 0x04 and body.startswith(b"\x05READY")

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("server closed the connection")
            data += chunk
        return data

    def _frame(self) -> tuple[int, bytes]:
        flags = self._read(1)[0]
        size = int.from_bytes(self._read(8 if flags & 0x02 else 1), "big")
        return flags, self._read(size)

    def message_bytes(self) -> bytes:
        """The raw bytes of the next message's frames, commands (PING) skipped."""
        raw = b""
        while True:
            flags, body = self._frame()
            if flags & 0x04:
                continue
            size = len(body).to_bytes(8 if flags & 0x02 else 1, "big")
            raw += bytes([flags]) + size + body
            if not flags & 0x01:
                return raw

    def close(self):
        self.sock.close()


@pytest.mark.parametrize("shape", ["delimited", "bare"])
def test_zmtp_golden_vectors_over_a_raw_connection(server, shape):
    raw = RawDealer(server.endpoint)
    try:
        raw.sock.sendall(VECTORS[f"ping-request-zmtp-{shape}"])
        assert raw.message_bytes() == VECTORS[f"ping-reply-zmtp-{shape}"]
        for name in ("malformed", "invalid"):
            body = VECTORS[f"{name}-request"]
            raw.sock.sendall(b"\x01\x00" + bytes([0, len(body)]) + body)
            reply = VECTORS[f"{name}-reply"]
            assert raw.message_bytes() == b"\x01\x00" + bytes([0, len(reply)]) + reply
    finally:
        raw.close()
