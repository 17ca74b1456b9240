"""pathserver: exact grid pathfinding for game engines, as a library and a ZeroMQ server."""

from pathserver.errors import PathserverError
from pathserver.grid.gridmap import GridMap
from pathserver.grid.search import PathResult, find_path, find_paths

__version__ = "0.1.0"

__all__ = ["GridMap", "PathResult", "PathserverError", "find_path", "find_paths", "__version__"]
