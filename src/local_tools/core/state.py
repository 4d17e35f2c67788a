"""Where local-tools keeps its own state: audit log, spilled output, approvals.

State lives outside the workspace on purpose: an agent that can write the
workspace must not be able to grant itself permissions or rewrite its audit log.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

__all__ = ["STATE_DIR_ENV", "default_state_dir", "workspace_state_dir", "write_state_file"]

STATE_DIR_ENV = "LOCAL_TOOLS_STATE_DIR"


def default_state_dir() -> Path:
    """`$LOCAL_TOOLS_STATE_DIR`, else the platform's user state dir."""
    override = os.environ.get(STATE_DIR_ENV)
    if override:
        return Path(override)
    import platformdirs  # deferred: only needed when no override is given

    return Path(platformdirs.user_state_dir("local-tools", appauthor=False))


def workspace_state_dir(state_dir: Path, workspace_root: Path) -> Path:
    """A per-workspace folder under the state dir, stable for the same root."""
    digest = hashlib.sha256(str(workspace_root).encode()).hexdigest()[:12]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in workspace_root.name)
    return state_dir / "workspaces" / f"{name or 'root'}-{digest}"


def write_state_file(path: Path, text: str) -> None:
    """Write a private state file (mode 0600, its folder 0700) through a temp file and a
    rename: readers never see half of it."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
