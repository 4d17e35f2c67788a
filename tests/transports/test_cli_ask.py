"""The CLI asks on a real terminal (a pty): once, always (persisted), deny."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest


def run_on_pty(args: list[str], cwd: Path, state: Path, answer: str | None) -> tuple[int, str, str]:
    """Run the CLI with stdin/stderr on a pty, answer the prompt, return (rc, stdout, tty)."""
    master, slave = pty.openpty()
    env = {**os.environ, "LOCAL_TOOLS_STATE_DIR": str(state)}
    with subprocess.Popen(
        [sys.executable, "-m", "local_tools", *args],
        cwd=cwd,
        env=env,
        stdin=slave,
        stderr=slave,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        os.close(slave)
        seen = b""
        deadline = time.monotonic() + 30
        while answer is not None and b"[o]nce" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                seen += os.read(master, 4096)
        if answer is not None:
            os.write(master, answer.encode() + b"\n")
        stdout, _ = proc.communicate(timeout=30)
        while select.select([master], [], [], 0.1)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        os.close(master)
        return proc.returncode, stdout, seen.decode(errors="replace")


@pytest.fixture
def files(workspace: Path) -> Path:
    for name in ("a.txt", "b.txt", "c.txt"):
        (workspace / name).write_text(name)
    return workspace


def test_once_allows_this_call_only(files: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    rc, out, tty = run_on_pty(["call", "file_delete", "path=a.txt"], files, state, "o")
    assert "delete:file" in tty and "a.txt" in tty
    assert rc == 0, out
    assert json.loads(out)["output"]["deleted"] is True
    assert not (files / "a.txt").exists()
    # "once" is not remembered: the next delete asks again, and "d" refuses it.
    rc, out, tty = run_on_pty(["call", "file_delete", "path=b.txt"], files, state, "d")
    assert "[o]nce" in tty
    assert rc == 1
    assert json.loads(out)["error"]["error_code"] == "PERMISSION_DENIED"
    assert (files / "b.txt").exists()


def test_always_is_persisted_outside_the_workspace(files: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    rc, _, _ = run_on_pty(["call", "file_delete", "path=c.txt"], files, state, "a")
    assert rc == 0
    assert not (files / "c.txt").exists()
    approvals = list(state.rglob("approvals.json"))
    assert len(approvals) == 1
    assert files not in approvals[0].parents
    # The same subject again: no prompt, no answer needed.
    (files / "c.txt").write_text("again")
    rc, out, tty = run_on_pty(["call", "file_delete", "path=c.txt"], files, state, None)
    assert rc == 0, out
    assert "[o]nce" not in tty
    assert not (files / "c.txt").exists()
