"""Stale-file protection and per-file serialization for the editing tools.

An edit computed against text the model read before someone else changed the file
would silently undo that change. So reads are remembered per session as a version
(inode, mtime, size: the inode because our own atomic writes replace the file, and
two writes within one timestamp tick can leave mtime and size unchanged), and an
edit of a file that changed since this session last read it is a CONFLICT asking
to read it again. Files never read in the session can be edited: the edit itself
reads the current text.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from local_tools.core.context import ToolContext
from local_tools.core.errors import Conflict

__all__ = ["Version", "check_fresh", "file_lock", "forget", "note_read", "version_of"]

Version = tuple[int, int, int]  # (inode, mtime_ns, size)

_SESSION_KEY = "file_reads"
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _reads(ctx: ToolContext) -> dict[str, Version]:
    reads: dict[str, Version] = ctx.session.setdefault(_SESSION_KEY, {})
    return reads


def version_of(st: os.stat_result) -> Version:
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def note_read(ctx: ToolContext, real: Path, st: os.stat_result) -> None:
    """Remember the version of `real` this session has seen (after a read or a write)."""
    _reads(ctx)[str(real)] = version_of(st)


def forget(ctx: ToolContext, real: Path) -> None:
    _reads(ctx).pop(str(real), None)


def check_fresh(ctx: ToolContext, real: Path, version: Version, shown: str) -> None:
    """CONFLICT if the file changed on disk since this session last read or wrote it."""
    seen = _reads(ctx).get(str(real))
    if seen is not None and seen != version:
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
