"""exec_cmd through the Toolbox, with real subprocesses: results, limits, refusals, rules."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from envelopes import err, ok
from local_tools import Toolbox
from policy_calls import ScriptedAsker

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")

ALLOW = {"permissions": {"execute:command": "allow"}}
NO_SANDBOX = {**ALLOW, "sandbox": {"mode": "off"}}


@pytest.fixture
def shell(make_toolbox: Any) -> Toolbox:
    return make_toolbox(ALLOW)


def _alive(needle: str) -> list[psutil.Process]:
    """Live processes whose command line contains `needle` (a unique sleep duration)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if needle in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def _gone(needle: str, wait: float = 2.0) -> bool:
    deadline = time.monotonic() + wait
    while _alive(needle) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(needle)


def test_echo_works_out_of_the_box(tb: Toolbox) -> None:
    env = tb.run("exec_cmd", {"command": "echo hi"})
    out = ok(env)
    assert out["stdout"] == "hi\n"
    assert out["stderr"] == ""
    assert out["exit_code"] == 0
    assert out["duration_ms"] > 0
    assert tb.render(env).startswith("hi\n[exit code 0")


def test_cmd_alias_and_tool_aliases(shell: Toolbox) -> None:
    assert ok(shell.run("exec_cmd", {"cmd": "echo via cmd"}))["stdout"] == "via cmd\n"
    assert ok(shell.run("bash", {"command": "echo alias"}))["stdout"] == "alias\n"


def test_nonzero_exit_is_a_result_with_both_streams(shell: Toolbox) -> None:
    env = shell.run("exec_cmd", {"command": "echo out; echo oops >&2; exit 7"})
    out = ok(env)
    assert (out["stdout"], out["stderr"], out["exit_code"]) == ("out\n", "oops\n", 7)
    assert shell.render(env) == "out\n[stderr]\noops\n[exit code 7 · " + (
        f"{out['duration_ms']:.0f} ms]"
    )


def test_stdin_is_closed(shell: Toolbox) -> None:
    started = time.monotonic()
    out = ok(shell.run("exec_cmd", {"command": "read x; echo status=$?"}))
    assert out["stdout"] == "status=1\n"
    assert time.monotonic() - started < 5


def test_environment_is_non_interactive_and_takes_extra_variables(shell: Toolbox) -> None:
    out = ok(
        shell.run(
            "exec_cmd",
            {
                "command": 'echo "$CI $PAGER $GIT_PAGER $TERM $GIT_TERMINAL_PROMPT $MINE"',
                "env": {"MINE": "yes"},
            },
        )
    )
    assert out["stdout"] == "true cat cat dumb 0 yes\n"


def test_cwd_inside_the_workspace(shell: Toolbox, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    out = ok(shell.run("exec_cmd", {"command": "pwd", "cwd": "sub"}))
    assert out["stdout"].strip() == str((workspace / "sub").resolve())


def test_timeout_kills_the_tree_and_keeps_partial_output(shell: Toolbox) -> None:
    started = time.monotonic()
    env = shell.run(
        "exec_cmd",
        {"command": "echo started; setsid sleep 41.1 & sleep 41.1", "timeout": 0.5},
    )
    message = err(env, "TIMEOUT")
    assert time.monotonic() - started < 5
    assert "started" in message
    assert env["error"]["details"]["stdout"] == "started\n"
    assert _gone("41.1")


@pytest.mark.parametrize("config", [ALLOW, NO_SANDBOX], ids=["sandbox", "no-sandbox"])
def test_orphan_holding_the_pipe_does_not_hang(make_toolbox: Any, config: Any) -> None:
    shell = make_toolbox(config)
    started = time.monotonic()
    out = ok(shell.run("exec_cmd", {"command": "setsid sleep 42.2 & echo done"}))
    assert time.monotonic() - started < 5
    assert out["stdout"] == "done\n"
    if config is NO_SANDBOX:  # the sandbox's PID namespace ends them without us
        assert "background=true" in out["note"]
    assert _gone("42.2")


def test_cancel_kills_the_tree(shell: Toolbox) -> None:
    async def main() -> None:
        task = asyncio.ensure_future(shell.arun("exec_cmd", {"command": "sleep 43.3"}))
        await asyncio.sleep(0.5)
        assert _alive("43.3")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert _gone("43.3")


def test_large_output_is_bounded_and_saved_whole(shell: Toolbox) -> None:
    command = "head -c 300000 /dev/zero | tr '\\0' 'y'; echo; seq 1 3000; echo TAIL"
    out = ok(shell.run("exec_cmd", {"command": command}))
    assert out["truncated"] is True
    assert out["stdout"].startswith("yyyy")
    assert out["stdout"].endswith("2999\n3000\nTAIL\n")
    assert "output cut" in out["stdout"]
    assert len(out["stdout"].encode()) <= 51200
    saved = Path(out["stdout_path"]).read_bytes()
    assert saved.startswith(b"y" * 300000 + b"\n1\n2\n")
    assert saved.endswith(b"3000\nTAIL\n")
    # The saved file can be paged with read_file, as the preview says.
    page = ok(shell.run("read_file", {"path": out["stdout_path"], "offset": 3000, "limit": 3}))
    assert page["content"] == "2999\n3000\nTAIL\n"


def test_yield_after_hands_back_a_background_process(shell: Toolbox) -> None:
    command = "echo first; sleep 1.5; echo second"
    out = ok(shell.run("exec_cmd", {"command": command, "yield_after": 0.4}))
    assert out["status"] == "running"
    assert out["stdout"] == "first\n"
    pid = out["process_id"]
    later = ok(shell.run("process_output", {"process_id": pid, "block": True, "timeout": 10}))
    assert later["status"] == "exited"
    assert later["exit_code"] == 0
    assert later["stdout"] == "second\n"


def test_remote_transports_yield_by_default(shell: Toolbox, monkeypatch: Any) -> None:
    from local_tools.tools import exec_cmd as module

    monkeypatch.setattr(module, "REMOTE_YIELD_AFTER", 0.3)
    remote = ok(asyncio.run(shell.arun("exec_cmd", {"command": "sleep 1"}, transport="mcp")))
    assert remote["status"] == "running"
    local = ok(shell.run("exec_cmd", {"command": "sleep 1"}))
    assert local["exit_code"] == 0


@pytest.mark.parametrize(
    ("command", "advice"),
    [
        ("vim notes.txt", "edit"),
        ("nano notes.txt", "edit"),
        ("less README.md", "cat"),
        ("top", "-b"),
        ("python3", "background"),
        ("node", "background"),
        ("git commit", "-m"),
        ("git rebase -i HEAD~2", ""),
        ("ssh example.org", "background"),
    ],
)
def test_interactive_programs_are_refused_before_anything_runs(
    shell: Toolbox, workspace: Path, command: str, advice: str
) -> None:
    message = err(shell.run("exec_cmd", {"command": f"touch ran && {command}"}), "INVALID_INPUT")
    assert "terminal" in message
    assert advice in message
    assert not (workspace / "ran").exists()


def test_repl_in_the_background_driven_by_process_input(shell: Toolbox) -> None:
    started = ok(shell.run("exec_cmd", {"command": "python3 -i -q", "background": True}))
    pid = started["process_id"]
    answer = ok(shell.run("process_input", {"process_id": pid, "input": "print(6 * 7)"}))
    assert answer["stdout"] == "42\n"
    assert answer["status"] == "running"
    answer = ok(shell.run("process_input", {"process_id": pid, "input": "x = 5"}))
    assert answer["stdout"] == ""
    answer = ok(shell.run("process_input", {"process_id": pid, "input": "x * 2"}))
    assert answer["stdout"] == "10\n"
    ok(shell.run("process_input", {"process_id": pid, "input": "exit()"}))
    final = ok(shell.run("process_output", {"process_id": pid, "block": True, "timeout": 5}))
    assert final["status"] == "exited"


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        ({"command": ""}, "INVALID_INPUT", "empty"),
        ({"command": "   "}, "INVALID_INPUT", "empty"),
        ({"command": "echo a\0b"}, "INVALID_INPUT", "NUL"),
        ({"command": "echo a\ud800"}, "INVALID_INPUT", "surrogate"),
        ({"command": "echo hi", "cwd": "../.."}, "PERMISSION_DENIED", ""),
        ({"command": "echo hi", "cwd": "missing"}, "NOT_FOUND", ""),
        ({"command": "echo hi", "env": {"X": "y" * 200_000}}, "INVALID_INPUT", "env"),
        ({"command": "echo hi", "env": {"A=B": "1"}}, "INVALID_INPUT", "env"),
        ({"command": "echo hi", "timeout": 601}, "INVALID_INPUT", "timeout"),
        ({"command": "echo hi", "timeout": 0}, "INVALID_INPUT", "timeout"),
        ({}, "INVALID_INPUT", "command"),
    ],
)
def test_bad_input_runs_nothing(
    shell: Toolbox, workspace: Path, args: dict[str, Any], code: str, fragment: str
) -> None:
    if "command" in args:
        args = {**args, "command": args["command"].replace("echo hi", "touch ran")}
    message = err(shell.run("exec_cmd", args), code)
    assert fragment in message
    assert not (workspace / "ran").exists()


def test_commands_that_ask_are_denied_without_an_asker(tb: Toolbox, workspace: Path) -> None:
    (workspace / "x").write_text("keep")
    message = err(tb.run("exec_cmd", {"command": "ls && rm x"}), "PERMISSION_DENIED")
    assert '"rm x"' in message
    assert (workspace / "x").read_text() == "keep"


def test_broad_allow_still_asks_for_destructive_commands(shell: Toolbox, workspace: Path) -> None:
    (workspace / "d").mkdir()
    err(shell.run("exec_cmd", {"command": "rm -rf d"}), "PERMISSION_DENIED")
    err(shell.run("exec_cmd", {"command": "echo $(rm -rf d)"}), "PERMISSION_DENIED")
    err(shell.run("exec_cmd", {"command": "sh -c 'rm -rf d'"}), "PERMISSION_DENIED")
    assert (workspace / "d").is_dir()


def test_asker_sees_each_simple_command(make_toolbox: Any, workspace: Path) -> None:
    asker = ScriptedAsker("once")
    tb = make_toolbox(asker=asker)
    out = ok(tb.run("exec_cmd", {"command": "ls | sort -o out.txt; echo done"}))
    assert out["stdout"] == "done\n"
    asked = [r.subject for r in asker.requests]
    assert asked == ["sort -o out.txt"]  # ls and echo are read-only: not asked


def test_always_answer_remembers_only_what_was_shown(make_toolbox: Any, workspace: Path) -> None:
    asker = ScriptedAsker("always")
    tb = make_toolbox(asker=asker)
    (workspace / "a").write_text("")
    ok(tb.run("exec_cmd", {"command": "touch b && ls"}))
    assert [r.subject for r in asker.requests] == ["touch b"]
    ok(tb.run("exec_cmd", {"command": "touch b"}))  # remembered: no question
    # ... but nothing broader was approved.
    err(tb.run("exec_cmd", {"command": "touch c"}), "PERMISSION_DENIED")


def test_paths_outside_the_workspace_ask(tb: Toolbox, make_toolbox: Any) -> None:
    message = err(tb.run("exec_cmd", {"command": "cat /etc/hostname"}), "PERMISSION_DENIED")
    assert "external:file" in message
    allowed = make_toolbox({"permissions": {"external:file": {"/etc/*": "allow"}}})
    assert ok(allowed.run("exec_cmd", {"command": "cat /etc/hostname"}))["exit_code"] == 0
    # Inside the workspace no question: relative and absolute alike.
    assert ok(tb.run("exec_cmd", {"command": "ls ."}))["exit_code"] == 0


def test_unparseable_command_asks(tb: Toolbox) -> None:
    message = err(tb.run("exec_cmd", {"command": "echo 'unterminated"}), "PERMISSION_DENIED")
    assert "not understood" in message


def test_close_kills_background_processes(make_toolbox: Any) -> None:
    tb = make_toolbox(ALLOW)
    ok(tb.run("exec_cmd", {"command": "sleep 44.4", "background": True}))
    assert _alive("44.4")
    tb.close()
    assert _gone("44.4")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_git_in_a_hostile_repository_runs_no_configured_code(
    tb: Toolbox, workspace: Path, tmp_path: Path
) -> None:
    _git(workspace, "init", "-q")
    _git(workspace, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
         "--allow-empty", "-m", "init")  # fmt: skip
    marker = workspace / "pwned"
    _git(workspace, "config", "core.fsmonitor", f"touch {marker}; false")
    _git(workspace, "config", "diff.external", f"sh -c 'touch {marker}'")
    (workspace / "f.txt").write_text("x\n")
    # Allowed by default, so no one is asked: the repository must not get to run anything.
    out = ok(tb.run("exec_cmd", {"command": "git status --short && git diff"}))
    assert out["exit_code"] == 0, out["stderr"]
    assert "f.txt" in out["stdout"]
    assert not marker.exists()


def test_git_config_the_environment_cannot_override_asks(tb: Toolbox, workspace: Path) -> None:
    _git(workspace, "init", "-q")
    _git(workspace, "config", "remote.origin.uploadpack", "touch pwned; git-upload-pack")
    message = err(tb.run("exec_cmd", {"command": "git status"}), "PERMISSION_DENIED")
    assert "uploadpack" in message
