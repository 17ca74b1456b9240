"""``bench/warthog.py`` is optional: without a Warthog build it says how to make one and
skips with exit 0, so a machine without Warthog (CI) runs it harmlessly. The bench itself
needs Warthog and is never run as a test."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "warthog.py"


def run(*args, binary=None):
    env = {key: value for key, value in os.environ.items() if key != "WARTHOG_BIN"}
    if binary is not None:
        env["WARTHOG_BIN"] = binary
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                          env={**env, "PYTHONPATH": str(ROOT)})


def test_without_a_build_it_prints_the_steps_and_skips():
    done = run()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "warthog: skipped (no --warthog and no $WARTHOG_BIN)"
    assert "cmake -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-march=native -B build" in done.stdout


def test_a_path_that_is_no_program_skips_too(tmp_path):
    done = run(binary=str(tmp_path / "nothing-here"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == f"warthog: skipped ({tmp_path / 'nothing-here'} is not an executable file)"
