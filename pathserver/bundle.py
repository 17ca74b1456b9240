"""``pathserver bundle OUT_DIR``: a self-contained server for this platform, for a game to ship.

A player's machine has no Python. The bundle is one folder: an executable
``pathserver-server`` (``pathserver-server.exe`` on Windows) that takes the same commands
and options as ``python -m pathserver`` (``serve``, ``--version``, ``--help``, ...), a
``_internal`` folder with the frozen interpreter and packages, the sample maps, and the
kernels compiled ahead of time for a portable CPU into one extension module, so a first
start loads them instead of compiling them, and the folder needs neither numba nor LLVM.

:func:`build` compiles the kernels (``pathserver.aot``), freezes ``pathserver/__main__.py``
with PyInstaller in one-folder mode (the ``bundle`` extra) without what a server never
runs (:data:`EXCLUDES`), moves the result into ``OUT_DIR`` and strips its largest
libraries (:data:`STRIP`), then checks the new executable. docs/shipping.md says what is
in the folder and why; docs/design.md, "The bundle's build", the steps and their checks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pathserver.core.jit import AOT_MODULE, AOT_TABLE

PACKAGE = Path(__file__).resolve().parent
SAMPLE_MAPS = PACKAGE.parent / "maps"
NAME = "pathserver-server"
EXECUTABLE = NAME + (".exe" if os.name == "nt" else "")
#: Never run by a server: the load generator's plots and bar, test tools, GUI toolkits,
#: numba and llvmlite (the kernels come compiled ahead of time), Pillow's optional codecs
#: and fonts, this module and the ahead-of-time compiler's.
EXCLUDES = (
    "matplotlib", "tqdm", "hypothesis", "pytest", "_pytest", "IPython", "scipy", "pandas", "tcod", "pyastar2d",
    "tkinter", "_tkinter", "PyQt5", "PyQt6", "PySide2", "PySide6", "yaml", "setuptools", "pkg_resources", "pip",
    "numba", "llvmlite", "numpy.tests", "numpy.f2py", "numpy.testing",
    "numpy.distutils", "numpy.typing", "PIL.ImageTk", "PIL.ImageQt", "PIL._avif", "PIL._webp", "PIL._imagingcms",
    "PIL.ImageCms", "PIL._imagingft", "PIL._imagingtk", "zmq.backend.cffi", "cffi",
    "pathserver.bundle", "pathserver.aot", "lib2to3", "pydoc_data", "sqlite3", "curses", "readline", "xmlrpc",
    "numpy._core._multiarray_tests",
    "pygments", "colorama",
)

#: Imported where PyInstaller cannot see it (none today).
HIDDEN_IMPORTS = ()


class BundleError(Exception):
    """A build step failed; the message says which and how to fix it."""


def run(args) -> int:
    """The ``bundle`` command: build into ``args.out_dir``; 0 on success, 2 with one line on failure."""
    try:
        build(Path(args.out_dir), say=lambda text: print(f"pathserver bundle: {text}", flush=True))
    except BundleError as error:
        print(f"pathserver bundle: error: {error}", file=sys.stderr)
        return 2
    return 0


def build(out_dir: Path, say=print) -> Path:
    """Build the bundle in ``out_dir``; returns the executable's path."""
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        raise BundleError("PyInstaller is not installed: pip install 'pathserver[bundle]'") from None
    out_dir = out_dir.resolve()
    _check_target(out_dir)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pathserver-bundle-") as scratch:
        scratch = Path(scratch)
        compiled = scratch / "kernels"
        say(f"compiling the kernels ahead of time into {compiled} (two or three minutes)")
        _compile_ahead_of_time(compiled, say)
        say(f"freezing with PyInstaller into {scratch} (a minute or two)")
        _freeze(scratch, compiled)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(scratch / "dist" / NAME), str(out_dir))
    _strip(out_dir / "_internal")
    executable = out_dir / EXECUTABLE
    say("calling every kernel of the frozen server once")
    facts = _check_kernels(executable)
    version = _check_output([str(executable), "--version"], "the bundle's --version").strip()
    say(f"{executable} ({version}) built in {time.perf_counter() - began:.0f} s: {facts['loaded']} kernels "
        f"compiled ahead of time, folder {folder_size(out_dir) / 1e6:.0f} MB")
    for line in size_breakdown(out_dir):
        say("  " + line)
    return executable


def _check_target(out_dir: Path) -> None:
    """Refuse to overwrite anything but an earlier bundle (or an empty folder)."""
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise BundleError(f"{out_dir} is a file: give a folder")
    if any(out_dir.iterdir()) and not (out_dir / EXECUTABLE).exists():
        raise BundleError(f"{out_dir} is not empty and holds no earlier bundle: give a new or empty folder")


def _compile_ahead_of_time(compiled: Path, say) -> None:
    from pathserver import aot

    try:
        aot.build(compiled, say=say)
    except RuntimeError as error:
        raise BundleError(str(error)) from None


def _freeze(scratch: Path, compiled: Path) -> None:
    # The extension and its table land beside the frozen packages, on the import path.
    data = [(SAMPLE_MAPS, "maps"), (compiled / AOT_TABLE, ".")]
    binaries = [(library, ".") for library in compiled.glob(AOT_MODULE + ".*") if library.suffix != ".json"]
    command = [
        sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--onedir", "--console", "--name", NAME,
        "--distpath", str(scratch / "dist"), "--workpath", str(scratch / "build"), "--specpath", str(scratch),
        "--paths", str(PACKAGE.parent), "--collect-submodules", "pathserver", "--log-level", "WARN",
    ]
    for source, target in data:
        command += ["--add-data", f"{source}{os.pathsep}{target}"]
    for source, target in binaries:
        command += ["--add-binary", f"{source}{os.pathsep}{target}"]
    for module in EXCLUDES:
        command += ["--exclude-module", module]
    for module in HIDDEN_IMPORTS:
        command += ["--hidden-import", module]
    command.append(str(PACKAGE / "__main__.py"))
    done = subprocess.run(command, capture_output=True, text=True, cwd=scratch)
    if done.returncode != 0:
        raise BundleError("PyInstaller failed:\n" + done.stderr[-4000:])


#: Shared libraries shipped with their symbol tables. Only these: stripping all
#: (PyInstaller's --strip) breaks numpy's OpenBLAS, whose wheel build relies on its exact
#: section layout.
STRIP = ("libpython3*.so*", AOT_MODULE + "*.so")


def _strip(internal: Path) -> None:
    """Strip the symbols of the ``STRIP`` libraries, on Linux with binutils' strip (only
    Linux has been tried; elsewhere they stay as they are)."""
    strip = shutil.which("strip")
    if not sys.platform.startswith("linux") or strip is None:
        return
    for pattern in STRIP:
        for library in internal.glob(pattern):
            if library.is_file() and not library.is_symlink():
                subprocess.run([strip, "--strip-unneeded", str(library)], check=True)


def _check_kernels(executable: Path) -> dict:
    """Run the frozen server's ``kernels`` command on the sample maps: every kernel a
    request can reach, from the extension (it fails on a version the table lacks)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("NUMBA_", "PYTHON"))}
    maps = executable.parent / "_internal" / "maps"
    out = _check_output([str(executable), "kernels", "--maps", str(maps), "--json"], "calling the kernels", env)
    facts = json.loads(out.strip().splitlines()[-1])
    if not facts.get("ahead_of_time"):
        raise BundleError("the frozen server did not use the kernels compiled ahead of time (is numba in it?)")
    return facts


def _check_output(command: list[str], what: str, env: dict | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise BundleError(f"{what} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout


def folder_size(folder: Path) -> int:
    """Bytes in the folder's files (symbolic links not followed, not counted)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def size_breakdown(folder: Path, top: int = 8) -> list[str]:
    """The largest parts of a bundle, one line each: the top-level entries of ``_internal``."""
    base = folder / "_internal" if (folder / "_internal").is_dir() else folder
    parts = []
    for entry in base.iterdir():
        if entry.is_symlink():
            continue
        size = folder_size(entry) if entry.is_dir() else entry.stat().st_size
        parts.append((size, entry.name + ("/" if entry.is_dir() else "")))
    parts.sort(reverse=True)
    rest = sum(size for size, _ in parts[top:])
    lines = [f"{size / 1e6:7.1f} MB  {name}" for size, name in parts[:top]]
    lines.append(f"{rest / 1e6:7.1f} MB  the other {max(0, len(parts) - top)} entries")
    return lines
