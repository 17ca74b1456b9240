"""relay.lay_avoided against building the bitmaps anew: the stop bitmaps of a unit grid,
brought to the grid with a request's avoided cells blocked, equal those jump_bitmaps
builds for that grid, and nothing else changes; the overlay marks every changed word
and says which lines hold a redone cell, and where; lift_avoided gives the originals
back and clears the marks."""

import numpy as np
import pytest

import naive
from pathserver.core.avoid import block_anchors
from pathserver.core.jps import bitmap_words, jump_bitmaps
from pathserver.core.relay import lay_avoided, lift_avoided, new_overlay, overlay_columns, overlay_rows


def random_boxes(rng, width, height, count):
    boxes = []
    for _ in range(count):
        x, y = int(rng.integers(width)), int(rng.integers(height))
        w, h = (1, 1) if rng.random() < 0.7 else (int(rng.integers(1, 5)), int(rng.integers(1, 4)))
        boxes.append((x, y, min(x + w, width), min(y + h, height)))
    return np.array(boxes, dtype=np.int64).reshape(-1, 4)


def stop_words(width, height):
    """A mask of the words of jump_bitmaps that hold stops (the rest hold "ahead" bits)."""
    rows, columns = bitmap_words(height, width), bitmap_words(width, height)
    mask = np.zeros(4 * (rows + columns), dtype=bool)
    mask[:2 * rows] = True
    mask[4 * rows:4 * rows + 2 * columns] = True
    return mask


@pytest.mark.parametrize("log_size", [1 << 16, 3])
def test_laid_stops_equal_those_built_anew_and_lift_back(log_size):
    rng = np.random.default_rng(17)
    changed = 0
    for _ in range(150):
        width, height = int(rng.integers(1, 70)), int(rng.integers(1, 40))
        walkable = naive.random_grid(rng, width, height, float(rng.choice([0.0, 0.1, 0.3])))
        unit = int(rng.integers(1, 4))
        cells = naive.passable_for_unit(walkable, unit, unit).astype(np.uint8)
        # Overlapping boxes too: each cell is done once, and marked once.
        boxes = random_boxes(rng, width, height, int(rng.integers(0, 12)))
        if len(boxes) and rng.random() < 0.3:
            boxes = np.concatenate([boxes, boxes[:2]])
        original = jump_bitmaps(cells)
        bitmaps = original.copy()
        blocked = cells.copy()
        block_anchors(blocked, boxes, unit, unit)
        log = np.zeros(log_size, dtype=np.int64)
        touched = np.zeros((width * height + 63) // 64, dtype=np.uint64)
        overlay = new_overlay(height, width)
        count = lay_avoided(bitmaps, blocked, boxes, unit, unit, touched, overlay, log)
        stops = stop_words(width, height)
        assert (bitmaps[stops] == jump_bitmaps(blocked)[stops]).all()
        assert (bitmaps[~stops] == original[~stops]).all()
        assert not touched.any()
        # The marks: every changed word, each noted once. The lines: those holding an
        # anchor (a cell whose footprint overlaps a box) or a cell one step from one, as
        # prefix counts, and on each the first of those cells and one past the last.
        marks_end = overlay_rows(height, width)
        marks = np.unpackbits(overlay[:marks_end].view(np.uint8), bitorder="little")[:len(original)].astype(bool)
        expected = bitmaps != original
        assert count == expected.sum() and (marks == expected).all()
        if count <= log_size:
            assert sorted(log[:count].tolist()) == np.flatnonzero(expected).tolist()
        near = np.zeros((height, width), dtype=bool)
        for x0, y0, x1, y1 in boxes.tolist():
            anchors = naive.overlapping(naive.covered((height, width), rects=[(x0, y0, x1 - x0, y1 - y0)]), unit, unit)
            for y, x in np.argwhere(anchors):
                near[max(y - 1, 0):y + 2, max(x - 1, 0):x + 2] = True
        for at, grid, length in ((overlay_rows(height, width), near, width),
                                 (overlay_columns(height, width), near.T, height)):
            lines = len(grid)
            flags = grid.any(axis=1)
            assert overlay[at:at + lines + 1].tolist() == [0] + np.cumsum(flags).tolist()
            first = [int(np.argmax(line)) if line.any() else length for line in grid]
            end = [int(len(line) - np.argmax(line[::-1])) if line.any() else 0 for line in grid]
            assert overlay[at + lines + 1:at + 2 * lines + 1].tolist() == first
            assert overlay[at + 2 * lines + 1:at + 3 * lines + 1].tolist() == end
        changed += count > 0
        lift_avoided(bitmaps, original, overlay, log, count)
        assert (bitmaps == original).all() and not overlay[:marks_end].any()
    assert changed >= 100
