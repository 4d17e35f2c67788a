"""What a deployment would do, decided without changing anything.

Two phases, as the seed has them: files in the target the source no longer has are
deleted (never a protected path), then files whose extension is on the whitelist are
copied (new, or overwriting a different file; identical ones are left alone). Source
maps and files off the whitelist are reported, not copied. Protected paths are never
deleted nor overwritten. A symlink is copied as a link only when it stays inside the
target (relative, and not climbing out); other symlinks and special files are
reported. Nothing here follows a symlink.
"""

from __future__ import annotations

import filecmp
import fnmatch
import os
import posixpath
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from local_tools.core.errors import InvalidInput, NotFound

__all__ = ["FIXED_PROTECTED", "MAX_ENTRIES", "Entry", "Plan", "Protection", "make_plan", "walk"]

# Never deleted or overwritten in the target, whatever the config says.
FIXED_PROTECTED = (".git", "README.md", "local-tools.toml", ".local-tools")
MAX_ENTRIES = 100_000  # files in the source or the target: beyond, a deploy is refused


@dataclass(frozen=True)
class Entry:
    path: str  # relative, with forward slashes
    size: int = 0
    reason: str = ""  # skipped: why; copied: "new" or "overwrite"


@dataclass
class Plan:
    source: Path
    target: Path
    delete: list[Entry] = field(default_factory=list)
    copy: list[Entry] = field(default_factory=list)  # reason "new" or "overwrite"
    links: list[Entry] = field(default_factory=list)  # symlinks copied as links
    unchanged: list[Entry] = field(default_factory=list)
    skip: list[Entry] = field(default_factory=list)
    protected: list[Entry] = field(default_factory=list)  # in the target, kept
    source_dirs: list[str] = field(default_factory=list)  # mirrored, empty ones too
    target_exists: bool = True
    protected_patterns: tuple[str, ...] = FIXED_PROTECTED

    @property
    def changes(self) -> int:
        return len(self.delete) + len(self.copy) + len(self.links)

    def summary(self, shown_source: str, shown_target: str, limit: int = 12) -> str:
        """The plan as a person approves it: counts, then the paths (the first `limit`)."""
        new = sum(1 for e in self.copy if e.reason == "new")
        lines = [
            f"Deploy {shown_source} → {shown_target}: delete {len(self.delete)}, copy "
            f"{len(self.copy)} ({new} new, {len(self.copy) - new} overwritten), "
            f"{len(self.unchanged)} unchanged, {len(self.skip)} skipped, "
            f"{len(self.protected)} protected kept."
        ]
        for title, entries in (("delete", self.delete), ("overwrite", self._over())):
            for e in entries[:limit]:
                lines.append(f"  {title}: {e.path}")
            if len(entries) > limit:
                lines.append(f"  … and {len(entries) - limit} more to {title}")
        return "\n".join(lines)

    def _over(self) -> list[Entry]:
        return [e for e in self.copy if e.reason == "overwrite"]


def make_plan(
    source: Path, target: Path, extensions: Sequence[str], protected: Sequence[str]
) -> Plan:
    """The plan for real, resolved `source` and `target` folders."""
    if _inside(source, target) or _inside(target, source):
        raise InvalidInput(
            "The source and the target overlap (one is inside the other): deploying would "
            "delete the source's own files. Pick folders side by side."
        )
    if not source.exists():
        raise NotFound(f"The source {source} does not exist.")
    if not source.is_dir():
        raise InvalidInput(f"The source {source} is not a folder.")
    patterns = (*FIXED_PROTECTED, *protected)
    plan = Plan(source, target, target_exists=target.exists(), protected_patterns=patterns)
    if plan.target_exists and not target.is_dir():
        raise InvalidInput(f"The target {target} exists and is not a folder.")
    is_protected = Protection(patterns)
    allowed = {e.lower() for e in extensions}
    source_dirs: set[str] = set()
    source_paths: set[str] = set()
    for rel, st in walk(source):
        source_paths.add(rel)
        if stat.S_ISDIR(st.st_mode):
            source_dirs.add(rel)
            continue
        if is_protected(rel):
            plan.skip.append(Entry(rel, st.st_size, "protected in the target"))
        elif stat.S_ISLNK(st.st_mode):
            _plan_link(plan, source, rel)
        elif not stat.S_ISREG(st.st_mode):
            plan.skip.append(Entry(rel, 0, "not a regular file"))
        else:
            _plan_file(plan, rel, st, allowed)
    if plan.target_exists:
        for rel, st in walk(target):
            if stat.S_ISDIR(st.st_mode):
                continue
            if is_protected(rel):
                plan.protected.append(Entry(rel, st.st_size))
            elif rel not in source_paths or rel in source_dirs:  # gone, or now a folder
                plan.delete.append(Entry(rel, st.st_size))
    plan.source_dirs = sorted(source_dirs)
    return plan


def _plan_file(plan: Plan, rel: str, st: os.stat_result, allowed: set[str]) -> None:
    ext = posixpath.splitext(rel)[1].lower()
    if ext == ".map":
        plan.skip.append(Entry(rel, st.st_size, "source map"))
        return
    if ext not in allowed:
        why = f"{ext or 'no extension'} is not on the whitelist ([deploy] extensions)"
        plan.skip.append(Entry(rel, st.st_size, why))
        return
    there = plan.target / rel
    try:
        theirs = there.lstat() if plan.target_exists else None
    except FileNotFoundError:
        theirs = None
    except NotADirectoryError:  # a file where the source has a folder
        theirs = None
    if theirs is None:
        plan.copy.append(Entry(rel, st.st_size, "new"))
    elif stat.S_ISREG(theirs.st_mode) and filecmp.cmp(plan.source / rel, there, shallow=False):
        plan.unchanged.append(Entry(rel, st.st_size))
    else:
        plan.copy.append(Entry(rel, st.st_size, "overwrite"))


def _plan_link(plan: Plan, source: Path, rel: str) -> None:
    text = os.readlink(source / rel)
    lands = posixpath.normpath(posixpath.join(posixpath.dirname(rel), text))
    if os.path.isabs(text) or lands == ".." or lands.startswith("../"):
        plan.skip.append(Entry(rel, 0, f"symlink pointing outside the target ({text})"))
    else:
        plan.links.append(Entry(rel, 0, text))


def walk(top: Path) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of everything under `top`, folders before their content;
    symlinks are entries, never followed."""
    count = 0
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        with os.scandir(top / rel_dir if rel_dir else top) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            st = entry.stat(follow_symlinks=False)
            count += 1
            if count > MAX_ENTRIES:
                raise InvalidInput(f"{top} has more than {MAX_ENTRIES} entries: too many.")
            yield rel, st
            if stat.S_ISDIR(st.st_mode):
                stack.append(rel)


class Protection:
    """A path is protected when it, or a folder above it, matches a protected pattern."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = [p.strip("/") for p in patterns]

    def __call__(self, rel: str) -> bool:
        parts = rel.split("/")
        prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        return any(fnmatch.fnmatchcase(p, pat) for p in prefixes for pat in self.patterns)


def _inside(a: Path, b: Path) -> bool:
    """Whether `a` is `b` or lies under it."""
    return a == b or b in a.parents
