"""The public surface: what `import local_tools` promises, and the guide's tool_runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import local_tools
from envelopes import err, ok
from local_tools import tool_runner


def test_public_names_pinned() -> None:
    assert sorted(local_tools.__all__) == sorted(
        ["Args", "ErrorCode", "Hints", "Tool", "ToolContext", "ToolError", "Toolbox", "tool"]
    )


def test_tool_runner_run_as_in_the_guide(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "notes.txt").write_text("guide\n")
    monkeypatch.chdir(workspace)
    env = tool_runner.run({"tool": "FileRead", "args": {"path": "notes.txt"}, "user_id": "alice"})
    assert ok(env)["content"] == "guide\n"
    env = tool_runner.run(
        {"tool": "FileWrite", "args": {"path": "n.txt", "content": "x"}, "user_id": "alice"}
    )
    assert ok(env)["created"] is True
    # The guide's old spelling, user_id inside args, still runs (as the default user).
    env = tool_runner.run({"tool": "FileRead", "args": {"path": "notes.txt", "user_id": "alice"}})
    assert ok(env)["content"] == "guide\n"
    err(
        tool_runner.run({"tool": "ListDirectory", "args": {"path": ".."}, "user_id": "a"}),
        "PERMISSION_DENIED",
    )


def test_tool_runner_bad_requests() -> None:
    err(tool_runner.run({"args": {}}), "INVALID_INPUT")
    err(tool_runner.run("read_file"), "INVALID_INPUT")  # type: ignore[arg-type]
    missing = os.path.join(os.sep, "no", "such", "workspace")
    err(tool_runner.run({"tool": "FileRead", "workspace": missing, "args": {}}), "INVALID_INPUT")


def test_tool_runner_host_user_id_wins(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "payroll.txt").write_text("top secret")
    (workspace / "local-tools.toml").write_text('[users.guest.permissions]\n"read:file" = "deny"\n')
    monkeypatch.chdir(workspace)
    request = {
        "tool": "read_file",
        "user_id": "guest",
        "args": {"path": "payroll.txt", "user_id": "default"},
    }
    env = tool_runner.run(request)
    err(env, "PERMISSION_DENIED")
    assert "top secret" not in str(env)


def test_tool_runner_user_id_in_args_never_picks_the_user(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model that writes user_id into its args gets the default user's rules."""
    (workspace / "payroll.txt").write_text("top secret")
    config = tmp_path / "user-config.toml"  # the user's own config: always applies
    config.write_text(
        '[permissions]\n"read:file" = { "payroll.txt" = "deny" }\n'
        '[users.admin.permissions]\n"read:file" = "allow"\n'
    )
    monkeypatch.setenv("LOCAL_TOOLS_CONFIG", str(config))
    monkeypatch.chdir(workspace)
    request = {"tool": "read_file", "args": {"path": "payroll.txt", "user_id": "admin"}}
    env = tool_runner.run(request)
    err(env, "PERMISSION_DENIED")
    assert "top secret" not in str(env)
    # The host naming admin is what grants it.
    assert ok(tool_runner.run({**request, "user_id": "admin"}))["content"] == "top secret"


@pytest.mark.parametrize("args", ["a.txt", [1, 2], 3])
def test_tool_runner_non_object_args(args: object) -> None:
    err(tool_runner.run({"tool": "read_file", "args": args}), "INVALID_INPUT")


def test_the_model_engines_load_with_the_first_call_not_with_the_tools() -> None:
    # Every server builds the registry at start; task and compact are listed only with a
    # model configured, so their engines (and the SDKs) must cost a start nothing.
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from local_tools.tools import builtin_tools\n"
        "assert {t.name for t in builtin_tools()} >= {'task', 'compact'}\n"
        "engines = ('local_tools.subagents', 'local_tools.compaction', 'local_tools.models',\n"
        "           'openai', 'anthropic', 'bpe_openai')\n"
        "loaded = [m for m in sys.modules if m.startswith(engines)]\n"
        "print(sorted(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
