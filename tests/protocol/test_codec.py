"""Decoding limits: every refusal has its code, before any other work is done."""

import time

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pathserver.errors import MalformedError, TooLargeError
from pathserver.protocol.codec import Limits, decode_request, encode, peek_id, top_level_op


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


# -- the top-level op of a body too large to decode -------------------------------------------

_scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(width=32)
            | st.text(max_size=80) | st.binary(max_size=300)
            | st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=20)))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=5)
                       | st.dictionaries(st.text(max_size=5), inner, max_size=5), max_leaves=20)
_keys = st.sampled_from(["op", "id", "map", "cells", "costs"]) | st.text(max_size=4)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=8), st.booleans())
def test_top_level_op_agrees_with_msgpack(obj, single_float):
    """What the header scan reads is what a full decode finds: the op of a map with one
    str ``op`` key (short enough to be an op name), else None; a cut or padded body, None."""
    body = msgpack.packb(obj, use_bin_type=True, use_single_float=single_float)
    op = obj.get("op")
    expected = op if isinstance(op, str) and len(op.encode()) <= 64 else None
    assert top_level_op(body, max_headers=10**6) == expected
    assert top_level_op(body + b"\x00", max_headers=10**6) is None
    assert top_level_op(body[:-1], max_headers=10**6) is None


def test_top_level_op_skips_a_large_bin_unread_and_refuses_what_a_decoder_would_not_agree_with():
    big = msgpack.packb({"id": 1, "cells": b"\x01" * (64 << 20), "op": "put_map"}, use_bin_type=True)
    started = time.perf_counter()
    assert top_level_op(big) == "put_map"
    assert time.perf_counter() - started < 0.01
    assert top_level_op(b"\x82\xa2op\xa7put_map\xa2op\xa4ping") is None  # two ops: a decoder keeps "ping"
    assert top_level_op(msgpack.packb({"op": "ping", "x": {"op": "put_map"}})) == "ping"
    assert top_level_op(msgpack.packb({1: 2, "op": "put_map"}, strict_types=False)) is None  # not a str key
    assert top_level_op(msgpack.packb({"op": "put_map", "x": list(range(300))})) is None  # past the header budget
    assert top_level_op(msgpack.packb([{"op": "put_map"}])) is None
    assert top_level_op(b"") is None and top_level_op(b"\xc1") is None
