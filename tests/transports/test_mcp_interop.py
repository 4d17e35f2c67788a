"""The MCP server driven by clients nobody here wrote, as real processes, no mocks.

- the TypeScript SDK's `Client` (npm `@modelcontextprotocol/sdk`, the client Claude
  Desktop and VS Code use) through `tests/interop/ts_client.mjs`;
- the MCP Inspector's CLI mode (npm `@modelcontextprotocol/inspector`, itself on the
  TypeScript SDK's v2 client), on both protocol eras it can negotiate.

Each over stdio (the client spawns the server) and over streamable HTTP (a server
process on a free loopback port). `make test` installs the pinned npm packages; the
tests skip only when node or `tests/interop/node_modules` is missing.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local_tools.core.state import STATE_DIR_ENV
from local_tools.security.server_token import TOKEN_VARIABLE

INTEROP = Path(__file__).resolve().parents[1] / "interop"
NODE = shutil.which("node")
INSPECTOR = INTEROP / "node_modules" / ".bin" / "mcp-inspector"
PINNED = json.loads((INTEROP / "package.json").read_text())["dependencies"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes"),
    pytest.mark.skipif(NODE is None, reason="node is not on PATH (needed for the npm MCP clients)"),
    pytest.mark.skipif(
        not (INTEROP / "node_modules").is_dir(),
        reason="tests/interop/node_modules is missing: run `make test` or "
        "`cd tests/interop && npm ci`",
    ),
]

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
BEFORE = "hello\nworld\n"
AFTER = "hello\nthere\n"
TIMEOUT = 30.0  # per client process; a normal run takes about a second


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Clients and servers keep their state in tmp_path, never in the real home."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "HOME": str(home),
        STATE_DIR_ENV: str(tmp_path / "state"),
        "PYTHONPATH": os.pathsep.join(sys.path),
        "NO_COLOR": "1",
        # The HTTP server's bearer token; ts_client.mjs sends it from the environment.
        TOKEN_VARIABLE: TOKEN,
    }


@pytest.fixture
def ws(workspace: Path) -> Path:
    (workspace / "a.txt").write_text(BEFORE)
    return workspace


def _server_args(workspace: Path) -> list[str]:
    return [sys.executable, "-m", "local_tools", "serve", "mcp", "--workspace", str(workspace)]


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a client in its own process group, and end the whole group afterwards:
    a stdio client's server must not outlive a client that hung or crashed."""
    proc = subprocess.Popen(
        cmd,
        cwd=INTEROP,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{cmd[:3]} hung for {TIMEOUT} s\nstdout: {out}\nstderr: {err}")
    finally:
        with contextlib.suppress(ProcessLookupError):  # everything left, as it should
            os.killpg(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


TOKEN = "interop-token-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        conn.request("GET", "/mcp")
        conn.getresponse().read()
        conn.close()
        return True  # any HTTP status: the app is up
    except OSError:
        return False


@pytest.fixture
def http_url(ws: Path, env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """A `serve mcp --transport http` process on a free loopback port, until the test ends."""
    port = _free_port()
    log = (tmp_path / "http-server.log").open("w")
    args = [*_server_args(ws), "--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 20
        while not _answers(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                logged = (tmp_path / "http-server.log").read_text()
                pytest.fail(f"the HTTP server never answered:\n{logged}")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, ws: Path) -> list[str]:
    """How a client reaches the server: a command to spawn, or the HTTP server's URL."""
    if request.param == "stdio":
        return _server_args(ws)
    return [request.getfixturevalue("http_url")]


# -- the TypeScript SDK's Client ------------------------------------------------------


def test_typescript_sdk_client(target: list[str], ws: Path, env: dict[str, str]) -> None:
    mode = "http" if target[0].startswith("http://") else "stdio"
    done = _run([NODE or "node", "ts_client.mjs", mode, *target], env)
    assert done.returncode == 0, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout)

    assert summary["sdkVersion"] == PINNED["@modelcontextprotocol/sdk"]
    # The server speaks the newest version this client asks for: no downgrade.
    assert summary["protocolVersion"] == summary["clientLatestProtocol"]
    assert summary["server"]["name"] == "local-tools"

    tools = {t["name"]: t for t in summary["tools"]}
    assert {"read_file", "edit"} <= set(tools)
    for tool in tools.values():
        assert tool["inputSchemaType"] == "object", tool
        assert all(isinstance(tool["annotations"].get(h), bool) for h in HINTS), tool
    assert tools["read_file"]["annotations"]["readOnlyHint"] is True
    # The TypeScript client validates structuredContent against these: the calls below
    # succeeding means the declared shapes hold.
    assert tools["read_file"]["hasOutputSchema"] and tools["edit"]["hasOutputSchema"]

    read = summary["read"]
    assert read["isError"] is False, read
    assert "1\thello\n2\tworld" in read["text"]
    assert read["structuredContent"]["content"] == BEFORE

    edit = summary["edit"]
    assert edit["isError"] is False, edit
    assert "-world\n+there" in edit["text"]
    assert "+there" in edit["structuredContent"]["diff"]
    assert ws.joinpath("a.txt").read_text() == AFTER

    # Failures are results the model can read, not protocol errors the client throws.
    for key, code in (
        ("unknown", "UNKNOWN_TOOL"),
        ("missing", "NOT_FOUND"),
        ("wrongTypes", "INVALID_INPUT"),
    ):
        result = summary[key]
        assert "thrown" not in result, (key, result)
        assert result["isError"] is True and result["text"].startswith(f"Error [{code}]:"), key
    assert summary["readAfter"]["structuredContent"]["content"] == AFTER  # still serving


# -- the MCP Inspector CLI ------------------------------------------------------------


def _inspector(
    target: list[str], era: str, env: dict[str, str], *args: str
) -> tuple[int, dict[str, Any], str]:
    cmd = [str(INSPECTOR), "--cli", "--format", "json", "--protocol-era", era, *args]
    if target[0].startswith("http://"):
        cmd += ["--transport", "http", "--server-url", target[0]]
        cmd += ["--header", f"Authorization: Bearer {TOKEN}"]
    else:
        # The Inspector hands a stdio server only a few variables of its own; these
        # keep the server's state in tmp_path and its imports those of this run.
        for key in (STATE_DIR_ENV, "PYTHONPATH"):
            cmd += ["-e", f"{key}={env[key]}"]
        cmd += ["--", *target]
    done = _run(cmd, env)
    try:
        return done.returncode, json.loads(done.stdout), done.stderr
    except json.JSONDecodeError:
        pytest.fail(f"not JSON (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")


def _text(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_cli(target: list[str], era: str, ws: Path, env: dict[str, str]) -> None:
    def call(tool: str, *pairs: str) -> tuple[int, dict[str, Any]]:
        args = ["--method", "tools/call", "--tool-name", tool, "--tool-arg", *pairs]
        rc, out, err = _inspector(target, era, env, *args)
        assert "result" in out, (rc, out, err)  # a result, never a transport or protocol error
        return rc, out["result"]

    # --strict: the Inspector's tool-schema portability check; exit 6 on any error.
    rc, out, err = _inspector(target, era, env, "--method", "tools/list", "--strict")
    assert rc == 0, (out, err)
    tools = {t["name"]: t for t in out["result"]["tools"]}
    assert {"read_file", "edit"} <= set(tools)
    for tool in tools.values():
        assert tool["inputSchema"]["type"] == "object", tool["name"]
        assert all(isinstance(tool["annotations"].get(h), bool) for h in HINTS), tool["name"]
    assert tools["edit"]["outputSchema"]["type"] == "object"

    rc, read = call("read_file", "path=a.txt")
    assert rc == 0 and read["isError"] is False, read
    assert "1\thello\n2\tworld" in _text(read)
    assert read["structuredContent"]["content"] == BEFORE
    # Only 2026-07-28 results carry the server's info: modern did not fall back to legacy.
    modern = "io.modelcontextprotocol/serverInfo" in read.get("_meta", {})
    assert modern == (era == "modern"), read.get("_meta")

    rc, edit = call("edit", "path=a.txt", "old_string=world", "new_string=there")
    assert rc == 0 and edit["isError"] is False, edit
    assert "-world\n+there" in _text(edit)
    assert ws.joinpath("a.txt").read_text() == AFTER

    # The Inspector refuses an unlisted tool name itself (exit 5, tool_not_found) before
    # asking the server, so the server's error results are shown with a failing call.
    rc, missing = call("read_file", "path=no-such-file.txt")
    assert rc == 5 and missing["isError"] is True, missing  # 5: the tool reported an error
    assert _text(missing).startswith("Error [NOT_FOUND]:")


# -- from the default profile to a tool it does not list ------------------------------
# The browser tool reached is browser_get_state, which starts Debian's chromium.


def test_typescript_client_relists_after_find_tools(
    target: list[str], ws: Path, env: dict[str, str]
) -> None:
    # The SDK's own listChanged handling: on notifications/tools/list_changed it lists
    # again; the browser tool is then in its list and called by name.
    mode = "http" if target[0].startswith("http://") else "stdio"
    cmd = [NODE or "node", "ts_profiles.mjs", "browser", "browser_get_state", mode, *target]
    done = _run(cmd, env)
    assert done.returncode == 0, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout)
    assert summary["capabilities"]["tools"]["listChanged"] is True
    assert "find_tools" in summary["before"] and "browser_get_state" not in summary["before"]
    assert (
        summary["found"]["isError"] is False
        and "Loaded into this session" in summary["found"]["text"]
    )
    assert summary["refreshError"] is None, summary
    assert {"browser_launch", "browser_get_state", "read_file"} <= set(summary["after"])
    called = summary["called"]
    assert called["isError"] is False, called
    assert "about:blank" in called["text"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_reaches_an_unlisted_tool_through_call_tool(
    target: list[str], era: str, ws: Path, env: dict[str, str]
) -> None:
    # The Inspector CLI lists once per run and refuses names not in that list: the
    # finder gives the tool's name and parameters, call_tool runs it.
    rc, out, err = _inspector(target, era, env, "--method", "tools/list")
    assert rc == 0, (out, err)
    listed = {t["name"] for t in out["result"]["tools"]}
    assert {"find_tools", "call_tool"} <= listed and "browser_get_state" not in listed

    find = ["--method", "tools/call", "--tool-name", "find_tools", "--tool-arg", "query=browser"]
    rc, out, err = _inspector(target, era, env, *find)
    assert rc == 0 and out["result"]["isError"] is False, (out, err)
    assert "browser_get_state" in _text(out["result"])

    call = ["--method", "tools/call", "--tool-name", "call_tool"]
    call += ["--tool-arg", "name=browser_get_state", "arguments={}"]
    rc, out, err = _inspector(target, era, env, *call)
    assert rc == 0 and out["result"]["isError"] is False, (out, err)
    assert "about:blank" in _text(out["result"])
