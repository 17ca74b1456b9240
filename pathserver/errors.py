"""The one exception tree of pathserver.

::

    PathserverError                 code = "internal"
     +-- MapLoadError               code = "map_load_error"   a map file could not be read
     +-- RequestError               code = "invalid_request"  the caller asked for something invalid
     |    +-- MalformedError        code = "malformed"        not msgpack / not a map
     |    +-- TooLargeError         code = "too_large"
     |    +-- UnknownOpError        code = "unknown_op"
     |    +-- UnknownMapError       code = "unknown_map"
     |    +-- OutOfBoundsError      code = "out_of_bounds"
     |    +-- NonFiniteError        code = "non_finite"
     |    +-- BadUnitSizeError      code = "bad_unit_size"
     |    +-- StartBlockedError     code = "start_blocked"
     |    +-- GoalBlockedError      code = "goal_blocked"
     +-- SearchLimitError           code = "search_limit"     node budget hit, no partial asked
     +-- OverloadedError            code = "overloaded"       retry later

Every subclass carries a stable snake_case ``code`` (only ever added to) and an optional
``at``: the field path the error is about, such as ``"start[0]"``. The server turns these
into error replies in exactly one place (``pathserver.server.handlers``).
"""

from __future__ import annotations


class PathserverError(Exception):
    """Root of every error pathserver raises on purpose."""

    code = "internal"
    retryable = False

    def __init__(self, message: str, *, at: str | None = None):
        super().__init__(message)
        self.message = message
        self.at = at

    def __str__(self) -> str:
        if self.at:
            return f"{self.message} (at {self.at})"
        return self.message


class MapLoadError(PathserverError):
    """A map file is malformed; the message names the file, the line or field, the reason."""

    code = "map_load_error"


class RequestError(PathserverError):
    code = "invalid_request"


class MalformedError(RequestError):
    code = "malformed"


class TooLargeError(RequestError):
    code = "too_large"


class UnknownOpError(RequestError):
    code = "unknown_op"


class UnknownMapError(RequestError):
    code = "unknown_map"


class OutOfBoundsError(RequestError):
    code = "out_of_bounds"


class NonFiniteError(RequestError):
    code = "non_finite"


class BadUnitSizeError(RequestError):
    code = "bad_unit_size"


class StartBlockedError(RequestError):
    code = "start_blocked"


class GoalBlockedError(RequestError):
    code = "goal_blocked"


class SearchLimitError(PathserverError):
    code = "search_limit"


class OverloadedError(PathserverError):
    code = "overloaded"
    retryable = True

    def __init__(self, message: str, *, retry_after_ms: int = 50, at: str | None = None):
        super().__init__(message, at=at)
        self.retry_after_ms = retry_after_ms
