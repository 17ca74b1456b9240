"""Integer status codes shared by the kernels (outcomes are never exceptions in numba).

Search kernels return one of the ``SEARCH_*`` codes; the query kernel returns one of the
``QUERY_*`` codes and a bit set of ``FLAG_*`` details, in the spirit of Detour's status.
"""

SEARCH_FOUND = 0
SEARCH_NO_PATH = 1
#: ``max_expansions`` reached before the goal; the best node so far is reported.
SEARCH_BUDGET = 2

QUERY_FOUND = 0
QUERY_PARTIAL = 1
QUERY_NO_PATH = 2
QUERY_START_BLOCKED = 3
QUERY_GOAL_BLOCKED = 4
QUERY_SEARCH_LIMIT = 5
#: Not an answer: with avoided cells, the path on the grid without them could not be
#: mended round them (:mod:`pathserver.core.repair`), or not found (within a give-up
#: budget); search round all of them (see :func:`pathserver.core.query.solve`).
QUERY_UNMENDED = 6

FLAG_START_SNAPPED = 1
FLAG_GOAL_SNAPPED = 2
#: The straight line was clear: answered without searching.
FLAG_LINE_OF_SIGHT = 4
#: The goal lies in another component: rejected (or made partial) without searching.
FLAG_OTHER_COMPONENT = 8
FLAG_BUDGET_HIT = 16

DIAGONAL_NO_CORNER_CUTTING = 0
DIAGONAL_NEVER = 1
DIAGONAL_ALWAYS = 2
# A hex map's moves, one code a layout (Red Blob Games' offset coordinates): the four
# straight moves of a square grid and the two diagonals the cell's row (``-r``) or column
# (``-q``) parity gives, each a step of length 1. ``diagonal >= DIAGONAL_HEX`` is a hex map.
DIAGONAL_HEX_ODD_R = 3
DIAGONAL_HEX_EVEN_R = 4
DIAGONAL_HEX_ODD_Q = 5
DIAGONAL_HEX_EVEN_Q = 6
DIAGONAL_HEX = DIAGONAL_HEX_ODD_R
DIAGONAL_MASK = 7

HEURISTIC_OCTILE = 0
HEURISTIC_EUCLIDEAN = 1
HEURISTIC_MANHATTAN = 2
HEURISTIC_CHEBYSHEV = 3
#: The hex distance, in the layout of ``HEURISTIC_HEX + (diagonal - DIAGONAL_HEX)``.
HEURISTIC_HEX = 4
HEURISTIC_MASK = 7

ALGORITHM_ASTAR = 0
ALGORITHM_JPS = 1

SMOOTH_NONE = 0
SMOOTH_CORNERS = 1
SMOOTH_LOS = 2

# The option set of one query, packed into one int for :func:`pathserver.core.query.solve`
# (one argument to type-check instead of nine): the field's shift, and its width in bits.
MODE_DIAGONAL = 0  # 3 bits: DIAGONAL_*
MODE_HEURISTIC = 3  # 3 bits: HEURISTIC_*
MODE_SMOOTH = 6  # 2 bits: SMOOTH_*
MODE_ALGORITHM = 8  # 1 bit: ALGORITHM_*
MODE_SNAP = 9  # 1 bit
MODE_ALLOW_PARTIAL = 10  # 1 bit
MODE_LINE_OF_SIGHT = 11  # 1 bit
MODE_UNIFORM = 12  # 1 bit: every terrain cost is 1
MODE_USE_HEIGHTS = 13  # 1 bit
#: 1 bit: ``cells`` has a request's avoided cells blocked, ``plain_cells`` is the grid
#: before (set by the caller that blocked them, never by pack_mode).
MODE_AVOIDING = 14
#: 1 bit (with MODE_AVOIDING): search ``plain_cells``, the grid before: a path found on
#: it is the answer only if it mends on ``cells`` at its cost (see
#: :func:`pathserver.core.query.solve`).
MODE_RELAXED = 15


def pack_mode(diagonal, heuristic, smooth, algorithm, snap, allow_partial, line_of_sight, uniform, use_heights):
    """The ``mode`` int :func:`pathserver.core.query.solve` takes (flags are truthy)."""
    return (
        diagonal << MODE_DIAGONAL
        | heuristic << MODE_HEURISTIC
        | smooth << MODE_SMOOTH
        | algorithm << MODE_ALGORITHM
        | (1 if snap else 0) << MODE_SNAP
        | (1 if allow_partial else 0) << MODE_ALLOW_PARTIAL
        | (1 if line_of_sight else 0) << MODE_LINE_OF_SIGHT
        | (1 if uniform else 0) << MODE_UNIFORM
        | (1 if use_heights else 0) << MODE_USE_HEIGHTS
    )
