"""Stale-file protection and per-file serialization for the editing tools.

An edit computed against text the model read before someone else changed the file
would silently undo that change. So reads are remembered per session (path →
mtime and size), and an edit of a file that changed since this session last read
it is a CONFLICT asking to read it again. Files never read in the session can be
edited: the edit itself reads the current text.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from local_tools.core.context import ToolContext
from local_tools.core.errors import Conflict

__all__ = ["check_fresh", "file_lock", "forget", "note_read"]

_SESSION_KEY = "file_reads"
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _reads(ctx: ToolContext) -> dict[str, tuple[int, int]]:
    reads: dict[str, tuple[int, int]] = ctx.session.setdefault(_SESSION_KEY, {})
    return reads


def note_read(ctx: ToolContext, real: Path, st: os.stat_result) -> None:
    """Remember the version of `real` this session has seen (after a read or a write)."""
    _reads(ctx)[str(real)] = (st.st_mtime_ns, st.st_size)


def forget(ctx: ToolContext, real: Path) -> None:
    _reads(ctx).pop(str(real), None)


def check_fresh(ctx: ToolContext, real: Path, mtime_ns: int, size: int, shown: str) -> None:
    """CONFLICT if the file changed on disk since this session last read or wrote it."""
    seen = _reads(ctx).get(str(real))
    if seen is not None and seen != (mtime_ns, size):
        raise Conflict(
            f"{shown} changed on disk since you last read it (another program or edit "
            "modified it). Read it again with read_file, then redo the edit on the "
            "current text.",
            details={"path": shown},
        )


@contextmanager
def file_lock(real: Path) -> Iterator[None]:
    """Serialize edits of one file within this process: read-modify-write is not atomic."""
    key = str(real)
    with _locks_guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        yield
