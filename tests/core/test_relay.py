"""relay.lay_avoided against building the bitmaps anew: the online JPS's bitmaps of a
unit grid, brought to the grid with a request's avoided cells blocked, equal
jump_bitmaps of that grid; lift_avoided gives the originals back."""

import numpy as np
import pytest

import naive
from pathserver.core.avoid import block_anchors
from pathserver.core.jps import jump_bitmaps
from pathserver.core.relay import lay_avoided, lift_avoided


def random_boxes(rng, width, height, count):
    boxes = []
    for _ in range(count):
        x, y = int(rng.integers(width)), int(rng.integers(height))
        w, h = (1, 1) if rng.random() < 0.7 else (int(rng.integers(1, 5)), int(rng.integers(1, 4)))
        boxes.append((x, y, min(x + w, width), min(y + h, height)))
    return np.array(boxes, dtype=np.int64).reshape(-1, 4)


@pytest.mark.parametrize("log_size", [1 << 16, 3])
def test_laid_bitmaps_equal_those_built_anew_and_lift_back(log_size):
    rng = np.random.default_rng(17)
    changed = 0
    for _ in range(150):
        width, height = int(rng.integers(1, 70)), int(rng.integers(1, 40))
        walkable = naive.random_grid(rng, width, height, float(rng.choice([0.0, 0.1, 0.3])))
        unit = int(rng.integers(1, 4))
        cells = naive.passable_for_unit(walkable, unit, unit).astype(np.uint8)
        boxes = random_boxes(rng, width, height, int(rng.integers(0, 12)))
        original = jump_bitmaps(cells)
        bitmaps = original.copy()
        blocked = cells.copy()
        block_anchors(blocked, boxes, unit, unit)
        log = np.zeros(log_size, dtype=np.int64)
        count = lay_avoided(bitmaps, blocked, boxes, unit, unit, log)
        assert (bitmaps == jump_bitmaps(blocked)).all()
        changed += count > 0
        lift_avoided(bitmaps, original, log, count)
        assert (bitmaps == original).all()
    assert changed >= 100
