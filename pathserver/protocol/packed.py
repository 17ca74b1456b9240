"""Packed answers: the bins of a ``path`` or ``paths`` request sent with ``packed: true``
and of a batch sent as ``starts`` / ``goals`` bins <-> numpy arrays, in one place for the
server's request checks and handlers and the Python client (no numba here).

A point is a little-endian pair, 8 bytes: int32 ``x, y`` in grid space, float32 in world
space. A packed ``path`` reply's ``path`` is one bin of its points. A packed ``paths``
reply carries, one item an entry in order, in place of ``results``:

- ``status``: a bin, one byte an entry, the code of :data:`STATUSES`;
- ``cost``: a bin of float32; ``count``: a bin of uint32, the points of each entry's path;
- ``points``: one bin of every entry's points, one entry after the other;
- ``errors``: ``{entry index: error object}`` for the entries that failed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pathserver import arrays

#: The status of a packed entry, by its code (the byte of ``status``): the path statuses,
#: then ``error`` for an entry that failed (its error object is in ``errors``).
STATUSES = ("found", "partial", "no_path", "error")
#: Each status's code.
STATUS_CODES = {name: code for code, name in enumerate(STATUSES)}
UINT8 = np.dtype("u1")
UINT32 = np.dtype("<u4")
_ERROR = STATUS_CODES["error"]


def point_dtype(space: str) -> np.dtype:
    """The dtype of a packed point's coordinates: int32 in grid space, float32 in world."""
    return arrays.INT32 if space == "grid" else arrays.FLOAT32


def points_bin(points: np.ndarray) -> bytes:
    """(n, 2) points as a bin: ints (grid cells) as int32 pairs, floats (world points) as
    float32 pairs."""
    return arrays.to_bin(points, arrays.FLOAT32 if points.dtype.kind == "f" else arrays.INT32)


def points_from_bin(data: bytes, space: str, name: str) -> np.ndarray:
    """A bin of ``space``'s pairs as an (n, 2) array (read-only, no copy); RequestError at
    ``name`` when its length is no whole number of pairs."""
    return arrays.pairs(data, point_dtype(space), name)


def batch_fields(outcomes: list, space: str) -> dict:
    """The packed ``paths`` reply's fields from one outcome an entry: a PathAnswer (whose
    ``path`` is in ``space``) or the error object of an entry that failed."""
    n = len(outcomes)
    status = np.full(n, _ERROR, dtype=UINT8)
    cost = np.zeros(n, dtype=arrays.FLOAT32)
    count = np.zeros(n, dtype=UINT32)
    paths = []
    errors = {}
    for i, outcome in enumerate(outcomes):
        if type(outcome) is dict:
            errors[i] = outcome
            continue
        status[i] = STATUS_CODES[outcome.status]
        cost[i] = outcome.cost
        count[i] = len(outcome.path)
        paths.append(outcome.path)
    dtype = point_dtype(space)
    points = np.concatenate(paths).astype(dtype, copy=False) if paths else np.empty((0, 2), dtype=dtype)
    return {"status": status.tobytes(), "cost": cost.tobytes(), "count": count.tobytes(),
            "points": arrays.to_bin(points, dtype), "errors": errors}


@dataclass(frozen=True, eq=False)
class PackedPaths:
    """A packed ``paths`` answer as numpy arrays (read-only views of the reply's bins).

    status: uint8 (n,), each entry's code of :data:`STATUSES`.
    cost: float32 (n,), 0 for an entry without a path.
    count: uint32 (n,), the points of each entry's path (start and goal included).
    points: (m, 2) ``(x, y)``, every path one after the other: int32 cells in grid space,
        float32 points in world space.
    errors: ``{index: {"code", "message", "at"}}`` for the entries that failed.
    gen: the map generation of every answer.

    ``offsets`` int64 (n + 1,): entry ``i``'s points are ``points[offsets[i]:offsets[i + 1]]``
    (:meth:`path`); :meth:`paths` splits them all.
    """

    status: np.ndarray
    cost: np.ndarray
    count: np.ndarray
    points: np.ndarray
    errors: dict
    gen: int | None = None

    @classmethod
    def from_reply(cls, reply: dict, space: str = "grid") -> "PackedPaths":
        """A packed ``paths`` reply's fields, its points read as ``space``'s; ValueError
        when the bins do not agree (a count past the points, lengths that differ)."""
        status = arrays.values(reply["status"], UINT8)
        cost = arrays.values(reply["cost"], arrays.FLOAT32)
        count = arrays.values(reply["count"], UINT32)
        points = points_from_bin(reply["points"], space, "points")
        if not len(status) == len(cost) == len(count):
            raise ValueError(f"a packed answer of {len(status)} statuses, {len(cost)} costs and {len(count)} counts")
        if int(count.sum(dtype=np.int64)) != len(points):
            raise ValueError(f"a packed answer's counts add up to {int(count.sum())}, its points are {len(points)}")
        errors = {int(index): error for index, error in (reply.get("errors") or {}).items()}
        return cls(status, cost, count, points, errors, reply.get("gen"))

    def __len__(self) -> int:
        return len(self.status)

    @property
    def offsets(self) -> np.ndarray:
        offsets = np.zeros(len(self.count) + 1, dtype=np.int64)
        np.cumsum(self.count, out=offsets[1:])
        return offsets

    @property
    def statuses(self) -> list[str]:
        """Each entry's status by name (``"found"``, ..., ``"error"``)."""
        return [STATUSES[code] for code in self.status.tolist()]

    def path(self, index: int) -> np.ndarray:
        """Entry ``index``'s points, (k, 2), a view of :attr:`points`."""
        offsets = self.offsets
        return self.points[offsets[index]:offsets[index + 1]]

    def paths(self) -> list[np.ndarray]:
        """Every entry's points, (k, 2) views of :attr:`points`, in order."""
        return np.split(self.points, self.offsets[1:-1])


def markdown_table() -> str:
    """The table of packed statuses in ``docs/protocol.md`` (a test compares the two)."""
    rows = ["| byte | status |", "| --- | --- |"]
    rows += [f"| `{code}` | `{name}` |" for code, name in enumerate(STATUSES)]
    return "\n".join(rows)
