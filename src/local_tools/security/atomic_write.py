"""Atomic file writes inside an already-resolved directory.

The data goes to a temp file in the target's directory, is fsynced and renamed over
the target, then the directory is fsynced: a crash or ``kill -9`` leaves the old file
or the new one, never half of it. A rename replaces the name, so a symlink at the
target is replaced, never written through, and a hard link to the old file keeps the
old content.

The temp file is named ``.lt-tmp-<name>.<random>`` (``TEMP_PREFIX``). A process
killed mid-write can leave one behind; it is never mistaken for the target, and any
leftover with that prefix is safe to delete.

The checks that decide whether the target may be written at all are the caller's;
this module only moves bytes safely.
"""

from __future__ import annotations

import os
import secrets
from contextlib import suppress

from local_tools.core.errors import AlreadyExists, StorageError
from local_tools.security.dirfd import Dir, write_all
from local_tools.security.pathparts import shown
from local_tools.security.syscalls import (
    IS_WINDOWS,
    O_BINARY,
    O_CLOEXEC,
    O_NOFOLLOW,
    renameat2_noreplace,
)

__all__ = ["TEMP_PREFIX", "write_atomically"]

TEMP_PREFIX = ".lt-tmp-"


def write_atomically(
    parent: Dir, name: str, data: bytes, *, mode: int | None, exclusive: bool, path: str
) -> None:
    """Put `data` at `name` in `parent` through a temp file; chmod it to `mode` if given.

    exclusive=True never replaces anything: AlreadyExists if `name` exists by then.
    `path` is the user's path, for messages.
    """
    tmp, fd = _create_temp(parent, name)
    try:
        try:
            if mode is not None:
                if hasattr(os, "fchmod"):
                    os.fchmod(fd, mode)
                else:
                    os.chmod(parent.at(tmp), mode)
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            _rename_noreplace(parent, tmp, name, path)
        else:
            parent.rename(tmp, name)
    except BaseException:
        with suppress(OSError):
            parent.unlink(tmp)
        raise
    parent.fsync()


def _create_temp(parent: Dir, name: str) -> tuple[str, int]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY
    for _ in range(16):
        tmp = f"{TEMP_PREFIX}{name[:32]}.{secrets.token_hex(8)}"
        try:
            return tmp, parent.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
    raise StorageError(f"Could not create a temporary file next to '{name}'.")


def _rename_noreplace(parent: Dir, tmp: str, name: str, path: str) -> None:
    """Move tmp to name only if name does not exist, atomically."""
    exists = AlreadyExists(
        f"Path '{shown(path)}' already exists. Choose another name, or allow overwriting."
    )
    try:
        if parent.fd is not None and renameat2_noreplace(parent.fd, tmp, name):
            return
        if IS_WINDOWS:
            os.rename(parent.at(tmp), parent.at(name))  # refuses an existing target
            return
        # A hard link never replaces: the same guarantee where renameat2 is missing.
        os.link(
            parent.at(tmp),
            parent.at(name),
            src_dir_fd=parent.fd,
            dst_dir_fd=parent.fd,
            follow_symlinks=False,
        )
    except FileExistsError:
        raise exists from None
    parent.unlink(tmp)
