"""Where numba keeps the compiled kernels: one folder shared by the library and the CLI.

numba's on-disk cache notices when a function's own file changes, not when a kernel it
calls changes. So the kernels of ``pathserver.core`` are filed in a folder named by a
hash of their sources, ``~/.cache/pathserver/numba-<hash>`` (``$XDG_CACHE_HOME``
instead of ``~/.cache`` when set): an upgraded or edited kernel never runs a stale
caller. :func:`install_default` files them there, with a numba cache locator of ours
(:func:`install_locator`) that serves ``pathserver.core`` alone: no environment
variable is set and numba's other users keep its own folders. ``pathserver.core.jit``
calls it when the kernels are defined, so ``import pathserver`` in any program and
``pathserver serve`` compile once, into the same place. ``NUMBA_CACHE_DIR``, when set,
wins (the CI sets an empty one); :func:`configure` is what the entry points call to
know the folder. In a frozen app (:func:`ahead_of_time`, :func:`choice`) see
docs/design.md, "Numba's cache folder".

This module imports nothing of pathserver: it reads the kernels' files, it does not load
them.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

#: The kernels' sources, hashed into the folder name.
CORE = Path(__file__).resolve().parent / "core"
#: The bundle's folder of compiled kernels, beside the frozen packages (``sys._MEIPASS``).
BUNDLE_KERNELS = "pathserver-kernels"
#: What the bundle's kernels were built for, written by ``pathserver bundle``.
MANIFEST = "manifest.json"
#: The CPU target a bundle's kernels are compiled for and a frozen app runs with.
PORTABLE_CPU = "generic"


@dataclass(frozen=True)
class Choice:
    """What :func:`configure` decided: ``folder`` is where numba reads and writes the
    kernels; ``bundled`` when it holds the bundle's own compiled kernels; ``reason``, for a
    frozen app that compiles instead, why the bundle's kernels do not fit."""

    folder: Path
    bundled: bool = False
    reason: str | None = None


_choice: Choice | None = None


def kernel_hash() -> str:
    """16 hex digits of a SHA-1 over the kernel sources' names and contents."""
    digest = hashlib.sha1()
    for source in sorted(CORE.glob("*.py")):
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def user_cache() -> Path:
    """``$XDG_CACHE_HOME`` (else ``~/.cache``) ``/pathserver``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pathserver"


def default_folder() -> Path:
    """``$XDG_CACHE_HOME`` (else ``~/.cache``) ``/pathserver/numba-<hash of the kernel sources>``."""
    return user_cache() / f"numba-{kernel_hash()}"


def frozen() -> bool:
    """True inside a frozen app (the bundle's ``pathserver-server``)."""
    return bool(getattr(sys, "frozen", False))


def bundle_folder() -> Path:
    """The bundle's compiled kernels: ``BUNDLE_KERNELS`` beside the frozen packages."""
    base = getattr(sys, "_MEIPASS", None) or Path(sys.executable).resolve().parent
    return Path(base) / BUNDLE_KERNELS


def choice() -> Choice | None:
    """What the last :func:`configure` of a frozen app decided (None before, or unfrozen)."""
    return _choice


def configure() -> Path:
    """The folder numba caches the kernels in: ``NUMBA_CACHE_DIR`` when set, else
    :func:`default_folder` (see :func:`install_default`). In a frozen app, the bundle's
    kernels as the module docstring says. Entry points call it first; a program that
    does not gets the same folder when the kernels are imported."""
    if frozen():
        return _configure_frozen().folder
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    if chosen:
        return Path(chosen)
    return install_default()


def install_default() -> Path:
    """File the ``pathserver.core`` kernels in :func:`default_folder`, unless a folder
    was chosen already (``NUMBA_CACHE_DIR``, :func:`install_locator`, or a frozen app's,
    which :func:`configure` decides); returns the folder kernels are filed in."""
    if frozen() or os.environ.get("NUMBA_CACHE_DIR") or (_LOCATOR is not None and _LOCATOR.folder):
        return folder()  # chosen already
    stamp = kernel_hash()  # read once: the folder's name and the index stamp
    chosen = user_cache() / f"numba-{stamp}"
    install_locator(chosen, stamp)
    return chosen


def folder() -> Path | None:
    """Where the kernels are filed now: our locator's folder, else ``NUMBA_CACHE_DIR``,
    else None (numba's default, beside the sources)."""
    if _LOCATOR is not None and _LOCATOR.folder:
        return Path(_LOCATOR.folder)
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    return Path(chosen) if chosen else None


def ahead_of_time() -> bool:
    """True in a frozen app without numba: the bundle's kernels were compiled ahead of
    time into an extension (``pathserver.aot``), nothing compiles or caches at run time."""
    import importlib.util

    return frozen() and importlib.util.find_spec("numba") is None


def _configure_frozen() -> Choice:
    global _choice
    if ahead_of_time():
        _choice = Choice(Path(getattr(sys, "_MEIPASS", None) or Path(sys.executable).resolve().parent), bundled=True)
        return _choice
    import numba

    stamp = kernel_hash()
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    environment = {}
    if chosen:
        # Also how `pathserver bundle` compiles the bundle's kernels, into the bundle.
        decided = Choice(Path(chosen))
    else:
        if "NUMBA_CPU_NAME" not in os.environ:
            environment.update(NUMBA_CPU_NAME=PORTABLE_CPU, NUMBA_CPU_FEATURES="")
        cpu = {**os.environ, **environment}
        runtime = {**runtime_facts(numba.__version__), "cpu": cpu["NUMBA_CPU_NAME"],
                   "cpu_features": cpu.get("NUMBA_CPU_FEATURES", "")}
        decided = plan(bundle_folder(), user_cache() / f"numba-{stamp}" / "bundle", runtime)
        environment["NUMBA_CACHE_DIR"] = str(decided.folder)
    _set_numba_environment(environment)
    install_locator(decided.folder, stamp)
    _choice = decided
    return decided


def runtime_facts(numba_version: str) -> dict:
    """What a bundle's kernels must have been built for to load here (the manifest's keys)."""
    return {
        "kernels": kernel_hash(),
        "numba": numba_version,
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "system": platform.system(),
        "machine": platform.machine().lower(),
    }


def manifest_for(numba_version: str, cpu: str, cpu_features: str) -> dict:
    """What kernels compiled here for ``cpu`` were built for: the manifest ``pathserver
    bundle`` writes beside them (the frozen app's ``kernels --json`` says it)."""
    return {**runtime_facts(numba_version), "cpu": cpu, "cpu_features": cpu_features}


def mismatch(manifest: dict | None, runtime: dict) -> str | None:
    """Why kernels built as ``manifest`` says cannot load in ``runtime`` (None: they can)."""
    if manifest is None:
        return "the bundle has no compiled kernels"
    what = {
        "kernels": "kernel sources", "numba": "numba", "python": "Python", "system": "OS", "machine": "CPU family",
        "cpu": "CPU target", "cpu_features": "CPU features",
    }
    for key, name in what.items():
        built, here = manifest.get(key), runtime.get(key)
        if built != here:
            return f"they were built for {name} {built or 'none'}, this is {here or 'none'}"
    return None


def read_manifest(folder: Path) -> dict | None:
    """The manifest in ``folder``, or None when it is missing or unreadable."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def plan(bundle: Path, user: Path, runtime: dict) -> Choice:
    """Where a frozen app's kernels go. A bundle whose manifest fits ``runtime`` is copied
    into ``user`` (unless already there) and used from there; else, or when ``user``
    cannot be written, as the module docstring says. Never raises for a folder."""
    manifest = read_manifest(bundle)
    reason = mismatch(manifest, runtime)
    if reason is not None:
        return Choice(user, reason=f"{reason} ({bundle})")
    try:
        seed(bundle, user)
        return Choice(user, bundled=True)
    except OSError as error:
        unwritable = f"{user} cannot be written ({error.strerror or error})"
    try:
        spare = Path(tempfile.mkdtemp(prefix="pathserver-kernels-"))
        atexit.register(shutil.rmtree, spare, ignore_errors=True)
        seed(bundle, spare)
        return Choice(spare, bundled=True, reason=f"{unwritable}: using {spare} for this run")
    except OSError:
        # Loads work from a read-only folder; only a kernel the bundle lacks would fail.
        return Choice(bundle, bundled=True, reason=f"{unwritable}, nor a temporary folder: reading {bundle} as is")


def seed(bundle: Path, user: Path) -> None:
    """Copy the bundle's compiled kernels into ``user`` unless its manifest says they are
    there already. Each file lands whole (written aside, then renamed), and the manifest
    last, so a server starting beside this one never reads half a file."""
    manifest = (bundle / MANIFEST).read_bytes()
    try:
        if (user / MANIFEST).read_bytes() == manifest:
            return
    except OSError:
        pass
    user.mkdir(parents=True, exist_ok=True)
    for source in sorted(bundle.iterdir()):
        if source.suffix in (".nbi", ".nbc"):
            copy_whole(source, user / source.name)
    copy_whole(bundle / MANIFEST, user / MANIFEST)


def copy_whole(source: Path, target: Path) -> None:
    aside = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(source, aside)
        os.replace(aside, target)
    finally:
        aside.unlink(missing_ok=True)


def install_locator(folder: Path, stamp: str) -> None:
    """From now on numba files every ``pathserver.core`` kernel in ``folder`` itself (no
    path-derived subfolder) with ``stamp`` as its source stamp: the cache follows the
    folder wherever it is copied. Other cached functions keep numba's own locators."""
    from numba.core import caching

    locator = _locator_class()
    locator.folder = str(folder)
    locator.stamp = stamp
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    if locator not in impl._locator_classes:
        impl._locator_classes = [locator, *impl._locator_classes]


_LOCATOR = None


def _locator_class():
    """The locator class, made on first use: defining it needs numba, which this module
    does not import on its own."""
    global _LOCATOR
    if _LOCATOR is not None:
        return _LOCATOR
    from numba.core.caching import _CacheLocator

    class KernelFolderLocator(_CacheLocator):
        """numba's cache for ``pathserver.core`` in one folder, stamped by the kernels' content."""

        folder = ""
        stamp = ""

        def __init__(self, py_func):
            self._lineno = py_func.__code__.co_firstlineno

        def ensure_cache_path(self):
            # Called before a save only (never on lookup), so a read-only folder still loads.
            os.makedirs(self.folder, exist_ok=True)
            tempfile.TemporaryFile(dir=self.folder).close()

        def get_cache_path(self):
            return self.folder

        def get_source_stamp(self):
            return self.stamp

        def get_disambiguator(self):
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            if not cls.folder or not (py_func.__module__ or "").startswith("pathserver.core."):
                return None
            return cls(py_func)

    _LOCATOR = KernelFolderLocator
    return _LOCATOR


def _set_numba_environment(variables: dict) -> None:
    """Set ``variables`` for this process and its children, and make a numba that is
    already imported read them again."""
    os.environ.update(variables)
    if sys.modules.get("numba") is not None:
        from numba.core import config

        config.reload_config()
    early = sorted(name for name in sys.modules if name.startswith("pathserver.core."))
    if early:
        warnings.warn(
            f"kernel_cache.configure() ran after {', '.join(early)} was imported: those kernels keep numba's "
            "default cache folder",
            RuntimeWarning,
            stacklevel=3,
        )
