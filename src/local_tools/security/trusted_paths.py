"""What local-tools and git trust, kept as it was before each command, existing or not.

A command must not plant a plugin in `.local-tools/`, rewrite the config file in use or
a `local-tools.toml` at a root's top, or change the parts of a `.git` that run code
(`config`, `config.worktree`, `hooks/`, `info/`, the same in `modules/*/`, and a
worktree's `config.worktree`): the next start, or the user's own `git status`, would run
what it wrote. Inside the sandbox the ones that exist are mounted read-only
(`protected_paths` lists them); a path that does not exist yet cannot be mounted over
without creating it on the host, and where there is no sandbox nothing stops the write.
`TrustedPaths` covers both: it snapshots these paths before a command (the small files'
bytes included) and after it puts back what changed: what was created is removed, what
was modified or deleted is written back. What it took away is moved to a `reverted/`
folder of the state dir, so nothing is lost (not even the user's own edit made while a
command ran without a sandbox), and the caller says so in the result.

With the sandbox mounts in place (`trusted=True`), a path that existed cannot have
been changed by the command unless the `.git` holding it was renamed away and replaced
(the workspace is writable, so a folder above a mount can be moved): existing paths are
then only compared when their `.git` is no longer the same folder, and a change made
meanwhile by the user from outside stays.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from local_tools.security.real_path import real_path

__all__ = ["Protected", "TrustedPaths", "git_dir_paths", "git_paths", "protected_paths"]

MAX_TREE_ENTRIES = 2_000  # entries of one protected folder that are tracked
MAX_FILE_BYTES = 1 << 20  # a bigger protected file is tracked, not copied
MAX_COPY_BYTES = 16 << 20  # the copies kept in all

# `commondir` sends git to another folder's config and hooks; a worktree's `gitdir`
# names the work tree git enters.
_GIT_FILES = ("config", "config.worktree", "commondir")
_GIT_TREES = ("hooks", "info")
_WORKTREE_FILES = (*_GIT_FILES, "gitdir")


@dataclass(frozen=True)
class Protected:
    path: Path  # absolute, beneath `root` (or the config file in use, anywhere)
    root: Path  # where its parents are not checked
    tree: bool = False  # a folder: everything in it is protected
    container: bool = False  # a `.git` folder: created or replaced as a folder is fine
    # Compared after every command, even under the sandbox's mounts: a folder above it
    # (not a `.git`) can be renamed away and made anew (a hooksPath, an included file).
    checked: bool = False


def protected_paths(
    roots: Iterable[Path], config_file: str | None, config_name: str
) -> list[Protected]:
    """The paths to protect under each root, whether they exist or not."""
    out: list[Protected] = []
    for root in roots:
        out += [Protected(root / ".local-tools", root, True), Protected(root / config_name, root)]
        out += git_paths(root / ".git", root)
    if config_file:
        real = Path(real_path(config_file))
        out.append(Protected(real, real.parent))
    return out


def git_paths(git: Path, root: Path) -> list[Protected]:
    """What runs code in the `.git` at `git` (a folder, or a `gitdir:` file kept as is)."""
    if os.path.lexists(git) and not (git.is_dir() and not git.is_symlink()):
        return [Protected(git, root)]  # a `gitdir:` file, or a link: kept as it is
    out = [Protected(git, root, container=True)]  # created as a file or link: removed
    out += git_dir_paths(git, root)
    for sub, names in (
        ("modules", (*_GIT_FILES, *_GIT_TREES)),
        ("worktrees", _WORKTREE_FILES),
    ):
        with contextlib.suppress(OSError), os.scandir(git / sub) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    for name in names:
                        out.append(Protected(Path(e.path) / name, root, name in _GIT_TREES))
    return out


def git_dir_paths(gitdir: Path, root: Path) -> list[Protected]:
    """The files and folders of one git dir that run code or send git elsewhere."""
    out = [Protected(gitdir / name, root) for name in _GIT_FILES]
    return out + [Protected(gitdir / name, root, True) for name in _GIT_TREES]


# (kind, signature, payload): kind "missing" | "file" | "link" | "dir" | "other";
# payload: a file's bytes (None when too big), a link's target.
_State = tuple[str, tuple[int, ...], "bytes | str | None"]
_MISSING: _State = ("missing", (), None)


@dataclass
class _Tracked:
    entry: Protected
    state: _State
    anchor: Path | None  # the `.git` folder above it, renamable inside the sandbox


class TrustedPaths:
    """Before/after snapshots of the protected paths for the commands of one toolbox.

    `begin` before a command starts (the baseline is taken when none of ours runs, and
    kept while one does), `end` after it ended (its whole process tree), `sweep` at
    any other moment while commands run. `end` and `sweep` return a note when something
    was put back.
    """

    def __init__(self, quarantine: Path) -> None:
        self._quarantine = quarantine
        self._lock = threading.Lock()
        self._running = 0
        self._trusted = True
        self._discover: Callable[[], list[Protected]] = list
        self._baseline: dict[Path, _Tracked] = {}
        self._copies: dict[Path, tuple[tuple[int, ...], bytes]] = {}

    def begin(self, discover: Callable[[], list[Protected]], *, trusted: bool) -> None:
        with self._lock:
            if self._running == 0:
                self._discover = discover
                self._trusted = trusted
                self._baseline = self._snapshot(discover())
            else:
                self._trusted = self._trusted and trusted
            self._running += 1

    def end(self) -> str | None:
        with self._lock:
            try:
                return self._check()
            finally:
                self._running = max(0, self._running - 1)

    def sweep(self) -> str | None:
        with self._lock:
            return self._check() if self._running else None

    # -- snapshots

    def _snapshot(self, entries: Sequence[Protected]) -> dict[Path, _Tracked]:
        out: dict[Path, _Tracked] = {}
        budget = [MAX_COPY_BYTES]
        for entry in entries:
            anchor = _anchor(entry)
            state = self._state(entry.path, budget)
            out[entry.path] = _Tracked(entry, state, anchor)
            if entry.tree and state[0] == "dir":
                for child in _walk(entry.path):
                    sub = Protected(child, entry.root, checked=entry.checked)
                    out[child] = _Tracked(sub, self._state(child, budget), anchor)
        # copies of files no longer tracked are dropped
        self._copies = {p: c for p, c in self._copies.items() if p in out}
        return out

    def _state(self, path: Path, budget: list[int]) -> _State:
        try:
            st = os.lstat(path)
        except OSError:
            return _MISSING
        if stat.S_ISLNK(st.st_mode):
            with contextlib.suppress(OSError):
                return ("link", (st.st_ino, st.st_mtime_ns), os.readlink(path))
            return ("other", (st.st_ino, st.st_mode), None)
        if stat.S_ISDIR(st.st_mode):
            return ("dir", (stat.S_IMODE(st.st_mode), st.st_ino), None)
        if not stat.S_ISREG(st.st_mode):
            return ("other", (st.st_ino, st.st_mode), None)
        sig = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_nlink)
        cached = self._copies.get(path)
        if cached is not None and cached[0] == sig:
            return ("file", sig, cached[1])
        data: bytes | None = None
        if st.st_size <= min(MAX_FILE_BYTES, budget[0]):
            data = _read(path)
            if data is not None:
                budget[0] -= len(data)
                self._copies[path] = (sig, data)
        return ("file", sig, data)

    # -- after a command

    def _check(self) -> str | None:
        if not self._baseline:
            return None
        budget = [MAX_COPY_BYTES]
        now: dict[Path, _Tracked] = {}
        # Each `.git` once (a dozen paths share one): looked at anew, not per path.
        anchors = {t.anchor for t in self._baseline.values() if t.anchor is not None}
        replaced_anchors = {a for a in anchors if _moved(a, self._baseline)}
        for entry in self._discover():
            if entry.path not in self._baseline:  # e.g. a new .git/modules/x
                now[entry.path] = _Tracked(entry, _MISSING, _anchor(entry))
        candidates = {**self._baseline, **now}
        # Folders that were there: what appeared inside them is new.
        for path, t in list(candidates.items()):
            if not (t.entry.tree and t.state[0] == "dir"):
                continue
            if self._trusted and not t.entry.checked and t.anchor not in replaced_anchors:
                continue  # mounted read-only: nothing inside can have changed
            for child in _walk(path):
                if child not in candidates:
                    sub = Protected(child, t.entry.root, checked=t.entry.checked)
                    candidates[child] = _Tracked(sub, _MISSING, t.anchor)
        changes: list[str] = []
        stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{time.monotonic_ns() % 1_000_000:06d}"
        for path in sorted(candidates, key=lambda p: len(p.parts)):
            t = candidates[path]
            existed = t.state[0] != "missing"
            checked = t.entry.checked or t.anchor in replaced_anchors or path in replaced_anchors
            # a file with another name (a hard link) can be written through that name
            checked = checked or (t.state[0] == "file" and t.state[1][5] > 1)
            if existed and self._trusted and not checked:
                continue
            current = self._state(path, budget)
            if _same(t.state, current):
                continue
            if t.entry.container and current[0] == "dir":
                continue  # a new .git folder: what in it runs code is checked on its own
            if not existed and _new_worktree_link(path, current):
                continue  # `git worktree add`: it leads back to this same repository
            change = self._put_back(t, current, stamp)
            if change:
                changes.append(change)
        if not changes:
            return None
        # Taken again: what is there now is what the next check compares with.
        self._baseline = self._snapshot(self._discover())
        where = self._quarantine / stamp
        kept = f"; what the command left there is in {where}" if where.exists() else ""
        shown = "; ".join(changes[:20]) + (
            f"; and {len(changes) - 20} more" if len(changes) > 20 else ""
        )
        return (
            "local-tools put back protected paths a command changed (they steer local-tools "
            f"or run code for git): {shown}{kept}. A write:file rule naming the path lifts "
            "this protection."
        )

    def _put_back(self, t: _Tracked, current: _State, stamp: str) -> str | None:
        path, before = t.entry.path, t.state
        shown = _shown(path, t.entry.root)
        # Everything below goes through a handle of the parent folder, opened without
        # following links: a sandboxed process still running cannot swap a folder above
        # for a link meanwhile and send these writes outside.
        parent = _open_parent(path, t.entry.root)
        if parent is None:
            return f"{shown}: not put back (a folder above it is no longer a folder)"
        name = path.name
        try:
            if current[0] != "missing":
                if before[0] == "dir" and current[0] == "dir":
                    with contextlib.suppress(OSError):
                        fd = os.open(name, _DIR_OPEN, dir_fd=parent)
                        try:
                            os.chmod(fd, before[1][0])
                        finally:
                            os.close(fd)
                    return f"{shown} (permissions restored)"
                if not self._remove(parent, path, t.entry.root, stamp):
                    return f"{shown}: could not be removed"
            kind, _, payload = before
            if kind == "missing":
                return f"{shown} (created: removed)"
            if t.entry.container:  # the repository is elsewhere now: nothing to run here
                return f"{shown} (replaced: removed)"
            if kind == "dir":
                os.mkdir(name, before[1][0], dir_fd=parent)
            elif kind == "link" and isinstance(payload, str):
                os.symlink(payload, name, dir_fd=parent)
            elif kind == "file" and isinstance(payload, bytes):
                _write(parent, name, payload, stat.S_IMODE(before[1][4]))
            else:
                return f"{shown} (changed: moved away, its old content was not kept)"
        except OSError as exc:
            return f"{shown}: could not be restored ({exc.strerror})"
        finally:
            os.close(parent)
        return f"{shown} ({'deleted' if current[0] == 'missing' else 'changed'}: restored)"

    def _remove(self, parent: int, path: Path, root: Path, stamp: str) -> bool:
        """Move `path` (not following it) into the quarantine folder, else delete it."""
        target = self._quarantine / stamp / root.name / path.relative_to(root)
        with contextlib.suppress(OSError):
            _private_dirs(self._quarantine.parent, target.parent)
            os.rename(path.name, target, src_dir_fd=parent)
            _private_tree(target)
            return True
        try:
            st = os.lstat(path.name, dir_fd=parent)
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(path.name, dir_fd=parent)
            else:
                os.unlink(path.name, dir_fd=parent)
        except OSError:
            return False
        return True


def _private_dirs(base: Path, path: Path) -> None:
    """Make `path`'s folders below `base` (the state dir's), each 0700 as state is."""
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    for folder in reversed([path, *path.parents]):
        if base in folder.parents and not folder.is_dir():
            folder.mkdir(mode=0o700)


def _new_worktree_link(path: Path, current: _State) -> bool:
    """A `worktrees/<name>/commondir` that names the `.git` holding it (what `git
    worktree add` writes), or that worktree's `gitdir` (where its work tree is: git
    runs nothing from it): created, they send git nowhere else."""
    if path.parent.parent.name != "worktrees" or current[0] != "file":
        return False
    if path.name == "gitdir":
        return _new_worktree_link(path.parent / "commondir", _plain(path.parent / "commondir"))
    if path.name != "commondir" or not isinstance(current[2], bytes):
        return False
    target = current[2].decode("utf-8", "replace").strip()
    return bool(target) and os.path.realpath(path.parent / target) == os.path.realpath(
        path.parent.parent.parent
    )


def _plain(path: Path) -> _State:
    """A small file's state, read outside any snapshot."""
    try:
        st = os.lstat(path)
    except OSError:
        return _MISSING
    return ("file", (), _read(path)) if stat.S_ISREG(st.st_mode) else ("other", (), None)


def _private_tree(path: Path) -> None:
    """What was moved into the quarantine is private at once, as state is: folders
    0700, files 0600 (links have no mode of their own)."""
    for p in [path, *_walk(path)] if path.is_dir() and not path.is_symlink() else [path]:
        with contextlib.suppress(OSError):
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode):
                os.chmod(p, 0o700)
            elif stat.S_ISREG(st.st_mode):
                os.chmod(p, 0o600)


def _anchor(entry: Protected) -> Path | None:
    """The nearest `.git` folder above the path (a nested repository's own)."""
    return _anchor_of(entry.path, entry.root)


# A function of the two names alone (no filesystem), asked for every protected path
# before and after each command, and slow in pathlib (parents of parents): kept.
@lru_cache(maxsize=8192)
def _anchor_of(path: Path, root: Path) -> Path | None:
    for parent in path.parents:
        if parent == root or root not in parent.parents:
            return None
        if parent.name == ".git":
            return parent
    return None


def _moved(anchor: Path, baseline: dict[Path, _Tracked]) -> bool:
    """The `.git` folder is not the one of the baseline (renamed away, replaced)."""
    t = baseline.get(anchor)
    if t is None:
        return True
    try:
        st = os.lstat(anchor)
    except OSError:
        return t.state[0] != "missing"
    return t.state[0] != "dir" or not stat.S_ISDIR(st.st_mode) or st.st_ino != t.state[1][1]


def _same(a: _State, b: _State) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "file":
        return a[1] == b[1] or (a[2] is not None and a[2] == b[2] and a[1][4] == b[1][4])
    if a[0] == "dir":
        return a[1][0] == b[1][0]  # the mode; a folder made anew holds the same entries
    return a[1:] == b[1:]


def _child(folder: Path, name: str) -> Path:
    """`folder / name` for a name scandir gave (no separator, not `.` or `..`), without
    parsing it again: pathlib's own shortcut when it has one (~6x faster)."""
    make = _MAKE_CHILD
    return make(folder, name) if make is not None else folder / name


_MAKE_CHILD = getattr(Path, "_make_child_relpath", None)


def _walk(top: Path) -> list[Path]:
    """Everything under `top`, links not followed; at most MAX_TREE_ENTRIES."""
    out: list[Path] = []
    stack = [top]
    while stack and len(out) < MAX_TREE_ENTRIES:
        d = stack.pop()
        with contextlib.suppress(OSError), os.scandir(d) as it:
            for e in it:
                p = _child(d, e.name)
                out.append(p)
                with contextlib.suppress(OSError):
                    if e.is_dir(follow_symlinks=False):
                        stack.append(p)
    return out[:MAX_TREE_ENTRIES]


_DIR_OPEN = (
    os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)  # fmt: skip


def _open_parent(path: Path, root: Path) -> int | None:
    """A handle of `path`'s folder, each step below `root` opened without following a
    link (the root itself is the user's); None when one is not a folder."""
    try:
        rel = path.parent.relative_to(root)
    except ValueError:
        return None
    try:
        fd = os.open(root, _DIR_OPEN & ~getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    for part in rel.parts:
        try:
            sub = os.open(part, _DIR_OPEN, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = sub
    return fd


def _read(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    return data if len(data) <= MAX_FILE_BYTES else None


def _write(parent: int, name: str, data: bytes, mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(name, flags, mode, dir_fd=parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        with contextlib.suppress(OSError):
            os.chmod(f.fileno(), mode)


def _shown(path: Path, root: Path) -> str:
    with contextlib.suppress(ValueError):
        return path.relative_to(root).as_posix()
    return str(path)
