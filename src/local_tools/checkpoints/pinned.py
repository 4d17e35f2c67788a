"""Writing a restored entry through folders opened one by one, never through a symlink.

The restore checks each path just before writing it, but the jail resolves the path
again when it writes, following symlinks inside the roots: a process racing it could
swap a folder for a link to `.git/hooks` in between. Here every folder from the root
down is opened with O_NOFOLLOW (made when missing), and the entry is written, linked or
removed relative to the last one: a folder swapped for a link at any moment makes the
step fail, never lands it elsewhere. Where the system has no dir_fd calls (Windows),
`supported()` is False and the caller uses the jail.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from local_tools.core.errors import ToolError
from local_tools.security.atomic_write import temp_name, write_atomically
from local_tools.security.dirfd import Dir

__all__ = ["make_folder", "pinned_parent", "remove", "supported", "write_file", "write_link"]

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def supported() -> bool:
    return bool(_NOFOLLOW) and os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd


def pinned_parent(root: Path, rel: str, *, make: bool) -> Dir:
    """The folder holding `rel`, opened from `root` without following any link (the
    caller closes it). FileNotFoundError when a folder is missing and not `make`."""
    fd = os.open(root, _DIR_FLAGS)
    here = str(root)
    try:
        for part in rel.split("/")[:-1]:
            here = os.path.join(here, part)
            nfd = _open_folder(fd, part, here, make)
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return Dir(fd, here)


def _open_folder(fd: int, part: str, here: str, make: bool) -> int:
    try:
        return os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
    except FileNotFoundError:
        if not make:
            raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ToolError(f"a folder above it is not a folder now ({here})") from None
        raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(part, 0o777, dir_fd=fd)
    return _open_folder(fd, part, here, make=False)


def write_file(parent: Dir, name: str, data: bytes, mode: int, shown: str) -> None:
    _clear_empty_folder(parent, name)
    write_atomically(parent, name, data, mode=mode, exclusive=False, path=shown)


def write_link(parent: Dir, name: str, target: str) -> None:
    _clear_empty_folder(parent, name)
    tmp = temp_name(name)
    parent.symlink(target, tmp)
    try:
        parent.rename(tmp, name)
    except BaseException:
        with contextlib.suppress(OSError):
            parent.unlink(tmp)
        raise
    parent.fsync()


def make_folder(parent: Dir, name: str) -> None:
    try:
        st = parent.lstat(name)
    except FileNotFoundError:
        parent.mkdir(name)
        return
    if not stat.S_ISDIR(st.st_mode):
        parent.unlink(name)
        parent.mkdir(name)


def remove(parent: Dir, name: str) -> None:
    """A file or link, or an empty folder (a folder with content is refused)."""
    try:
        st = parent.lstat(name)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        parent.rmdir(name)
    else:
        parent.unlink(name)
    parent.fsync()


def _clear_empty_folder(parent: Dir, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(parent.lstat(name).st_mode):
            parent.rmdir(name)  # only an empty one: a folder with files is refused
