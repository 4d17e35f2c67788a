"""The rule pattern language, and the pattern to suggest for allowing a subject.

`*` is any text (newlines included), `?` one character; a pattern is anchored at both
ends, and a trailing ` *` is optional, so `"ls *"` also matches bare `ls`. The matching
that stays linear-time on long subjects lives here too, next to the language it follows.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "UNPARSED_PREFIX",
    "compile_pattern",
    "exact_only",
    "match_pattern",
    "suggest_pattern",
]

# A command that could not be analysed exactly is checked as one subject with this
# prefix: only a rule matching any command ("*") can allow it, never `git status*`.
UNPARSED_PREFIX = "(not understood) "


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """`*` any text, `?` one character, anchored (use fullmatch); trailing ` *` optional."""
    return re.compile(_regex_source(pattern), re.DOTALL)


@lru_cache(maxsize=4096)
def _regex_source(pattern: str) -> str:
    optional_tail = pattern.endswith(" *")
    body = pattern[:-2] if optional_tail else pattern
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in body)
    return regex + "(?: .*)?" if optional_tail else regex


def match_pattern(pattern: str, subject: str) -> bool:
    return compile_pattern(pattern).fullmatch(subject) is not None


# A subject approved with "allow always" is kept verbatim (an approved `ls *.py` must
# not approve `ls anything.py`); the type tells the matchers below not to expand it.
class _Literal(str):
    """A subject approved verbatim: its `*` and `?` are plain characters."""

    __slots__ = ()


def _pattern_regex(pattern: str) -> str:
    """The regex source of one rule, for joining all of a permission's rules into one."""
    if isinstance(pattern, _Literal):
        return re.escape(pattern)
    return _regex_source(pattern)  # not compiled: only the joined regex is


# --- matching in bounded time ---------------------------------------------------------
# The rules' one regex backtracks: `git *clean* -*f*` against a long command that does
# not match costs about n**3 steps, under the interpreter lock (7 KB froze the process
# for 5 s). Short subjects with few-star rules keep the C-speed regex; anything else is
# matched rule by rule in O(len(rule) * len(subject)).
_REGEX_MAX_SUBJECT = 256
_REGEX_MAX_STARS = 4


@dataclass(frozen=True, slots=True)
class _Hit:
    lastindex: int  # as re.Match has it: the group (rule) that matched


def _bounded(
    regex: Callable[[str], re.Match[str] | None], patterns: Sequence[str]
) -> Callable[[str], re.Match[str] | _Hit | None]:
    """`regex` (the rules joined as groups, in order) where it is fast, else the same
    answer rule by rule; either result's `lastindex` is the rule that matched."""
    few_stars = all(isinstance(p, _Literal) or p.count("*") <= _REGEX_MAX_STARS for p in patterns)

    def fullmatch(subject: str) -> re.Match[str] | _Hit | None:
        if few_stars and len(subject) <= _REGEX_MAX_SUBJECT:
            return regex(subject)
        for group, pattern in enumerate(patterns, 1):
            if isinstance(pattern, _Literal):
                if subject == pattern:
                    return _Hit(group)
            elif _wildcard_match(pattern, subject):
                return _Hit(group)
        return None

    return fullmatch


def _wildcard_match(pattern: str, subject: str) -> bool:
    """The pattern language (`*` any text, `?` one character, a trailing ` *` optional)
    without backtracking past the last `*`: O(len(pattern) * len(subject))."""
    # Only one trailing " *" is optional, as compile_pattern has it (`- * *` needs "- ").
    if pattern.endswith(" *") and _wildcards_match(pattern[:-2], subject):
        return True
    return _wildcards_match(pattern, subject)


def _wildcards_match(pattern: str, subject: str) -> bool:
    p = t = 0
    star, mark = -1, 0
    while t < len(subject):
        if p < len(pattern) and pattern[p] == "*":
            star, mark = p, t
            p += 1
        elif p < len(pattern) and (pattern[p] == "?" or pattern[p] == subject[t]):
            p += 1
            t += 1
        elif star >= 0:
            mark += 1
            p, t = star + 1, mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


# Commands whose first N words name what they do (`git push`, `npm run build`).
_COMMAND_ARITY = {
    "git": 2, "npm": 2, "pnpm": 2, "yarn": 2, "bun": 2, "cargo": 2, "go": 2, "uv": 2,
    "pip": 2, "pip3": 2, "poetry": 2, "docker": 2, "kubectl": 2, "gh": 2, "brew": 2,
    "dotnet": 2, "terraform": 2, "helm": 2, "systemctl": 2, "conda": 2, "deno": 2,
    "npm run": 3, "pnpm run": 3, "yarn run": 3, "bun run": 3, "uv run": 3,
    "poetry run": 3, "python -m": 3, "python3 -m": 3, "docker compose": 3,
}  # fmt: skip
# Never suggest a wildcard for these: "rm *" = "allow" is not advice to give.
_EXACT_ONLY = frozenset(
    "rm rmdir dd shred mkfs sudo su doas chmod chown chgrp kill pkill killall "
    "reboot shutdown halt poweroff truncate del rd format "
    # their arguments are assignments (`export PATH=./bin`), not what they act on
    "export declare typeset local readonly".split()
)
# A leading `NAME=value` (kept in the subject when it changes what runs, e.g.
# `HOME=/tmp`): part of the environment, not the program.
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")


def exact_only(subject: str) -> bool:
    """A subject in parentheses describes what is asked rather than naming it: a command
    not understood (`(not understood) eval "touch x"`), a path only known at run time.
    Its words are not what runs, so no pattern of them may be approved or suggested:
    `(not *` would allow every command not understood, `eval "rm -rf ~"` included."""
    return subject.startswith("(")


def suggest_pattern(permission: str, subject: str | None) -> str | None:
    """A pattern to allow `subject` and its close relatives; None means the whole permission."""
    if subject is None:
        return None
    if exact_only(subject):
        return subject
    if permission == "execute:command":
        return _suggest_command(subject)
    if permission.endswith(":file") and permission != "read:file":
        # Reads ask only for secrets, so allow that one file; otherwise its folder.
        parent = subject.replace("\\", "/").rstrip("/").rpartition("/")[0]
        if parent and "*" not in parent and "?" not in parent:
            return f"{parent}/*"
    return subject


def _suggest_command(command: str) -> str:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    # `HOME=/tmp rm -rf b` must not become `HOME=/tmp *`: the assignments and the
    # program both stay fixed (`HOME=/tmp git status *`), or nothing is suggested.
    env = 0
    while env < len(words) and _ASSIGNMENT.match(words[env]):
        env += 1
    program = words[env:]
    if not program or program[0] in _EXACT_ONLY or os.path.basename(program[0]) in _EXACT_ONLY:
        return command
    n = _COMMAND_ARITY.get(" ".join(program[:2]), _COMMAND_ARITY.get(program[0], 1))
    prefix = words[: env + n]
    if len(program) <= n or any(c in w for w in prefix for c in "*?[ '\"\\$`"):
        return command
    return " ".join(prefix) + " *"
