"""pathserver: exact grid pathfinding for game engines, as a library and a ZeroMQ server.

The public names load on first use (PEP 562), so ``pathserver serve`` can say what it is
doing before numba and the kernels are imported.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_PUBLIC = {
    # Through the map formats, which give GridMap its load / save (the model sits below them).
    "GridMap": "pathserver.maps.formats",
    "PathResult": "pathserver.grid.search",
    "PathserverError": "pathserver.errors",
    "find_path": "pathserver.grid.search",
    "find_paths": "pathserver.grid.search",
    "reachable": "pathserver.grid.queries",
    "distance_field": "pathserver.grid.queries",
    "next_steps": "pathserver.grid.queries",
    "check_block": "pathserver.grid.queries",
}

__all__ = [*_PUBLIC, "__version__"]


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'pathserver' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
