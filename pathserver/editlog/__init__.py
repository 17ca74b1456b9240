"""The maps clients change, shared through Redis (``pathserver serve --state redis://...``):
the writer a server's handlers call and the reader thread that applies every change.

What lives in Redis (keys under ``pathserver:``)::

    edits        a Stream: one entry per update, put_map and drop_map, in the one order
                 every server applies them ({op, map, token, t, body})
    uploads      a hash: map name -> the put_map's fields (msgpack), stored once
    upload_ids   a hash: map name -> the stream id of that put
    snapshot     a hash: "id" -> the stream id it reflects; "map:NAME" -> the map's overlay
    compactor    a short lock: one server at a time writes the snapshot and trims

:class:`RedisState` (``state``) is a server's handle on it. A change is appended by the
server that took it (``writer``), which answers (``"seq"``: the entry's id) only once its
own reader (``reader``) has applied it; while Redis does not answer, a change is refused
with ``state_unavailable`` and nothing is queued. The overlays and the snapshot:
``snapshot``; the URL, the keys and the bounds: ``connection``. What is guaranteed:
docs/scaling.md, "The shared state on Redis"; how the writer, the reader and the
compaction go about it: docs/design.md, "The shared state".
"""

from pathserver.editlog.state import RedisState

__all__ = ["RedisState"]
