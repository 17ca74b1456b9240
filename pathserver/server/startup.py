"""What ``pathserver serve`` does before it is ready, said as it happens.

The first line names the endpoint; then one line a stage on stderr, each starting
``pathserver: `` (the ready line itself goes to stdout, alone, for programs that wait on
it)::

    pathserver: listening on tcp://127.0.0.1:5555 (process 4242); loading maps from /srv/maps
    pathserver: compiling the search kernels into /home/me/.cache/pathserver/numba-... (...)
    pathserver: 3 maps loaded (0.21 s since start)
    pathserver: kernels 1/9 ready: paths (8.1 s)
    ...
    pathserver: kernels ready in 61.2 s since start (153 compiled, 0 from the cache)

Requests are answered from the "maps loaded" line on: each waits for the kernels it runs
(the warm-up compiles the common ones first). A step that compiles anything says so, on a
partly filled cache too; with a warm cache the steps load in milliseconds and say nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pathserver import kernel_cache

#: The prefix of every progress line; the Godot addon shows these lines as they come.
PREFIX = "pathserver: "
#: On a cold start with a second core, a second process compiles the steps from this one
#: on (by name) into a folder of its own while this process compiles those before it;
#: its kernels are then copied into the cache, and these steps load them.
SECOND_PROCESS_FROM = "movement range, flow fields, steering, many goals, blockers, unit classes"


class StartupLog:
    """One line a stage on ``stream`` (stderr by default), flushed at once."""

    def __init__(self, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.began = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.began

    def say(self, text: str) -> None:
        print(PREFIX + text, file=self.stream, flush=True)


def kernel_cache_dir() -> Path | None:
    """Where numba keeps the compiled kernels (None: numba's default, beside the sources);
    in a bundle compiled ahead of time, the folder holding the kernels' extension."""
    if kernel_cache.ahead_of_time():
        return kernel_cache.choice().folder if kernel_cache.choice() else None
    return kernel_cache.folder()


def kernels_cached(cache_dir: Path | None) -> bool:
    """True when the cache already holds compiled kernels (an index file numba writes)."""
    if cache_dir is None or not cache_dir.is_dir():
        return False
    return any(cache_dir.rglob("*.nbi"))


def compile_counts() -> tuple[int, int]:
    """(compiled now, loaded from the cache) over every kernel dispatcher loaded so far;
    ahead of time, (0, the compiled kernels bound so far)."""
    if kernel_cache.ahead_of_time():
        from pathserver.core.jit import CompiledKernel

        return 0, len({id(value) for name, module in list(sys.modules.items())
                       if name.startswith("pathserver.core") and module is not None
                       for value in vars(module).values() if isinstance(value, CompiledKernel)})
    from numba.core.registry import CPUDispatcher

    compiled = loaded = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith("pathserver.core") or module is None:
            continue
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher):
                loaded += sum(value.stats.cache_hits.values())
                compiled += sum(value.stats.cache_misses.values())
    return compiled, loaded


def warm_maps() -> dict:
    """The warm-up's two small maps: ``costly`` (terrain costs), ``uniform``."""
    from pathserver.grid.gridmap import GridMap

    costly = GridMap.from_ascii(
        """
        ........
        .##2....
        ........
        ....#...
        """
    )
    uniform = GridMap.from_ascii(
        """
        ........
        ...##...
        ........
        """
    )
    return {"costly": costly, "uniform": uniform}


def warm_steps(costly=None):
    """The calls that reach every kernel a request can reach, as (name, thunk) pairs.
    ``costly``: another map with terrain costs in place of the warm-up's own, holding its
    cells in the top-left corner (``pathserver.aot`` passes maps whose cost index is
    wider, to collect those kernels' versions too)."""
    import numpy as np

    from pathserver.core.wire import avoid_pairs, pack_float_points, pack_int_points, packed_points_bound
    from pathserver.errors import PathserverError
    from pathserver.grid.gridmap import GridMap
    from pathserver.grid.queries import check_block, distance_field, next_steps, reachable
    from pathserver.grid.search import find_path
    from pathserver.options import AVOID, AVOID_COST

    maps = warm_maps()
    uniform = maps["uniform"]
    costly = maps["costly"] if costly is None else costly

    def search(gridmap, start, goal, unit, **options):
        def run():
            try:
                find_path(gridmap, start, goal, unit, **options)
            except PathserverError:
                pass
        return run

    tags = np.zeros(costly.walkable.shape, dtype=np.uint8)
    tags[:4, :8] = np.eye(4, 8, dtype=np.uint8)
    tagged = GridMap(costly.walkable, costly.cost, tags=tags, tag_names={"mud": 1}, classes={"truck": {"mud": None}})

    def queries():
        # Both kinds of map (terrain costs, uniform), with and without avoided cells.
        for gridmap in (costly, uniform):
            for avoid, avoid_cost in ((None, None), ({"cells": [(2, 0)]}, None), ({"rects": [(2, 0, 1, 2)]}, 3)):
                extra = {AVOID.name: avoid, AVOID_COST.name: avoid_cost}
                reachable(gridmap, (0, 0), 4.0, 1, **extra)
                distance_field(gridmap, [(7, 2)], 1, **extra)
                distance_field(gridmap, [(7, 2)], 1, max_cost=3.0, region=(0, 0, 2, 2), **extra)
                for lookahead in ("cell", "los"):
                    next_steps(gridmap, [(7, 2)], 1, [(0, 0), (3, 2)], lookahead=lookahead, **extra)
                find_path(gridmap, (0, 0), goals=[(7, 2), (0, 2)], **extra)
            check_block(gridmap, cells=[(1, 0)], points=[(0, 0), (7, 2)])
            check_block(gridmap, cells=[(1, 0)], points=[(0, 0), (7, 2)], diagonal="always")
            # After an edit the pieces are updated from the generation before.
            check_block(gridmap.edit(cells=[(3, 1)], solid=True), cells=[(1, 0)], points=[(0, 0), (7, 2)])
        # A blocked start snaps to the nearest standable cell (components.nearest_with_label).
        reachable(costly, (1, 1), 4.0, 1)
        find_path(tagged, (0, 0), (7, 3), traversal="truck")

    def jump_tables():
        # JPS+ (maps of 128 x 128 cells and more): a table built, searched (with avoided
        # cells too), and updated after an edit, as auto does in the background; on the
        # map as made, with its goal bounds (core.bounds) too.
        walkable = np.ones((128, 128), dtype=bool)
        walkable[40:90, 64] = False
        gridmap = GridMap(walkable)
        for _ in range(2):
            find_path(gridmap, (0, 0), (127, 127))
            layer = gridmap.layer_for(1, 1)
            gridmap.start_jump_table(layer)
            layer.wait_jump_table(60.0)
            layer.wait_bounds(60.0)
            find_path(gridmap, (0, 64), (127, 64), line_of_sight=False)
            # Avoided cells: off the path; then the wall's lower end longer, where no detour
            # of its cost goes round them (core.repair) and JPS+ searches the relaxation
            # round the cut (core.repair.relax) under their overlay (core.relay); then
            # across its way, cut in many places: round all of them.
            find_path(gridmap, (0, 64), (127, 70), avoid={"cells": [(20, 66)]}, line_of_sight=False)
            # The same as numpy rows (as the server hands them on): laid by one kernel.
            find_path(gridmap, (0, 64), (127, 70), avoid={"cells": np.array([(20, 66)])}, line_of_sight=False)
            find_path(gridmap, (0, 64), (127, 70), avoid={"rects": [(64, 90, 1, 3)]}, line_of_sight=False)
            find_path(gridmap, (0, 64), (127, 70), avoid={"rects": [(56, 85, 16, 43)]}, line_of_sight=False)
            gridmap = gridmap.edit(cells=[(10, 10)], solid=True)

    def landmarks():
        # A* on terrain costs (maps of 128 x 128 cells and more) estimates with the layer's
        # landmarks once built in the background (core.landmarks): the warm-up's costly map
        # tiled, so that its cost index is of the same width.
        rows, columns = costly.walkable.shape
        reps = (128 // rows + 1, 128 // columns + 1)
        gridmap = GridMap(np.tile(costly.walkable, reps), np.tile(costly.cost, reps))
        far = (gridmap.width - 1, gridmap.height - 1)
        find_path(gridmap, (0, 0), far)
        gridmap.layer_for(1, 1).wait_landmarks(120.0)
        find_path(gridmap, (0, 0), far)

    def hex_maps():
        # A hex map: core.clearance's hex annotation, and a larger unit's footprint costs
        # and avoided anchors (the searches take the same kernels as on square maps); on
        # an open one of uniform cost, hex JPS (core.hexjps) and its jump table.
        gridmap = GridMap(costly.walkable, costly.cost, shape="hex", layout="odd-r")
        find_path(gridmap, (0, 0), (7, 3), 1, smooth="los")
        find_path(gridmap, (0, 0), (7, 3), 2, avoid={"cells": [(2, 0)]})
        find_path(GridMap(np.ones((4, 8), dtype=bool), shape="hex", layout="odd-r"), (0, 3), (7, 0),
                  line_of_sight=False)

    def floors_and_links():
        # Two floors joined by a ladder (core.links' A* and its trace), on both kinds of map.
        for gridmap in (costly, uniform):
            floors = np.stack([gridmap.walkable, gridmap.walkable])
            linked = GridMap(floors, None if gridmap.uniform_cost else np.stack([gridmap.cost, gridmap.cost]),
                             floors=2, links=[{"from": [0, 0], "to": [0, 0, 1], "cost": 2}])
            find_path(linked, (0, 0), (7, 2, 1), smooth="los")
            reachable(linked, (0, 0), 4.0, 1)
        # Every other op's kernels of core.links, once (on the last map: they compile per op).
        find_path(linked, (0, 0), goals=[(7, 2, 1), (3, 1)], avoid={"cells": [[1, 1]]}, allow_partial=True)
        find_path(linked, (0, 0), (7, 2, 1), avoid={"cells": [[1, 1, 1]]}, avoid_cost=5.0)
        reachable(linked, (0, 0), 4.0, 1, avoid={"cells": [[1, 1]]})
        distance_field(linked, [(7, 2, 1)], avoid={"cells": [[1, 1]]})
        next_steps(linked, [(7, 2, 1)], 1, [(0, 0), (1, 0, 1)], lookahead="los")
        check_block(linked, cells=[(1, 1, 1)], points=[(0, 0), (7, 2, 1)])

    def encoders():
        out = np.empty(packed_points_bound(2), dtype=np.uint8)
        pack_int_points(np.zeros((2, 2), dtype=np.int32), out)
        pack_float_points(np.zeros((2, 2), dtype=np.uint64), out)

    def pairs_reader():
        # A request's avoided cells as [x, y] pairs, as the server reads them (protocol.reading.BodyDecoder).
        avoid_pairs(np.frombuffer(b"\x81\xa5avoid\x81\xa5cells\x91\x92\x01\xcb" + bytes(8), dtype=np.uint8), 1,
                    np.empty((1, 2), dtype=np.float64), np.empty(3, dtype=np.int64))

    return [
        # The first request of most games: a path on a map without terrain costs, and its
        # reply encoded by a compiled kernel (core.wire).
        ("paths", lambda: (search(uniform, (0, 2), (7, 0), 1, smooth="none")(), encoders())),
        ("A* with terrain costs", search(costly, (0, 0), (7, 3), 1, smooth="los")),
        ("larger units", search(costly, (0, 0), (7, 3), 2, smooth="corners", diagonal="always", algorithm="astar")),
        ("partial paths", search(costly, (0, 0), (7, 3), 1, diagonal="never", allow_partial=True, max_expansions=3)),
        ("jump point search", search(uniform, (0, 2), (7, 0), 1, algorithm="jps", line_of_sight=False, smooth="los")),
        ("map edits", lambda: costly.edit(cells=[(0, 3)], solid=True)),
        ("avoided cells sent as pairs", pairs_reader),
        ("jump tables (JPS+)", jump_tables),
        ("movement range, flow fields, steering, many goals, blockers, unit classes", queries),
        ("landmarks (A* on terrain costs)", landmarks),
        ("hex maps", hex_maps),
        ("floors and links", floors_and_links),
    ]


def announce_kernels(log: StartupLog) -> bool:
    """Say whether the kernels will compile or load from the cache; True when compiling
    (said before the maps load, since loading a map already runs the clearance kernel).
    A frozen server (``pathserver bundle``) says when it loads the bundle's own kernels,
    and why not when it compiles instead (``kernel_cache.choice``)."""
    cache_dir = kernel_cache_dir()
    where = str(cache_dir) if cache_dir is not None else "numba's cache beside the sources"
    decided = kernel_cache.choice()
    if kernel_cache.ahead_of_time():
        log.say(f"loading the bundle's kernels, compiled ahead of time, from {where}")
        return False
    if decided is not None and decided.bundled:
        note = f" ({decided.reason})" if decided.reason else ""
        log.say(f"loading the bundle's compiled kernels from {where}{note}")
        return False
    if kernels_cached(cache_dir):
        log.say(f"loading the compiled kernels from {where} (any missing compile, said step by step)")
        return False
    why = f"; the bundle's own kernels do not fit: {decided.reason}" if decided is not None and decided.reason else ""
    log.say(f"compiling the search kernels into {where} (first start on this machine: each op answers once "
            f"its own kernels are compiled, within a minute or two; later starts load them){why}")
    return True


#: Warm-up steps that only maps of one kind need, by name: what tells a map of that kind.
KIND_STEPS = {"hex maps": lambda gridmap: bool(gridmap.hex), "floors and links": lambda gridmap: gridmap.linked}


def steps_for_later(gridmaps) -> frozenset:
    """The :data:`KIND_STEPS` none of ``gridmaps`` needs: a warm start loads them after its
    ready line, the served maps' kernels first."""
    gridmaps = list(gridmaps)
    return frozenset(name for name, needs in KIND_STEPS.items() if not any(needs(m) for m in gridmaps))


def warm_kernels(log: StartupLog | None = None, *, compiling: bool = False, stopping=None, skip=frozenset(),
                 only=None) -> bool:
    """Compile (or load from numba's cache) every kernel a request can reach, so that
    each later request is as fast as the next: the steps of :func:`warm_steps` not in
    ``skip`` (and in ``only``, when given). With ``log``, a line a step that compiled
    anything (every step while ``compiling``) and one when done. ``stopping``: called
    between steps; when it returns True the warm-up ends there and this returns False.
    Compiling on a machine with a second core, :class:`SecondProcess` shares the work."""
    steps = [(name, step) for name, step in warm_steps() if name not in skip and (only is None or name in only)]
    began = time.perf_counter()
    helper = None
    if compiling and (os.cpu_count() or 1) > 1 and not kernel_cache.frozen():
        helper = SecondProcess()
    try:
        for i, (name, step) in enumerate(steps, 1):
            if helper is not None and name == SECOND_PROCESS_FROM:
                while not helper.wait(0.1):
                    if stopping is not None and stopping():
                        return False
                merged = helper.merge()
                if log is not None:
                    log.say(f"kernels {i}/{len(steps)} to {len(steps)}: {merged} ({time.perf_counter() - began:.1f} s)")
            if stopping is not None and stopping():
                return False
            before = compile_counts()[0]
            step()
            if log is not None and (compiling or compile_counts()[0] > before):
                log.say(f"kernels {i}/{len(steps)} ready: {name} ({time.perf_counter() - began:.1f} s)")
    finally:
        if helper is not None:
            helper.close()
    if log is not None:
        compiled, loaded = compile_counts()
        how = (f"{loaded} compiled ahead of time" if kernel_cache.ahead_of_time()
               else f"{compiled} compiled, {loaded} from the cache")
        log.say(f"kernels ready in {log.elapsed():.2f} s since start ({how})")
    return True


class SecondProcess:
    """``python -m pathserver.server.startup`` compiling the warm-up's steps from
    SECOND_PROCESS_FROM on into a folder of its own (two processes writing one numba
    cache could each overwrite the other's index), for :meth:`merge` to copy into ours."""

    def __init__(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="pathserver-compile-"))
        ours = kernel_cache.configure()
        env = dict(os.environ)
        if os.environ.get("NUMBA_CACHE_DIR"):
            # numba's own locator: the same folders below the scratch as below ours.
            env["NUMBA_CACHE_DIR"] = str(self.scratch)
            self.theirs, self.ours = self.scratch, ours
        else:
            env["XDG_CACHE_HOME"] = str(self.scratch)
            self.theirs, self.ours = self.scratch / ours.relative_to(kernel_cache.user_cache().parent), ours
        # Into a file: a pipe nobody reads while it compiles could fill and stop it.
        self.said = self.scratch / "stderr.txt"
        with open(self.said, "wb") as said:
            self.process = subprocess.Popen([sys.executable, "-m", "pathserver.server.startup"], env=env,
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=said)
        _running.add(self)

    def wait(self, timeout: float) -> bool:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def merge(self) -> str:
        """Copy the kernels it compiled that our cache has no index of, each function's
        data files before its index; says what happened. Done holding numba's compiler
        lock: no kernel of this process is saved into the cache meanwhile."""
        from numba.core.compiler_lock import global_compiler_lock

        with global_compiler_lock:
            return self._merge()

    def _merge(self) -> str:
        if self.process.returncode != 0:
            why = self.said.read_text(errors="replace").strip().splitlines()[-1:]
            return f"the second process failed ({'; '.join(why) or self.process.returncode}): compiling them here"
        copied = 0
        for index in sorted(self.theirs.rglob("*.nbi")):
            target = self.ours / index.relative_to(self.theirs)
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            for data in sorted(index.parent.glob(index.stem + ".*.nbc")):
                kernel_cache.copy_whole(data, target.parent / data.name)
            kernel_cache.copy_whole(index, target)
            copied += 1
        return f"{copied} kernels compiled by a second process"

    def close(self) -> None:
        _running.discard(self)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)


_running: set[SecondProcess] = set()


def end_second_processes() -> None:
    """Kill any second process still compiling (a server stopping at once)."""
    for helper in list(_running):
        helper.close()


if __name__ == "__main__":
    # The second process of warm_kernels: the steps from SECOND_PROCESS_FROM on, nothing said.
    kernel_cache.configure()
    steps = warm_steps()
    names = [name for name, _ in steps]
    for _, each in steps[names.index(SECOND_PROCESS_FROM):]:
        each()
