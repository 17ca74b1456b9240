"""Memory per cached unit size, in bytes per map cell (target <= 3 bytes per cell per size,
and auto's JPS+ jump table, 8 bytes a cell, beside it; on maps with terrain costs, A*'s
landmarks, 128 bytes a cell).

    python bench/memory.py                  # a few Moving AI maps + a 2048x2048 map
    python bench/memory.py --json

Three views of the same thing, measured side by side:

- ``nbytes``: what :attr:`UnitLayer.nbytes` reports for each size, and ``owned``: the
  arrays the layer alone holds (a 1x1 layer shares the map's cost index, and a
  uniform-cost map has none), with the array that dominates;
- tracemalloc: bytes still allocated after building the layer (retained) and the peak
  while building it (transient scratch included); numpy reports its buffers to tracemalloc;
- RSS: the process's resident set growth after building sizes 1..8 on a 2048x2048 map,
  divided by cells and sizes: what the operating system sees, allocator slack included.

Also printed for scale: the per-map arrays every size shares (walkable, clearance, cost,
and on maps with terrain costs the cost index and table).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tracemalloc
from pathlib import Path

import numpy as np

from pathserver import kernel_cache

# First, before anything imports the kernels: numba picks their cache folder then.
kernel_cache.configure()

from pathserver import GridMap  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MOVINGAI = REPO.parent / "shared" / "movingai"
MAPS = ("dao/den520d.map", "dao/brc202d.map", "bg512/AR0011SR.map", "random/random512-40-0.map",
        "sc1/Aftershock.map")
SIZES = (1, 2, 3, 4, (2, 3))
TARGET_BYTES_PER_CELL = 3.0


def rss_bytes() -> int:
    """Resident set size now (Linux /proc; elsewhere the peak from getrusage)."""
    try:
        with open("/proc/self/statm") as statm:
            import os

            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        scale = 1 if sys.platform == "darwin" else 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def layer_arrays(layer, gridmap: GridMap) -> dict:
    """bytes per array the layer owns (a 1x1 or uniform layer shares the map's cost index).
    The block-local component grid doubles as the passability grid; JPS's bitmaps and
    the 8-connected components are built on first use."""
    arrays = {f"component cells ({layer.cells.dtype}, also passability)": layer.cells.nbytes,
              f"component table ({layer.comps.dtype})": layer.comps.nbytes}
    if layer.cost_index is not gridmap.cost_index:
        arrays[f"cost index ({layer.cost_index.dtype})"] = layer.cost_index.nbytes
    for cells8, comps8 in layer._cells8:
        arrays["8-connected cells + table"] = cells8.nbytes + comps8.nbytes
    if layer._jump_bits:
        arrays["JPS bitmaps (uint64)"] = layer._jump_bits[0].nbytes
    return arrays


def measure_map(gridmap: GridMap) -> dict:
    cells = gridmap.width * gridmap.height
    shared = {"walkable": gridmap.walkable.nbytes, "clearance": gridmap.clearance.nbytes, "cost": gridmap.cost.nbytes}
    if not gridmap.uniform_cost:
        shared["cost index"] = gridmap.cost_index.nbytes
        shared["cost table"] = gridmap.cost_table.nbytes
    rows = []
    for size in SIZES:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        layer = gridmap.layer(size)
        if layer.uniform:
            layer.jump_bits()  # what a JPS query adds
        retained, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        # auto's JPS+ table (precomputation, 8 bytes a cell), built on uniform-cost layers:
        # counted apart from the layer's own arrays.
        plus = 0.0
        if layer.uniform and layer.start_jump_table() and layer.wait_jump_table(300):
            plus = layer.jump_table().nbytes / cells
            # With its goal bounds where it gets them (small maps): a row index a cell and
            # 64 bytes a jump point.
            if layer.start_bounds() and layer.wait_bounds(300):
                plus += sum(array.nbytes for array in layer.bounds()) / cells
        # A*'s landmarks (128 bytes a cell), built on layers with terrain costs: likewise.
        landmarks = 0.0
        if not layer.uniform and layer.start_landmarks() and layer.wait_landmarks(300):
            landmarks = layer.landmarks().nbytes / cells
        arrays = layer_arrays(layer, gridmap)
        dominant = max(arrays, key=arrays.get)
        rows.append({
            "unit": size if isinstance(size, int) else f"{size[0]}x{size[1]}",
            "nbytes_per_cell": round(layer.nbytes / cells, 3),
            "jps_plus_per_cell": round(plus, 3),
            "landmarks_per_cell": round(landmarks, 3),
            "owned_per_cell": round(sum(arrays.values()) / cells, 3),
            "traced_retained_per_cell": round((retained - before) / cells, 3),
            "traced_peak_per_cell": round((peak - before) / cells, 3),
            "arrays_per_cell": {k: round(v / cells, 3) for k, v in arrays.items()},
            "dominant": dominant,
        })
    return {"name": gridmap.name, "size": f"{gridmap.width}x{gridmap.height}", "cells": cells,
            "uniform_cost": gridmap.uniform_cost,
            "shared_per_cell": {k: round(v / cells, 3) for k, v in shared.items()}, "layers": rows}


def measure_rss(side: int, sizes: int) -> dict:
    """RSS growth for layers 1..``sizes`` on a ``side`` x ``side`` map with scattered walls."""
    rng = np.random.default_rng(3)
    walkable = rng.random((side, side)) > 0.15
    gridmap = GridMap(walkable, name=f"random{side}", cache_sizes=sizes)
    gc.collect()
    before = rss_bytes()
    layers = [gridmap.layer(k) for k in range(1, sizes + 1)]
    gc.collect()
    after = rss_bytes()
    cells = side * side
    return {"map": f"{side}x{side} random 15% walls", "sizes": sizes,
            "rss_growth_per_cell_per_size": round((after - before) / cells / sizes, 3),
            "owned_per_cell_per_size": round(sum(sum(layer_arrays(layer, gridmap).values()) for layer in layers)
                                             / cells / sizes, 3)}


def report(results: dict) -> str:
    lines = [f"memory per cached unit size (target <= {TARGET_BYTES_PER_CELL:g} bytes/cell/size)", ""]
    lines.append(f"{'map':<16} {'size':>9} {'unit':>5} {'nbytes':>7} {'owned':>7} {'traced':>7} {'peak':>7}"
                 f" {'JPS+':>5} {'ALT':>5}  dominant array")
    for entry in results["maps"]:
        for row in entry["layers"]:
            share = row["arrays_per_cell"][row["dominant"]]
            lines.append(f"{entry['name']:<16} {entry['size']:>9} {row['unit']:>5} {row['nbytes_per_cell']:>7.2f} "
                         f"{row['owned_per_cell']:>7.2f} "
                         f"{row['traced_retained_per_cell']:>7.2f} {row['traced_peak_per_cell']:>7.2f} "
                         f"{row['jps_plus_per_cell']:>5.2f} {row['landmarks_per_cell']:>5.2f}  "
                         f"{row['dominant']} {share:.2f}")
    lines.append("  (bytes per cell: nbytes = UnitLayer.nbytes; owned = the arrays only this layer holds;"
                 " traced = tracemalloc retained after the build; peak = tracemalloc peak during it;"
                 " JPS+ = auto's jump table (and its goal bounds on small maps), built in the background on"
                 " uniform-cost layers, and ALT = A*'s"
                 " landmarks, likewise on layers with terrain costs: in nbytes, not in owned)")
    for pick in (True, False):
        entry = next((e for e in results["maps"] if e["uniform_cost"] is pick), None)
        if entry is not None:
            lines.append(f"  shared by every size, per map ({entry['name']}): "
                         f"{', '.join(f'{k} {v:g}' for k, v in entry['shared_per_cell'].items())} bytes/cell")
    rss = results["rss"]
    lines.append("")
    lines.append(f"RSS on {rss['map']}, sizes 1..{rss['sizes']}: {rss['rss_growth_per_cell_per_size']:.2f} bytes/cell/size "
                 f"(owned arrays say {rss['owned_per_cell_per_size']:.2f})")
    lines.append("")
    for label, pick in (("uniform-cost maps", True), ("maps with terrain costs", False)):
        rows = [row for entry in results["maps"] if entry["uniform_cost"] is pick and not entry.get("fallback")
                for row in entry["layers"]]
        if not rows:
            continue
        worst = max(rows, key=lambda row: row["owned_per_cell"])
        verdict = "PASS" if worst["owned_per_cell"] <= TARGET_BYTES_PER_CELL else "MISS"
        lines.append(f"{label}: up to {worst['owned_per_cell']:.2f} bytes/cell/size owned (unit {worst['unit']}), "
                     f"target {TARGET_BYTES_PER_CELL:g}: {verdict}; dominated by {worst['dominant']}")
    plus_rows = [row for entry in results["maps"] for row in entry["layers"] if row["jps_plus_per_cell"]]
    if plus_rows:
        worst = max(plus_rows, key=lambda row: row["owned_per_cell"] + row["jps_plus_per_cell"])
        lines.append(f"with auto's JPS+ table (and goal bounds): up to {worst['owned_per_cell'] + worst['jps_plus_per_cell']:.2f} "
                     f"bytes/cell/size (the table {worst['jps_plus_per_cell']:.2f} of it)")
    alt_rows = [row for entry in results["maps"] for row in entry["layers"] if row["landmarks_per_cell"]]
    if alt_rows:
        worst = max(alt_rows, key=lambda row: row["owned_per_cell"] + row["landmarks_per_cell"])
        lines.append(f"with A*'s landmarks: up to {worst['owned_per_cell'] + worst['landmarks_per_cell']:.2f} "
                     f"bytes/cell/size (the landmarks {worst['landmarks_per_cell']:.2f} of it)")
    for entry in results["maps"]:
        if entry.get("fallback"):
            worst = max(entry["layers"], key=lambda row: row["owned_per_cell"])
            lines.append(f"  (not judged: {entry['name']}, {entry['fallback']}: up to "
                         f"{worst['owned_per_cell']:.2f} bytes/cell/size)")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--movingai", type=Path, default=DEFAULT_MOVINGAI)
    parser.add_argument("--rss-side", type=int, default=2048, help="side of the RSS test map (default 2048)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    maps = [args.movingai / m for m in MAPS if (args.movingai / m).is_file()]
    if not maps:
        print(f"bench/memory.py: no Moving AI maps under {args.movingai} (give --movingai)", file=sys.stderr)
        return 2
    # Compile (or load) the layer kernels first, so compiler allocations stay out of tracemalloc.
    warm = GridMap.from_ascii("......\n.2#...\n......\n......\n")
    warm_wide = GridMap(np.ones((4, 80), dtype=bool), cost=1.0 + np.arange(320.0).reshape(4, 80))  # uint16 index
    for size in SIZES:
        warm.layer(size)
        warm_wide.layer(size)
    # Maps with terrain costs too: per-size cost indices only exist there. The second has
    # more distinct costs than a uint8 index can name, the rare case that widens it.
    rng = np.random.default_rng(7)
    costly = GridMap(rng.random((512, 512)) > 0.2, cost=rng.integers(1, 4, (512, 512)).astype(np.float64),
                     name="costs512")
    many = GridMap(rng.random((512, 512)) > 0.2, cost=1.0 + rng.integers(0, 1000, (512, 512)) / 8,
                   name="costs512-1000")
    many_entry = measure_map(many)
    many_entry["fallback"] = f"{len(many.cost_table)} distinct costs, {many.cost_index.dtype} index"
    results = {"maps": [measure_map(GridMap.load(path)) for path in maps] + [measure_map(costly), many_entry],
               "rss": measure_rss(args.rss_side, 8)}
    print(json.dumps(results) if args.json else report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
