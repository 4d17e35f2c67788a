"""The MCP server's listing: the profile's tools, the finder's list_changed on both
protocol eras (official Python SDK client, in memory), and skills as prompts."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from local_tools.transports.mcp import LocalToolsMcp

SKILL = "---\nname: deploy\ndescription: Ship the site\n---\nRun the build, then upload.\n"


def _run(fn: Callable[[], Any]) -> None:
    anyio.run(fn)


def _names(result: types.ListToolsResult) -> set[str]:
    return {t.name for t in result.tools}


def test_the_listing_is_the_profile(workspace: Path, tmp_path: Path) -> None:
    async def main() -> None:
        for profile, present, absent in (
            (None, {"read_file", "find_tools", "call_tool"}, {"browser_launch"}),
            ("full", {"read_file", "browser_launch", "create_task"}, set()),
            ("browser", {"browser_launch", "find_tools"}, {"read_file"}),
        ):
            app = LocalToolsMcp(workspace, state_dir=tmp_path / "state", profile=profile)
            try:
                async with Client(app.server()) as c:
                    listed = _names(await c.list_tools())
                    # Not listed, still callable by name, under the same rules.
                    call = await c.call_tool("get_requirements", {})
                    assert not call.is_error
            finally:
                app.close()
            assert present <= listed and not absent & listed, profile

    _run(main)


def test_legacy_clients_hear_list_changed_and_relist(workspace: Path, tmp_path: Path) -> None:
    heard: list[Any] = []

    async def handler(message: Any) -> None:
        heard.append(message)

    async def main() -> None:
        app = LocalToolsMcp(workspace, state_dir=tmp_path / "state")
        try:
            async with Client(app.server(), mode="legacy", message_handler=handler) as c:
                caps = c.server_capabilities
                assert caps.tools is not None and caps.tools.list_changed is True
                assert "browser_launch" not in _names(await c.list_tools())
                await c.call_tool("find_tools", {"query": "browser"})
                with anyio.fail_after(5):
                    while not any(isinstance(m, types.ToolListChangedNotification) for m in heard):
                        await anyio.sleep(0.01)
                assert "browser_launch" in _names(await c.list_tools())
                # Nothing new loaded: no second notification.
                count = len(heard)
                await c.call_tool("find_tools", {"query": "browser"})
                await c.call_tool("read_file", {"path": "."})
                await anyio.sleep(0.1)
                assert len(heard) == count
        finally:
            app.close()

    _run(main)


def test_modern_clients_hear_it_on_their_listen_stream(workspace: Path, tmp_path: Path) -> None:
    async def main() -> None:
        app = LocalToolsMcp(workspace, state_dir=tmp_path / "state")
        try:
            async with Client(app.server()) as c:
                assert "http_request" not in _names(await c.list_tools())
                async with c.listen(tools_list_changed=True) as events:
                    await c.call_tool("find_tools", {"query": "http request"})
                    with anyio.fail_after(5):
                        async for event in events:
                            assert type(event).__name__ == "ToolsListChanged"
                            break
                assert "http_request" in _names(await c.list_tools())
        finally:
            app.close()

    _run(main)


def test_skills_are_prompts(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".skills" / "deploy").mkdir(parents=True)
    (workspace / ".skills" / "deploy" / "SKILL.md").write_text(SKILL)
    (workspace / ".skills" / "notes.md").write_text("Take notes in NOTES.md\n\nAlways.\n")
    (workspace / ".skills" / "secret").mkdir()
    (workspace / ".skills" / "secret" / "SKILL.md").write_text("---\nname: secret\n---\nx\n")
    config = tmp_path / "c.toml"
    config.write_text('[permissions]\nskill = { "*" = "allow", "secret" = "deny" }\n')

    async def main() -> None:
        app = LocalToolsMcp(workspace, config, state_dir=tmp_path / "state")
        try:
            async with Client(app.server()) as c:
                prompts = {p.name: p for p in (await c.list_prompts()).prompts}
                assert set(prompts) == {"deploy", "notes"}  # the denied one is not offered
                assert prompts["deploy"].description == "Ship the site"
                got = await c.get_prompt("deploy")
                text = got.messages[0].content
                assert isinstance(text, types.TextContent)
                assert "Run the build, then upload." in text.text
                assert got.messages[0].role == "user"
                with pytest.raises(MCPError, match="secret"):
                    await c.get_prompt("secret")
                with pytest.raises(MCPError, match="nope"):
                    await c.get_prompt("nope")
        finally:
            app.close()

    _run(main)


@pytest.mark.parametrize(
    ("args", "present", "absent"),
    [
        ([], {"read_file", "find_tools"}, {"browser_launch"}),
        (["--profile", "full"], {"browser_launch", "read_file"}, set()),
        (["--profile", "core,knowledge"], {"create_task", "read_file"}, {"browser_launch"}),
    ],
)
def test_cli_list_and_schema_take_a_profile(
    workspace: Path, tmp_path: Path, args: list[str], present: set[str], absent: set[str]
) -> None:
    env = {"LOCAL_TOOLS_STATE_DIR": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"}
    base = [sys.executable, "-m", "local_tools"]
    where = ["--workspace", str(workspace)]
    listed = subprocess.run(
        [*base, "list", "--json", *where, *args], capture_output=True, text=True, env=env
    )
    assert listed.returncode == 0, listed.stderr
    names = {t["name"] for t in json.loads(listed.stdout)}
    assert present <= names and not absent & names
    schema = subprocess.run(
        [*base, "schema", "--format", "mcp", *where, *args], capture_output=True, text=True, env=env
    )
    assert {t["name"] for t in json.loads(schema.stdout)} == names
    text = subprocess.run([*base, "list", *where, *args], capture_output=True, text=True, env=env)
    if absent:
        assert "found with find_tools (--profile full lists them)" in text.stdout
    bad = subprocess.run(
        [*base, "list", *where, "--profile", "nope"], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 2 and "unknown profile 'nope'" in bad.stderr


def test_an_unknown_profile_still_lists_and_every_call_says_why(
    workspace: Path, tmp_path: Path
) -> None:
    async def main() -> None:
        app = LocalToolsMcp(workspace, state_dir=tmp_path / "state", profile="nope")
        try:
            async with Client(app.server()) as c:
                assert "read_file" in _names(await c.list_tools())  # core, not an error
                result = await c.call_tool("read_file", {"path": "x"})
                assert result.is_error
                text = "".join(b.text for b in result.content if isinstance(b, types.TextContent))
                assert "unknown profile 'nope'" in text
        finally:
            app.close()

    _run(main)


def test_listing_prompts_never_asks(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".skills" / "deploy").mkdir(parents=True)
    (workspace / ".skills" / "deploy" / "SKILL.md").write_text(SKILL)
    config = tmp_path / "c.toml"
    config.write_text('[permissions]\nskill = "ask"\n')
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "once"})

    async def main() -> None:
        app = LocalToolsMcp(workspace, config, state_dir=tmp_path / "state")
        try:
            async with Client(app.server(), mode="legacy", elicitation_callback=elicit) as c:
                prompts = (await c.list_prompts()).prompts
                assert [p.name for p in prompts] == ["deploy"] and asked == []
                got = await c.get_prompt("deploy")  # getting one asks, as loading a skill does
                assert len(asked) == 1 and got.messages
        finally:
            app.close()

    _run(main)
