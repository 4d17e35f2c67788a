"""The MCP server through the official Python SDK client: in memory, over stdio, over HTTP.

Real clients and real processes, no mocks. The in-memory client speaks 2026-07-28 by
default and the legacy handshake with mode="legacy", so elicitation is proven on both.
"""

from __future__ import annotations

import http.client
import os
import socket
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psutil
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from local_tools.core.state import STATE_DIR_ENV, default_state_dir
from local_tools.core.trust import TrustStore, fingerprint
from local_tools.transports.mcp import LocalToolsMcp

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")

ALLOW_EXEC = '[permissions]\n"execute:command" = "allow"\n'
BROKEN = '[limits]\nmax_output_lines = "lots"\n'


def _trusted(workspace: Path) -> None:
    """Trust the workspace as `local-tools trust` does: its own config and tools apply."""
    TrustStore(default_state_dir()).trust(workspace, fingerprint(workspace))


def _png(width: int = 3, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    raw = b"".join(b"\x00" + b"\x00\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def _answer(choice: str | None) -> Callable[..., Any]:
    """An elicitation callback that picks `choice` (None: the person declines)."""

    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert "file_delete" in params.message
        if choice is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": choice})

    return callback


@asynccontextmanager
async def _memory(workspace: Path, **client: Any) -> AsyncIterator[Client]:
    app = LocalToolsMcp(workspace)
    try:
        async with Client(app.server(), **client) as c:
            yield c
    finally:
        app.close()


def _run(fn: Callable[[], Any]) -> None:
    anyio.run(fn)


# -- in memory --------------------------------------------------------------------


def test_tools_list_shape(workspace: Path) -> None:
    async def main() -> None:
        async with _memory(workspace) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
        assert {"read_file", "edit", "exec_cmd", "file_delete"} <= set(tools)
        assert "invalid" not in tools
        for tool in tools.values():
            assert tool.input_schema["type"] == "object"
            assert tool.title and tool.description
            hints = tool.annotations.model_dump(by_alias=True, exclude_none=True)
            for key in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
                assert isinstance(hints[key], bool), (tool.name, key)
        assert tools["read_file"].annotations.read_only_hint is True
        assert tools["file_delete"].annotations.destructive_hint is True
        no_args = [t for t in tools.values() if not t.input_schema.get("properties")]
        for tool in no_args:
            assert tool.input_schema == {"type": "object", "additionalProperties": False}

    _run(main)


def test_read_edit_and_bad_calls_keep_serving(workspace: Path) -> None:
    (workspace / "a.txt").write_text("hello\nworld\n")

    async def main() -> None:
        async with _memory(workspace) as c:
            read = await c.call_tool("read_file", {"path": "a.txt"})
            assert not read.is_error
            assert "1\thello" in _text(read)
            assert read.structured_content["content"] == "hello\nworld\n"

            unknown = await c.call_tool("no_such_tool", {})
            assert unknown.is_error and _text(unknown).startswith("Error [UNKNOWN_TOOL]:")

            wrong = await c.call_tool("read_file", {"path": 5, "limit": "many"})
            assert wrong.is_error and _text(wrong).startswith("Error [INVALID_INPUT]:")

            missing = await c.call_tool("read_file", {"path": "nope.txt"})
            assert missing.is_error and _text(missing).startswith("Error [NOT_FOUND]:")

            edit = await c.call_tool(
                "edit", {"path": "a.txt", "old_string": "world", "new_string": "there"}
            )
            assert not edit.is_error, _text(edit)
            assert "+there" in _text(edit)
        assert (workspace / "a.txt").read_text() == "hello\nthere\n"

    _run(main)


def test_png_is_image_content(workspace: Path) -> None:
    png = _png()
    (workspace / "dot.png").write_bytes(png)

    async def main() -> None:
        async with _memory(workspace) as c:
            result = await c.call_tool("read_file", {"path": "dot.png"})
        assert not result.is_error
        images = [b for b in result.content if isinstance(b, types.ImageContent)]
        assert len(images) == 1 and images[0].mime_type == "image/png"
        import base64

        assert base64.b64decode(images[0].data) == png
        assert "image_base64" not in result.structured_content
        assert result.structured_content["mime_type"] == "image/png"
        assert images[0].data not in _text(result)

    _run(main)


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_ask_through_elicitation(workspace: Path, mode: str) -> None:
    for name in ("once.txt", "deny.txt", "decline.txt"):
        (workspace / name).write_text("x")

    async def call(path: str, choice: str | None) -> types.CallToolResult:
        async with _memory(workspace, mode=mode, elicitation_callback=_answer(choice)) as c:
            return await c.call_tool("file_delete", {"path": path})

    async def main() -> None:
        once = await call("once.txt", "once")
        assert not once.is_error, _text(once)
        denied = await call("deny.txt", "deny")
        assert _text(denied).startswith("Error [PERMISSION_DENIED]:")
        declined = await call("decline.txt", None)
        assert _text(declined).startswith("Error [PERMISSION_DENIED]:")

    _run(main)
    assert not (workspace / "once.txt").exists()
    assert (workspace / "deny.txt").exists() and (workspace / "decline.txt").exists()


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_question_through_elicitation(workspace: Path, mode: str) -> None:
    ask = {"question": "Which database?", "options": ["SQLite", "PostgreSQL"]}
    forms: list[dict[str, Any]] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert "Which database?" in params.message
        forms.append(params.requested_schema)
        if len(forms) == 2:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(
            action="accept", content={"choice": "PostgreSQL", "answer": "version 16"}
        )

    async def main() -> None:
        async with _memory(workspace, mode=mode, elicitation_callback=person) as c:
            answered = await c.call_tool("question", ask)
            assert not answered.is_error, _text(answered)
            assert answered.structured_content["choices"] == ["PostgreSQL"]
            assert answered.structured_content["text"] == "version 16"
            assert _text(answered) == "The user answered: PostgreSQL; version 16"
            dismissed = await c.call_tool("question", ask)
            assert _text(dismissed).startswith("Error [CANCELLED]:")
        # Without elicitation the question goes back to the model, for the chat.
        async with _memory(workspace, mode=mode) as c:
            handed = await c.call_tool("question", ask)
            assert handed.structured_content["answered"] is False

    _run(main)
    assert forms[0]["properties"]["choice"]["enum"] == ["SQLite", "PostgreSQL"]


def test_a_broken_plugin_is_logged_and_the_rest_serve(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plugins = workspace / ".local-tools" / "tools"
    plugins.mkdir(parents=True)
    (plugins / "broken.py").write_text("raise RuntimeError('half-written plugin')\n")
    _trusted(workspace)
    (workspace / "a.txt").write_text("still here\n")

    async def main() -> None:
        async with _memory(workspace) as c:
            read = await c.call_tool("read_file", {"path": "a.txt"})
            assert read.structured_content["content"] == "still here\n"

    with caplog.at_level("ERROR", logger="local_tools.mcp"):
        _run(main)
    logged = caplog.text
    assert "broken.py" in logged and "half-written plugin" in logged


def test_ask_without_elicitation_is_denied_naming_the_rule(workspace: Path) -> None:
    (workspace / "keep.txt").write_text("x")

    async def main() -> None:
        async with _memory(workspace) as c:
            result = await c.call_tool("file_delete", {"path": "keep.txt"})
        assert result.is_error
        assert _text(result).startswith("Error [PERMISSION_DENIED]:")
        assert "delete:file" in _text(result)

    _run(main)
    assert (workspace / "keep.txt").exists()


def test_workspace_from_the_clients_roots(workspace: Path, tmp_path: Path) -> None:
    (workspace / "a.txt").write_text("from roots\n")

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(
            roots=[
                types.Root(uri=(tmp_path / "missing").as_uri()),  # skipped: not a directory
                types.Root(uri=workspace.as_uri()),
            ]
        )

    async def main() -> None:
        app = LocalToolsMcp()  # no --workspace
        try:
            async with Client(app.server(), mode="legacy", list_roots_callback=roots) as c:
                read = await c.call_tool("read_file", {"path": "a.txt"})
        finally:
            app.close()
        assert read.structured_content["content"] == "from roots\n"

    _run(main)


def _alive(needle: str) -> bool:
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if needle in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            return True
    return False


def test_cancelled_call_kills_the_command(workspace: Path) -> None:
    (workspace / "local-tools.toml").write_text(ALLOW_EXEC)
    _trusted(workspace)
    needle = "sleep 30.4217"

    async def main() -> None:
        async with _memory(workspace) as c:
            await _cancel_midway(c, needle)
            after = await c.call_tool("exec_cmd", {"command": "echo still here"})
            assert "still here" in _text(after)

    _run(main)


async def _cancel_midway(client: Client, needle: str) -> None:
    """Start `needle` through exec_cmd, cancel the call once it runs, see it end."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.call_tool, "exec_cmd", {"command": needle})
        for _ in range(200):
            if _alive(needle):
                break
            await anyio.sleep(0.025)
        assert _alive(needle), "the command never started"
        tg.cancel_scope.cancel()
    assert await _gone(needle), "the cancelled command is still running"


async def _gone(needle: str) -> bool:
    for _ in range(40):
        if not _alive(needle):
            return True
        await anyio.sleep(0.05)
    return False


# -- real processes -----------------------------------------------------------------


def _env() -> dict[str, str]:
    # The conftest's isolated state dir; the SDK passes only a few variables to a child.
    return {STATE_DIR_ENV: os.environ[STATE_DIR_ENV], "PYTHONPATH": os.pathsep.join(sys.path)}


def _stdio(workspace: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "local_tools", "serve", "mcp", "--workspace", str(workspace), *extra],
        env=_env(),
    )


def test_stdio_serves_and_exits_when_stdin_closes(workspace: Path) -> None:
    (workspace / "a.txt").write_text("over stdio\n")
    (workspace / "local-tools.toml").write_text(ALLOW_EXEC)
    _trusted(workspace)
    needle = "sleep 30.5129"

    async def main() -> None:
        async with Client(_stdio(workspace)) as c:
            assert any(t.name == "read_file" for t in (await c.list_tools()).tools)
            read = await c.call_tool("read_file", {"path": "a.txt"})
            assert read.structured_content["content"] == "over stdio\n"
            bad = await c.call_tool("read_file", {"path": []})
            assert bad.is_error
            await _cancel_midway(c, needle)
            again = await c.call_tool("read_file", {"path": "a.txt"})
            assert not again.is_error

    _run(main)

    # A client that just closes stdin: the server must leave on its own, cleanly.
    proc = subprocess.Popen(
        [sys.executable, "-m", "local_tools", "serve", "mcp", "--workspace", str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **_env()},
    )
    _, err = proc.communicate(b"", timeout=20)
    assert proc.returncode == 0, err.decode()
    assert b"workspace:" in err


def test_broken_config_answers_every_call(workspace: Path) -> None:
    (workspace / "local-tools.toml").write_text(BROKEN)

    async def main() -> None:
        async with Client(_stdio(workspace)) as c:
            assert (await c.list_tools()).tools
            for _ in range(2):
                result = await c.call_tool("read_file", {"path": "x"})
                assert result.is_error
                text = _text(result)
                assert text.startswith("Error [EXECUTION_ERROR]:")
                assert "max_output_lines" in text and "local-tools.toml" in text

    _run(main)


TOKEN = "test-token-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _http_server(workspace: Path) -> Iterator[str]:
    """A spawned `serve mcp --transport http`; yields its /mcp URL."""
    port = _free_port()
    args = ["serve", "mcp", "--workspace", str(workspace), "--transport", "http"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "local_tools", *args, "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **_env(), "LOCAL_TOOLS_TOKEN": TOKEN},
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


@asynccontextmanager
async def _http_client(url: str, **client: Any) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        create_mcp_http_client(headers=headers) as auth,
        Client(streamable_http_client(url, http_client=auth), **client) as c,
    ):
        yield c


def test_streamable_http(workspace: Path) -> None:
    (workspace / "a.txt").write_text("over http\n")
    with _http_server(workspace) as url:

        async def main() -> None:
            async with _http_client(url) as c:
                assert (await c.list_tools()).tools
                read = await c.call_tool("read_file", {"path": "a.txt"})
                assert read.structured_content["content"] == "over http\n"
                bad = await c.call_tool("nope", {})
                assert bad.is_error

        _run(main)
        port = int(url.rsplit(":", 1)[1].split("/")[0])

        def status(headers: dict[str, str]) -> int:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            body = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
            base = {"Content-Type": "application/json", "Accept": "application/json"}
            conn.request("POST", "/mcp", body=body, headers={**base, **headers})
            code = conn.getresponse().status
            conn.close()
            return code

        # Without the bearer token (or with another) nothing is served.
        assert status({}) == 401
        assert status({"Authorization": "Bearer wrong"}) == 401
        # DNS rebinding: a page served from another name must not reach the server,
        # even with the token.
        good = {"Authorization": f"Bearer {TOKEN}"}
        for headers in ({"Host": "evil.example"}, {"Origin": "http://evil.example"}):
            assert status({**good, **headers}) in (403, 421), headers


def test_http_sessions_keep_their_processes_apart(workspace: Path) -> None:
    """Two clients of one HTTP server (legacy sessions): neither sees or touches the
    other's background command, and a session's end ends its commands."""
    (workspace / "local-tools.toml").write_text(ALLOW_EXEC)
    _trusted(workspace)
    needle = "sleep 30.5531"
    with _http_server(workspace) as url:

        async def main() -> None:
            async with _http_client(url, mode="legacy") as b:
                async with _http_client(url, mode="legacy") as a:
                    started = await a.call_tool("exec_cmd", {"command": needle, "background": True})
                    pid = started.structured_content["process_id"]
                    assert needle in _text(await a.call_tool("process_list", {}))
                    assert needle not in _text(await b.call_tool("process_list", {}))
                    for tool in ("process_output", "process_kill"):
                        other = await b.call_tool(tool, {"process_id": pid})
                        assert other.is_error and "NOT_FOUND" in _text(other), tool
                    assert _alive(needle)
                # a's client closed its session (DELETE): its command ended with it.
                assert await _gone(needle), "the closed session's command still runs"
                assert "still here" in _text(
                    await b.call_tool("exec_cmd", {"command": "echo still here"})
                )

        _run(main)


def test_progress_while_a_command_runs(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from local_tools.tools import exec_cmd

    monkeypatch.setattr(exec_cmd, "PROGRESS_EVERY", 0.2)
    (workspace / "local-tools.toml").write_text('[permissions]\n"execute:command" = "allow"\n')
    _trusted(workspace)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def main() -> None:
        async with _memory(workspace) as c:
            result = await c.call_tool(
                "exec_cmd", {"command": "sleep 1; echo done"}, progress_callback=on_progress
            )
            assert not result.is_error, _text(result)
            assert result.structured_content["stdout"] == "done\n"
            quiet = await c.call_tool("exec_cmd", {"command": "echo x"})
            assert not quiet.is_error

    _run(main)
    assert len(seen) >= 2, seen
    progress = [p for p, _, _ in seen]
    assert progress == sorted(progress) and len(set(progress)) == len(progress)
    assert all(m and m.startswith("running for") for _, _, m in seen)


def test_server_lists_what_schema_format_mcp_prints(workspace: Path) -> None:
    from local_tools import Toolbox
    from local_tools.transports.schemas import tool_schemas

    tb = Toolbox(workspace)
    printed = {d["name"]: d for d in tool_schemas(tb.listed(), "mcp")}
    tb.close()

    async def main() -> None:
        async with _memory(workspace) as c:
            listed = {t.name: t for t in (await c.list_tools()).tools}
        assert set(listed) == set(printed)
        for name, tool in listed.items():
            decl = printed[name]
            assert tool.input_schema == decl["inputSchema"], name
            assert tool.description == decl["description"], name
            hints = tool.annotations.model_dump(by_alias=True, exclude_none=True)
            for key, value in decl["annotations"].items():
                assert hints[key] == value, (name, key)

    _run(main)


def test_signed_request_state_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    from local_tools.interact import mcp_elicit

    elicit = mcp_elicit.RoundTripElicit()
    params = types.CallToolRequestParams(name="file_delete", arguments={"path": "x"})
    state = elicit._encode(mcp_elicit._digest({"name": "file_delete", "arguments": {"path": "x"}}),
                           {"k": ["accept", {"decision": "once"}]})  # fmt: skip
    fresh = types.CallToolRequestParams(
        name="file_delete", arguments={"path": "x"}, request_state=state
    )
    assert elicit.start(fresh)._answers == {"k": ["accept", {"decision": "once"}]}
    other = types.CallToolRequestParams(
        name="file_delete", arguments={"path": "y"}, request_state=state
    )
    assert elicit.start(other)._answers == {}  # another call: the answers don't carry over
    later = time.time() + mcp_elicit.STATE_TTL + 1
    monkeypatch.setattr(mcp_elicit.time, "time", lambda: later)
    assert elicit.start(fresh)._answers == {}  # replayed too late: asked again
    assert params.request_state is None
