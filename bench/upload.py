"""Benchmark uploads, the game's own world (issue 14), against loading the same map from a
file, in one run:

1. ``put_map`` of a 2048 x 2048 map with uniform costs, then the first ``path`` on it with
   unit sizes 1 and 3 (each builds its layer), measured from the client; the same map as a
   Moving AI ``.map`` file renamed into the served folder, timed from the rename until
   ``maps`` lists it, then the same two first paths. Targets: put + first paths <= 1 s.
2. The same for 4096 x 4096 (target <= 4 s).
3. ``get_map`` of the whole 2048 x 2048 map (target <= 200 ms).

    python bench/upload.py                 # about a minute
    python bench/upload.py --rounds 1 --json

The server is a ``pathserver serve`` subprocess on a temporary folder; the client is
``pathserver.client.Client`` in this process. Each round uploads under a new name, so every
"first path" really is the first on that map. The put's breakdown: *prepare* (the client
turning the arrays into the request body), *server* (``maps``' ``load_ms``: reading the
body, checking it, building the map), *transfer* (the rest: sending the body, the hand-off
to the upload thread, the reply), and the server's part split into *decode* (msgpack and
the checks), *clearance* (``GridMap(...)``) and *components* (the 1 x 1 layer) by timing
those same functions on the same body in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pathserver import kernel_cache

# First, before anything imports the kernels: numba picks their cache folder then.
kernel_cache.configure()

from pathserver.client import Client  # noqa: E402
from pathserver.client.messages import encode, put_map_fields  # noqa: E402
from pathserver.grid.gridmap import GridMap  # noqa: E402
from pathserver.loadtest import SpawnedServer  # noqa: E402
from pathserver.protocol.requests import UploadBody  # noqa: E402
from pathserver.server.handlers import read_upload  # noqa: E402
from pathserver.server.startup import warm_kernels  # noqa: E402

TARGETS_S = {2048: 1.0, 4096: 4.0}
TARGET_GET_MAP_MS = 200.0


def world(size: int, seed: int = 14) -> np.ndarray:
    """A ``size`` x ``size`` bool map (walkable True), indexed [y, x]: open ground with
    rectangular buildings of 4 to 40 cells a side covering about a fifth of it, as a
    game's town or base looks; uniform cost."""
    rng = np.random.default_rng(seed)
    walkable = np.ones((size, size), dtype=bool)
    for _ in range(size * size // 2500):
        w, h = rng.integers(4, 41, size=2)
        x, y = rng.integers(0, size - w), rng.integers(0, size - h)
        walkable[y:y + h, x:x + w] = False
    walkable[:16, :16] = walkable[-16:, -16:] = True  # the trips' ends
    return walkable


def movingai_text(walkable: np.ndarray) -> str:
    rows = np.where(walkable, ord("."), ord("@")).astype(np.uint8)
    body = b"\n".join(row.tobytes() for row in rows).decode()
    height, width = walkable.shape
    return f"type octile\nheight {height}\nwidth {width}\nmap\n{body}\n"


def first_paths(client: Client, name: str, size: int) -> dict:
    """The two first paths, corner to corner, unit sizes 1 and 3: seconds each."""
    times = {}
    for unit in (1, 3):
        started = time.perf_counter()
        reply = client.find_path(name, [8, 8], [size - 9, size - 9], unit)
        times[f"path_unit{unit}_s"] = time.perf_counter() - started
        if reply["status"] != "found":
            raise RuntimeError(f"no path on {name} for unit {unit}: {reply['status']}")
    return times


def map_entry(client: Client, name: str) -> dict | None:
    for entry in client.maps():
        if entry["name"] == name and entry["gen"] is not None:
            return entry
    return None


def upload_round(client: Client, walkable: np.ndarray, name: str) -> dict:
    size = walkable.shape[0]
    started = time.perf_counter()
    client.put_map(name, walkable)
    put_s = time.perf_counter() - started
    figures = {"put_s": put_s, **first_paths(client, name, size)}
    figures["server_s"] = map_entry(client, name)["load_ms"] / 1000.0
    figures["total_s"] = figures["put_s"] + figures["path_unit1_s"] + figures["path_unit3_s"]
    client.drop_map(name)
    return figures


def file_round(client: Client, walkable: np.ndarray, folder: Path, name: str, text: str) -> dict:
    """The same map as a file: written beside the folder, renamed into it (as an editor
    saves), timed until ``maps`` lists it, then the two first paths."""
    size = walkable.shape[0]
    staging = folder.parent / f"{name}.map"
    staging.write_text(text)
    started = time.perf_counter()
    os.replace(staging, folder / f"{name}.map")
    while map_entry(client, name) is None:
        if time.perf_counter() - started > 60:
            raise RuntimeError(f"{name}.map was not served within 60 s")
        time.sleep(0.002)
    served_s = time.perf_counter() - started
    figures = {"served_s": served_s, **first_paths(client, name, size)}
    figures["server_s"] = map_entry(client, name)["load_ms"] / 1000.0
    figures["total_s"] = served_s + figures["path_unit1_s"] + figures["path_unit3_s"]
    (folder / f"{name}.map").unlink()
    return figures


def breakdown(walkable: np.ndarray) -> dict:
    """The client's preparation and the server's parts, timed in this process on the body
    the client sends."""
    started = time.perf_counter()
    body = encode({"id": 1, "op": "put_map", **put_map_fields("probe", walkable, None, None, None, (0, 0), 1.0)})
    prepared = time.perf_counter()
    request = read_upload(UploadBody(1, body))
    decoded = time.perf_counter()
    gridmap = GridMap.from_cells(request.cells)
    built = time.perf_counter()
    gridmap.layer_for(1, 1)
    done = time.perf_counter()
    return {"prepare_s": prepared - started, "decode_s": decoded - prepared, "clearance_s": built - decoded,
            "components_s": done - built, "body_bytes": len(body)}


def median_of(rounds: list[dict]) -> dict:
    return {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}


def run(rounds: int) -> dict:
    warm_kernels()
    results = {"sizes": {}, "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}}
    with tempfile.TemporaryDirectory(prefix="pathserver-upload-") as temp:
        folder = Path(temp) / "maps"
        folder.mkdir()
        with SpawnedServer(folder) as server, Client(server.endpoint, timeout=60.0) as client:
            for size in (2048, 4096):
                walkable = world(size)
                text = movingai_text(walkable)
                uploads, files, parts = [], [], []
                for i in range(rounds):
                    # Alternating, so a slow spell of the machine lands on both.
                    uploads.append(upload_round(client, walkable, f"up{size}-{i}"))
                    files.append(file_round(client, walkable, folder, f"file{size}-{i}", text))
                    parts.append(breakdown(walkable))
                upload, file, part = median_of(uploads), median_of(files), median_of(parts)
                upload["transfer_s"] = max(0.0, upload["put_s"] - upload["server_s"] - part["prepare_s"])
                server_parts = part["decode_s"] + part["clearance_s"] + part["components_s"]
                for key in ("decode_s", "clearance_s", "components_s"):
                    # The server's own time, split in the proportions measured here.
                    upload[key.replace("_s", "_server_s")] = upload["server_s"] * part[key] / server_parts
                results["sizes"][size] = {
                    "upload": upload, "file": file, "in_process": part,
                    "ratio_to_file": upload["total_s"] / file["total_s"],
                    "target_s": TARGETS_S[size], "pass": upload["total_s"] <= TARGETS_S[size],
                    "walkable_share": float(walkable.mean()),
                }
            walkable = world(2048)
            client.put_map("read2048", walkable)
            times = []
            for _ in range(max(3, rounds)):
                started = time.perf_counter()
                got = client.get_map("read2048")
                times.append(time.perf_counter() - started)
                assert np.array_equal(got.walkable, walkable)
            results["get_map_2048"] = {"median_ms": statistics.median(times) * 1000.0, "min_ms": min(times) * 1000.0,
                                       "target_ms": TARGET_GET_MAP_MS,
                                       "pass": statistics.median(times) * 1000.0 <= TARGET_GET_MAP_MS}
    return results


def report(results: dict) -> None:
    ms = lambda s: f"{s * 1000.0:7.0f} ms"  # noqa: E731
    for size, figures in results["sizes"].items():
        up, file, part = figures["upload"], figures["file"], figures["in_process"]
        print(f"\n{size} x {size} ({figures['walkable_share']:.0%} walkable, put_map body "
              f"{part['body_bytes'] / 2**20:.1f} MiB), medians:")
        print(f"  put_map answered            {ms(up['put_s'])}   (prepare {ms(part['prepare_s']).strip()}, "
              f"transfer {ms(up['transfer_s']).strip()}, server {ms(up['server_s']).strip()}: decode "
              f"{ms(up['decode_server_s']).strip()}, clearance {ms(up['clearance_server_s']).strip()}, "
              f"components {ms(up['components_server_s']).strip()})")
        print(f"  first path, unit 1          {ms(up['path_unit1_s'])}")
        print(f"  first path, unit 3          {ms(up['path_unit3_s'])}")
        verdict = "PASS" if figures["pass"] else "MISS"
        print(f"  put + first paths           {ms(up['total_s'])}   target <= {figures['target_s']:g} s: {verdict}")
        print(f"  from a .map file: served    {ms(file['served_s'])}   (its load {ms(file['server_s']).strip()}), "
              f"paths {ms(file['path_unit1_s']).strip()} + {ms(file['path_unit3_s']).strip()}, "
              f"in all {ms(file['total_s']).strip()}")
        print(f"  upload / file               {figures['ratio_to_file']:7.2f}x")
    get = results["get_map_2048"]
    verdict = "PASS" if get["pass"] else "MISS"
    print(f"\nget_map 2048 x 2048           {get['median_ms']:7.0f} ms   (min {get['min_ms']:.0f} ms)   "
          f"target <= {get['target_ms']:g} ms: {verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per size (medians are shown; default 3)")
    parser.add_argument("--json", action="store_true", help="print every figure as one JSON object instead")
    args = parser.parse_args(argv)
    results = run(max(1, args.rounds))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
