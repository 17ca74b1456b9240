"""The wire protocol: ``codec`` (msgpack with limits), ``requests`` (validation into typed
requests), ``replies`` (reply builders, error codes, path answers into bytes). Imports no
numba: the compiled point encoder for long paths is handed in by the server."""
