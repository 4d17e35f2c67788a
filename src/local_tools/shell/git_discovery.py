"""Finding every repository, and so every config file, git would read from a directory.

`scan_repositories(cwd)` walks up from `cwd` (both as given and with symlinks resolved)
to the root, and at every level, not only the first git would stop at, takes a `.git`
directory, a `.git` file's `gitdir:` target, and the level itself when it looks like a
git dir (a bare repository, a `.git` dir, a worktree's git dir). For each repository it
reads, through `git_config.read_config`, the common dir's config and config.worktree and
the worktree's own config.worktree, includes and all; then it lists the submodules
recorded as gitlinks in the index (versions 2 to 4, split index included) and does the
same for each one that is populated, recursively, up to 64 repositories. It never runs
git and never raises on a bad file: what it could not read or understand goes in
`RepositoryScan.problems`.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from local_tools.shell.git_config import (
    Config,
    ConfigFiles,
    c_string,
    is_file,
    read_bytes,
    read_config,
    read_text,
)

__all__ = ["Repository", "RepositoryScan", "index_names", "scan_repositories"]

MAX_INDEX_BYTES = 1 << 28
MAX_REPOSITORIES = 64
_GITLINK_MODE = b"\x00\x00\xe0\x00"  # 0o160000 as the index stores it
_E0 = re.compile(b"\xe0")


@dataclass(frozen=True)
class Repository:
    """One repository found: where git reads its config, hooks and objects."""

    gitdir: str  # as joined, not resolved
    common: str  # the commondir's target, else `gitdir`
    worktree: str | None  # the folder holding its `.git`; None for a bare-looking dir
    hooks_path: str | None  # core.hooksPath resolved as git does, when set
    core_worktree: str | None  # core.worktree resolved, when set
    hash_size: int = 20  # 32 under extensions.objectFormat = sha256
    submodule: bool = False  # entered through a gitlink of the one listed before it


@dataclass
class RepositoryScan(ConfigFiles):
    """The config of every repository found, and the (device, inode, work tree) of each."""

    seen: set[tuple[int, int, str | None]] = field(default_factory=set)
    repositories: list[Repository] = field(default_factory=list)


def scan_repositories(cwd: Path) -> RepositoryScan:
    """The config git run from `cwd` would read, from all repositories it would enter."""
    scan = RepositoryScan()
    try:
        starts = dict.fromkeys([os.path.abspath(cwd), os.path.realpath(cwd)])
    except (OSError, ValueError) as exc:
        scan.problems.append(f"{cwd}: {exc}")
        return scan
    for start in starts:
        for level in _upwards(start):
            try:
                _scan_level(scan, level)
            except (OSError, ValueError) as exc:  # one level's trouble leaves the others
                scan.problems.append(f"{level}: {exc}")
    return scan


def _upwards(start: str) -> Iterator[str]:
    path = start
    while True:
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def _scan_level(scan: RepositoryScan, directory: str) -> None:
    """A repository whose work tree is `directory`, and `directory` as a git dir."""
    gitdir = _gitdir_of(scan, os.path.join(directory, ".git"))
    if gitdir is not None:
        _scan_repository(scan, gitdir, directory)
    # A bare repository, a .git dir or a worktree's git dir: git refuses them all under
    # safe.bareRepository=explicit, older git does not.
    if is_file(os.path.join(directory, "HEAD")) and (
        os.path.isdir(os.path.join(directory, "objects"))
        or is_file(os.path.join(directory, "commondir"))
    ):
        _scan_repository(scan, directory, None)


def _gitdir_of(scan: RepositoryScan, dotgit: str) -> str | None:
    try:
        st = os.stat(dotgit)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return dotgit
    text = read_text(scan.problems, dotgit)
    if text is None or not text.startswith("gitdir: "):
        return None  # git stops with "invalid gitfile format"
    target = c_string(text[len("gitdir: ") :]).rstrip("\r\n")
    return os.path.join(os.path.dirname(dotgit), target) if target else None


def _scan_repository(
    scan: RepositoryScan, gitdir: str, worktree: str | None, *, submodule: bool = False
) -> None:
    try:
        st = os.stat(gitdir)
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode):
        return
    # The same git dir may be met without and then with its work tree (cwd inside .git).
    if (st.st_dev, st.st_ino, worktree) in scan.seen:
        return
    if len(scan.seen) >= MAX_REPOSITORIES:
        scan.problems.append(f"{gitdir}: more than {MAX_REPOSITORIES} nested repositories")
        return
    scan.seen.add((st.st_dev, st.st_ino, worktree))
    common = gitdir
    if is_file(os.path.join(gitdir, "commondir")):
        text = read_text(scan.problems, os.path.join(gitdir, "commondir")) or ""
        relative = c_string(text).rstrip("\r\n")
        common = os.path.join(gitdir, relative) if relative else gitdir
    before = len(scan.config.entries)
    for name in dict.fromkeys(
        [
            os.path.join(common, "config"),
            os.path.join(common, "config.worktree"),
            os.path.join(gitdir, "config.worktree"),
        ]
    ):
        read_config(scan, name, 0)
    mine = Config(scan.config.entries[before:])
    roots = [worktree] if worktree else []
    configured = mine.last("core.worktree")
    if configured:
        roots.append(os.path.join(gitdir, os.path.expanduser(configured)))
    sha256 = (mine.last("extensions.objectformat") or "").lower() == "sha256"
    hooks = mine.last("core.hookspath")
    if hooks:  # relative to where hooks run: the work tree's top (a bare repo's git dir)
        hooks = os.path.join(roots[-1] if roots else gitdir, os.path.expanduser(hooks))
    scan.repositories.append(
        Repository(
            gitdir,
            common,
            worktree,
            hooks,
            core_worktree=roots[-1] if configured else None,
            hash_size=32 if sha256 else 20,
            submodule=submodule,
        )
    )
    for path in _gitlinks(scan, gitdir, 32 if sha256 else 20):
        for root in roots:
            sub = os.path.join(root, path)
            subgit = _gitdir_of(scan, os.path.join(sub, ".git"))
            if subgit is not None:
                _scan_repository(scan, subgit, sub, submodule=True)


# -- submodules from the index ----------------------------------------------------------


def _gitlinks(scan: RepositoryScan, gitdir: str, hash_size: int) -> list[str]:
    """Paths of the submodules recorded in the index (git enters them for status/diff)."""
    data = read_bytes(scan.problems, os.path.join(gitdir, "index"), MAX_INDEX_BYTES)
    if not data or data[:4] != b"DIRC":
        return []
    datas = [data]
    with os.scandir(gitdir) as entries:  # a split index keeps most entries in these
        shared = [e.path for e in entries if e.name.startswith("sharedindex.")]
    datas += [read_bytes(scan.problems, path, MAX_INDEX_BYTES) or b"" for path in shared]
    paths: list[str] = []
    for blob in datas:
        if blob[:4] == b"DIRC" and _may_hold_gitlinks(blob):
            try:
                paths += _index_gitlinks(blob, hash_size)
            except (struct.error, ValueError, IndexError):
                scan.problems.append(f"{gitdir}/index: not understood")
    return paths


def _may_hold_gitlinks(data: bytes) -> bool:
    """False when no entry can be a gitlink, without parsing the entries: in index
    versions 2 and 3 they are 8-byte aligned, so every mode field starts at 4 mod 8 and
    one byte in eight needs a look (a plain search is ten times slower on all the zeros)."""
    if data[4:8] == b"\x00\x00\x00\x04":
        return _GITLINK_MODE in data
    for hit in _E0.finditer(data[6::8]):
        at = 8 * hit.start() + 4
        if data[at : at + 4] == _GITLINK_MODE:
            return True
    return False


def index_names(scan: RepositoryScan, repo: Repository, needle: str) -> list[str]:
    """The paths in the repository's index (split index included) that contain
    `needle`; an index without those bytes anywhere is not parsed."""
    gitdir = repo.gitdir
    data = read_bytes(scan.problems, os.path.join(gitdir, "index"), MAX_INDEX_BYTES)
    if not data or data[:4] != b"DIRC":
        return []
    datas = [data]
    with contextlib.suppress(OSError), os.scandir(gitdir) as entries:
        shared = [e.path for e in entries if e.name.startswith("sharedindex.")]
        datas += [read_bytes(scan.problems, path, MAX_INDEX_BYTES) or b"" for path in shared]
    found: list[str] = []
    for blob in datas:
        if blob[:4] == b"DIRC" and needle.encode() in blob:
            try:
                found += [n for _, n in _index_entries(blob, repo.hash_size) if needle in n]
            except (struct.error, ValueError, IndexError):
                scan.problems.append(f"{gitdir}/index: not understood")
    return found


def _index_gitlinks(data: bytes, hash_size: int) -> list[str]:
    return [name for mode, name in _index_entries(data, hash_size) if mode == 0o160000]


def _index_entries(data: bytes, hash_size: int) -> list[tuple[int, str]]:
    """(file type bits of the mode, path) of every index entry."""
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        raise ValueError(version)
    pos, previous = 12, b""
    found: list[tuple[int, str]] = []
    for _ in range(count):
        (mode,) = struct.unpack_from(">I", data, pos + 24)
        (flags,) = struct.unpack_from(">H", data, pos + 40 + hash_size)
        name_at = pos + 42 + hash_size + (2 if version >= 3 and flags & 0x4000 else 0)
        if version == 4:  # the name is a suffix after stripping bytes off the previous
            strip, name_at = _varint(data, name_at)
            end = data.index(b"\0", name_at)
            name = previous[: len(previous) - strip] + data[name_at:end]
            pos = end + 1
        else:
            end = data.index(b"\0", name_at)
            name = data[name_at:end]
            pos += (name_at - pos + len(name) + 8) & ~7
        previous = name
        found.append((mode & 0o170000, name.decode("utf-8", "surrogateescape")))
    return found


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (varint.c)."""
    byte = data[pos]
    value = byte & 127
    while byte & 128:
        pos += 1
        byte = data[pos]
        value = ((value + 1) << 7) | (byte & 127)
    return value, pos + 1
