"""Globs as ripgrep's globset reads them, and user patterns as `rg --glob` applies them."""

from __future__ import annotations

import re

import pytest

from local_tools.search.glob_match import GlobError, PathGlob, glob_regex, split_top_level


def full(glob: str, path: str) -> bool:
    return re.fullmatch(glob_regex(glob).encode("ascii"), path.encode("utf-8")) is not None


@pytest.mark.parametrize(
    ("glob", "path", "expected"),
    [
        ("*.rs", "foo.rs", True),
        ("*.rs", "a/foo.rs", False),  # `*` stops at '/'
        ("?", "a", True),
        ("?", "é", False),  # one byte, as in globset
        ("**", "a/b/c", True),
        ("**/b", "b", True),
        ("**/b", "a/x/b", True),
        ("a/**", "a/x/y", True),
        ("a/**", "a", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a**b", "axxb", True),  # not a component: like `*`
        ("a**b", "ax/xb", False),
        ("[ab]c", "bc", True),
        ("[!ab]c", "cc", True),
        ("[^ab]c", "ac", False),
        ("[]]", "]", True),
        ("[a-]", "-", True),
        ("{a,b}.py", "b.py", True),
        ("*.{ts,tsx}", "x.tsx", True),
        ("*.{ts,tsx}", "x.js", False),
        (r"\*", "*", True),
        (r"\*", "a", False),
        ("a,b", "a,b", True),  # a comma outside braces is literal
        ("café", "café", True),
    ],
)
def test_glob_regex(glob: str, path: str, expected: bool) -> None:
    assert full(glob, path) is expected


@pytest.mark.parametrize("bad", ["[", "[]", "[z-a]", "{a,b", "a}", "{a,{b}}", "x\\"])
def test_glob_errors(bad: str) -> None:
    with pytest.raises(GlobError):
        glob_regex(bad)


def test_unclosed_class_is_literal_when_allowed() -> None:
    assert re.fullmatch(glob_regex("[abc", allow_unclosed_class=True).encode(), b"[abc")


def test_split_top_level() -> None:
    assert split_top_level("*.py,*.{ts,tsx},[,]x") == ["*.py", "*.{ts,tsx}", "[,]x"]
    assert split_top_level(r"a\,b,c") == [r"a\,b", "c"]


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("**/*.py", ["a.py", "x/y/a.py"], ["a.pyc", "a.py/x"]),
        ("*.py", ["a.py", "deep/er/a.py"], ["a.md"]),  # no '/': any depth
        (
            "src/**/test_*.py",
            ["src/test_a.py", "src/x/y/test_b.py"],
            ["test_a.py", "lib/src/test_a.py"],
        ),
        ("src/*.py", ["src/a.py"], ["src/x/a.py", "a.py"]),
        ("/*.toml", ["a.toml"], ["x/a.toml"]),
        ("./docs/*.md", ["docs/a.md"], ["x/docs/a.md"]),
        ("tests/", ["tests/a.py", "x/tests/b/c.txt"], ["tests", "atests/a.py"]),
        ("*.{ts,tsx}", ["a.ts", "b/c.tsx"], ["a.js"]),
        ("*.py,!test_*", ["a.py"], ["test_a.py", "a.md"]),
        ("!*.min.js", ["a.js", "README"], ["a.min.js", "x/b.min.js"]),
        ("**", ["a", "a/b/c"], []),
    ],
)
def test_path_glob(pattern: str, yes: list[str], no: list[str]) -> None:
    glob = PathGlob(pattern)
    for path in yes:
        assert glob.matches(path), (pattern, path)
    for path in no:
        assert not glob.matches(path), (pattern, path)


@pytest.mark.parametrize("bad", ["", " , ", "../x/*.py", "a/../b", "[", "{a"])
def test_path_glob_errors(bad: str) -> None:
    with pytest.raises(GlobError):
        PathGlob(bad)


def test_name_prefilter() -> None:
    assert PathGlob("**/*.py").name_globs == ["*.py"]
    assert PathGlob("**/*.py").names_exact
    assert PathGlob("*.{ts,tsx}").names_exact
    assert PathGlob("src/**/test_*.py").name_globs == ["test_*.py"]
    assert not PathGlob("src/**/test_*.py").names_exact
    assert PathGlob("a.py,b.md").name_globs == ["a.py", "b.md"]
    for none in ["src/**", "*.py,!x", "{a/b,c}/d.py", "**/*", "x:y"]:
        assert PathGlob(none).name_globs is None, none


# --- many paths at once --------------------------------------------------------------

SELECT_PATHS = [
    "a.py",
    "src/tests/test_a.py",
    "src/tests/data/b.py",
    "src/main.py",
    "docs/x.md",
    "types/a.d.ts",
    "types/a.ts",
    "é/tests/ü.py",  # non-ASCII: the bytes path
    "tests/.hidden.py",
    "tests/a.pyc",
]


@pytest.mark.parametrize(
    "pattern",
    ["**/*.py", "*.py", "**/tests/**/*.py", "src/*.py", "!**/*.py", "**/*.ts,!**/*.d.ts", "?.py"],
)
@pytest.mark.parametrize("ascii_only", [True, False])
def test_select_agrees_with_matches(pattern: str, ascii_only: bool) -> None:
    glob = PathGlob(pattern)
    paths = [p for p in SELECT_PATHS if p.isascii() or not ascii_only]
    assert glob.select(paths) == [p for p in paths if glob.matches(p)]


def test_select_skips_the_searched_folder() -> None:
    glob = PathGlob("tests/*.py")  # anchored to the folder searched: "src" here
    paths = ["src/tests/test_a.py", "src/tests/data/b.py", "src/main.py"]
    assert glob.select(paths, skip=len("src/")) == ["src/tests/test_a.py"]
    assert glob.select([*paths, "src/é.py"], skip=len("src/")) == ["src/tests/test_a.py"]
