"""Copies and moves under concurrent tampering: a source directory swapped for a
symlink to the outside while they run. Real threads, real files; nothing outside may
ever be read into the workspace, and nothing outside may change."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from local_tools.core.errors import ToolError
from local_tools.security.jail import Jail
from security.race import INSIDE, OUTSIDE, RACE_ENGINES, race


def _leaks(path: Path) -> int:
    """Regular files under `path` (symlinks not followed) holding the outside content."""
    if path.is_symlink() or not path.exists():
        return 0
    if path.is_file():
        return int(path.read_bytes() == OUTSIDE)
    found = 0
    for dirpath, _, filenames in os.walk(path):  # os.walk never follows links by default
        for name in filenames:
            p = Path(dirpath) / name
            if not p.is_symlink() and p.read_bytes() == OUTSIDE:
                found += 1
    return found


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


@pytest.mark.skipif(os.name != "posix", reason="POSIX symlinks")
@pytest.mark.timeout(90)
@pytest.mark.parametrize("engine", RACE_ENGINES)
def test_swapped_source_never_copies_the_outside(tmp_path: Path, engine: str) -> None:
    base = Path(os.path.realpath(tmp_path))
    ws, outside = base / "ws", base / "outside"
    top = ws / "top"
    (top / "dir" / "deeper").mkdir(parents=True)
    (top / "dir" / "secret").write_bytes(INSIDE)
    (top / "dir" / "deeper" / "secret").write_bytes(INSIDE)
    (outside / "deeper").mkdir(parents=True)
    (outside / "secret").write_bytes(OUTSIDE)
    (outside / "deeper" / "secret").write_bytes(OUTSIDE)
    os.symlink(outside, top / "swap")
    (top / "file").write_bytes(INSIDE)
    os.symlink(outside / "secret", top / "file_swap")
    outside_before = sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))
    jail = Jail(ws, engine=engine)  # type: ignore[arg-type]

    counts = dict.fromkeys(("copies", "copied", "refused", "leaks", "moves", "naive_leak"), 0)

    def step(i: int) -> None:
        # The swapping directory itself, a file below it, the swapping file,
        # and the tree holding both.
        for src in ("top/dir", "top/dir/deeper/secret", "top/file", "top"):
            dst = ws / f"copy-{i}"
            counts["copies"] += 1
            try:
                jail.copy(src, dst.name)
                counts["copied"] += 1
            except ToolError:
                counts["refused"] += 1
            counts["leaks"] += _leaks(dst)
            _remove(dst)
        # A file moved out from below the swapping directory and back in: a
        # redirected move would change the outside, checked at the end.
        try:
            if not (ws / "moved").exists():
                jail.rename("top/dir/secret", "moved")
                counts["leaks"] += _leaks(ws / "moved")
            jail.rename("moved", "top/dir/secret")
            counts["moves"] += 1
        except ToolError:
            pass
        # Control: a plain path-based copy does get redirected, which shows the
        # race is real and the jail is what stops it.
        for naive in (top / "dir" / "deeper" / "secret", top / "file"):
            try:
                shutil.copyfile(naive, ws / "naive")
                counts["naive_leak"] += (ws / "naive").read_bytes() == OUTSIDE
            except OSError:
                pass

    swaps = race([(top / "dir", top / "swap"), (top / "file", top / "file_swap")], step)
    print(f"\nengine={engine} swaps={swaps} {counts}")

    assert swaps > 100
    assert counts["copied"] > 0 and counts["moves"] > 0
    assert counts["naive_leak"] > 0, "the swap never redirected a plain copy; no race"
    assert counts["leaks"] == 0
    # Nothing outside changed: no file moved there, none removed, no temp left.
    assert sorted(str(p.relative_to(outside)) for p in outside.rglob("*")) == outside_before
    assert (outside / "secret").read_bytes() == OUTSIDE
    assert (outside / "deeper" / "secret").read_bytes() == OUTSIDE
