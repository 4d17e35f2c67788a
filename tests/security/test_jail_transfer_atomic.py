"""Jail.rename and Jail.copy, all or nothing, against every resolution engine: limits
checked before writing, failed and cancelled copies leaving nothing, one winner among
concurrent transfers to one name, and moves across file systems (simulated and real)."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_tools.core.errors import (
    AlreadyExists,
    Cancelled,
    InvalidInput,
    StorageError,
)
from local_tools.security import copytree, transfer
from local_tools.security.jail import TEMP_PREFIX, Jail
from security.transfer_fixtures import posix, temps, tree

# --------------------------------------------------------------------------- all or nothing


def test_copy_limits_checked_before_writing(
    jail: Jail, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = base / "ws"
    copied: list[str] = []
    real_copy = copytree._copy_file

    def spy(*args: object, **kw: object) -> None:
        copied.append(str(args[1]))
        real_copy(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(copytree, "_copy_file", spy)
    monkeypatch.setattr(copytree, "MAX_COPY_ENTRIES", 4)
    with pytest.raises(InvalidInput, match="more than 4 entries"):
        jail.copy("src", "copy")
    monkeypatch.setattr(copytree, "MAX_COPY_ENTRIES", 10_000)
    monkeypatch.setattr(copytree, "MAX_COPY_BYTES", 5)
    with pytest.raises(InvalidInput, match="of data"):
        jail.copy("src", "copy")
    (ws / "six.txt").write_bytes(b"123456")
    with pytest.raises(InvalidInput, match="of data"):
        jail.copy("six.txt", "six2.txt")
    assert not (ws / "copy").exists() and not (ws / "six2.txt").exists() and temps(ws) == []
    assert copied == []  # refused on the first pass, before a single file was written


def test_refusals_come_before_copying(
    jail: Jail, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = base / "ws"
    copied: list[str] = []
    monkeypatch.setattr(copytree, "_copy_file", lambda *a, **k: copied.append(str(a[1])))
    (ws / "full").mkdir()
    (ws / "full" / "x").write_bytes(b"x")
    with pytest.raises(InvalidInput, match="not empty"):
        jail.copy("src", "full", overwrite=True)
    with pytest.raises(AlreadyExists):
        jail.copy("src", "full")
    with pytest.raises(InvalidInput, match="into itself"):
        jail.copy("src", "src/sub/again")
    assert copied == [] and temps(ws) == []


@pytest.mark.parametrize("op", ["rename", "copy"])
def test_concurrent_transfers_to_one_name_have_one_winner(jail: Jail, base: Path, op: str) -> None:
    """Without overwrite, a destination that appears meanwhile is never replaced."""
    ws = base / "ws"
    start = threading.Barrier(8)
    results: dict[int, str] = {}
    for _round in range(8):
        (ws / "target").unlink(missing_ok=True)
        for i in range(8):
            (ws / f"s{i}").write_bytes(f"source-{i}".encode())
        results.clear()

        def mover(i: int) -> None:
            start.wait()
            try:
                getattr(jail, op)(f"s{i}", "target")
                results[i] = "won"
            except AlreadyExists:
                results[i] = "lost"

        threads = [threading.Thread(target=mover, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [i for i, r in results.items() if r == "won"]
        assert len(results) == 8 and len(winners) == 1, results
        assert (ws / "target").read_bytes() == f"source-{winners[0]}".encode()
        for i in range(8):  # every source that lost is still there
            assert (ws / f"s{i}").exists() == (op == "copy" or i != winners[0])
    assert temps(ws) == []


def test_failed_copy_leaves_nothing(
    jail: Jail, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = base / "ws"
    real_copy = copytree._copy_file
    calls = [0]

    def failing(*args: object, **kw: object) -> None:
        calls[0] += 1
        if calls[0] == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_copy(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(copytree, "_copy_file", failing)
    before = tree(ws)
    with pytest.raises(StorageError, match="disk is full"):
        jail.copy("src", "copy")
    assert calls[0] == 2 and tree(ws) == before


def test_cancelled_copy_leaves_nothing(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    steps = [0]

    def check() -> None:
        steps[0] += 1
        if steps[0] > 6:
            raise Cancelled("stop")

    before = tree(ws)
    with pytest.raises(Cancelled):
        jail.copy("src", "copy", check=check)
    assert steps[0] == 7 and tree(ws) == before


@pytest.fixture
def exdev(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rename between two directories fails as if they were on two disks."""

    def cross(*args: object, **kw: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(transfer.Dir, "replace_into", cross)
    monkeypatch.setattr(transfer, "rename_noreplace", _first_call_exdev(transfer.rename_noreplace))


def _first_call_exdev(real: object) -> object:
    """The move's own rename fails with EXDEV; the temp copy's rename (same dir) works."""

    def wrapped(src_dir: object, src: str, dst_dir: object, dst: str, path: str) -> None:
        if not src.startswith(TEMP_PREFIX):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real(src_dir, src, dst_dir, dst, path)  # type: ignore[operator]

    return wrapped


@pytest.mark.usefixtures("exdev")
def test_move_across_devices_copies_then_removes(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    before = tree(ws / "src")
    mtime = (ws / "src" / "one.txt").stat().st_mtime_ns
    assert jail.rename("src", "elsewhere/moved") == "directory"
    assert not (ws / "src").exists()
    assert tree(ws / "elsewhere" / "moved") == before
    assert (ws / "elsewhere" / "moved" / "one.txt").stat().st_mtime_ns == mtime  # like mv
    assert jail.rename("a.txt", "a2.txt") == "file" and not (ws / "a.txt").exists()
    assert temps(ws) == []


@pytest.mark.usefixtures("exdev")
def test_move_across_devices_failing_copy_keeps_source(
    jail: Jail, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = base / "ws"
    monkeypatch.setattr(copytree, "MAX_COPY_ENTRIES", 3)
    before = tree(ws)
    with pytest.raises(InvalidInput, match="more than 3 entries"):
        jail.rename("src", "moved")
    assert tree(ws) == before


def _other_device_dir() -> Iterator[Path]:
    for candidate in ("/dev/shm", tempfile.gettempdir()):
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK):
            yield Path(candidate)


@pytest.fixture
def other_fs(base: Path) -> Iterator[Path]:
    """A writable directory on another file system than the workspace, if there is one."""
    dev = (base / "ws").stat().st_dev
    for parent in _other_device_dir():
        if parent.stat().st_dev != dev:
            d = Path(tempfile.mkdtemp(prefix="lt-xdev-", dir=parent))
            try:
                yield Path(os.path.realpath(d))
            finally:
                shutil.rmtree(d, ignore_errors=True)
            return
    pytest.skip("no second file system to move across")


@posix
def test_move_across_real_file_systems(base: Path, engine: str, other_fs: Path) -> None:
    ws = base / "ws"
    j = Jail(ws, writable_roots=[other_fs], engine=engine)  # type: ignore[arg-type]
    before = tree(ws / "src")
    assert j.rename("src", str(other_fs / "moved")) == "directory"
    assert tree(other_fs / "moved") == before and not (ws / "src").exists()
    assert j.rename(str(other_fs / "moved"), "back") == "directory"
    assert tree(ws / "back") == before and not (other_fs / "moved").exists()
    (other_fs / "x.txt").write_bytes(b"x")
    with pytest.raises(AlreadyExists):
        j.rename("a.txt", str(other_fs / "x.txt"))
    assert (ws / "a.txt").exists() and (other_fs / "x.txt").read_bytes() == b"x"
