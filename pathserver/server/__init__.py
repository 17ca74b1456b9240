"""The ZeroMQ server: ``loop`` (sockets, workers, stats) and ``handlers`` (request -> reply)."""

from pathserver.server.loop import Server, serve

__all__ = ["Server", "serve"]
