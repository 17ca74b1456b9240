"""The kernels compiled ahead of time into one extension module, for the bundle.

numba's cache holds object code that numba links through llvmlite when it loads it, so a
bundle of cached kernels would still carry LLVM. ``pathserver bundle`` instead compiles
the kernels that Python calls into one C extension, :data:`pathserver.core.jit.AOT_MODULE`,
with numba's ahead-of-time compiler (``numba.pycc``), and freezes the server without numba
and llvmlite: in the frozen server :mod:`pathserver.core.jit` binds each kernel to its
compiled versions.

:func:`collect` runs the calls that reach every kernel a request can reach
(``server.startup``'s warm-up steps, on the warm-up maps and on maps whose cost index is
uint16 and uint32) and reads each kernel's compiled signatures; :func:`normalize` folds
them into as few as serve the same calls; :func:`build` compiles them for a portable CPU
(LLVM's ``generic``), every kernel releasing the GIL, and writes beside the extension the
table of argument kinds (:data:`pathserver.core.jit.AOT_TABLE`) the frozen server
dispatches on. Why folding is safe, and what fails the build: docs/shipping.md, "The
kernels are compiled ahead of time".

This module needs numba and a C compiler (the ``bundle`` extra's build environment),
never the bundle itself.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from pathserver.core.jit import AOT_MODULE, AOT_TABLE
from pathserver.core.query import COPIES

#: The kernels Python calls (module, function); every other kernel is only ever
#: called from these, inside the compiled code.
ENTRY_KERNELS = (
    ("avoid", "block_anchors"), ("avoid", "boxes_from"), ("avoid", "hex_anchors"), ("avoid", "lay_cells"),
    ("avoid", "price_anchors"), ("avoid", "restore_anchors"),
    ("bounds", "bound_rows"), ("bounds", "fill_bounds"), ("bounds", "legal_moves"),
    ("clearance", "compute_clearance"), ("clearance", "footprint_cost"), ("clearance", "footprint_passable"),
    ("clearance", "hex_clearance"), ("clearance", "hex_footprint_cost"), ("clearance", "index_costs"),
    ("components", "block_labels"), ("components", "label_components"), ("components", "nearest_with_label"),
    ("cut", "block_pieces"), ("cut", "cut_pieces"), ("cut", "piece_graph"), ("cut", "update_pieces"),
    ("dijkstra", "count_in_components"), ("dijkstra", "field"), ("dijkstra", "field_whole"),
    ("dijkstra", "leave_costs"), ("dijkstra", "reach"), ("dijkstra", "ring_size"),
    ("goals", "snap_goals"), ("goals", "solve_goals"), ("hexjps", "hex_jump_table"),
    ("jps", "jump_bitmaps"), ("jpsplus", "jump_table"), ("jpsplus", "jump_table_stops"),
    ("jpsplus", "update_jump_table"),
    ("landmarks", "landmark_table"), ("lines", "finish"), ("lines", "polyline_length"),
    ("links", "field_links"), ("links", "link_steps"), ("links", "reach_links"), ("links", "search_links"),
    ("links", "trace_links"), ("links_jps", "link_rows"), ("links_jps", "path_links"),
    *(("query", name) for name in COPIES),
    ("relay", "lay_avoided"), ("relay", "lift_avoided"), ("relay", "new_overlay"),
    ("repair", "relax"),
    ("steer", "next_steps"),
    ("wire", "avoid_pairs"), ("wire", "pack_float_points"), ("wire", "pack_int_points"),
    ("wire", "packed_points_bound"),
)


def wide_cost_map(distinct: int):
    """A GridMap with at least ``distinct`` different terrain costs (so a uint16 or
    uint32 cost index), the warm-up's costly map in its top-left corner."""
    from pathserver.grid.gridmap import GridMap

    side = int(np.ceil(np.sqrt(distinct))) + 1
    small = _warm_costly()
    walkable = np.ones((side, side), dtype=bool)
    cost = 1.0 + np.arange(side * side, dtype=np.float64).reshape(side, side) / (side * side)
    height, width = small.walkable.shape
    walkable[:height, :width] = small.walkable.astype(bool)
    cost[:height, :width] = small.cost
    return GridMap(walkable, cost)


def _warm_costly():
    from pathserver.server import startup

    return startup.warm_maps()["costly"]


def collect() -> dict[tuple[str, str], list]:
    """(module, function) -> the numba signatures the product compiles it for: the
    warm-up steps on the warm-up maps, then on a uint16- and a uint32-indexed map."""
    from pathserver.server import startup

    for costly in (None, wide_cost_map((1 << 8) + 1), wide_cost_map((1 << 16) + 1)):
        for _, step in startup.warm_steps(costly):
            step()
    found = {}
    for module, name in ENTRY_KERNELS:
        dispatcher = getattr(sys.modules[f"pathserver.core.{module}"], name)
        found[module, name] = list(dispatcher.signatures)
    return found


def normalize(signatures) -> list:
    """The fewest signatures serving the same calls from Python (the module docstring's
    folding): scalars widened, read-only arrays preferred; signatures Python never makes
    (a literal, an array not in C order: one kernel calling another) dropped."""
    from numba.core import types

    def widen(arg):
        if isinstance(arg, types.Literal):
            return None
        if isinstance(arg, types.Boolean):
            return types.boolean
        if isinstance(arg, types.Integer):
            return types.int64
        if isinstance(arg, types.Float):
            return types.float64
        if isinstance(arg, types.Array) and arg.layout == "C":
            return arg
        return None

    by_shape = {}
    for signature in signatures:
        args = [widen(arg) for arg in signature]
        if any(arg is None for arg in args):
            continue
        shape = tuple((arg.dtype, arg.ndim) if isinstance(arg, types.Array) else arg for arg in args)
        # An array read-only in any version of the same shape is read-only in the merged one.
        merged = by_shape.setdefault(shape, args)
        by_shape[shape] = [a.copy(readonly=True) if isinstance(a, types.Array) and (not a.mutable or not b.mutable) else a
                           for a, b in zip(merged, args)]
    return [tuple(args) for args in by_shape.values()]


def arg_kind(arg) -> list:
    """The table's description of one argument type: ``["array", dtype, ndim, readonly]``
    or ``["int"]``, ``["float"]``, ``["bool"]``."""
    from numba.core import types

    if isinstance(arg, types.Array):
        return ["array", np.dtype(str(arg.dtype)).str, arg.ndim, not arg.mutable]
    if isinstance(arg, types.Boolean):
        return ["bool"]
    return ["int"] if isinstance(arg, types.Integer) else ["float"]


def table(found: dict) -> dict:
    """The table the frozen server dispatches on (:data:`pathserver.core.jit.AOT_TABLE`):
    ``"module.kernel" -> [{"symbol", "args": [kind, ...]}, ...]``, from :func:`collect`'s
    signatures, folded by :func:`normalize`."""
    entries = {}
    missing = [f"{module}.{name}" for (module, name), signatures in found.items() if not normalize(signatures)]
    if missing:
        # numba's dispatchers list only the versions this process compiled or loaded for a
        # call from Python (a kernel loaded from the cache brings not its callees' along).
        raise RuntimeError(f"the warm-up never called {', '.join(sorted(missing))} from Python: add such a call "
                           "to pathserver.server.startup.warm_steps")
    for (module, name), signatures in sorted(found.items()):
        entries[f"{module}.{name}"] = [
            {"symbol": f"{module}__{name}__{i}", "args": [arg_kind(arg) for arg in args]}
            for i, args in enumerate(normalize(signatures))
        ]
    return entries


def numba_type(kind: list):
    """The numba type an :func:`arg_kind` describes."""
    from numba.core import types
    from numba.np.numpy_support import from_dtype

    if kind[0] == "array":
        return types.Array(from_dtype(np.dtype(kind[1])), kind[2], "C", readonly=kind[3])
    return {"int": types.int64, "float": types.float64, "bool": types.boolean}[kind[0]]


def compile_table(entries: dict, out_dir: Path) -> Path:
    """Compile every version the table lists into the extension in ``out_dir`` (and the
    table beside it), for a portable CPU, every kernel releasing the GIL. Run it in a
    process of its own (:func:`build` does), so that nothing the JIT compiled lingers."""
    from numba.pycc import CC
    from numba.pycc import compiler as pycc_compiler

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cc = CC(AOT_MODULE)
    cc.output_dir = str(out_dir)
    refcount_free = set()
    for qualified, versions in entries.items():
        module, name = qualified.split(".")
        dispatcher = getattr(importlib.import_module(f"pathserver.core.{module}"), name)
        if dispatcher.targetoptions.get("_nrt") is False:
            refcount_free.add(dispatcher.py_func)
        for version in versions:
            cc.export(version["symbol"], tuple(numba_type(kind) for kind in version["args"]))(dispatcher.py_func)
    plain_compile = pycc_compiler.compile_extra
    pycc_compiler.compile_extra = _compile_as_the_jit_would(plain_compile, refcount_free)
    try:
        cc.compile()
    finally:
        pycc_compiler.compile_extra = plain_compile
    (out_dir / AOT_TABLE).write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")
    return out_dir


def _compile_as_the_jit_would(compile_extra, refcount_free):
    """pycc's ``compile_extra`` with three of its flags put right. pycc compiles every
    export with one ``Flags`` object, and numba's inliner (``inline="always"``) turns
    ``enable_ssa`` off on the flags it is given: the next export then compiles without
    SSA, which fails on some kernels (``No conversion from Literal[int](1) to
    Literal[int](0)`` in the second version of ``goals.solve_goals``). The JIT gives each
    compile its own flags; so does this. pycc's flags hold the GIL, where every kernel
    here is ``nogil=True``. And they count references, where the kernels in
    ``refcount_free`` (``NO_REFCOUNT``, :mod:`pathserver.core.jit`) are compiled without."""

    def compile_one(typingctx, targetctx, func, args, return_type, flags, *rest, **options):
        own = flags.copy()
        own.release_gil = True
        if func in refcount_free:
            own.nrt = False
        return compile_extra(typingctx, targetctx, func, args, return_type, own, *rest, **options)

    return compile_one


def build(out_dir: Path, say=print) -> dict:
    """Collect the signatures here, then compile them in a new process into ``out_dir``
    (the extension and its table); returns the table."""
    entries = table(collect())
    say(f"compiling {sum(map(len, entries.values()))} versions of {len(entries)} kernels ahead of time")
    with tempfile.TemporaryDirectory(prefix="pathserver-aot-") as scratch:
        listed = Path(scratch) / AOT_TABLE
        listed.write_text(json.dumps(entries), encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "pathserver.aot", str(listed), str(out_dir)],
                              capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("compiling the kernels ahead of time failed:\n" + done.stderr[-4000:])
    return entries


def main(argv=None) -> int:
    """``python -m pathserver.aot TABLE OUT_DIR``: :func:`compile_table` (``build``'s second step)."""
    listed, out_dir = argv if argv is not None else sys.argv[1:]
    compile_table(json.loads(Path(listed).read_text(encoding="utf-8")), Path(out_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
