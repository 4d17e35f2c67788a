"""What a deployment would do, decided without changing anything.

Two phases, as the seed has them: files in the target the source no longer has are
deleted (never a protected path), then files whose extension is on the whitelist are
copied (new, or overwriting a different file; identical ones are left alone). Source
maps and files off the whitelist are reported, not copied. Protected paths are never
deleted nor overwritten: `.git` and `.local-tools` folders at any depth, README.md,
local-tools.toml and config.toml (the seed's own protected config file) at the top,
and the configured globs. A symlink is copied as a link
only when it provably stays inside the target; other symlinks and special files are
reported. Everything is read through directory descriptors (see `tree`).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

from local_tools.deploy.tree import Dirs, open_regular, walk
from local_tools.security.dirfd import Dir

__all__ = ["FIXED_PROTECTED", "Entry", "Plan", "Protection", "link_stays_inside", "make_plan"]

# Never deleted or overwritten in the target, whatever the config says.
# config.toml: the project's config in the seed's deploy, which never deletes it either.
FIXED_PROTECTED = ("README.md", "local-tools.toml", "config.toml")  # at the top of the target
PROTECTED_NAMES = (".git", ".local-tools")  # folders protected wherever they are


@dataclass(frozen=True)
class Entry:
    path: str  # relative, with forward slashes
    size: int = 0
    reason: str = ""  # skipped: why; copied: "new" or "overwrite"; links: the text


@dataclass
class Plan:
    delete: list[Entry] = field(default_factory=list)
    copy: list[Entry] = field(default_factory=list)  # reason "new" or "overwrite"
    links: list[Entry] = field(default_factory=list)  # symlinks made, reason = text
    unchanged: list[Entry] = field(default_factory=list)
    skip: list[Entry] = field(default_factory=list)
    protected: list[Entry] = field(default_factory=list)  # in the target, kept
    source_dirs: list[str] = field(default_factory=list)  # mirrored, empty ones too
    protected_patterns: tuple[str, ...] = FIXED_PROTECTED

    def shape(self) -> tuple[object, ...]:
        """What the person approves: compared with a fresh plan before acting."""
        return (
            [e.path for e in self.delete],
            [(e.path, e.reason) for e in self.copy],
            [(e.path, e.reason) for e in self.links],
        )

    def summary(self, shown_source: str, shown_target: str, limit: int = 12) -> str:
        """The plan as a person approves it: counts, then the paths (the first `limit`).
        Paths are shown escaped: a file name cannot add a line of its own."""
        new = sum(1 for e in self.copy if e.reason == "new")
        lines = [
            f"Deploy {shown_source} → {shown_target}: delete {len(self.delete)}, copy "
            f"{len(self.copy)} ({new} new, {len(self.copy) - new} overwritten), "
            f"{len(self.links)} links, {len(self.unchanged)} unchanged, "
            f"{len(self.skip)} skipped, {len(self.protected)} protected kept."
        ]
        over = [e for e in self.copy if e.reason == "overwrite"]
        for title, entries in (("delete", self.delete), ("overwrite", over)):
            for e in entries[:limit]:
                lines.append(f"  {title}: {printable(e.path)}")
            if len(entries) > limit:
                lines.append(f"  … and {len(entries) - limit} more to {title}")
        return "\n".join(lines)


def printable(path: str) -> str:
    return path if path.isprintable() else repr(path)


class Protection:
    """A path is protected when it, or a folder above it, matches a protected pattern,
    or when any folder on it is named .git or .local-tools."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = [p.strip("/") for p in patterns]

    def __call__(self, rel: str) -> bool:
        parts = rel.split("/")
        if any(part in PROTECTED_NAMES for part in parts):
            return True
        prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        return any(fnmatch.fnmatchcase(p, pat) for p in prefixes for pat in self.patterns)


def link_stays_inside(rel: str, text: str) -> bool:
    """Whether the link `rel` -> `text` resolves inside the tree whatever the other
    links in it are: relative, its `..` only leading (a `..` after a component that is
    itself a link would climb from wherever that link leads), landing inside."""
    if not text or os.path.isabs(text) or "\\" in text:
        return False
    parts = [p for p in text.split("/") if p not in ("", ".")]
    climbs = 0
    while climbs < len(parts) and parts[climbs] == "..":
        climbs += 1
    if ".." in parts[climbs:]:
        return False
    return climbs <= rel.count("/")  # no higher than the tree's top


def make_plan(
    source: Dir,
    target: Dir | None,
    extensions: Sequence[str],
    protected: Sequence[str],
    shown_source: str,
    shown_target: str,
) -> Plan:
    """The plan for the folders behind `source` and `target` (None: not there yet)."""
    plan = Plan(protected_patterns=(*FIXED_PROTECTED, *protected))
    is_protected = Protection(plan.protected_patterns)
    allowed = {e.lower() for e in extensions}
    source_dirs: set[str] = set()
    source_paths: set[str] = set()
    src_dirs = Dirs(source)
    dst_dirs = Dirs(target) if target is not None else None
    try:
        for rel, st in walk(source, shown_source):
            source_paths.add(rel)
            if stat.S_ISDIR(st.st_mode):
                source_dirs.add(rel)
            elif is_protected(rel):
                plan.skip.append(Entry(rel, st.st_size, "protected in the target"))
            elif stat.S_ISLNK(st.st_mode):
                _plan_link(plan, src_dirs, dst_dirs, rel)
            elif not stat.S_ISREG(st.st_mode):
                plan.skip.append(Entry(rel, 0, "not a regular file"))
            else:
                _plan_file(plan, src_dirs, dst_dirs, rel, st, allowed)
        if target is not None:
            for rel, st in walk(target, shown_target):
                if stat.S_ISDIR(st.st_mode):
                    continue
                if is_protected(rel):
                    plan.protected.append(Entry(rel, st.st_size))
                elif rel not in source_paths or rel in source_dirs:  # gone, or a folder now
                    plan.delete.append(Entry(rel, st.st_size))
    finally:
        src_dirs.close()
        if dst_dirs is not None:
            dst_dirs.close()
    plan.source_dirs = sorted(d for d in source_dirs if not is_protected(d))
    return plan


def _lstat(dirs: Dirs | None, rel: str) -> os.stat_result | None:
    if dirs is None:
        return None
    try:
        folder, name = dirs.parent_of(rel)
        return folder.lstat(name)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _plan_file(
    plan: Plan,
    src: Dirs,
    dst: Dirs | None,
    rel: str,
    st: os.stat_result,
    allowed: set[str],
) -> None:
    ext = posixpath.splitext(rel)[1].lower()
    if ext == ".map":
        plan.skip.append(Entry(rel, st.st_size, "source map"))
        return
    if ext not in allowed:
        why = f"{ext or 'no extension'} is not on the whitelist ([deploy] extensions)"
        plan.skip.append(Entry(rel, st.st_size, why))
        return
    folder, name = src.parent_of(rel)
    if not os.access(name, os.R_OK, dir_fd=folder.fd, follow_symlinks=False):
        plan.skip.append(Entry(rel, st.st_size, "not readable"))
        return
    theirs = _lstat(dst, rel)
    if theirs is None:
        plan.copy.append(Entry(rel, st.st_size, "new"))
    elif stat.S_ISREG(theirs.st_mode) and dst is not None and _same(src, dst, rel):
        plan.unchanged.append(Entry(rel, st.st_size))
    else:
        plan.copy.append(Entry(rel, st.st_size, "overwrite"))
        # A link (or a FIFO) where the file goes is removed first; a folder's content
        # is deleted by the target's walk.
        if not stat.S_ISREG(theirs.st_mode) and not stat.S_ISDIR(theirs.st_mode):
            plan.delete.append(Entry(rel, 0))


def _same(src: Dirs, dst: Dirs, rel: str) -> bool:
    try:
        a_dir, name = src.parent_of(rel)
        b_dir, _ = dst.parent_of(rel)
        fa, sa = open_regular(a_dir, name)
    except OSError:
        return False
    try:
        try:
            fb, sb = open_regular(b_dir, name)
        except OSError:
            return False
        try:
            if sa.st_size != sb.st_size:
                return False
            while True:
                a, b = os.read(fa, 1 << 20), os.read(fb, 1 << 20)
                if a != b:
                    return False
                if not a:
                    return True
        finally:
            os.close(fb)
    finally:
        os.close(fa)


def _plan_link(plan: Plan, src: Dirs, dst: Dirs | None, rel: str) -> None:
    folder, name = src.parent_of(rel)
    text = folder.readlink(name)
    if not link_stays_inside(rel, text):
        why = f"symlink that may point outside the target ({printable(text)})"
        plan.skip.append(Entry(rel, 0, why))
        return
    theirs = _lstat(dst, rel)
    if theirs is not None and stat.S_ISLNK(theirs.st_mode) and dst is not None:
        there, _ = dst.parent_of(rel)
        if there.readlink(name) == text:
            plan.unchanged.append(Entry(rel, 0, text))
            return
    if theirs is not None and not stat.S_ISDIR(theirs.st_mode):
        plan.delete.append(Entry(rel, theirs.st_size))  # replaced by the link
    plan.links.append(Entry(rel, 0, text))
