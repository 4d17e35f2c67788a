"""Directory handles and located paths: what resolution hands to every operation.

Resolution ends in a ``Loc``: a ``Dir`` (an open descriptor of a directory already
checked to be inside a root or, in the ``path`` engine, its path) plus the names
below it. Operations then name one entry relative to that directory, with
``O_NOFOLLOW``, so nothing after the resolution re-walks the path and swapping a
checked directory for a symlink cannot redirect them. When a step finds that an entry
changed since it was checked, it raises ``Changed`` and the whole operation is redone
from the root.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from local_tools.core.errors import InvalidInput, NotFound
from local_tools.security.os_errors import Changed
from local_tools.security.pathparts import shown
from local_tools.security.roots import Root
from local_tools.security.syscalls import (
    DIR_FLAGS,
    IS_WINDOWS,
    O_CLOEXEC,
    O_DIRECTORY,
    O_NOFOLLOW,
    O_PATH,
)

__all__ = ["Dir", "Loc", "is_link", "require_regular", "write_all"]

_FILE_ATTRIBUTE_REPARSE_POINT = 0x400


def is_link(st: os.stat_result) -> bool:
    if stat_mod.S_ISLNK(st.st_mode):
        return True
    # Junctions are reparse points that redirect like symlinks.
    attrs = getattr(st, "st_file_attributes", 0)
    return bool(IS_WINDOWS and attrs & _FILE_ATTRIBUTE_REPARSE_POINT)


def require_regular(st: os.stat_result, path: object) -> None:
    if stat_mod.S_ISDIR(st.st_mode):
        raise InvalidInput(f"Path '{shown(path)}' is a directory; use list_dir.")
    if not stat_mod.S_ISREG(st.st_mode):
        raise InvalidInput(
            f"Path '{shown(path)}' is a special file (device, FIFO or socket), not a "
            "regular file; it cannot be read or written as a file."
        )


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data).cast("B")
    while view:
        written = os.write(fd, view[: 1 << 30])
        view = view[written:]


class Dir:
    """A directory reached by resolution: a descriptor, or a path in the `path` engine.

    Every operation names a single entry relative to it, so nothing after the
    resolution re-walks the path.
    """

    __slots__ = ("fd", "path")

    def __init__(self, fd: int | None, path: str) -> None:
        self.fd = fd
        self.path = path

    def at(self, name: str) -> str:
        """The argument naming entry `name`: relative to fd, else joined onto path."""
        return name if self.fd is not None else os.path.join(self.path, name)

    def close(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)

    def lstat(self, name: str) -> os.stat_result:
        return os.stat(self.at(name), dir_fd=self.fd, follow_symlinks=False)

    def fstat(self) -> os.stat_result:
        return os.fstat(self.fd) if self.fd is not None else os.stat(self.path)

    def readlink(self, name: str) -> str:
        return os.readlink(self.at(name), dir_fd=self.fd)

    def open(self, name: str, flags: int, mode: int = 0o666) -> int:
        return os.open(self.at(name), flags, mode, dir_fd=self.fd)

    def mkdir(self, name: str) -> None:
        os.mkdir(self.at(name), 0o777, dir_fd=self.fd)

    def rmdir(self, name: str) -> None:
        os.rmdir(self.at(name), dir_fd=self.fd)

    def unlink(self, name: str) -> None:
        os.unlink(self.at(name), dir_fd=self.fd)

    def rename(self, src: str, dst: str) -> None:
        # Same directory on both sides: atomic, and a symlink at dst is replaced.
        os.replace(self.at(src), self.at(dst), src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def replace_into(self, src: str, other: Dir, dst: str) -> None:
        """Rename `src` here to `dst` in `other`, replacing it (atomic on one file system)."""
        os.replace(self.at(src), other.at(dst), src_dir_fd=self.fd, dst_dir_fd=other.fd)

    def symlink(self, target: str, name: str) -> None:
        os.symlink(target, self.at(name), dir_fd=self.fd)

    def chmod(self, mode: int) -> None:
        """Set this directory's own permission bits."""
        if self.fd is not None and hasattr(os, "fchmod"):
            os.fchmod(self.fd, mode)
        else:
            os.chmod(self.path, mode)

    def child(self, name: str) -> Dir:
        """Open the subdirectory `name`; Changed if it is no longer a real directory."""
        if self.fd is None:
            try:
                st = os.stat(self.at(name), follow_symlinks=False)
            except FileNotFoundError:
                raise Changed from None
            if is_link(st) or not stat_mod.S_ISDIR(st.st_mode):
                raise Changed
            return Dir(None, self.at(name))
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=self.fd)
        except PermissionError:
            if not O_PATH:
                raise
            # Searchable but unreadable: still traversable, just not listable.
            fd = os.open(name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, dir_fd=self.fd)
        except (FileNotFoundError, NotADirectoryError):
            raise Changed from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # became a symlink since we looked
                raise Changed from None
            raise
        return Dir(fd, os.path.join(self.path, name))

    def entries(self) -> list[tuple[str, os.stat_result]]:
        """Names with their lstat, skipping entries that vanish while listing."""
        out: list[tuple[str, os.stat_result]] = []
        with os.scandir(self.fd if self.fd is not None else self.path) as it:
            for entry in it:
                try:
                    out.append((entry.name, entry.stat(follow_symlinks=False)))
                except FileNotFoundError:
                    continue
        return out

    def fsync(self) -> None:
        """Best effort: persist the directory entry after a rename."""
        if IS_WINDOWS:
            return
        try:
            if self.fd is not None:
                os.fsync(self.fd)
            else:
                fd = os.open(self.path, DIR_FLAGS)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        except OSError:  # O_PATH descriptors and some file systems cannot fsync a dir
            pass


@dataclass
class Loc:
    """Where a path landed: an existing directory plus what is below it."""

    root: Root  # the root the path was resolved beneath
    dir: Dir  # deepest existing directory reached (owned; closed on exit)
    parts: tuple[str, ...]  # dir's real components below root.path
    tail: tuple[str, ...]  # () = dir itself; (name,) = an entry; longer = missing parents

    @property
    def real(self) -> Path:
        return self.root.path.joinpath(*self.parts, *self.tail)

    @property
    def name(self) -> str:
        return self.tail[-1]

    def __enter__(self) -> Loc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dir.close()

    def require_entry(self, path: object) -> None:
        if not self.tail:
            raise InvalidInput(f"Path '{shown(path)}' is a directory; use list_dir.")
        if len(self.tail) > 1:
            raise NotFound(
                f"Path '{shown(path)}' does not exist ('{self.tail[0]}' is missing). Check "
                "the spelling, or list the parent directory to see what is there."
            )

    def require_not_dir(self, path: object) -> None:
        if not self.tail:
            raise InvalidInput(
                f"Path '{shown(path)}' is a directory. Give the path of a file inside it."
            )

    @contextmanager
    def parent_dir(self, path: str, create: bool, flag: str) -> Iterator[Dir]:
        """The directory that will hold self.name, creating missing parents."""
        if len(self.tail) == 1:
            yield self.dir
            return
        if not create:
            raise NotFound(
                f"The parent directory of '{shown(path)}' does not exist ('{self.tail[0]}' "
                f"is missing). Pass {flag}=true, or create it first."
            )
        opened: list[Dir] = []
        try:
            here = self.dir
            for name in self.tail[:-1]:
                try:
                    here.mkdir(name)
                except FileExistsError:  # created meanwhile: resolve again
                    raise Changed from None
                here = here.child(name)
                opened.append(here)
            yield here
        finally:
            for d in opened:
                d.close()
