"""docs/security.md's "CURVE in four steps" run as a user types them: the first three in a
new folder, the fourth's files checked (it serves on the LAN, which a test does not)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

SECURITY_MD = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def curve_steps() -> list[str]:
    """The command lines of the section's shell block, comments left out."""
    section = SECURITY_MD.read_text().split("## CURVE in four steps", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_four_curve_steps_work_as_written(tmp_path):
    steps = curve_steps()
    assert len(steps) == 4 and steps[-1].startswith("pathserver serve ")
    # The `pathserver` of this environment, as the user's shell would find it.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for step in steps[:3]:
        done = subprocess.run(["bash", "-ec", step], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, f"{step}\n{done.stderr}"
    serve = shlex.split(steps[-1])
    curve_keys = tmp_path / serve[serve.index("--curve-keys") + 1]
    allowed = tmp_path / serve[serve.index("--allow") + 1]
    assert curve_keys.is_file()
    assert sorted(p.name for p in allowed.iterdir()) == ["alice.key"]
