"""The wire protocol: ``codec`` (msgpack with limits), ``requests`` (validation into typed
requests), ``replies`` (reply builders, error codes). Imports no numba."""
