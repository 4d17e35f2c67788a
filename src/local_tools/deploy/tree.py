"""Walking and opening inside a directory descriptor, never following a symlink.

Everything the deploy reads or writes goes through these: a folder is entered with
O_NOFOLLOW|O_DIRECTORY relative to its parent's descriptor and a file opened with
O_NOFOLLOW|O_NONBLOCK then checked to be a regular file, so swapping any folder or
file for a symlink (or a FIFO) at any moment cannot lead outside or hang.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator

from local_tools.core.errors import InvalidInput
from local_tools.security.dirfd import Dir
from local_tools.security.os_errors import Changed
from local_tools.security.syscalls import READ_FLAGS

__all__ = ["MAX_ENTRIES", "Dirs", "NotRegular", "open_regular", "walk"]

MAX_ENTRIES = 100_000  # entries in the source or the target: beyond, a deploy is refused


class NotRegular(Exception):
    """A path the plan saw as a file is now something else (a symlink, a FIFO, a folder)."""


def walk(top: Dir, shown: str) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of everything under `top`, a folder before its content."""
    count = 0

    def visit(here: Dir, prefix: str) -> Iterator[tuple[str, os.stat_result]]:
        nonlocal count
        for name, st in sorted(here.entries()):
            rel = f"{prefix}{name}"
            count += 1
            if count > MAX_ENTRIES:
                raise InvalidInput(f"{shown} has more than {MAX_ENTRIES} entries: too many.")
            yield rel, st
            if stat.S_ISDIR(st.st_mode):
                try:
                    below = here.child(name)
                except Changed:  # replaced since it was listed: the checks catch it
                    continue
                try:
                    yield from visit(below, rel + "/")
                finally:
                    below.close()

    yield from visit(top, "")


class Dirs:
    """Descriptors on the folders below `top`, opened once and cached; `make` creates
    what is missing (for the staged tree)."""

    def __init__(self, top: Dir) -> None:
        self.top = top
        self._open: dict[str, Dir] = {"": top}

    def get(self, rel_dir: str, *, make: bool = False) -> Dir:
        if rel_dir in self._open:
            return self._open[rel_dir]
        parent_rel, _, name = rel_dir.rpartition("/")
        parent = self.get(parent_rel, make=make)
        if make:
            with contextlib.suppress(FileExistsError):
                parent.mkdir(name)
        try:
            here = parent.child(name)
        except Changed:
            raise FileNotFoundError(f"{rel_dir} is no longer a folder") from None
        self._open[rel_dir] = here
        return here

    def parent_of(self, rel: str, *, make: bool = False) -> tuple[Dir, str]:
        folder, _, name = rel.rpartition("/")
        return self.get(folder, make=make), name

    def close(self) -> None:
        for rel, d in self._open.items():
            if rel:
                d.close()
        self._open = {"": self.top}


def open_regular(folder: Dir, name: str) -> tuple[int, os.stat_result]:
    """A blocking read descriptor on the regular file `name`; never a link or a FIFO."""
    fd = folder.open(name, READ_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(name)
        # READ_FLAGS has O_NONBLOCK (a FIFO cannot hang the open); Windows has none to
        # undo, and Python 3.11 there has no os.set_blocking.
        if sys.platform != "win32":
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st
