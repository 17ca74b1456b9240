"""Map names on the wire are looked up in the served dict, never joined onto a path: no
name reaches a file outside (or inside) the maps folder. Absurd map sizes are refused
from the header, before allocating."""

import sys

import pytest

from pathserver.maps.registry import MapRegistry

#: Files opened (audit event "open") while ``_recording`` is set, from any thread.
_opened: list[str] = []
_recording = [False]


def _audit(event, args):
    if _recording[0] and event in ("open", "os.listdir", "os.scandir") and args:
        _opened.append(str(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def outside(tmp_path, maps_dir):
    """A valid map file *beside* the maps folder, which must never be served."""
    (tmp_path / "secret.map").write_text((maps_dir / "arena.map").read_text())
    return tmp_path / "secret.map"


def hostile_names(maps_dir, outside):
    return [
        "../secret", "../secret.map", str(outside), str(outside.with_suffix("")), "/etc/passwd",
        "../../../../../../etc/passwd", "..", ".", "/", "arena.map", "./arena", "../maps/arena",
        str(maps_dir / "arena"), str(maps_dir / "arena.map"), "arena\x00", "arena\x00.map", "\x00",
        "..\\secret", "%2e%2e/secret", "arena/", "~/arena", "file:///etc/passwd",
    ]


def test_hostile_names_are_unknown_maps_and_read_no_file(start_server, make_dealer, maps_dir, outside):
    server = start_server()  # no watcher: the served maps are in memory, nothing needs the disk
    dealer = make_dealer(server.endpoint)
    names = hostile_names(maps_dir, outside)
    del _opened[:]
    _recording[0] = True
    try:
        for i, name in enumerate(names):
            for request in (
                {"id": i, "op": "path", "map": name, "start": [0, 0], "goal": [1, 0]},
                {"id": i, "op": "paths", "map": name, "requests": [{"start": [0, 0], "goal": [1, 0]}]},
                {"id": i, "op": "update", "map": name, "cells": [[0, 0]], "solid": True},
            ):
                reply = dealer.ask(request)
                assert reply["error"]["code"] == "unknown_map", (name, reply)
                assert reply["error"]["at"] == "map"
    finally:
        _recording[0] = False
    touched = [path for path in _opened if "secret" in path or "passwd" in path or str(maps_dir) in path]
    assert touched == []
    served = dealer.ask({"id": 0, "op": "maps"})["maps"]
    assert [entry["name"] for entry in served] == ["arena"]
    assert dealer.ask({"id": 1, "op": "path", "map": "arena", "start": [0, 4], "goal": [9, 4]})["status"] == "found"


def test_registry_get_never_touches_the_disk(maps_dir, outside):
    registry = MapRegistry(maps_dir)
    registry.load_all()
    del _opened[:]
    _recording[0] = True
    try:
        for name in hostile_names(maps_dir, outside):
            with pytest.raises(Exception) as raised:
                registry.get(name)
            assert raised.value.code == "unknown_map"
    finally:
        _recording[0] = False
    assert _opened == []


def test_overlong_and_non_string_names_are_invalid(start_server, make_dealer):
    dealer = make_dealer(start_server().endpoint)
    for name in ("a" * 257, b"arena", 7, ["arena"], None):
        reply = dealer.ask({"id": 1, "op": "path", "map": name, "start": [0, 0], "goal": [1, 0]})
        assert reply["error"]["code"] == "invalid_request", (name, reply)


def test_absurd_map_size_is_refused_and_others_keep_serving(start_server, make_dealer, maps_dir):
    # 2^31 x 2^31 cells: allocating it would take exabytes; the header alone refuses it.
    (maps_dir / "huge.map").write_text("type octile\nheight 2147483648\nwidth 2147483648\nmap\n....\n")
    dealer = make_dealer(start_server().endpoint)
    huge = {entry["name"]: entry for entry in dealer.ask({"id": 1, "op": "maps"})["maps"]}["huge"]
    assert huge["width"] is None and "exceeds the limit" in huge["last_error"]
    reply = dealer.ask({"id": 2, "op": "path", "map": "huge", "start": [0, 0], "goal": [1, 0]})
    assert reply["error"]["code"] == "unknown_map"
    assert dealer.ask({"id": 3, "op": "path", "map": "arena", "start": [0, 4], "goal": [9, 4]})["status"] == "found"
