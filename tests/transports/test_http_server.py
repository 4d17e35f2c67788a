"""`local-tools serve http` as the openlink extension and a person's browser use it: a real
server process (`python -m local_tools serve http --port 0`), a real HTTP client (httpx),
real files. Every refusal is followed by a request that still works."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from local_tools.core.trust import TrustStore, fingerprint
from local_tools.serving.startup import held_stop_signals
from spawned_http import spawn_http_server

EXTENSION = "chrome-extension://bhnnabgkidkkjgkakmkpnkakfpkcmpnj"


@dataclass
class Server:
    url: str
    token: str
    port: int
    workspace: Path
    state: Path
    proc: subprocess.Popen[str]
    stderr: list[str] = field(default_factory=list)

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def client(self, token: bool = True, **kwargs: Any) -> httpx.Client:
        headers = {**(self.auth if token else {}), **kwargs.pop("headers", {})}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kwargs)

    def exec(self, name: str, args: Any, **extra: Any) -> dict[str, Any]:
        with self.client() as c:
            r = c.post("/exec", json={"name": name, "args": args, "callId": "k3x9q", **extra})
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        assert isinstance(body["output"], str)
        return body

    def alive(self) -> None:
        """The server still answers (after a bad request)."""
        with self.client() as c:
            assert c.get("/health").json()["status"] == "ok"
            assert c.get("/skills").json() == {"skills": []}


@contextmanager
def serve(workspace: Path, state: Path, *extra: str) -> Iterator[Server]:
    with spawn_http_server(workspace, state, *extra) as spawned:
        yield Server(
            spawned.url, spawned.token, spawned.port, workspace, state, spawned.proc,
            spawned.stderr,
        )  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("http")
    ws = base / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text("# demo\n\nfirst line\n")
    (ws / "src" / "reader.py").write_text("print('hi')\n")
    with serve(ws, base / "state") as s:
        yield s


# -- the openlink flow -------------------------------------------------------------------


def test_printed_url_and_token_file(server: Server) -> None:
    assert server.url.startswith("http://127.0.0.1:")  # what the extension may fetch
    assert re.fullmatch(r"[0-9a-f]{64}", server.token)  # 32 random bytes, hex
    path = server.state / "server-token"
    assert path.read_text().strip() == server.token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_popup_health_and_auth(server: Server) -> None:
    with server.client(token=False, headers={"Origin": EXTENSION}) as c:
        health = c.get("/health")
        assert health.json() == {"status": "ok", "dir": str(server.workspace), "version": "0.1.0"}
        assert health.headers["access-control-allow-origin"] == EXTENSION
        assert c.post("/auth", json={"token": server.token}).json() == {"valid": True}
        other = server.token[:-1] + ("1" if server.token.endswith("0") else "0")
        assert c.post("/auth", json={"token": other}).json() == {"valid": False}
        assert c.post("/auth", json={"token": ""}).json() == {"valid": False}
        bad = c.post("/auth", content=b"{not json", headers={"Content-Type": "application/json"})
        assert bad.status_code == 400 and "invalid request" in bad.json()["error"]
        assert c.post("/auth", json=["x"]).status_code == 400
    server.alive()


PROTECTED = [
    ("GET", "/config"),
    ("GET", "/tools"),
    ("POST", "/exec"),
    ("GET", "/prompt"),
    ("GET", "/skills"),
    ("GET", "/files?q=read"),
    ("POST", "/v1/tools/read_file"),
    ("GET", "/openapi.json"),
    ("GET", "/no-such-route"),
    ("GET", "/console/api/state"),
]


@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_routes_need_the_token(server: Server, method: str, path: str) -> None:
    body = {"json": {"name": "read_file", "args": {"path": "README.md"}}}
    with server.client(token=False) as c:
        for headers in ({}, {"Authorization": "Bearer " + "0" * 64}, {"Authorization": "x"}):
            r = c.request(method, path, headers=headers, **(body if method == "POST" else {}))
            assert r.status_code == 401, (path, headers, r.text)
            assert "unauthorized" in r.json()["error"]
    with server.client() as c:
        r = c.request(method, path, **(body if method == "POST" else {}))
        assert r.status_code == (404 if "no-such" in path else 200), r.text


def test_browser_auth_sets_the_console_cookie(server: Server) -> None:
    with server.client(token=False) as c:
        r = c.get("/auth", params={"token": server.token})
        assert r.status_code == 303 and r.headers["location"] == "/"
        cookie = r.headers["set-cookie"]
        name = f"local_tools_console_{server.port}"  # per port: cookies ignore ports
        assert cookie.startswith(f"{name}=")
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        assert "Path=/console/" in cookie
        page = c.get("/")
        assert page.status_code == 200 and "console" in page.text
        assert page.headers["content-type"].startswith("text/html")
        assert page.headers["x-frame-options"] == "DENY"
        # A session of its own, not the token; the console's key only: no tool route
        # takes it instead of the header.
        session = c.cookies.get(name)
        assert session and server.token not in session
        c.cookies.set(name, session, domain="127.0.0.1", path="/")  # sent everywhere
        assert c.get("/tools").status_code == 401
        assert c.post("/exec", json={"name": "list_dir", "args": {}}).status_code == 401
        state = c.get("/console/api/state")  # the console's own API takes the cookie
        assert state.status_code == 200 and state.json()["workspace"] == str(server.workspace)
        c.cookies.clear()
        assert c.get("/console/api/state").status_code == 401
        for wrong in ({"token": "nope"}, {}):
            denied = c.get("/auth", params=wrong)
            assert denied.status_code == 401 and "Wrong or missing token" in denied.text
            assert "set-cookie" not in denied.headers
    server.alive()


def test_config_tools_prompt_skills(server: Server) -> None:
    with server.client() as c:
        assert c.get("/config").json() == {"rootDir": str(server.workspace), "timeout": 60}
        tools = {t["name"]: t for t in c.get("/tools").json()["tools"]}
        assert "invalid" not in tools and {"read_file", "edit", "exec_cmd"} <= set(tools)
        read = tools["read_file"]
        assert read["parameters"]["path"].startswith("string (required) - File to read")
        assert read["parameters"]["offset"].startswith("integer (optional, default 1) - ")
        assert read["input_schema"]["properties"]["offset"]["type"] == "integer"
        prompt = c.get("/prompt")
        assert prompt.headers["content-type"].startswith("text/plain")
        text = prompt.text
        assert '<tool name="read_file" call_id="k3x9q">' in text
        assert '<parameter name="path">src/app.py</parameter>' in text
        assert "5 or more letters and digits" in text
        assert f"- Workspace: {server.workspace}" in text and "- OS: " in text
        assert "find_tools" in tools and "browser_launch" not in tools  # the core profile
        for name in set(tools) - {"call_tool"}:  # a web chat names any tool itself
            assert f"\n### {name}\n" in text
        assert "### invalid" not in text and "## Skills" not in text
        assert "- offset: integer (optional, default 1) - 1-based line number" in text
        assert "One tool call per reply" in text
        assert c.get("/skills").json() == {"skills": []}


def test_files_for_at_mentions(server: Server) -> None:
    with server.client(headers={"Origin": EXTENSION}) as c:
        found = c.get("/files", params={"q": "read"}).json()["files"]
        assert found[:2] == ["README.md", "src/reader.py"]
        assert c.get("/files", params={"q": "zzzz-nothing"}).json() == {"files": []}
        assert "README.md" in c.get("/files").json()["files"]
        long = c.get("/files", params={"q": "x" * 201})
        assert long.status_code == 400 and "too long" in long.json()["error"]
        assert c.get("/files", params={"q": "x" * 200}).status_code == 200
    server.alive()


def test_native_route_and_openapi(server: Server) -> None:
    with server.client() as c:
        env = c.post("/v1/tools/read_file", json={"path": "README.md", "limit": 1}).json()
        assert env["success"] is True and env["output"]["content"] == "# demo\n"
        assert env["meta"]["tool"] == "read_file"
        listed = c.post("/v1/tools/process_list").json()  # no body: no arguments
        assert listed["success"] is True
        typed = c.post("/v1/tools/read_file", json={"path": "README.md", "offset": "2"}).json()
        assert typed["success"] is True  # native clients send JSON types; pydantic's lax rules
        missing = c.post("/v1/tools/nope", json={}).json()
        assert missing["success"] is False and missing["error"]["error_code"] == "UNKNOWN_TOOL"
        doc = c.get("/openapi.json").json()
        assert doc["openapi"] == "3.1.0" and doc["servers"] == [{"url": server.url}]
        op = doc["paths"]["/v1/tools/read_file"]["post"]
        body = op["requestBody"]["content"]["application/json"]["schema"]
        assert body["required"] == ["path"] and body["properties"]["limit"]["type"] == "integer"
        edits = doc["paths"]["/v1/tools/multi_edit"]["post"]["requestBody"]["content"]
        assert "$ref" not in str(edits)  # self-contained: no dangling #/$defs
        assert "/v1/tools/invalid" not in doc["paths"]
        assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


# -- the guard ---------------------------------------------------------------------------


def test_foreign_host_is_refused(server: Server) -> None:
    with server.client() as c:
        for host in ("evil.example:%d", "127.0.0.1.nip.io:%d", "127.0.0.1:1", "localhost"):
            r = c.get("/health", headers={"Host": host % server.port if "%" in host else host})
            assert r.status_code == 421 and "DNS rebinding" in r.json()["error"], host
        for host in ("localhost:%d", "LOCALHOST:%d", "127.0.0.1:%d", "[::1]:%d"):
            assert c.get("/tools", headers={"Host": host % server.port}).status_code == 200
    server.alive()


def test_web_origins_are_refused_extensions_get_cors(server: Server) -> None:
    port = server.port
    call = {"name": "read_file", "args": {"path": "README.md"}}
    with server.client() as c:
        for origin in ("https://evil.example", "null", f"http://localhost:{port + 1}", "file://"):
            r = c.post("/exec", json=call, headers={"Origin": origin})
            assert r.status_code == 403 and "allowed_origins" in r.json()["error"], origin
            assert "access-control-allow-origin" not in r.headers
            assert c.get("/health", headers={"Origin": origin}).status_code == 403
        for origin in (EXTENSION, "moz-extension://1234-abcd", f"http://127.0.0.1:{port}"):
            r = c.post("/exec", json=call, headers={"Origin": origin})
            assert r.status_code == 200 and r.json()["status"] == "success"
            assert r.headers["access-control-allow-origin"] == origin
            assert r.headers["vary"] == "Origin"
        plain = c.get("/tools")  # no Origin (curl, scripts): allowed, no CORS headers
        assert plain.status_code == 200 and "access-control-allow-origin" not in plain.headers
        # A 401 still carries CORS for the extension, so it can read why.
        r = c.get("/tools", headers={"Origin": EXTENSION, "Authorization": ""})
        assert r.status_code == 401 and r.headers["access-control-allow-origin"] == EXTENSION
    server.alive()


def test_preflight_is_204_before_auth(server: Server) -> None:
    with server.client(token=False) as c:
        r = c.options(
            "/exec",
            headers={
                "Origin": EXTENSION,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type",
            },
        )
        assert r.status_code == 204 and r.content == b""
        assert r.headers["access-control-allow-origin"] == EXTENSION
        assert r.headers["access-control-allow-methods"] == "GET, POST, OPTIONS"
        assert r.headers["access-control-allow-headers"] == "Content-Type, Authorization"
        evil = c.options("/exec", headers={"Origin": "https://evil.example"})
        assert evil.status_code == 403
    server.alive()


def test_bad_bodies_are_refused_and_the_server_keeps_serving(server: Server) -> None:
    with server.client() as c:
        for raw in (b"{not json", b"", b"\xff\xfe", b"[1, 2]", b'{"args": {}}', b'{"name": 3}'):
            r = c.post("/exec", content=raw, headers={"Content-Type": "application/json"})
            assert r.status_code == 400, raw
            body = r.json()
            assert body["status"] == "error" and body["output"] == body["error"] != ""
            server.alive()
        bad = c.post(
            "/v1/tools/read_file", content=b"{", headers={"Content-Type": "application/json"}
        )
        assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]
        for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
            r = c.post("/exec", content=b'{"name": "list_dir"}', headers={"Content-Type": kind})
            assert r.status_code == 415 and "JSON" in r.json()["error"], kind
        ok = c.post(
            "/exec",
            content=b'{"name": "list_dir"}',
            headers={"Content-Type": "application/json; charset=utf-8"},
        )
        assert ok.status_code == 200 and ok.json()["status"] == "success"
        big = b'{"name": "list_dir", "args": {"path": "' + b"x" * (11 * 1024 * 1024) + b'"}}'
        r = c.post("/exec", content=big, headers={"Content-Type": "application/json"})
        assert r.status_code == 413 and "larger than" in r.json()["error"]
        server.alive()

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams in
            for _ in range(11):
                yield b" " * (1024 * 1024)

        r = c.post("/exec", content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        server.alive()
        assert c.get("/exec").status_code == 405
        assert c.get("/nowhere").json() == {"error": "Not Found"}
        assert c.get("/console/static/../exec").status_code in (400, 404)
    server.alive()


# -- /exec: what a web chat's calls do ------------------------------------------------------


def test_exec_unknown_tool_is_a_200_error_naming_it(server: Server) -> None:
    body = server.exec("rread_file", {"path": "README.md"})
    assert body["status"] == "error"
    assert body["output"] == body["error"]
    assert "rread_file" in body["output"] and "read_file" in body["output"]


def test_exec_coerces_xml_string_arguments(server: Server) -> None:
    ws = server.workspace
    (ws / "lines.txt").write_text("one\ntwo\nthree\nfour\n")
    # Values as the extension sends them from <parameter> tags: strings, newlines kept.
    page = server.exec("read_file", {"path": "lines.txt", "offset": "2\n", "limit": "\n2\n"})
    assert page["status"] == "success"
    assert "2\ttwo\n3\tthree" in page["output"] and "one" not in page["output"]
    assert "four" not in page["output"]

    (ws / "edit.txt").write_text("a = 1\nb = 1\n")
    edited = server.exec(
        "edit",
        {"path": "edit.txt", "old_string": "1", "new_string": "2", "replace_all": "true\n"},
    )
    assert edited["status"] == "success", edited
    assert (ws / "edit.txt").read_text() == "a = 2\nb = 2\n"

    (ws / "b.txt").write_text("bee\n")
    many = server.exec("read_many_files", {"paths": '\n["lines.txt", "b.txt"]\n'})
    assert many["status"] == "success" and "bee" in many["output"] and "four" in many["output"]

    multi = server.exec(
        "multi_edit",
        {"path": "b.txt", "edits": '[{"old_string": "bee", "new_string": "wasp"}]'},
    )
    assert multi["status"] == "success" and (ws / "b.txt").read_text() == "wasp\n"

    # Strings stay exactly as written: surrounding whitespace is content.
    wrote = server.exec(
        "write_file", {"path": "w.txt", "content": "\n  kept  \n", "overwrite": "True"}
    )
    assert wrote["status"] == "success" and (ws / "w.txt").read_text() == "\n  kept  \n"

    # `arguments` instead of `args` (the JSON fallback), callId null.
    with server.client() as c:
        r = c.post(
            "/exec", json={"name": "read_file", "arguments": {"path": "b.txt"}, "callId": None}
        )
    assert r.json() == {"status": "success", "output": "1\twasp\n\n(End of file - 1 lines total.)"}

    # A value that does not convert reaches the runner as written; its error names it.
    bad = server.exec("read_file", {"path": "lines.txt", "offset": "second"})
    assert bad["status"] == "error" and "offset" in bad["output"] and "second" in bad["output"]


def test_exec_tool_failure_is_200_with_the_message(server: Server) -> None:
    body = server.exec("read_file", {"path": "READMe.md"})
    assert body["status"] == "error" and body["output"] == body["error"]
    assert body["output"].startswith("Error [NOT_FOUND]: File not found: READMe.md")
    assert "README.md" in body["output"]  # the suggestion


def test_exec_ask_with_no_person_is_denied_naming_the_rule(server: Server) -> None:
    body = server.exec("exec_cmd", {"command": "touch made.txt"})
    assert body["status"] == "error"
    assert body["output"].startswith("Error [PERMISSION_DENIED]")
    assert '"execute:command" = { "touch *" = "allow" }' in body["output"]
    assert not (server.workspace / "made.txt").exists()
    (server.workspace / "keep.txt").write_text("x")
    deleted = server.exec("file_delete", {"path": "keep.txt"})
    assert deleted["status"] == "error" and '"delete:file"' in deleted["output"]
    assert (server.workspace / "keep.txt").exists()
    ran = server.exec("exec_cmd", {"command": "ls"})  # read-only commands are allowed
    assert ran["status"] == "success" and "README.md" in ran["output"]


def test_calls_are_audited_as_http(server: Server) -> None:
    from local_tools.core.audit import AuditLog

    server.exec("file_stat", {"path": "README.md"})
    log = AuditLog(server.state / "audit.sqlite", flush_interval=0)
    try:
        deadline = time.monotonic() + 10  # the server writes its log in batches, twice a second
        while not (found := log.query(tool="file_stat", limit=1)):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        last = found[0]
    finally:
        log.close()
    assert last.user_id == "default" and last.transport == "http"


# -- configuration ----------------------------------------------------------------------


def test_allowed_origins_from_config(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "local-tools.toml").write_text('[http]\nallowed_origins = ["https://*.example.com"]\n')
    TrustStore(tmp_path / "state").trust(ws, fingerprint(ws))  # as `local-tools trust` does
    with serve(ws, tmp_path / "state") as s, s.client() as c:
        r = c.get("/tools", headers={"Origin": "https://chat.example.com"})
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == "https://chat.example.com"
        assert c.get("/tools", headers={"Origin": EXTENSION}).status_code == 403
        assert c.get("/tools", headers={"Origin": "https://example.org"}).status_code == 403


def test_broken_http_config_stops_the_server_naming_the_key(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "local-tools.toml").write_text('[http]\nallowed_origins = ["*"]\n')
    env = {**os.environ, "LOCAL_TOOLS_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        [sys.executable, "-m", "local_tools", "serve", "http", "-w", str(ws), "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 2
    assert "http.allowed_origins[0]" in done.stderr and "local-tools.toml" in done.stderr


def test_port_in_use_is_a_usage_error(server: Server, tmp_path: Path) -> None:
    env = {**os.environ, "LOCAL_TOOLS_STATE_DIR": str(tmp_path / "state")}
    args = ["serve", "http", "-w", str(server.workspace), "--port", str(server.port)]
    done = subprocess.run(
        [sys.executable, "-m", "local_tools", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 2 and "pass --port" in done.stderr


# -- load ----------------------------------------------------------------------------------


def test_load_10000_exec_calls_from_20_clients(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "small.txt").write_text("".join(f"line {i}\n" for i in range(40)))
    total, clients = 10_000, 20
    with serve(ws, tmp_path / "state") as s:
        server_proc = psutil.Process(s.proc.pid)
        rss: dict[str, int] = {}
        errors: list[str] = []
        done = 0
        expected = "1\tline 0\n"

        async def client(c: httpx.AsyncClient, count: int) -> None:
            nonlocal done
            call = {
                "name": "read_file",
                "args": {"path": "small.txt", "limit": "5"},
                "callId": None,
            }
            for _ in range(count):
                r = await c.post("/exec", json=call)
                body = r.json()
                if r.status_code != 200 or body["status"] != "success":
                    errors.append(r.text[:200])
                elif not body["output"].startswith(expected):
                    errors.append(body["output"][:200])
                done += 1
                if done == 1000:
                    rss["first"] = server_proc.memory_info().rss

        async def main() -> float:
            # The pool reuses its first idle connection, so one at the end of the list can
            # sit idle until the server's 5 s keep-alive closes it just as a request is
            # written (a reset, seen once in CI): expire idle connections first.
            limits = httpx.Limits(
                max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=2
            )
            async with httpx.AsyncClient(
                base_url=s.url, headers={**s.auth, "Origin": EXTENSION}, limits=limits, timeout=60
            ) as c:
                started = time.monotonic()
                await asyncio.gather(*(client(c, total // clients) for _ in range(clients)))
                return time.monotonic() - started

        elapsed = asyncio.run(main())
        rss["last"] = server_proc.memory_info().rss
        s.alive()
    assert errors == []
    assert done == total
    growth = (rss["last"] - rss["first"]) / 2**20
    print(f"{total} calls in {elapsed:.1f} s ({total / elapsed:.0f}/s), RSS growth {growth:.1f} MB")
    assert growth < 30, f"server RSS grew {growth:.1f} MB over {total - 1000} calls"


def test_a_broken_plugin_is_logged_at_start_and_the_rest_serve(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    plugins = ws / ".local-tools" / "tools"
    plugins.mkdir(parents=True)
    (plugins / "broken.py").write_text("raise RuntimeError('half-written plugin')\n")
    (ws / "a.txt").write_text("still here\n")
    TrustStore(tmp_path / "state").trust(ws, fingerprint(ws))  # as `local-tools trust` does
    with serve(ws, tmp_path / "state") as server:
        out = server.exec("read_file", {"path": "a.txt"})
        assert out["status"] == "success" and "still here" in out["output"]
        deadline = time.monotonic() + 10
        while "half-written plugin" not in "".join(server.stderr):
            assert time.monotonic() < deadline, "".join(server.stderr)
            time.sleep(0.05)
        assert "broken.py" in "".join(server.stderr)


def test_a_stop_signal_before_the_servers_handlers_is_held_not_raised() -> None:
    # Ctrl-C while asyncio builds its loop left a half-built loop printing a traceback
    # (seen once in CI): between the URL and uvicorn's handlers, signals are recorded.
    before = signal.getsignal(signal.SIGINT)
    with held_stop_signals() as held:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # delivered at the next bytecode boundary
        assert held == [signal.SIGINT, signal.SIGTERM]
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.parametrize("attempt", range(3))
def test_ctrl_c_as_soon_as_the_url_is_printed_stops_cleanly(tmp_path: Path, attempt: int) -> None:
    (tmp_path / "ws").mkdir()
    with spawn_http_server(tmp_path / "ws", tmp_path / "state") as server:
        pass  # spawn_http_server sends SIGINT at once and asserts exit 0, no traceback
    assert server.proc.returncode == 0
