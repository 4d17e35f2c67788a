"""Running the local-tools command as a real subprocess, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def cli(*args: str, cwd: Path, state: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`python -m local_tools ARGS` in `cwd`, with its own state dir and no config override."""
    env = {**os.environ, "LOCAL_TOOLS_STATE_DIR": str(state)}
    env.pop("LOCAL_TOOLS_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "local_tools", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
