"""The ZeroMQ server: ``loop`` (sockets, workers, stats), ``handlers`` (the pipeline: body
bytes -> request -> reply bytes), ``ops`` (the table of ops) and the ops' handlers
(``path_ops``, ``query_ops``, ``map_ops``; ``spaces`` converts grid and world points,
``failures`` turns exceptions into error replies), ``startup`` (the lines said while
starting) and ``app`` (``serve``: the parts put together)."""

from pathserver.server.app import serve
from pathserver.server.loop import Server

__all__ = ["Server", "serve"]
