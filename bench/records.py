"""Records or separate arguments into a kernel: what numba's dispatch costs a call each way.

``solve`` takes 22 arguments (arrays and scalars) and 40 kernels in ``pathserver/core``
take ten or more. Issue #33 asked for records across module boundaries where the speed
allows. This bench calls one kernel, which reads every argument once, in four ways, taking
turns round by round, and prints the time per call side by side:

  positional   22 separate arguments, as ``solve`` is called today
  namedtuple   one ``typing.NamedTuple`` of the same 22 values (numba types it as a
               heterogeneous named tuple)
  tuple        one plain tuple of the same values
  two groups   the 18 arrays in one tuple, the 4 scalars as arguments

Inside the compiled code a record's fields cost nothing; the difference is in the
dispatch (numba types each argument on every call from Python).

    PYTHONPATH=$PWD python bench/records.py [--calls 20000] [--rounds 7] [--write-docs]
"""

from __future__ import annotations

import argparse
import time
from typing import NamedTuple

import numpy as np
from numba import njit

from _docs import add_argument as add_write_docs, write_section

ARRAYS = 18


class Call(NamedTuple):
    a0: np.ndarray
    a1: np.ndarray
    a2: np.ndarray
    a3: np.ndarray
    a4: np.ndarray
    a5: np.ndarray
    a6: np.ndarray
    a7: np.ndarray
    a8: np.ndarray
    a9: np.ndarray
    a10: np.ndarray
    a11: np.ndarray
    a12: np.ndarray
    a13: np.ndarray
    a14: np.ndarray
    a15: np.ndarray
    a16: np.ndarray
    a17: np.ndarray
    s0: int
    s1: int
    s2: float
    s3: int


@njit(nogil=True)
def positional(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, s0, s1, s2, s3):
    return (a0[0] + a1[0] + a2[0] + a3[0] + a4[0] + a5[0] + a6[0] + a7[0] + a8[0] + a9[0] + a10[0] + a11[0]
            + a12[0] + a13[0] + a14[0] + a15[0] + a16[0] + a17[0] + s0 + s1 + s2 + s3)


@njit(nogil=True)
def record(call):
    return (call.a0[0] + call.a1[0] + call.a2[0] + call.a3[0] + call.a4[0] + call.a5[0] + call.a6[0] + call.a7[0]
            + call.a8[0] + call.a9[0] + call.a10[0] + call.a11[0] + call.a12[0] + call.a13[0] + call.a14[0]
            + call.a15[0] + call.a16[0] + call.a17[0] + call.s0 + call.s1 + call.s2 + call.s3)


@njit(nogil=True)
def plain(values):
    return (values[0][0] + values[1][0] + values[2][0] + values[3][0] + values[4][0] + values[5][0]
            + values[6][0] + values[7][0] + values[8][0] + values[9][0] + values[10][0] + values[11][0]
            + values[12][0] + values[13][0] + values[14][0] + values[15][0] + values[16][0] + values[17][0]
            + values[18] + values[19] + values[20] + values[21])


@njit(nogil=True)
def grouped(arrays, s0, s1, s2, s3):
    return (arrays[0][0] + arrays[1][0] + arrays[2][0] + arrays[3][0] + arrays[4][0] + arrays[5][0]
            + arrays[6][0] + arrays[7][0] + arrays[8][0] + arrays[9][0] + arrays[10][0] + arrays[11][0]
            + arrays[12][0] + arrays[13][0] + arrays[14][0] + arrays[15][0] + arrays[16][0] + arrays[17][0]
            + s0 + s1 + s2 + s3)


def values() -> tuple:
    """solve's kinds of arrays (uint8 and int32 grids, float64 and int32 workspaces, ...)."""
    kinds = (np.uint8, np.int32, np.uint64, np.uint8, np.uint8, np.uint8, np.float64, np.float32, np.float64,
             np.float64, np.int32, np.float32, np.int32, np.float32, np.uint64, np.int32, np.float64, np.uint8)
    arrays = tuple(np.ones(64 if k % 2 else (8, 8), dtype=kind).reshape(-1) for k, kind in enumerate(kinds))
    return (*arrays, 3, 4, 1.5, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20000, help="calls per round (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds, taking turns (default: %(default)s)")
    add_write_docs(parser)
    args = parser.parse_args()
    given = values()
    as_record = Call(*given)
    arrays, scalars = given[:ARRAYS], given[ARRAYS:]
    ways = {
        "positional": lambda: positional(*given),
        "namedtuple": lambda: record(as_record),
        "tuple": lambda: plain(given),
        "two groups": lambda: grouped(arrays, *scalars),
    }
    answers = {name: way() for name, way in ways.items()}  # compiles each
    assert len(set(answers.values())) == 1, answers
    best = dict.fromkeys(ways, float("inf"))
    for round_ in range(args.rounds):
        order = list(ways)[round_ % len(ways):] + list(ways)[:round_ % len(ways)]
        for name in order:
            way = ways[name]
            began = time.perf_counter()
            for _ in range(args.calls):
                way()
            best[name] = min(best[name], (time.perf_counter() - began) / args.calls * 1e6)
    base = best["positional"]
    lines = ["| how the kernel is called | µs a call | × positional |", "| --- | ---: | ---: |"]
    lines += [f"| {name} | {micros:.2f} | {micros / base:.2f} |" for name, micros in best.items()]
    lines.append(f"\nThe lowest of {args.rounds} rounds of {args.calls} calls each (a lambda around each call, "
                 "the same in every row).")
    report = "\n".join(lines)
    print(report)
    if args.write_docs:
        write_section("records", report)


if __name__ == "__main__":
    main()
