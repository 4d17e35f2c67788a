"""An exclusive lock on a file, across processes and across threads of one process.

Used where two local-tools processes (an MCP server and the CLI, say) share a file in
the state folder: the todo lists, the checkpoints' shadow repository.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from local_tools.core.errors import StorageError

__all__ = ["locked"]


@contextlib.contextmanager
def locked(
    path: Path, *, what: str, wait: float = 10.0, check: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing). After `wait` seconds of
    trying, StorageError naming `what`; `check` runs between tries (it may raise, e.g.
    when the call was cancelled)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait
        while not _try_lock(fd):
            if check is not None:
                check()
            if time.monotonic() > deadline:
                raise StorageError(
                    f"{what} is locked by another process (for over {wait:g} s; "
                    f"lock file {path}). Try again shortly."
                )
            time.sleep(0.005)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)  # msvcrt locks bytes from the current position
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        # flock locks belong to the open file, so two threads of one process (two
        # toolboxes) exclude each other as two processes do.
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
