"""The one exception tree of pathserver (what the flags mean: :class:`PathserverError`)::

    PathserverError                  internal
     +-- MapLoadError                map_load_error     (local)
     +-- RequestError                invalid_request
     |    +-- MalformedError         malformed
     |    +-- TooLargeError          too_large
     |    +-- UnknownOpError         unknown_op
     |    +-- UnknownMapError        unknown_map
     |    +-- OutOfBoundsError       out_of_bounds
     |    +-- NonFiniteError         non_finite
     |    +-- BadUnitSizeError       bad_unit_size
     |    +-- StartBlockedError      start_blocked
     |    +-- GoalBlockedError       goal_blocked
     |    +-- ConflictError          conflict
     +-- SearchLimitError            search_limit
     +-- OverloadedError             overloaded         (retryable)
     |    +-- StateUnavailableError  state_unavailable  (retryable)
     |    +-- AfterTimeoutError      after_timeout      (retryable)
     +-- SecurityError               security           (local)
     |    +-- BindRefusedError       bind_refused       (local)
     +-- BrokerError                 broker             (local)
"""

from __future__ import annotations

import re

#: A run of digits longer than any count or size a message means to show: a value the
#: caller sent (10**300, or 1e300 printed whole), shown shortened.
_LONG_NUMBER = re.compile(r"\d{21,}")


def _shortened(message: str) -> str:
    """``message`` with each run of more than 20 digits written as ``1.234e300``."""
    return _LONG_NUMBER.sub(lambda m: f"{m[0][0]}.{m[0][1:4]}e{len(m[0]) - 1}", message)


class PathserverError(Exception):
    """Root of every error pathserver raises on purpose.

    Each class carries, as class attributes: ``code``, a stable snake_case name, only ever
    added to (the CLI prints it too); ``wire``, whether a reply may carry the code (the
    codes of the others, "local" in the module's drawing: start-up and map-file errors,
    never reach a client: the server logs them and answers ``internal``); ``retryable``,
    whether the same request sent again later may succeed (a reply's ``retryable``
    field); ``meaning``, the line ``docs/protocol.md``'s table of codes shows (wire codes
    only).

    Every instance has a ``message`` (where a number of more than 20 digits, one a request
    sent, is shortened to ``1.000e300``) and an optional ``at``: the field path the error
    is about, such as ``"start[0]"``. The server turns these into error replies in exactly
    one place (``pathserver.server.failures``). :func:`all_errors` lists the classes (the
    module's drawing is checked against it), :data:`WIRE_CODES` / :data:`RETRYABLE_CODES`
    the codes, and :func:`markdown_table` writes the table of codes in ``docs/protocol.md``.
    """

    code = "internal"
    wire = True
    retryable = False
    meaning = "a bug in the server, logged there; the server keeps serving"

    def __init__(self, message: str, *, at: str | None = None):
        # Every message passes here: a huge number echoed from a request is shortened once,
        # for the CLI, the logs and the wire alike.
        message = _shortened(str(message))
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
    wire = False


class RequestError(PathserverError):
    code = "invalid_request"
    meaning = "a missing field, a wrong type, an unknown field, a value out of its range"


class MalformedError(RequestError):
    code = "malformed"
    meaning = "not msgpack, not a map, a non-string key, trailing bytes, or a bad envelope"


class TooLargeError(RequestError):
    code = "too_large"
    meaning = "over one of the limits above, or a `put_map` past the server's upload memory bound (`at: \"cells\"`)"


class UnknownOpError(RequestError):
    code = "unknown_op"
    meaning = "`op` is not one of the ops below"


class UnknownMapError(RequestError):
    code = "unknown_map"
    meaning = "no map of that name is being served (see `maps`)"


class OutOfBoundsError(RequestError):
    code = "out_of_bounds"
    meaning = "`start`/`goal` (or an `update` cell or rectangle, a `get_map` region) is outside the map"


class NonFiniteError(RequestError):
    code = "non_finite"
    meaning = "a NaN or infinite number"


class BadUnitSizeError(RequestError):
    code = "bad_unit_size"
    meaning = "`unit_size` below 1, not whole, or larger than the map"


class StartBlockedError(RequestError):
    code = "start_blocked"
    meaning = "the unit cannot stand on `start` and `snap` is `false`"


class GoalBlockedError(RequestError):
    code = "goal_blocked"
    meaning = "the unit cannot stand on `goal` and `snap` is `false`"


class ConflictError(RequestError):
    """The request contradicts the map's state: a ``put_map`` / ``drop_map`` of a name a
    map file serves, or an ``update`` whose ``if_gen`` is not the map's generation.
    ``gen``: the map's current generation, which an ``update``'s reply carries."""

    code = "conflict"
    meaning = (
        "`put_map`/`drop_map` on a name a map file serves, or `update` with an `if_gen` that is not the "
        "map's current generation (the reply's `gen` is the current one)"
    )

    def __init__(self, message: str, *, gen: int | None = None, at: str | None = None):
        super().__init__(message, at=at)
        self.gen = gen


class SearchLimitError(PathserverError):
    code = "search_limit"
    meaning = "`max_expansions` reached and `allow_partial` is `false`"


class OverloadedError(PathserverError):
    code = "overloaded"
    retryable = True
    meaning = "the server's queue is full; retry after `retry_after_ms`"

    def __init__(self, message: str, *, retry_after_ms: int = 50, at: str | None = None):
        super().__init__(message, at=at)
        self.retry_after_ms = retry_after_ms


class StateUnavailableError(OverloadedError):
    """The shared state (``serve --state``, Redis) did not take an edit: it is unreachable
    or did not answer in time. Nothing was queued; sending the edit again is safe (an edit
    sets cells, so one that did reach Redis before the error is merely set twice)."""

    code = "state_unavailable"
    meaning = ("`update`, `put_map` or `drop_map` on a server with shared state (`--state`) that cannot reach "
               "it now; nothing was applied or queued, retry after `retry_after_ms`")


class AfterTimeoutError(OverloadedError):
    """The server had not applied the shared state's entry a request's ``after`` names
    within its wait bound."""

    code = "after_timeout"
    meaning = "the server had not yet applied the edit `after` names within its wait bound; retry after `retry_after_ms`"


class SecurityError(PathserverError):
    """A key file or allow-list folder is missing or unusable."""

    code = "security"
    wire = False


class BindRefusedError(SecurityError):
    """A non-loopback bind without CURVE or an explicit ``--insecure``."""

    code = "bind_refused"


class BrokerError(PathserverError):
    """The broker could not start (an endpoint cannot be bound)."""

    code = "broker"
    wire = False


# -- listing the tree -----------------------------------------------------------------


def _subclasses(cls: type) -> list[type]:
    # Only this module's classes: a subclass made elsewhere (a test's) is no new code.
    return [sub for sub in cls.__subclasses__() if sub.__module__ == __name__]


def _walk(cls: type):
    yield cls
    for sub in _subclasses(cls):
        yield from _walk(sub)


def all_errors() -> list[type[PathserverError]]:
    """Every error class, root first, in the order of the drawing in this module's docstring."""
    return list(_walk(PathserverError))


def tree() -> str:
    """The drawing in this module's docstring (less its indent), made from the classes."""
    lines: list[str] = []

    def row(label: str, cls: type) -> str:
        flag = "" if cls.wire else "(local)"
        flag = flag or ("(retryable)" if cls.retryable else "")
        return f"{label:<33}{cls.code:<19}{flag}".rstrip()

    def draw(cls: type, indent: str) -> None:
        subs = _subclasses(cls)
        for i, sub in enumerate(subs):
            lines.append(row(f"{indent} +-- {sub.__name__}", sub))
            draw(sub, indent + (" |   " if i < len(subs) - 1 else "     "))

    lines.append(row(PathserverError.__name__, PathserverError))
    draw(PathserverError, "")
    return "\n".join(lines)


def _wire_errors() -> list[type[PathserverError]]:
    # The root's code is the catch-all ("anything else"), so it comes last.
    classes = [cls for cls in all_errors() if cls.wire]
    return classes[1:] + classes[:1]


#: Every code a reply can carry: the root's ``internal`` last, the others in tree order.
WIRE_CODES: tuple[str, ...] = tuple(cls.code for cls in _wire_errors())
#: The wire codes for which sending the same request again later may succeed.
RETRYABLE_CODES: frozenset[str] = frozenset(cls.code for cls in _wire_errors() if cls.retryable)


def markdown_table() -> str:
    """The table of error codes in ``docs/protocol.md`` (a test compares the two)."""
    rows = ["| code | meaning |", "| --- | --- |"]
    rows += [f"| `{cls.code}` | {cls.meaning}{' (retryable)' if cls.retryable else ''} |" for cls in _wire_errors()]
    return "\n".join(rows)
