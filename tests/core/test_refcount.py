"""The search loops run without numba's reference counting (``NO_REFCOUNT`` in
pathserver.core.jit): with it, every array an inlined helper receives costs an atomic
increment and decrement on each pass (JPS+ ran 1.4 to 2.1 times slower)."""

import numba
import numpy as np
import pytest

from pathserver.core import astar, jps, jpsplus, query
from pathserver.core.bounds import ROW
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


def test_marked_kernel_holds_no_reference_counting():
    # A fresh compile (the cached one cannot be inspected) of JPS+ as marked, and as it
    # would be without the mark: the machine code of the first calls no NRT_incref or
    # NRT_decref at all, that of the second does.
    cells = np.ones((16, 16), dtype=np.uint8)
    table = jpsplus.jump_table(cells)
    work = np.zeros((5, cells.size + 1))
    args = (cells, table, 1, 1, 14, 12, 1.0, 0, work)
    marked = numba.njit(nogil=True, **NO_REFCOUNT)(jpsplus.jps_plus.py_func)
    plain = numba.njit(nogil=True)(jpsplus.jps_plus.py_func)
    one = np.zeros(0, dtype=np.int32)
    none = (np.zeros(0, dtype=np.int32), np.zeros((0, ROW), dtype=np.int16), None, None)  # no bounds, no overlay
    assert marked(*args, 10, one, *none) == plain(*args, 12, one, *none) == jpsplus.jps_plus(*args, 14, one, *none)
    counts = []
    for dispatcher in (marked, plain):
        asm = "".join(dispatcher.inspect_asm().values())
        counts.append(asm.count("NRT_incref") + asm.count("NRT_decref"))
    assert counts[0] == 0 < counts[1]

