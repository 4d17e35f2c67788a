"""Snapshots that must not go wrong (the attack review of issue #24): the state folder
inside a root, names that are not UTF-8, a folder replaced by a symlink, `.gitignore`
changing what counts. Real files, real git, real commands, through the Toolbox.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from envelopes import ok
from local_tools import Toolbox
from local_tools.checkpoints.roots import RootTrees
from local_tools.checkpoints.store import Checkpoints, checkpoint_folder

pytestmark = [
    pytest.mark.checkpoints,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX names, symlinks and shell"),
]

WATCH = [pytest.param(False, id="scan"), pytest.param(True, id="watch")]


def listed(tb: Toolbox) -> list[dict[str, Any]]:
    return ok(tb.run("checkpoint_list", {"limit": 200}))["checkpoints"]


def files(cp: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["path"], f["action"]) for f in cp["files"]]


def run(tb: Toolbox, command: str) -> dict[str, Any]:
    return ok(tb.run("exec_cmd", {"command": command}))


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# --------------------------------------------------------------------------- F18


@pytest.mark.parametrize("watch", WATCH)
def test_a_state_folder_inside_the_root_is_never_snapshot(
    make_toolbox: Any, asker: Any, tmp_path: Path, watch: bool
) -> None:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    state = home / ".local/state/local-tools"
    tb = make_toolbox({"checkpoints": {"watch": watch}}, asker=asker, workspace=home,
                      state_dir=state)  # fmt: skip
    sizes = []
    for i in range(4):
        assert "checkpoint_note" not in run(tb, f"echo {i} > proj/x{i}.txt")
        sizes.append(size(state))
    want = [[(f"proj/x{i}.txt", "created")] for i in (3, 2, 1, 0)]
    assert [files(cp) for cp in listed(tb)] == want
    assert sizes[-1] - sizes[1] < 200_000  # it used to double with every call
    # A file tool naming the state folder (or a folder holding it) records none of it.
    store = Checkpoints(checkpoint_folder(state, home), tb.jail, max_bytes=1 << 20, watch=False)
    try:
        assert store.locate(str(state / "audit.sqlite")) == []
        pending = store.begin([str(home / ".local")], call_id="c", tool="t", user_id="u",
                              session=None, owner="o")  # fmt: skip
        assert pending.before_paths[home].entries == {}
    finally:
        store.close()


# --------------------------------------------------------------------------- F13


@pytest.mark.parametrize("watch", WATCH)
def test_a_name_that_is_not_utf8_is_skipped_and_named(
    make_toolbox: Any, asker: Any, workspace: Path, watch: bool
) -> None:
    bad = os.path.join(os.fsencode(workspace), b"caf\xe9.txt")
    with open(bad, "wb") as fh:
        fh.write(b"latin-1 name\n")
    (workspace / "work.txt").write_text("important\n")
    tb = make_toolbox({"checkpoints": {"watch": watch}}, asker=asker)
    out = run(tb, "echo 1 > a.txt")
    assert "caf\\xe9.txt: file name is not UTF-8" in out["checkpoint_note"]
    run(tb, "rm work.txt")
    run(tb, "mkdir d && printf x > d/$(printf 'r\\351sum\\351') && echo 2 > b.txt")
    cps = listed(tb)
    assert [files(cp) for cp in cps] == [
        [("b.txt", "created")],
        [("work.txt", "deleted")],
        [("a.txt", "created")],
    ]
    # (A full scan names caf\xe9.txt again each time: like a file too large, never kept.)
    assert cps[0]["skipped"]["d/r\\xe9sum\\xe9"] == "file name is not UTF-8"
    # A file tool on a folder holding one: the rest of the folder is kept.
    out = ok(tb.run("file_delete", {"path": "d", "recursive": True}))
    assert "file name is not UTF-8" in out["checkpoint_note"]
    ok(tb.run("write_file", {"path": "d/keep.txt", "content": "k\n"}))
    ok(tb.run("file_delete", {"path": "d", "recursive": True}))
    assert files(listed(tb)[0]) == [("d/keep.txt", "deleted")]


def test_a_snapshot_that_fails_drops_the_watcher(tmp_path: Path, make_toolbox: Any) -> None:
    root = tmp_path / "root"
    root.mkdir()
    tb = make_toolbox()
    store = Checkpoints(tmp_path / "cp", tb.jail, max_bytes=1 << 20, watch=True)
    store.repo.ensure()
    trees = RootTrees(store.repo, root, max_bytes=1 << 20, watch=True)
    try:
        first = trees.snapshot().tree
        assert trees._watcher is not None
        (root / "new.txt").write_text("x\n")
        trees.index.unlink(missing_ok=True)
        trees.index.mkdir()  # git cannot write its index: the add fails
        with pytest.raises(Exception, match="git"):
            trees.snapshot()
        assert trees._watcher is None  # what it had seen is gone: the next looks in full
        trees.index.rmdir()
        tree = trees.snapshot().tree
        assert tree != first
        assert store.repo.run(["ls-tree", "--name-only", tree]) == b"new.txt\n"
    finally:
        trees.close()
        store.close()


# --------------------------------------------------------------------------- F3


@pytest.mark.parametrize("watch", WATCH)
def test_a_folder_replaced_by_a_symlink_keeps_checkpoints_working(
    make_toolbox: Any, asker: Any, workspace: Path, watch: bool
) -> None:
    (workspace / "a").mkdir()
    (workspace / "a/f").write_text("user data\n")
    (workspace / "other").mkdir()
    config = {"checkpoints": {"watch": watch}}
    tb = make_toolbox(config, asker=asker)
    run(tb, "echo 1 > one.txt")
    assert "checkpoint_note" not in run(tb, "mv a a.old && ln -s other a")
    assert sorted(files(listed(tb)[0])) == [
        ("a", "created"),
        ("a.old/f", "created"),
        ("a/f", "deleted"),
    ]
    assert "checkpoint_note" not in run(tb, "rm one.txt")
    tb.close()
    again = make_toolbox(config, asker=asker)  # a new process: git looks for itself
    assert "checkpoint_note" not in run(again, "echo 2 > two.txt")
    assert files(listed(again)[0]) == [("two.txt", "created")]
    assert [cp["summary"] for cp in listed(again)] == [
        "echo 2 > two.txt",
        "rm one.txt",
        "mv a a.old && ln -s other a",
        "echo 1 > one.txt",
    ]


# --------------------------------------------------------------------------- F4, F5


@pytest.mark.parametrize("watch", WATCH)
def test_files_a_call_unignores_are_not_made_by_it(
    make_toolbox: Any, asker: Any, workspace: Path, watch: bool
) -> None:
    (workspace / ".gitignore").write_text("data/\n")
    (workspace / "data").mkdir()
    (workspace / "data/thesis.db").write_text("3 years of work\n")
    tb = make_toolbox({"checkpoints": {"watch": watch}}, asker=asker)
    run(tb, "echo y > src.py")
    out = run(tb, "echo '*.log' > .gitignore && echo new > data/new.txt")
    assert "data/thesis.db: was ignored before the call; not kept" in out["checkpoint_note"]
    cp = listed(tb)[0]
    assert sorted(files(cp)) == [(".gitignore", "modified"), ("data/new.txt", "created")]
    ok(tb.run("restore", {"checkpoint": cp["id"]}))
    assert (workspace / "data/thesis.db").read_text() == "3 years of work\n"
    assert not (workspace / "data/new.txt").exists()
    # From then on it is an ordinary file: changes to it are recorded (F5 with the watcher).
    run(tb, "echo '*.log' > .gitignore")
    run(tb, "echo CORRUPTED > data/thesis.db")
    assert files(listed(tb)[0]) == [("data/thesis.db", "modified")]
    ok(tb.run("restore", {"checkpoint": listed(tb)[0]["id"]}))
    assert (workspace / "data/thesis.db").read_text() == "3 years of work\n"


@pytest.mark.parametrize("watch", WATCH)
def test_a_file_too_large_to_keep_that_shrinks_is_not_taken_for_created(
    make_toolbox: Any, asker: Any, workspace: Path, watch: bool
) -> None:
    (workspace / "big.log").write_bytes(b"x" * 4096)
    tb = make_toolbox({"checkpoints": {"watch": watch, "max_file_mb": 0.002}}, asker=asker)
    out = run(tb, "echo y > a.txt")  # the first snapshot meets the big file: left out, named
    assert "big.log: over [checkpoints] max_file_mb" in out["checkpoint_note"]
    out = run(tb, "echo small > big.log && echo z > a.txt")
    assert "big.log: was over max_file_mb before the call" in out["checkpoint_note"]
    cp = listed(tb)[0]
    assert files(cp) == [("a.txt", "modified")]  # not "big.log created"
    ok(tb.run("restore", {"checkpoint": cp["id"]}))
    assert (workspace / "big.log").read_text() == "small\n"  # an undo never deletes it
    assert (workspace / "a.txt").read_text() == "y\n"


def test_ctime_is_stamped_by_the_clock_the_marker_reads(tmp_path: Path) -> None:
    """Why the comparison holds: a file written after the marker has a ctime at least
    the marker's, one unchanged since before has less; a rename keeps the ctime of what
    is below the moved folder (hence the test only when a `.gitignore` changed)."""
    (tmp_path / "d").mkdir()
    old = tmp_path / "d/old"
    old.write_text("x")
    time.sleep(0.05)
    marker = tmp_path / "clock"
    marker.touch()
    os.utime(marker)
    clock = os.stat(marker).st_ctime_ns
    new = tmp_path / "new"
    new.write_text("y")
    assert os.lstat(new).st_ctime_ns >= clock > os.lstat(old).st_ctime_ns
    shutil.move(tmp_path / "d", tmp_path / "e")
    assert os.lstat(tmp_path / "e/old").st_ctime_ns < clock
