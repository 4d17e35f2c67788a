"""The linear-time glob automaton accepts exactly what the glob's regex accepts."""

from __future__ import annotations

import random
import re

import pytest

from local_tools.search.glob_match import REGEX_MAX_PATH, GlobError, compile_glob, glob_automaton
from local_tools.search.ignore import IgnoreMatcher

# Pieces that exercise every token: literals (one multi-byte), ?, *, **, classes
# (negated, ranges, a non-ASCII member), alternations (an empty branch included), escapes.
_PIECES = ["a", "b", "/", "é", ".", "?", "*", "**", "**/", "/**", "[ab]", "[!a]", "[a-c]",
           "[é]", "{a,b}", "{a/b,c}", "{,a}", "\\*", "-"]  # fmt: skip
_PATH_PIECES = ["a", "b", "c", "/", "é", ".", "*", "-", "\n", "aa", "ab/"]


def _random_glob(rng: random.Random) -> str:
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 7)))


def _random_path(rng: random.Random) -> bytes:
    text = "".join(rng.choice(_PATH_PIECES) for _ in range(rng.randint(0, 9)))
    return text.encode("utf-8")


def test_automaton_agrees_with_the_regex_on_random_globs_and_paths() -> None:
    rng = random.Random(20261127)
    checked = 0
    for _ in range(600):
        glob = _random_glob(rng)
        try:
            compiled = compile_glob(glob)
        except GlobError:
            continue
        regex = re.compile(compiled.regex.encode("ascii"))
        automaton = glob_automaton([(compiled.tokens, 0)])
        for _ in range(30):
            path = _random_path(rng)
            expected = regex.fullmatch(path) is not None
            assert (automaton.match(path) is not None) == expected, (glob, path)
            checked += 1
    assert checked > 10_000


@pytest.mark.parametrize(
    ("glob", "safe"),
    [("**/*.py", True), ("src/**/test_*.py", True), ("*test*", True), ("**/*test*", True),
     ("a/**/b/**", True), ("*a*a*a", False), ("{*a,*b}*", False), ("**/*a*/**/*b", False),
     ("*a*b/*c*d", True), ("**/*a*/*a*a", False),
     ("*.{ts,tsx}", True), ("**/*.{ts,tsx}", True), ("{a,aa}" * 5 + "b", False),
     ("**/" + "*a" * 14 + "*b/x", False)],
)  # fmt: skip
def test_only_globs_with_few_wildcards_use_the_regex(glob: str, safe: bool) -> None:
    assert compile_glob(glob).regex_safe is safe


def test_ignore_rules_with_an_unsafe_line_keep_last_match_wins() -> None:
    lines = ["*.log", "!keep.log", "*a" * 10 + "*b", "build/"]
    matcher = IgnoreMatcher(lines)
    assert matcher.match(b"x.log", is_dir=False) == 1
    assert matcher.match(b"keep.log", is_dir=False) == -1
    assert matcher.match(b"d/" + b"a" * 12 + b"b", is_dir=False) == 1
    assert matcher.match(b"a" * 40, is_dir=False) == 0
    assert matcher.match(b"build", is_dir=True) == 1
    assert matcher.match(b"build", is_dir=False) == 0


def test_a_path_longer_than_the_regex_limit_is_matched_by_the_automaton() -> None:
    matcher = IgnoreMatcher(["*.log", "!keep.log"])
    deep = b"d/" * (REGEX_MAX_PATH // 2) + b"keep.log"
    assert len(deep) > REGEX_MAX_PATH
    assert matcher.match(deep, is_dir=False) == -1
    assert matcher.match(deep[:-8] + b"x.log", is_dir=False) == 1
