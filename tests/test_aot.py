"""The kernels compiled ahead of time for the bundle (pathserver.aot, pathserver.core.jit).

Fast: how collected signatures fold into the versions compiled, and how a compiled kernel
checks its arguments (the extension's own functions check none). Slow (``--slow``, about
three minutes): build the extension, then answer the same queries with it, numba blocked,
and with the JIT, and compare."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from numba.core import types

from pathserver import aot
from pathserver.core.jit import CompiledKernel, _check, bound

ROOT = Path(__file__).resolve().parent.parent

RO_U8 = types.Array(types.uint8, 2, "C", readonly=True)
RW_U8 = types.Array(types.uint8, 2, "C")
RW_U16 = types.Array(types.uint16, 2, "C")


def test_versions_differing_in_writability_fold_into_the_read_only_one():
    folded = aot.normalize([(RO_U8, RW_U16, types.int64), (RW_U8, RW_U16, types.int64)])
    assert folded == [(RO_U8, RW_U16, types.int64)]


def test_scalars_widen_and_literals_are_dropped():
    folded = aot.normalize([(RO_U8, types.int32, types.float32), (RO_U8, types.int64, types.float64),
                            (RO_U8, types.IntegerLiteral(0), types.float64)])
    assert folded == [(RO_U8, types.int64, types.float64)]


def test_another_dtype_is_another_version():
    assert len(aot.normalize([(RO_U8,), (types.Array(types.uint16, 2, "C", readonly=True),)])) == 2


def test_arrays_not_in_c_order_come_from_kernels_and_are_dropped():
    assert aot.normalize([(types.Array(types.uint8, 2, "A"),), (RO_U8,)]) == [(RO_U8,)]


def test_a_kernel_the_warm_up_never_called_fails_the_build():
    with pytest.raises(RuntimeError, match="never called components.nearest_with_label from Python"):
        aot.table({("components", "nearest_with_label"): [(RO_U8, types.IntegerLiteral(0))]})


def test_a_kind_names_its_numba_type_again():
    for arg in (RO_U8, RW_U16, types.Array(types.float64, 1, "C"), types.int64, types.float64, types.boolean):
        assert aot.numba_type(aot.arg_kind(arg)) == arg
    assert json.loads(json.dumps(aot.arg_kind(RO_U8))) == ["array", "|u1", 2, True]


def kernel(*kinds):
    """A CompiledKernel whose one version returns its arguments' count."""
    return CompiledKernel("mod.kernel", [(lambda *args: len(args), tuple(_check(kind) for kind in kinds))])


def test_a_compiled_kernel_takes_what_the_jit_would_have_typed_alike():
    run = kernel(["array", "|u1", 2, True], ["int"], ["float"], ["bool"])
    readonly = np.zeros((2, 3), np.uint8)
    readonly.setflags(write=False)
    assert run(np.zeros((2, 3), np.uint8), 1, 2.5, True) == 4  # writable where read-only was compiled
    assert run(readonly, np.int32(1), 2, np.bool_(False)) == 4  # numpy scalars; an int where a float goes


@pytest.mark.parametrize("array, why", [
    (np.zeros((2, 3), np.uint16), "another dtype"),
    (np.zeros(6, np.uint8), "another number of dimensions"),
    (np.zeros((3, 2), np.uint8).T, "not C order"),
])
def test_a_compiled_kernel_refuses_an_array_it_would_misread(array, why):
    with pytest.raises(TypeError, match="no ahead-of-time compiled version"):
        kernel(["array", "|u1", 2, True])(array)


def test_a_read_only_array_never_reaches_a_version_that_may_write_it():
    readonly = np.zeros((2, 3), np.uint8)
    readonly.setflags(write=False)
    with pytest.raises(TypeError, match=r"uint8\[2d C read-only\]"):
        kernel(["array", "|u1", 2, False])(readonly)


def test_the_first_matching_version_runs():
    versions = [(lambda a: "u8", (_check(["array", "|u1", 1, True]),)),
                (lambda a: "u16", (_check(["array", "<u2", 1, True]),))]
    assert CompiledKernel("mod.kernel", versions)(np.zeros(2, np.uint16)) == "u16"


def test_a_bound_version_is_the_one_the_arguments_pick():
    versions = [(lambda a: "u8", (_check(["array", "|u1", 1, True]),)),
                (lambda a: "u16", (_check(["array", "<u2", 1, True]),))]
    compiled = CompiledKernel("mod.kernel", versions)
    assert bound(compiled, (np.zeros(2, np.uint16),))(None) == "u16"  # checks nothing once bound
    with pytest.raises(TypeError, match="no ahead-of-time compiled version"):
        bound(compiled, (np.zeros(2, np.float32),))


def test_a_bound_jit_kernel_runs_the_dispatchers_version():
    @numba.njit
    def scaled(values, k):
        return values.sum() * k

    values = np.arange(4, dtype=np.float64)
    run = bound(scaled, (values, 2))
    assert run(values, 3) == scaled(values, 3) == 18.0
    assert len(scaled.signatures) == 1  # compiled once, for both


#: Run with the JIT and with the extension: the answers, as JSON, on the sample maps and
#: on a map whose cost index is uint16.
ANSWERS = r"""
import json, sys
from pathlib import Path
import numpy as np
from pathserver import kernel_cache
kernel_cache.configure()
from pathserver import GridMap, find_path
from pathserver.errors import PathserverError
from pathserver.grid.queries import check_block, distance_field, next_steps, reachable
import pathserver.core.jit as jit

maps = {path.name: GridMap.load(path) for path in sorted(Path("maps").iterdir()) if path.suffix in (".map", ".png")}
rng = np.random.default_rng(7)
cost = 1.0 + rng.integers(0, 1000, size=(60, 60)) / 100.0
walkable = rng.random((60, 60)) > 0.2
maps["wide"] = GridMap(walkable, cost)
answers = {"mode": jit.MODE, "numba": "numba" in sys.modules and sys.modules["numba"] is not None}

def answer(what, run):
    try:
        value = run()
    except PathserverError as error:
        value = ["error", error.code]
    answers[what] = value

for name, gridmap in maps.items():
    cells = np.argwhere(gridmap.layer(1).passable)
    picks = [tuple(int(v) for v in cells[i][::-1]) for i in (0, len(cells) // 3, len(cells) // 2, -1)]
    for start, goal in zip(picks, picks[1:] + picks[:1]):
        for options in ({}, {"algorithm": "astar", "smooth": "los"}, {"algorithm": "jps", "line_of_sight": False},
                        {"diagonal": "never", "allow_partial": True, "max_expansions": 50}):
            def path(start=start, goal=goal, options=options):
                found = find_path(gridmap, start, goal, **options)
                return [found.path.tolist(), round(found.cost, 9)]
            answer(f"{name} {start} {goal} {sorted(options.items())}", path)
        answer(f"{name} {start} unit 2", lambda start=start, goal=goal: find_path(gridmap, start, goal, 2).path.tolist())
        answer(f"{name} {start} goals", lambda start=start: find_path(gridmap, start, goals=picks).path.tolist())
        answer(f"{name} {start} reach", lambda start=start: [a.tolist() for a in reachable(gridmap, start, 25.0)])
    blocked = np.argwhere(~gridmap.layer(1).passable)
    if len(blocked):  # a blocked start snaps to the nearest standable cell
        answer(f"{name} snapped reach", lambda: [a.tolist() for a in reachable(gridmap, tuple(int(v) for v in blocked[0][::-1]), 25.0)])
    field = lambda: np.round(np.where(np.isfinite(f := distance_field(gridmap, [picks[-1]], 1)), f, -1), 9).tolist()
    answer(f"{name} field", field)
    answer(f"{name} steps", lambda: [a.tolist() for a in next_steps(gridmap, [picks[-1]], 1, picks[:3])])
    answer(f"{name} block", lambda: [list(p) for p in check_block(gridmap, cells=[picks[1]], points=picks)])
print(json.dumps(answers))
"""


def answers(env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", ANSWERS], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_ahead_of_time_kernels_answer_as_the_jit_does(tmp_path):
    aot.build(tmp_path / "kernels", say=lambda text: None)
    # numba and llvmlite made unimportable, as in the bundle.
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['numba'] = sys.modules['llvmlite'] = None\n")
    path = os.pathsep.join([str(blocker), str(tmp_path / "kernels"), str(ROOT)])
    compiled = answers({**os.environ, "PATHSERVER_KERNELS": "aot", "PYTHONPATH": path})
    jitted = answers({**os.environ, "PATHSERVER_KERNELS": "jit", "PYTHONPATH": str(ROOT)})
    assert (compiled.pop("mode"), compiled.pop("numba")) == ("aot", False)
    assert (jitted.pop("mode"), jitted.pop("numba")) == ("jit", True)
    assert len(compiled) > 50
    assert compiled == jitted


def kernels_called_from_python() -> set:
    """(module, kernel) for every kernel a module outside ``pathserver.core`` imports
    (``from pathserver.core.m import k``) or reaches through an imported kernel module
    (``from pathserver.core import m as alias`` ... ``alias.k``), read with ``ast``."""
    import ast
    import importlib

    from numba.core.registry import CPUDispatcher

    called = set()
    for path in (ROOT / "pathserver").rglob("*.py"):
        if "core" in path.relative_to(ROOT / "pathserver").parts[:1] or path.name == "aot.py":
            continue
        tree = ast.parse(path.read_text())
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pathserver.core"):
                for alias in node.names:
                    if node.module == "pathserver.core":
                        aliases[alias.asname or alias.name] = alias.name
                    else:
                        called.add((node.module.rsplit(".", 1)[-1], alias.name))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                called.add((aliases[node.value.id], node.attr))
    return {(module, name) for module, name in called
            if isinstance(getattr(importlib.import_module(f"pathserver.core.{module}"), name, None), CPUDispatcher)}


def test_every_kernel_python_calls_is_compiled_ahead_of_time():
    # query.solver hands Python one of the copies of solve, by name.
    from pathserver.core.query import COPIES

    assert kernels_called_from_python() | {("query", name) for name in COPIES} == set(aot.ENTRY_KERNELS)
