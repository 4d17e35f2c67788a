"""file_move and file_copy through a real Toolbox: normal use, permissions, invalid
input, missing paths, existing destinations and edge cases."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from policy_calls import ScriptedAsker

MOVE_ALLOWED = {"permissions": {"delete:file": "allow"}}
BOTH = ["file_move", "file_copy"]


@pytest.fixture
def tree(workspace: Path) -> Path:
    (workspace / "a.txt").write_text("a")
    (workspace / "src" / "sub").mkdir(parents=True)
    (workspace / "src" / "one.txt").write_text("one")
    (workspace / "src" / ".hidden").write_text("h")
    (workspace / "src" / "sub" / "two.txt").write_text("two")
    (workspace / "docs").mkdir()
    return workspace


@pytest.fixture
def tbm(make_toolbox: Any) -> Toolbox:
    """Moves remove the source, which asks by default: allowed here."""
    tb: Toolbox = make_toolbox(MOVE_ALLOWED)
    return tb


def snapshot(root: Path) -> dict[str, bytes | str | None]:
    out: dict[str, bytes | str | None] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = os.readlink(p) if p.is_symlink() else (None if p.is_dir() else p.read_bytes())
    return out


# --------------------------------------------------------------------------- normal


def test_move_file(tbm: Toolbox, tree: Path) -> None:
    out = ok(tbm.run("file_move", {"source": "a.txt", "destination": "b.txt"}))
    assert out == {"source": "a.txt", "destination": "b.txt", "type": "file"}
    assert not (tree / "a.txt").exists() and (tree / "b.txt").read_text() == "a"
    assert tbm.render(tbm.run("move_file", {"source": "b.txt", "destination": "c.txt"})) == (
        "Moved file b.txt -> c.txt"
    )


def test_copy_file(tb: Toolbox, tree: Path) -> None:
    out = ok(tb.run("file_copy", {"source": "a.txt", "destination": "b.txt"}))
    assert out == {"source": "a.txt", "destination": "b.txt", "files_copied": 1, "type": "file"}
    assert (tree / "a.txt").read_text() == "a" == (tree / "b.txt").read_text()
    rendered = tb.render(tb.run("copy_file", {"source": "a.txt", "destination": "c.txt"}))
    assert rendered == "Copied file a.txt -> c.txt" and "\n" not in rendered


def test_directories_recursive(tbm: Toolbox, tree: Path) -> None:
    before = snapshot(tree / "src")
    out = ok(tbm.run("file_copy", {"source": "src", "destination": "copy"}))
    assert out["type"] == "directory" and out["files_copied"] == 3
    assert snapshot(tree / "copy") == before  # hidden files included
    assert tbm.render(tbm.run("file_copy", {"source": "src", "destination": "c2"})) == (
        "Copied directory src -> c2 (3 files)"
    )
    out = ok(tbm.run("file_move", {"source": "src", "destination": "moved"}))
    assert out["type"] == "directory"
    assert snapshot(tree / "moved") == before and not (tree / "src").exists()


@pytest.mark.parametrize("tool", BOTH)
def test_into_an_existing_folder(tbm: Toolbox, tree: Path, tool: str) -> None:
    out = ok(tbm.run(tool, {"source": "a.txt", "destination": "docs/a.txt"}))
    assert out["destination"] == "docs/a.txt"
    os.replace(tree / "docs" / "a.txt", tree / "a.txt")
    # A trailing '/' keeps the name inside that folder, and creates it if needed.
    out = ok(tbm.run(tool, {"source": "a.txt", "destination": "docs/"}))
    assert out["destination"] == "docs/a.txt" and (tree / "docs" / "a.txt").read_text() == "a"
    out = ok(tbm.run(tool, {"source": "src", "destination": "new/place/"}))
    assert out["destination"] == "new/place/src" and (tree / "new/place/src/one.txt").exists()


@pytest.mark.parametrize("tool", BOTH)
def test_missing_parents_are_created(tbm: Toolbox, tree: Path, tool: str) -> None:
    ok(tbm.run(tool, {"source": "a.txt", "destination": "x/y/z.txt"}))
    assert (tree / "x" / "y" / "z.txt").read_text() == "a"


@pytest.mark.parametrize("tool", BOTH)
def test_symlink_moved_or_copied_as_a_link(
    tbm: Toolbox, tree: Path, tmp_path: Path, tool: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("OUTSIDE")
    (tree / "out").symlink_to(outside)
    (tree / "dangling").symlink_to("no/such/file")
    out = ok(tbm.run(tool, {"source": "out", "destination": "out2"}))
    assert out["type"] == "symlink"
    assert os.readlink(tree / "out2") == str(outside)
    ok(tbm.run(tool, {"source": "dangling", "destination": "dangling2"}))
    assert os.readlink(tree / "dangling2") == "no/such/file"
    # Not followed: nothing from outside was copied in, nothing outside changed.
    assert not [p for p in tree.rglob("*") if not p.is_symlink() and p.is_file()
                and p.read_bytes() == b"OUTSIDE"]  # fmt: skip
    assert snapshot(outside) == {"secret": b"OUTSIDE"}
    err(tbm.run("read_file", {"path": "out2/secret"}), "PERMISSION_DENIED")


@pytest.mark.parametrize("tool", BOTH)
def test_across_roots(make_toolbox: Any, tree: Path, tmp_path: Path, tool: str) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    config = {"workspace": {"writable_roots": [str(extra)]}, **MOVE_ALLOWED}
    tb = make_toolbox(config)
    out = ok(tb.run(tool, {"source": "src", "destination": str(extra / "src")}))
    assert out["destination"] == str(extra / "src")
    assert (extra / "src" / "sub" / "two.txt").read_text() == "two"
    assert (tree / "src").exists() == (tool == "file_copy")
    ok(tb.run(tool, {"source": str(extra / "src" / "one.txt"), "destination": "back.txt"}))
    assert (tree / "back.txt").read_text() == "one"


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs a second file system")
def test_move_across_file_systems(make_toolbox: Any, tree: Path) -> None:
    import shutil
    import tempfile

    extra = Path(tempfile.mkdtemp(prefix="lt-move-", dir="/dev/shm"))
    try:
        if extra.stat().st_dev == tree.stat().st_dev:
            pytest.skip("/dev/shm is on the workspace's file system")
        tb = make_toolbox({"workspace": {"writable_roots": [str(extra)]}, **MOVE_ALLOWED})
        before = snapshot(tree / "src")
        ok(tb.run("file_move", {"source": "src", "destination": str(extra / "m")}))
        assert snapshot(extra / "m") == before and not (tree / "src").exists()
    finally:
        shutil.rmtree(extra, ignore_errors=True)


def test_read_only_root_is_a_source_for_copies_only(
    make_toolbox: Any, tree: Path, tmp_path: Path
) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "doc.txt").write_text("doc")
    tb = make_toolbox({"workspace": {"extra_roots": [str(ro)]}, **MOVE_ALLOWED})
    ok(tb.run("file_copy", {"source": str(ro / "doc.txt"), "destination": "doc.txt"}))
    assert (tree / "doc.txt").read_text() == "doc"
    msg = err(
        tb.run("file_move", {"source": str(ro / "doc.txt"), "destination": "d2.txt"}),
        "PERMISSION_DENIED",
    )
    assert "read-only root" in msg
    for tool in BOTH:
        msg = err(
            tb.run(tool, {"source": "a.txt", "destination": str(ro / "a.txt")}),
            "PERMISSION_DENIED",
        )
        assert "read-only root" in msg
    assert sorted(p.name for p in ro.iterdir()) == ["doc.txt"] and (tree / "a.txt").exists()


# --------------------------------------------------------------------------- permissions


@pytest.mark.parametrize("tool", BOTH)
@pytest.mark.parametrize(
    ("source", "destination"),
    [("../outside.txt", "in.txt"), ("a.txt", "../outside-new.txt"), ("a.txt", "/tmp/lt-x.txt")],
)
def test_outside_refused(
    tbm: Toolbox, tree: Path, tool: str, source: str, destination: str
) -> None:
    (tree.parent / "outside.txt").write_text("OUT")
    err(tbm.run(tool, {"source": source, "destination": destination}), "PERMISSION_DENIED")
    assert not (tree / "in.txt").exists() and not (tree.parent / "outside-new.txt").exists()
    assert not Path("/tmp/lt-x.txt").exists() and (tree / "a.txt").exists()
    assert (tree.parent / "outside.txt").read_text() == "OUT"


@pytest.mark.parametrize("tool", BOTH)
def test_deny_rule_on_destination(make_toolbox: Any, tree: Path, tool: str) -> None:
    rules = {"write:file": {"*": "allow", "locked/*": "deny"}, "delete:file": "allow"}
    tb = make_toolbox({"permissions": rules})
    msg = err(tb.run(tool, {"source": "a.txt", "destination": "locked/a.txt"}), "PERMISSION_DENIED")
    assert "locked/a.txt" in msg
    # The trailing-slash spelling is checked as the path it really writes.
    err(tb.run(tool, {"source": "a.txt", "destination": "locked/"}), "PERMISSION_DENIED")
    assert not (tree / "locked").exists() and (tree / "a.txt").exists()


@pytest.mark.parametrize("tool", BOTH)
def test_write_rule_on_source(make_toolbox: Any, tree: Path, tool: str) -> None:
    # write:file is checked on both ends (a move changes the source's folder; a copy is
    # held to the same rule so a frozen folder is not cloned around its rules).
    rules = {"write:file": {"*": "allow", "src/*": "deny"}, "delete:file": "allow"}
    tb = make_toolbox({"permissions": rules})
    msg = err(tb.run(tool, {"source": "src/one.txt", "destination": "o.txt"}), "PERMISSION_DENIED")
    assert "src/one.txt" in msg
    assert (tree / "src" / "one.txt").exists() and not (tree / "o.txt").exists()


def test_move_asks_to_delete_the_source(tb: Toolbox, tree: Path, make_toolbox: Any) -> None:
    msg = err(tb.run("file_move", {"source": "a.txt", "destination": "b.txt"}), "PERMISSION_DENIED")
    assert "delete:file" in msg and '"a.txt"' in msg
    assert (tree / "a.txt").exists() and not (tree / "b.txt").exists()
    refuser = ScriptedAsker("deny")
    env = make_toolbox(asker=refuser).run("file_move", {"source": "a.txt", "destination": "b.txt"})
    err(env, "PERMISSION_DENIED")
    assert [r.permission for r in refuser.requests] == ["delete:file"]
    assert (tree / "a.txt").exists() and not (tree / "b.txt").exists()
    approver = ScriptedAsker("once")
    ok(make_toolbox(asker=approver).run("file_move", {"source": "a.txt", "destination": "b.txt"}))
    assert (tree / "b.txt").exists() and not (tree / "a.txt").exists()
    # The copy needs no delete permission.
    ok(tb.run("file_copy", {"source": "b.txt", "destination": "c.txt"}))


def test_delete_rule_on_source_blocks_only_moves(make_toolbox: Any, tree: Path) -> None:
    tb = make_toolbox({"permissions": {"delete:file": {"*": "allow", "src/*": "deny"}}})
    err(tb.run("file_move", {"source": "src/one.txt", "destination": "o.txt"}), "PERMISSION_DENIED")
    assert (tree / "src" / "one.txt").exists() and not (tree / "o.txt").exists()
    ok(tb.run("file_copy", {"source": "src/one.txt", "destination": "o.txt"}))


@pytest.mark.parametrize("tool", BOTH)
def test_secrets_cannot_be_renamed_out_of_their_read_rule(
    tbm: Toolbox, tree: Path, tool: str
) -> None:
    (tree / ".env").write_text("API_KEY=sk-live-123\n")
    msg = err(tbm.run(tool, {"source": ".env", "destination": "env.txt"}), "PERMISSION_DENIED")
    assert "read:file" in msg
    assert not (tree / "env.txt").exists() and (tree / ".env").exists()


@pytest.mark.parametrize("tool", BOTH)
def test_protected_destination(tbm: Toolbox, tree: Path, tool: str) -> None:
    (tree / ".git").mkdir()
    msg = err(tbm.run(tool, {"source": "a.txt", "destination": ".git/config"}), "PERMISSION_DENIED")
    assert "built-in protection" in msg
    assert not (tree / ".git" / "config").exists()


# --------------------------------------------------------------------------- invalid input


@pytest.mark.parametrize("tool", BOTH)
def test_invalid_input(tbm: Toolbox, tree: Path, tool: str) -> None:
    before = snapshot(tree)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"source": "a.txt", "destination": "a.txt"}, "same path"),
        ({"source": "a.txt", "destination": "./src/../a.txt"}, "same path"),
        ({"source": "src", "destination": "src/sub/inner"}, "into itself"),
        ({"source": "src", "destination": "src/"}, "into itself"),
        ({"source": "a.txt", "destination": "docs", "overwrite": True}, "a file cannot replace"),
        ({"source": "src", "destination": "a.txt", "overwrite": True}, "directory cannot replace"),
        ({"source": "docs", "destination": "src", "overwrite": True}, "not empty"),
        ({"source": ".", "destination": "docs/"}, "full path"),
        ({"source": "a.txt"}, "destination"),
        ({"source": "a.txt", "destination": "b", "recursive": True}, "recursive"),
        ({"source": "a.txt", "destination": "b\0c"}, "'destination' contains a NUL character"),
    ]
    for args, text in cases:
        assert text in err(tbm.run(tool, args), "INVALID_INPUT"), args
    assert snapshot(tree) == before


def test_the_workspace_itself_is_never_moved(tbm: Toolbox, tree: Path) -> None:
    msg = err(tbm.run("file_move", {"source": ".", "destination": "x"}), "PERMISSION_DENIED")
    assert "cannot be moved" in msg
    assert (tree / "a.txt").exists() and not (tree / "x").exists()


# --------------------------------------------------------------------------- not found


@pytest.mark.parametrize("tool", BOTH)
def test_missing_source(tbm: Toolbox, tree: Path, tool: str) -> None:
    msg = err(tbm.run(tool, {"source": "ghost.txt", "destination": "b.txt"}), "NOT_FOUND")
    assert "'ghost.txt'" in msg
    err(tbm.run(tool, {"source": "nope/ghost.txt", "destination": "b.txt"}), "NOT_FOUND")
    assert not (tree / "b.txt").exists()


# --------------------------------------------------------------------------- already exists


@pytest.mark.parametrize("tool", BOTH)
def test_existing_destination_needs_overwrite(tbm: Toolbox, tree: Path, tool: str) -> None:
    (tree / "b.txt").write_text("b")
    msg = err(tbm.run(tool, {"source": "a.txt", "destination": "b.txt"}), "ALREADY_EXISTS")
    assert "overwrite=true" in msg
    assert (tree / "b.txt").read_text() == "b" and (tree / "a.txt").exists()
    ok(tbm.run(tool, {"source": "a.txt", "destination": "b.txt", "overwrite": True}))
    assert (tree / "b.txt").read_text() == "a"
    assert (tree / "a.txt").exists() == (tool == "file_copy")


@pytest.mark.parametrize("tool", BOTH)
def test_existing_folder_is_not_entered(tbm: Toolbox, tree: Path, tool: str) -> None:
    msg = err(tbm.run(tool, {"source": "a.txt", "destination": "docs"}), "ALREADY_EXISTS")
    assert "'docs/a.txt'" in msg and "'docs/'" in msg
    assert list((tree / "docs").iterdir()) == [] and (tree / "a.txt").exists()
    (tree / "docs" / "a.txt").write_text("old")
    err(tbm.run(tool, {"source": "a.txt", "destination": "docs/"}), "ALREADY_EXISTS")
    assert (tree / "docs" / "a.txt").read_text() == "old"


# --------------------------------------------------------------------------- edge cases


@pytest.mark.parametrize("tool", BOTH)
def test_empty_dir_and_unicode_names(tbm: Toolbox, tree: Path, tool: str) -> None:
    (tree / "vide").mkdir()
    out = ok(tbm.run(tool, {"source": "vide", "destination": "leer"}))
    assert out["type"] == "directory" and (tree / "leer").is_dir()
    (tree / "données").mkdir()
    (tree / "données" / "日本語 ✓.txt").write_text("ü")
    out = ok(tbm.run(tool, {"source": "données", "destination": "コピー/"}))
    assert out["destination"] == "コピー/données"
    assert (tree / "コピー" / "données" / "日本語 ✓.txt").read_text() == "ü"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
@pytest.mark.parametrize("tool", BOTH)
def test_fifo_refused(tbm: Toolbox, tree: Path, tool: str) -> None:
    os.mkfifo(tree / "pipe")
    assert "special file" in err(
        tbm.run(tool, {"source": "pipe", "destination": "pipe2"}), "INVALID_INPUT"
    )
    os.mkfifo(tree / "src" / "sub" / "pipe")
    if tool == "file_copy":
        msg = err(tbm.run(tool, {"source": "src", "destination": "c"}), "INVALID_INPUT")
        assert "src/sub/pipe" in msg and not (tree / "c").exists()
    assert not (tree / "pipe2").exists()


def test_large_file_copy_is_exact(tb: Toolbox, tree: Path) -> None:
    data = hashlib.sha256(b"x").digest() * (1 << 19)  # 16 MiB, varied
    (tree / "big.bin").write_bytes(data + b"tail")
    out = ok(tb.run("file_copy", {"source": "big.bin", "destination": "big2.bin"}))
    assert out["files_copied"] == 1
    digest = hashlib.sha256((tree / "big2.bin").read_bytes()).hexdigest()
    assert digest == hashlib.sha256(data + b"tail").hexdigest()


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_copy_keeps_mode_bits(tb: Toolbox, tree: Path) -> None:
    os.chmod(tree / "a.txt", 0o741)
    ok(tb.run("file_copy", {"source": "a.txt", "destination": "b.txt"}))
    assert stat.S_IMODE((tree / "b.txt").stat().st_mode) == 0o741


def test_no_temp_files_left(tbm: Toolbox, tree: Path) -> None:
    ok(tbm.run("file_copy", {"source": "src", "destination": "c"}))
    err(tbm.run("file_copy", {"source": "src", "destination": "c"}), "ALREADY_EXISTS")
    ok(tbm.run("file_move", {"source": "c", "destination": "d"}))
    assert not [p for p in tree.rglob("*") if p.name.startswith(".lt-tmp-")]
