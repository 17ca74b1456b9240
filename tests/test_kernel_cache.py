"""numba's cache folder is chosen by the program at its start (pathserver.kernel_cache),
never by importing the library."""

import json
import os
import re
import selectors
import shutil
import subprocess
import sys
from pathlib import Path

from pathserver import kernel_cache
from pathserver.loadtest.spawn import stop_process

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
        "    if not name.endswith('.__main__'):  # a __main__ runs its program\n"
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
        "print(os.environ.get('NUMBA_CACHE_DIR'))\n"
        "import pathserver.core.query\n"
        "print(kernel_cache.folder())\n"
    )
    lines = python(code, clean_env(XDG_CACHE_HOME=str(tmp_path))).stdout.splitlines()
    assert re.fullmatch(re.escape(str(tmp_path / "pathserver" / "numba-")) + "[0-9a-f]{16}", lines[0]), lines
    assert lines == [lines[0], "None", lines[0]]
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


def test_the_library_and_the_cli_share_one_folder(tmp_path):
    """A kernel the library compiled in one program loads from the cache in the next, and
    ``pathserver serve`` announces that very folder, holding it (it is stopped at once)."""
    env = clean_env(XDG_CACHE_HOME=str(tmp_path), PYTHONUNBUFFERED="1")
    code = (
        "from pathserver.core.wire import packed_points_bound\n"
        "packed_points_bound(2)\n"
        "print(sum(packed_points_bound.stats.cache_hits.values()))\n"
    )
    assert python(code, env).stdout.split() == ["0"]
    assert python(code, env).stdout.split() == ["1"]
    folder = Path(python("from pathserver import kernel_cache; print(kernel_cache.default_folder())", env)
                  .stdout.strip())
    assert [p.name.split("-")[0] for p in folder.glob("*.nbi")] == ["wire.packed_points_bound"]
    process = subprocess.Popen(
        [sys.executable, "-m", "pathserver", "serve", "--maps", str(MAPS), "--bind", "tcp://127.0.0.1:*"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )
    try:
        selector = selectors.DefaultSelector()
        selector.register(process.stderr, selectors.EVENT_READ)
        said = []
        while not any("kernels" in line for line in said):
            assert selector.select(30), f"nothing said about the kernels within 30 s: {said}"
            said.append(process.stderr.readline())
    finally:
        stop_process(process)
        process.stdout.close()
        process.stderr.close()
    assert said[-1].startswith(f"pathserver: loading the compiled kernels from {folder} ("), said


# -- the frozen server's kernels (pathserver bundle) -------------------------------------

RUNTIME = {"kernels": "0123456789abcdef", "numba": "0.68.1", "python": "3.11", "system": "Linux",
           "machine": "x86_64", "cpu": "generic", "cpu_features": ""}


def make_bundle(folder: Path, manifest: dict | None = None) -> Path:
    """A bundle's kernel folder: two fake cache files and a manifest fitting RUNTIME."""
    folder.mkdir(parents=True)
    (folder / "wire.pack-60.py311.nbi").write_bytes(b"index")
    (folder / "wire.pack-60.py311.1.nbc").write_bytes(b"code")
    if manifest is not False:
        (folder / kernel_cache.MANIFEST).write_text(json.dumps(manifest or RUNTIME))
    return folder


def listing(folder: Path) -> dict:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_a_fitting_bundle_is_copied_into_the_user_folder_once_and_never_written(tmp_path, monkeypatch):
    bundle = make_bundle(tmp_path / "game" / "pathserver-kernels")
    before = listing(bundle)
    user = tmp_path / "home" / "numba-x" / "bundle"
    choice = kernel_cache.plan(bundle, user, RUNTIME)
    assert choice == kernel_cache.Choice(user, bundled=True)
    assert {name: data for name, (data, _) in listing(user).items()} == {n: d for n, (d, _) in before.items()}
    copies = []
    monkeypatch.setattr(kernel_cache, "copy_whole", lambda *pair: copies.append(pair))
    assert kernel_cache.plan(bundle, user, RUNTIME) == choice
    assert copies == []
    assert listing(bundle) == before


def test_a_stale_copy_is_replaced(tmp_path):
    bundle = make_bundle(tmp_path / "bundle")
    user = make_bundle(tmp_path / "user", {**RUNTIME, "numba": "0.1"})
    (user / "wire.pack-60.py311.1.nbc").write_bytes(b"old code")
    assert kernel_cache.plan(bundle, user, RUNTIME).bundled
    assert (user / "wire.pack-60.py311.1.nbc").read_bytes() == b"code"
    assert (user / kernel_cache.MANIFEST).read_bytes() == (bundle / kernel_cache.MANIFEST).read_bytes()


def test_each_mismatch_is_a_reason_to_compile_into_the_user_folder(tmp_path):
    for key, value, said in (
        ("kernels", "fedcba9876543210", "kernel sources fedcba9876543210, this is 0123456789abcdef"),
        ("numba", "0.67.0", "numba 0.67.0, this is 0.68.1"),
        ("python", "3.12", "Python 3.12"),
        ("system", "Windows", "OS Windows, this is Linux"),
        ("machine", "arm64", "CPU family arm64, this is x86_64"),
        ("cpu", "znver4", "CPU target znver4, this is generic"),
        ("cpu_features", "+avx2", "CPU features +avx2, this is none"),
    ):
        bundle = make_bundle(tmp_path / key / "bundle", {**RUNTIME, key: value})
        user = tmp_path / key / "user"
        choice = kernel_cache.plan(bundle, user, RUNTIME)
        assert choice.folder == user and not choice.bundled
        assert said in choice.reason and str(bundle) in choice.reason
        assert not user.exists()  # nothing copied: numba compiles into it


def test_a_missing_or_broken_manifest_is_a_reason_too(tmp_path):
    bundle = make_bundle(tmp_path / "bundle", manifest=False)
    assert kernel_cache.plan(bundle, tmp_path / "user", RUNTIME).reason.startswith("the bundle has no compiled kernels")
    (bundle / kernel_cache.MANIFEST).write_text("{not json")
    assert "no compiled kernels" in kernel_cache.plan(bundle, tmp_path / "user", RUNTIME).reason
    assert "no compiled kernels" in kernel_cache.plan(tmp_path / "nowhere", tmp_path / "user", RUNTIME).reason


def test_an_unwritable_user_folder_falls_back_to_a_temporary_one_then_to_the_bundle(tmp_path, monkeypatch):
    bundle = make_bundle(tmp_path / "bundle")
    blocker = tmp_path / "home"
    blocker.write_text("a file where the cache folder's parent should be")  # unwritable even for root
    choice = kernel_cache.plan(bundle, blocker / "numba-x" / "bundle", RUNTIME)
    assert choice.bundled and choice.folder.name.startswith("pathserver-kernels-")
    assert "cannot be written" in choice.reason and str(choice.folder) in choice.reason
    assert (choice.folder / "wire.pack-60.py311.nbi").read_bytes() == b"index"

    def no_temporary_folder(**_):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(kernel_cache.tempfile, "mkdtemp", no_temporary_folder)
    choice = kernel_cache.plan(bundle, blocker / "numba-x" / "bundle", RUNTIME)
    assert choice == kernel_cache.Choice(bundle, bundled=True, reason=choice.reason)
    assert "reading" in choice.reason


def test_the_manifest_names_this_runtime():
    import numba

    manifest = kernel_cache.manifest_for(numba.__version__, "generic", "")
    runtime = {**kernel_cache.runtime_facts(numba.__version__), "cpu": "generic", "cpu_features": ""}
    assert kernel_cache.mismatch(manifest, runtime) is None
    assert manifest["kernels"] == kernel_cache.kernel_hash()


#: Compiles (or loads) one small kernel under the locator and prints numba's counts.
LOCATOR_RUN = (
    "import sys\n"
    "from pathserver import kernel_cache\n"
    "kernel_cache.install_locator(kernel_cache.Path(sys.argv[1]), sys.argv[2])\n"
    "from pathserver.core import wire\n"
    "wire.packed_points_bound(3)\n"
    "stats = wire.packed_points_bound.stats\n"
    "print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))\n"
)


def locator_run(folder: Path, stamp: str) -> tuple[int, int]:
    done = subprocess.run([sys.executable, "-c", LOCATOR_RUN, str(folder), stamp], cwd=ROOT, env=clean_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    hits, misses = done.stdout.split()
    return int(hits), int(misses)


def test_the_locator_files_kernels_flat_and_finds_them_after_a_copy_with_new_times(tmp_path):
    """What a moved bundle relies on: no path-derived subfolder, no mtime, only the stamp."""
    first = tmp_path / "built"
    assert locator_run(first, "stamp-1") == (0, 1)
    assert sorted(p.name for p in first.iterdir()) == ["wire.packed_points_bound-15.py311.1.nbc",
                                                       "wire.packed_points_bound-15.py311.nbi"]
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(first, moved, copy_function=shutil.copyfile)  # new paths, new mtimes
    assert locator_run(moved, "stamp-1") == (1, 0)
    assert locator_run(moved, "stamp-2") == (0, 1)  # other kernel sources: compiled again


def test_the_locator_leaves_other_functions_to_numba(tmp_path):
    code = (
        "import sys\n"
        "from pathserver import kernel_cache\n"
        "kernel_cache.install_locator(kernel_cache.Path(sys.argv[1]), 'stamp')\n"
        "locator = kernel_cache._locator_class()\n"
        "def other(): pass\n"
        "from pathserver.core import wire\n"
        "print(locator.from_function(other, 'x.py') is None,\n"
        "      locator.from_function(wire.packed_points_bound.py_func, 'x').get_cache_path() == sys.argv[1])\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, env=clean_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


#: A frozen app as PyInstaller makes one, as far as kernel_cache can tell.
FROZEN_RUN = (
    "import sys\n"
    "sys.frozen, sys._MEIPASS = True, sys.argv[1]\n"
    "from pathserver import kernel_cache\n"
    "print(kernel_cache.configure())\n"
    "print(repr(kernel_cache.choice().reason))\n"
    "from pathserver.core import wire\n"
    "wire.packed_points_bound(3)\n"
    "stats = wire.packed_points_bound.stats\n"
    "print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))\n"
)


def frozen_run(meipass: Path, **env) -> list[str]:
    environment = {k: v for k, v in clean_env(**env).items() if not k.startswith("NUMBA_CPU")}
    environment.update(env)
    done = subprocess.run([sys.executable, "-c", FROZEN_RUN, str(meipass)], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_frozen_app_loads_the_bundles_kernels_from_a_new_home_and_says_why_when_it_cannot(tmp_path):
    """The build step (NUMBA_CACHE_DIR into the bundle, generic CPU), then a start with a new
    HOME (XDG_CACHE_HOME here), then one whose manifest does not fit."""
    import numba

    meipass = tmp_path / "game" / "_internal"
    kernels = meipass / kernel_cache.BUNDLE_KERNELS
    built = frozen_run(meipass, NUMBA_CACHE_DIR=str(kernels), NUMBA_CPU_NAME="generic", NUMBA_CPU_FEATURES="")
    assert built == [str(kernels), "None", "0 1"]
    manifest = kernel_cache.manifest_for(numba.__version__, "generic", "")
    (kernels / kernel_cache.MANIFEST).write_text(json.dumps(manifest))

    home = tmp_path / "player" / ".cache"
    user = home / "pathserver" / f"numba-{kernel_cache.kernel_hash()}" / "bundle"
    assert frozen_run(meipass, XDG_CACHE_HOME=str(home)) == [str(user), "None", "1 0"]

    (kernels / kernel_cache.MANIFEST).write_text(json.dumps({**manifest, "numba": "0.1"}))
    other_home = tmp_path / "other" / ".cache"
    folder, reason, counts = frozen_run(meipass, XDG_CACHE_HOME=str(other_home))
    assert folder.startswith(str(other_home)) and "numba 0.1" in reason and counts == "0 1"
