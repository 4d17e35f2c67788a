"""Moving and copying one entry between two places inside the jail.

Both paths are resolved through the jail to directory descriptors, without following
a final symlink: the source's last component is moved or copied itself (a symlink
stays a symlink with the same text), and the destination's last component is a name
that is created or, with overwrite, replaced, never written through.

Policy decisions:

- The destination is the new path itself, never "into" an existing directory (unlike
  ``mv``): an existing destination is ALREADY_EXISTS unless overwrite=true, so a
  rename onto an existing folder cannot silently nest inside it.
- overwrite=true replaces a file or symlink by a file or symlink, and an empty
  directory by a directory; a directory never replaces a file or the reverse, and a
  non-empty directory is never replaced (INVALID_INPUT). A symlink being replaced
  must point somewhere writable, as for writes.
- Missing parents of the destination are created, as for writes.
- A move uses one rename: ``RENAME_NOREPLACE`` without overwrite, so a name that
  appears meanwhile is never clobbered. Across file systems (EXDEV) it copies under a
  temp name, renames that into place, then removes the source; a failed copy leaves
  nothing behind. Copies (and cross-device moves) are limited, see ``copytree``.
- A root is never moved or replaced, nor a directory holding a nested root or a
  system directory; a move needs the source writable too. A directory is never moved
  or copied into itself.
- Special files (FIFOs, sockets, devices) are refused.
"""

from __future__ import annotations

import errno
import os
from typing import NamedTuple

from local_tools.core.errors import (
    AlreadyExists,
    InvalidInput,
    NotFound,
    PermissionDenied,
    StorageError,
    ToolError,
)
from local_tools.security.atomic_write import rename_noreplace, temp_name
from local_tools.security.copytree import Budget, Check, create, discard
from local_tools.security.delete import remove_tree
from local_tools.security.dirfd import Dir, Loc
from local_tools.security.listing import entry_kind
from local_tools.security.os_errors import Changed, convert, run_operation
from local_tools.security.pathparts import abs_parts, rel_parts, shown
from local_tools.security.resolve import Resolver
from local_tools.security.roots import Roots

__all__ = ["Transferred", "transfer"]


class Transferred(NamedTuple):
    kind: str  # "file" | "directory" | "symlink"
    files: int  # regular files and symlinks written (0 for a plain rename)


def _no_check() -> None:
    pass


def transfer(
    resolver: Resolver,
    roots: Roots,
    src: str,
    dst: str,
    *,
    move: bool,
    overwrite: bool,
    check: Check | None = None,
) -> Transferred:
    """Move or copy `src` to `dst`; see the module docstring for the rules."""
    op = "move" if move else "copy"

    def once() -> Transferred:
        with resolver.locate(src, follow_final=False) as s:
            if not s.tail and s.parts:  # named through '..': use its real name
                return transfer(resolver, roots, str(s.real), dst, move=move,
                                overwrite=overwrite, check=check)  # fmt: skip
            with resolver.locate(dst, follow_final=False) as d:
                if not d.tail and d.parts:
                    return transfer(resolver, roots, src, str(d.real), move=move,
                                    overwrite=overwrite, check=check)  # fmt: skip
                job = _Job(resolver, roots, s, d, src, dst, move, overwrite)
                return job.run(check or _no_check)

    return run_operation(op, f"{shown(src)}' to '{shown(dst)}", once)


class _Job:
    def __init__(
        self,
        resolver: Resolver,
        roots: Roots,
        s: Loc,
        d: Loc,
        src: str,
        dst: str,
        move: bool,
        overwrite: bool,
    ) -> None:
        self.resolver, self.roots = resolver, roots
        self.s, self.d = s, d
        self.src, self.dst = src, dst
        self.move, self.overwrite = move, overwrite
        self.alias = False  # dst is another spelling of src (a case-only rename)

    def run(self, check: Check) -> Transferred:
        src_st, kind = self._source()
        dst_st = self._destination(kind, src_st)
        with self.d.parent_dir(self.dst, True, "make_parents") as parent:
            if self.move:
                return Transferred(kind, self._move(parent, kind, src_st, dst_st, check))
            return Transferred(kind, self._copy(parent, src_st, check))

    # ------------------------------------------------------------------ checks

    def _source(self) -> tuple[os.stat_result, str]:
        s, src = self.s, self.src
        if not s.tail:  # a root itself
            if self.move:
                raise PermissionDenied(
                    f"Path '{shown(src)}' is the {s.root.kind} {s.root.path} itself, which "
                    "cannot be moved. Move entries inside it."
                )
            return s.dir.fstat(), "directory"
        s.require_entry(src)
        try:
            st = s.dir.lstat(s.name)
        except FileNotFoundError:
            raise NotFound(
                f"Path '{shown(src)}' does not exist. Check the spelling, or list the parent "
                "directory to see what is there."
            ) from None
        kind = entry_kind(st)
        if kind == "other":
            raise InvalidInput(
                f"'{shown(src)}' is a special file (FIFO, socket or device); only files, "
                "directories and symlinks can be copied or moved."
            )
        if self.move:
            real = s.real
            self._refuse_root(real, src, "moved")
            self.roots.check_writable(real, src)
            if kind == "directory":
                self.roots.refuse_protected_inside(real, src, "moved")
        return st, kind

    def _destination(self, kind: str, src_st: os.stat_result) -> os.stat_result | None:
        """What the destination holds now (None if nothing), after every refusal."""
        d, dst = self.d, self.dst
        if not d.tail:  # a root itself
            if not self.overwrite:
                raise self._exists(is_dir=True)
            raise PermissionDenied(
                f"Path '{shown(dst)}' is the {d.root.kind} {d.root.path} itself, which "
                "cannot be replaced. Give a new path inside it."
            )
        real, src_real = d.real, self.s.real
        self.roots.check_writable(real, dst)
        if abs_parts(str(real)) == abs_parts(str(src_real)):
            raise InvalidInput(
                f"'{shown(self.src)}' and '{shown(dst)}' are the same path. Give a different "
                "destination."
            )
        # [] here is another spelling of the source (case-insensitive), decided below.
        below = rel_parts(abs_parts(str(real)), abs_parts(str(src_real)))
        if below and kind == "directory":
            verb = "moved" if self.move else "copied"
            raise InvalidInput(
                f"'{shown(dst)}' is inside '{shown(self.src)}': a directory cannot be {verb} "
                "into itself. Choose a destination outside it."
            )
        if len(d.tail) > 1:
            return None
        try:
            dst_st = d.dir.lstat(d.name)
        except FileNotFoundError:
            return None
        dst_kind = entry_kind(dst_st)
        same = (dst_st.st_dev, dst_st.st_ino) == (src_st.st_dev, src_st.st_ino)
        if same and (kind == "directory" or src_st.st_nlink == 1):
            # Another spelling of the same entry (case-insensitive file systems); a
            # file with more links is a hard link, handled like any existing name.
            if not self.move:
                raise InvalidInput(
                    f"'{shown(self.src)}' and '{shown(dst)}' are the same file. Give a "
                    "different destination."
                )
            self.alias = True
            return None
        if not self.overwrite:
            raise self._exists(is_dir=dst_kind == "directory")
        self._refuse_root(real, dst, "replaced")
        if dst_kind == "symlink":
            self._check_link_target()
        if kind == "directory" and dst_kind != "directory":
            raise InvalidInput(
                f"'{shown(dst)}' is a {dst_kind}; a directory cannot replace it. Delete it "
                "first, or choose another destination."
            )
        if kind != "directory" and dst_kind == "directory":
            raise InvalidInput(
                f"'{shown(dst)}' is a directory; a {kind} cannot replace it. To put "
                f"'{shown(self.src)}' inside it, give the full new path "
                f"('{shown(dst).rstrip('/')}/<name>')."
            )
        if dst_kind == "directory" and not _is_empty(d.dir, d.name):
            raise self._not_empty()
        return dst_st

    def _refuse_root(self, real: object, path: str, verb: str) -> None:
        for root in self.roots.items:
            if root.path == real:
                raise PermissionDenied(
                    f"Path '{shown(path)}' is the {root.kind} {root.path} itself, which "
                    f"cannot be {verb}."
                )

    def _check_link_target(self) -> None:
        """A symlink about to be replaced must point somewhere writable (as for writes)."""
        with self.resolver.locate(self.dst, follow_final=True) as target:
            self.roots.check_writable(target.real, self.dst)

    def _exists(self, *, is_dir: bool) -> AlreadyExists:
        what = "an existing directory" if is_dir else "an existing entry"
        hint = (
            f" To put it inside that directory, give the full new path "
            f"('{shown(self.dst).rstrip('/')}/<name>')."
            if is_dir
            else ""
        )
        return AlreadyExists(
            f"Destination '{shown(self.dst)}' is {what}. Pass overwrite=true to replace it, "
            f"or choose another name.{hint}",
            details={"destination_is_directory": is_dir},
        )

    def _not_empty(self) -> InvalidInput:
        return InvalidInput(
            f"Destination '{shown(self.dst)}' is a directory that is not empty; it is never "
            "replaced. Delete it first, or choose another destination."
        )

    # ------------------------------------------------------------------ actions

    def _move(
        self,
        parent: Dir,
        kind: str,
        src_st: os.stat_result,
        dst_st: os.stat_result | None,
        check: Check,
    ) -> int:
        s, name = self.s, self.d.name
        if dst_st is not None and (dst_st.st_dev, dst_st.st_ino) == (
            src_st.st_dev,
            src_st.st_ino,
        ):
            # Hard links to one file: rename() would do nothing, so drop the source name.
            s.dir.unlink(s.name)
            s.dir.fsync()
            return 0
        try:
            if self.overwrite or self.alias:
                s.dir.replace_into(s.name, parent, name)
            else:
                rename_noreplace(s.dir, s.name, parent, name, self.dst)
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                return self._move_across(parent, kind, src_st, check)
            raise self._rename_error(exc) from None
        parent.fsync()
        s.dir.fsync()
        return 0

    def _move_across(self, parent: Dir, kind: str, src_st: os.stat_result, check: Check) -> int:
        """Another file system: copy under a temp name, put it in place, drop the source."""
        files = self._copy(parent, src_st, check, keep_times=True)
        s = self.s
        try:
            if kind == "directory":
                sub = s.dir.child(s.name)
                try:
                    remove_tree(sub)
                finally:
                    sub.close()
                s.dir.rmdir(s.name)
            else:
                s.dir.unlink(s.name)
            s.dir.fsync()
        except (OSError, Changed) as exc:
            # Not retried: the copy is complete and in place; redoing would copy twice.
            if isinstance(exc, OSError):
                detail = convert(exc, "remove", shown(self.src)).message
            else:
                detail = "it changed while being removed"
            raise StorageError(
                f"'{shown(self.dst)}' now holds a complete copy of '{shown(self.src)}', but "
                f"the source could not be fully removed ({detail}). Delete what is left of "
                f"'{shown(self.src)}' once you have checked the copy."
            ) from None
        return files

    def _copy(
        self, parent: Dir, src_st: os.stat_result, check: Check, keep_times: bool = False
    ) -> int:
        """Build the copy under a temp name, then rename it into place (all or nothing)."""
        s, name = self.s, self.d.name
        tmp = temp_name(name)
        budget = Budget(self.src)
        try:
            create(
                s.dir if s.tail else None,
                s.name if s.tail else "",
                src_st,
                parent,
                tmp,
                budget=budget,
                check=check,
                keep_times=keep_times,
                src_dir=None if s.tail else s.dir,
            )
            if self.overwrite:
                try:
                    parent.rename(tmp, name)
                except OSError as exc:
                    raise self._rename_error(exc) from None
            else:
                rename_noreplace(parent, tmp, parent, name, self.dst)
        except BaseException:
            discard(parent, tmp)
            raise
        parent.fsync()
        return budget.files

    def _rename_error(self, exc: OSError) -> ToolError | OSError:
        """A destination that changed between the checks and the rename."""
        no = exc.errno
        if no in (errno.ENOTEMPTY, errno.EEXIST):
            return self._not_empty()
        if no in (errno.EISDIR, errno.ENOTDIR):
            return InvalidInput(
                f"'{shown(self.dst)}' changed type meanwhile; a directory and a file cannot "
                "replace each other. Check it and try again."
            )
        if no == errno.EINVAL:
            return InvalidInput(
                f"'{shown(self.dst)}' is inside '{shown(self.src)}'; a directory cannot be "
                "moved into itself."
            )
        return exc  # run_operation turns it into a ToolError


def _is_empty(parent: Dir, name: str) -> bool:
    sub = parent.child(name)
    try:
        return not sub.entries()
    finally:
        sub.close()
