"""apply_patch end to end: real files through the runner, all or nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.interact.base import Answer, PermissionRequest

ALLOW_DELETE = {"permissions": {"delete:file": "allow"}}
SOURCE = "def f():\n    x = 1\n    return x\n\n\ndef g():\n    x = 1\n    return x\n"


@pytest.fixture
def tb(make_toolbox: Any) -> Toolbox:
    return make_toolbox()


@pytest.fixture
def tbd(make_toolbox: Any) -> Toolbox:
    """A toolbox whose config allows deleting (the default asks, and tests have no asker)."""
    return make_toolbox(ALLOW_DELETE)


def patch(*body: str) -> dict[str, str]:
    return {"patch": "*** Begin Patch\n" + "".join(body) + "*** End Patch\n"}


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and folder under root, with file bytes: to prove nothing changed."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


# ----------------------------------------------------------------------------- normal


def test_add_file_creates_parents(tb: Toolbox, workspace: Path) -> None:
    out = ok(tb.run("apply_patch", patch("*** Add File: pkg/sub/new.py\n+a = 1\n+\n+b = 2\n")))
    assert (workspace / "pkg/sub/new.py").read_text() == "a = 1\n\nb = 2\n"
    assert out["files"] == [{"path": "pkg/sub/new.py", "action": "add"}]
    assert "--- /dev/null\n+++ b/pkg/sub/new.py\n" in out["diff"]
    assert "+b = 2\n" in out["diff"]


def test_update_with_several_hunks_and_headers(tb: Toolbox, workspace: Path) -> None:
    (workspace / "m.py").write_text(SOURCE)
    out = ok(
        tb.run(
            "apply_patch",
            patch(
                "*** Update File: m.py\n",
                "@@ def f():\n-    x = 1\n+    x = 10\n",
                "@@ def g():\n     x = 1\n-    return x\n+    return -x\n",
            ),
        )
    )
    assert (workspace / "m.py").read_text() == (
        "def f():\n    x = 10\n    return x\n\n\ndef g():\n    x = 1\n    return -x\n"
    )
    assert out["files"] == [{"path": "m.py", "action": "update"}]
    assert "-    x = 1\n+    x = 10\n" in out["diff"]
    assert "--- a/m.py\n+++ b/m.py\n" in out["diff"]


def test_end_of_file_anchor(tb: Toolbox, workspace: Path) -> None:
    (workspace / "t.txt").write_text("end\nmiddle\nend\n")
    ok(tb.run("apply_patch", patch("*** Update File: t.txt\n@@\n-end\n+END\n*** End of File\n")))
    assert (workspace / "t.txt").read_text() == "end\nmiddle\nEND\n"


def test_move_with_changes_keeps_mode(tbd: Toolbox, workspace: Path) -> None:
    script = workspace / "old.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    out = ok(
        tbd.run(
            "apply_patch",
            patch("*** Update File: old.sh\n*** Move to: bin/new.sh\n@@\n-echo hi\n+echo bye\n"),
        )
    )
    assert not script.exists()
    moved = workspace / "bin/new.sh"
    assert moved.read_text() == "#!/bin/sh\necho bye\n"
    if os.name == "posix":
        assert moved.stat().st_mode & 0o777 == 0o755
    assert out["files"] == [{"path": "old.sh", "action": "move", "to": "bin/new.sh"}]
    assert out["diff"].startswith("rename from old.sh\nrename to bin/new.sh\n--- a/old.sh\n")


def test_pure_rename(tbd: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_bytes(b"same\r\n")
    ok(tbd.run("apply_patch", patch("*** Update File: a.txt\n*** Move to: b.txt\n")))
    assert (workspace / "b.txt").read_bytes() == b"same\r\n"
    assert not (workspace / "a.txt").exists()


def test_delete(tbd: Toolbox, workspace: Path) -> None:
    (workspace / "gone.txt").write_text("bye\n")
    out = ok(tbd.run("apply_patch", patch("*** Delete File: gone.txt\n")))
    assert not (workspace / "gone.txt").exists()
    assert out["files"] == [{"path": "gone.txt", "action": "delete"}]
    assert "+++ /dev/null" in out["diff"] and "-bye" in out["diff"]
    (workspace / "blob.bin").write_bytes(b"\x00\xff")
    out = ok(tbd.run("apply_patch", patch("*** Delete File: blob.bin\n")))
    assert out["diff"] == "Binary file a/blob.bin deleted\n"
    assert not (workspace / "blob.bin").exists()


def test_multiple_files_in_one_patch_and_rendering(tbd: Toolbox, workspace: Path) -> None:
    (workspace / "m.py").write_text(SOURCE)
    (workspace / "old.txt").write_text("o\n")
    (workspace / "gone.txt").write_text("g\n")
    env = tbd.run(
        "apply_patch",
        patch(
            "*** Add File: new.txt\n+n\n",
            "*** Update File: m.py\n@@ def g():\n-    x = 1\n+    x = 2\n",
            "*** Delete File: gone.txt\n",
            "*** Update File: old.txt\n*** Move to: moved.txt\n@@\n-o\n+O\n",
        ),
    )
    out = ok(env)
    assert [f["action"] for f in out["files"]] == ["add", "update", "delete", "move"]
    assert snapshot(workspace) == {
        "m.py": b"def f():\n    x = 1\n    return x\n\n\ndef g():\n    x = 2\n    return x\n",
        "moved.txt": b"O\n",
        "new.txt": b"n\n",
    }
    assert tbd.render(env) == (
        "Applied patch to 4 file(s):\nA new.txt\nM m.py\nD gone.txt\nR old.txt -> moved.txt"
    )


# ----------------------------------------------------------------------------- permissions


@pytest.mark.parametrize("path", ["../escape.txt", "/tmp/escape-apply-patch.txt", "a/../../x"])
def test_path_outside_workspace_denied(tb: Toolbox, workspace: Path, path: str) -> None:
    (workspace / "keep.txt").write_text("k\n")
    before = snapshot(workspace)
    env = tb.run(
        "apply_patch",
        patch("*** Update File: keep.txt\n@@\n-k\n+K\n", f"*** Add File: {path}\n+x\n"),
    )
    err(env, "PERMISSION_DENIED")
    assert snapshot(workspace) == before
    assert not (workspace.parent / "escape.txt").exists()
    assert not Path("/tmp/escape-apply-patch.txt").exists()


def test_denied_write_on_one_file_of_three_changes_nothing(
    make_toolbox: Any, workspace: Path
) -> None:
    tb = make_toolbox(
        {"permissions": {"write:file": {"*": "allow", "*.lock": "deny"}}},
    )
    (workspace / "a.txt").write_text("a\n")
    (workspace / "poetry.lock").write_text("lock\n")
    before = snapshot(workspace)
    msg = err(
        tb.run(
            "apply_patch",
            patch(
                "*** Update File: a.txt\n@@\n-a\n+A\n",
                "*** Update File: poetry.lock\n@@\n-lock\n+LOCK\n",
                "*** Add File: c.txt\n+c\n",
            ),
        ),
        "PERMISSION_DENIED",
    )
    assert "poetry.lock" in msg
    assert snapshot(workspace) == before


def test_delete_needs_delete_permission(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    (workspace / "gone.txt").write_text("g\n")
    before = snapshot(workspace)
    msg = err(
        tb.run(
            "apply_patch",
            patch("*** Update File: a.txt\n@@\n-a\n+A\n", "*** Delete File: gone.txt\n"),
        ),
        "PERMISSION_DENIED",
    )
    assert "delete:file" in msg
    assert snapshot(workspace) == before
    # A move removes its source, so it needs delete permission too.
    err(
        tb.run("apply_patch", patch("*** Update File: a.txt\n*** Move to: b.txt\n")),
        "PERMISSION_DENIED",
    )
    assert snapshot(workspace) == before


class Approver:
    """A real asker: records each request, runs `meanwhile` (the user doing something
    while the question is open), then answers."""

    def __init__(self, answer: Answer, meanwhile: Any = None) -> None:
        self.answer, self.meanwhile = answer, meanwhile
        self.requests: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Answer:
        self.requests.append(request)
        if self.meanwhile is not None:
            self.meanwhile()
        return self.answer


def test_delete_is_asked_about_and_can_be_refused(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    (workspace / "gone.txt").write_text("g\n")
    before = snapshot(workspace)
    body = patch("*** Update File: a.txt\n@@\n-a\n+A\n", "*** Delete File: gone.txt\n")
    refuser = Approver("deny")
    err(
        make_toolbox(asker=refuser).run("apply_patch", body),
        "PERMISSION_DENIED",
    )
    assert snapshot(workspace) == before
    approver = Approver("once")
    ok(make_toolbox(asker=approver).run("apply_patch", body))
    assert [(r.permission, r.subject) for r in approver.requests] == [("delete:file", "gone.txt")]
    assert snapshot(workspace) == {"a.txt": b"A\n"}


def test_file_changed_while_waiting_for_approval(make_toolbox: Any, workspace: Path) -> None:
    """The plan is checked again before writing: a change made meanwhile is kept."""
    (workspace / "a.txt").write_text("a\n")
    (workspace / "gone.txt").write_text("g\n")
    approver = Approver("once", lambda: (workspace / "a.txt").write_text("a\nuser edit\n"))
    tb = make_toolbox(asker=approver)
    msg = err(
        tb.run(
            "apply_patch",
            patch("*** Update File: a.txt\n@@\n-a\n+A\n", "*** Delete File: gone.txt\n"),
        ),
        "CONFLICT",
    )
    assert "a.txt changed on disk" in msg
    assert snapshot(workspace) == {"a.txt": b"a\nuser edit\n", "gone.txt": b"g\n"}


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("please change the file", "line 1: expected '*** Begin Patch'"),
        ("*** Update File: a.txt\n@@\n-a\n+A\n*** End Patch", "line 1: expected '*** Begin"),
        ("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n=A\n*** End Patch", "line 5:"),
        ("*** Begin Patch\n*** Update File: a.txt\n*** End Patch", "has no hunks"),
    ],
)
def test_invalid_patches(tb: Toolbox, workspace: Path, text: str, says: str) -> None:
    (workspace / "a.txt").write_text("a\n")
    before = snapshot(workspace)
    assert says in err(tb.run("apply_patch", {"patch": text}), "INVALID_INPUT")
    assert snapshot(workspace) == before


def test_missing_argument_and_unknown_field(tb: Toolbox) -> None:
    assert "'patch'" in err(tb.run("apply_patch", {}), "INVALID_INPUT")
    err(tb.run("apply_patch", {"patch": "x", "path": "a"}), "INVALID_INPUT")


def test_same_path_twice(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\nb\n")
    msg = err(
        tb.run(
            "apply_patch",
            patch("*** Update File: a.txt\n@@\n-a\n+A\n", "*** Update File: ./a.txt\n@@\n-b\n+B\n"),
        ),
        "INVALID_INPUT",
    )
    assert "a.txt appears twice" in msg and "lines 2 and 6" in msg
    assert (workspace / "a.txt").read_text() == "a\nb\n"


def test_binary_and_directory_targets(tb: Toolbox, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02a\n")
    (workspace / "dir").mkdir()
    assert "binary" in err(
        tb.run("apply_patch", patch("*** Update File: blob.bin\n@@\n-a\n+b\n")), "INVALID_INPUT"
    )
    assert "directory" in err(
        tb.run("apply_patch", patch("*** Update File: dir\n@@\n-a\n+b\n")), "INVALID_INPUT"
    )
    assert (workspace / "blob.bin").read_bytes() == b"\x00\x01\x02a\n"


def test_not_utf8_is_refused(tb: Toolbox, workspace: Path) -> None:
    (workspace / "l1.txt").write_bytes("café\n".encode("latin-1"))
    msg = err(tb.run("apply_patch", patch("*** Update File: l1.txt\n@@\n+x\n")), "INVALID_INPUT")
    assert "UTF-8" in msg
    assert (workspace / "l1.txt").read_bytes() == "café\n".encode("latin-1")


# ----------------------------------------------------------------------------- not found


def test_update_or_delete_of_missing_file(tbd: Toolbox, workspace: Path) -> None:
    (workspace / "main.py").write_text("x\n")
    msg = err(tbd.run("apply_patch", patch("*** Update File: mian.py\n@@\n-x\n+y\n")), "NOT_FOUND")
    assert "mian.py does not exist" in msg and "main.py" in msg and "Add File" in msg
    msg = err(tbd.run("apply_patch", patch("*** Delete File: nope.txt\n")), "NOT_FOUND")
    assert "nope.txt does not exist" in msg


def test_hunk_not_found_shows_closest_and_changes_nothing(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    (workspace / "m.py").write_text(SOURCE)
    before = snapshot(workspace)
    msg = err(
        tb.run(
            "apply_patch",
            patch(
                "*** Update File: a.txt\n@@\n-a\n+A\n",
                "*** Update File: m.py\n@@\n def g():\n-    x = 2\n+    x = 3\n",
            ),
        ),
        "NOT_FOUND",
    )
    assert "Hunk 1 of m.py (patch line 7)" in msg
    assert "  |     x = 2" in msg
    assert "      6 | def g():" in msg
    assert snapshot(workspace) == before


# ----------------------------------------------------------------------------- conflict


def test_ambiguous_context_is_conflict(tb: Toolbox, workspace: Path) -> None:
    (workspace / "m.py").write_text(SOURCE)
    msg = err(
        tb.run("apply_patch", patch("*** Update File: m.py\n@@\n-    return x\n+    return 0\n")),
        "CONFLICT",
    )
    assert "matches 2 places" in msg and "lines 3, 8" in msg
    assert (workspace / "m.py").read_text() == SOURCE


def test_stale_file_is_conflict(tb: Toolbox, workspace: Path) -> None:
    path = workspace / "a.txt"
    path.write_text("a\n")
    ok(tb.run("read_file", {"path": "a.txt"}))
    path.write_text("a\nchanged elsewhere\n")
    msg = err(tb.run("apply_patch", patch("*** Update File: a.txt\n@@\n-a\n+A\n")), "CONFLICT")
    assert "read it again" in msg.lower() or "read_file" in msg
    assert path.read_text() == "a\nchanged elsewhere\n"
    ok(tb.run("read_file", {"path": "a.txt"}))
    ok(tb.run("apply_patch", patch("*** Update File: a.txt\n@@\n-a\n+A\n")))
    # What the patch wrote counts as seen: a second patch needs no new read.
    ok(tb.run("apply_patch", patch("*** Update File: a.txt\n@@\n-A\n+AA\n")))
    assert path.read_text() == "AA\nchanged elsewhere\n"


def test_add_or_move_onto_existing_file(tbd: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    before = snapshot(workspace)
    msg = err(tbd.run("apply_patch", patch("*** Add File: a.txt\n+x\n")), "ALREADY_EXISTS")
    assert "a.txt already exists" in msg and "Update File" in msg
    err(
        tbd.run("apply_patch", patch("*** Update File: a.txt\n*** Move to: b.txt\n")),
        "ALREADY_EXISTS",
    )
    assert snapshot(workspace) == before


def test_symlink_is_not_deleted_through(tbd: Toolbox, workspace: Path) -> None:
    (workspace / "target.txt").write_text("t\n")
    (workspace / "link.txt").symlink_to("target.txt")
    err(tbd.run("apply_patch", patch("*** Delete File: link.txt\n")), "INVALID_INPUT")
    assert (workspace / "target.txt").read_text() == "t\n"
    # Updating through the link changes the target and keeps the link.
    ok(tbd.run("apply_patch", patch("*** Update File: link.txt\n@@\n-t\n+T\n")))
    assert (workspace / "link.txt").is_symlink()
    assert (workspace / "target.txt").read_text() == "T\n"


# ----------------------------------------------------------------------------- edge cases


def test_crlf_file_stays_crlf(tb: Toolbox, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    ok(tb.run("apply_patch", patch("*** Update File: w.txt\n@@\n one\n-two\n+2\n+2b\n")))
    assert (workspace / "w.txt").read_bytes() == b"one\r\n2\r\n2b\r\nthree\r\n"


def test_bom_is_kept(tb: Toolbox, workspace: Path) -> None:
    (workspace / "b.txt").write_bytes(b"\xef\xbb\xbffirst\nsecond\n")
    ok(tb.run("apply_patch", patch("*** Update File: b.txt\n@@\n-first\n+1st\n")))
    assert (workspace / "b.txt").read_bytes() == b"\xef\xbb\xbf1st\nsecond\n"


def test_unicode_and_emoji(tb: Toolbox, workspace: Path) -> None:
    (workspace / "u.txt").write_text("héllo 🌍\nπ\n", encoding="utf-8")
    ok(
        tb.run(
            "apply_patch",
            patch(
                "*** Update File: u.txt\n@@\n-héllo 🌍\n+héllo 🌏 👋\n",
                "*** Add File: ü.txt\n+ü\n",
            ),
        )
    )
    assert (workspace / "u.txt").read_text(encoding="utf-8") == "héllo 🌏 👋\nπ\n"
    assert (workspace / "ü.txt").read_text(encoding="utf-8") == "ü\n"


def test_empty_file_and_empty_add(tb: Toolbox, workspace: Path) -> None:
    (workspace / "e.txt").write_bytes(b"")
    ok(tb.run("apply_patch", patch("*** Update File: e.txt\n@@\n+first line\n")))
    assert (workspace / "e.txt").read_bytes() == b"first line\n"
    ok(tb.run("apply_patch", patch("*** Add File: empty.txt\n")))
    assert (workspace / "empty.txt").read_bytes() == b""


def test_file_without_trailing_newline(tb: Toolbox, workspace: Path) -> None:
    (workspace / "n.txt").write_bytes(b"a\nb")
    out = ok(tb.run("apply_patch", patch("*** Update File: n.txt\n@@\n a\n-b\n+c\n")))
    assert (workspace / "n.txt").read_bytes() == b"a\nc"
    assert "\\ No newline at end of file" in out["diff"]


def test_trailing_whitespace_in_context(tb: Toolbox, workspace: Path) -> None:
    (workspace / "s.py").write_text("x = 1   \ny = 2\n")
    env = tb.run("apply_patch", patch("*** Update File: s.py\n@@\n x = 1\n-y = 2\n+y = 3\n"))
    out = ok(env)
    assert (workspace / "s.py").read_text() == "x = 1   \ny = 3\n"
    assert out["files"][0]["matched"] == "ignoring trailing whitespace"
    assert "(matched ignoring trailing whitespace)" in tb.render(env)


@pytest.mark.parametrize(
    "wrap",
    [
        "```diff\n{p}```\n",
        "apply_patch <<'EOF'\n{p}EOF\n",
        "{p}",  # plain, for comparison
    ],
)
def test_wrapped_patch(tb: Toolbox, workspace: Path, wrap: str) -> None:
    (workspace / "a.txt").write_text("a\n")
    text = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** End Patch\n"
    ok(tb.run("apply_patch", {"patch": wrap.format(p=text)}))
    assert (workspace / "a.txt").read_text() == "A\n"


def test_missing_end_patch(tb: Toolbox, workspace: Path) -> None:
    ok(tb.run("apply_patch", {"patch": "*** Begin Patch\n*** Add File: a.txt\n+a\n"}))
    assert (workspace / "a.txt").read_text() == "a\n"


# ----------------------------------------------------------------------------- all or nothing


def test_later_hunk_failure_leaves_earlier_files_untouched(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    before = snapshot(workspace)
    err(
        tb.run(
            "apply_patch",
            patch(
                "*** Update File: a.txt\n@@\n-a\n+A\n",
                "*** Add File: new/c.txt\n+c\n",
                "*** Update File: b.txt\n@@\n-nope\n+B\n",
            ),
        ),
        "NOT_FOUND",
    )
    assert snapshot(workspace) == before


def test_failure_midway_restores_every_file(tbd: Toolbox, workspace: Path) -> None:
    """The last write fails after three changes were made; all are undone.

    'blk' is added as a file, then 'blk/inner.txt' needs 'blk' to be a folder: no
    check before writing can see that, so the failure happens in the middle.
    """
    (workspace / "a.txt").write_bytes(b"a\r\nkeep\r\n")
    (workspace / "gone.txt").write_bytes(b"\xef\xbb\xbfdeleted\n")
    (workspace / "gone.txt").chmod(0o640)
    before = snapshot(workspace)
    msg = err(
        tbd.run(
            "apply_patch",
            patch(
                "*** Update File: a.txt\n@@\n-a\n+A\n",
                "*** Delete File: gone.txt\n",
                "*** Add File: deep/er/blk\n+now a file\n",
                "*** Add File: deep/er/blk/inner.txt\n+cannot be written\n",
            ),
        ),
        "NOT_FOUND",
    )
    assert "deep/er/blk/inner.txt" in msg
    assert "3 change(s) already made were undone" in msg
    assert snapshot(workspace) == before  # same bytes, and no 'deep' folders left
    if os.name == "posix":
        assert (workspace / "gone.txt").stat().st_mode & 0o777 == 0o640
