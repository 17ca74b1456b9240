"""Where numba keeps the compiled kernels: chosen by a program at its start, never on import.

numba's on-disk cache notices when a function's own file changes, not when a kernel it
calls changes. So unless ``NUMBA_CACHE_DIR`` is set already, :func:`configure` points it
at a folder named by a hash of the kernel sources (``pathserver/core/*.py``),
``~/.cache/pathserver/numba-<hash>`` (``$XDG_CACHE_HOME`` instead of ``~/.cache`` when
set): an upgraded or edited kernel never runs a stale caller.

A library must not change its user's environment on import, so nothing here runs by
itself: the program entry points call :func:`configure` first (``pathserver``'s
``cli.main``, the test suite's ``conftest.py``, the bench scripts). It sets the
environment variable, which the program's child processes inherit. numba picks a
kernel's cache folder when the kernel is defined, that is when its module in
``pathserver.core`` is imported; so call it before anything imports them. A program that
never calls it gets numba's own default (``__pycache__`` beside the sources).

This module imports nothing of pathserver: it reads the kernels' files, it does not load
them.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from pathlib import Path

#: The kernels' sources, hashed into the folder name.
CORE = Path(__file__).resolve().parent / "core"


def default_folder() -> Path:
    """``$XDG_CACHE_HOME`` (else ``~/.cache``) ``/pathserver/numba-<hash of the kernel sources>``."""
    digest = hashlib.sha1()
    for source in sorted(CORE.glob("*.py")):
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pathserver" / f"numba-{digest.hexdigest()[:16]}"


def configure() -> Path:
    """The folder numba caches the kernels in: ``NUMBA_CACHE_DIR`` when set, else
    :func:`default_folder`, which is then set as ``NUMBA_CACHE_DIR`` for this process and
    its children. Call it before ``pathserver.core`` is imported (kernels imported
    earlier keep numba's default folder; a RuntimeWarning says so)."""
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    if chosen:
        return Path(chosen)
    folder = default_folder()
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    if "numba" in sys.modules:
        from numba.core import config

        config.reload_config()
    early = sorted(name for name in sys.modules if name.startswith("pathserver.core."))
    if early:
        warnings.warn(
            f"kernel_cache.configure() ran after {', '.join(early)} was imported: those kernels keep numba's "
            "default cache folder",
            RuntimeWarning,
            stacklevel=2,
        )
    return folder
