"""numba's cache folder is chosen by the program at its start (pathserver.kernel_cache),
never by importing the library."""

import os
import re
import selectors
import shutil
import subprocess
import sys
from pathlib import Path

from pathserver import kernel_cache

ROOT = Path(__file__).resolve().parent.parent
MAPS = ROOT / "maps"


def clean_env(**extra) -> dict:
    """This process's environment without NUMBA_CACHE_DIR (which the suite's conftest set)."""
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    env.update(extra)
    return env


def python(code: str, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_importing_the_library_leaves_the_environment_alone():
    """Every module of the package, the kernels and the search included."""
    code = (
        "import os, pkgutil, importlib\n"
        "import pathserver\n"
        "import pathserver.grid.search\n"
        "names = [m.name for m in pkgutil.walk_packages(pathserver.__path__, 'pathserver.')]\n"
        "for name in names:\n"
        "    if name != 'pathserver.__main__':\n"
        "        importlib.import_module(name)\n"
        "from numba.core import config\n"
        "print(len(names), 'NUMBA_CACHE_DIR' in os.environ, repr(config.CACHE_DIR))\n"
    )
    count, in_environ, numba_dir = python(code, clean_env()).stdout.split()
    assert int(count) > 30
    assert in_environ == "False"
    assert numba_dir == "''"


def test_configure_picks_the_hashed_folder_unless_numba_cache_dir_is_set(tmp_path):
    code = (
        "import os\n"
        "from pathserver import kernel_cache\n"
        "print(kernel_cache.configure())\n"
        "print(os.environ['NUMBA_CACHE_DIR'])\n"
        "import pathserver.core.query\n"
        "from numba.core import config\n"
        "print(config.CACHE_DIR)\n"
    )
    lines = python(code, clean_env(XDG_CACHE_HOME=str(tmp_path))).stdout.splitlines()
    assert re.fullmatch(re.escape(str(tmp_path / "pathserver" / "numba-")) + "[0-9a-f]{16}", lines[0]), lines
    assert lines == [lines[0]] * 3
    chosen = tmp_path / "mine"
    lines = python(code, clean_env(XDG_CACHE_HOME=str(tmp_path), NUMBA_CACHE_DIR=str(chosen))).stdout.splitlines()
    assert lines == [str(chosen)] * 3


def test_the_folder_is_named_by_the_kernel_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = kernel_cache.default_folder()
    assert first == kernel_cache.default_folder()
    sources = tmp_path / "core"
    shutil.copytree(kernel_cache.CORE, sources, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(kernel_cache, "CORE", sources)
    assert kernel_cache.default_folder() == first
    (sources / "wire.py").write_text((sources / "wire.py").read_text() + "\n# edited\n")
    assert kernel_cache.default_folder() != first
    assert kernel_cache.default_folder().parent == first.parent


def test_configure_after_the_kernels_were_imported_warns():
    code = (
        "import warnings\n"
        "import pathserver.core.wire\n"
        "from pathserver import kernel_cache\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    kernel_cache.configure()\n"
        "print([str(w.message) for w in caught])\n"
    )
    out = python(code, clean_env()).stdout
    assert "pathserver.core.wire" in out and "numba's default cache folder" in out


def test_serve_compiles_its_kernels_into_the_configured_folder(tmp_path):
    """``pathserver serve`` with no NUMBA_CACHE_DIR: the kernels go to the hashed folder
    under XDG_CACHE_HOME. The folder is seeded with this session's cache minus the reply
    encoder's kernels (pathserver.core.wire), so the server loads most kernels from it
    and compiles those few into it, in seconds rather than a cold start's 20."""
    env = clean_env(XDG_CACHE_HOME=str(tmp_path), PYTHONUNBUFFERED="1")
    folder = Path(python("from pathserver import kernel_cache; print(kernel_cache.default_folder())", env)
                  .stdout.strip())
    assert folder.parent == tmp_path / "pathserver"
    session = Path(os.environ["NUMBA_CACHE_DIR"])
    if session.is_dir():
        shutil.copytree(session, folder, ignore=lambda _, names: [n for n in names if n.startswith("wire.")])
    process = subprocess.Popen(
        [sys.executable, "-m", "pathserver", "serve", "--maps", str(MAPS), "--bind", "tcp://127.0.0.1:*"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )
    try:
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        assert selector.select(120), "no ready line within 120 s"
        assert process.stdout.readline().startswith("pathserver ready on ")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    first = process.stderr.readline()
    assert str(folder) in first, first
    written = sorted(p.name for p in folder.rglob("wire.*.nbi"))
    assert written, sorted(p.name for p in folder.rglob("*.nbi"))
