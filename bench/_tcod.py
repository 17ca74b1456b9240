"""python-tcod as the benches' baseline: the exact no-corner-cutting graph of the Moving AI
rules, built once here for ``core.py`` (uniform maps) and ``weighted.py`` (terrain costs)."""

from __future__ import annotations

import numpy as np

#: tcod's edge costs are integers: a straight step 100000, a diagonal 141421.
TCOD_STRAIGHT = 100_000
TCOD_DIAGONAL = 141_421


def shifted(grid: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """``out[y, x] = grid[y + dy, x + dx]``, False outside the grid."""
    out = np.zeros_like(grid)
    height, width = grid.shape
    out[max(0, -dy) : height - max(0, dy), max(0, -dx) : width - max(0, dx)] = grid[
        max(0, dy) : height - max(0, -dy), max(0, dx) : width - max(0, -dx)
    ]
    return out


def pathfinder(tcod_path, walkable: np.ndarray, node_cost: np.ndarray):
    """A ``tcod.path.Pathfinder`` on the 8-connected graph without corner cutting:
    ``node_cost`` (int, (H, W), 0 on blocked cells) times the step's cost to enter a
    cell, the octile heuristic (admissible: every walkable cell costs at least 1)."""
    graph = tcod_path.CustomGraph(walkable.shape)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dx == 0 and dy == 0:
                continue
            if dx != 0 and dy != 0:
                # The condition is checked at the edge's source cell (y, x): both
                # orthogonal cells the diagonal passes between must be walkable.
                condition = shifted(walkable, 0, dx) & shifted(walkable, dy, 0)
                graph.add_edge((dy, dx), TCOD_DIAGONAL, cost=node_cost, condition=condition.astype(np.int8))
            else:
                graph.add_edge((dy, dx), TCOD_STRAIGHT, cost=node_cost)
    graph.set_heuristic(cardinal=TCOD_STRAIGHT, diagonal=TCOD_DIAGONAL)
    return tcod_path.Pathfinder(graph)
