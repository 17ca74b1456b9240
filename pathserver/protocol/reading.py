"""Reading a request body's bytes: msgpack, with ``avoid.cells`` pairs read by a kernel.

Engines send ``avoid.cells`` as an array of ``[x, y]`` pairs; msgpack would decode each
pair into a list, the validators would walk them and the search would convert them. A
:class:`BodyDecoder` finds a plainly valid array of pairs with a compiled kernel instead
(handed in, as :class:`~pathserver.protocol.replies.PathReplies` takes its encoders:
``protocol`` imports no numba) and puts it back as one read-only float64 (n, 2) array.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from pathserver.options import AVOID
from pathserver.protocol.codec import Limits, decode_map


class PairsKernel(Protocol):
    """What :class:`BodyDecoder` needs of ``pathserver.core.wire``."""

    PAIRS_FOUND: int

    def avoid_pairs(self, body: np.ndarray, max_len: int, out: np.ndarray, info: np.ndarray) -> int: ...


#: Bodies of at least this many bytes are looked through for ``avoid.cells`` sent as
#: ``[x, y]`` pairs (a request without many is shorter).
PAIRS_FROM_BYTES = 256
#: ``avoid`` as a msgpack fixstr, as every encoder writes a key of five bytes (a body
#: without it is not walked: this only saves work, the kernel decides).
_AVOID_KEY = b"\xa5avoid"
#: ``cells`` so, and the type bytes of an array: a body whose first ``cells`` holds no
#: array (the bin engines send) is not walked either.
_CELLS_KEY = b"\xa5cells"
_ARRAY_HEADERS = frozenset(range(0x90, 0xA0)) | {0xDC, 0xDD}


class BodyDecoder:
    """``decode(body, limits)``: ``decode_map(body, limits)``, with a body's ``avoid.cells``
    sent as plainly valid ``[x, y]`` pairs read by ``kernels.avoid_pairs`` into a read-only
    float64 (n, 2) array: msgpack decodes the body with the array left out (nil in its
    place) and the array goes back in. Whatever the kernel does not find plainly so is
    decoded as it is, so every refusal is msgpack's and the validators'.
    kernels: None decodes every body with msgpack alone."""

    def __init__(self, kernels: PairsKernel | None):
        self.kernels = kernels

    def decode(self, body: bytes, limits: Limits) -> dict:
        kernels = self.kernels
        if kernels is None or not (PAIRS_FROM_BYTES <= len(body) <= limits.max_request_bytes
                                   and limits.max_depth >= 4):
            return decode_map(body, limits)
        value = body.find(_CELLS_KEY) + len(_CELLS_KEY)  # where the first "cells" key's value starts
        if not (len(_CELLS_KEY) <= value < len(body) and body[value] in _ARRAY_HEADERS and _AVOID_KEY in body):
            return decode_map(body, limits)
        rows = min(limits.max_array_len, len(body) // 3)
        out = np.empty((rows, 2), dtype=np.float64)
        info = np.empty(3, dtype=np.int64)
        if kernels.avoid_pairs(np.frombuffer(body, dtype=np.uint8), limits.max_array_len, out,
                               info) != kernels.PAIRS_FOUND:
            return decode_map(body, limits)
        start, end, count = info.tolist()
        obj = decode_map(b"".join((body[:start], b"\xc0", body[end:])), limits)
        cells = out[:count]
        cells.setflags(write=False)
        obj[AVOID.name]["cells"] = cells
        return obj
