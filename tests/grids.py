"""Small maps drawn as Moving AI rows ('.' walkable, '@' blocked), shared by the test
folders that serve maps from files."""

from __future__ import annotations

from pathlib import Path

ARENA = """
..........
.@@@@.....
.@........
.@..@@@@@@
..........
"""
SPLIT = """
..@..
..@..
..@..
"""


def movingai(rows) -> str:
    """Rows of ``.``/``@`` (a string or a list of strings) as a Moving AI ``.map`` text."""
    if isinstance(rows, str):
        rows = [line.strip() for line in rows.strip("\n").splitlines() if line.strip()]
    return f"type octile\nheight {len(rows)}\nwidth {len(rows[0])}\nmap\n" + "\n".join(rows) + "\n"


def write_map(folder, name: str, rows) -> Path:
    path = Path(folder) / f"{name}.map"
    path.write_text(movingai(rows))
    return path


def write_file(path: Path, content) -> Path:
    """``content`` (str or bytes) written to ``path``."""
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


def load_error(path: Path, **kwargs) -> str:
    """The message of the MapLoadError loading ``path`` raises (it must name the file)."""
    import pytest

    from pathserver.errors import MapLoadError
    from pathserver.maps.formats import load_map

    with pytest.raises(MapLoadError) as info:
        load_map(path, **kwargs)
    message = str(info.value)
    assert str(path) in message, message
    return message
