"""Ignore files with ripgrep's rules: lines, precedence, re-inclusion, the parent layer."""

from __future__ import annotations

from pathlib import Path

import pytest

from local_tools.search.ignore import (
    IgnoreMatcher,
    parent_ignore_lines,
    read_ignore_lines,
    rebase_line,
)
from local_tools.search.walk import walk_files


def verdict(lines: list[str], path: str, is_dir: bool = False) -> int:
    return IgnoreMatcher(lines).match(path.encode(), is_dir)


@pytest.mark.parametrize(
    ("lines", "path", "is_dir", "expected"),
    [
        (["*.log"], "a.log", False, 1),
        (["*.log"], "x/y/a.log", False, 1),
        (["*.log", "!keep.log"], "keep.log", False, -1),
        (["!keep.log", "*.log"], "keep.log", False, 1),  # the last matching line wins
        (["build/"], "build", True, 1),
        (["build/"], "build", False, 0),  # folders only
        (["/top.txt"], "top.txt", False, 1),
        (["/top.txt"], "x/top.txt", False, 0),
        (["a/b"], "a/b", False, 1),
        (["a/b"], "x/a/b", False, 0),  # a '/' inside anchors
        (["x/**"], "x", True, 0),  # the folder itself is not ignored...
        (["x/**"], "x/f", False, 1),  # ...its contents are
        (["# comment"], "# comment", False, 0),
        (["\\#hash"], "#hash", False, 1),
        (["\\!bang"], "!bang", False, 1),
        (["trailing   "], "trailing", False, 1),
        (["space\\ "], "space ", False, 1),
        (["foo\\/"], "foo", True, 1),
        (["*.{a,b}"], "x.b", False, 1),
        (["**"], "anything/at/all", False, 1),
        (["[abc"], "[abc", False, 1),  # an unclosed class is literal in ignore files
        (["{unclosed"], "{unclosed", False, 0),  # a bad glob line is skipped
    ],
)
def test_lines(lines: list[str], path: str, is_dir: bool, expected: int) -> None:
    assert verdict(lines, path, is_dir) == expected


@pytest.mark.parametrize(
    ("line", "folder", "expected"),
    [
        ("*.log", "", "*.log"),
        ("*.log", "pkg", "/pkg/**/*.log"),
        ("/dist", "pkg", "/pkg/dist"),
        ("a/b/", "pkg", "/pkg/a/b/"),
        ("!keep.txt", "pkg/web", "!/pkg/web/**/keep.txt"),
        ("node_modules/", "p[1]", "/p\\[1\\]/**/node_modules/"),
        ("**/gen", "pkg", "/pkg/**/gen"),
        ("\\!bang", "pkg", "/pkg/**/!bang"),
        ("# comment", "pkg", None),
        ("   ", "pkg", None),
    ],
)
def test_rebase_line(line: str, folder: str, expected: str | None) -> None:
    assert rebase_line(line, folder) == expected


def test_rebased_lines_mean_the_same(tmp_path: Path) -> None:
    """A line of pkg/.gitignore matches the same paths once rebased to the root."""
    lines = ["*.log", "/dist", "a/b", "!keep.log", "gen/", "x/**", "**/deep"]
    paths = [
        ("pkg/a.log", False),
        ("pkg/sub/a.log", False),
        ("pkg/keep.log", False),
        ("pkg/dist", True),
        ("pkg/sub/dist", True),
        ("pkg/a/b", False),
        ("pkg/gen", True),
        ("pkg/x/f", False),
        ("pkg/q/deep", False),
        ("other/a.log", False),
    ]
    local = IgnoreMatcher(lines)
    rebased = IgnoreMatcher([r for r in (rebase_line(x, "pkg") for x in lines) if r])
    for path, is_dir in paths:
        inside = path.removeprefix("pkg/") if path.startswith("pkg/") else None
        want = local.match(inside.encode(), is_dir) if inside is not None else 0
        assert rebased.match(path.encode(), is_dir) == want, path


def test_read_ignore_lines(tmp_path: Path) -> None:
    f = tmp_path / ".gitignore"
    f.write_bytes(b"\xef\xbb\xbf*.log\r\nbuild/\n\xff bad\nafter.txt\n")
    assert read_ignore_lines(str(f)) == ["*.log", "build/"]  # stops at invalid UTF-8
    assert read_ignore_lines(str(tmp_path / "missing")) == []


def test_parent_layer(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "web").mkdir(parents=True)
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "pkg" / ".ignore").write_text("node_modules/\n")
    (tmp_path / "pkg" / "web" / ".gitignore").write_text("own.txt\n")
    assert parent_ignore_lines(str(tmp_path), "pkg/web") == ["*.log", "/pkg/**/node_modules/"]
    assert parent_ignore_lines(str(tmp_path), "") == []


def test_walk_precedence_and_pruning(tmp_path: Path) -> None:
    def w(rel: str, text: str = "x") -> None:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    w(".gitignore", "*.log\nskip/\n")
    w(".rgignore", "!wins.log\n")  # .rgignore outranks .gitignore
    w("sub/.gitignore", "!deep.log\n")  # the deeper file outranks the root's
    w("skip/.gitignore", "!inner.txt\n")  # an ignored folder is never entered
    for rel in ["a.log", "wins.log", "sub/deep.log", "sub/other.log", "skip/inner.txt", "ok.txt"]:
        w(rel)
    w(".git/HEAD")
    w(".hidden")
    got = sorted(walk_files(str(tmp_path), ""))
    assert got == [
        ".gitignore",
        ".hidden",
        ".rgignore",
        "ok.txt",
        "sub/.gitignore",
        "sub/deep.log",
        "wins.log",
    ]
