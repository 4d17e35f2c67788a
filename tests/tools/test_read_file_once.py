"""read_file opens the file in the resolution its permission check is made on: a path
swapped for a symlink between the check and the read cannot redirect the read, and
nothing opened for a call that is refused stays open."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools.security.policy import Policy

DENY_SECRET = {"permissions": {"read:file": {"*": "allow", "secret.txt": "deny"}}}


def _swap_after_check(monkeypatch: pytest.MonkeyPatch, workspace: Path) -> None:
    """Right after the policy decides, notes.txt becomes a symlink to secret.txt."""
    check = Policy.check

    def check_then_swap(self: Policy, *args: Any, **kwargs: Any) -> Any:
        answer = check(self, *args, **kwargs)
        notes = workspace / "notes.txt"
        notes.unlink()
        notes.symlink_to("secret.txt")
        return answer

    monkeypatch.setattr(Policy, "check", check_then_swap)


def test_a_symlink_swapped_in_after_the_check_is_not_read(
    make_toolbox: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "secret.txt").write_text("the secret\n")
    (workspace / "notes.txt").write_text("plain notes\n")
    tb = make_toolbox(DENY_SECRET)
    _swap_after_check(monkeypatch, workspace)
    out = tb.run("read_file", {"path": "notes.txt"})
    # The file the check was made on, or a refusal; never the denied file's text.
    if out["success"]:
        assert ok(out)["content"] == "plain notes\n"
    assert "the secret" not in repr(out)
    assert (workspace / "notes.txt").is_symlink()
    # Read again now that it is a symlink: the check sees where it leads.
    monkeypatch.undo()
    assert err(tb.run("read_file", {"path": "notes.txt"}), "PERMISSION_DENIED")


def test_the_denied_file_itself_is_refused(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "secret.txt").write_text("the secret\n")
    (workspace / "link.txt").symlink_to("secret.txt")
    tb = make_toolbox(DENY_SECRET)
    for path in ("secret.txt", "link.txt", "./sub/../secret.txt"):
        out = tb.run("read_file", {"path": path})
        assert err(out, "PERMISSION_DENIED")
        assert "the secret" not in repr(out)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd")
def test_a_refused_call_leaves_no_file_open(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "secret.txt").write_text("the secret\n")
    tb = make_toolbox(DENY_SECRET)
    tb.run("read_file", {"path": "secret.txt"})  # warm up: audit database, caches
    gc.collect()
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        assert err(tb.run("read_file", {"path": "secret.txt"}), "PERMISSION_DENIED")
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_hanging(make_toolbox: Any, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    tb = make_toolbox()
    assert "special file" in err(tb.run("read_file", {"path": "pipe"}), "INVALID_INPUT")


def test_missing_and_directory_paths_report_as_before(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "dir").mkdir()
    (workspace / "readme.txt").write_text("hi\n")
    tb = make_toolbox()
    assert "readme.txt" in err(tb.run("read_file", {"path": "readme.tx"}), "NOT_FOUND")
    assert "directory" in err(tb.run("read_file", {"path": "dir"}), "INVALID_INPUT")
