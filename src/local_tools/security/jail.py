"""The workspace jail: every path a tool touches is resolved and used through here.

Containment is decided by the kernel or by our own symlink walk, never by comparing
strings. A path is accepted when the file it names, with every symlink followed
(the final one too), lies inside an allowed root; writes also need a writable root
outside the system directories.

This module holds the public ``Jail`` and its operations (read, write, list, delete,
move, copy). The machinery lives beside it:

- ``resolve``: the engines (``openat2``, ``walk``, ``path``) and the symlink, `..`
  and ``/proc`` policy that turn a path into a checked directory descriptor;
- ``roots``: the allowed roots and which real paths may be written;
- ``dirfd``: the directory handle operations run on; ``delete``: recursive removal;
- ``listing``: directory entries, symlinks reported with their text, never followed;
- ``transfer`` and ``copytree``: move and copy, files and trees, through descriptors;
- ``atomic_write``: temp file, fsync, rename;
- ``syscalls``: flags and the ctypes ``openat2``/``renameat2`` calls;
- ``os_errors``: the one OSError to ToolError boundary, and retries after a race;
- ``pathparts``: component-wise path comparison and printable paths.

Operations run on the directory descriptors the resolution produced, with
``O_NOFOLLOW`` on the last component, so swapping a checked directory for a symlink
cannot redirect them.

Policy decisions made by the operations here (resolution's are in ``resolve``):

- Writing replaces a final symlink (the target is never written), but only when the
  link's target would itself be writable, so a link pointing outside is refused
  rather than silently swapped. ``delete`` and ``stat(follow_symlinks=False)`` act on a
  final symlink itself, wherever it points.
- A hard link cannot be told apart from the file it shares, so reading one that
  leads outside is not detected. Writes are safe anyway: ``write_atomic`` replaces the
  name, and ``append`` refuses files with more than one link.
- ``rename`` and ``copy`` act on a final symlink itself: it is moved, or copied as a
  symlink with the same text (even one pointing outside: reading through the copy is
  jailed like any other path). Their rules are in ``transfer``.
- Atomic writes use a temp file named ``.lt-tmp-<name>.<random>`` in the target's
  directory (see ``atomic_write``); any leftover with that prefix is safe to delete.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_mod
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from local_tools.core.errors import AlreadyExists, InvalidInput, PermissionDenied
from local_tools.security.atomic_write import TEMP_PREFIX, temp_name, write_atomically
from local_tools.security.copytree import MAX_COPY_BYTES, MAX_COPY_ENTRIES, Check
from local_tools.security.delete import delete_entry
from local_tools.security.dirfd import Dir, is_link, require_regular, write_all
from local_tools.security.listing import DirEntryInfo, list_entries
from local_tools.security.os_errors import Changed, run_operation
from local_tools.security.pathparts import shown
from local_tools.security.resolve import (
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    MAX_SYMLINK_HOPS,
    Engine,
    EngineName,
    Resolver,
    pick_engine,
)
from local_tools.security.roots import POSIX_SYSTEM_DIRS, Roots, StrPath
from local_tools.security.syscalls import (
    O_BINARY,
    O_CLOEXEC,
    O_NOFOLLOW,
    O_NONBLOCK,
    READ_FLAGS,
    openat2_available,
)
from local_tools.security.transfer import Transferred, transfer

__all__ = [
    "MAX_COPY_BYTES",
    "MAX_COPY_ENTRIES",
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "MAX_SYMLINK_HOPS",
    "POSIX_SYSTEM_DIRS",
    "TEMP_PREFIX",
    "DirEntryInfo",
    "Engine",
    "Jail",
    "Transferred",
    "openat2_available",
]


class Jail:
    """Confines paths to a workspace plus optional extra roots.

    root: the workspace (writable). extra_roots: read-only. writable_roots: writable.
    A directory listed both ways is read-only (the safer reading). engine: see
    ``local_tools.security.resolve``; "auto" picks openat2 where the kernel allows it.
    """

    root: Path

    def __init__(
        self,
        root: StrPath,
        *,
        extra_roots: Sequence[StrPath] = (),
        writable_roots: Sequence[StrPath] = (),
        engine: Engine = "auto",
    ) -> None:
        self.engine: EngineName = pick_engine(engine)
        self._roots = Roots(root, extra_roots, writable_roots)
        self._resolver = Resolver(self.engine, self._roots)
        self.root = self._roots.workspace

    @property
    def roots(self) -> tuple[tuple[Path, bool], ...]:
        """(real path, writable) of every allowed root, the workspace first."""
        return tuple((r.path, r.writable) for r in self._roots.items)

    # ------------------------------------------------------------------ public API

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """Absolute real path inside an allowed root (it may not exist yet)."""

        def once() -> Path:
            with self._resolver.locate(path, follow_final=True) as loc:
                if write:
                    self._roots.check_writable(loc.real, path)
                return loc.real

        return run_operation("resolve", path, once)

    def open_dir(self, path: str, *, write: bool = False) -> tuple[Dir, Path]:
        """A descriptor on the existing directory `path`, resolved like any path, and its
        real path. Operations through it stay in that directory whatever is renamed or
        swapped for a symlink above it later. The caller closes it."""

        def once() -> tuple[Dir, Path]:
            with self._resolver.locate(path, follow_final=True) as loc:
                if write:
                    self._roots.check_writable(loc.real, path)
                if not loc.tail:
                    if loc.dir.fd is None:
                        return Dir(None, loc.dir.path), loc.real
                    return Dir(os.dup(loc.dir.fd), loc.dir.path), loc.real
                loc.require_entry(path)  # NOT_FOUND when missing
                st = loc.dir.lstat(loc.name)
                if not stat_mod.S_ISDIR(st.st_mode):
                    raise InvalidInput(f"Path '{shown(path)}' is not a directory.")
                return loc.dir.child(loc.name), loc.real

        return run_operation("open", path, once)

    def refuse_roots_inside(self, real: Path, path: str, action: str) -> None:
        """PermissionDenied when the directory `real` holds another root or a system
        directory (a recursive delete or a replacement would take it)."""
        self._roots.refuse_protected_inside(real, path, action)

    def display(self, path: StrPath) -> str:
        """Workspace-relative with forward slashes ("." for the root); else absolute."""
        return self._roots.display(path)

    def is_writable(self, path: StrPath) -> bool:
        """Whether a resolved real path may be written (no disk access)."""
        return self._roots.is_writable(path)

    def open_read(self, path: str) -> BinaryIO:
        """A binary file object for a regular file, opened beneath its root."""
        return self.open_read_resolved(path)[0]

    def open_read_resolved(
        self, path: str, *, regular_first: bool = False
    ) -> tuple[BinaryIO, Path]:
        """``open_read`` plus the real path of the file it opened.

        The path comes from the resolution that opened the file, so it names that
        file (a later ``resolve`` could see a swapped symlink) and costs no second one.
        `regular_first`: refuse anything but a regular file before opening it (an lstat
        first), for an open made ahead of the policy decision: opening a device or FIFO
        may have effects, a regular file's open has none.
        """

        def once() -> tuple[BinaryIO, Path]:
            with self._resolver.locate(path, follow_final=True) as loc:
                loc.require_entry(path)
                real = loc.real
                if regular_first:
                    require_regular(loc.dir.lstat(loc.name), path)
                try:
                    fd = loc.dir.open(loc.name, READ_FLAGS)
                except OSError as exc:
                    if exc.errno == errno.ELOOP:  # the checked file became a symlink
                        raise Changed from None
                    raise
            try:
                st = os.fstat(fd)
                require_regular(st, path)
                if sys.platform != "win32" and O_NONBLOCK:
                    os.set_blocking(fd, True)
                return os.fdopen(fd, "rb"), real
            except BaseException:
                os.close(fd)
                raise

        return run_operation("read", path, once)

    def stat(self, path: str, *, follow_symlinks: bool = True) -> os.stat_result:
        def once() -> os.stat_result:
            with self._resolver.locate(path, follow_final=follow_symlinks) as loc:
                if not loc.tail:
                    return loc.dir.fstat()
                loc.require_entry(path)
                # Any final symlink was already followed by the resolution.
                return loc.dir.lstat(loc.name)

        return run_operation("stat", path, once)

    def scandir(self, path: str = ".") -> list[DirEntryInfo]:
        """Entries of a directory, sorted by name; symlinks are reported as symlinks."""

        def once() -> list[DirEntryInfo]:
            with self._resolver.locate(path, follow_final=True) as loc:
                if not loc.tail:
                    return list_entries(loc.dir)
                loc.require_entry(path)
                st = loc.dir.lstat(loc.name)
                if not stat_mod.S_ISDIR(st.st_mode):
                    raise InvalidInput(
                        f"Path '{shown(path)}' is a file, not a directory; use read_file."
                    )
                sub = loc.dir.child(loc.name)
                try:
                    return list_entries(sub)
                finally:
                    sub.close()

        return run_operation("list", path, once)

    def write_atomic(
        self,
        path: str,
        data: bytes,
        *,
        exclusive: bool = False,
        make_parents: bool = True,
        mode: int | None = None,
    ) -> bool:
        """Replace or create a file atomically; returns True if it did not exist.

        The data goes to a temp file in the same directory, is fsynced and renamed
        over the target, then the directory is fsynced. A symlink at the target is
        replaced, never written through. exclusive=True never replaces anything.
        `mode`: the permission bits to give it (default: the old file's, else umask's).
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidInput(f"Data to write must be bytes, got {type(data).__name__}.")

        def once() -> bool:
            with self._resolver.locate(path, follow_final=False) as loc:
                self._roots.check_writable(loc.real, path)
                loc.require_not_dir(path)
                with loc.parent_dir(path, make_parents, "make_parents") as parent:
                    return self._write_into(parent, loc.name, data, path, exclusive, mode)

        return run_operation("write", path, once)

    def symlink(self, path: str, target: str) -> None:
        """Make `path` a symlink to `target` (as given, not checked), replacing a file or
        link there in one rename: readers see the old entry or the new link."""

        def once() -> None:
            with self._resolver.locate(path, follow_final=False) as loc:
                self._roots.check_writable(loc.real, path)
                loc.require_not_dir(path)
                with loc.parent_dir(path, True, "make_parents") as parent:
                    tmp = temp_name(loc.name)
                    parent.symlink(target, tmp)
                    try:
                        parent.rename(tmp, loc.name)
                    except BaseException:
                        with contextlib.suppress(OSError):
                            parent.unlink(tmp)
                        raise
                    parent.fsync()

        run_operation("create symlink", path, once)

    def append(self, path: str, data: bytes, *, make_parents: bool = True) -> bool:
        """Append to a file (created if missing); returns True if it was created.

        A final symlink is followed when its target is writable: appending adds to
        the file, it cannot replace a link.
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidInput(f"Data to append must be bytes, got {type(data).__name__}.")

        def once() -> bool:
            with self._resolver.locate(path, follow_final=True) as loc:
                self._roots.check_writable(loc.real, path)
                loc.require_not_dir(path)
                with loc.parent_dir(path, make_parents, "make_parents") as parent:
                    flags = os.O_WRONLY | os.O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_BINARY
                    created = True
                    try:
                        fd = parent.open(loc.name, flags | os.O_CREAT | os.O_EXCL)
                    except FileExistsError:
                        created = False
                        # Refuse FIFOs and devices before opening: opening has effects.
                        existing = parent.lstat(loc.name)
                        if is_link(existing):  # a link appeared since we resolved
                            raise Changed from None
                        require_regular(existing, path)
                        try:
                            fd = parent.open(loc.name, flags | O_NONBLOCK)
                        except FileNotFoundError:
                            raise Changed from None
                        except OSError as exc:
                            if exc.errno == errno.ELOOP:
                                raise Changed from None
                            raise
                    try:
                        st = os.fstat(fd)
                        require_regular(st, path)
                        if st.st_nlink > 1:
                            # In-place writes reach every hard link, maybe outside.
                            raise PermissionDenied(
                                f"Path '{shown(path)}' has {st.st_nlink} hard links; appending "
                                "would also change the other names, which may be outside the "
                                "workspace. Rewrite the whole file instead (that replaces it)."
                            )
                        write_all(fd, data)
                    finally:
                        os.close(fd)
                    return created

        return run_operation("append to", path, once)

    def mkdir(self, path: str, *, parents: bool = True) -> bool:
        """Create a directory; returns False if it already existed."""

        def once() -> bool:
            with self._resolver.locate(path, follow_final=True) as loc:
                if not loc.tail:
                    return False
                if len(loc.tail) == 1:
                    try:
                        st = loc.dir.lstat(loc.name)
                    except FileNotFoundError:
                        pass
                    else:
                        if stat_mod.S_ISDIR(st.st_mode):
                            return False
                        raise AlreadyExists(
                            f"Path '{shown(path)}' already exists and is not a directory."
                        )
                self._roots.check_writable(loc.real, path)
                with loc.parent_dir(path, parents, "parents") as parent:
                    try:
                        parent.mkdir(loc.name)
                    except FileExistsError:
                        raise Changed from None
                return True

        return run_operation("create directory", path, once)

    def delete(self, path: str, *, recursive: bool = False) -> str:
        """Delete a file, symlink or directory; returns which it was.

        A symlink is removed, never followed; recursive deletion works through
        directory descriptors and removes symlinks inside without touching targets.
        """

        def once() -> str:
            with self._resolver.locate(path, follow_final=False) as loc:
                if not loc.tail:
                    if not loc.parts:
                        raise PermissionDenied(
                            f"Path '{shown(path)}' is the {loc.root.kind} {loc.root.path} "
                            "itself, which cannot be deleted. Delete entries inside it."
                        )
                    real = loc.real  # named through '..': delete it by its real name
                    return self.delete(str(real), recursive=recursive)
                loc.require_entry(path)
                return delete_entry(loc, self._roots, path, recursive)

        return run_operation("delete", path, once)

    def rename(
        self, src: str, dst: str, *, overwrite: bool = False, check: Check | None = None
    ) -> str:
        """Move `src` to the new path `dst`; returns what it was (file, directory, symlink).

        One atomic rename where possible (never replacing `dst` unless `overwrite`);
        across file systems a copy put in place whole, then the source removed.
        `check` is called between steps of a copy and may raise to stop it.
        """
        return transfer(
            self._resolver, self._roots, src, dst, move=True, overwrite=overwrite, check=check
        ).kind

    def copy(
        self, src: str, dst: str, *, overwrite: bool = False, check: Check | None = None
    ) -> Transferred:
        """Copy a file, symlink (as a link) or directory tree to the new path `dst`.

        The copy is built under a temp name and renamed into place: `dst` appears
        whole or not at all. Returns (kind, files), files counting files and links.
        """
        return transfer(
            self._resolver, self._roots, src, dst, move=False, overwrite=overwrite, check=check
        )

    # ------------------------------------------------------------------ helpers

    def _check_link_target(self, path: str) -> None:
        """A final symlink about to be replaced must point somewhere writable."""
        with self._resolver.locate(path, follow_final=True) as target:
            self._roots.check_writable(target.real, path)

    def _write_into(
        self,
        parent: Dir,
        name: str,
        data: bytes,
        path: str,
        exclusive: bool,
        mode: int | None = None,
    ) -> bool:
        try:
            old: os.stat_result | None = parent.lstat(name)
        except FileNotFoundError:
            old = None
        if old is not None:
            if is_link(old):  # checked first: a link out is refused as an escape
                self._check_link_target(path)
            if exclusive:
                raise AlreadyExists(
                    f"Path '{shown(path)}' already exists. Choose another name, or allow "
                    "overwriting."
                )
            if stat_mod.S_ISDIR(old.st_mode) and not is_link(old):
                raise InvalidInput(
                    f"Path '{shown(path)}' is a directory. Give the path of a file inside it."
                )
            if stat_mod.S_ISREG(old.st_mode) and mode is None:
                mode = stat_mod.S_IMODE(old.st_mode) & 0o777  # keep rwx bits, drop setuid
            elif not is_link(old):
                require_regular(old, path)
        write_atomically(parent, name, data, mode=mode, exclusive=exclusive, path=path)
        return old is None
