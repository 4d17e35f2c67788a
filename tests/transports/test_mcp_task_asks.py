"""A task call over MCP 2026-07-28: each ask of its subagent ends a round, the client
re-sends the call with the answer, and the task resumes at the call that asked.

A task call is many actions: a person's answer is for the one action it was asked
about (an "Allow once" for one write never covers a later, different write), and the
task's budgets hold over all the rounds of the call, not per round.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from local_tools.transports.mcp import LocalToolsMcp
from model_server import ScriptedModel, model_config, text, tool_call

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")


def _config(tmp_path: Path, server: ScriptedModel, **task: Any) -> Path:
    """A config file: the scripted model, [task] with `task`, and writes that ask."""
    conf = model_config(server)
    conf["task"].update(task)
    lines = []
    for table, keys in (("models.test", conf["models"]["test"]), ("task", conf["task"])):
        lines.append(f"[{table}]")
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in keys.items())
    lines += ['[permissions."write:file"]', '"*" = "ask"']
    path = tmp_path / "local-tools.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _answers(*choices: str | None) -> tuple[Callable[..., Any], list[str]]:
    """An elicitation callback answering `choices` in turn (None: decline), and the
    messages it was shown."""
    shown: list[str] = []

    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        shown.append(params.message)
        choice = choices[len(shown) - 1] if len(shown) <= len(choices) else None
        if choice is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": choice})

    return callback, shown


def _task(workspace: Path, config: Path, args: dict[str, Any], callback: Any) -> dict[str, Any]:
    got: list[types.CallToolResult] = []

    async def main() -> None:
        app = LocalToolsMcp(workspace, config, profile="core,models")
        try:
            async with Client(app.server(), mode="2026-07-28", elicitation_callback=callback) as c:
                got.append(await c.call_tool("task", args))
        finally:
            app.close()

    anyio.run(main)
    [result] = got
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def test_allow_once_covers_only_the_write_it_was_given_for(workspace: Path, tmp_path: Path) -> None:
    with ScriptedModel() as server:
        server.script(
            tool_call("write_file", {"path": "notes.txt", "content": "v1\n"}),
            tool_call("write_file", {"path": "notes.txt", "content": "v2\n", "overwrite": True}),
            tool_call("write_file", {"path": "notes.txt", "content": "v3\n", "append": True}),
            text("done"),
        )
        callback, shown = _answers("once", None, None)
        out = _task(
            workspace,
            _config(tmp_path, server),
            {"description": "write notes", "prompt": "write notes.txt"},
            callback,
        )
        requests = server.requests
    # Asked once per write: the first answer did not approve the two later writes.
    assert len(shown) == 3
    assert all("write_file" in m and "notes.txt" in m for m in shown)
    assert (workspace / "notes.txt").read_text() == "v1\n"
    assert out["status"] == "done"
    last = json.dumps(requests[-1].body["messages"])
    assert last.count("PERMISSION_DENIED") == 2


def test_the_same_write_twice_is_asked_twice(workspace: Path, tmp_path: Path) -> None:
    # The very same call in two turns is two actions: "once" is for one of them.
    call = {"path": "log.txt", "content": "line\n", "append": True}
    with ScriptedModel() as server:
        server.script(tool_call("write_file", call), tool_call("write_file", call), text("ok"))
        callback, shown = _answers("once", None)
        _task(
            workspace, _config(tmp_path, server), {"description": "log", "prompt": "log"}, callback
        )
    assert len(shown) == 2
    assert (workspace / "log.txt").read_text() == "line\n"


def test_budgets_hold_over_the_rounds_of_one_call(workspace: Path, tmp_path: Path) -> None:
    with ScriptedModel() as server:
        server.script(
            *(tool_call("write_file", {"path": f"f{i}.txt", "content": "x"}) for i in range(5)),
            text("done"),
        )
        callback, shown = _answers(*["once"] * 5)
        out = _task(
            workspace,
            _config(tmp_path, server, max_steps=2),
            {"description": "write files", "prompt": "write five files"},
            callback,
        )
        turns = len(server.requests)
    # Two model turns in all (each round went on from the one before), not two a round.
    assert (out["status"], out["budget"], out["steps"]) == ("budget", "steps", 2)
    assert turns == 2 and len(shown) == 2
    assert sorted(p.name for p in workspace.iterdir()) == ["f0.txt", "f1.txt"]
