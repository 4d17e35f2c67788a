"""restore through the Toolbox on real files: what comes back, what is refused, whose.

Every test makes real files, changes them with real tools and commands (exec_cmd runs
a real shell), and compares whole trees byte for byte (names, kinds, link targets,
modes) before and after the undo.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox

pytestmark = [
    pytest.mark.checkpoints,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes, symlinks and shell"),
]

ALL_BYTES = bytes(range(256)) * 3 + b"\0\0\r\n\r\0"


def latest(tb: Toolbox, **kw: Any) -> int:
    """The newest checkpoint's id this session can see."""
    found = ok(tb.run("checkpoint_list", {"limit": 1}, **kw))["checkpoints"]
    assert found, "no checkpoint was recorded"
    return int(found[0]["id"])


def count(tb: Toolbox, **kw: Any) -> int:
    return len(ok(tb.run("checkpoint_list", {"limit": 200}, **kw))["checkpoints"])


def make_src(ws: Path) -> None:
    """Nested folders, an executable, binary bytes and every kind of symlink."""
    (ws / "src/pkg/deep/er").mkdir(parents=True)
    (ws / "src/pkg/__init__.py").write_text("")
    (ws / "src/pkg/mod.py").write_text("def f():\n    return 1\n")
    (ws / "src/pkg/deep/er/data.bin").write_bytes(ALL_BYTES)
    (ws / "src/pkg/deep/crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    run = ws / "src/run.sh"
    run.write_text("#!/bin/sh\necho hi\n")
    run.chmod(0o755)
    os.symlink("pkg/mod.py", ws / "src/rel_link")  # relative
    os.symlink(ws / "src/pkg/mod.py", ws / "src/abs_link")  # absolute, inside the root
    os.symlink("no/such/file", ws / "src/dangling")
    os.symlink("pkg/deep", ws / "src/dir_link")  # to a folder
    (ws / "keep.txt").write_text("outside src\n")


# --------------------------------------------------------------------------- commands


def test_approved_rm_rf_is_undone_byte_for_byte(
    cptb: Toolbox, workspace: Path, tree: Callable[..., Any]
) -> None:
    make_src(workspace)
    before = tree(workspace)
    out = ok(cptb.run("exec_cmd", {"command": "rm -rf src"}))
    assert out["exit_code"] == 0 and "checkpoint_note" not in out
    assert not (workspace / "src").exists()
    cid = latest(cptb)
    listed = ok(cptb.run("checkpoint_list", {}))["checkpoints"][0]
    assert listed["tool"] == "exec_cmd" and listed["summary"] == "rm -rf src"
    assert {f["action"] for f in listed["files"]} == {"deleted"}
    assert "src/dir_link" in {f["path"] for f in listed["files"]}

    restored = ok(cptb.run("restore", {"checkpoint": cid}))
    assert restored["failed"] == {} and restored["undone"] == [cid]
    assert tree(workspace) == before
    assert os.readlink(workspace / "src/abs_link") == str(workspace / "src/pkg/mod.py")
    assert os.stat(workspace / "src/run.sh").st_mode & 0o111


def test_command_that_edits_chmods_and_replaces_is_undone(
    cptb: Toolbox, workspace: Path, tree: Callable[..., Any]
) -> None:
    make_src(workspace)
    before = tree(workspace)
    script = (
        "chmod -x src/run.sh && chmod +x keep.txt && printf 'new' > src/pkg/mod.py"
        " && rm src/dir_link && mkdir src/dir_link && echo x > src/dir_link/f"
        " && ln -sfn elsewhere src/rel_link && mv src/pkg/deep src/moved"
    )
    ok(cptb.run("exec_cmd", {"command": script}))
    assert tree(workspace) != before
    assert ok(cptb.run("restore", {"checkpoint": latest(cptb)}))["failed"] == {}
    assert tree(workspace) == before


# --------------------------------------------------------------------------- file tools


def test_apply_patch_add_update_delete_move_is_undone(
    cptb: Toolbox, workspace: Path, tree: Callable[..., Any]
) -> None:
    (workspace / "upd.py").write_text("a = 1\nb = 2\n")
    (workspace / "gone.txt").write_text("bye\n")
    (workspace / "old").mkdir()
    (workspace / "old/mv.sh").write_text("echo hi\n")
    (workspace / "old/mv.sh").chmod(0o755)
    before = tree(workspace)
    patch = (
        "*** Begin Patch\n"
        "*** Add File: new/dir/added.py\n+x = 1\n"
        "*** Update File: upd.py\n@@\n-b = 2\n+b = 3\n"
        "*** Delete File: gone.txt\n"
        "*** Update File: old/mv.sh\n*** Move to: bin/mv.sh\n@@\n-echo hi\n+echo bye\n"
        "*** End Patch\n"
    )
    ok(cptb.run("apply_patch", {"patch": patch}))
    assert (workspace / "bin/mv.sh").read_text() == "echo bye\n"
    cid = latest(cptb)
    files = {f["path"]: f for f in ok(cptb.run("checkpoint_list", {}))["checkpoints"][0]["files"]}
    assert {p: f["action"] for p, f in files.items()} == {
        "new/dir/added.py": "created",
        "upd.py": "modified",
        "gone.txt": "deleted",
        "old/mv.sh": "deleted",
        "bin/mv.sh": "created",
    }
    assert (files["upd.py"]["added"], files["upd.py"]["removed"]) == (1, 1)
    ok(cptb.run("restore", {"checkpoint": cid}))
    after = tree(workspace)
    # The folders the patch made stay (now empty): nothing recorded them as absent.
    extra = {p for p in after if p not in before}
    assert extra <= {"new", "new/dir", "bin"}, extra
    assert {p: v for p, v in after.items() if p in before} == before


def test_file_delete_of_a_folder_with_binary_links_and_empty_folders(
    cptb: Toolbox, workspace: Path, tree: Callable[..., Any]
) -> None:
    make_src(workspace)
    (workspace / "src/empty/inner").mkdir(parents=True)
    before = tree(workspace)
    ok(cptb.run("file_delete", {"path": "src", "recursive": True}))
    assert not (workspace / "src").exists()
    ok(cptb.run("restore", {"checkpoint": latest(cptb)}))
    assert tree(workspace) == before
    assert (workspace / "src/dir_link").is_symlink()
    assert (workspace / "src/pkg/deep/er/data.bin").read_bytes() == ALL_BYTES


def test_undo_of_an_undo_brings_back_the_call(
    cptb: Toolbox, workspace: Path, tree: Callable[..., Any]
) -> None:
    make_src(workspace)
    original = tree(workspace)
    ok(cptb.run("exec_cmd", {"command": "rm -rf src/pkg && echo changed > keep.txt"}))
    changed = tree(workspace)
    first = latest(cptb)
    ok(cptb.run("restore", {"checkpoint": first}))
    assert tree(workspace) == original
    undo = latest(cptb)
    assert undo > first
    listed = ok(cptb.run("checkpoint_list", {"limit": 1}))["checkpoints"][0]
    assert listed["tool"] == "restore"
    ok(cptb.run("restore", {"checkpoint": undo}))
    assert tree(workspace) == changed


# --------------------------------------------------------------------------- conflicts


def test_a_file_changed_after_the_call_is_a_conflict(
    cptb: Toolbox, workspace: Path, tree: Callable[..., Any]
) -> None:
    for name in ("a", "b", "c"):
        (workspace / f"{name}.txt").write_text(f"{name} v1\n")
    ok(cptb.run("exec_cmd", {"command": "for f in a b c; do echo $f v2 > $f.txt; done"}))
    cid = latest(cptb)
    (workspace / "b.txt").write_text("b edited by hand\n")  # outside local-tools
    state = tree(workspace)

    message = err(cptb.run("restore", {"checkpoint": cid}), "CONFLICT")
    assert "b.txt" in message and "a.txt" not in message
    assert tree(workspace) == state  # nothing written

    planned = ok(cptb.run("restore", {"checkpoint": cid, "dry_run": True}))
    conflicts = [p["path"] for p in planned["plan"] if "conflict" in p]
    assert conflicts == ["b.txt"]
    assert tree(workspace) == state

    ok(cptb.run("restore", {"checkpoint": cid, "paths": ["a.txt", "c.txt"]}))
    assert (workspace / "a.txt").read_text() == "a v1\n"
    assert (workspace / "c.txt").read_text() == "c v1\n"
    assert (workspace / "b.txt").read_text() == "b edited by hand\n"

    ok(cptb.run("restore", {"checkpoint": cid, "force": True}))
    assert [(workspace / f"{n}.txt").read_text() for n in "abc"] == ["a v1\n", "b v1\n", "c v1\n"]


def test_a_dry_run_changes_nothing(
    cptb: Toolbox, workspace: Path, tree: Callable[..., Any]
) -> None:
    make_src(workspace)
    ok(cptb.run("exec_cmd", {"command": "rm -rf src"}))
    cid = latest(cptb)
    state = tree(workspace)
    out = ok(cptb.run("restore", {"checkpoint": cid, "dry_run": True}))
    assert out["dry_run"] is True
    assert {p["action"] for p in out["plan"]} == {"create"}
    assert tree(workspace) == state
    assert latest(cptb) == cid  # a plan is no checkpoint


# --------------------------------------------------------------------------- sessions


def test_sessions_keep_their_histories_apart(
    cptb: Toolbox, workspace: Path, tree: Callable[..., Any]
) -> None:
    a: dict[str, Any] = {"session_id": "A"}
    b: dict[str, Any] = {"session_id": "B"}
    ok(cptb.run("write_file", {"path": "shared.txt", "content": "from A\n"}, **a))
    ok(cptb.run("write_file", {"path": "a_only.txt", "content": "A\n"}, **a))
    cid_a = latest(cptb, **a)
    ok(cptb.run("write_file", {"path": "b_only.txt", "content": "B\n"}, **b))
    cid_b = latest(cptb, **b)
    assert count(cptb, **a) == 2 and count(cptb, **b) == 1
    paths_a = {
        f["path"] for cp in ok(cptb.run("checkpoint_list", {}, **a))["checkpoints"]
        for f in cp["files"]
    }  # fmt: skip
    assert "b_only.txt" not in paths_a
    both = ok(cptb.run("checkpoint_list", {"all_sessions": True}, **a))["checkpoints"]
    assert {cp["id"] for cp in both} >= {cid_a, cid_b}

    # A cannot see, diff or restore B's checkpoint.
    err(cptb.run("restore", {"checkpoint": cid_b}, **a), "NOT_FOUND")
    err(cptb.run("checkpoint_diff", {"checkpoint": cid_b}, **a), "NOT_FOUND")
    assert (workspace / "b_only.txt").exists()

    # B changes a file A made: A's undo of it is refused, naming the other session.
    ok(
        cptb.run(
            "write_file", {"path": "shared.txt", "content": "from B\n", "overwrite": True}, **b
        )
    )
    state = tree(workspace)
    first_a = min(cp["id"] for cp in ok(cptb.run("checkpoint_list", {}, **a))["checkpoints"])
    message = err(cptb.run("restore", {"checkpoint": first_a}, **a), "CONFLICT")
    assert "another session" in message and "shared.txt" in message
    assert tree(workspace) == state
    # A's own other file still comes back when the shared one is left out.
    ok(cptb.run("restore", {"checkpoint": cid_a, "paths": ["a_only.txt"]}, **a))
    assert not (workspace / "a_only.txt").exists()
    assert (workspace / "shared.txt").read_text() == "from B\n"


# --------------------------------------------------------------------------- the roots


def test_restore_never_writes_outside_the_roots(
    cptb: Toolbox, workspace: Path, tmp_path: Path, tree: Callable[..., Any]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "f.txt"
    secret.write_text("v2\n")  # the very bytes the checkpoint expects in ws/d/f.txt
    os.utime(secret, (1_000_000, 1_000_000))

    ok(cptb.run("write_file", {"path": "x.txt", "content": "v1\n"}))
    ok(cptb.run("write_file", {"path": "d/f.txt", "content": "v1\n"}))
    ok(cptb.run("write_file", {"path": "x.txt", "content": "v2\n", "overwrite": True}))
    cid = latest(cptb)  # the second write of x.txt
    ok(cptb.run("write_file", {"path": "d/f.txt", "content": "v2\n", "overwrite": True}))

    # Outside local-tools, d becomes a link out of the workspace, and x.txt a link to
    # a file out of it with the content the checkpoint left.
    (workspace / "d/f.txt").unlink()
    (workspace / "d").rmdir()
    os.symlink(outside, workspace / "d")
    (workspace / "x.txt").unlink()
    os.symlink(secret, workspace / "x.txt")
    state = tree(workspace)

    message = err(cptb.run("restore", {"checkpoint": cid}), "CONFLICT")
    assert "d/f.txt: a folder above it is now a symlink" in message
    assert "x.txt: changed since" in message
    # Forced, neither is written: never through a symlinked folder, even forced; the
    # jail refuses the link out: it is neither followed nor replaced.
    failed = ok(cptb.run("restore", {"checkpoint": cid, "force": True}))["failed"]
    assert sorted(failed) == [str(workspace / "d/f.txt"), str(workspace / "x.txt")]
    assert "never written through" in failed[str(workspace / "d/f.txt")]
    assert "outside the workspace" in failed[str(workspace / "x.txt")]
    assert secret.read_text() == "v2\n"
    assert os.stat(secret).st_mtime == 1_000_000
    assert sorted(os.listdir(outside)) == ["f.txt"]
    assert tree(workspace) == state


def test_paths_outside_the_workspace_are_not_found(
    cptb: Toolbox, workspace: Path, tmp_path: Path, tree: Callable[..., Any]
) -> None:
    ok(cptb.run("write_file", {"path": "x.txt", "content": "new\n"}))
    cid = latest(cptb)
    (tmp_path / "x").write_text("outside\n")
    state = tree(workspace), (tmp_path / "x").read_bytes()
    for paths in (["../x"], ["/etc/passwd"], [str(tmp_path / "x")], ["x.txt/../../x"]):
        err(cptb.run("restore", {"checkpoint": cid, "paths": paths}), "NOT_FOUND")
        err(cptb.run("checkpoint_diff", {"checkpoint": cid, "paths": paths}), "NOT_FOUND")
    assert (tree(workspace), (tmp_path / "x").read_bytes()) == state
    assert latest(cptb) == cid


def test_a_restored_link_points_out_but_nothing_is_written_through_it(
    cptb: Toolbox, workspace: Path, tmp_path: Path
) -> None:
    target = tmp_path / "outside.txt"
    target.write_text("theirs\n")
    os.utime(target, (1_000_000, 1_000_000))
    ok(cptb.run("exec_cmd", {"command": f"ln -s {target} link"}))
    made = latest(cptb)
    ok(cptb.run("exec_cmd", {"command": "rm link"}))
    ok(cptb.run("restore", {"checkpoint": latest(cptb)}))
    assert os.readlink(workspace / "link") == str(target)
    ok(cptb.run("restore", {"checkpoint": made}))
    assert not os.path.lexists(workspace / "link")
    assert target.read_text() == "theirs\n" and os.stat(target).st_mtime == 1_000_000


def test_the_state_folder_is_outside_the_workspace(cptb: Toolbox, workspace: Path) -> None:
    ok(cptb.run("exec_cmd", {"command": "echo x > made.txt"}))
    assert sorted(os.listdir(workspace)) == ["made.txt"]
    assert not workspace.resolve().is_relative_to(cptb.state_dir.resolve())
    assert not cptb.state_dir.resolve().is_relative_to(workspace.resolve())
    assert list(cptb.state_dir.rglob("history.db"))
