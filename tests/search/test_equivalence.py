"""ripgrep and the pure-Python engine give the same answers on a real tree.

Compared path by path and line by line, with every rg found on this machine: the
files listed (several globs, several folders, so ignore files above the searched
folder count too), per-file match counts, and matching and context lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from local_tools.search.glob_match import PathGlob
from local_tools.search.grep_fallback import PythonEngine
from local_tools.search.ripgrep import RgEngine, Ripgrep
from local_tools.search.scope import LineEvent, Query, scope_in

FOLDERS = ["", "src", "src/sub/deep", "docs", "x", "many"]
GLOBS = [
    None,
    "**/*.py",
    "*.txt",
    "src/**",
    "**/sub/**/*.txt",
    "*.{py,log}",
    "/*.txt",
    "*.py,!f1*",
    "unicode/*",
    "docs/",
]
QUERIES = [
    Query("needle"),  # many hits
    Query(r"def \w+\("),
    Query(r"zzz_nothing_\d+"),  # none
    Query("café|naïve|élan", ignore_case=True),  # unicode, case-insensitive
    Query("NEEDLE", ignore_case=True),
    Query("foo$"),  # CRLF lines end before \r
    Query("^foo"),  # BOM is not part of the first line
    Query("TODO", context=2),
    Query(r"\bneedle\b", context=1),
    Query("y{3,}"),  # the long line
    Query("^$"),  # empty lines: empty matches
    Query(r"\w+_needle"),
    Query(r"line \d+ needle 1\d"),
    Query(r"(?i)class \w+error"),
    Query(r"[^\s]+ bar"),
    Query(r"\d{2}$", context=3),
    Query(r"def test_\w+"),  # literal first: whole-text search, several per line
    Query(r"class \w+error\b", ignore_case=True),  # lowercased regex; ſ and K fold
    Query("kelvin", ignore_case=True),
    Query(r"needle \d+$", context=1),
    Query("foo[?-_]", ignore_case=True),  # a range of punctuation that holds A-Z
    Query("foo[^?-_]", ignore_case=True),
    Query("naïve"),  # a non-ASCII literal, also in a file past the whole-text size
    Query(r"\Dnaïve"),
]
INCLUDES = [None, "*.py", "many/**", "*.{txt,md}", "**/deep/*"]


def _events(events: list[LineEvent]) -> list[tuple[str, int, str, bool]]:
    # Lines are compared as the tools show them: cut to 500 characters.
    return sorted((e.path, e.line, e.text[:500], e.is_match) for e in events)


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("pattern", GLOBS)
def test_same_files(tree: Path, rg: Ripgrep, folder: str, pattern: str | None) -> None:
    scope = scope_in(tree, folder)
    glob = PathGlob(pattern) if pattern else None
    accept = (lambda p: glob.matches(scope.below(p))) if glob else None
    names = glob.name_globs if glob else None
    want = sorted(RgEngine(rg).files(scope, name_globs=names, accept=accept))
    got = sorted(PythonEngine().files(scope, accept=accept))
    assert got == want


def test_tree_covers_the_rules(tree: Path, rg: Ripgrep) -> None:
    """The tree exercises what it should: ignored, re-included, hidden, skipped."""
    files = set(RgEngine(rg).files(scope_in(tree)))
    for kept in [
        "important.log",
        "rg_wins.log",
        "x/keep.txt",
        ".hidden/inner.py",
        ".config.yml",
        "src/keep.pyc",
        "src/sub/deep/wanted.txt",
        "src/sub/top_only.txt",
        "docs/a/c.md",
        "unicode/日本.txt",
    ]:
        assert kept in files, kept
    for dropped in [
        "app.log",
        "x/drop.txt",
        "src/generated/gen.py",
        "src/a.pyc",
        "src/sub/deep/notes.txt",
        "src/sub/deep/x.log",
        "top_only.txt",
        "#hash.txt",
        "trailing.txt",
        "brace.tmpa",
        "docs/a/b.tmp",
        "ignored_by_dot_ignore.txt",
        "build/out.js",
        ".git/config",
        "link_file.py",
        "escape/secret.py",
    ]:
        assert dropped not in files, dropped
    assert not any(f.startswith(("link_dir/", "escape/")) for f in files)


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: f"{q.pattern}-i{int(q.ignore_case)}")
@pytest.mark.parametrize("include", INCLUDES)
def test_same_lines_and_counts(tree: Path, rg: Ripgrep, query: Query, include: str | None) -> None:
    scope = scope_in(tree)
    glob = PathGlob(include) if include else None
    accept = (lambda p: glob.matches(scope.below(p))) if glob else None
    names = glob.name_globs if glob else None
    rg_engine, py = RgEngine(rg), PythonEngine()
    want = _events(list(rg_engine.lines(scope, query, name_globs=names, accept=accept)))
    got = _events(list(py.lines(scope, query, accept=accept)))
    assert got == want
    want_counts = dict(rg_engine.counts(scope, query, name_globs=names, accept=accept))
    got_counts = dict(py.counts(scope, query, accept=accept))
    assert got_counts == want_counts
    assert sum(want_counts.values()) == sum(1 for e in want if e[3])


@pytest.mark.parametrize("folder", ["src", "src/sub/deep", "many"])
def test_same_lines_in_subfolders(tree: Path, rg: Ripgrep, folder: str) -> None:
    scope = scope_in(tree, folder)
    query = Query("needle", context=1)
    want = _events(list(RgEngine(rg).lines(scope, query)))
    assert _events(list(PythonEngine().lines(scope, query))) == want
    assert want  # the folders do hold matches


@pytest.mark.parametrize(
    "path", ["crlf.txt", "bom.txt", "utf16.txt", "long.txt", "no_newline.txt", "src/main.py"]
)
def test_same_lines_in_one_file(tree: Path, rg: Ripgrep, path: str) -> None:
    scope = scope_in(tree, path)
    for query in [Query("foo|needle", context=1), Query("$"), Query(r"\w+$"), Query(r"\A\w")]:
        want = _events(list(RgEngine(rg).lines(scope, query)))
        assert _events(list(PythonEngine().lines(scope, query))) == want, query


def test_selected_files_in_order(tree: Path, rg: Ripgrep) -> None:
    """The second grep pass: given files, in the given order, capped per file."""
    scope = scope_in(tree)
    files = ["many/f010.py", "src/main.py", "many/f002.py"]
    query = Query("needle|line", context=1)
    want = list(RgEngine(rg).lines(scope, query, files=files, max_per_file=3))
    got = list(PythonEngine().lines(scope, query, files=files, max_per_file=3))

    def up_to_third_match(events: list[LineEvent]) -> list[tuple[str, int, bool]]:
        # What follows a file's last counted match is left to the engine (rg prints
        # later matches as trailing context): the caller asks for one more than it keeps.
        third: dict[str, int] = {}
        seen: dict[str, int] = {}
        for e in events:
            if e.is_match:
                seen[e.path] = seen.get(e.path, 0) + 1
                if seen[e.path] <= 3:
                    third[e.path] = e.line
        return [(e.path, e.line, e.is_match) for e in events if e.line <= third[e.path]]

    assert up_to_third_match(got) == up_to_third_match(want)
    matched = [p for p, _, m in up_to_third_match(got) if m]
    assert matched == ["many/f010.py"] * 3 + ["src/main.py"] + ["many/f002.py"] * 3


def test_same_lines_in_a_large_file(tmp_path: Path, rg: Ripgrep) -> None:
    """Texts larger than one search window (see text_search) lose and gain nothing."""
    lines = []
    for i in range(40_000):
        lines.append("" if i % 97 == 0 else f"{i:05d} {'ab' * (i % 13)}{'c' if i % 5 else ''}")
    (tmp_path / "big.txt").write_text("\n".join(lines) + "\n")
    scope = scope_in(tmp_path, "big.txt")
    for query in [
        Query("^$"),
        Query(r"(?:ab){12}$"),
        Query(r"\d{4}7 (?:a|c)"),
        Query("$", context=1),
        Query(r"^(?:39998|49999)\b"),  # no literal, only near the end: windows skipped
    ]:
        want = _events(list(RgEngine(rg).lines(scope, query)))
        assert _events(list(PythonEngine().lines(scope, query))) == want, query
        assert want, query
