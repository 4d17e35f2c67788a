"""Finding and running rg: where it comes from, bounded reading, killed on cancel."""

from __future__ import annotations

import os
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from local_tools.core.errors import Cancelled, InvalidInput
from local_tools.search.ripgrep import RG_ENV, RgEngine, Ripgrep, _probe, find_rg
from local_tools.search.scope import Query, scope_in
from search.helpers import SLOW_PATTERN, make_slow_tree, wait_no_rg

linux_only = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")


@pytest.fixture(scope="module")
def slow_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_slow_tree(tmp_path_factory.mktemp("slow"))


def cancel_after(seconds: float) -> Callable[[], None]:
    deadline = time.monotonic() + seconds

    def check() -> None:
        if time.monotonic() > deadline:
            raise Cancelled("cancelled by the test")

    return check


# -- finding rg ---------------------------------------------------------------------


def test_probe_reads_the_version(rg: Ripgrep) -> None:
    assert rg.version >= (13, 0, 0)
    assert os.path.isabs(rg.path)


def test_probe_refuses_what_is_not_rg(tmp_path: Path) -> None:
    assert _probe(sys.executable) is None  # prints "Python 3.x"
    assert _probe(str(tmp_path / "missing")) is None
    (tmp_path / "plain").write_text("not executable")
    assert _probe(str(tmp_path / "plain")) is None


def test_explicit_rg_wins(monkeypatch: pytest.MonkeyPatch, rg: Ripgrep) -> None:
    monkeypatch.setenv(RG_ENV, rg.path)
    found = find_rg()
    assert found is not None and found.path == rg.path
    monkeypatch.setenv(RG_ENV, "/nonexistent/rg")
    assert find_rg() is None


def test_found_beside_python_when_not_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ripgrep wheel's rg is used from the venv's scripts folder, unactivated."""
    names = ["rg.exe" if os.name == "nt" else "rg"]
    folders = {sysconfig.get_path("scripts"), os.path.dirname(sys.executable)}
    beside = [os.path.join(f, n) for f in folders for n in names if _probe(os.path.join(f, n))]
    if not beside:
        pytest.skip("no rg installed beside this Python (pip install ripgrep)")
    monkeypatch.delenv(RG_ENV, raising=False)
    monkeypatch.setenv("PATH", "")
    found = find_rg()
    assert found is not None and found.path in {os.path.abspath(p) for p in beside}


def test_user_config_is_ignored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rg: Ripgrep
) -> None:
    (tmp_path / "a.txt").write_text("Foo\nfoo\nfoo foo\n")
    config = tmp_path / "rgrc"
    config.write_text("--ignore-case\n--max-count=1\n--no-hidden\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    events = list(RgEngine(rg).lines(scope_in(tmp_path), Query("foo")))
    assert [e.line for e in events] == [2, 3]


# -- running it ---------------------------------------------------------------------


def test_bad_pattern_is_invalid_input(tmp_path: Path, rg: Ripgrep) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    with pytest.raises(InvalidInput, match="unclosed group"):
        list(RgEngine(rg).lines(scope_in(tmp_path), Query("(")))
    with pytest.raises(InvalidInput, match="regex"):
        list(RgEngine(rg).counts(scope_in(tmp_path), Query("a{,3}")))


def test_parent_ignore_file_is_removed(tmp_path: Path, rg: Ripgrep) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "sub" / "a.log").write_text("x\n")
    (tmp_path / "sub" / "b.txt").write_text("x\n")
    scope = scope_in(tmp_path, "sub")
    assert scope.parent_lines == ("*.log",)
    before = set(os.listdir(os.environ.get("TMPDIR", "/tmp")))
    assert list(RgEngine(rg).files(scope)) == ["sub/b.txt"]
    after = set(os.listdir(os.environ.get("TMPDIR", "/tmp")))
    assert not [n for n in after - before if n.startswith("lt-rg-")]


@linux_only
def test_cancel_kills_rg(slow_tree: Path, rg: Ripgrep) -> None:
    started = time.monotonic()
    with pytest.raises(Cancelled):
        list(RgEngine(rg).counts(scope_in(slow_tree), Query(SLOW_PATTERN), check=cancel_after(0.2)))
    assert time.monotonic() - started < 1.5  # rg alone needs seconds here
    assert wait_no_rg() == []


@linux_only
def test_stopping_early_kills_rg(slow_tree: Path, rg: Ripgrep) -> None:
    """Reading stops when the caller has enough: the process does not run on."""
    stream = RgEngine(rg).files(scope_in(slow_tree.parent))
    next(stream)
    stream.close()
    assert wait_no_rg() == []
    lines = RgEngine(rg).lines(scope_in(slow_tree), Query(r"\w"))
    first = next(lines)
    assert first.is_match
    started = time.monotonic()
    lines.close()
    assert wait_no_rg(1.0) == []
    assert time.monotonic() - started < 1.0
