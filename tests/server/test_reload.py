"""Hot reload seen through the server: every change is observed by polling ``maps`` (or a
path) with a deadline, never by sleeping a fixed time."""

import os

import pytest

WALLED = """
..........
.@@@@.....
.@........
.@..@@@@@@
..@.......
"""


@pytest.fixture
def watched(start_server, make_dealer):
    server = start_server(watch=True)
    return make_dealer(server.endpoint)


def map_entry(client, name):
    for entry in client.ask({"id": 1, "op": "maps"})["maps"]:
        if entry["name"] == name:
            return entry
    return None


def row4(client):
    """The straight path along the bottom row, or what replaced it."""
    return client.ask({"id": 2, "op": "path", "map": "arena", "start": [0, 4], "goal": [9, 4]})


def test_atomic_rename_is_served(watched, maps_dir, movingai, wait_for):
    first = row4(watched)
    assert first["path"] == [[0, 4], [9, 4]]
    temp = maps_dir / ".arena.map.tmp"
    temp.write_text(movingai(WALLED))
    os.replace(temp, maps_dir / "arena.map")
    reply = wait_for(lambda: (r := row4(watched))["gen"] > first["gen"] and r)
    assert reply["path"] != [[0, 4], [9, 4]]


def test_in_place_write_is_served(watched, maps_dir, movingai, wait_for):
    first = map_entry(watched, "arena")["gen"]
    with open(maps_dir / "arena.map", "r+") as file:
        file.write(movingai(WALLED))
    wait_for(lambda: map_entry(watched, "arena")["gen"] > first)
    assert row4(watched)["path"] != [[0, 4], [9, 4]]


def test_a_malformed_file_keeps_the_old_map(watched, maps_dir, wait_for):
    first = map_entry(watched, "arena")["gen"]
    (maps_dir / "arena.map").write_text("type octile\nheight 5\nwidth 10\nmap\n....\n")
    entry = wait_for(lambda: (e := map_entry(watched, "arena"))["last_error"] and e)
    assert entry["gen"] == first and "arena.map" in entry["last_error"]
    assert row4(watched)["path"] == [[0, 4], [9, 4]]
    stats = watched.ask({"id": 3, "op": "stats"})
    assert stats["reloads_failed"] == 1


def test_new_and_deleted_files(watched, maps_dir, movingai, write_map, wait_for):
    write_map(maps_dir, "fresh", "....\n....\n")
    wait_for(lambda: map_entry(watched, "fresh"))
    reply = watched.ask({"id": 4, "op": "path", "map": "fresh", "start": [0, 0], "goal": [3, 1]})
    assert reply["status"] == "found"
    (maps_dir / "split.map").unlink()
    wait_for(lambda: map_entry(watched, "split") is None)
    reply = watched.ask({"id": 5, "op": "path", "map": "split", "start": [0, 0], "goal": [1, 1]})
    assert reply["error"]["code"] == "unknown_map"


def test_a_reload_replaces_edits_with_a_newer_generation(watched, maps_dir, movingai, wait_for):
    edit = watched.ask({"id": 6, "op": "update", "map": "arena", "cells": [[2, 4]], "solid": True})
    (maps_dir / "arena.map").write_text(movingai(WALLED))
    reply = wait_for(lambda: (r := row4(watched))["gen"] > edit["gen"] and r)
    assert [2, 4] not in reply["path"] and reply["status"] == "found"
