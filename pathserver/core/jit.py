"""Where the kernels' machine code comes from: numba's JIT, or the bundle's extension.

Every kernel module takes ``njit`` from here instead of from numba. Normally it *is*
``numba.njit``. In the bundle's frozen server (``pathserver bundle``), which carries no
numba and no LLVM, the kernels Python calls were compiled ahead of time into the
extension module :data:`AOT_MODULE` (by :mod:`pathserver.aot`), with beside it a table
(:data:`AOT_TABLE`) of each one's compiled versions and their argument kinds; ``njit``
then binds each kernel to a :class:`CompiledKernel` that picks the version matching the
arguments, and every other kernel (only ever called from compiled code) to a stub that
says so when called from Python.

Which: ``PATHSERVER_KERNELS=jit`` or ``aot`` when set (tests set ``aot`` to check the
extension against the JIT), else ``jit`` wherever numba is installed and ``aot`` where
it is not. Decided once, when this module is first imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from pathlib import Path

import numpy as np

#: The extension module holding the ahead-of-time compiled kernels (top level).
AOT_MODULE = "_pathserver_kernels"
#: Beside it: ``"module.kernel" -> [{"symbol", "args": [kind, ...]}, ...]``.
AOT_TABLE = "_pathserver_kernels.json"


def _mode() -> str:
    chosen = os.environ.get("PATHSERVER_KERNELS", "")
    if chosen in ("jit", "aot"):
        return chosen
    if chosen:
        raise ImportError(f"PATHSERVER_KERNELS={chosen!r}: say jit or aot")
    return "jit" if importlib.util.find_spec("numba") is not None else "aot"


MODE = _mode()


class CompiledKernel:
    """A kernel compiled ahead of time, callable like its numba dispatcher: the first
    version whose argument kinds match runs (without the GIL). The extension's functions
    check no argument at all (an array of another dtype or layout would be read as if it
    were the compiled one), so every argument is checked here, as numba's typing would:
    arrays by dtype, dimensions, C order and alignment, and writability where the
    version may write; numbers by kind (an int64 parameter takes any integer)."""

    def __init__(self, qualified: str, versions: list):
        self.__name__ = qualified.rsplit(".", 1)[-1]
        self.__qualname__ = qualified
        self._versions = versions

    def __call__(self, *args):
        for function, checks in self._versions:
            if len(args) == len(checks) and all(check(arg) for check, arg in zip(checks, args)):
                return function(*args)
        kinds = ", ".join(_describe(arg) for arg in args)
        raise TypeError(f"kernel {self.__qualname__} has no ahead-of-time compiled version for ({kinds}); "
                        "the versions are those `pathserver bundle` collected (pathserver.aot)")

    def version_for(self, args):
        """The compiled version these arguments run, unchecked: see :func:`bound`."""
        for function, checks in self._versions:
            if len(args) == len(checks) and all(check(arg) for check, arg in zip(checks, args)):
                return function
        return self(*args)  # raises, naming the arguments

    def __repr__(self):
        return f"<ahead-of-time compiled kernel {self.__qualname__}, {len(self._versions)} versions>"


def bound(kernel, args):
    """``kernel``'s machine code for arguments of the types of ``args`` (compiled now if
    need be), as a function that runs it without choosing a version on each call: numba's
    dispatcher types every argument of every call (for ``solve``'s 18, a share of a short
    ``find_path`` that bench/core.py's per-call overhead shows), and so does
    :class:`CompiledKernel`. Only for callers that pass arguments of exactly these types
    every time (the same arrays' dtypes, dimensions, order and writability; ints where
    ints were): nothing checks them after this."""
    if isinstance(kernel, CompiledKernel):
        return kernel.version_for(args)
    return kernel.compile(tuple(kernel.typeof_pyval(arg) for arg in args))


def _describe(arg) -> str:
    if isinstance(arg, np.ndarray):
        order = "C" if arg.flags.c_contiguous else "non-C"
        return f"{arg.dtype}[{arg.ndim}d {order}{'' if arg.flags.writeable else ' read-only'}]"
    return type(arg).__name__


def _integer(value) -> bool:
    return isinstance(value, (int, np.integer))


def _number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating))


def _boolean(value) -> bool:
    return isinstance(value, (bool, np.bool_))


def _array_check(dtype: str, ndim: int, readonly: bool):
    dtype = np.dtype(dtype)

    def check(value) -> bool:
        if not isinstance(value, np.ndarray) or value.dtype != dtype or value.ndim != ndim:
            return False
        flags = value.flags
        return flags.c_contiguous and flags.aligned and (readonly or flags.writeable)

    return check


def _check(kind: list):
    if kind[0] == "array":
        return _array_check(*kind[1:])
    return {"int": _integer, "float": _number, "bool": _boolean}[kind[0]]


#: ``njit``'s options for a kernel that allocates no array (it reads and writes the arrays
#: it is given and returns scalars or views of them): compiled without numba's reference
#: counting (NRT). With it, every array a helper inlined into a loop receives costs an
#: atomic increment and decrement on each pass, a large share of JPS+'s search time
#: (bench/profile.py). numba refuses to compile such a kernel if it allocates, or calls a
#: kernel that does, so a wrong mark is a compile error, never a leak.
NO_REFCOUNT = {"_nrt": False}

_compiled = None


def _load_compiled() -> tuple:
    """(the extension module, its table), imported once."""
    global _compiled
    if _compiled is None:
        try:
            module = importlib.import_module(AOT_MODULE)
        except ImportError as error:
            raise ImportError(
                f"the kernels need numba (pip install numba) or the ahead-of-time compiled {AOT_MODULE} "
                f"that `pathserver bundle` builds; neither is importable ({error})"
            ) from None
        table = json.loads(Path(module.__file__).with_name(AOT_TABLE).read_text(encoding="utf-8"))
        _compiled = (module, table)
    return _compiled


def _bind(function):
    module, table = _load_compiled()
    qualified = f"{function.__module__.rsplit('.', 1)[-1]}.{function.__name__}"
    versions = table.get(qualified)
    if versions is None:
        return _uncompiled(qualified)
    return CompiledKernel(qualified, [
        (getattr(module, version["symbol"]), tuple(_check(kind) for kind in version["args"])) for version in versions
    ])


def _uncompiled(qualified: str):
    def stub(*args):
        raise TypeError(f"kernel {qualified} is only compiled into the kernels that call it, "
                        "not callable from Python in the bundle")

    stub.__qualname__ = qualified
    return stub


if MODE == "jit":
    from pathserver import kernel_cache

    # Before any kernel is defined: numba picks a kernel's cache folder then.
    kernel_cache.install_default()
    from numba import njit
    from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros
else:

    def njit(function=None, **options):
        """In the bundle: bind ``function`` to its compiled versions (``options`` were
        the JIT's; the extension was compiled with the same ``nogil``)."""
        if function is None:
            return _bind
        return _bind(function)

    leading_zeros = trailing_zeros = _uncompiled("numba intrinsic")
