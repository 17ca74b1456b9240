"""Numba kernels: arrays and scalars in, arrays and an int status out.

Nothing here validates its inputs: the public wrappers in :mod:`pathserver.grid` validate
once, and the kernels trust them. Every kernel is compiled with ``cache=True, nogil=True``
so searches run truly in parallel on a thread pool.

numba's on-disk cache notices when a function's own file changes, not when a kernel it
calls changes. So unless ``NUMBA_CACHE_DIR`` is set already, the cache goes to a folder
named by a hash of these sources: an upgraded or edited kernel never runs a stale caller.
"""

import hashlib
import os
import sys
from pathlib import Path


def _pick_cache_dir() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    digest = hashlib.sha1()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    os.environ["NUMBA_CACHE_DIR"] = str(base / "pathserver" / f"numba-{digest.hexdigest()[:16]}")
    if "numba" in sys.modules:
        from numba.core import config

        config.reload_config()


_pick_cache_dir()
