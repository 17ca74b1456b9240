"""Build the addon's Asset Library release zip.

    python engine_clients/godot/pack.py OUT.zip

The zip holds one folder, ``pathserver-godot-<version>/`` (the version from
``addons/pathserver/plugin.cfg``), with ``addons/pathserver/`` inside: the addon's scripts,
their ``.uid`` files, ``plugin.cfg``, its ``LICENSE``, this folder's ``README.md`` as
``addons/pathserver/README.md``, and ``bin/.gdignore`` (the empty folder a bundle goes in).
The Asset Library's installer drops the root folder ("Ignore asset root"), so the addon lands
in the project's ``addons/pathserver/``. Nothing else: no bundles from ``bin/``, no tests, no
demo (a separate project), no editor caches. Entries are sorted and dated 2000-01-01, so the
same sources make the same bytes. Prints the zip's path, entry count and size; exits 2 with
one line when the addon is incomplete.
"""

from __future__ import annotations

import argparse
import configparser
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ADDON = HERE / "addons" / "pathserver"
README = HERE / "README.md"
#: Files the release must have, relative to the addon folder.
REQUIRED = ("plugin.cfg", "plugin.gd", "path_server.gd", "export_plugin.gd", "LICENSE")
#: Kept from bin/: the marker that hides bundles from the editor's scan and from the PCK.
BIN_KEEP = "bin/.gdignore"
FIXED_DATE = (2000, 1, 1, 0, 0, 0)


class PackError(Exception):
    """The addon folder cannot be packed; the message says what is missing."""


def version() -> str:
    """The addon's version, from plugin.cfg."""
    config = configparser.ConfigParser()
    config.read(ADDON / "plugin.cfg", encoding="utf-8")
    return config.get("plugin", "version", fallback='"0"').strip('"')


def release_files() -> list[tuple[str, Path]]:
    """``(name in the addon folder, source file)`` for every file of the release, sorted."""
    for name in REQUIRED:
        if not (ADDON / name).is_file():
            raise PackError(f"{ADDON / name} is missing")
    if not README.is_file():
        raise PackError(f"{README} is missing")
    files = {"README.md": README}
    for path in ADDON.rglob("*"):
        name = path.relative_to(ADDON).as_posix()
        if not path.is_file() or path.is_symlink():
            continue
        if name.startswith("bin/") and name != BIN_KEEP:
            continue
        if name.startswith(".godot/") or name.endswith(".import"):
            continue
        files[name] = path
    return sorted(files.items())


def pack(out: Path) -> int:
    """Write the release zip to ``out``; returns its number of entries."""
    root = f"pathserver-godot-{version()}/addons/pathserver"
    files = release_files()
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, source in files:
            entry = zipfile.ZipInfo(f"{root}/{name}", date_time=FIXED_DATE)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, source.read_bytes())
    return len(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the Godot addon's Asset Library zip.")
    parser.add_argument("out", type=Path, help="the zip to write, e.g. dist/pathserver-godot.zip")
    args = parser.parse_args(argv)
    try:
        count = pack(args.out)
    except PackError as error:
        print(f"pack: error: {error}", file=sys.stderr)
        return 2
    print(f"pack: {args.out} ({count} files, {args.out.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
