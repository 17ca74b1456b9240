"""Search bounds: the worst requests stay under a latency bound.

Two synthetic 1024 x 1024 maps (the largest a game here is likely to serve, built in
memory): ``split``, a wall down the middle with a two-cell door and a sealed pocket, and
``rings``, 255 nested square walls whose doors alternate corners, so the path from the
rim to the centre walks about 260 000 cells and A* expands every one of the 525 000 open
cells. Unreachable goals are refused by the component labels without a search; searches
that cannot end soon are cut by ``max_expansions``. Over the socket, the server loop keeps
answering ``ping`` while workers run the worst searches, and a trip that looks short but
is not (neighbours across a wall) is not run on the loop.

With the Moving AI benchmark present (``/work/shared/movingai``, else those cases skip):
an unreachable goal on the largest map (AcrosstheCape, 768 x 768) and the longest problem
of the 1-wide maze.

Figures are the median of REPEATS runs after one warm-up (which builds the unit-size
layers: their build time is reported too); the bounds are generous because the box is
shared with the rest of the suite.
"""

import statistics
import threading
import time

import msgpack
import numpy as np
import pytest

import zmq

from pathserver import GridMap
from pathserver.errors import PathserverError
from pathserver.grid.search import find_path
from pathserver.server.loop import INLINE_DISTANCE
from reliability.helpers import Dealer, ServerProcess, record, write_map

N = 1024
DOOR_Y = N // 2
POCKET = (800, 200)  # a walkable cell sealed in by walls on the right half
REPEATS = 3
#: Early-outs do no search: a few milliseconds at most, whatever the map's size.
EARLY_OUT_MS = 50.0
#: A budget of 100 000 expansions: a bounded cost, far below the full search.
BUDGET = 100_000
BUDGET_MS = 600.0
#: The whole 1024 x 1024 rings maze, searched to the end.
FULL_SEARCH_MS = 5000.0


def split_map() -> GridMap:
    walkable = np.ones((N, N), dtype=bool)
    walkable[:, N // 2] = False
    walkable[DOOR_Y:DOOR_Y + 2, N // 2] = True  # two cells: a 3x3 unit cannot pass
    px, py = POCKET
    walkable[py - 2:py + 3, px - 2:px + 3] = False
    walkable[py, px] = True
    return GridMap(walkable)


def rings_map() -> GridMap:
    walkable = np.ones((N, N), dtype=bool)
    ring = 0
    for d in range(1, N // 2 - 1, 2):
        lo, hi = d, N - 1 - d
        walkable[lo, lo:hi + 1] = walkable[hi, lo:hi + 1] = False
        walkable[lo:hi + 1, lo] = walkable[lo:hi + 1, hi] = False
        if ring % 2 == 0:
            walkable[lo, lo + 1] = True  # this ring's door: top left ...
        else:
            walkable[hi, hi - 1] = True  # ... and the next one's bottom right
        ring += 1
    return GridMap(walkable)


@pytest.fixture(scope="module")
def big_maps(compiled):
    started = time.perf_counter()
    maps = {"split": split_map(), "rings": rings_map()}
    built = time.perf_counter() - started
    layers = {}
    for name, gridmap in maps.items():
        for unit in (1, 3):
            started = time.perf_counter()
            gridmap.layer(unit)
            layers[f"{name} {unit}x{unit}"] = (time.perf_counter() - started) * 1000
            # auto's JPS+ table too, so that every timed query answers from the same state
            # (a table landing between two runs of a query changes its expansion count).
            gridmap.start_jump_table(gridmap.layer(unit))
            assert gridmap.layer(unit).wait_jump_table(timeout=120)
    record("bounds", f"two {N}x{N} maps built in {built:.2f} s; first-use layer builds: "
                     + ", ".join(f"{k} {v:.0f} ms" for k, v in layers.items()))
    return maps


def timed(gridmap, start, goal, **options):
    """(median ms, max ms, outcome) over REPEATS runs after a warm-up."""
    def once():
        try:
            result = find_path(gridmap, start, goal, **options)
            return result.status, result.expanded, len(result.path)
        except PathserverError as exc:
            return exc.code, None, None

    outcome = once()
    times = []
    for _ in range(REPEATS):
        began = time.perf_counter()
        assert once() == outcome
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times), max(times), outcome


CORNER, FAR_CORNER = (0, 0), (N - 1, N - 1)
CENTRE = (N // 2, N // 2)
CASES = [
    # name, map, start, goal, options, expected (status, expanded) or code, bound in ms
    ("unreachable: sealed pocket", "split", CORNER, POCKET, {}, ("no_path", 0), EARLY_OUT_MS),
    ("unreachable: 3x3 unit, 2-cell door", "split", CORNER, FAR_CORNER, {"unit_size": 3}, ("no_path", 0),
     EARLY_OUT_MS),
    ("unreachable, allow_partial", "split", CORNER, POCKET, {"allow_partial": True}, ("partial", None),
     EARLY_OUT_MS),
    ("goal on a ring wall, snapped", "rings", (N // 2, 0), (N // 2, 1), {}, ("found", None), EARLY_OUT_MS),
    ("corner to corner through the door", "split", CORNER, FAR_CORNER, {}, ("found", None), BUDGET_MS),
    ("rim to centre, budget 100k", "rings", CORNER, CENTRE, {"max_expansions": BUDGET}, "search_limit",
     BUDGET_MS),
    ("rim to centre, budget 100k, allow_partial", "rings", CORNER, CENTRE,
     {"max_expansions": BUDGET, "allow_partial": True},
     ("partial", BUDGET), BUDGET_MS),
    ("rim to centre, no budget", "rings", CORNER, CENTRE, {"smooth": "los"}, ("found", None),
     FULL_SEARCH_MS),
    ("rim to centre, no budget, A* only", "rings", CORNER, CENTRE, {"algorithm": "astar"}, ("found", None),
     FULL_SEARCH_MS),
]


@pytest.mark.parametrize("name, which, start, goal, options, expected, bound_ms", CASES,
                         ids=[case[0] for case in CASES])
def test_worst_cases_stay_bounded(big_maps, name, which, start, goal, options, expected, bound_ms):
    median_ms, worst_ms, (status, expanded, length) = timed(big_maps[which], start, goal, **options)
    record("bounds", f"{which} {name}: {status}, expanded {expanded}, path {length} points; "
                     f"median {median_ms:.1f} ms, max {worst_ms:.1f} ms (bound {bound_ms:.0f} ms)")
    if isinstance(expected, str):
        assert status == expected
    elif expected is not None:
        assert status == expected[0]
        if expected[1] is not None:
            assert expanded == expected[1]
    assert median_ms < bound_ms


def test_the_rings_maze_is_as_hard_as_it_looks(big_maps):
    """The maze really makes A* expand (nearly) every open cell: the budget figures above
    are about a genuinely long search."""
    result = find_path(big_maps["rings"], CORNER, CENTRE, algorithm="astar")
    open_cells = int(big_maps["rings"].walkable.sum())
    assert result.status == "found" and result.expanded > 0.9 * open_cells
    assert len(result.path) > 250_000  # every cell of the walk (smooth "none")


def as_rows(gridmap: GridMap) -> list[str]:
    return ["".join("." if cell else "@" for cell in row) for row in gridmap.walkable]


@pytest.fixture(scope="module")
def big_server(big_maps, tmp_path_factory):
    """The real server process serving the two big maps (so the test's own work, such as
    decoding 2 MB replies, never competes with the server's loop for a GIL)."""
    folder = tmp_path_factory.mktemp("big-maps")
    for name, gridmap in big_maps.items():
        write_map(folder, name, as_rows(gridmap))
    server = ServerProcess(folder)
    try:
        seconds = server.start()
        record("bounds", f"server with both {N}x{N} maps ready in {seconds:.2f} s")
        yield server
    finally:
        server.close()


def collect(endpoint: str, requests: list, bodies: list, errors: list) -> None:
    """Send ``requests`` on a DEALER of its own and gather every reply body (another
    thread). Decoding waits until the pings are done: decoding a 2.6 MB reply holds this
    process's GIL for as long as encoding it once held the server's."""
    context = zmq.Context()
    client = Dealer(context, endpoint)
    try:
        for request in requests:
            client.send(request)
        while len(bodies) < len(requests):
            bodies.append(client.recv_frames(timeout_ms=60_000)[-1])
    except BaseException as exc:
        errors.append(exc)
    finally:
        client.close()
        context.term()


def pings_during(endpoint: str, client: Dealer, requests: list) -> tuple[list, dict, float]:
    """Send ``requests`` from another connection (and thread) and ping on ``client`` until
    every one is answered: (ping round trips in ms, answers by id, seconds to drain)."""
    bodies, errors = [], []
    began_all = time.perf_counter()
    sender = threading.Thread(target=collect, args=(endpoint, requests, bodies, errors), daemon=True)
    sender.start()
    pings = []
    while sender.is_alive() or not pings:
        began = time.perf_counter()
        assert client.ask({"id": 3000 + len(pings), "op": "ping"})["ok"]
        pings.append((time.perf_counter() - began) * 1000)
        time.sleep(0.02)
    drained_s = time.perf_counter() - began_all
    sender.join(5)  # it has already ended: the loop above ran while it was alive
    assert not errors, errors
    answers = {reply["id"]: reply for reply in (msgpack.unpackb(body, raw=False) for body in bodies)}
    assert len(answers) == len(requests)
    assert all(r["ok"] and r["status"] == "found" for r in answers.values())
    return pings, answers, drained_s


def test_the_loop_answers_while_workers_run_the_worst_searches(big_server, context):
    endpoint = big_server.endpoint
    client = Dealer(context, endpoint)
    try:
        # Early-out over the wire: the round trip of an unreachable goal on the big map.
        round_trips = []
        for i in range(20):
            began = time.perf_counter()
            reply = client.ask({"id": i, "op": "path", "map": "split", "start": list(CORNER), "goal": list(POCKET)})
            round_trips.append((time.perf_counter() - began) * 1000)
            assert reply["status"] == "no_path" and reply["expanded"] == 0
        # Both workers busy with full rings searches, and a queue of neighbours across a
        # ring wall (as close as an inline trip, with a long detour): the loop must keep
        # answering ping at once, on another connection.
        heavy, tricky = 6, 200
        requests = [{"id": 1000 + i, "op": "path", "map": "rings", "start": list(CORNER), "goal": list(CENTRE)}
                    for i in range(heavy)]
        requests += [{"id": 2000 + i, "op": "path", "map": "rings", "start": [200 + i, 100],
                      "goal": [200 + i, 103]} for i in range(tricky)]
        assert 103 - 100 <= INLINE_DISTANCE
        pings, _, drained_s = pings_during(endpoint, client, requests)
        # The same searches asking for every cell of the path (smooth "none"): 260 000
        # points, a 2.6 MB reply each, encoded by a compiled kernel without the GIL
        # (pathserver.core.wire), so the loop keeps answering meanwhile.
        every_cell = [{**request, "smooth": "none"} for request in requests[:heavy]]
        big_pings, big_answers, big_drained_s = pings_during(endpoint, client, every_cell)
        assert all(len(reply["path"]) > 250_000 for reply in big_answers.values())
    finally:
        client.close()
    record("bounds", f"over the socket: unreachable goal on {N}x{N}, round trip median "
                     f"{statistics.median(round_trips):.2f} ms, max {max(round_trips):.2f} ms")
    record("bounds", f"{heavy} full rings searches + {tricky} short-looking detours, all answered in "
                     f"{drained_s:.1f} s: {len(pings)} pings meanwhile, median {statistics.median(pings):.1f} ms, "
                     f"max {max(pings):.1f} ms")
    record("bounds", f"{heavy} full rings searches with smooth 'none' (2.6 MB replies), answered in "
                     f"{big_drained_s:.1f} s: {len(big_pings)} pings meanwhile, median "
                     f"{statistics.median(big_pings):.1f} ms, max {max(big_pings):.1f} ms")
    assert statistics.median(round_trips) < EARLY_OUT_MS
    # A stalled loop (the GIL held while replies are encoded, as before core.wire) delays
    # every ping that meets a big reply: several over the bound. One slow ping alone is the
    # machine descheduling the process (seen at 254 ms on a loaded 2-core box).
    for name, values in (("pings", pings), ("big_pings", big_pings)):
        slow = sorted(value for value in values if value >= 250.0)
        assert len(slow) <= 1 and max(values) < 1000.0, f"{name} over 250 ms: {slow}"


@pytest.fixture(scope="module")
def largest_movingai(movingai_dir, compiled):
    path = movingai_dir / "sc1" / "AcrosstheCape.map"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return GridMap.load(path)


def test_unreachable_goal_on_the_largest_benchmark_map(largest_movingai):
    gridmap = largest_movingai
    labels = gridmap.layer(1).labels
    sizes = np.bincount(labels.ravel())
    sizes[0] = 0
    big, small = int(np.argmax(sizes)), int(np.argsort(sizes)[-2])
    assert sizes[small] > 0, "one component only"
    ys, xs = np.nonzero(labels == big)
    start = (int(xs[0]), int(ys[0]))
    ys, xs = np.nonzero(labels == small)
    goal = (int(xs[0]), int(ys[0]))
    median_ms, worst_ms, (status, expanded, _) = timed(gridmap, start, goal)
    record("bounds", f"AcrosstheCape {gridmap.width}x{gridmap.height}: goal in another component: {status}, "
                     f"expanded {expanded}, median {median_ms:.2f} ms, max {worst_ms:.2f} ms")
    assert status == "no_path" and expanded == 0 and median_ms < EARLY_OUT_MS


def test_longest_problem_of_the_one_wide_maze(movingai_dir, compiled):
    from pathserver.maps.scen import load_scen

    path = movingai_dir / "maze" / "maze512-1-0.map"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    gridmap = GridMap.load(path)
    gridmap.start_jump_table(gridmap.layer(1))  # timed from one state: see big_maps
    assert gridmap.layer(1).wait_jump_table(timeout=120)
    hardest = max(load_scen(path.with_name(path.name + ".scen")), key=lambda s: s.optimal_length)
    median_ms, worst_ms, (status, expanded, _) = timed(gridmap, hardest.start, hardest.goal)
    capped_ms, _, (capped, _, _) = timed(gridmap, hardest.start, hardest.goal, max_expansions=BUDGET)
    record("bounds", f"maze512-1-0 longest problem (optimal {hardest.optimal_length:.0f}): {status}, "
                     f"expanded {expanded}, median {median_ms:.1f} ms; with max_expansions {BUDGET}: "
                     f"{capped}, {capped_ms:.1f} ms")
    assert status == "found" and median_ms < FULL_SEARCH_MS
    assert capped_ms < BUDGET_MS
