"""real_path answers what os.path.realpath answers, on real trees of links; the guard's
walk names children as scandir does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from local_tools.security.real_path import real_path
from local_tools.security.trusted_paths import _walk


@pytest.fixture
def links(tmp_path: Path) -> Path:
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "f").write_text("x")
    os.symlink("a/b", tmp_path / "lb")
    os.symlink("../..", tmp_path / "a" / "b" / "c" / "up")
    os.symlink("nowhere", tmp_path / "dangling")
    os.symlink("loop", tmp_path / "loop")
    os.symlink(tmp_path / "a" / "f", tmp_path / "lf")
    os.symlink("lb/c/up/f", tmp_path / "chain")
    return tmp_path


@pytest.mark.parametrize(
    "rel",
    [
        "", "lb", "lb/c", "lb/..", "lb/c/up", "lb/c/up/b/../f", "dangling", "dangling/x",
        "loop", "loop/x", "missing/x", "a/f/x", "lf", "chain", "a/./b/", "a//b", "lb/c/up/..",
    ],
)  # fmt: skip
def test_same_answer_as_realpath(links: Path, rel: str) -> None:
    path = str(links / rel) if rel else str(links)
    if rel.endswith("/"):
        path += "/"
    assert real_path(path) == os.path.realpath(path)
    assert real_path(Path(path)) == os.path.realpath(Path(path))


def test_relative_and_special_paths(links: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(links)
    for path in (".", "lb", "lb/c/up", "missing", "/", "//", "/proc/self", "/dev/null"):
        assert real_path(path) == os.path.realpath(path), path


def test_a_path_removed_meanwhile_is_answered_by_realpath(tmp_path: Path) -> None:
    gone = tmp_path / "x (deleted)"
    gone.mkdir()
    assert real_path(gone) == os.path.realpath(gone)
    gone.rmdir()
    assert real_path(gone) == os.path.realpath(gone)


def test_walk_names_children_as_scandir_does(links: Path) -> None:
    found = _walk(links)
    expected = []
    stack = [str(links)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for e in it:
                expected.append(e.path)
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
    assert sorted(map(str, found)) == sorted(expected)
    assert all(p == Path(str(p)) and hash(p) == hash(Path(str(p))) for p in found)
