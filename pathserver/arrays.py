"""The bins of the queries beyond one path <-> numpy arrays, in one place for the
options' checks, the server's handlers and request checks and the Python client (no
numba here).

Every bin is little-endian: ``float32`` ``x, y`` pairs (``next_steps``' ``positions`` and
``steps``), ``int32`` ``x, y`` pairs (``reachable``'s ``cells``, ``avoid``'s ``cells``),
``float32`` values (``reachable``'s ``costs``, ``next_steps``' ``remaining``, ``field``'s
``cost``, row-major from the top-left).
"""

from __future__ import annotations

import numpy as np

from pathserver.errors import RequestError

FLOAT32 = np.dtype("<f4")
INT32 = np.dtype("<i4")


def to_bin(values, dtype: np.dtype) -> bytes:
    """``values`` (any shape) as a bin of ``dtype``, row-major."""
    return np.ascontiguousarray(values, dtype=dtype).tobytes()


def pairs(data: bytes, dtype: np.dtype, name: str) -> np.ndarray:
    """A bin of ``x, y`` pairs of ``dtype`` as an (n, 2) array (read-only, no copy);
    RequestError at ``name`` when its length is no whole number of pairs."""
    size = 2 * dtype.itemsize
    if len(data) % size:
        raise RequestError(f"'{name}' as a bin holds {dtype.name} x, y pairs ({size} bytes each), got {len(data)} "
                           "bytes", at=name)
    return np.frombuffer(data, dtype=dtype).reshape(-1, 2)


def values(data: bytes, dtype: np.dtype = FLOAT32, shape=None) -> np.ndarray:
    """A bin of ``dtype`` values as an array (read-only, no copy), of ``shape`` if given."""
    array = np.frombuffer(data, dtype=dtype)
    return array if shape is None else array.reshape(shape)
