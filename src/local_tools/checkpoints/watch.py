"""Which paths under a workspace changed since the last look, from inotify (Linux only).

A checkpoint re-adds only these paths to the shadow repository instead of letting
`git add -A` lstat every file of the tree. Whenever the watcher cannot vouch for the
complete answer (queue overflow, a watched directory renamed, a watch it could not add),
`drain` says so with None and the caller falls back to a full scan.

Why a renamed directory is fatal: each watch knows its directory by the path it had when
the watch was added; after a rename every event below it would carry a stale path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["TreeWatcher"]

# <sys/inotify.h>
_IN_MODIFY = 0x00000002
_IN_ATTRIB = 0x00000004
_IN_CLOSE_WRITE = 0x00000008
_IN_MOVED_FROM = 0x00000040
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_DELETE = 0x00000200
_IN_DELETE_SELF = 0x00000400
_IN_MOVE_SELF = 0x00000800
_IN_UNMOUNT = 0x00002000
_IN_Q_OVERFLOW = 0x00004000
_IN_IGNORED = 0x00008000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_EXCL_UNLINK = 0x04000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = 0o4000  # O_NONBLOCK
_IN_CLOEXEC = 0o2000000  # O_CLOEXEC

_MASK = (
    _IN_CREATE
    | _IN_DELETE
    | _IN_MODIFY
    | _IN_CLOSE_WRITE
    | _IN_ATTRIB
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_DONT_FOLLOW
    | _IN_EXCL_UNLINK
    | _IN_ONLYDIR
)
# Events that name a child which may be a directory to watch from now on. IN_ATTRIB is
# there for a directory that could not be read before (EACCES) and now can.
_NEW_DIR = _IN_CREATE | _IN_MOVED_TO | _IN_ATTRIB
# Whatever makes every path below a watch unknowable.
_LOST = _IN_MOVE_SELF | _IN_UNMOUNT | _IN_Q_OVERFLOW

_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len
_READ_SIZE = 64 * 1024
# A read shorter than this emptied the queue: no second read (and no EAGAIN) needed.
_FULL_READ = _READ_SIZE - _HEADER.size - 256


class _Lost(Exception):
    """The watcher can no longer tell every change."""


class _Libc:
    def __init__(self, libc: ctypes.CDLL) -> None:
        c_int, c_uint32 = ctypes.c_int, ctypes.c_uint32
        self.init1: Any = libc.inotify_init1
        self.init1.argtypes = [c_int]
        self.init1.restype = c_int
        self.add_watch: Any = libc.inotify_add_watch
        self.add_watch.argtypes = [c_int, ctypes.c_char_p, c_uint32]
        self.add_watch.restype = c_int


@functools.cache
def _libc() -> _Libc | None:
    if sys.platform != "linux":
        return None
    # The process's own symbols hold libc's (glibc and musl alike); find_library spawns
    # ldconfig (~2.5 ms here; gcc or ld where ldconfig has no cache): the last resort.
    for name in (None, "libc.so.6", "find"):
        try:
            path = ctypes.util.find_library("c") if name == "find" else name
            return _Libc(ctypes.CDLL(path, use_errno=True))
        except (OSError, AttributeError):  # no such libc, or one without inotify
            continue
    return None


class TreeWatcher:
    """The inotify watches on one tree, and the changed paths read from them so far."""

    def __init__(
        self,
        fd: int,
        libc: _Libc,
        root: str,
        skip_dir: Callable[[str], bool] | None,
        max_watches: int,
    ) -> None:
        self._fd = fd
        self._libc = libc
        self._root = root
        self._skip_dir = skip_dir
        self._max_watches = max_watches
        self._dirs: dict[int, str] = {}  # wd -> relative posix path ("" for the root)
        self._pending: set[str] = set()
        self._lock = threading.Lock()

    @classmethod
    def start(
        cls,
        root: Path,
        *,
        skip_dir: Callable[[str], bool] | None = None,
        max_watches: int = 50_000,
    ) -> TreeWatcher | None:
        """Watch every directory under root (a real, absolute path), except `.git` folders
        and directories for which skip_dir(relative posix path) is True. None where inotify
        is unavailable, or the tree needs more than max_watches watches or more than the
        kernel allows (ENOSPC)."""
        libc = _libc()
        if libc is None:
            return None
        fd = libc.init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        watcher = cls(fd, libc, os.fspath(root), skip_dir, max_watches)
        try:
            watcher._watch_tree("")
        except _Lost:
            watcher.close()
            return None
        if "" not in watcher._dirs.values():  # the root itself could not be watched
            watcher.close()
            return None
        return watcher

    def drain(self) -> set[str] | None:
        """Relative posix paths created, written, deleted, chmod-ed or moved in/out since the
        last drain (or start); a new directory is reported as itself (its contents are not
        listed). None once the watcher can no longer tell (overflow, a watched directory
        renamed, the root gone, new directories past max_watches or a watch not added): the
        caller scans in full and starts a new watcher."""
        with self._lock:
            self._pump()
            if self._fd < 0:
                return None
            changed, self._pending = self._pending, set()
            return changed

    @property
    def healthy(self) -> bool:
        """False once drain would return None (reads what the kernel has queued to know)."""
        with self._lock:
            self._pump()
            return self._fd >= 0

    def close(self) -> None:
        with self._lock:
            self._close_fd()

    def __del__(self) -> None:
        # Not under the lock: nothing else can hold a reference any more.
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
            self._fd = -1

    def _close_fd(self) -> None:
        # Closing the fd drops every watch and the queue in the kernel; the watcher
        # is no use after a loss anyway, so this happens at the first one.
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._dirs.clear()
        self._pending.clear()

    def _pump(self) -> None:
        """Move the kernel's queued events into self._pending (lock held)."""
        while self._fd >= 0:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                return
            except OSError:
                self._close_fd()
                return
            try:
                self._parse(data)
            except _Lost:
                self._close_fd()
                return
            if len(data) < _FULL_READ:
                return

    def _parse(self, data: bytes) -> None:
        offset, end = 0, len(data)
        while offset < end:
            wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            name = data[offset : offset + size].split(b"\0", 1)[0]
            offset += size
            self._event(wd, mask, name)

    def _event(self, wd: int, mask: int, name: bytes) -> None:
        if mask & _LOST:
            raise _Lost
        if mask & _IN_IGNORED:  # the watch is gone: its directory was deleted
            if self._dirs.pop(wd, None) == "":
                raise _Lost
            return
        parent = self._dirs.get(wd)
        if parent is None:  # a straggler from a watch already removed
            return
        if mask & _IN_DELETE_SELF:
            if parent == "":
                raise _Lost
            return  # the parent's IN_DELETE names it
        if not name or name == b".git":
            return
        path = f"{parent}/{os.fsdecode(name)}" if parent else os.fsdecode(name)
        self._pending.add(path)
        if mask & _IN_ISDIR and mask & _NEW_DIR and not self._skipped(path):
            self._watch_tree(path)

    def _skipped(self, path: str) -> bool:
        return self._skip_dir is not None and self._skip_dir(path)

    def _watch_tree(self, top: str) -> None:
        """Watch top and every directory below it. A watch is added before its directory is
        listed, so a subdirectory created meanwhile is either listed or reported by it."""
        stack = [top]
        add_watch = self._libc.add_watch
        while stack:
            rel = stack.pop()
            path = f"{self._root}/{rel}" if rel else self._root
            wd = add_watch(self._fd, os.fsencode(path), _MASK)
            if wd < 0:
                err = ctypes.get_errno()
                # Gone or replaced (by a file, a symlink) since it was seen: the parent's
                # events report that. Unreadable: git cannot read it either.
                if err in (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM):
                    continue
                raise _Lost  # ENOSPC (max_user_watches) and anything unexpected
            known = self._dirs.get(wd)
            if known is not None:
                if known != rel:
                    raise _Lost  # one directory at two paths (a bind mount)
                continue  # listed when first watched; its events cover the rest
            self._dirs[wd] = rel
            if len(self._dirs) > self._max_watches:
                raise _Lost
            try:
                with os.scandir(path) as entries:
                    for entry in entries:
                        # d_type from the listing, no stat; symlinked dirs are not followed.
                        if entry.name == ".git" or not entry.is_dir(follow_symlinks=False):
                            continue
                        child = f"{rel}/{entry.name}" if rel else entry.name
                        if not self._skipped(child):
                            stack.append(child)
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                continue
