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
import stat as stat_mod
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

__all__ = ["TEMP_PREFIX", "create_temp", "rename_noreplace", "temp_name", "write_atomically"]

TEMP_PREFIX = ".lt-tmp-"


def write_atomically(
    parent: Dir, name: str, data: bytes, *, mode: int | None, exclusive: bool, path: str
) -> None:
    """Put `data` at `name` in `parent` through a temp file; chmod it to `mode` if given.

    exclusive=True never replaces anything: AlreadyExists if `name` exists by then.
    `path` is the user's path, for messages.
    """
    tmp, fd = create_temp(parent, name)
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
            rename_noreplace(parent, tmp, parent, name, path)
        else:
            parent.rename(tmp, name)
    except BaseException:
        with suppress(OSError):
            parent.unlink(tmp)
        raise
    parent.fsync()


def temp_name(name: str) -> str:
    """A fresh name for a temp entry next to `name` (file or directory)."""
    return f"{TEMP_PREFIX}{name[:32]}.{secrets.token_hex(8)}"


def create_temp(parent: Dir, name: str) -> tuple[str, int]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY
    for _ in range(16):
        tmp = temp_name(name)
        try:
            return tmp, parent.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
    raise StorageError(f"Could not create a temporary file next to '{name}'.")


def rename_noreplace(src_dir: Dir, src: str, dst_dir: Dir, dst: str, path: str) -> None:
    """Move src to dst only if dst does not exist, atomically where the system can."""
    exists = AlreadyExists(
        f"Path '{shown(path)}' already exists. Choose another name, or allow overwriting."
    )
    try:
        if (
            src_dir.fd is not None
            and dst_dir.fd is not None
            and renameat2_noreplace(src_dir.fd, src, dst, dst_dir.fd)
        ):
            return
        if IS_WINDOWS:
            os.rename(src_dir.at(src), dst_dir.at(dst))  # refuses an existing target
            return
        if not stat_mod.S_ISDIR(src_dir.lstat(src).st_mode):
            # A hard link never replaces: the same guarantee where renameat2 is missing.
            os.link(
                src_dir.at(src),
                dst_dir.at(dst),
                src_dir_fd=src_dir.fd,
                dst_dir_fd=dst_dir.fd,
                follow_symlinks=False,
            )
            src_dir.unlink(src)
            return
        # Directories cannot be hard-linked: check, then rename. Only reached on
        # systems without renameat2/renameatx_np, where this narrow race remains.
        with suppress(FileNotFoundError):
            dst_dir.lstat(dst)
            raise FileExistsError(dst)
        os.rename(src_dir.at(src), dst_dir.at(dst), src_dir_fd=src_dir.fd, dst_dir_fd=dst_dir.fd)
    except FileExistsError:
        raise exists from None
