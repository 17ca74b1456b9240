"""What the edits of one map have set, kept so it can be put back: onto the map a joining
server loads, or onto a map file that reloads (the shared state, ``pathserver.editlog``).

An :class:`Overlay` marks the cells edits touched and holds the values (walkable, cost)
those cells have now, as the edited map has them. Put back onto the map it was recorded
on, it gives that map's cells exactly; onto another version of the map (a new file), the
edited cells keep their edited values and every other cell is the new version's.
"""

from __future__ import annotations

import zlib

import msgpack
import numpy as np

from pathserver.grid.gridmap import GridMap


def edit_boxes(rects, cells) -> list[tuple]:
    """An edit's cell rectangles ``(x, y, w, h)`` (or ``(x, y, w, h, floor)``), its single
    cells ``(x, y)`` (or ``(x, y, floor)``) as 1 x 1 ones, as :meth:`GridMap.edit_many`
    takes them."""
    return [tuple(int(v) for v in rect) for rect in rects] + [(int(c[0]), int(c[1]), 1, 1, *map(int, c[2:]))
                                                             for c in cells]


def map_crc(gridmap: GridMap) -> int:
    """CRC-32 of a map's cells (walkable, then cost): equal on two servers that agree."""
    return zlib.crc32(np.asarray(gridmap.cost, dtype="<f8").tobytes(),
                      zlib.crc32(np.packbits(gridmap.walkable).tobytes()))


class Overlay:
    """What the edits of one map have set: ``mask`` (bool, [y, x]) marks the cells they
    touched, ``walkable`` and ``cost`` (float64) the values those cells hold now. ``base``:
    the stream id of the upload the edits apply to, ``""`` for a map file."""

    def __init__(self, mask: np.ndarray, walkable: np.ndarray, cost: np.ndarray, base: str = ""):
        self.mask, self.walkable, self.cost, self.base = mask, walkable, cost, base

    @classmethod
    def empty(cls, height: int, width: int, base: str = "") -> "Overlay":
        return cls(np.zeros((height, width), bool), np.zeros((height, width), bool), np.ones((height, width)), base)

    def record(self, gridmap: GridMap, boxes) -> None:
        """Take the cells of ``boxes`` (clipped to the map) as ``gridmap`` holds them."""
        height, width = max(self.mask.shape[0], gridmap.height), max(self.mask.shape[1], gridmap.width)
        if (height, width) != self.mask.shape:
            grown = Overlay.empty(height, width, self.base)
            h, w = self.mask.shape
            grown.mask[:h, :w], grown.walkable[:h, :w], grown.cost[:h, :w] = self.mask, self.walkable, self.cost
            self.mask, self.walkable, self.cost = grown.mask, grown.walkable, grown.cost
        for x, y, w, h, *floor in boxes:
            # Clipped to its floor (floor 0 without one), as GridMap.edit_many clips it.
            top = gridmap.floor_top(floor[0]) if floor else 0
            x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + w, gridmap.width), min(y + h, gridmap.floor_height)
            y0, y1 = y0 + top, y1 + top
            if x0 < x1 and y0 < y1:
                cells = slice(y0, y1), slice(x0, x1)
                self.mask[cells] = True
                self.walkable[cells] = gridmap.walkable[cells]
                self.cost[cells] = gridmap.cost[cells]

    def apply_to(self, gridmap: GridMap, generation: int) -> GridMap:
        """``gridmap`` with the overlay's cells set (the part of it that lies on the map)."""
        h, w = min(self.mask.shape[0], gridmap.height), min(self.mask.shape[1], gridmap.width)
        walkable = gridmap.walkable.copy()
        cost = np.array(gridmap.cost, dtype=np.float64)
        mask = self.mask[:h, :w]
        walkable[:h, :w][mask] = self.walkable[:h, :w][mask]
        cost[:h, :w][mask] = self.cost[:h, :w][mask]
        uniform = bool(np.all(cost == 1.0))
        return GridMap(walkable, None if uniform else cost, gridmap.heights, origin=gridmap.origin,
                       cell_size=gridmap.cell_size, name=gridmap.name, generation=generation, tags=gridmap.tags,
                       tag_names=gridmap.tag_names, classes=gridmap.classes, shape=gridmap.shape, layout=gridmap.layout,
                       floors=gridmap.floors, links=gridmap.links)

    def to_bytes(self) -> bytes:
        return msgpack.packb({
            "base": self.base, "height": self.mask.shape[0], "width": self.mask.shape[1],
            "mask": np.packbits(self.mask).tobytes(), "walkable": np.packbits(self.walkable[self.mask]).tobytes(),
            "cost": self.cost[self.mask].astype("<f8").tobytes(),
        }, use_bin_type=True)

    @classmethod
    def from_bytes(cls, data: bytes) -> "Overlay":
        fields = msgpack.unpackb(data, raw=False)
        height, width = fields["height"], fields["width"]
        overlay = cls.empty(height, width, fields["base"])
        mask = np.unpackbits(np.frombuffer(fields["mask"], np.uint8), count=height * width).astype(bool)
        overlay.mask = mask.reshape(height, width)
        count = int(overlay.mask.sum())
        overlay.walkable[overlay.mask] = np.unpackbits(np.frombuffer(fields["walkable"], np.uint8), count=count)
        overlay.cost[overlay.mask] = np.frombuffer(fields["cost"], "<f8")
        return overlay
