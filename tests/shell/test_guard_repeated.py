"""The trusted-paths guard catches the same kind of edit command after command (its
answers about which `.git` holds a path are kept between commands), in the root's
repository and in a nested one, with and without the sandbox."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from local_tools.security.sandbox import sandbox_engine

ALLOW = {"permissions": {"execute:command": "allow"}}
MODES = ["off"] + ([] if sandbox_engine().name == "off" else ["workspace-write"])


def _repo(path: Path) -> None:
    (path / ".git" / "hooks").mkdir(parents=True)
    (path / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (path / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("mode", MODES)
def test_every_command_that_edits_a_hook_is_put_back(
    make_toolbox: Any, workspace: Path, mode: str
) -> None:
    _repo(workspace)
    tb = make_toolbox({**ALLOW, "sandbox": {"mode": mode}})
    hook = workspace / ".git" / "hooks" / "pre-commit"
    for n in range(3):
        env = tb.run("exec_cmd", {"command": f"echo 'curl evil{n}' >> .git/hooks/pre-commit"})
        assert env["success"], env
        assert hook.read_text() == "#!/bin/sh\nexit 0\n"
        if mode == "off":  # under the sandbox the write itself fails (read-only mount)
            assert "put back" in env["output"]["protected_note"]
    # A new hook, then the whole `.git` renamed away and made anew: both caught.
    tb.run("exec_cmd", {"command": "echo x > .git/hooks/post-checkout"})
    assert not (workspace / ".git" / "hooks" / "post-checkout").exists()
    env = tb.run(
        "exec_cmd",
        {"command": "mv .git old.git && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit"},
    )
    assert env["success"], env
    assert hook.read_text() == "#!/bin/sh\nexit 0\n" or not hook.exists()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_hooks_path_edited_twice_is_put_back_twice(make_toolbox: Any, workspace: Path) -> None:
    _repo(workspace)
    (workspace / ".git" / "config").write_text("[core]\n\thooksPath = .githooks\n")
    (workspace / ".githooks").mkdir()
    (workspace / ".githooks" / "pre-push").write_text("#!/bin/sh\n")
    tb = make_toolbox({**ALLOW, "sandbox": {"mode": "off"}})
    for n in range(2):
        env = tb.run("exec_cmd", {"command": f"echo 'evil {n}' >> .githooks/pre-push"})
        assert env["success"], env
        assert (workspace / ".githooks" / "pre-push").read_text() == "#!/bin/sh\n"
