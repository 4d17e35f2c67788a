"""Issue 20 re-attack F8: git commands nobody approved do not read repositories outside
the roots.

The workspace inside a bigger repository (`git show HEAD:../secret.txt`), a `.git` file
whose `gitdir:` names another repository, a `core.worktree` outside, a `commondir` that
leads elsewhere: each asks (nobody is there to approve, so it is refused) and the canary
is not printed. A repository of the workspace's own, even inside a bigger one, does not
ask. Real Toolbox, bash and git.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CANARY = "CANARY-b41e"


def git(cwd: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(
        ["git", "-c", "user.email=u@e", "-c", "user.name=u", *args],
        cwd=cwd, env=env, check=True, capture_output=True,
    )  # fmt: skip


def repository(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "first")
    return path


def printed(envelope: dict[str, Any]) -> str:
    if not envelope["success"]:
        return str(envelope["error"].get("message", ""))
    out = envelope["output"]
    return str(out.get("stdout", "")) + str(out.get("stderr", ""))


@pytest.mark.parametrize(
    "command",
    ["git show HEAD:../secret.txt", "git log -p", "git log -p -- ..", "git grep -e CANARY ..",
     "git diff HEAD~0 -- ../secret.txt"],
)  # fmt: skip
def test_workspace_inside_a_bigger_repository(
    make_toolbox: Any, tmp_path: Path, command: str
) -> None:
    big = repository(tmp_path / "big", {"secret.txt": f"{CANARY}\n", "ws/a.txt": "a\n"})
    tb = make_toolbox(workspace=big / "ws")
    out = tb.run("exec_cmd", {"command": command})
    assert CANARY not in printed(out)
    assert not out["success"]


def test_a_git_file_naming_another_repository(make_toolbox: Any, tmp_path: Path) -> None:
    other = repository(tmp_path / "other", {"secret.txt": f"{CANARY}\n"})
    ws = tmp_path / "ws"
    (ws / ".git").write_text(f"gitdir: {other / '.git'}\n")
    tb = make_toolbox(workspace=ws)
    for command in ("git log -p", "git show HEAD", "git show HEAD:secret.txt"):
        out = tb.run("exec_cmd", {"command": command})
        assert CANARY not in printed(out), command
        assert not out["success"]


def test_core_worktree_outside(make_toolbox: Any, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.txt").write_text(f"{CANARY}\n")
    ws = repository(tmp_path / "ws", {"a.txt": "a\n"})
    git(ws, "config", "core.worktree", str(elsewhere))
    tb = make_toolbox()
    for command in ("git diff", "git status", "git diff --stat"):
        out = tb.run("exec_cmd", {"command": command})
        assert CANARY not in printed(out), command
        assert not out["success"]


def test_own_repository_inside_a_bigger_one_does_not_ask(make_toolbox: Any, tmp_path: Path) -> None:
    big = repository(tmp_path / "big", {"secret.txt": f"{CANARY}\n"})
    ws = repository(big / "ws", {"a.txt": "a\n"})
    tb = make_toolbox(workspace=ws)
    out = tb.run("exec_cmd", {"command": "git log --format=%s"})
    assert out["success"], out
    assert out["output"]["stdout"] == "first\n"
    out = tb.run("exec_cmd", {"command": "git show HEAD:../secret.txt"})
    assert CANARY not in printed(out)


def test_a_linked_worktree_does_not_ask(make_toolbox: Any, tmp_path: Path) -> None:
    """`git worktree add`: the main repository is elsewhere, and names this one back."""
    main = repository(tmp_path / "main", {"a.txt": "a\n"})
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"))
    tb = make_toolbox(workspace=tmp_path / "wt")
    out = tb.run("exec_cmd", {"command": "git log --format=%s"})
    assert out["success"], out
    assert out["output"]["stdout"] == "first\n"


def test_a_git_file_naming_another_repositorys_worktree(make_toolbox: Any, tmp_path: Path) -> None:
    """A git dir of someone else's worktree names that worktree back, not this folder."""
    other = repository(tmp_path / "other", {"secret.txt": f"{CANARY}\n"})
    git(other, "worktree", "add", "-q", str(tmp_path / "theirs"))
    gitdir = next((other / ".git" / "worktrees").iterdir())
    ws = tmp_path / "ws"
    (ws / ".git").write_text(f"gitdir: {gitdir}\n")
    tb = make_toolbox(workspace=ws)
    out = tb.run("exec_cmd", {"command": "git show HEAD:secret.txt"})
    assert CANARY not in printed(out)
    assert not out["success"]
