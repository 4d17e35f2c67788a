"""One exit-code convention for a command ended by a signal: the shell's, 128 + N.

Popen reports a process killed by SIGKILL as -9, while bash and bwrap report the same
death of their child as 137; a caller saw either depending on what wrapped the command
(the sandbox or not). Now exit_code is always 128 + N, and `signal` names N when
local-tools ended the command (process_kill, a timeout, a cancelled call), with
`killed_by` saying why.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from envelopes import ok
from local_tools import Toolbox
from local_tools.shell.process import RunningCommand, signal_name

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

ALLOW = {"permissions": {"execute:command": "allow"}}
NO_SANDBOX = {**ALLOW, "sandbox": {"mode": "off"}}


def _finished(tmp_path: Path, command: str) -> RunningCommand:
    cmd = RunningCommand(
        command,
        ["/bin/sh", "-c", command],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
        spill_dir=tmp_path / "spill",
        name="t",
    )
    assert cmd.wait(10)
    return cmd


@pytest.mark.parametrize(
    ("command", "code"),
    [
        ("kill -9 $$", 137),  # the shell itself dies: Popen says -9
        ("kill -TERM $$", 143),  # Popen: -15
        ("sh -c 'kill -9 $$'; exit $?", 137),  # the shell reports its child's death
        ("exit 137", 137),
        ("exit 3", 3),
    ],
)
def test_the_process_reports_128_plus_n(tmp_path: Path, command: str, code: int) -> None:
    cmd = _finished(tmp_path, command)
    assert cmd.exit_code == code
    # Not ended by local-tools: no signal claimed (137 may be a plain `exit 137`).
    assert signal_name(cmd.exit_code, killed=cmd.killed_by is not None) is None


@pytest.mark.parametrize("reason", ["kill", "timeout", "cancel"])
def test_killed_by_local_tools_is_137_sigkill(tmp_path: Path, reason: str) -> None:
    cmd = RunningCommand(
        "sleep 60",
        ["/bin/sh", "-c", "sleep 60"],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
        spill_dir=tmp_path / "spill",
        name="t",
    )
    cmd.kill(reason)
    assert cmd.wait(10)
    assert (cmd.exit_code, cmd.killed_by) == (137, reason)
    assert signal_name(cmd.exit_code, killed=True) == "SIGKILL"


@pytest.mark.parametrize("config", [ALLOW, NO_SANDBOX], ids=["sandbox", "no-sandbox"])
def test_exec_cmd_foreground_self_kill_is_137(make_toolbox: Any, config: Any) -> None:
    # Sandboxed, bwrap reports the death of its child (137); unsandboxed the shell itself
    # dies (Popen: -9). The caller sees the same answer either way.
    shell: Toolbox = make_toolbox(config)
    env = shell.run("exec_cmd", {"command": "echo before; kill -9 $$"})
    out = ok(env)
    assert out["exit_code"] == 137 and "signal" not in out
    assert out["stdout"] == "before\n"
    assert "exit code 137" in shell.render(env)


@pytest.mark.parametrize("config", [ALLOW, NO_SANDBOX], ids=["sandbox", "no-sandbox"])
def test_process_kill_is_137_sigkill(make_toolbox: Any, config: Any) -> None:
    shell: Toolbox = make_toolbox(config)
    started = ok(shell.run("exec_cmd", {"command": "sleep 60", "background": True}))
    killed = ok(shell.run("process_kill", {"process_id": started["process_id"]}))
    assert (killed["exit_code"], killed["signal"], killed["killed_by"]) == (137, "SIGKILL", "kill")
    listed = ok(shell.run("process_list", {}))["processes"]
    assert [(p["exit_code"], p["signal"]) for p in listed] == [(137, "SIGKILL")]
