"""From a command line to what the policy checks and what is refused before anything runs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from local_tools.core.errors import InvalidInput
from local_tools.shell.command_checks import interactive_advice, path_arguments
from local_tools.shell.command_parse import ParsedCommand, parse_command

__all__ = ["UNPARSED_PREFIX", "Analysis", "analyze", "outside_paths"]

# A command that could not be analysed is checked as one subject with this prefix:
# only a rule matching any command ("*") can allow it, never `git status*`.
UNPARSED_PREFIX = "(not understood) "
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
    if parsed.error is not None or not parsed.commands:
        subjects: tuple[str, ...] = (UNPARSED_PREFIX + command,)
    else:
        subjects = tuple(dict.fromkeys(c.text for c in parsed.commands))
    return Analysis(parsed, subjects)


def outside_paths(analysis: Analysis, cwd: Path, roots: Sequence[Path]) -> list[str]:
    """Path arguments that lead outside every allowed root (judged lexically)."""
    found: list[str] = []
    for cmd in analysis.parsed.commands:
        for arg in path_arguments(cmd):
            full = os.path.normpath(os.path.join(cwd, os.path.expanduser(arg)))
            if not any(
                full == str(r) or full.startswith(str(r).rstrip(os.sep) + os.sep) for r in roots
            ):
                found.append(full)
    return list(dict.fromkeys(found))
