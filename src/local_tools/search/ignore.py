"""Ignore files (`.gitignore`, `.ignore`, `.rgignore`) the way ripgrep reads them.

The rules are ripgrep's (its `ignore` crate), so the pure-Python walk skips exactly
what `rg` skips with the flags in `ripgrep.WALK_FLAGS`:

- A line is a glob (see `glob_match`): `#` starts a comment, `!` re-includes, a
  trailing `/` matches folders only, a leading `/` or a `/` inside anchors the glob
  to the file's folder, otherwise it matches at any depth below it. Trailing spaces
  are dropped unless escaped (`\\ `).
- Within one file the last matching line wins. For each kind of file, the deepest
  folder whose file has a matching line decides; the kinds rank `.rgignore` over
  `.ignore` over `.gitignore`. A folder that is ignored is not entered, so nothing
  inside it can be re-included.
- Ignore files in folders above the searched one but inside its root are merged into
  one lowest-ranked layer, their globs rewritten to be relative to the root
  (`rebase_line`); ripgrep gets the same layer through `--ignore-file`. Nothing above
  the root (the workspace) is read: no parent folders, no global git excludes, no
  `.git/info/exclude`.

pathspec's `GitIgnoreSpec` was tried and left out: it tests a folder as `dir/`,
which makes `x/**` hide the folder itself (so `!x/keep` cannot re-include), and it
knows neither braces nor ripgrep's handling of escapes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from local_tools.search.glob_dfa import GlobAutomaton
from local_tools.search.glob_match import (
    REGEX_MAX_PATH,
    CompiledGlob,
    GlobError,
    compile_glob,
    glob_automaton,
)
from local_tools.security.syscalls import READ_FLAGS

__all__ = [
    "IGNORE_FILE_NAMES",
    "IgnoreMatcher",
    "parent_ignore_lines",
    "read_ignore_lines",
    "rebase_line",
]

# Highest rank first.
IGNORE_FILE_NAMES = (".rgignore", ".ignore", ".gitignore")
MAX_IGNORE_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class _Rule:
    whitelist: bool
    dir_only: bool
    glob: CompiledGlob


def _parse(line: str) -> tuple[bool, bool, bool, str] | None:
    """(whitelist, absolute, dir_only, glob) for one line, as ripgrep's add_line does."""
    if line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip()
    if not line:
        return None
    whitelist = absolute = False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
        absolute = line.startswith("/")
    else:
        if line.startswith("!"):
            whitelist = True
            line = line[1:]
        if line.startswith("/"):
            line = line[1:]
            absolute = True
    dir_only = line.endswith("/")
    if dir_only:
        line = line[:-1]
        if line.endswith("\\"):
            line = line[:-1]
    return whitelist, absolute, dir_only, line


def _rule(line: str) -> _Rule | None:
    parsed = _parse(line)
    if parsed is None:
        return None
    whitelist, absolute, dir_only, glob = parsed
    if not absolute and "/" not in glob and not (glob.startswith("**/") or glob == "**"):
        glob = "**/" + glob
    if glob.endswith("/**"):
        glob += "/*"
    try:
        compiled = compile_glob(glob, allow_unclosed_class=True)
    except GlobError:
        return None  # ripgrep warns and skips the line
    return _Rule(whitelist, dir_only, compiled)


@dataclass(frozen=True)
class _Rules:
    """One file's rules, last rule first: the rule that matches first wins.

    One regex for all of them, whose matching group is the rule that wins, when every
    rule's regex is safe (see `compile_glob`) and the path is short; else the automaton
    of all of them, whose best rank is that rule.
    """

    regex: re.Pattern[bytes] | None
    automaton: GlobAutomaton
    white: tuple[bool, ...]  # by group number / rank (1-based)

    def winner(self, path: bytes) -> int | None:
        if self.regex is not None and len(path) <= REGEX_MAX_PATH:
            m = self.regex.fullmatch(path)
            return None if m is None else m.lastindex or 0
        return self.automaton.match(path)


def _combine(rules: Sequence[_Rule]) -> _Rules | None:
    if not rules:
        return None
    ordered = list(reversed(rules))
    regex = None
    if all(r.glob.regex_safe for r in ordered):
        source = "|".join(f"({r.glob.regex})" for r in ordered)
        regex = re.compile(source.encode("ascii"))
    automaton = glob_automaton([(r.glob.tokens, i) for i, r in enumerate(ordered, 1)])
    return _Rules(regex, automaton, (False, *(r.whitelist for r in ordered)))


class IgnoreMatcher:
    """The globs of one folder's ignore file(s) of one kind (or of the parent layer)."""

    __slots__ = ("_dirs", "_files")

    def __init__(self, lines: Iterable[str]) -> None:
        rules = [r for r in map(_rule, lines) if r is not None]
        self._files = _combine([r for r in rules if not r.dir_only])
        self._dirs = _combine(rules)

    @property
    def empty(self) -> bool:
        return self._dirs is None

    def match(self, path: bytes, is_dir: bool) -> int:
        """1 ignored, -1 re-included (whitelisted), 0 no line matches. `path` is relative."""
        rules = self._dirs if is_dir else self._files
        if rules is None:
            return 0
        winner = rules.winner(path)
        if winner is None:
            return 0
        return -1 if rules.white[winner] else 1


def read_ignore_lines(path: str) -> list[str]:
    """The lines of an ignore file, as ripgrep reads them (no symlink followed here).

    Reading stops at the first line that is not UTF-8, like ripgrep; an unreadable
    file is treated as empty.
    """
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError:
        return []
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_IGNORE_FILE_BYTES)
    except OSError:
        return []
    lines = []
    for number, raw in enumerate(data.split(b"\n")):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            break
        if number == 0:
            line = line.lstrip("\ufeff")
        lines.append(line)
    return lines


_GLOB_META = re.compile(r"([\\*?\[\]{},!#])")


def rebase_line(line: str, folder: str) -> str | None:
    """A line of `folder`'s ignore file rewritten for a file at the root (`folder` relative).

    `folder` "" returns the line unchanged; None for comments and blank lines.
    """
    parsed = _parse(line)
    if parsed is None:
        return None
    if not folder:
        return line
    whitelist, absolute, dir_only, glob = parsed
    prefix = "/" + _GLOB_META.sub(r"\\\1", folder) + "/"
    if absolute or "/" in glob or glob.startswith("**/") or glob == "**":
        body = prefix + glob
    else:
        body = prefix + "**/" + glob
    return ("!" if whitelist else "") + body + ("/" if dir_only else "")


def parent_ignore_lines(base: str, folder: str) -> list[str]:
    """The parent layer for a search of `folder` (relative to root `base`, '/'-separated).

    The ignore files of every folder from `base` down to, not including, `folder`,
    shallow to deep and lower-ranked kinds first, so later (stronger) lines win.
    """
    if not folder:
        return []
    parts = folder.split("/")
    out: list[str] = []
    for depth in range(len(parts)):
        rel = "/".join(parts[:depth])
        where = os.path.join(base, *parts[:depth])
        for name in reversed(IGNORE_FILE_NAMES):
            for line in read_ignore_lines(os.path.join(where, name)):
                rebased = rebase_line(line, rel)
                if rebased is not None:
                    out.append(rebased)
    return out
