"""The ZeroMQ server: ``loop`` (sockets, workers, stats), ``handlers`` (request -> reply),
``startup`` (the lines said while starting) and ``app`` (``serve``: the parts put together)."""

from pathserver.server.app import serve
from pathserver.server.loop import Server

__all__ = ["Server", "serve"]
