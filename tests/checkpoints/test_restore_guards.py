"""Restore's guards from the attack review (#24): what changes while the person answers,
links above a path even when forced, other sessions' and the person's edits in between,
other users' checkpoints, the CLI's confirmed plan, large blobs, retention's edges.

Real files, a real shell, the toolbox's own tools; no mocks."""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.checkpoints import pinned
from local_tools.checkpoints.restore import apply_plan, plan_restore
from local_tools.checkpoints.retention import collect
from local_tools.checkpoints.store import Checkpoints
from local_tools.interact.base import Answer, PermissionRequest
from local_tools.interact.confirmed import ConfirmedAsker
from local_tools.security.jail import Jail
from local_tools.transports.cli_checkpoints import run_undo

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks and shell")

S = {"user_id": "u", "session_id": "S"}


class SwappingAsker:
    """Approves; on the first delete question, runs `swap` (what a background process
    could do while the person reads the question)."""

    def __init__(self, swap: Any) -> None:
        self.swap = swap
        self.done = False

    async def ask(self, request: PermissionRequest) -> Answer:
        if request.permission == "delete:file" and not self.done:
            self.done = True
            self.swap()
        return "once"


def ids(tb: Toolbox, **who: Any) -> list[int]:
    """This session's checkpoints, oldest first."""
    found = ok(tb.run("checkpoint_list", {"limit": 200}, **who))["checkpoints"]
    return sorted(int(cp["id"]) for cp in found)


def git_init(ws: Path) -> None:
    subprocess.run(["git", "init", "-q", str(ws)], check=True)


def test_a_folder_swapped_for_a_link_during_the_ask_is_not_written_through(
    make_toolbox: Any, workspace: Path
) -> None:
    git_init(workspace)
    ws = workspace

    def swap() -> None:
        os.rename(ws / "a", ws / "a.old")
        os.symlink(".git/hooks", ws / "a")

    tb = make_toolbox(asker=SwappingAsker(swap))
    ok(tb.run("write_file", {"path": "a/pre-commit", "content": "#!/bin/sh\necho x\n"}, **S))
    ok(tb.run("write_file", {"path": "a/pre-commit", "content": "ok\n", "overwrite": True}, **S))
    ok(tb.run("write_file", {"path": "b/new.txt", "content": "n\n"}, **S))
    out = ok(tb.run("restore", {"checkpoint": ids(tb, **S)[1]}, **S))
    why = out["failed"][str(ws / "a/pre-commit")]
    assert "changed during the restore" in why and "symlink" in why
    assert not (ws / ".git/hooks/pre-commit").exists()
    assert not (ws / "b/new.txt").exists()  # the rest of the plan was carried out


def test_a_folder_swapped_between_the_check_and_the_write_is_not_written_through(
    make_toolbox: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race a process running beside the restore could win: the folder becomes a
    link to .git/hooks after the step's last check, before its write."""
    git_init(workspace)
    ws = workspace
    tb = make_toolbox()
    ok(tb.run("write_file", {"path": "a/pre-commit", "content": "#!/bin/sh\necho x\n"}, **S))
    ok(tb.run("write_file", {"path": "a/pre-commit", "content": "ok\n", "overwrite": True}, **S))
    real_parent = pinned.pinned_parent

    def swap_then_open(root: Path, rel: str, *, make: bool) -> Any:
        os.rename(ws / "a", ws / "a.old")  # after every check of the step: the race
        os.symlink(".git/hooks", ws / "a")
        return real_parent(root, rel, make=make)

    monkeypatch.setattr(pinned, "pinned_parent", swap_then_open)
    out = ok(tb.run("restore", {"checkpoint": ids(tb, **S)[1]}, **S))
    assert "a folder above it is not a folder now" in out["failed"][str(ws / "a/pre-commit")]
    assert not (ws / ".git/hooks/pre-commit").exists()
    assert (ws / "a.old/pre-commit").read_text() == "ok\n"


def test_a_file_changed_during_the_ask_is_left_as_it_is(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "keep.txt").write_text("v0\n")
    tb = make_toolbox(asker=SwappingAsker(lambda: (workspace / "keep.txt").write_text("mine\n")))
    ok(tb.run("write_file", {"path": "keep.txt", "content": "v1\n", "overwrite": True}, **S))
    ok(tb.run("write_file", {"path": "gone.txt", "content": "x\n"}, **S))
    out = ok(tb.run("restore", {"checkpoint": ids(tb, **S)[0]}, **S))
    assert "changed during the restore" in out["failed"][str(workspace / "keep.txt")]
    assert (workspace / "keep.txt").read_text() == "mine\n"


def test_force_never_writes_through_a_symlinked_folder(make_toolbox: Any, workspace: Path) -> None:
    git_init(workspace)
    tb = make_toolbox(config={"permissions": {"execute:command": {"*": "allow"}}})
    ok(tb.run("write_file", {"path": "a/pre-commit", "content": "#!/bin/sh\n"}, **S))
    ok(tb.run("write_file", {"path": "a/pre-commit", "content": "ok\n", "overwrite": True}, **S))
    cid = ids(tb, **S)[1]
    ok(tb.run("exec_cmd", {"command": "mv a a.old && ln -s .git/hooks a"}, **S))
    asker = ConfirmedAsker(("write:file", "delete:file"), who="terminal")
    args = {"checkpoint": cid, "force": True, "all_sessions": True}
    out = ok(tb.run("restore", args, asker=asker, transport="cli"))
    assert "never written through" in out["failed"][str(workspace / "a/pre-commit")]
    assert not (workspace / ".git/hooks/pre-commit").exists()


def test_another_sessions_change_in_between_is_a_conflict(
    make_toolbox: Any, workspace: Path
) -> None:
    tb = make_toolbox()
    a, b = {"user_id": "u", "session_id": "A"}, {"user_id": "u", "session_id": "B"}
    (workspace / "f.txt").write_text("1\n")
    for text, who in (("1 B\n", b), ("1 B\nA's work\n", a), ("1 B\nA's work\nB\n", b)):
        ok(tb.run("write_file", {"path": "f.txt", "content": text, "overwrite": True}, **who))
    message = err(tb.run("restore", {"checkpoint": ids(tb, **b)[0]}, **b), "CONFLICT")
    assert "changed since by checkpoint 2" in message
    assert "A's work" in (workspace / "f.txt").read_text()


def test_an_edit_by_hand_between_two_calls_is_a_conflict(
    make_toolbox: Any, workspace: Path
) -> None:
    tb = make_toolbox(config={"permissions": {"execute:command": {"*": "allow"}}})
    (workspace / "notes.md").write_text("v0\n")
    ok(tb.run("write_file", {"path": "notes.md", "content": "v0\nm1\n", "overwrite": True}, **S))
    (workspace / "notes.md").write_text("v0\nm1\nBY HAND\n")
    ok(tb.run("exec_cmd", {"command": "echo m2 >> notes.md"}, **S))
    first, second = ids(tb, **S)
    message = err(tb.run("restore", {"checkpoint": first}, **S), "CONFLICT")
    assert f"changed outside local-tools between checkpoints {first} and {second}" in message
    assert "BY HAND" in (workspace / "notes.md").read_text()
    ok(tb.run("restore", {"checkpoint": second}, **S))  # the last call alone: no conflict
    assert (workspace / "notes.md").read_text() == "v0\nm1\nBY HAND\n"


def test_all_sessions_is_this_users_sessions_and_the_person_sees_everyone(
    make_toolbox: Any, workspace: Path
) -> None:
    tb = make_toolbox()
    alice, mallory = {"user_id": "alice", "session_id": "s1"}, {"user_id": "mallory"}
    ok(tb.run("write_file", {"path": "plan.txt", "content": "alice's\n"}, **alice))
    every = {"all_sessions": True}
    assert ok(tb.run("checkpoint_list", every, **mallory))["checkpoints"] == []
    err(tb.run("checkpoint_diff", {"checkpoint": 1, **every}, **mallory), "NOT_FOUND")
    err(tb.run("restore", {"checkpoint": 1, **every}, **mallory), "NOT_FOUND")
    assert (workspace / "plan.txt").exists()
    own = ok(tb.run("checkpoint_list", every, user_id="alice", session_id="s2"))["checkpoints"]
    assert [cp["user"] for cp in own] == ["alice"]
    person = ok(tb.run("checkpoint_list", every, transport="cli"))["checkpoints"]
    assert [cp["user"] for cp in person] == ["alice"]


def test_cli_undo_stops_when_the_plan_changed_while_the_person_read_it(
    make_toolbox: Any, workspace: Path
) -> None:
    tb = make_toolbox()
    agent = {"user_id": "default", "session_id": "agent"}
    ok(tb.run("write_file", {"path": "old.txt", "content": "undo me\n"}, **agent))

    class SlowPerson(io.StringIO):
        def isatty(self) -> bool:
            return True

        def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
            ok(tb.run("write_file", {"path": "precious.txt", "content": "new\n"}, **agent))
            return "y\n"

    ns = argparse.Namespace(n=1, to=None, paths=None, force=False, yes=False)
    out = io.StringIO()
    assert run_undo(tb, ns, out=out, stdin=SlowPerson()) == 1
    assert "The plan changed since you looked" in out.getvalue()
    assert (workspace / "precious.txt").exists() and (workspace / "old.txt").exists()


def test_a_large_change_is_described_not_counted(cptb: Toolbox, workspace: Path) -> None:
    big = "x" * (3 << 20)
    ok(cptb.run("write_file", {"path": "big.txt", "content": big}, **S))
    (cp,) = ok(cptb.run("checkpoint_list", {}, **S))["checkpoints"]
    assert cp["files"][0]["added"] is None and cp["added"] == 0
    assert "(binary or large)" in cptb.render(cptb.run("checkpoint_list", {}, **S))
    diff = ok(cptb.run("checkpoint_diff", {"checkpoint": cp["id"]}, **S))["diff"]
    assert "Large file created (0 -> 3145728 bytes)" in diff
    ok(cptb.run("write_file", {"path": "big.txt", "content": "small\n", "overwrite": True}, **S))
    ok(cptb.run("restore", {"checkpoint": ids(cptb, **S)[-1]}, **S))  # the real bytes back
    assert (workspace / "big.txt").read_text() == big


def test_retention_with_nothing_to_keep_and_a_call_in_flight(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "report.txt").write_text("the only copy\n")
    cps = Checkpoints(tmp_path / "cp", Jail(ws), max_bytes=10 << 20, watch=False)
    who: dict[str, Any] = {"user_id": "u", "session": None, "owner": "o"}
    try:
        old = cps.begin(["old.bin"], call_id="c0", tool="write_file", **who)
        (ws / "old.bin").write_bytes(b"o" * 1000)
        cps.end(old)
        cps.history.forget_before(time.time() + 1)  # every checkpoint expired
        pending = cps.begin(["report.txt"], call_id="c1", tool="write_file", **who)
        for _ in range(2):  # nothing to keep: no mktree, and it runs again
            collect(cps, keep_days=14, max_size_mb=2048)
        (ws / "report.txt").write_text("overwritten\n")
        cid = cps.end(pending)
        assert cid is not None
        _done, failed = apply_plan(cps, plan_restore(cps, cid, owner="o"), force=False)
        assert failed == {}
        assert (ws / "report.txt").read_text() == "the only copy\n"
    finally:
        cps.close()


def test_console_refuses_a_restore_whose_steps_changed_since_shown(
    tb: Toolbox, workspace: Path
) -> None:
    from transports.test_web_console import serve_console

    ok(tb.run("write_file", {"path": "notes.txt", "content": "one\n"}, session_id="a"))
    (cid,) = ids(tb, session_id="a")
    api = f"/console/api/checkpoints/{cid}"
    with serve_console(tb) as console, console.client() as c:
        shown = c.post(f"{api}/plan", json={}).json()
        (workspace / "notes.txt").write_text("mine\n")  # same calls, now a conflict
        refused = c.post(f"{api}/restore", json={"undone": shown["undone"], "force": True})
        assert refused.status_code == 409 and refused.json()["code"] == "PLAN_CHANGED"
        assert (workspace / "notes.txt").read_text() == "mine\n"
        # The page showed the new plan (with its conflict); confirmed, forced, it runs.
        done = c.post(f"{api}/restore", json={"undone": shown["undone"], "force": True})
        assert done.status_code == 200, done.text
    assert not (workspace / "notes.txt").exists()
