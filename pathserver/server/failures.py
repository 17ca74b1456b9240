"""The one place exceptions become error replies.

A ``PathserverError`` with a wire code becomes that code's reply; anything else is a
bug: logged with its traceback here, and answered ``internal`` with no detail. No reply
ever carries a traceback.
"""

from __future__ import annotations

import logging

from pathserver.errors import WIRE_CODES, ConflictError, OverloadedError, PathserverError
from pathserver.protocol.codec import encode
from pathserver.protocol.replies import error_reply

log = logging.getLogger("pathserver.server")

_WIRE_CODES = frozenset(WIRE_CODES)


def error_parts(exc: BaseException) -> tuple[str, str, str | None]:
    """``(code, message, at)`` for an exception; unexpected ones are logged as bugs."""
    if isinstance(exc, PathserverError) and exc.code in _WIRE_CODES:
        return exc.code, exc.message, exc.at
    log.error("internal error while answering a request", exc_info=exc)
    return "internal", "internal server error; the server log has the details", None


def error_reply_bytes(rid, exc: BaseException) -> tuple[bytes, str]:
    """An encoded error reply for ``exc`` and its code."""
    code, message, at = error_parts(exc)
    retry_after = exc.retry_after_ms if isinstance(exc, OverloadedError) else None
    gen = exc.gen if isinstance(exc, ConflictError) else None
    return encode(error_reply(rid, code, message, at, retry_after_ms=retry_after, gen=gen)), code

