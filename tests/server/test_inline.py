"""The loop's own answers to short ``path`` trips (path_ops.run_bounded): with avoided
cells too, when the path without them mends round them within the budget, and then with
the very reply a worker gives; never when the search would need more."""

import msgpack
import numpy as np
import pytest

from pathserver.grid.gridmap import GridMap
from pathserver.maps.registry import MapRegistry
from pathserver.server import handlers, path_ops
from pathserver.server.loop import INLINE_DISTANCE, INLINE_EXPANSIONS


@pytest.fixture
def registry(tmp_path):
    walkable = np.ones((128, 128), dtype=bool)
    walkable[40:90, 64] = False
    gridmap = GridMap(walkable)
    layer = gridmap.layer(1)
    gridmap.start_jump_table(layer)
    assert layer.wait_jump_table(60)
    registry = MapRegistry(tmp_path)
    registry.load_all()
    registry.put_map("open", gridmap)
    yield registry
    registry.stop()


def both(registry, **fields):
    """(the loop's reply or None, the worker's reply) to one ``path`` request."""
    body = msgpack.packb({"id": 3, "op": "path", "map": "open", "line_of_sight": False, **fields})
    request, _, _ = handlers.read_request(body)
    assert request is not None
    inline = path_ops.run_bounded(request, registry, INLINE_EXPANSIONS, INLINE_DISTANCE)
    full, _ = handlers.run(request, registry)
    return None if inline is None else inline[0], full


#: The longest side of the trips tried: all on the 128 x 128 map.
TRIP = min(INLINE_DISTANCE, 28)


def test_short_trips_with_avoided_cells(registry):
    answered = 0
    rng = np.random.default_rng(5)
    for _ in range(40):
        sx, sy = (int(v) for v in rng.integers(0, 100, 2))
        gx, gy = sx + int(rng.integers(5, TRIP)), sy + int(rng.integers(0, TRIP))
        plain = msgpack.unpackb(both(registry, start=[sx, sy], goal=[gx, gy])[1])
        cells = [plain["path"][len(plain["path"]) // 2]] + [[int(x), int(y)] for x, y in rng.integers(0, 128, (20, 2))]
        inline, full = both(registry, start=[sx, sy], goal=[gx, gy], avoid={"cells": cells})
        if inline is not None:
            assert inline == full
            answered += 1
    assert answered >= 20
    # Past the budget, or round a wall of avoided cells no detour of the plain cost
    # passes: the worker's.
    far = both(registry, start=[60, 20], goal=[68, 20], avoid={"cells": [[64, y] for y in range(0, 40)]})
    assert far[0] is None and msgpack.unpackb(far[1])["status"] == "found"
    # Rectangles, and more cells than the loop reads: the worker's.
    assert both(registry, start=[0, 0], goal=[9, 9], avoid={"rects": [[5, 5, 1, 1]]})[0] is None
    many = [[x, 127] for x in range(128)] * 9
    assert both(registry, start=[0, 0], goal=[9, 9], avoid={"cells": many})[0] is None
    # Nothing in the way: the same reply as the worker's, with the cells read.
    inline, full = both(registry, start=[0, 0], goal=[9, 9], avoid={"cells": [[100, 100]]})
    assert inline == full
