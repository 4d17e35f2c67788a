"""The parameter names other tool layers taught models, through a real Toolbox and doors.

`filePath`/`file_path` for `path`, `oldString`/`newString`/`replaceAll`, `workdir`,
`timeout_ms` (milliseconds, where our timeouts are seconds), camelCase spellings, in
nested edits too; a name given twice is INVALID_INPUT; a plugin's own `file_path` is
its own; no schema lists them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client
from pydantic import Field

from local_tools import Toolbox, tool
from local_tools.core.context import ToolContext
from local_tools.core.tool import Args
from local_tools.transports.mcp import LocalToolsMcp
from spawned_http import spawn_http_server

ALLOW_SLEEP = '[permissions]\n"execute:command" = { "sleep *" = "allow" }\n'
ALIASES = ("filePath", "file_path", "oldString", "newString", "replaceAll", "workdir",
           "timeout_ms", "ignoreCase", "yieldAfter")  # fmt: skip


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\nbeta\nalpha\n")
    return root


@pytest.fixture
def tb(ws: Path, tmp_path: Path) -> Iterator[Toolbox]:
    box = Toolbox(ws, state_dir=tmp_path / "state", audit=False, trust=True)
    yield box
    box.close()


def _error(envelope: dict[str, Any]) -> tuple[str, str]:
    assert not envelope["success"], envelope
    return envelope["error"]["error_code"], envelope["error"]["message"]


def test_read_file_takes_file_path_spellings(tb: Toolbox) -> None:
    for name in ("filePath", "file_path"):
        read = tb.run("read_file", {name: "a.txt", "limit": 1})
        assert read["success"], read
        assert read["output"]["content"] == "alpha\n"


def test_edit_takes_opencode_names(tb: Toolbox, ws: Path) -> None:
    edited = tb.run(
        "edit",
        {"filePath": "a.txt", "oldString": "alpha", "newString": "gamma", "replaceAll": True},
    )
    assert edited["success"], edited
    assert (ws / "a.txt").read_text() == "gamma\nbeta\ngamma\n"


def test_multi_edit_takes_aliases_in_its_items(tb: Toolbox, ws: Path) -> None:
    edits = [
        {"oldString": "beta", "newString": "delta"},
        {"old_string": "alpha", "newString": "omega", "replaceAll": True},
    ]
    done = tb.run("multi_edit", {"file_path": "a.txt", "edits": edits})
    assert done["success"], done
    assert (ws / "a.txt").read_text() == "omega\ndelta\nomega\n"
    assert edits[0] == {"oldString": "beta", "newString": "delta"}  # the caller's, untouched


def test_exec_cmd_takes_workdir_and_timeout_ms(ws: Path, tmp_path: Path) -> None:
    (ws / "local-tools.toml").write_text(ALLOW_SLEEP)
    box = Toolbox(ws, state_dir=tmp_path / "state", audit=False, trust=True)
    try:
        ran = box.run("exec_cmd", {"command": "pwd", "workdir": "sub"})
        assert ran["success"], ran
        assert Path(ran["output"]["stdout"].strip()).resolve() == (ws / "sub").resolve()

        # 500 ms, not 500 s: the command is stopped half a second in.
        started = time.monotonic()
        slow = box.run("exec_cmd", {"command": "sleep 20", "timeout_ms": 500})
        assert time.monotonic() - started < 10
        code, message = _error(slow)
        assert code == "TIMEOUT" and "0.5 s" in message

        # Out of range once converted: the message names the parameter as listed.
        code, message = _error(box.run("exec_cmd", {"command": "pwd", "timeout_ms": 900_000}))
        assert code == "INVALID_INPUT" and "'timeout'" in message and "900" in message
    finally:
        box.close()


def test_a_parameter_given_twice_is_invalid_input_naming_both(tb: Toolbox, ws: Path) -> None:
    for args, names in (
        ({"path": "a.txt", "filePath": "b.txt"}, ("'path'", "'filePath'")),
        ({"file_path": "a.txt", "filePath": "b.txt"}, ("'file_path'", "'filePath'")),
    ):
        code, message = _error(tb.run("read_file", args))
        assert code == "INVALID_INPUT"
        assert all(n in message for n in names), message
    code, message = _error(tb.run("exec_cmd", {"command": "pwd", "cwd": ".", "workdir": "sub"}))
    assert code == "INVALID_INPUT" and "'cwd'" in message and "'workdir'" in message
    nested = {"path": "a.txt", "edits": [{"oldString": "a", "old_string": "b", "new_string": ""}]}
    code, message = _error(tb.run("multi_edit", nested))
    assert code == "INVALID_INPUT" and "edits.0.oldString" in message
    assert (ws / "a.txt").read_text() == "alpha\nbeta\nalpha\n"


def test_unknown_names_are_still_refused(tb: Toolbox) -> None:
    code, message = _error(tb.run("read_file", {"filepath": "a.txt"}))
    assert code == "INVALID_INPUT" and "'filepath' is not a parameter" in message


class _PluginArgs(Args):
    file_path: str = Field(description="A path the plugin keeps as it is.")
    path: str = Field("", description="Something else entirely.")


@tool("plugin_echo", args=_PluginArgs, blocking=False)
def _plugin_echo(args: _PluginArgs, ctx: ToolContext) -> dict[str, Any]:
    """Echo the arguments it was given."""
    return {"file_path": args.file_path, "path": args.path}


class _WaitArgs(Args):
    timeout: int = Field(1000, description="Milliseconds to wait.")


@tool("plugin_wait", args=_WaitArgs, blocking=False)
def _plugin_wait(args: _WaitArgs, ctx: ToolContext) -> dict[str, Any]:
    """Say how long it would wait."""
    return {"timeout": args.timeout}


def test_plugin_parameters_are_their_own(ws: Path, tmp_path: Path) -> None:
    plugins = [_plugin_echo, _plugin_wait]
    box = Toolbox(ws, state_dir=tmp_path / "state", audit=False, trust=True, tools=plugins)
    try:
        out = box.run("plugin_echo", {"file_path": "x", "path": "y"})
        assert out["success"] and out["output"] == {"file_path": "x", "path": "y"}
        # camelCase of its own parameter still works; `filePath` is its file_path's.
        out = box.run("plugin_echo", {"filePath": "x"})
        assert out["success"] and out["output"] == {"file_path": "x", "path": ""}
        # A timeout its description says is in milliseconds takes timeout_ms as it is.
        out = box.run("plugin_wait", {"timeout_ms": 250})
        assert out["success"] and out["output"] == {"timeout": 250}
    finally:
        box.close()


def test_schemas_do_not_list_the_aliases(tb: Toolbox) -> None:
    listed = tb.tools(profile="full")
    assert {"read_file", "edit", "multi_edit", "exec_cmd"} <= {t["name"] for t in listed}
    text = json.dumps([t["parameters"] for t in listed])
    for alias in ALIASES:
        assert f'"{alias}"' not in text, alias


# -- through the doors -------------------------------------------------------------------


def _text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def test_through_mcp(ws: Path) -> None:
    async def main() -> None:
        app = LocalToolsMcp(ws)
        try:
            async with Client(app.server()) as c:
                listed = await c.list_tools()
                schemas = json.dumps([t.input_schema for t in listed.tools])
                assert '"filePath"' not in schemas and '"oldString"' not in schemas
                read = await c.call_tool("read_file", {"filePath": "a.txt"})
                assert not read.is_error, _text(read)
                assert "1\talpha" in _text(read)
                edit = await c.call_tool(
                    "edit", {"file_path": "a.txt", "oldString": "beta", "newString": "zeta"}
                )
                assert not edit.is_error, _text(edit)
                twice = await c.call_tool("read_file", {"path": "a.txt", "filePath": "a.txt"})
                assert twice.is_error and _text(twice).startswith("Error [INVALID_INPUT]:")
                assert "'filePath'" in _text(twice) and "'path'" in _text(twice)
        finally:
            app.close()

    anyio.run(main)
    assert (ws / "a.txt").read_text() == "alpha\nzeta\nalpha\n"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals stop the server")
def test_through_http_exec(ws: Path, tmp_path: Path) -> None:
    with spawn_http_server(ws, tmp_path / "http-state") as server:
        headers = {"Authorization": f"Bearer {server.token}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=30) as c:

            def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                r = c.post("/exec", json={"name": name, "args": args, "callId": "a1"})
                assert r.status_code == 200
                return r.json()

            read = call("read_file", {"filePath": "a.txt"})
            assert read["status"] == "success" and "1\talpha" in read["output"], read
            edits = '[{"oldString": "alpha", "newString": "eta", "replaceAll": true}]'
            done = call("multi_edit", {"filePath": "a.txt", "edits": edits})
            assert done["status"] == "success", done
            twice = call("read_file", {"path": "a.txt", "file_path": "a.txt"})
            assert twice["status"] == "error" and "'file_path'" in twice["output"]
    assert (ws / "a.txt").read_text() == "eta\nbeta\neta\n"
