"""Decoding limits: every refusal has its code, before any other work is done."""

import msgpack
import pytest

from pathserver.errors import MalformedError, TooLargeError
from pathserver.protocol.codec import Limits, decode_request, encode, peek_id


def test_a_map_decodes_with_str_keys():
    assert decode_request(encode({"id": 1, "op": "ping", "name": "é"})) == {"id": 1, "op": "ping", "name": "é"}


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\xc1",
        msgpack.packb([1, 2]),
        msgpack.packb("ping"),
        msgpack.packb({"id": 1}) + b"\x00",
        msgpack.packb({1: 2}),
        msgpack.packb({b"id": 1}, use_bin_type=True),
        b"\x81\xa2id\xa2\xff\xfe",  # invalid UTF-8
        msgpack.packb({"id": 1})[:-1],  # truncated
    ],
    ids=["empty", "reserved-byte", "array", "string", "trailing", "int-key", "bin-key", "bad-utf8", "truncated"],
)
def test_malformed(body):
    with pytest.raises(MalformedError):
        decode_request(body)


@pytest.mark.parametrize(
    "obj, limits",
    [
        ({"x": "y" * 100}, Limits(max_str_len=10)),
        ({"x": list(range(100))}, Limits(max_array_len=10)),
        ({f"k{i}": i for i in range(20)}, Limits(max_map_len=10)),
        ({"x": b"z" * 100}, Limits(max_bin_len=10)),
        ({"x": [[[[1]]]]}, Limits(max_depth=4)),
        ({"x": "y" * 100}, Limits(max_request_bytes=50)),
    ],
    ids=["str", "array", "map", "bin", "depth", "bytes"],
)
def test_too_large(obj, limits):
    with pytest.raises(TooLargeError):
        decode_request(msgpack.packb(obj, use_bin_type=True), limits)
    # one step inside the limit passes
    decode_request(msgpack.packb({"x": 1}), limits)


def test_msgpack_own_stack_limit_is_too_large_too():
    body = b"\x81\xa1x" + b"\x91" * 5000 + b"\x01"
    with pytest.raises(TooLargeError):
        decode_request(body)


def test_peek_id_reads_a_leading_id_only():
    assert peek_id(msgpack.packb({"id": 42, "op": "x" * 10_000})) == 42
    assert peek_id(msgpack.packb({"op": "ping", "id": 42})) is None
    assert peek_id(msgpack.packb({"id": "42"})) is None
    assert peek_id(b"\xc1") is None
    assert peek_id(msgpack.packb({"id": 2**64 - 1})) == 2**64 - 1


def test_encode_matches_packb_after_a_failure_and_a_large_reply():
    # encode() reuses one Packer per thread; neither a failed pack nor a big one may leak
    # into the next reply's bytes.
    with pytest.raises(TypeError):
        encode({"id": 1, "x": object()})
    assert encode({"id": 1, "ok": True}) == msgpack.packb({"id": 1, "ok": True}, use_bin_type=True)
    big = {"id": 2, "path": [[i, i] for i in range(100_000)]}
    assert encode(big) == msgpack.packb(big, use_bin_type=True)
    assert encode({"id": 3}) == msgpack.packb({"id": 3}, use_bin_type=True)


def test_encode_from_many_threads_at_once():
    from concurrent.futures import ThreadPoolExecutor

    replies = [{"id": i, "ok": True, "path": [[i, j] for j in range(i % 50)], "cost": i / 7} for i in range(2000)]
    with ThreadPoolExecutor(8) as pool:
        encoded = list(pool.map(encode, replies))
    assert encoded == [msgpack.packb(r, use_bin_type=True) for r in replies]
