"""Carry out a plan: build the planned tree beside the target, then swap it in.

No partial state: the new tree is staged in `.<target>.deploy-<pid>-<token>` next to
the target (same folder, same file system): files the target keeps are hard-linked
(copied where links are refused), new and changed ones copied from the source and
flushed to disk. Then one RENAME_EXCHANGE (macOS: RENAME_SWAP) puts it in place: at
no instant is the target missing or half-written, so a kill -9 at any point leaves
it as it was or as planned. The old tree, now at the staging name, is removed; a
leftover from a killed run is removed by the next run.

Where the exchange is not available (another OS, a file system without it), two
renames with a backup name do the swap, and the next run puts the backup back if a
kill came between them.
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
from pathlib import Path

import psutil

from local_tools.core.errors import PermissionDenied
from local_tools.deploy.plan import Plan, Protection, walk
from local_tools.security.syscalls import rename_exchange

__all__ = ["apply_plan", "clean_leftovers", "staging_names"]

_COPY_CHUNK = 1 << 20


def staging_names(target: Path) -> re.Pattern[str]:
    return re.compile(rf"\.{re.escape(target.name)}\.deploy-(old-)?(\d+)-[0-9a-f]+")


def clean_leftovers(target: Path) -> list[str]:
    """Remove what killed runs left beside `target`; restore a backup the fallback swap
    left when the target itself is missing. Returns what was done, for the output."""
    done: list[str] = []
    pattern = staging_names(target)
    with contextlib.suppress(FileNotFoundError):
        for entry in sorted(os.scandir(target.parent), key=lambda e: e.name):
            m = pattern.fullmatch(entry.name)
            if not m or _alive(int(m.group(2))):
                continue
            path = Path(entry.path)
            if m.group(1) and not target.exists():
                os.rename(path, target)
                done.append(f"restored {target.name} from an interrupted deploy")
            else:
                shutil.rmtree(path, ignore_errors=True)
                done.append(f"removed {entry.name}, left by an interrupted deploy")
    return done


def apply_plan(plan: Plan, check_cancelled: Callable[[], None]) -> str | None:
    """Make the target what `plan` says. Returns a note when the old tree could not be
    removed after the swap (the target itself is as planned either way)."""
    _preflight(plan)
    target = plan.target
    token = secrets.token_hex(4)
    stage = target.parent / f".{target.name}.deploy-{os.getpid()}-{token}"
    os.mkdir(stage, 0o700)  # its mode becomes the target's once built
    try:
        _build(plan, stage, check_cancelled)
        check_cancelled()  # the last moment a cancel leaves the target untouched
        if not plan.target_exists:
            os.rename(stage, target)
            return None
        if not rename_exchange(str(stage), str(target)):
            _swap_by_renames(stage, target, token)
            return None
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    shutil.rmtree(stage, ignore_errors=True)  # now the old tree
    return f"the old tree could not be fully removed: {stage.name}" if stage.exists() else None


def _preflight(plan: Plan) -> None:
    """Refuse up front what an in-place copy could not do either: writing where the
    user may not write (the swap alone would get around a folder's permissions)."""
    if not os.access(plan.target.parent, os.W_OK | os.X_OK):
        raise PermissionDenied(f"Cannot write in {plan.target.parent}: nothing was changed.")
    for entry in [*plan.delete, *(e for e in plan.copy if e.reason == "overwrite")]:
        there = plan.target / entry.path
        folder = there.parent
        if not os.access(folder, os.W_OK | os.X_OK) or (
            there.is_file() and not there.is_symlink() and not os.access(there, os.W_OK)
        ):
            raise PermissionDenied(
                f"{entry.path} in the target is not writable: nothing was changed."
            )


def _build(plan: Plan, stage: Path, check_cancelled: Callable[[], None]) -> None:
    replaced = {e.path for e in plan.delete} | {e.path for e in plan.copy}
    is_protected = Protection(plan.protected_patterns)
    modes = {rel: (plan.source / rel).lstat().st_mode for rel in plan.source_dirs}
    modes[""] = plan.source.stat().st_mode  # a new target gets the source's mode
    for rel in plan.source_dirs:  # the source's folders, empty ones too
        os.makedirs(stage / rel, exist_ok=True)
    if plan.target_exists:
        modes[""] = plan.target.stat().st_mode
        for rel, st in walk(plan.target):
            check_cancelled()
            there, here = plan.target / rel, stage / rel
            if stat.S_ISDIR(st.st_mode):
                modes[rel] = st.st_mode  # a folder the target has keeps its mode
                if is_protected(rel):  # kept as is, empty folders too (git needs some)
                    os.makedirs(here, exist_ok=True)
            elif rel not in replaced:
                os.makedirs(here.parent, exist_ok=True)
                _keep(there, here, st)
    for entry in plan.copy:
        check_cancelled()
        here = stage / entry.path
        os.makedirs(here.parent, exist_ok=True)
        _copy_file(plan.source / entry.path, here)
    for entry in plan.links:
        here = stage / entry.path
        os.makedirs(here.parent, exist_ok=True)
        os.symlink(entry.reason, here)
    # Modes last, deepest first: a read-only folder could not have been filled.
    for rel in sorted(modes, key=lambda r: r.count("/") + bool(r), reverse=True):
        folder = stage / rel if rel else stage
        if folder.is_dir() and not folder.is_symlink():
            os.chmod(folder, stat.S_IMODE(modes[rel]))


def _keep(there: Path, here: Path, st: os.stat_result) -> None:
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(there), here)
        return
    try:
        os.link(there, here, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EACCES):
            raise
        _copy_file(there, here)  # links refused (protected_hardlinks, odd file systems)


def _copy_file(src: Path, dst: Path) -> None:
    """Copy content, mode and times, and flush: the swap must not publish empty files
    after a power cut."""
    fd_in = os.open(src, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd_in)
        fd_out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            while chunk := os.read(fd_in, _COPY_CHUNK):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd_out, view) :]
            os.fsync(fd_out)
        finally:
            os.close(fd_out)
        os.chmod(dst, stat.S_IMODE(st.st_mode))
        os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
    finally:
        os.close(fd_in)


def _swap_by_renames(stage: Path, target: Path, token: str) -> None:
    backup = target.parent / f".{target.name}.deploy-old-{os.getpid()}-{token}"
    os.rename(target, backup)
    try:
        os.rename(stage, target)
    except BaseException:
        os.rename(backup, target)
        raise
    shutil.rmtree(backup, ignore_errors=True)


def _alive(pid: int) -> bool:
    return pid == os.getpid() or psutil.pid_exists(pid)
