"""Where local-tools keeps its own state: audit log, spilled output, approvals.

State lives outside the workspace on purpose: an agent that can write the
workspace must not be able to grant itself permissions or rewrite its audit log.
It is private to the user too: folders 0700, files 0600 (another local user must not
read a pending draft or the server token). New files are made so (`write_state_file`,
`private_file` before SQLite opens a database: its -wal, -shm and -journal files take
the database's mode); `tighten_state_dir` fixes what older versions left readable.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import tempfile
import threading
from pathlib import Path

__all__ = [
    "STATE_DIR_ENV",
    "default_state_dir",
    "private_dir",
    "private_file",
    "tighten_state_dir",
    "workspace_state_dir",
    "write_state_file",
]

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
    private_dir(path.parent)
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


def private_dir(path: Path) -> Path:
    """`path` and its missing parents made as folders only the user can open (0700)."""
    missing = []
    here = Path(path)
    while not here.exists() and here.parent != here:
        missing.append(here)
        here = here.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
        _chmod(folder, 0o700)
    return Path(path)


def private_file(path: Path) -> Path:
    """Create `path` empty with mode 0600 unless it exists, and take group and other
    bits off an existing one. Call it before `sqlite3.connect(path)`: SQLite creates
    a database 0644, and its -wal, -shm and -journal files copy the database's mode."""
    private_dir(Path(path).parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    except FileExistsError:
        _strip_group_other(Path(path))
    else:
        os.close(fd)
    return Path(path)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_tightened: set[str] = set()
_tightened_lock = threading.Lock()


def tighten_state_dir(state_dir: Path) -> None:
    """Make the state dir private: itself and every folder in it 0700, every file
    without group or other bits (0600 for a plain file). Once per process and state
    dir (a few hundred stat calls at start); symlinks are not followed. POSIX only:
    Windows keeps a user's profile private by its ACLs."""
    if sys.platform == "win32":
        return
    root = Path(state_dir)
    key = os.path.abspath(root)
    with _tightened_lock:
        if key in _tightened:
            return
        _tightened.add(key)
    private_dir(root)
    _chmod(root, 0o700)
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            path = Path(folder, name)
            if not path.is_symlink():  # os.walk does not descend into one either
                _chmod(path, 0o700)
        for name in files:
            _strip_group_other(Path(folder, name))


def _strip_group_other(path: Path) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
        return
    _chmod(path, stat.S_IMODE(st.st_mode) & 0o700)


def _chmod(path: Path, mode: int) -> None:
    # Not ours (another user's file in a shared dir), gone meanwhile, or a symlink put
    # in its place (Linux cannot chmod a link itself: NotImplementedError): leave it.
    with contextlib.suppress(OSError, NotImplementedError):
        if stat.S_IMODE(os.lstat(path).st_mode) != mode:
            os.chmod(path, mode, follow_symlinks=False)
