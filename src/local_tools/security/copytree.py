"""Copying one located entry (file, symlink or directory tree) through descriptors.

Everything is read relative to directory descriptors the jail produced, with
``O_NOFOLLOW`` at every step: a directory inside the source that is swapped for a
symlink is never entered (``Changed``: the caller cleans up and redoes the whole
operation), and a symlink is copied as a symlink with the same text, never followed.
Copying the link text is harmless: anything later reading through the copy is
resolved by the jail again, and refused if it leads outside.

The copy is built under a fresh name (``create``); the caller renames it into place,
so the destination appears whole or not at all, and removes it on failure
(``discard``). Special files (FIFOs, sockets, devices) are refused: opening them
has effects and they have no content to copy.

Limits (``MAX_COPY_ENTRIES``, ``MAX_COPY_BYTES``) are checked on a first pass
(``measure``) so an oversized copy fails before writing anything, and again while
copying, since the tree may grow in between.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
import sys
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass

from local_tools.core.errors import InvalidInput
from local_tools.security.delete import remove_tree
from local_tools.security.dirfd import Dir, is_link, write_all
from local_tools.security.os_errors import Changed
from local_tools.security.pathparts import shown
from local_tools.security.syscalls import O_BINARY, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK, READ_FLAGS

__all__ = ["MAX_COPY_BYTES", "MAX_COPY_ENTRIES", "Budget", "Check", "create", "discard", "measure"]

MAX_COPY_ENTRIES = 10_000  # files, directories and symlinks below the source
MAX_COPY_BYTES = 1 << 30  # total file content

Check = Callable[[], None]  # called between steps; raises to stop (cancellation)

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY
_CHUNK = 1 << 20


@dataclass
class Budget:
    """What a copy has cost so far, against the limits."""

    path: str  # the user's source path, for messages
    entries: int = 0
    bytes: int = 0
    files: int = 0  # regular files and symlinks created

    def entry(self) -> None:
        self.entries += 1
        if self.entries > MAX_COPY_ENTRIES:
            raise InvalidInput(
                f"'{shown(self.path)}' has more than {MAX_COPY_ENTRIES} entries (files, "
                f"folders and links); a copy is limited to {MAX_COPY_ENTRIES} entries and "
                f"{_size(MAX_COPY_BYTES)}. Copy smaller parts of it, or use a shell command."
            )

    def content(self, size: int) -> None:
        self.bytes += size
        if self.bytes > MAX_COPY_BYTES:
            raise InvalidInput(
                f"'{shown(self.path)}' holds more than {_size(MAX_COPY_BYTES)} of data; a copy "
                f"is limited to {_size(MAX_COPY_BYTES)} and {MAX_COPY_ENTRIES} entries. Copy "
                "smaller parts of it, or use a shell command."
            )


def _size(n: int) -> str:
    return f"{n / (1 << 30):g} GB" if n >= 1 << 30 else f"{n / (1 << 20):g} MB"


def _refuse_special(st: os.stat_result, rel: str) -> None:
    if not (stat_mod.S_ISREG(st.st_mode) or stat_mod.S_ISDIR(st.st_mode) or is_link(st)):
        raise InvalidInput(
            f"'{shown(rel)}' is a special file (FIFO, socket or device); only files, "
            "directories and symlinks can be copied or moved. Nothing was changed."
        )


def _walk(top: Dir, rel: str) -> Iterator[tuple[Dir, str, os.stat_result, str]]:
    """(directory, name, lstat, relative path) of everything below `top`, pre-order;
    subdirectories are opened with O_NOFOLLOW (Changed if one became a symlink)."""
    stack: list[tuple[Dir, Iterator[tuple[str, os.stat_result]], str]] = [
        (top, iter(top.entries()), rel)
    ]
    try:
        while stack:
            here, todo, where = stack[-1]
            item = next(todo, None)
            if item is None:
                stack.pop()
                if stack:
                    here.close()
                continue
            name, st = item
            sub_rel = f"{where}/{name}"
            yield here, name, st, sub_rel
            if stat_mod.S_ISDIR(st.st_mode) and not is_link(st):
                sub = here.child(name)
                stack.append((sub, iter(sub.entries()), sub_rel))
    finally:
        for d, _, _ in stack[1:]:
            d.close()


def measure(top: Dir, budget: Budget, check: Check) -> None:
    """First pass over a source directory: limits and special files, before any write."""
    for _, _, st, rel in _walk(top, budget.path):
        check()
        _refuse_special(st, rel)
        budget.entry()
        if stat_mod.S_ISREG(st.st_mode):
            budget.content(st.st_size)


def create(
    src_parent: Dir | None,
    src_name: str,
    st: os.stat_result,
    dst_parent: Dir,
    dst_name: str,
    *,
    budget: Budget,
    check: Check,
    keep_times: bool,
    src_dir: Dir | None = None,
) -> None:
    """Create `dst_name` in `dst_parent` as a copy of the entry `st` describes.

    The source is `src_name` in `src_parent`, or the already open directory `src_dir`
    (a root being copied). `dst_name` must not exist; on failure part of it may, and
    the caller removes it with ``discard``.
    """
    check()
    _refuse_special(st, budget.path)
    if stat_mod.S_ISDIR(st.st_mode) and not is_link(st):
        if src_dir is not None:
            _copy_dir(src_dir, st, dst_parent, dst_name, budget, check, keep_times)
        else:
            assert src_parent is not None
            top = src_parent.child(src_name)
            try:
                _copy_dir(top, st, dst_parent, dst_name, budget, check, keep_times)
            finally:
                top.close()
    else:
        assert src_parent is not None
        if stat_mod.S_ISREG(st.st_mode):
            Budget(budget.path).content(st.st_size)  # refuse an oversized file up front
        _copy_leaf(src_parent, src_name, st, dst_parent, dst_name, budget, check, keep_times)
    dst_parent.fsync()


def discard(parent: Dir, name: str) -> None:
    """Remove a partial copy (best effort: it has a temp name nobody else uses)."""
    with suppress(OSError, Changed):
        st = parent.lstat(name)
        if stat_mod.S_ISDIR(st.st_mode) and not is_link(st):
            sub = parent.child(name)
            try:
                _make_writable(sub)
                remove_tree(sub)
            finally:
                sub.close()
            parent.rmdir(name)
        else:
            parent.unlink(name)


def _make_writable(top: Dir) -> None:
    """Read-only directories in a partial copy would block removing it."""
    with suppress(OSError):
        top.chmod(0o700)
    for here, name, st, _ in _walk(top, ""):
        if stat_mod.S_ISDIR(st.st_mode) and not is_link(st):
            with suppress(OSError, Changed):
                sub = here.child(name)
                try:
                    sub.chmod(0o700)
                finally:
                    sub.close()


def _copy_dir(
    top: Dir,
    st: os.stat_result,
    dst_parent: Dir,
    dst_name: str,
    budget: Budget,
    check: Check,
    keep_times: bool,
) -> None:
    """Copy the open directory `top` to a new `dst_name`; at most one descriptor pair
    per level is open, so a wide tree cannot exhaust descriptors."""
    measure(top, Budget(budget.path), check)  # limits and specials, before writing
    dst_parent.mkdir(dst_name)
    out = dst_parent.child(dst_name)
    # (source dir, its copy, entries left, source lstat, relative path for messages)
    Frame = tuple[Dir, Dir, Iterator[tuple[str, os.stat_result]], os.stat_result, str]
    stack: list[Frame] = []
    try:
        stack.append((top, out, iter(top.entries()), st, budget.path))
    except BaseException:
        out.close()
        raise
    try:
        while stack:
            src, dst, todo, dir_st, rel = stack[-1]
            item = next(todo, None)
            if item is None:
                stack.pop()
                try:
                    _finish_dir(dst, dir_st, keep_times)
                finally:
                    dst.close()
                    if stack:  # `top` belongs to the caller
                        src.close()
                continue
            name, entry_st = item
            entry_rel = f"{rel}/{name}"
            budget.entry()
            check()
            if not stat_mod.S_ISDIR(entry_st.st_mode) or is_link(entry_st):
                _refuse_special(entry_st, entry_rel)
                _copy_leaf(src, name, entry_st, dst, name, budget, check, keep_times)
                continue
            dst.mkdir(name)
            sub_src = src.child(name)
            try:
                sub_dst = dst.child(name)
            except BaseException:
                sub_src.close()
                raise
            # On the stack before listing, so `finally` closes both if listing fails.
            stack.append((sub_src, sub_dst, iter(()), entry_st, entry_rel))
            stack[-1] = (sub_src, sub_dst, iter(sub_src.entries()), entry_st, entry_rel)
    finally:
        for i, (src, dst, _, _, _) in enumerate(stack):
            dst.close()
            if i:
                src.close()


def _finish_dir(d: Dir, st: os.stat_result, keep_times: bool) -> None:
    # Modes last: a read-only folder could not have been filled.
    d.chmod(stat_mod.S_IMODE(st.st_mode) & 0o777)
    if keep_times:
        times = (st.st_atime_ns, st.st_mtime_ns)
        if d.fd is not None and os.utime in os.supports_fd:
            os.utime(d.fd, ns=times)
        elif d.fd is None:
            os.utime(d.path, ns=times)
    d.fsync()


def _copy_leaf(
    src_parent: Dir,
    src_name: str,
    st: os.stat_result,
    dst_parent: Dir,
    dst_name: str,
    budget: Budget,
    check: Check,
    keep_times: bool,
) -> None:
    """A symlink (same text, never followed) or a regular file."""
    if is_link(st):
        try:
            target = src_parent.readlink(src_name)
        except OSError:  # no longer a symlink
            raise Changed from None
        dst_parent.symlink(target, dst_name)
    else:
        _copy_file(src_parent, src_name, dst_parent, dst_name, budget, check, keep_times)
    budget.files += 1


def _copy_file(
    src_parent: Dir,
    src_name: str,
    dst_parent: Dir,
    dst_name: str,
    budget: Budget,
    check: Check,
    keep_times: bool,
) -> None:
    try:
        fd_in = src_parent.open(src_name, READ_FLAGS)
    except FileNotFoundError:
        raise Changed from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # became a symlink since it was listed
            raise Changed from None
        raise
    try:
        st = os.fstat(fd_in)
        if not stat_mod.S_ISREG(st.st_mode):  # became a FIFO or a directory
            raise Changed
        if sys.platform != "win32" and O_NONBLOCK:
            os.set_blocking(fd_in, True)
        mode = stat_mod.S_IMODE(st.st_mode) & 0o777  # rwx bits; never setuid
        fd_out = dst_parent.open(dst_name, _NEW_FILE, 0o600)
        try:
            while chunk := os.read(fd_in, _CHUNK):
                budget.content(len(chunk))
                write_all(fd_out, chunk)
                check()
            if hasattr(os, "fchmod"):
                os.fchmod(fd_out, mode)
            if keep_times and os.utime in os.supports_fd:
                os.utime(fd_out, ns=(st.st_atime_ns, st.st_mtime_ns))
            os.fsync(fd_out)
        finally:
            os.close(fd_out)
        if not hasattr(os, "fchmod"):
            os.chmod(dst_parent.at(dst_name), mode)
    finally:
        os.close(fd_in)
