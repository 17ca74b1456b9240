"""The map folder the server serves, kept in step with the files by hot reload.

Every map file directly in the folder is served under its file stem: ``.map``, ``.png``,
``.tmj``, and ``.json`` files that are Tiled maps. Not served: sidecars (``NAME.json`` /
``NAME.toml`` beside a map), ``.scen`` files, anything else, and temporary files (names
starting with ``.`` or ending in ``~``, ``.tmp``, ``.swp``, ``.swx``). When two map files
share a stem, the first in :data:`~pathserver.maps.files.MAP_SUFFIXES` order
(``.map``, ``.tmj``, ``.json``, ``.png``) is served and the others are reported in that
name's ``last_error``.

A changed file is loaded into a new :class:`GridMap` beside the served one and replaces it
only once complete: a broken file leaves the old map serving, its error in ``last_error``.
Uploaded maps (:meth:`MapRegistry.put_map`) live in memory beside the files, under names
no file serves, within ``max_upload_cells``. Each load, upload or edit gets a generation
higher than any the registry handed out before; :meth:`get` takes no lock. How a change
is noticed, and why each of these rules: docs/design.md, "Hot reload".
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from pathserver.errors import ConflictError, MapLoadError, TooLargeError, UnknownMapError
from pathserver.grid.gridmap import GridMap
from pathserver.maps.files import MAP_SUFFIXES, PLAIN_MAP_SUFFIXES, is_temp_name, is_tiled_document
from pathserver.maps.formats import load_map_with_sources
from pathserver.maps.sidecar import SIDECAR_SUFFIXES, sidecar_paths

log = logging.getLogger("pathserver.maps")

#: How many served names an UnknownMapError lists before "...".
_NAMES_IN_ERRORS = 20
#: A standalone .json bigger than this is not parsed to see whether it is a Tiled map.
_MAX_PEEK_BYTES = 256 * 1024 * 1024
#: Total cells of all uploaded maps a registry holds by default (4 maps of 4096 x 4096).
DEFAULT_MAX_UPLOAD_CELLS = 64 * 1024 * 1024
FILE, UPLOAD = "file", "upload"


@dataclass(frozen=True)
class _Entry:
    """What the registry knows about one name. Replaced whole, never mutated."""

    file: Path | None  # None for an uploaded map
    gridmap: GridMap | None  # None: the name's file never loaded (see last_error)
    loaded_at: float | None
    load_ms: float | None
    walkable_share: float | None
    last_error: str | None
    sources: tuple[Path, ...]  # files the last good load read besides the map and its sidecars
    source: str = FILE  # FILE or UPLOAD


def _stat_key(path: Path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _walkable_share(gridmap: GridMap) -> float:
    return float(np.count_nonzero(gridmap.walkable)) / gridmap.walkable.size


class MapRegistry:
    """The maps in ``folder``, by name, reloaded when their files change.

    ``on_event(event: dict)`` is called (from the loading thread, outside any lock) after
    each change with ``event`` one of ``{"event": "loaded" | "load_failed" | "removed" |
    "edited" | "uploaded" | "dropped", "name", "file" (None for uploads), "generation",
    "error"}``; exceptions it raises are logged.
    ``stats`` counts ``reloads_ok`` and ``reloads_failed`` over all loads, the initial
    ones included. ``max_upload_cells``: the bound on the total cells of uploaded maps.
    """

    def __init__(self, folder: Path, *, debounce_ms: int = 50, on_event=None, rescan_ms: int = 500,
                 max_upload_cells: int = DEFAULT_MAX_UPLOAD_CELLS):
        self.folder = Path(folder)
        self.max_upload_cells = int(max_upload_cells)
        self._upload_cells = 0  # cells of the uploaded maps, under _lock
        self.debounce_ms = max(1, int(debounce_ms))
        self.rescan_ms = max(10, int(rescan_ms))
        self.on_event = on_event
        self.stats = {"reloads_ok": 0, "reloads_failed": 0}
        self._lock = threading.Lock()  # guards the swaps below and stats
        self._load_lock = threading.RLock()  # one scan or load at a time
        self._maps: dict[str, GridMap] = {}  # copy on write: get() reads it without a lock
        self._entries: dict[str, _Entry] = {}  # copy on write, like _maps
        self._generation = 0  # highest generation handed out, to any name
        self._seen: dict[str, tuple] = {}  # name -> the files' state at its last load attempt
        self._json_is_map: dict[Path, tuple] = {}  # path -> (stat key, is a Tiled map)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- reading ------------------------------------------------------------------------

    def get(self, name: str) -> GridMap:
        """The map served as ``name``. Only looks ``name`` up: it never touches the disk.
        UnknownMapError otherwise; when a file of that name failed to load, its message
        says so and gives the reason (``last_error``)."""
        gridmap = self._maps.get(name) if isinstance(name, str) else None
        if gridmap is None:
            served = sorted(self._maps)
            shown = ", ".join(served[:_NAMES_IN_ERRORS]) + (", ..." if len(served) > _NAMES_IN_ERRORS else "")
            entry = self._entries.get(name) if isinstance(name, str) else None
            if entry is not None and entry.last_error:
                # A file of that name is there but never loaded: the reason saves a look at `maps`.
                raise UnknownMapError(f"map {name!r} failed to load: {entry.last_error}; served: {shown or 'none'}",
                                      at="map")
            raise UnknownMapError(f"no map named {name!r:.80}; served: {shown or 'none'}", at="map")
        return gridmap

    def names(self) -> list[str]:
        return sorted(self._maps)

    def info(self) -> list[dict]:
        """One dict per name, sorted by name. Names whose file never loaded are listed too,
        with ``None`` for the map's fields and the reason in ``last_error``."""
        rows = []
        for name, entry in sorted(self._entries.items()):
            gridmap = entry.gridmap
            rows.append(
                {
                    "name": name,
                    "width": gridmap.width if gridmap else None,
                    "height": gridmap.floor_height if gridmap else None,
                    "cell_size": gridmap.cell_size if gridmap else None,
                    "origin": list(gridmap.origin) if gridmap else None,
                    "generation": gridmap.generation if gridmap else None,
                    "loaded_at": entry.loaded_at,
                    "load_ms": entry.load_ms,
                    "file": None if entry.file is None else str(entry.file),
                    "last_error": entry.last_error,
                    "walkable_share": entry.walkable_share,
                    "source": entry.source,
                    "tag_names": dict(gridmap.tag_names) if gridmap else None,
                    "classes": sorted(gridmap.classes) if gridmap else None,
                    "shape": gridmap.shape if gridmap else None,
                    "layout": gridmap.layout if gridmap else None,
                    "floors": gridmap.floors if gridmap else None,
                    "links": len(gridmap.links) if gridmap else None,
                }
            )
        return rows

    # -- loading ------------------------------------------------------------------------

    def load_all(self) -> None:
        """Load every map in the folder. A bad file is recorded (``info()``'s
        ``last_error``), never raised; a missing folder raises MapLoadError."""
        if self.folder.is_file():
            raise MapLoadError(f"{self.folder}: is a file, not a folder of maps; serve the folder that holds it "
                               f"(--maps {self.folder.parent})")
        if not self.folder.is_dir():
            raise MapLoadError(f"{self.folder}: map folder does not exist")
        self.rescan()

    def rescan(self, changed=()) -> None:
        """Compare the folder with what was loaded and reload, add or drop what changed.

        ``changed``: paths the caller knows were written (the watcher's events). Their
        maps are reloaded even when size and mtime look the same, since two writes within
        one tick of the file system's clock can leave both unchanged.
        """
        with self._load_lock:
            try:
                listing = self._listing()
            except OSError as exc:
                # An unreadable folder is no reason to drop every map.
                log.warning("cannot list map folder %s: %s", self.folder, exc)
                return
            forced = self._names_for(changed, listing) if changed else set()
            for name in sorted(set(listing) | set(self._entries) | set(self._seen)):
                self._refresh(name, listing.get(name, []), force=name in forced)

    def reload(self, path: Path) -> bool:
        """Load the map ``path`` is (or is the sidecar, heights or tileset of) and swap it
        in if it loads. True when every map concerned loaded."""
        with self._load_lock:
            try:
                listing = self._listing()
            except OSError as exc:
                log.warning("cannot list map folder %s: %s", self.folder, exc)
                return False
            names = self._names_for([path], listing)
            results = [self._refresh(name, listing.get(name, []), force=True) for name in sorted(names)]
        return bool(results) and all(result is True for result in results)

    @property
    def upload_cells(self) -> int:
        """Cells of all uploaded maps now."""
        return self._upload_cells

    def apply_edit(self, name, rects=(), cells=(), *, solid=None, cost=None, if_gen: int | None = None,
                   links=None) -> GridMap:
        """Replace map ``name`` with ``gridmap.edit(...)`` (see :meth:`GridMap.edit`) and
        return the new map. The file is not written: a later change of it wins.
        ``if_gen``: edit only if the map's generation is this one, else ConflictError
        (carrying the current generation). ``links``: the map's new links (issue #35),
        with or without an edit of cells."""

        def edit(current: GridMap) -> GridMap:
            if if_gen is not None and current.generation != if_gen:
                raise ConflictError(f"map {name!r} is at generation {current.generation}, not {if_gen} (if_gen): "
                                    "read it again and retry", gen=current.generation, at="if_gen")
            edited = current.edit(rects, cells, solid=solid, cost=cost) if rects or cells else current
            return edited if links is None else edited.with_links(links)

        return self._edit(name, edit)

    def apply_edits(self, name, changes) -> GridMap:
        """Replace map ``name`` with ``gridmap.edit_many(changes)`` (see
        :meth:`GridMap.edit_many`): many edits, one new generation; returns the new map."""
        return self._edit(name, lambda current: current.edit_many(changes))

    def _edit(self, name: str, edit) -> GridMap:
        with self._lock:
            edited = edit(self.get(name))
            generation = self._generation + 1
            if edited.generation != generation:
                edited = edited.with_generation(generation)
            self._generation = generation
            entry = replace(self._entries[name], gridmap=edited, walkable_share=_walkable_share(edited))
            self._swap(name, edited, entry)
        self._emit("edited", name, entry.file, generation, None)
        return edited

    def replace(self, name: str, transform) -> GridMap:
        """Serve ``transform(current, generation)`` (a new GridMap with that generation)
        as map ``name``, whatever its source; returns it. How the shared state
        (``pathserver.editlog``) puts its edited cells back onto a reloaded file or a
        joining worker's maps. UnknownMapError when nothing serves ``name``."""
        with self._lock:
            current = self.get(name)
            generation = self._generation + 1
            changed = transform(current, generation)
            self._generation = generation
            entry = replace(self._entries[name], gridmap=changed, walkable_share=_walkable_share(changed))
            self._swap(name, changed, entry)
        self._emit("edited", name, entry.file, generation, None)
        return changed

    # -- uploads ------------------------------------------------------------------------

    def check_put(self, name: str, cells: int) -> None:
        """What :meth:`put_map` would refuse, checked before the map is built: a name a
        file serves (ConflictError), or past the upload bound (TooLargeError)."""
        with self._lock:
            self._check_put(name, cells)

    def put_map(self, name: str, gridmap: GridMap, *, load_ms: float = 0.0, wire=None,
                bounded: bool = True) -> GridMap:
        """Serve ``gridmap`` (built by the caller, not yet shared) as the uploaded map
        ``name``, replacing an uploaded map of that name; returns it with its new
        generation. ConflictError when a map file serves ``name``; TooLargeError when the
        uploads would pass ``max_upload_cells`` (unless not ``bounded``: a put that another
        worker accepted, see ``pathserver.editlog``). ``load_ms``: the build time ``maps``
        reports. ``wire``: the request's layers (stored by ``RedisState``; ignored here)."""
        cells = gridmap.width * gridmap.height
        with self._lock:
            old = self._check_put(name, cells if bounded else 0)
            generation = self._generation + 1
            if gridmap.layers.prepared_calls():
                gridmap = gridmap.with_generation(generation)
            else:
                # Not yet shared, and no prepared call holds its number: stamped in place,
                # keeping the layers its builder made.
                gridmap.generation = generation
            gridmap.name = name
            self._generation = generation
            self._upload_cells += cells - (old.gridmap.width * old.gridmap.height if old else 0)
            note = self._file_note(name)
            entry = _Entry(None, gridmap, time.time(), load_ms, _walkable_share(gridmap), note, (), UPLOAD)
            self._swap(name, gridmap, entry)
        log.info("map %r uploaded (%dx%d, generation %d, %.1f ms)", name, gridmap.width, gridmap.height,
                 generation, load_ms)
        self._emit("uploaded", name, None, generation, None)
        return gridmap

    def check_drop(self, name: str) -> None:
        """What :meth:`drop_map` would refuse: UnknownMapError for a name nothing serves,
        ConflictError for one a map file serves."""
        with self._lock:
            self._check_drop(name)

    def _check_drop(self, name: str) -> _Entry:
        entry = self._entries.get(name) if isinstance(name, str) else None
        if entry is None:
            self.get(name)  # raises UnknownMapError listing the served names
        if entry.source != UPLOAD:
            raise ConflictError(f"map {name!r} is served from the file {entry.file.name}; only uploaded "
                                "maps can be dropped (delete the file instead)", at="map")
        return entry

    def drop_map(self, name: str) -> int:
        """Stop serving the uploaded map ``name``; returns the generation dropped. Searches
        already running on it finish on it. Refuses as :meth:`check_drop`. A map file of
        that name is loaded then."""
        with self._lock:
            entry = self._check_drop(name)
            generation = entry.gridmap.generation
            self._upload_cells -= entry.gridmap.width * entry.gridmap.height
            self._swap(name, None, None)
        log.info("uploaded map %r dropped (generation %d)", name, generation)
        self._emit("dropped", name, None, generation, None)
        with self._load_lock:
            self._seen.pop(name, None)
            try:
                listing = self._listing()
            except OSError:
                listing = {}
            if name in listing:
                self._refresh(name, listing[name], force=True)
        return generation

    def _check_put(self, name: str, cells: int) -> _Entry | None:
        """The upload ``name`` replaces (or None); raises as :meth:`check_put`. Caller holds ``_lock``."""
        old = self._entries.get(name)
        if old is not None and old.source != UPLOAD:
            raise ConflictError(f"map {name!r} is served from the file {old.file.name}; an upload cannot replace "
                                "it (upload under another name, or remove the file)", at="map")
        total = self._upload_cells + cells - (old.gridmap.width * old.gridmap.height if old else 0)
        if cells and total > self.max_upload_cells:
            raise TooLargeError(f"uploaded maps would hold {total} cells, over this server's bound of "
                                f"{self.max_upload_cells} (serve --max-upload-cells); drop_map one first", at="cells")
        return old

    def _file_note(self, name: str) -> str | None:
        """Why a map file of an uploaded map's name is not served, if one is there."""
        candidates = self._seen.get(name)
        if not candidates:
            return None
        return (f"a map file named {name!r} is in the folder but not served while the uploaded map of that name "
                "is (drop_map it to serve the file)")

    # -- watching -----------------------------------------------------------------------

    def start(self) -> None:
        """Watch the folder from a daemon thread until :meth:`stop`."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        try:
            import watchfiles  # noqa: F401  (imported here so the thread starts watching sooner)
        except ImportError:
            log.warning("watchfiles is not installed; polling %s every %d ms", self.folder, self.rescan_ms)
        self._thread = threading.Thread(target=self._watch, name="pathserver-map-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; returns within about a second (a load in progress finishes in
        the daemon thread)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=1.0)

    def _watch(self) -> None:
        try:
            import watchfiles

            step = min(self.debounce_ms, 50)
            for changes in watchfiles.watch(
                self.folder,
                watch_filter=lambda _change, path: not is_temp_name(os.path.basename(path)),
                debounce=self.debounce_ms,
                step=step,
                stop_event=self._stop,
                rust_timeout=self.rescan_ms,
                yield_on_timeout=True,
                recursive=True,
                raise_interrupt=False,
            ):
                if self._stop.is_set():
                    return
                self._rescan_logged([path for _change, path in changes])
        except Exception:
            if self._stop.is_set():
                return
            log.warning("watching %s failed; polling every %d ms instead", self.folder, self.rescan_ms, exc_info=True)
        while not self._stop.wait(self.rescan_ms / 1000.0):
            self._rescan_logged()

    def _rescan_logged(self, changed=()) -> None:
        try:
            self.rescan(changed)
        except Exception:
            # The watcher must outlive any one bad scan.
            log.exception("rescanning %s failed", self.folder)

    # -- internals ----------------------------------------------------------------------

    def _listing(self) -> dict[str, list[Path]]:
        """Map files directly in the folder, by name, the one to serve first."""
        files = {}
        with os.scandir(self.folder) as it:
            for item in it:
                if is_temp_name(item.name) or not item.is_file():
                    continue
                files[item.name] = self.folder / item.name
        plain_stems = {path.stem for path in files.values() if path.suffix.lower() in PLAIN_MAP_SUFFIXES}
        by_name: dict[str, list[Path]] = {}
        for path in files.values():
            suffix = path.suffix.lower()
            if suffix not in MAP_SUFFIXES:
                continue
            if suffix == ".json" and (path.stem in plain_stems or not self._is_tiled_json(path)):
                continue  # a sidecar, or some other JSON
            by_name.setdefault(path.stem, []).append(path)
        for paths in by_name.values():
            paths.sort(key=lambda p: (MAP_SUFFIXES.index(p.suffix.lower()), p.name))
        present = set(files.values())
        self._json_is_map = {p: v for p, v in self._json_is_map.items() if p in present}
        return by_name

    def _is_tiled_json(self, path: Path) -> bool:
        key = _stat_key(path)
        cached = self._json_is_map.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            if key is None or key[1] > _MAX_PEEK_BYTES:
                verdict = True  # let the loader say what is wrong with it
            else:
                verdict = is_tiled_document(json.loads(path.read_bytes()))
        except (OSError, ValueError, RecursionError):
            # Unparseable JSON may be a Tiled map being written: treat it as one, so the
            # failed load keeps the old map and reports the error instead of dropping it.
            verdict = True
        self._json_is_map[path] = (key, verdict)
        return verdict

    def _names_for(self, paths, listing: dict[str, list[Path]]) -> set[str]:
        """The names whose map, sidecar or dependency is one of ``paths``."""
        folder = self.folder.resolve()
        targets = {Path(p).resolve() for p in paths}
        names = set()
        for target in targets:
            if target.parent == folder:
                lower = target.name.lower()
                for suffix in MAP_SUFFIXES + SIDECAR_SUFFIXES:
                    if lower.endswith(suffix):
                        names.add(target.name[: -len(suffix)])
        for name, entry in self._entries.items():
            if any(source.resolve() in targets for source in entry.sources):
                names.add(name)
        return names & (set(listing) | set(self._entries))

    @staticmethod
    def _files_state(paths) -> tuple:
        return tuple((str(p), _stat_key(p)) for p in paths)

    def _refresh(self, name: str, candidates: list[Path], *, force: bool) -> bool | None:
        """Bring ``name`` in line with the disk. True: loaded; False: failed or removed;
        None: nothing changed."""
        old = self._entries.get(name)
        if old is not None and old.source == UPLOAD:
            return self._refresh_upload(name, candidates, force=force)
        if not candidates:
            self._seen.pop(name, None)
            if old is not None:
                with self._lock:
                    self._swap(name, None, None)
                self._emit("removed", name, old.file, None, None)
            return False
        winner = candidates[0]
        same_file = old is not None and old.file == winner
        extra = old.sources if same_file else ()
        own_state = self._files_state(candidates + sidecar_paths(winner))
        if not force and self._seen.get(name) == (own_state, self._files_state(extra)):
            return None
        notes = [f"{p}: not served, {winner.name} has the same name" for p in candidates[1:]]
        generation = self._generation + 1
        started = time.perf_counter()
        error = None
        try:
            gridmap, sources = load_map_with_sources(winner, name=name, generation=generation)
        except MapLoadError as exc:
            error = str(exc)
        except Exception as exc:  # a bug or MemoryError must not kill the watcher
            log.exception("loading %s failed", winner)
            error = f"{winner}: {type(exc).__name__}: {exc}"
        load_ms = (time.perf_counter() - started) * 1000.0
        if error is None:
            own = {winner, *sidecar_paths(winner)}
            extra = tuple(p for p in sources if p not in own)
        # Dependencies are stat'ed after the load, the map and sidecars before it: a map
        # file rewritten during the load then differs at the next rescan and is reloaded.
        self._seen[name] = (own_state, self._files_state(extra))
        if error is not None:
            message = "; ".join([error] + notes)
            with self._lock:
                # Re-read under the lock: an edit may have replaced the map meanwhile, an
                # upload taken the name.
                current = self._entries.get(name)
                if current is not None and current.source == UPLOAD:
                    self._swap(name, current.gridmap, replace(current, last_error=self._file_note(name)))
                    return False
                if current is not None and current.file == winner and current.gridmap is not None:
                    entry = replace(current, last_error=message)
                else:
                    entry = _Entry(winner, None, None, None, None, message, ())
                kept = entry.gridmap
                self.stats["reloads_failed"] += 1
                self._swap(name, kept, entry)
            log.warning("map %r not (re)loaded: %s", name, message)
            self._emit("load_failed", name, winner, kept.generation if kept else None, error)
            return False
        with self._lock:
            current = self._entries.get(name)
            if current is not None and current.source == UPLOAD:
                # Uploaded while the file loaded: the upload keeps the name.
                self._swap(name, current.gridmap, replace(current, last_error=self._file_note(name)))
                log.warning("map file %s not served: an uploaded map named %r is", winner, name)
                return False
            # An edit may have taken this generation while the file loaded.
            if generation <= self._generation:
                generation = self._generation + 1
                gridmap = gridmap.with_generation(generation)
            self._generation = generation
            entry = _Entry(
                winner, gridmap, time.time(), load_ms, _walkable_share(gridmap), "; ".join(notes) or None, extra
            )
            self.stats["reloads_ok"] += 1
            self._swap(name, gridmap, entry)
        log.info("map %r loaded from %s (generation %d, %.1f ms)", name, winner, generation, load_ms)
        for note in notes:
            log.warning("%s", note)
        self._emit("loaded", name, winner, generation, None)
        return True

    def _refresh_upload(self, name: str, candidates: list[Path], *, force: bool) -> None:
        """:meth:`_refresh` for a name an upload serves: the file is not loaded, its presence
        (or absence) is noted in ``last_error``."""
        if not candidates:
            self._seen.pop(name, None)
        else:
            state = (self._files_state(candidates + sidecar_paths(candidates[0])), ())
            if not force and self._seen.get(name) == state:
                return None
            if self._seen.get(name) is None:
                log.warning("map file %s not served: an uploaded map named %r is", candidates[0], name)
            self._seen[name] = state
        with self._lock:
            current = self._entries.get(name)
            if current is not None and current.source == UPLOAD:
                note = self._file_note(name)
                if note != current.last_error:
                    self._swap(name, current.gridmap, replace(current, last_error=note))
        return None

    def _swap(self, name: str, gridmap: GridMap | None, entry: _Entry | None) -> None:
        """Publish a name's new state; caller holds ``_lock``."""
        maps, entries = dict(self._maps), dict(self._entries)
        if gridmap is None:
            maps.pop(name, None)
        else:
            maps[name] = gridmap
        if entry is None:
            entries.pop(name, None)
        else:
            entries[name] = entry
        self._maps, self._entries = maps, entries

    def _emit(self, event: str, name: str, file: Path, generation, error) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event({"event": event, "name": name, "file": None if file is None else str(file),
                           "generation": generation, "error": error})
        except Exception:
            log.exception("map registry on_event callback failed")
