"""The search loops run without numba's reference counting (``NO_REFCOUNT`` in
pathserver.core.jit): with it, every array an inlined helper receives costs an atomic
increment and decrement on each pass (JPS+ ran 1.4 to 2.1 times slower)."""

import numba
import numpy as np
import pytest

from pathserver.core import astar, jps, jpsplus, query
from pathserver.core.jit import NO_REFCOUNT

#: The kernels every path query runs through (solve leaves its answer in the workspace).
SEARCH_KERNELS = [
    query.solve, query.solve_astar_uniform, query.solve_astar_weighted, query.solve_astar_any, query.solve_jps,
    query.solve_plus, jpsplus.jps_plus, jps.jps, astar.astar,
    astar.search_uniform, astar.search_weighted, astar.search_any,
]


@pytest.mark.parametrize("kernel", SEARCH_KERNELS, ids=lambda k: k.__name__)
def test_search_kernels_are_marked(kernel):
    assert kernel.targetoptions.get("_nrt") is False


@numba.njit(nogil=True)
def _at(cells, i):
    return cells[i]


def _walk(cells, n):
    """The shape of the search loops: an array handed to a helper on each pass."""
    total = 0
    for i in range(n):
        total += _at(cells, i)
    return total


def test_marked_kernel_holds_no_reference_counting():
    # A fresh compile (a cached one cannot be inspected) of a loop handing an array to a
    # helper, as marked and as it would be without the mark: the machine code of the
    # first calls no NRT_incref or NRT_decref at all, that of the second does. The
    # search kernels carry the same mark (test_search_kernels_are_marked).
    marked = numba.njit(nogil=True, **NO_REFCOUNT)(_walk)
    plain = numba.njit(nogil=True)(_walk)
    cells = np.arange(10)
    assert marked(cells, 10) == plain(cells, 10) == 45
    counts = []
    for dispatcher in (marked, plain):
        asm = "".join(dispatcher.inspect_asm().values())
        counts.append(asm.count("NRT_incref") + asm.count("NRT_decref"))
    assert counts[0] == 0 < counts[1]
