"""What the ``pathserver`` command tells its user: help texts, exit statuses, stderr lines."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pathserver import cli, options
from pathserver.maps import MapRegistry

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "maps" / "example.map")


def help_of(capsys, *command: str) -> str:
    with pytest.raises(SystemExit) as done:
        cli.main([*command, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def flag_help(text: str, flag: str) -> str:
    """The help of one flag in ``text`` (whitespace normalised): up to the next flag."""
    return re.search(rf"(?:^| ){re.escape(flag)} (.*?)(?= --|$)", text).group(1)


def test_a_flag_that_turns_an_option_off_says_what_it_does(capsys):
    text = help_of(capsys, "path")
    assert "start_blocked" in flag_help(text, "--no-snap")
    assert "moves to the nearest" not in flag_help(text, "--no-snap")
    assert "always search" in flag_help(text, "--no-line-of-sight")
    for option in options.OPTIONS:
        if option.kind == "bool" and option.cli and option.python_default is True:
            assert option.doc not in flag_help(text, option.cli), option.name


def test_the_path_command_documents_its_exit_statuses(capsys):
    text = help_of(capsys, "path")
    assert "exit status 0" in text and "1 when there is no path (no_path)" in text and "2" in text
    assert cli.main(["path", EXAMPLE, "1", "1", "60", "60", "--unit", "2"]) == 1
    assert capsys.readouterr().out == "status: no_path\n"


def test_an_answer_without_a_search_names_no_algorithm(tmp_path, capsys):
    one_cell = tmp_path / "one.map"
    one_cell.write_text("type octile\nheight 1\nwidth 1\nmap\n.\n")
    for map_file, ends in ((one_cell, "0 0 0 0"), (EXAMPLE, "1 1 1 1"), (EXAMPLE, "1 1 5 1")):
        assert cli.main(["path", str(map_file), *ends.split()]) == 0
        out = capsys.readouterr().out
        assert "straight line, no search" in out and "expanded: 0  algorithm: none" in out, out
        assert cli.main(["path", str(map_file), *ends.split(), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["algorithm"] == "none"
    assert cli.main(["path", EXAMPLE, "1", "1", "60", "60"]) == 0
    assert "algorithm: jps" in capsys.readouterr().out


def test_map_load_warnings_on_stderr_start_with_the_program_name(tmp_path, capsys):
    (tmp_path / "broken.map").write_text("type octile\nheight 3\nwidth 4\nmap\n....\n")
    assert cli.main(["options"]) == 0  # the command's stderr set up as every command's
    capsys.readouterr()
    MapRegistry(tmp_path).load_all()
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.startswith("pathserver: ") for line in lines), lines
    assert "broken" in lines[0] and "truncated" in lines[0]


def test_output_piped_into_a_reader_already_gone_ends_without_a_traceback():
    import subprocess
    import sys

    # A reader gone before the first byte (`| true` exits long before Python has started).
    command = f"{sys.executable} -m pathserver options --json | true"
    done = subprocess.run(["sh", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stderr == ""


def test_path_and_validate_on_a_map_of_floors_and_links(tmp_path, capsys):
    level = tmp_path / "house.map"
    # Two floors of 4 x 3, one under another (floor 0 on top), as a sidecar's "floors" reads them.
    level.write_text("type octile\nheight 6\nwidth 4\nmap\n..@.\n..@.\n..@.\n....\n....\n....\n")
    (tmp_path / "house.json").write_text(json.dumps({"floors": 2, "links": [
        {"from": [0, 0, 0], "to": [0, 0, 1], "cost": 1}, {"from": [3, 2, 1], "to": [3, 2, 0], "cost": 0.5}]}))
    assert cli.main(["path", str(level), "0", "2", "3", "0", "--goal-floor", "0", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["path"][0] == [0, 2, 0] and answer["path"][-1] == [3, 0, 0]
    assert [k for _, k in answer["links"]] == [0, 1]
    assert cli.main(["path", str(level), "0", "2", "3", "2", "--start-floor", "0", "--goal-floor", "1"]) == 0
    out = capsys.readouterr().out
    assert "waypoints: 0,2,0 " in out and "links: " in out and ":link 0" in out
    assert cli.main(["validate", str(level)]) == 0
    assert "4x3, 2 floors, 2 links, 21 walkable cells (87.5%)" in capsys.readouterr().out
