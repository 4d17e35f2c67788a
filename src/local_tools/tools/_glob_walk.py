"""Workspace-relative globs with pathlib-style `**`, walked through the jail.

`*`, `?` and `[...]` match within one path component, `**` matches any number of
folders (a trailing `**` matches every file below). Like a shell without dotglob, a
wildcard does not match a name starting with "." and `**` does not enter hidden
folders, `node_modules` or `__pycache__`: a glob reaches those only by naming them
(`.github/**/*.yml`, `**/.env`, `node_modules/x/*.js`); `.git` only as `.git`.
Symbolic links to folders are not followed by wildcards (no loops, no escapes).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import Any

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput, NotFound, ToolError
from local_tools.security.jail import DirEntryInfo

__all__ = ["GlobWalk", "glob_parts", "has_magic", "path_excluded"]

MAX_DIRS = 5000
MAX_MATCHES = 1000
_NOT_WALKED = frozenset(("node_modules", "__pycache__"))


def has_magic(text: str) -> bool:
    return any(c in text for c in "*?[")


def glob_parts(pattern: str) -> list[str]:
    """The components of a workspace-relative glob; INVALID_INPUT for one that leaves it."""
    text = pattern.replace(os.sep, "/") if os.sep != "/" else pattern
    if text.startswith("/") or os.path.isabs(pattern):
        raise InvalidInput(
            f"The glob {pattern!r} is absolute; globs are relative to the workspace "
            "(e.g. 'src/**/*.py'). Name files outside it in `paths`."
        )
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InvalidInput(f"The glob {pattern!r} uses '..'; globs stay inside the workspace.")
    if not parts:
        raise InvalidInput(f"The glob {pattern!r} matches nothing; try '**/*.py'.")
    collapsed: list[str] = []
    for part in parts:
        if not (part == "**" and collapsed and collapsed[-1] == "**"):
            collapsed.append(part)
    return collapsed


def _matches(parts: Sequence[str], names: Sequence[str]) -> bool:
    """Whether a path (its components) matches a glob (its components), dots included."""
    memo: dict[tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        key = (i, j)
        if key not in memo:
            if i == len(parts):
                memo[key] = j == len(names)
            elif parts[i] == "**":
                memo[key] = any(match(i + 1, k) for k in range(j, len(names) + 1))
            else:
                memo[key] = (
                    j < len(names) and fnmatchcase(names[j], parts[i]) and match(i + 1, j + 1)
                )
        return memo[key]

    return match(0, 0)


def path_excluded(path: str, excludes: Sequence[list[str]]) -> bool:
    """True when `path` or a folder above it matches one of the exclude globs."""
    names = path.split("/")
    return any(_matches(parts, names[:k]) for parts in excludes for k in range(1, len(names) + 1))


def _visible(name: str, segment: str) -> bool:
    """Whether a wildcard segment may match this name at all (the naming rule above)."""
    if name == ".git":
        return segment == ".git"
    return not name.startswith(".") or segment.startswith(".")


class GlobWalk:
    """Files matching globs, found with jail.scandir; errors and notes collected."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.found: dict[str, None] = {}
        self.errors: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self._scanned: dict[str, list[DirEntryInfo] | None] = {}
        self._stopped = False

    def run(self, patterns: Sequence[str]) -> list[str]:
        for pattern in patterns:
            self._select("", glob_parts(pattern), 0)
        return list(self.found)

    def _entries(self, rel: str) -> list[DirEntryInfo]:
        if rel in self._scanned:
            return self._scanned[rel] or []
        if len(self._scanned) >= MAX_DIRS:
            if not self._stopped:
                self.notes.append(
                    f"The search stopped after {MAX_DIRS} folders; some matches may be "
                    "missing. Use a narrower glob (e.g. 'src/**/*.py' rather than '**/*')."
                )
            self._stopped = True
            return []
        self.ctx.check_cancelled()
        try:
            entries: list[DirEntryInfo] | None = self.ctx.jail.scandir(rel or ".")
        except NotFound:
            entries = None
        except ToolError as exc:  # a folder outside the roots, unreadable, a file
            entries = None
            if not isinstance(exc, InvalidInput):
                self.errors.append(
                    {"path": rel, "error_code": exc.code.value, "message": exc.message}
                )
        self._scanned[rel] = entries
        return entries or []

    def _add(self, path: str) -> None:
        if len(self.found) >= MAX_MATCHES:
            if not self._stopped:
                self.notes.append(
                    f"More than {MAX_MATCHES} files matched; only the first were considered."
                )
            self._stopped = True
            return
        self.found.setdefault(path, None)

    def _is_file(self, rel: str, entry: DirEntryInfo) -> bool:
        if entry.kind == "file":
            return True
        if entry.kind != "symlink":
            return False
        try:  # a link to a folder is not a file; one that leads outside is reported on read
            return not stat.S_ISDIR(self.ctx.jail.stat(rel).st_mode)
        except ToolError:
            return True

    def _select(self, rel: str, parts: list[str], i: int) -> None:
        if self._stopped:
            return
        segment, last = parts[i], i == len(parts) - 1
        join = (rel + "/") if rel else ""
        if segment == "**":
            if not last:
                self._select(rel, parts, i + 1)  # zero folders
            for entry in self._entries(rel):
                if entry.name in _NOT_WALKED or not _visible(entry.name, "**"):
                    continue
                child = join + entry.name
                if entry.kind == "directory":
                    self._select(child, parts, i)
                elif last and self._is_file(child, entry):
                    self._add(child)
            return
        literal = not has_magic(segment)
        for entry in self._entries(rel):
            if literal:
                if entry.name != segment:
                    continue
            elif not (_visible(entry.name, segment) and fnmatchcase(entry.name, segment)):
                continue
            child = join + entry.name
            if last:
                if self._is_file(child, entry):
                    self._add(child)
            elif entry.kind == "directory" or (literal and entry.kind == "symlink"):
                self._select(child, parts, i + 1)
