"""What checkpoints record, and what they never touch: real files, real git, real commands.

The user's `.git`, ignored files, files over the size limit, read-only commands, a
workspace's `.gitattributes`; the diff and line counts shown; old checkpoints collected;
a store that cannot be written to (the call still succeeds, with a note).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envelopes import ok
from local_tools import Toolbox
from local_tools.checkpoints.retention import collect, repo_size
from local_tools.checkpoints.store import Checkpoints, checkpoint_folder

pytestmark = [
    pytest.mark.checkpoints,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes, symlinks and shell"),
]

GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false"]


def git(ws: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", *GIT_ID, *args], cwd=ws, check=True, capture_output=True, text=True
    )
    return proc.stdout


def listed(tb: Toolbox, **args: Any) -> list[dict[str, Any]]:
    return ok(tb.run("checkpoint_list", {"limit": 200, **args}))["checkpoints"]


def store_of(tb: Toolbox) -> Checkpoints:
    """The same store the toolbox writes (another handle: the lock is per folder)."""
    folder = checkpoint_folder(tb.state_dir, tb.workspace)
    return Checkpoints(folder, tb.jail, max_bytes=10 << 20, watch=False)


# --------------------------------------------------------------------------- the user's .git


def test_the_users_git_folder_is_never_touched_nor_recorded(
    cptb: Toolbox, workspace: Path, tree: Callable[..., Any]
) -> None:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "tracked.txt").write_text("one\n")
    (workspace / "lib").mkdir()
    (workspace / "lib/code.py").write_text("x = 1\n")
    git(workspace, "add", ".")
    git(workspace, "commit", "-qm", "first")
    git(workspace, "tag", "v1")
    git(workspace, "branch", "feature")
    (workspace / "staged.txt").write_text("staged\n")
    git(workspace, "add", "staged.txt")  # an index that differs from HEAD
    git(workspace, "status")  # refresh the index now, so the runs below need not
    dot_git = tree(workspace / ".git", skip_git=False)

    ok(cptb.run("write_file", {"path": "tracked.txt", "content": "two\n", "overwrite": True}))
    ok(cptb.run("edit", {"path": "lib/code.py", "old_string": "x = 1", "new_string": "x = 2"}))
    ok(cptb.run("exec_cmd", {"command": "echo more >> tracked.txt && mkdir n && echo y > n/f"}))
    ok(cptb.run("file_delete", {"path": "lib", "recursive": True}))
    ok(cptb.run("file_move", {"source": "staged.txt", "destination": "n/staged.txt"}))
    n = len(listed(cptb))
    out = ok(cptb.run("exec_cmd", {"command": "git status"}))
    assert "tracked.txt" in out["stdout"]
    assert len(listed(cptb)) == n  # read-only: no checkpoint
    first = min(cp["id"] for cp in listed(cptb))
    assert ok(cptb.run("restore", {"checkpoint": first}))["failed"] == {}
    undo = listed(cptb)[0]["id"]
    assert ok(cptb.run("restore", {"checkpoint": undo}))["failed"] == {}  # undo the undo
    assert ok(cptb.run("restore", {"checkpoint": first}))["failed"] == {}

    assert tree(workspace / ".git", skip_git=False) == dot_git
    assert (workspace / "tracked.txt").read_text() == "one\n"
    recorded = {f["path"] for cp in listed(cptb, all_sessions=True) for f in cp["files"]}
    assert recorded and not {p for p in recorded if ".git" in p.split("/")}


def test_a_file_tool_writing_inside_git_keeps_no_checkpoint_of_it(
    cptb: Toolbox, workspace: Path
) -> None:
    git(workspace, "init", "-q")
    ok(cptb.run("write_file", {"path": ".git/description", "content": "x\n", "overwrite": True}))
    ok(cptb.run("write_file", {"path": ".git/made-by-hand", "content": "x\n"}))
    ok(cptb.run("write_file", {"path": "sub/.git/HEAD", "content": "x\n"}))
    assert listed(cptb) == []


# --------------------------------------------------------------------------- what is kept


def test_gitattributes_conversions_and_filters_do_not_change_stored_bytes(
    cptb: Toolbox, workspace: Path, tree: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    git(workspace, "init", "-q")
    git(workspace, "config", "filter.evil.clean", "tr a-z A-Z")
    git(workspace, "config", "core.autocrlf", "true")
    (workspace / ".gitattributes").write_text("* text eol=crlf filter=evil ident\n")
    # Config a git run in this process's environment would also pick up.
    for i, (key, value) in enumerate(
        [("filter.evil.clean", "tr a-z A-Z"), ("core.autocrlf", "true")]
    ):
        monkeypatch.setenv(f"GIT_CONFIG_KEY_{i}", key)
        monkeypatch.setenv(f"GIT_CONFIG_VALUE_{i}", value)
    monkeypatch.setenv("GIT_CONFIG_COUNT", "2")
    (workspace / "d").mkdir()
    (workspace / "d/lf.txt").write_bytes(b"lower case\nlf only\n$Id$\n")
    (workspace / "d/crlf.txt").write_bytes(b"lower case\r\ncrlf\r\n")
    (workspace / "d/mixed.txt").write_bytes(b"a\r\nb\nc\r")
    before = tree(workspace)
    ok(cptb.run("exec_cmd", {"command": "rm -r d"}))
    ok(cptb.run("restore", {"checkpoint": listed(cptb)[0]["id"]}))
    assert tree(workspace) == before


def test_ignored_files_are_not_in_command_checkpoints(cptb: Toolbox, workspace: Path) -> None:
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    ok(cptb.run("exec_cmd", {"command": "mkdir -p build && echo o > build/o && echo l > a.log"}))
    assert listed(cptb) == []
    ok(cptb.run("exec_cmd", {"command": "echo o2 > build/o && echo k > kept.txt"}))
    assert [f["path"] for f in listed(cptb)[0]["files"]] == ["kept.txt"]


def test_files_over_max_file_mb_are_skipped_and_named(
    make_toolbox: Any, workspace: Path, asker: Any
) -> None:
    tb = make_toolbox({"checkpoints": {"max_file_mb": 0.01}}, asker=asker)
    limit = int(0.01 * 2**20)
    big = "x" * (limit + 1)
    (workspace / "small.txt").write_text("s\n")
    out = ok(tb.run("exec_cmd", {"command": f"head -c {limit + 1} /dev/zero > big.bin"}))
    assert "big.bin" in out["checkpoint_note"] and "max_file_mb" in out["checkpoint_note"]
    assert listed(tb) == []  # the only change was not kept: nothing to undo
    out = ok(tb.run("write_file", {"path": "big.txt", "content": big}))
    assert "big.txt" in out["checkpoint_note"]
    ok(tb.run("write_file", {"path": "big.txt", "content": "now small\n", "overwrite": True}))
    out = ok(tb.run("exec_cmd", {"command": f"head -c {limit + 1} /dev/zero > s2 && rm small.txt"}))
    assert "s2" in out["checkpoint_note"]
    (cp,) = [c for c in listed(tb) if c["tool"] == "exec_cmd"]
    assert [f["path"] for f in cp["files"]] == ["small.txt"]
    assert list(cp["skipped"]) == ["s2"]
    assert "max_file_mb" in cp["skipped"]["s2"]


def test_checkpoints_off_and_read_only_commands_record_nothing(
    make_toolbox: Any, workspace: Path, asker: Any
) -> None:
    (workspace / "x").write_text("x\n")
    off = make_toolbox({"checkpoints": {"enabled": False}}, asker=asker)
    ok(off.run("write_file", {"path": "a.txt", "content": "a\n"}))
    ok(off.run("exec_cmd", {"command": "echo b > b.txt"}))
    assert not checkpoint_folder(off.state_dir, off.workspace).exists()
    assert listed(off) == []

    asker.requests.clear()
    on = make_toolbox(asker=asker)
    for command in ("ls", "cat x", "ls -la | sort", "git status || true"):
        out = ok(on.run("exec_cmd", {"command": command}))
        assert "checkpoint_note" not in out
    assert listed(on) == []
    assert asker.requests == []  # built-in read-only commands: not asked, not checkpointed


# --------------------------------------------------------------------------- diff and counts


def test_checkpoint_diff_and_list_counts(cptb: Toolbox, workspace: Path) -> None:
    ok(cptb.run("write_file", {"path": "f.py", "content": "a = 1\nb = 2\nc = 3\n"}))
    ok(cptb.run("write_file", {"path": "f.py", "content": "a = 1\nB = 2\nc = 3\nd = 4\ne = 5\n",
                               "overwrite": True}))  # fmt: skip
    (workspace / "bin.dat").write_bytes(b"\0\1\2")
    ok(cptb.run("exec_cmd", {"command": "printf '\\0\\3' >> bin.dat && ln -s f.py link"}))
    cmd, second, first = listed(cptb)
    assert (first["added"], first["removed"]) == (3, 0)
    assert (second["added"], second["removed"]) == (3, 1)
    assert [(f["path"], f["action"], f["added"], f["removed"]) for f in second["files"]] == [
        ("f.py", "modified", 3, 1)
    ]
    diff = ok(cptb.run("checkpoint_diff", {"checkpoint": second["id"]}))["diff"]
    assert diff.startswith("--- a/f.py\n+++ b/f.py\n@@ ")
    assert "-b = 2\n+B = 2\n" in diff and "+d = 4\n+e = 5\n" in diff
    created = ok(cptb.run("checkpoint_diff", {"checkpoint": first["id"]}))["diff"]
    assert created.startswith("--- /dev/null\n+++ b/f.py\n")
    text = ok(cptb.run("checkpoint_diff", {"checkpoint": cmd["id"]}))["diff"]
    assert "Binary file modified (3 -> 5 bytes)" in text
    assert "--- a/link\n+++ b/link\nabsent -> symlink to f.py\n" in text
    only = ok(cptb.run("checkpoint_diff", {"checkpoint": cmd["id"], "paths": ["link"]}))["diff"]
    assert "bin.dat" not in only


# --------------------------------------------------------------------------- retention


def test_collect_drops_old_checkpoints_and_keeps_what_is_needed(
    cptb: Toolbox, workspace: Path
) -> None:
    big = os.urandom(1 << 20).hex()  # 2 MB of text that compresses to about half
    ok(cptb.run("write_file", {"path": "big.txt", "content": big}))
    ok(cptb.run("file_delete", {"path": "big.txt"}))
    ok(cptb.run("write_file", {"path": "keep.txt", "content": "v1\n"}))
    ok(cptb.run("write_file", {"path": "keep.txt", "content": "v2\n", "overwrite": True}))
    ok(cptb.run("exec_cmd", {"command": "echo c > cmd.txt"}))
    ids = sorted(cp["id"] for cp in listed(cptb))
    store = store_of(cptb)
    try:
        with sqlite3.connect(store.history.path) as db:  # the first two: 30 days old
            db.execute("UPDATE checkpoints SET ts = ? WHERE id <= ?", (time.time() - 30 * 86400,
                                                                      ids[1]))  # fmt: skip
        db.close()
        # Unreachable objects younger than an hour are kept (a call in flight may have
        # just written them): the dropped ones' objects are as old as they are.
        old = time.time() - 2 * 3600
        for obj in (store.repo.git_dir / "objects").rglob("*"):
            os.utime(obj, (old, old))
        size = repo_size(store)
        done = collect(store, keep_days=14, max_size_mb=2048)
        assert done.dropped == 2
        assert done.size_after < size - (512 << 10), (size, done.size_after)
        assert sorted(cp["id"] for cp in listed(cptb)) == ids[2:]
        ok(cptb.run("restore", {"checkpoint": ids[3]}))  # blobs of kept ones are still there
        assert (workspace / "keep.txt").read_text() == "v1\n"
        ok(cptb.run("exec_cmd", {"command": "rm cmd.txt"}))  # the root's index survived
        ok(cptb.run("restore", {"checkpoint": listed(cptb)[0]["id"]}))
        assert (workspace / "cmd.txt").read_text() == "c\n"
        # Over the size limit: the oldest go too, a quarter at a time.
        assert collect(store, keep_days=14, max_size_mb=1e-6).dropped >= 1
    finally:
        store.close()


# --------------------------------------------------------------------------- failures


def test_an_unwritable_store_leaves_a_note_and_the_call_succeeds(
    cptb: Toolbox, workspace: Path
) -> None:
    folder = checkpoint_folder(cptb.state_dir, cptb.workspace)
    folder.mkdir(parents=True)
    (folder / "repo").write_text("not a repository")  # root ignores modes: a file instead
    out = ok(cptb.run("write_file", {"path": "a.txt", "content": "a\n"}))
    assert "cannot be undone" in out["checkpoint_note"]
    out = ok(cptb.run("exec_cmd", {"command": "echo b > b.txt"}))
    assert "cannot be undone" in out["checkpoint_note"]
    assert (workspace / "a.txt").read_text() == "a\n" and (workspace / "b.txt").exists()


def test_no_git_on_path_leaves_a_note_and_the_command_runs(
    cptb: Toolbox, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("sh", "bash"):
        found = shutil.which(name)
        assert found
        os.symlink(found, bin_dir / name)
    monkeypatch.setenv("PATH", str(bin_dir))
    out = ok(cptb.run("exec_cmd", {"command": "echo hi > made.txt"}))
    assert "git" in out["checkpoint_note"] and "cannot be undone" in out["checkpoint_note"]
    assert (workspace / "made.txt").read_text() == "hi\n"
