"""Whether a file operation under a jail's roots cannot hang on a network filesystem.

A sync tool runs in a worker thread so that its deadline can free the caller when it
blocks. A tool may run a call inline instead when it cannot block for long (see
``Tool.quick``); one thing that can block any file operation, however small, is a
network or FUSE filesystem that hangs. ``roots_on_local_disk`` says whether such a
filesystem is out of reach: each root is on a filesystem of a known local type and no
other kind is mounted inside one. The jail never leaves its roots (symlinks are
followed only within them), so no resolution or read through it can then reach one.

Linux only (``/proc/self/mountinfo``); elsewhere the answer is always False, which
keeps every call in a worker, as before. The table is read again only when the kernel
says it changed (``poll`` on the open file reports a mount or unmount), so a check
costs one ``poll`` system call.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from local_tools.security.syscalls import (
    O_CLOEXEC,
    O_DIRECTORY,
    O_PATH,
    RESOLVE_BENEATH,
    RESOLVE_NO_MAGICLINKS,
    openat2,
)

__all__ = ["quick_stat", "roots_on_local_disk"]

RESOLVE_NO_XDEV = 0x01  # openat2(2): fail rather than cross a mount point

# Filesystems on a local device or in memory. Anything else (nfs, cifs, smb3, 9p,
# virtiofs, fuse.*, ceph, autofs, afs, ...) may block for as long as a network or a
# user process pleases, so it counts as not local.
LOCAL_TYPES = frozenset(
    "ext2 ext3 ext4 xfs btrfs f2fs jfs reiserfs bcachefs zfs tmpfs ramfs overlay "
    "vfat exfat ntfs3 hfsplus squashfs erofs iso9660 udf".split()
)
MOUNTINFO = "/proc/self/mountinfo"


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes."""
    if "\\" not in field:
        return field
    return field.encode("latin-1", "backslashreplace").decode("unicode_escape")


def parse_mountinfo(text: str) -> list[tuple[str, str]]:
    """(mount point, filesystem type) of each line, in mount order."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            dash = fields.index("-", 6)
            mounts.append((_unescape(fields[4]), fields[dash + 1]))
        except (ValueError, IndexError):
            continue
    return mounts


def _inside(path: str, folder: str) -> bool:
    return path == folder or folder == "/" or path.startswith(folder.rstrip("/") + "/")


def all_local(roots: Sequence[str], mounts: Sequence[tuple[str, str]]) -> bool:
    """Whether each root's filesystem, and every mount inside a root, is local."""
    if not mounts:
        return False
    for root in roots:
        holder = ""  # the type of the filesystem holding `root`: the last, deepest mount
        depth = -1
        for point, kind in mounts:
            if _inside(root, point) and len(point) >= depth:
                holder, depth = kind, len(point)
            elif _inside(point, root) and kind not in LOCAL_TYPES:
                return False  # a network or FUSE mount inside the root
        if holder not in LOCAL_TYPES:
            return False
    return True


class _Table:
    """The mount table, read again only after the kernel reports a change."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.file: BinaryIO | None = None
        self.unavailable = False
        self.poller: Any = None  # select.poll: Linux only
        self.mounts: list[tuple[str, str]] = []
        self.answers: dict[tuple[str, ...], bool] = {}

    def local(self, roots: tuple[str, ...]) -> bool:
        with self.lock:
            if not self._fresh():
                return False
            answer = self.answers.get(roots)
            if answer is None:
                answer = self.answers[roots] = all_local(roots, self.mounts)
            return answer

    def _fresh(self) -> bool:
        """Re-read the table if it changed; False when it cannot be read."""
        if sys.platform != "linux" or self.unavailable:
            return False
        try:
            if self.file is None:
                fd = os.open(MOUNTINFO, os.O_RDONLY | O_CLOEXEC)
                self.file = os.fdopen(fd, "rb", buffering=0)
                self.poller = select.poll()
                self.poller.register(fd, select.POLLPRI | select.POLLERR)
                self.poller.poll(0)  # clear the first report: the table is read below
                changed = True
            else:
                assert self.poller is not None
                changed = bool(self.poller.poll(0))
            if changed:
                self.mounts = parse_mountinfo(_read_all(self.file))
                self.answers.clear()
            return True
        except OSError:
            self.unavailable = True
            return False


def _read_all(file: BinaryIO) -> str:
    file.seek(0)
    chunks = []
    while chunk := file.read(65536):
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "surrogateescape")


_table = _Table()


def roots_on_local_disk(roots: Sequence[Path]) -> bool:
    """True when every root (real paths) is on a local filesystem with no network or
    FUSE filesystem mounted inside it; always False off Linux."""
    if sys.platform != "linux":
        return False
    return _table.local(tuple(str(root) for root in roots))


def quick_stat(root: Path, engine: str, path: str) -> os.stat_result | None:
    """What `path` (relative to the workspace `root`) names, stat'ed without leaving
    the root's filesystem, or None whenever that cannot be done surely and cheaply:
    not the openat2 engine, the root not on a local disk, an absolute path outside the
    root, a path or symlink leading out of the root or across a mount point, a missing
    file. A scheduling hint only: it grants nothing (the jail decides every access)."""
    if sys.platform != "linux" or engine != "openat2" or not path or path.startswith("~"):
        return None
    text = str(root)
    if os.path.isabs(path):
        if not (path == text or path.startswith(text.rstrip("/") + "/")):
            return None
        path = os.path.relpath(path, text)
    if not _table.local((text,)):
        return None
    try:
        base = os.open(text, O_PATH | O_DIRECTORY | O_CLOEXEC)
    except OSError:
        return None
    try:
        how = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS
        fd = openat2(base, path, O_PATH | O_CLOEXEC, how)
    except OSError:  # EXDEV, ELOOP, ENOENT, ENOSYS...: not surely quick
        return None
    finally:
        os.close(base)
    try:
        return os.fstat(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
