"""Carry out a plan: build the planned tree beside the target, then swap it in.

No partial state: the new tree is staged in `.<target>.deploy-<pid>-<token>` in the
target's folder (same file system), all through directory descriptors: files the
target keeps are hard-linked (copied where links are refused), new and changed ones
copied from the source and flushed to disk. Just before the swap the target is
walked again; if anything in it changed meanwhile (a commit in its .git, a file
saved), the staged tree is dropped and nothing happens. Then one RENAME_EXCHANGE
(macOS: RENAME_SWAP) puts the new tree in place: at no instant is the target missing
or half-written, so a kill -9 at any point leaves it as it was or as planned. The old
tree, now at the staging name, is removed; a leftover from a killed run is removed by
the next run. Where the exchange is not available, two renames do the swap and the
next run puts the backup back if a kill came between them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable

import psutil

from local_tools.core.errors import Conflict, PermissionDenied
from local_tools.deploy.plan import Plan, Protection
from local_tools.deploy.tree import Dirs, open_regular, walk
from local_tools.security.dirfd import Dir
from local_tools.security.os_errors import Changed
from local_tools.security.syscalls import rename_exchange, renameat2_noreplace

__all__ = ["apply_plan", "clean_leftovers"]

_COPY_CHUNK = 1 << 20
_active: set[str] = set()  # staging names this process is building right now


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"\.{re.escape(name[:80])}\.deploy-(old-)?(\d+)-[0-9a-f]+")


def _stage_name(name: str, old: bool = False) -> str:
    # Short enough for NAME_MAX whatever the target's name.
    return f".{name[:80]}.deploy-{'old-' if old else ''}{os.getpid()}-{secrets.token_hex(4)}"


def clean_leftovers(parent: Dir, name: str) -> list[str]:
    """Remove what killed runs left beside the target `name` in `parent`; put back a
    backup the fallback swap left when the target itself is missing. Only real folders
    are touched (a symlink with a staging name is left alone: we never made it)."""
    done: list[str] = []
    pattern = _pattern(name)
    for entry, st in parent.entries():
        m = pattern.fullmatch(entry)
        if not m or entry in _active or not stat.S_ISDIR(st.st_mode):
            continue
        if int(m.group(2)) != os.getpid() and psutil.pid_exists(int(m.group(2))):
            continue  # another process's deploy, running
        if m.group(1) and not _exists(parent, name):
            parent.rename(entry, name)
            done.append(f"restored {name} from an interrupted deploy")
            continue
        _remove(parent, entry)
        gone = not _exists(parent, entry)
        done.append(
            f"{'removed' if gone else 'could not remove'} {entry}, left by an interrupted deploy"
        )
    return done


def apply_plan(
    plan: Plan,
    source: Dir,
    parent: Dir,
    name: str,
    target: Dir | None,
    check_cancelled: Callable[[], None],
) -> str | None:
    """Make `parent`/`name` what `plan` says. Returns a note when the old tree could not
    be removed after the swap (the target itself is as planned either way)."""
    _preflight(plan, parent, target)
    stage_name = _stage_name(name)
    _active.add(stage_name)
    try:
        parent.mkdir(stage_name)
        try:
            stage = parent.child(stage_name)
        except Changed:
            raise Conflict("The staging folder was replaced while it was made.") from None
        try:
            seen = _build(plan, source, target, stage, check_cancelled)
            check_cancelled()  # the last moment a cancel leaves the target untouched
            if target is not None and _signature(target) != seen:
                raise Conflict(
                    "The target changed while the new tree was being built (a file was "
                    "saved or added there); nothing was changed. Run the deploy again."
                )
            stage.fsync()
        finally:
            stage.close()
        if target is None:
            _rename_new(parent, stage_name, name)
            parent.fsync()
            return None
        if not rename_exchange(parent.at(stage_name), parent.at(name), parent.fd):
            _swap_by_renames(parent, stage_name, name)
            return None
        parent.fsync()
    except BaseException:
        _remove(parent, stage_name)
        raise
    finally:
        _active.discard(stage_name)
    _remove(parent, stage_name)  # now the old tree
    if _exists(parent, stage_name):
        return f"the old tree could not be fully removed: {stage_name}"
    return None


def _preflight(plan: Plan, parent: Dir, target: Dir | None) -> None:
    """Refuse up front what an in-place copy could not do either: writing where the
    user may not write (the swap alone would get around a folder's permissions)."""
    if not _access(parent, "", os.W_OK | os.X_OK):
        raise PermissionDenied("Cannot write in the target's folder: nothing was changed.")
    if target is None:
        return
    dirs = Dirs(target)
    try:
        overwrites = {e.path for e in plan.copy if e.reason == "overwrite"}
        for entry in [*plan.delete, *plan.copy, *plan.links]:
            folder_rel, _, leaf = entry.path.rpartition("/")
            here, missing = _nearest(dirs, folder_rel)
            writable = _access(here, "", os.W_OK | os.X_OK)
            if not missing and writable and entry.path in overwrites:
                writable = _access(here, leaf, os.W_OK)
            if not writable:
                raise PermissionDenied(
                    f"{entry.path} in the target is not writable: nothing was changed."
                )
    finally:
        dirs.close()


def _nearest(dirs: Dirs, rel_dir: str) -> tuple[Dir, bool]:
    """The deepest existing folder on `rel_dir`, and whether some of it is missing."""
    parts = rel_dir.split("/") if rel_dir else []
    for n in range(len(parts), -1, -1):
        try:
            return dirs.get("/".join(parts[:n])), n < len(parts)
        except (FileNotFoundError, NotADirectoryError, OSError):
            continue
    return dirs.top, bool(parts)


def _access(folder: Dir, name: str, mode: int) -> bool:
    if folder.fd is None:
        return os.access(folder.at(name) if name else folder.path, mode)
    if not name:
        return os.access(".", mode, dir_fd=folder.fd) if os.access in os.supports_dir_fd else True
    return os.access(name, mode, dir_fd=folder.fd, follow_symlinks=False)


def _build(
    plan: Plan,
    source: Dir,
    target: Dir | None,
    stage: Dir,
    check_cancelled: Callable[[], None],
) -> dict[str, tuple[int, int, int, int]]:
    """Fill `stage`; returns the target's signature as it was walked."""
    replaced = {e.path for e in plan.delete} | {e.path for e in plan.copy}
    is_protected = Protection(plan.protected_patterns)
    out, src = Dirs(stage), Dirs(source)
    seen: dict[str, tuple[int, int, int, int]] = {}
    modes: dict[str, int] = {"": source.fstat().st_mode}
    try:
        for rel in plan.source_dirs:  # the source's folders, empty ones too
            out.get(rel, make=True)
            folder, leaf = src.parent_of(rel)
            modes[rel] = folder.lstat(leaf).st_mode
        if target is not None:
            old = Dirs(target)
            try:
                modes[""] = target.fstat().st_mode
                for rel, st in walk(target, "the target"):
                    check_cancelled()
                    seen[rel] = _mark(st)
                    if stat.S_ISDIR(st.st_mode):
                        modes[rel] = st.st_mode  # a folder the target has keeps its mode
                        if is_protected(rel):  # kept as is, empty ones too (git needs some)
                            out.get(rel, make=True)
                    elif rel not in replaced:
                        _keep(old, out, rel, st)
            finally:
                old.close()
        for entry in plan.copy:
            check_cancelled()
            src_dir, leaf = src.parent_of(entry.path)
            out_dir, _ = out.parent_of(entry.path, make=True)
            _copy_file(src_dir, leaf, out_dir)
        for entry in plan.links:
            out_dir, leaf = out.parent_of(entry.path, make=True)
            out_dir.symlink(entry.reason, leaf)
        # Modes last, deepest first: a read-only folder could not have been filled.
        for rel in sorted(modes, key=lambda r: r.count("/") + bool(r), reverse=True):
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                out.get(rel).chmod(stat.S_IMODE(modes[rel]) & 0o7777 & ~0o6000)
    finally:
        out.close()
        src.close()
    return seen


def _mark(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_ino, st.st_mtime_ns, st.st_size, st.st_mode)


def _signature(target: Dir) -> dict[str, tuple[int, int, int, int]]:
    return {rel: _mark(st) for rel, st in walk(target, "the target")}


def _keep(old: Dirs, out: Dirs, rel: str, st: os.stat_result) -> None:
    src_dir, leaf = old.parent_of(rel)
    out_dir, _ = out.parent_of(rel, make=True)
    if stat.S_ISLNK(st.st_mode):
        out_dir.symlink(src_dir.readlink(leaf), leaf)
        return
    if not stat.S_ISREG(st.st_mode):
        return  # a FIFO or socket in the project: not carried over
    try:
        os.link(
            src_dir.at(leaf),
            out_dir.at(leaf),
            src_dir_fd=src_dir.fd,
            dst_dir_fd=out_dir.fd,
            follow_symlinks=False,
        )
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EACCES):
            raise
        _copy_file(src_dir, leaf, out_dir)  # links refused (protected_hardlinks, ...)


def _copy_file(src_dir: Dir, name: str, out_dir: Dir) -> None:
    """Copy content, mode (set-id bits dropped, as any write does) and times; flush, so
    the swap never publishes empty files after a power cut."""
    fd_in, st = open_regular(src_dir, name)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd_out = out_dir.open(name, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            while chunk := os.read(fd_in, _COPY_CHUNK):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd_out, view) :]
            if hasattr(os, "fchmod"):
                os.fchmod(fd_out, stat.S_IMODE(st.st_mode) & 0o777)
            os.utime(fd_out, ns=(st.st_atime_ns, st.st_mtime_ns))
            os.fsync(fd_out)
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)


def _rename_new(parent: Dir, stage_name: str, name: str) -> None:
    """Put the staged tree in place of a target that did not exist, never over one that
    appeared meanwhile (os.replace would silently take an empty folder's place)."""
    appeared = Conflict(f"{name} appeared while the deploy ran; nothing was changed.")
    if parent.fd is not None:
        try:
            if renameat2_noreplace(parent.fd, stage_name, name):
                return
        except FileExistsError:
            raise appeared from None
    if _exists(parent, name):
        raise appeared
    parent.rename(stage_name, name)


def _swap_by_renames(parent: Dir, stage_name: str, name: str) -> None:
    backup = _stage_name(name, old=True)
    parent.rename(name, backup)
    try:
        parent.rename(stage_name, name)
    except BaseException:
        parent.rename(backup, name)
        raise
    _remove(parent, backup)


def _exists(parent: Dir, name: str) -> bool:
    try:
        parent.lstat(name)
        return True
    except FileNotFoundError:
        return False


def _remove(parent: Dir, name: str) -> None:
    """Remove the folder `name` (never following links), making read-only folders in
    it writable first when a first attempt fails."""
    if not _exists(parent, name):
        return
    with contextlib.suppress(OSError):
        shutil.rmtree(parent.at(name), dir_fd=parent.fd)
        return
    with contextlib.suppress(OSError, Changed):
        top = parent.child(name)
        try:
            for rel, st in walk(top, name):
                if stat.S_ISDIR(st.st_mode):
                    folder, leaf = Dirs(top).parent_of(rel)
                    os.chmod(leaf, 0o700, dir_fd=folder.fd, follow_symlinks=False)
            top.chmod(0o700)
        finally:
            top.close()
    with contextlib.suppress(OSError):
        shutil.rmtree(parent.at(name), dir_fd=parent.fd)
