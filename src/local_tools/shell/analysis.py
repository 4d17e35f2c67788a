"""From a command line to what the policy checks and what is refused before anything runs."""

from __future__ import annotations

import glob
import itertools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from local_tools.core.errors import InvalidInput
from local_tools.security.patterns import UNPARSED_PREFIX
from local_tools.security.real_path import real_path
from local_tools.shell.command_checks import (
    directory_changes,
    followed_trees,
    interactive_advice,
    leading_patterns,
    path_arguments,
    pattern_arguments,
    unknown_paths,
)
from local_tools.shell.command_parse import ParsedCommand, parse_command

__all__ = ["UNKNOWN_PATH_PREFIX", "UNPARSED_PREFIX", "Analysis", "analyze", "outside_paths"]

MAX_COMMAND_CHARS = 64 * 1024


@dataclass(frozen=True, slots=True)
class Analysis:
    parsed: ParsedCommand
    subjects: tuple[str, ...]

    @property
    def programs(self) -> set[str]:
        return {c.program for c in self.parsed.commands}


@lru_cache(maxsize=256)
def analyze(command: str, *, background: bool) -> Analysis:
    """Parse `command`; raise InvalidInput for what must not run at all.

    Cached: the policy's subjects and the tool itself both need it for one call
    (and agents repeat commands). Refusals raise anew each time, uncached.
    """
    if not command.strip():
        raise InvalidInput("command is empty: give the shell command to run, e.g. 'ls -la'.")
    if "\0" in command:
        raise InvalidInput("command contains a NUL byte, which no shell can run; remove it.")
    try:
        command.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(
            "command contains a lone surrogate (broken UTF-16 escape); send valid text."
        ) from None
    if len(command) > MAX_COMMAND_CHARS:
        raise InvalidInput(
            f"command is {len(command)} characters, more than {MAX_COMMAND_CHARS}: write a "
            "script file with write_file and run that instead."
        )
    parsed = parse_command(command)
    for cmd in parsed.commands:
        advice = interactive_advice(cmd, background=background)
        if advice is not None:
            raise InvalidInput(f"{cmd.program} would wait for a terminal and hang: {advice}")
    # A word known only at run time (`find . $x`, `sort {-o,F}`) makes the rules read
    # text the shell will not run: the whole command is then not understood, too.
    inexact = any(c.inexact is not None for c in parsed.commands)
    if parsed.error is not None or inexact or not parsed.commands:
        # The parts read exactly are checked too, so that a rule for every command
        # (`"execute:command" = "allow"`) still asks for `echo $(rm -rf d)`'s `rm -rf d`.
        known = [c.text for c in parsed.commands if c.inexact is None and not c.dynamic]
        subjects: tuple[str, ...] = tuple(dict.fromkeys([UNPARSED_PREFIX + command, *known]))
    else:
        subjects = tuple(dict.fromkeys(c.text for c in parsed.commands))
    return Analysis(parsed, subjects)


def outside_paths(analysis: Analysis, cwd: Path, roots: Sequence[Path]) -> list[str]:
    """What the command may touch outside every root, for `external:file`.

    A path is judged where it leads: `~/` expanded, symlinks followed (a workspace link
    to ~/.ssh is ~/.ssh), a pattern matched against the file system as it is now. A
    word only known at run time may lead anywhere: it is returned as
    `(unknown path) WORD`, asked like a path outside, and approved only exactly.
    """
    bounds = _bounds(roots)
    commands = analysis.parsed.commands
    found: list[str] = []
    if analysis.parsed.misread:
        # bash may run words the parser never saw: any path at all
        found.append(f"{UNKNOWN_PATH_PREFIX}(words the parser did not read as bash does)")
    # `cd src && cat deep/x` reads src/deep/x: relative paths are judged from every
    # folder the command line may move to (a superset: more asks, never fewer).
    bases = [real_path(cwd)]
    for cmd in commands:
        for folder in directory_changes(cmd):
            for base in list(bases):
                moved = real_path(os.path.join(base, os.path.expanduser(folder)))
                if moved not in bases and os.path.isdir(moved):
                    bases.append(moved)
    if len(bases) > _MAX_BASES:
        found.append(f"{UNKNOWN_PATH_PREFIX}(more than {_MAX_BASES} folders changed to)")
        bases = bases[:_MAX_BASES]
    for cmd in commands:
        patterns = pattern_arguments(cmd)
        for arg in path_arguments(cmd):
            for base in bases:
                leads = _resolved(arg, base, arg in patterns)
                found += [full for full in leads if not _inside(full, bounds)]
        found += [UNKNOWN_PATH_PREFIX + word for word in unknown_paths(cmd)]
        injected = any(_names_an_option(p, base) for p in leading_patterns(cmd) for base in bases)
        for tree in followed_trees(cmd, injected=injected):
            for base in bases:
                for top in _resolved(tree, base, tree in patterns):
                    found += _links_out(top, tree, bounds)
    return list(dict.fromkeys(found))


UNKNOWN_PATH_PREFIX = "(unknown path) "
_MAX_MATCHES = 1000  # file names a pattern is checked against; past that it is unknown
_MAX_WALK = 20_000  # entries of a tree searched for symlinks; past that it is unknown
_MAX_BASES = 16  # folders relative paths are judged from
# A bracket expression (`[!a]`, `[^a]`, `[[:alpha:]]`): one character, as `?` matches;
# Python's glob does not know every bash form, and `?` matches at least what bash would.
_BRACKET = re.compile(r"\[[!^]?\]?(?:\[:\w+:\]|[^\]])*\]")


def _bounds(roots: Sequence[Path]) -> list[str]:
    out: list[str] = []
    for root in roots:
        for form in (os.path.normpath(root), real_path(root)):
            out.append(form.rstrip(os.sep) + os.sep)
    return out


def _inside(path: str, bounds: Sequence[str]) -> bool:
    return any((path + os.sep).startswith(b) for b in bounds)


def _resolved(arg: str, cwd: str, pattern: bool) -> list[str]:
    """Where `arg` leads from `cwd`: itself, and each file a pattern matches now."""
    expanded = os.path.expanduser(arg)
    found = [real_path(os.path.join(cwd, expanded))]
    if pattern:
        matches = glob.iglob(_BRACKET.sub("?", expanded), root_dir=cwd)
        for name in itertools.islice(matches, _MAX_MATCHES + 1):
            found.append(real_path(os.path.join(cwd, name)))
        if len(found) > _MAX_MATCHES + 1:
            found.append(UNKNOWN_PATH_PREFIX + arg)  # never inside a root: asked
    return found


def _names_an_option(pattern: str, cwd: str) -> bool:
    """Whether `pattern` matches a file name bash would pass as an option now."""
    matches = glob.iglob(_BRACKET.sub("?", pattern), root_dir=cwd)
    return any(m.startswith("-") for m in itertools.islice(matches, _MAX_MATCHES))


def _links_out(top: str, tree: str, bounds: Sequence[str]) -> list[str]:
    """Where the symlinks inside folder `top` (`tree` as written) lead outside the roots:
    a command that follows them reads there. `(unknown path) TREE` when it is too large
    to look through."""
    if top.startswith("(") or not os.path.isdir(top) or not _inside(top, bounds):
        return []  # a file, or outside: path_arguments has it
    found: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            seen += 1
            if seen > _MAX_WALK:
                return [*found, f"{UNKNOWN_PATH_PREFIX}{tree} (too many files to look through)"]
            full = os.path.join(folder, name)
            if os.path.islink(full):
                target = real_path(full)
                if not _inside(target, bounds):
                    found.append(target)
    return found
