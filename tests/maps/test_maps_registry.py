"""The map folder registry: what it serves, validate-then-swap, and hot reload."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pathserver.errors import MapLoadError, UnknownMapError
from pathserver.maps import MapRegistry
from grids import movingai

WATCH_DEADLINE_S = 5.0




A = movingai(["....", ".@@.", "...."])
A2 = movingai(["....", "....", "....", "@@@@"])
TILED = {
    "type": "map", "width": 2, "height": 1, "tilewidth": 8, "tileheight": 8, "layers": [
        {"type": "tilelayer", "name": "ground", "width": 2, "height": 1, "data": [0, 1]}
    ],
    "tilesets": [
        {"firstgid": 1, "tiles": [{"id": 0, "properties": [{"name": "solid", "type": "bool", "value": True}]}]}
    ],
}


def write(path: Path, text) -> Path:
    if isinstance(text, str):
        text = text.encode()
    path.write_bytes(text)
    return path


def replace_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def wait_for(predicate, what: str, timeout: float = WATCH_DEADLINE_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def info_of(registry: MapRegistry, name: str) -> dict:
    return next(row for row in registry.info() if row["name"] == name)


@pytest.fixture
def folder(tmp_path) -> Path:
    write(tmp_path / "a.map", A)
    png = tmp_path / "b.png"
    Image.fromarray(np.full((3, 5), 255, np.uint8)).save(png)
    write(tmp_path / "b.json", json.dumps({"cell_size": 2.0, "origin": [10, 20]}))
    write(tmp_path / "c.tmj", json.dumps(TILED))
    write(tmp_path / "d.json", json.dumps(TILED))
    write(tmp_path / "notes.json", json.dumps({"about": "not a map"}))
    write(tmp_path / "tiles.tsj", json.dumps({"type": "tileset"}))
    write(tmp_path / "a.map.scen", "version 1\n0\ta.map\t4\t3\t0\t0\t3\t0\t3\n")
    write(tmp_path / "bad.map", "type octile\nheight 3\nwidth 4\nmap\n....\n")
    write(tmp_path / ".hidden.map", A)
    write(tmp_path / "backup.map~", A)
    return tmp_path


@pytest.fixture
def watched(folder):
    events = []
    registry = MapRegistry(folder, debounce_ms=20, on_event=events.append)
    registry.events = events
    registry.load_all()
    registry.start()
    yield registry
    started = time.monotonic()
    registry.stop()
    assert time.monotonic() - started < 1.0


# -- serving --------------------------------------------------------------------------------


def test_initial_load_serves_maps_not_sidecars(folder):
    registry = MapRegistry(folder)
    registry.load_all()
    assert registry.names() == ["a", "b", "c", "d"]
    assert registry.get("b").cell_size == 2.0 and registry.get("b").origin == (10.0, 20.0)
    rows = {row["name"]: row for row in registry.info()}
    assert set(rows) == {"a", "b", "bad", "c", "d"}
    assert rows["a"]["width"] == 4 and rows["a"]["height"] == 3 and rows["a"]["last_error"] is None
    assert rows["a"]["walkable_share"] == pytest.approx(10 / 12)
    assert rows["a"]["generation"] >= 1 and rows["a"]["file"] == str(folder / "a.map")
    assert rows["b"]["origin"] == [10.0, 20.0]
    assert rows["bad"]["width"] is None and "truncated" in rows["bad"]["last_error"]
    assert str(folder / "bad.map") in rows["bad"]["last_error"]
    assert registry.stats == {"reloads_ok": 4, "reloads_failed": 1}
    with pytest.raises(UnknownMapError) as info:
        registry.get("bad")
    assert info.value.at == "map" and "served: a, b, c, d" in str(info.value)


@pytest.mark.parametrize("name", ["../a", "a.map", "/etc/passwd", "", "notes", "b.json", None, ["a"]])
def test_get_only_looks_names_up(folder, name):
    registry = MapRegistry(folder)
    registry.load_all()
    with pytest.raises(UnknownMapError):
        registry.get(name)


def test_same_stem_picks_one_and_reports_the_other(folder):
    Image.fromarray(np.full((2, 2), 255, np.uint8)).save(folder / "a.png")
    registry = MapRegistry(folder)
    registry.load_all()
    assert registry.get("a").walkable.shape == (3, 4)
    assert "a.png: not served, a.map has the same name" in info_of(registry, "a")["last_error"]


def test_missing_folder_raises(tmp_path):
    from pathserver.errors import MapLoadError

    with pytest.raises(MapLoadError, match="does not exist"):
        MapRegistry(tmp_path / "nope").load_all()


# -- validate, then swap (no watcher) -------------------------------------------------------


def test_reload_swaps_only_good_maps(folder):
    registry = MapRegistry(folder)
    registry.load_all()
    first = registry.get("a")
    write(folder / "a.map", A2)
    assert registry.reload(folder / "a.map") is True
    second = registry.get("a")
    assert second.walkable.shape == (4, 4) and second.generation > first.generation

    write(folder / "a.map", A2[:-10])  # half-written
    assert registry.reload(folder / "a.map") is False
    assert registry.get("a") is second
    row = info_of(registry, "a")
    assert row["generation"] == second.generation and "a.map" in row["last_error"]
    assert registry.stats["reloads_failed"] == 2

    write(folder / "a.map", A)
    assert registry.reload(folder / "a.map") is True
    assert registry.get("a").generation > second.generation and info_of(registry, "a")["last_error"] is None


def test_reload_of_a_sidecar_reloads_its_map(folder):
    registry = MapRegistry(folder)
    registry.load_all()
    write(folder / "b.json", json.dumps({"cell_size": 3.0}))
    assert registry.reload(folder / "b.json") is True
    assert registry.get("b").cell_size == 3.0 and registry.get("b").origin == (0.0, 0.0)
    assert registry.reload(folder / "elsewhere.txt") is False


def test_rescan_adds_and_drops(folder):
    registry = MapRegistry(folder)
    registry.load_all()
    ok = registry.stats["reloads_ok"]
    registry.rescan()
    assert registry.stats["reloads_ok"] == ok, "unchanged files must not reload"
    write(folder / "e.map", A)
    (folder / "c.tmj").unlink()
    registry.rescan()
    assert "e" in registry.names() and "c" not in registry.names()
    assert "c" not in {row["name"] for row in registry.info()}


def test_apply_edit_and_generations(folder):
    registry = MapRegistry(folder)
    registry.load_all()
    before = registry.get("a")
    edited = registry.apply_edit("a", rects=[(0, 0, 2, 1)], solid=True)
    assert registry.get("a") is edited and edited.generation > before.generation
    assert not edited.walkable[0, 0] and before.walkable[0, 0]
    assert info_of(registry, "a")["walkable_share"] == pytest.approx(8 / 12)
    write(folder / "a.map", A)
    os.utime(folder / "a.map", ns=(1, 1))
    registry.rescan()
    reloaded = registry.get("a")
    assert reloaded.walkable[0, 0] and reloaded.generation > edited.generation
    with pytest.raises(UnknownMapError):
        registry.apply_edit("nope", cells=[(0, 0)], solid=True)


def test_generation_keeps_rising_across_delete_and_recreate(folder):
    registry = MapRegistry(folder)
    registry.load_all()
    generation = registry.get("a").generation
    (folder / "a.map").unlink()
    registry.rescan()
    write(folder / "a.map", A)
    registry.rescan()
    assert registry.get("a").generation > generation


def test_concurrent_gets_during_reloads(folder):
    registry = MapRegistry(folder)
    registry.load_all()
    stop = threading.Event()
    problems = []

    def reader():
        last = 0
        while not stop.is_set():
            try:
                generation = registry.get("a").generation
            except Exception as exc:  # any failure here is a bug
                problems.append(exc)
                return
            if generation < last:
                problems.append(f"generation went back from {last} to {generation}")
            last = generation
            time.sleep(0)  # let the reloading thread have the GIL too

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for i in range(40):
        write(folder / "a.map", (A, A2)[i % 2])
        registry.reload(folder / "a.map")
        if i % 3 == 0:
            registry.apply_edit("a", cells=[(1, 1)], solid=bool(i % 2))
    stop.set()
    for thread in threads:
        thread.join(5)
    assert not problems


def test_memory_stays_flat_over_many_reloads(folder, caplog):
    # Captured log records would grow with every failed reload; they are not the registry's.
    caplog.set_level(logging.ERROR, logger="pathserver.maps")
    registry = MapRegistry(folder)
    registry.load_all()

    def churn(times):
        for i in range(times):
            write(folder / "a.map", (A, A2)[i % 2])
            registry.reload(folder / "a.map")
            write(folder / "bad.map", "garbage")
            registry.reload(folder / "bad.map")

    churn(50)
    tracemalloc.start()
    try:
        churn(20)
        baseline = tracemalloc.get_traced_memory()[0]
        churn(200)
        grown = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert grown < 100_000, f"{grown} bytes more after 200 reloads"


# -- the watcher ----------------------------------------------------------------------------


def test_watch_atomic_replace(watched, folder):
    generation = watched.get("a").generation
    replace_atomically(folder / "a.map", A2)
    wait_for(lambda: watched.get("a").generation > generation, "the atomic save to load")
    assert watched.get("a").walkable.shape == (4, 4)


def test_watch_in_place_write(watched, folder):
    generation = watched.get("a").generation
    with open(folder / "a.map", "w") as fh:
        fh.write(A2)
    wait_for(lambda: watched.get("a").walkable.shape == (4, 4), "the in-place write to load")
    assert watched.get("a").generation > generation


def test_watch_malformed_file_keeps_old_map(watched, folder):
    old = watched.get("a")
    failed = watched.stats["reloads_failed"]
    write(folder / "a.map", A.replace("@@", "##"))
    wait_for(lambda: watched.stats["reloads_failed"] > failed, "the failed reload")
    assert watched.get("a") is old
    assert "unexpected '#'" in info_of(watched, "a")["last_error"]
    replace_atomically(folder / "a.map", A2)
    wait_for(lambda: watched.get("a") is not old, "the fixed file to load")
    assert info_of(watched, "a")["last_error"] is None


def test_watch_new_and_deleted_files(watched, folder):
    write(folder / "fresh.map", A)
    wait_for(lambda: "fresh" in watched.names(), "the new map")
    (folder / "c.tmj").unlink()
    wait_for(lambda: "c" not in watched.names(), "the deleted map to go")
    kinds = [event["event"] for event in watched.events if event["name"] in ("fresh", "c")]
    assert "loaded" in kinds and "removed" in kinds


def test_watch_sidecar_change_reloads_map_and_is_not_served(watched, folder):
    replace_atomically(folder / "b.json", json.dumps({"cell_size": 4.0}))
    wait_for(lambda: watched.get("b").cell_size == 4.0, "the sidecar change")
    assert "b.json" not in watched.names() and watched.names() == ["a", "b", "c", "d"]


def test_watch_ignores_temporary_files(watched, folder):
    ok = watched.stats["reloads_ok"]
    for name in (".a.map.swp", "a.map~", "x.map.tmp", ".y.map"):
        write(folder / name, "junk")
    write(folder / "z.map", A)  # a real change afterwards, to know the batch was seen
    wait_for(lambda: "z" in watched.names(), "the real change")
    assert watched.names() == ["a", "b", "c", "d", "z"]
    assert watched.stats["reloads_ok"] == ok + 1


def test_stop_is_prompt_and_idempotent(folder):
    registry = MapRegistry(folder, debounce_ms=50)
    registry.load_all()
    registry.start()
    registry.start()
    time.sleep(0.05)
    started = time.monotonic()
    registry.stop()
    registry.stop()
    assert time.monotonic() - started < 1.0


def test_watch_heights_file_change_reloads_map(watched, folder):
    np.save(folder / "h.npy", np.zeros((3, 4)))
    replace_atomically(folder / "a.json", json.dumps({"heights": "h.npy"}))
    wait_for(lambda: watched.get("a").heights is not None, "the heights to load")
    np.save(folder / "h.npy", np.ones((3, 4)))
    wait_for(lambda: watched.get("a").heights.max() == 1.0, "the heights file change")
    assert watched.names() == ["a", "b", "c", "d"]


def test_sample_folder_loads_cleanly():
    registry = MapRegistry(Path(__file__).resolve().parents[2] / "maps")
    registry.load_all()
    assert {"example", "terrain", "dungeon"} <= set(registry.names())
    assert [row for row in registry.info() if row["last_error"]] == []


def test_watch_same_size_same_mtime_write_still_reloads(watched, folder):
    path = folder / "a.map"
    before = os.stat(path)
    same_size = A.replace("@@", "..")
    assert len(same_size) == len(A)
    with open(path, "w") as fh:  # in place: the inode stays
        fh.write(same_size)
    # As if written within the same clock tick as the previous version.
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    wait_for(lambda: watched.get("a").walkable.all(), "the event to force a reload")


# -- what a user is told -----------------------------------------------------------------------


def test_a_map_file_given_as_the_folder_is_named_a_file(tmp_path):
    map_file = write(tmp_path / "example.map", A)
    with pytest.raises(MapLoadError) as caught:
        MapRegistry(map_file).load_all()
    message = str(caught.value)
    assert "is a file, not a folder" in message and f"--maps {tmp_path}" in message
    assert "does not exist" not in message


def test_a_map_file_shadowed_by_another_of_the_same_name_is_logged(tmp_path, caplog):
    write(tmp_path / "level.tmj", json.dumps(TILED))
    Image.fromarray(np.full((3, 5), 255, np.uint8)).save(tmp_path / "level.png")
    with caplog.at_level(logging.WARNING, logger="pathserver.maps"):
        MapRegistry(tmp_path).load_all()
    shadowed = [r.getMessage() for r in caplog.records if "level.png" in r.getMessage()]
    assert shadowed and "not served" in shadowed[0] and "level.tmj" in shadowed[0]


def test_a_request_for_a_map_that_failed_to_load_says_so_and_why(folder):
    registry = MapRegistry(folder)
    registry.load_all()
    with pytest.raises(UnknownMapError) as caught:
        registry.get("bad")
    message = str(caught.value)
    assert "failed to load" in message and "truncated" in message and "bad.map" in message
    assert caught.value.code == "unknown_map"
    with pytest.raises(UnknownMapError) as never_there:
        registry.get("nothing")
    assert "failed to load" not in str(never_there.value)
