"""The shared state's link to Redis: its keys and bounds, the ``--state`` URL (checked,
shown without its password) and the clients made from it; stream ids as tuples."""

from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

PREFIX = "pathserver:"
STREAM, UPLOADS, UPLOAD_IDS, SNAPSHOT, COMPACTOR = (PREFIX + key for key in
                                                     ("edits", "uploads", "upload_ids", "snapshot", "compactor"))
#: How long a request's ``after`` (and a server's own change) waits to be applied here (s).
AFTER_TIMEOUT_S = 1.0
#: A command to Redis that takes longer than this fails the edit (s). Room for a slow
#: fsync under ``appendfsync always``; an edit waits this and AFTER_TIMEOUT_S at most.
COMMAND_TIMEOUT_S = 1.0
#: The reader takes Redis for gone (and edits are refused at once) when a blocking read
#: gets no answer this long past its block time (s).
READ_GRACE_S = 2.0
CONNECT_TIMEOUT_S = 0.5
#: The ``retry_after_ms`` of a ``state_unavailable`` reply.
RETRY_AFTER_MS = 500
#: The reader's blocking read: entries per read, and how long one waits when none come.
READ_COUNT = 512
READ_BLOCK_MS = 500
#: The stream is compacted (snapshot, then trim) once it holds more entries than this.
COMPACT_ENTRIES = 10_000
#: How often (s) the reader looks at the stream's length and how far it was trimmed.
HOUSEKEEPING_S = 1.0
#: A ``stats`` request's lag figures cover this many applied entries.
LAG_WINDOW = 4096


def seq_of(text) -> tuple[int, int]:
    """A stream id (``"1718000000000-3"``, str or bytes) as ``(1718000000000, 3)``."""
    ms, _, number = (text.decode() if isinstance(text, bytes) else text).partition("-")
    return int(ms), int(number or 0)


def shown_url(url: str) -> str:
    """``url`` without a password, for logs and ``stats``."""
    head, at, tail = url.rpartition("@")
    return f"{url.split('://', 1)[0]}://***@{tail}" if at else url


SENTINEL = "redis+sentinel://"


def check_url(url: str) -> str:
    """``url`` if :func:`connect` can use it, else ValueError with a message for the
    command line."""
    try:
        if url.startswith(SENTINEL):
            _sentinel_parts(url)
        else:
            redis.connection.parse_url(url)
    except ValueError as exc:
        raise ValueError(f"--state {url!r}: {exc} (expected redis://HOST:PORT/DB or "
                         f"{SENTINEL}HOST:PORT[,HOST:PORT...]/SERVICE/DB)") from None
    return url


def _sentinel_parts(url: str) -> tuple[list, str, int, str | None]:
    """``redis+sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE[/DB]`` ->
    (sentinels, service, db, password)."""
    rest = url[len(SENTINEL):]
    password = None
    if "@" in rest:
        credentials, rest = rest.rsplit("@", 1)
        password = credentials.split(":", 1)[-1] or None
    hosts, _, path = rest.partition("/")
    service, _, db = path.partition("/")
    sentinels = []
    for host in hosts.split(","):
        name, _, port = host.rpartition(":")
        if not name or not port.isdigit():
            raise ValueError(f"a sentinel is HOST:PORT, got {host!r}")
        sentinels.append((name, int(port)))
    if not service or (db and not db.isdigit()):
        raise ValueError("name the master's service after the sentinels, and the database number after that")
    return sentinels, service, int(db or 0), password


def connect(url: str, socket_timeout: float) -> redis.Redis:
    """A client of the Redis at ``url``: ``redis://``, ``rediss://``, ``unix://``, or
    ``redis+sentinel://`` (the master the sentinels name, found again after a failover).
    No retries: a command that fails raises at once, after ``socket_timeout`` at most."""
    options = {"socket_timeout": socket_timeout, "socket_connect_timeout": CONNECT_TIMEOUT_S,
               "retry": Retry(NoBackoff(), 0)}
    if not url.startswith(SENTINEL):
        return redis.Redis.from_url(url, **options)
    from redis.sentinel import Sentinel

    sentinels, service, db, password = _sentinel_parts(url)
    watch = Sentinel(sentinels, sentinel_kwargs={"socket_timeout": CONNECT_TIMEOUT_S,
                                                 "socket_connect_timeout": CONNECT_TIMEOUT_S})
    return watch.master_for(service, db=db, password=password, **options)
