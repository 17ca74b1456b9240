"""When a ``paths`` batch should be searched over all cores: in turn against threads, side by
side in one run, and what ``find_paths`` chooses (``pathserver.grid.search.THREADS_FROM_S``).

    python bench/batch_threads.py                         # den520d and Boston_0_512, ~1 min
    python bench/batch_threads.py --map den520d --json out.json

For each map, batches of 200 scenario problems: spread over every bucket (the problems of
``bench/godot_astar.py``), from the shortest third of the buckets, and from the longest
third; each as a packed ``paths`` request, every cell (``smooth: "none"``) and string-pulled
(``los``), answered by the server's pipeline in this process
(``pathserver.server.handlers.respond``: decode, search, encode; no transport). Each batch
is timed with ``find_paths`` forced to search in turn, forced onto threads, and left to
choose; a figure is the fastest of ``--rounds`` runs, in µs a path. ``chosen / best`` says
how far the choice is from the better of the two (1.00: it chose the better).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import msgpack
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _movingai as movingai  # noqa: E402
from _docs import add_argument as add_write_docs, write_section  # noqa: E402

BATCH = 200
MODES = {"in turn": float("inf"), "threads": 0.0}


def batch_body(name: str, problems: list, smooth: bool) -> bytes:
    starts = np.array([(p.sx, p.sy) for p in problems], dtype="<i4").tobytes()
    goals = np.array([(p.gx, p.gy) for p in problems], dtype="<i4").tobytes()
    body = {"id": 1, "op": "paths", "map": name, "unit_size": 1, "space": "grid", "packed": True,
            "starts": starts, "goals": goals}
    if not smooth:
        body["smooth"] = "none"
    return msgpack.packb(body)


def problem_sets(problems: list, seed: int) -> dict[str, list]:
    """The map's batches: spread over the buckets, and from the shortest and longest thirds."""
    buckets = sorted({p.bucket for p in problems})
    third = max(1, len(buckets) // 3)
    rng = np.random.default_rng(seed)

    def drawn(chosen: set) -> list:
        pool = [p for p in problems if p.bucket in chosen]
        return [pool[i] for i in rng.permutation(len(pool))[:BATCH]]

    return {"spread": movingai.bucket_spread(problems, BATCH, seed),
            "shortest third": drawn(set(buckets[:third])), "longest third": drawn(set(buckets[-third:]))}


def fastest_us(respond, body: bytes, entries: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter()
        respond(body)
        best = min(best, time.perf_counter() - began)
    return best / entries * 1e6


def run_map(name: str, map_path: Path, args) -> list[dict]:
    from pathserver.grid import search
    from pathserver.maps.registry import MapRegistry
    from pathserver.server.handlers import respond

    walkable = movingai.read_walkable(map_path)
    problems = movingai.read_scenarios(map_path, walkable)
    rows = []
    with tempfile.TemporaryDirectory(prefix="pathserver-batch-threads-") as scratch:
        shutil.copy(map_path, Path(scratch) / map_path.name)
        registry = MapRegistry(scratch)
        registry.load_all()
        chosen_from = search.THREADS_FROM_S
        try:
            for label, chosen in problem_sets(problems, args.seed).items():
                for smooth in (False, True):
                    body = batch_body(name, chosen, smooth)
                    reply = msgpack.unpackb(respond(body, registry), strict_map_key=False)
                    if reply.get("ok") is not True:
                        raise SystemExit(f"{name} {label}: the batch failed: {reply.get('error')}")
                    figures = {}
                    for mode, threads_from in (*MODES.items(), ("chosen", chosen_from)):
                        search.THREADS_FROM_S = threads_from
                        figures[mode] = fastest_us(lambda b: respond(b, registry), body, len(chosen), args.rounds)
                    best = min(figures["in turn"], figures["threads"])
                    rows.append({"map": name, "batch": label, "smooth": "los" if smooth else "none", **figures,
                                 "chosen_over_best": figures["chosen"] / best})
        finally:
            search.THREADS_FROM_S = chosen_from
            registry.stop()
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--movingai", type=Path, default=movingai.DEFAULT_MOVINGAI)
    parser.add_argument("--map", default="den520d,Boston_0_512", help="map names joined by commas")
    parser.add_argument("--rounds", type=int, default=15, help="runs of each batch (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the rows as JSON")
    add_write_docs(parser)
    args = parser.parse_args(argv)
    maps = movingai.named_maps(args.movingai, args.map)
    if maps is None:
        return 2
    from pathserver import kernel_cache

    kernel_cache.configure()
    from pathserver.grid.search import THREADS_FROM_S
    from pathserver.server.app import SWITCH_INTERVAL_S

    sys.setswitchinterval(SWITCH_INTERVAL_S)  # the server's
    rows = [row for name, path in maps.items() for row in run_map(name, path, args)]
    title = (f"µs a path, batches of {BATCH}, fastest of {args.rounds}; find_paths chooses threads from "
             f"{THREADS_FROM_S * 1e6:g} µs a query")
    print(title + "\n")
    print(f"{'map':<14}{'batch':<16}{'smooth':<8}{'in turn':>9}{'threads':>9}{'chosen':>9}{'chosen / best':>15}")
    for row in rows:
        print(f"{row['map']:<14}{row['batch']:<16}{row['smooth']:<8}{row['in turn']:>9.2f}{row['threads']:>9.2f}"
              f"{row['chosen']:>9.2f}{row['chosen_over_best']:>15.2f}")
    if args.write_docs:
        table = [title + ":", "", "| map | batch | smooth | in turn | threads | chosen | chosen / best |",
                 "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
        table += [f"| {r['map']} | {r['batch']} | {r['smooth']} | {r['in turn']:.2f} | {r['threads']:.2f} | "
                  f"{r['chosen']:.2f} | {r['chosen_over_best']:.2f} |" for r in rows]
        write_section("batch_threads", "\n".join(table))
    if args.json:
        args.json.write_text(json.dumps({"threads_from_us": THREADS_FROM_S * 1e6, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
