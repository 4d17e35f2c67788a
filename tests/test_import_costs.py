"""What `serve mcp`'s start costs: engines load with a tool's first call, argument models
are built when first used, and tools/list's declarations are built once per version.

Real processes: a `serve mcp` spoken to over stdio, and fresh interpreters for what the
registry imports. No timings here (benchmarks/mcp_server.py measures them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# Engines a start must not import: the tools that need them import them in the call.
ENGINES = (
    "local_tools.browser",
    "local_tools.desktop",
    "local_tools.knowledge.validate",
    "local_tools.lsp.client",
    "local_tools.lsp.navigation",
    "local_tools.lsp.rename",
    "local_tools.subagents",
    "local_tools.compaction",
    "local_tools.models",
    "playwright",
)


def _python(code: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_registry_imports_no_engine() -> None:
    code = (
        "import sys\n"
        "from local_tools.tools import builtin_tools\n"
        "names = {t.name for t in builtin_tools()}\n"
        "assert {'browser_click', 'lsp', 'screenshot', 'open_in_folder',\n"
        "        'check_data_format'} <= names, names\n"
        f"engines = {ENGINES!r}\n"
        "print(sorted(m for m in sys.modules if m.startswith(engines)))\n"
    )
    assert _python(code) == "[]"


def test_argument_models_are_built_with_their_first_use() -> None:
    code = (
        "from local_tools.tools import builtin_tools\n"
        "tools = {t.name: t for t in builtin_tools()}\n"
        "model = tools['write_file'].args_model\n"
        "before = model.__pydantic_complete__\n"
        "model.model_validate({'path': 'a', 'content': 'b'})\n"
        "print(before, model.__pydantic_complete__)\n"
    )
    assert _python(code) == "False True"


class _Server:
    """`local-tools serve mcp` over stdio, spoken to line by line."""

    def __init__(self, ws: Path, state: Path) -> None:
        env = {**os.environ, "LOCAL_TOOLS_STATE_DIR": str(state)}
        argv = [sys.executable, "-m", "local_tools", "serve", "mcp", "--workspace", str(ws)]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.ids = 0
        self.request("initialize", _INIT)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        assert self.proc.stdout is not None
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params or {}})
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self.ids:
                assert "error" not in answer, answer
                return answer["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


_INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"},
}


def _tools(ws: Path, state: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    server = _Server(ws, state)
    try:
        listed = server.request("tools/list")["tools"]
        read = server.request("tools/call", {"name": "read_file", "arguments": {"path": "a.txt"}})
    finally:
        server.close()
    return listed, read


def _expected(ws: Path, state: Path) -> list[dict[str, Any]]:
    """What tools/list must say: `local-tools schema --format mcp` for the same tools."""
    code = (
        "import json, sys\n"
        "from local_tools import Toolbox\n"
        "from local_tools.transports.mcp import mcp_tool\n"
        "tb = Toolbox(sys.argv[1], state_dir=sys.argv[2])\n"
        "decls = [mcp_tool(t).model_dump(mode='json', by_alias=True, exclude_none=True)\n"
        "         for t in tb.listed()]\n"
        "print(json.dumps(decls))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ws), str(state)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout))


def test_tools_list_is_the_same_built_cached_or_from_a_damaged_cache(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    state = tmp_path / "state"
    cache = state / "cache" / "mcp-tools.json"

    first, read = _tools(ws, state)  # builds the declarations, writes the cache
    assert cache.exists()
    assert cache.stat().st_mode & 0o077 == 0  # private, like the rest of the state dir
    assert read["structuredContent"]["content"] == "hello\n"
    second, read = _tools(ws, state)  # from the cache; read_file's model built at its call
    assert read["structuredContent"]["content"] == "hello\n"
    assert second == first

    expected = _expected(ws, tmp_path / "state-expected")
    assert [_comparable(t) for t in first] == [_comparable(t) for t in expected]

    cache.write_text("{not json")  # a damaged cache is rebuilt, never served
    assert _tools(ws, state)[0] == first
    data = json.loads(cache.read_text())
    data["fingerprint"] = "another version"
    for decl in data["tools"].values():
        decl["description"] = "stale"
    cache.write_text(json.dumps(data))  # another version's: not used
    assert _tools(ws, state)[0] == first


def _comparable(decl: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(decl, sort_keys=True))
