"""The rule pattern language and the patterns suggested for allowing a subject."""

from __future__ import annotations

import pytest

from local_tools.security.patterns import compile_pattern, match_pattern, suggest_pattern


@pytest.mark.parametrize(
    ("pattern", "subject", "matches"),
    [
        ("*", "", True),
        ("*", "anything at all", True),
        ("a?c", "abc", True),
        ("a?c", "ac", False),
        ("a?c", "abbc", False),
        ("ls *", "ls", True),  # the trailing " *" is optional
        ("ls *", "ls -la", True),
        ("ls *", "lsblk", False),
        ("ls", "ls -la", False),  # anchored at the end
        ("src/*", "src/a/b.py", True),
        ("src/*", "other/src/a.py", False),  # anchored at the start
        ("*.py", "a.pyc", False),
        ("git status*", "git statusx", True),
        ("a.b", "axb", False),  # regex characters are literal
        ("[ab]", "a", False),
        ("[ab]", "[ab]", True),
        ("a+b", "aab", False),
        ("(x)|y", "y", False),
        ("echo *", "echo a\nb", True),  # `*` is any text, newlines included
    ],
)
def test_pattern_matching(pattern: str, subject: str, matches: bool) -> None:
    assert match_pattern(pattern, subject) is matches


def test_patterns_compile_once() -> None:
    assert compile_pattern("cache me *") is compile_pattern("cache me *")


@pytest.mark.parametrize(
    ("permission", "subject", "expected"),
    [
        ("execute:command", "git push origin main", "git push *"),
        ("execute:command", "npm run build --prod", "npm run build *"),
        ("execute:command", "python -m pytest -x tests", "python -m pytest *"),
        ("execute:command", "pytest -x", "pytest *"),
        ("execute:command", "make", "make"),
        ("execute:command", "rm -rf build", "rm -rf build"),  # never "rm *"
        ("execute:command", "sudo apt install x", "sudo apt install x"),
        # leading assignments are not the program: kept, with the program, or exact
        ("execute:command", "HOME=/tmp rm -rf build", "HOME=/tmp rm -rf build"),
        ("execute:command", "HOME=/tmp git status -s", "HOME=/tmp git status *"),
        ("execute:command", "HOME=/tmp PATH=/x ls -la", "HOME=/tmp PATH=/x ls *"),
        ("execute:command", "PATH=./bin", "PATH=./bin"),
        ("execute:command", "export PATH=./bin", "export PATH=./bin"),
        ("execute:command", "HOME='/a b' ls x", "HOME='/a b' ls x"),
        ("execute:command", "'./run tests' x", "'./run tests' x"),
        ("delete:file", "notes/a.txt", "notes/*"),
        ("delete:file", "a.txt", "a.txt"),
        ("read:file", "config/.env", "config/.env"),  # only the one secret
        ("network:outbound", "pypi.org", "pypi.org"),
        ("delete:file", None, None),
    ],
)
def test_suggest_pattern(permission: str, subject: str | None, expected: str | None) -> None:
    assert suggest_pattern(permission, subject) == expected
