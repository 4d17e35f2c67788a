"""What identifies this installation's code, for caches built from it.

The package's version and every module's path, size, mtime, ctime and inode, pydantic's
and Python's versions: an edited tool, a new release or an upgraded pydantic makes a
new fingerprint, so a cache keyed by it (the tools manifest, the MCP declarations) is
never stale. The ctime is there because it cannot be set back: an edit copied in with
its old size and mtime (`cp -p`, `rsync -t`, a tar) still changes it. Computed once
per process (a few ms: one stat per module).

The caches live in the state dir, trusted as its approvals are: private to the user
(0700) and hidden from sandboxed commands. What a call runs with comes from the code.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

__all__ = ["package_fingerprint"]

_fingerprints: list[str] = []


def package_fingerprint() -> str:
    if _fingerprints:
        return _fingerprints[0]
    import pydantic
    import pydantic_core

    from local_tools import __version__

    digest = hashlib.sha256()
    for part in (__version__, pydantic.VERSION, pydantic_core.__version__, sys.version):
        digest.update(part.encode() + b"\0")
    root = str(Path(__file__).resolve().parent.parent)
    skip = len(root) + 1
    parts = []
    folders = [root]
    while folders:  # scandir: half the time of os.walk + relpath, ~350 modules
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append(entry.path)
                elif entry.name.endswith(".py"):
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    parts.append(
                        f"{entry.path[skip:]}\0{st.st_size}\0{st.st_mtime_ns}\0"
                        f"{st.st_ctime_ns}\0{st.st_ino}\0"
                    )
    digest.update("".join(sorted(parts)).encode())
    _fingerprints.append(digest.hexdigest())
    return _fingerprints[0]
