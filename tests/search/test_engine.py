"""Choosing the engine, `engine_info` for doctor, and the capped, newest-first answers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local_tools.core.errors import ExecutionError
from local_tools.search import engine_info, fallback_glob, fallback_grep, get_engine
from local_tools.search.engine import ENGINE_ENV
from local_tools.search.glob_match import PathGlob
from local_tools.search.grep_fallback import PythonEngine
from local_tools.search.results import cap_events, glob_files, grep_lines
from local_tools.search.ripgrep import RG_ENV, RgEngine, Ripgrep
from local_tools.search.scope import LineEvent, Query, Scope, scope_in


def test_forced_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENGINE_ENV, "python")
    assert isinstance(get_engine(), PythonEngine)
    assert engine_info() == f"pure-Python fallback (forced by {ENGINE_ENV}=python)"


def test_forced_rg(monkeypatch: pytest.MonkeyPatch, rg: Ripgrep) -> None:
    monkeypatch.setenv(ENGINE_ENV, "rg")
    monkeypatch.setenv(RG_ENV, rg.path)
    engine = get_engine()
    assert isinstance(engine, RgEngine) and engine.rg.path == rg.path
    assert engine_info() == f"ripgrep {rg.version_text} ({rg.path})"


def test_auto_without_rg_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RG_ENV, "/nonexistent/rg")
    monkeypatch.delenv(ENGINE_ENV, raising=False)
    assert isinstance(get_engine(), PythonEngine)
    assert engine_info() == "pure-Python fallback (no rg found)"


def test_forced_rg_missing_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RG_ENV, "/nonexistent/rg")
    monkeypatch.setenv(ENGINE_ENV, "rg")
    with pytest.raises(ExecutionError, match="no usable rg"):
        get_engine()
    assert engine_info().startswith("unavailable:")
    monkeypatch.setenv(ENGINE_ENV, "grep")
    with pytest.raises(ExecutionError, match="not an engine"):
        get_engine()


def test_fallback_helpers(tree: Path) -> None:
    hits = set(fallback_grep(tree, "needle", include="many/**"))
    assert len(hits) == 150 * 3 and ("many/f000.py", 1) in hits
    assert set(fallback_grep(tree, "NEEDLE KEPT", ignore_case=True)) == {("x/keep.txt", 1)}
    assert sorted(fallback_glob(tree, "src/**/*.py")) == [
        "src/errors.py",
        "src/main.py",
        "src/sub/deep/code.py",
        "src/util.py",
    ]


ENGINES = ["python", "rg"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, rg: Ripgrep):  # type: ignore[no-untyped-def]
    if request.param == "rg":
        return RgEngine(rg)
    return PythonEngine()


def _mtimes(root: Path, order: list[str]) -> None:
    """Give `order[0]` the newest mtime, and so on."""
    for n, rel in enumerate(reversed(order)):
        os.utime(root / rel, (1_700_000_000 + n, 1_700_000_000 + n))


def test_glob_newest_first_over_all_matches(tmp_path: Path, engine) -> None:  # type: ignore[no-untyped-def]
    names = [f"d{i % 7}/f{i:03}.txt" for i in range(250)]
    for rel in names:
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text("x")
    newest = ["d4/f200.txt", "d0/f007.txt", "d6/f013.txt"]  # not the first ones listed
    _mtimes(tmp_path, newest + [n for n in sorted(names) if n not in newest])
    result = glob_files(engine, scope_in(tmp_path), PathGlob("*.txt"), limit=100)
    assert result.total == 250 and len(result.files) == 100
    assert result.files[:3] == newest


def test_glob_ties_are_ordered_by_path(tmp_path: Path, engine) -> None:  # type: ignore[no-untyped-def]
    for name in ["e.py", "b.py", "d.py", "a.py", "c.py"]:
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, (1_700_000_000, 1_700_000_000))
    result = glob_files(engine, scope_in(tmp_path), PathGlob("*.py"), limit=3)
    assert result.files == ["a.py", "b.py", "c.py"] and result.total == 5


def test_glob_keeps_the_newest_past_the_trimming_bound(tmp_path: Path, engine) -> None:  # type: ignore[no-untyped-def]
    # More matches than glob_files holds before trimming to the newest (8192).
    for d in range(10):
        (tmp_path / f"d{d}").mkdir()
        for i in range(900):
            (tmp_path / f"d{d}" / f"{i}.txt").touch()
    for n, rel in enumerate(["d3/5.txt", "d9/899.txt", "d0/0.txt"]):
        os.utime(tmp_path / rel, (1_800_000_000 - n, 1_800_000_000 - n))
    result = glob_files(engine, scope_in(tmp_path), PathGlob("*.txt"), limit=2)
    assert result.total == 9000
    assert result.files == ["d3/5.txt", "d9/899.txt"]


class _DeletesAfterListing:
    """An engine that lists, then deletes a file before glob_files stats it (a race)."""

    def __init__(self, inner: Any, victim: Path) -> None:
        self.inner, self.victim, self.name = inner, victim, inner.name

    def file_lists(self, scope: Scope, **kwargs: Any) -> Iterator[list[str]]:
        for paths in self.inner.file_lists(scope, **kwargs):
            self.victim.unlink(missing_ok=True)
            yield paths


def test_glob_skips_a_file_deleted_after_listing(tmp_path: Path, engine) -> None:  # type: ignore[no-untyped-def]
    for name in ["a.py", "b.py", "c.py"]:
        (tmp_path / name).write_text("x")
    racing = _DeletesAfterListing(engine, tmp_path / "b.py")
    result = glob_files(racing, scope_in(tmp_path), PathGlob("*.py"))  # type: ignore[arg-type]
    assert sorted(result.files) == ["a.py", "c.py"] and result.total == 2


def test_grep_total_is_exact_and_newest_files_first(tmp_path: Path, engine) -> None:  # type: ignore[no-untyped-def]
    for i in range(30):
        (tmp_path / f"f{i:02}.txt").write_text("".join(f"hit {j}\nmiss\n" for j in range(10)))
    order = [f"f{i:02}.txt" for i in (17, 3, 25)] + [
        f"f{i:02}.txt" for i in range(30) if i not in (17, 3, 25)
    ]
    _mtimes(tmp_path, order)
    result = grep_lines(engine, scope_in(tmp_path), Query("hit", context=1), limit=25)
    matches = [e for e in result.events if e.is_match]
    assert result.total == 300 and result.files == 30
    assert len(matches) == 25
    assert [e.path for e in matches] == ["f17.txt"] * 10 + ["f03.txt"] * 10 + ["f25.txt"] * 5
    assert [e.line for e in matches][:3] == [1, 3, 5]
    last = result.events[-1]  # the 25th match's trailing context, nothing after it
    assert (last.path, last.line, last.is_match) == ("f25.txt", 10, False)


def test_grep_left_out_by_policy(tmp_path: Path, engine) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / ".env").write_text("TOKEN=needle\n")
    (tmp_path / "a.txt").write_text("needle\n")
    result = grep_lines(
        engine, scope_in(tmp_path), Query("needle"), allowed=lambda p: not p.endswith(".env")
    )
    assert [e.path for e in result.events] == ["a.txt"]
    assert result.total == 1 and result.left_out == 1


def test_cap_events() -> None:
    ev = [
        LineEvent("a", 1, "", True),
        LineEvent("a", 2, "", False),
        LineEvent("a", 3, "", True),
        LineEvent("a", 4, "", False),
        LineEvent("a", 5, "", False),
        LineEvent("a", 6, "", False),
        LineEvent("b", 1, "", False),
    ]
    assert [e.line for e in cap_events(ev, 2, 2)] == [1, 2, 3, 4, 5]
    assert [e.line for e in cap_events(ev, 1, 1)] == [1, 2]
    assert [e.line for e in cap_events(ev, 5, 1)] == [1, 2, 3, 4, 5, 6, 1]
