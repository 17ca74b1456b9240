"""``pathserver bundle`` end to end (opt-in: ``--slow``; about two minutes): build the
self-contained server, then run the check CI runs on a moved copy with an empty HOME
(``bench/startup.py --bundle-check``), and the frozen command line's other faces. The
locator and fallback logic have fast tests in ``tests/test_kernel_cache.py``."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pathserver import __version__
from pathserver.bundle import EXECUTABLE

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_bundle_builds_and_a_moved_copy_answers_at_once(tmp_path):
    pytest.importorskip("PyInstaller", reason="the bundle extra: pip install 'pathserver[bundle]'")
    out = tmp_path / "server"
    subprocess.run([sys.executable, "-m", "pathserver", "bundle", str(out)], cwd=ROOT, check=True, timeout=900)
    executable = out / EXECUTABLE
    version = subprocess.run([str(executable), "--version"], capture_output=True, text=True, timeout=60)
    assert version.stdout.strip() == f"pathserver {__version__}"
    usage = subprocess.run([str(executable), "--help"], capture_output=True, text=True, timeout=60).stdout
    assert usage.startswith("usage: pathserver-server") and "serve" in usage and "bundle" not in usage
    picture = tmp_path / "map.png"
    subprocess.run([str(executable), "render", str(ROOT / "maps" / "example.map"), "--path", "1", "1", "50", "40",
                    "-o", str(picture)], check=True, timeout=120, capture_output=True)
    assert picture.stat().st_size > 0
    check = subprocess.run([sys.executable, str(ROOT / "bench" / "startup.py"), "--bundle-check", str(out),
                            "--cold-runs", "1", "--warm-runs", "1"],
                           cwd=ROOT, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert check.returncode == 0, check.stdout + check.stderr


def test_bundle_refuses_a_folder_that_holds_something_else(tmp_path):
    from pathserver import bundle

    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(bundle.BundleError, match="not empty and holds no earlier bundle"):
        bundle._check_target(tmp_path)
    (tmp_path / EXECUTABLE).write_bytes(b"")  # an earlier bundle: replaced
    bundle._check_target(tmp_path)
    bundle._check_target(tmp_path / "new")


def test_bundle_without_pyinstaller_says_which_extra_to_install(tmp_path, monkeypatch, capsys):
    from pathserver import cli

    monkeypatch.setitem(sys.modules, "PyInstaller", None)  # import fails
    assert cli.main(["bundle", str(tmp_path / "out")]) == 2
    assert "pip install 'pathserver[bundle]'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _startup_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_startup", ROOT / "bench" / "startup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(os.name == "nt", reason="the player's environment is checked on POSIX here")
def test_start_check_runs_without_python_and_sees_what_a_start_writes(tmp_path):
    # CI's start check (bench/startup.py --bundle-check) runs the copy with no Python on
    # PATH, and fails when a start wrote anything into the copy (root ignores the
    # read-only permission bits, so it compares the folder before and after).
    startup = _startup_script()
    home = tmp_path / "home"
    home.mkdir()
    env = startup.player_env(home)
    assert env["HOME"] == str(home)
    assert not any(os.listdir(folder) for folder in env["PATH"].split(os.pathsep))
    copy = tmp_path / "copy"
    (copy / "_internal").mkdir(parents=True)
    (copy / "_internal" / "kernels.json").write_text("{}")
    before = startup.snapshot(copy)
    assert startup.snapshot(copy) == before
    (copy / "_internal" / "cache").mkdir()
    assert set(startup.snapshot(copy)) - set(before) == {os.path.join("_internal", "cache")}
    (copy / "_internal" / "cache").rmdir()
    (copy / "_internal" / "kernels.json").write_text('{"a": 1}')
    assert startup.snapshot(copy) != before
