"""The state of single paths, read in-process: what a file tool is about to change.

An `Entry` is what git would store for a path (mode and blob id), plus two kinds git
has no object for: a path that does not exist (mode 0) and an empty folder. A folder
with content is its files. Reading never follows a symlink (the link itself is the
entry) and never enters a `.git` folder, nor an excluded one (the state folder). A name
that is not UTF-8 is left out and named: the history keeps names as text.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from local_tools.checkpoints.gitstore import ShadowRepo

__all__ = [
    "ABSENT",
    "DIR",
    "EXEC",
    "FILE",
    "LINK",
    "NOT_UTF8",
    "Entry",
    "PathSnapshot",
    "is_utf8",
    "read_paths",
    "shown",
]

FILE = 0o100644
EXEC = 0o100755
LINK = 0o120000
DIR = 0o040000  # an empty folder (git keeps none)
MAX_FILES = 20_000  # files under one folder a file tool names: past this, none are kept
NOT_UTF8 = "file name is not UTF-8"


def is_utf8(rel: str) -> bool:
    """Whether a name (os.fsdecode'd) is text: one with undecodable bytes is not."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(rel: str) -> str:
    """A name as text for notes and the history: undecodable bytes as \\xNN."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


@dataclass(frozen=True, slots=True)
class Entry:
    mode: int  # 0: absent
    sha: str = ""

    @property
    def exists(self) -> bool:
        return self.mode != 0

    @property
    def kind(self) -> str:
        return {0: "absent", FILE: "file", EXEC: "file", LINK: "symlink", DIR: "folder"}.get(
            self.mode, "other"
        )


ABSENT = Entry(0)


@dataclass
class PathSnapshot:
    """Entries by root-relative path (posix), and what was left out and why."""

    entries: dict[str, Entry] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    # Root-relative paths that were read whole: a path under one of them missing from
    # `entries` did not exist.
    covered: set[str] = field(default_factory=set)


def read_paths(
    repo: ShadowRepo,
    root: Path,
    rels: Iterable[str],
    *,
    max_bytes: int,
    exclude: Collection[str] = (),
) -> PathSnapshot:
    """Store and describe each path (a folder: everything under it) relative to root;
    never what is in or under an `exclude` path (root-relative)."""
    snap = PathSnapshot()
    for rel in rels:
        if _under(rel, exclude):
            continue
        snap.covered.add(rel)
        _read(repo, root, rel, snap, max_bytes, exclude)
    return snap


def _under(rel: str, exclude: Collection[str]) -> bool:
    return any(rel == e or rel.startswith(e + "/") for e in exclude)


def _read(
    repo: ShadowRepo,
    root: Path,
    rel: str,
    snap: PathSnapshot,
    max_bytes: int,
    exclude: Collection[str],
) -> None:
    if not is_utf8(rel):
        snap.skipped[shown(rel)] = NOT_UTF8
        return
    path = root / rel
    try:
        st = os.lstat(path)
    except OSError:
        return  # absent (or unreadable: nothing we could restore it from)
    if stat.S_ISDIR(st.st_mode):
        _read_folder(repo, root, rel, snap, max_bytes, exclude)
        return
    entry = _entry(repo, path, st, rel, snap, max_bytes)
    if entry is not None:
        snap.entries[rel] = entry


def _entry(
    repo: ShadowRepo,
    path: Path,
    st: os.stat_result,
    rel: str,
    snap: PathSnapshot,
    max_bytes: int,
) -> Entry | None:
    if stat.S_ISLNK(st.st_mode):
        return Entry(LINK, repo.write_blob(os.fsencode(os.readlink(path))))
    if not stat.S_ISREG(st.st_mode):
        snap.skipped[rel] = "not a regular file"
        return None
    if st.st_size > max_bytes:
        snap.skipped[rel] = f"over [checkpoints] max_file_mb ({st.st_size / 2**20:.1f} MB)"
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        snap.skipped[rel] = f"unreadable ({exc.strerror or exc})"
        return None
    mode = EXEC if st.st_mode & 0o111 else FILE
    return Entry(mode, repo.write_blob(data))


def _read_folder(
    repo: ShadowRepo,
    root: Path,
    rel: str,
    snap: PathSnapshot,
    max_bytes: int,
    exclude: Collection[str],
) -> None:
    found: list[tuple[str, Path, os.stat_result]] = []
    empty: list[str] = []
    stack = [rel]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(root / here) as it:
                items = list(it)
        except OSError:
            continue
        if not items:
            empty.append(here)
        for item in items:
            if item.name == ".git":
                continue  # never the user's repository
            sub = f"{here}/{item.name}" if here else item.name
            if _under(sub, exclude):
                continue
            if not is_utf8(sub):
                snap.skipped[shown(sub)] = NOT_UTF8
                continue
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(sub)
            else:
                found.append((sub, Path(item.path), st))
        if len(found) > MAX_FILES:
            snap.skipped[rel or "."] = f"a folder of more than {MAX_FILES} files"
            snap.covered.discard(rel)  # unknown, not absent: nothing under it is kept
            return
    for sub, path, st in found:
        entry = _entry(repo, path, st, sub, snap, max_bytes)
        if entry is not None:
            snap.entries[sub] = entry
    for folder in empty:
        snap.entries[folder] = Entry(DIR)
