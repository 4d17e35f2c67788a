"""Issue 20, class 5: the model cannot reach local-tools itself.

The attack: with `[network] allow_private` opened for a local dev server, the model read
the token, opened `/auth?token=` with its own browser tool and clicked "Allow" on its
own pending approval; separately, the console cookie was the token itself, sent to
every port of 127.0.0.1.

Each test attacks a real `local-tools serve http` process (spawned as a person starts
it) or a real loopback server standing in for one (registered in the state dir as the
servers register themselves, so its request counter proves nothing arrived), and
asserts the effect did not happen: no request arrived, no file was written, the
approval is still pending. Positive controls show each effect does happen by the
door a person uses, so a refusal is not a broken setup.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

import net_server
from local_tools import Toolbox
from local_tools.core.errors import PermissionDenied
from local_tools.core.servers import listening_ports, register_server, unregister_server
from local_tools.security import net
from local_tools.security.ip_ranges import this_machine
from local_tools.transports import token_command
from local_tools.transports.http_guard import console_cookie
from spawned_http import Spawned, spawn_http_server

# Every way this machine can be named is allowed: only the server registry stands
# between the model's tools and local-tools' own ports.
ALLOW_ALL_LOCAL = [
    "127.0.0.0/8",
    "0.0.0.0/8",
    "::1",
    "::",
    "::ffff:0:0/96",
    "::/96",
    "localhost",
    "localhost.localdomain",
    "192.0.2.0/24",  # this container's eth0 (TEST-NET-1); other machines: see _lan_address
]
RULES = {"network:outbound": "allow", "browser:evaluate": "allow"}


def _spellings(port: int) -> list[str]:
    """URLs that reach (or would reach) a server on 127.0.0.1:`port` from this machine."""
    return [
        f"http://127.0.0.1:{port}/health",
        f"http://localhost:{port}/health",
        f"http://LOCALHOST.:{port}/health",
        f"http://127.1:{port}/health",
        f"http://2130706433:{port}/health",
        f"http://0x7f000001:{port}/health",
        f"http://127.0.0.2:{port}/health",
        f"http://0.0.0.0:{port}/health",
        f"http://0:{port}/health",
        f"http://[::ffff:127.0.0.1]:{port}/health",
        f"http://[::ffff:7f00:1]:{port}/health",
        f"http://[::127.0.0.1]:{port}/health",
        f"http://[::1]:{port}/health",
        f"http://[::]:{port}/health",
        f"http://good.example@127.0.0.1:{port}/health",
        f"http://127.0.0.1:{port}/auth?token=whatever",
    ]


@dataclass
class Served:
    server: Spawned
    workspace: Path
    state: Path

    @property
    def port(self) -> int:
        return self.server.port


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("self-reach")
    ws, state = base / "ws", base / "state"
    ws.mkdir()
    with spawn_http_server(ws, state) as server:
        yield Served(server, ws, state)


@pytest.fixture
def model(served: Served) -> Iterator[Toolbox]:
    """The model's own tools on the server's workspace and state dir, every local address
    allowed by `allow_private`."""
    config = {"network": {"allow_private": ALLOW_ALL_LOCAL}, "permissions": RULES}
    tb = Toolbox(served.workspace, config, state_dir=served.state, audit=False, plugins=False)
    yield tb
    tb.close()


@pytest.fixture
def canary(served: Served) -> Iterator[net_server.Server]:
    """A loopback server registered in the state dir as local-tools' servers register
    themselves: what it receives is counted."""
    server = net_server.serve("127.0.0.1")
    server.route("/health")(lambda req: (200, {"Content-Type": "text/plain"}, b"canary"))
    record = register_server(served.state, "http", "127.0.0.1", server.port)
    yield server
    unregister_server(record)
    server.stop()


def _refused(envelope: dict[str, Any]) -> str:
    assert not envelope["success"], f"reached it: {envelope.get('output')}"
    error = envelope["error"]
    assert error["error_code"] == "PERMISSION_DENIED", error
    assert "local-tools' own server" in error["message"], error["message"]
    return str(error["message"])


# --------------------------------------------------------------------------- the registry


def test_a_running_server_is_registered_with_its_port(served: Served) -> None:
    assert served.port in listening_ports(served.state)
    [record] = [
        json.loads(p.read_text()) for p in (served.state / "servers").glob(f"*-{served.port}.json")
    ]
    assert record["pid"] == served.server.proc.pid and record["kind"] == "http"


def test_a_stopped_server_leaves_no_record(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    with spawn_http_server(tmp_path / "ws", tmp_path / "state") as server:
        assert server.port in listening_ports(tmp_path / "state")
    assert listening_ports(tmp_path / "state") == frozenset()
    assert list((tmp_path / "state" / "servers").iterdir()) == []


def test_a_dead_servers_record_is_ignored(tmp_path: Path, model: Toolbox) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = tmp_path / "servers"
    folder.mkdir()
    (folder / f"{dead.pid}-4242.json").write_text(
        json.dumps({"kind": "http", "host": "127.0.0.1", "port": 4242, "pid": dead.pid})
    )
    assert listening_ports(tmp_path) == frozenset()
    assert not (folder / f"{dead.pid}-4242.json").exists()


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "127.4.5.6", "0.0.0.0", "0.1.2.3", "::1", "::", "::ffff:127.0.0.1",
     "::ffff:0.0.0.0", "::127.0.0.1", "64:ff9b::7f00:1"],
)  # fmt: skip
def test_this_machine_addresses(address: str) -> None:
    assert this_machine(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["8.8.8.8", "2001:4860:4860::8888", "10.255.255.254"])
def test_other_machines_addresses(address: str) -> None:
    assert not this_machine(ipaddress.ip_address(address))


def test_only_this_machine_is_refused_on_a_servers_port() -> None:
    """The port of a local server is not refused on other machines (no collateral)."""

    async def public(host: str, port: int) -> list[str]:
        return ["93.184.215.14"]

    guard = net.Guard(["127.0.0.1"], resolver=public, local_servers=lambda: {443})
    assert asyncio.run(guard.addresses("example.com", 443)) == ["93.184.215.14"]
    with pytest.raises(PermissionDenied, match="local-tools' own server"):
        asyncio.run(guard.addresses("127.0.0.1", 443))
    assert asyncio.run(guard.addresses("127.0.0.1", 444)) == ["127.0.0.1"]
    # allow_private naming the name or the address changes nothing.
    wide = net.Guard(["localhost", "127.0.0.1", "::/0"], local_servers=lambda: {443})
    for host in ("localhost", "127.0.0.1", "[::1]", "::ffff:127.0.0.1"):
        with pytest.raises(PermissionDenied, match="local-tools' own server"):
            asyncio.run(wide.addresses(host, 443))


# --------------------------------------------------------------------------- web tools


def test_web_fetch_never_reaches_a_registered_port_however_spelled(
    model: Toolbox, canary: net_server.Server
) -> None:
    for url in _spellings(canary.port):
        _refused(model.run("web_fetch", {"url": url}))
        _refused(model.run("http_request", {"url": url}))
        _refused(model.run("http_request", {"url": url, "method": "POST", "body": {"a": 1}}))
    assert canary.requests == []


def test_only_exactly_127_0_0_1_allowed_is_refused_too(
    served: Served, canary: net_server.Server
) -> None:
    """The README's own setting for a local dev server."""
    config = {"network": {"allow_private": ["127.0.0.1"]}, "permissions": RULES}
    tb = Toolbox(served.workspace, config, state_dir=served.state, audit=False, plugins=False)
    try:
        _refused(tb.run("web_fetch", {"url": canary.url("/health")}))
        _refused(tb.run("http_request", {"url": canary.url("/health")}))
    finally:
        tb.close()
    assert canary.requests == []


def test_a_redirect_from_an_allowed_local_server_does_not_arrive(
    model: Toolbox, canary: net_server.Server
) -> None:
    site = net_server.serve("127.0.0.1")
    try:
        for i, target in enumerate(_spellings(canary.port)[:6]):
            site.route(f"/go{i}")(lambda req, t=target: (307, {"Location": t}, b""))
            _refused(model.run("web_fetch", {"url": site.url(f"/go{i}")}))
            _refused(
                model.run(
                    "http_request", {"url": site.url(f"/go{i}"), "method": "POST", "body": "x"}
                )
            )
        assert len(site.requests) == 12  # the allowed server was reached: the hop was not
    finally:
        site.stop()
    assert canary.requests == []


def test_the_control_an_unregistered_port_is_reached(
    model: Toolbox, canary: net_server.Server, served: Served
) -> None:
    """Without its record the same fetch arrives: the refusal is the registry's doing."""
    for record in (served.state / "servers").glob(f"*-{canary.port}.json"):
        record.unlink()
    assert model.run("web_fetch", {"url": canary.url("/health")})["success"]
    assert len(canary.requests) == 1


def test_the_real_servers_api_is_not_reached(model: Toolbox, served: Served) -> None:
    """The model holds the token: it still cannot use the server's API with its web tools
    (the file the API would write is not written), by any spelling."""
    token = served.server.token
    for i, url in enumerate(_spellings(served.port)):
        exec_url = url.split("/health")[0].split("/auth")[0] + "/exec"
        body = {"name": "write_file", "args": {"path": f"pwn{i}.txt", "content": "x"}}
        headers = {"Authorization": f"Bearer {token}"}
        _refused(
            model.run(
                "http_request",
                {"url": exec_url, "method": "POST", "headers": headers, "body": body},
            )
        )
        _refused(
            model.run("web_fetch", {"url": f"http://127.0.0.1:{served.port}/auth?token={token}"})
        )
    assert sorted(p.name for p in served.workspace.iterdir() if p.name.startswith("pwn")) == []
    # The control: the same request from outside the model's tools writes the file.
    with httpx.Client(timeout=30) as c:
        r = c.post(
            f"{served.server.url}/exec",
            headers={"Authorization": f"Bearer {token}"},
            json={"name": "write_file", "args": {"path": "control.txt", "content": "x"}},
        )
    assert r.status_code == 200 and (served.workspace / "control.txt").exists(), r.text
    (served.workspace / "control.txt").unlink()


def _lan_address() -> str | None:
    """This machine's own non-loopback IPv4 address, if it has one."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not address.address.startswith("127."):
                return str(address.address)
    return None


def test_a_server_on_every_interface_is_not_reached_by_the_lan_address(
    tmp_path: Path,
) -> None:
    address = _lan_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to test with")
    (tmp_path / "ws").mkdir()
    with spawn_http_server(tmp_path / "ws", tmp_path / "state", "--host", "0.0.0.0") as server:
        allow = [*ALLOW_ALL_LOCAL, f"{address}/32"]
        config = {"network": {"allow_private": allow}, "permissions": RULES}
        tb = Toolbox(tmp_path / "ws", config, state_dir=tmp_path / "state", audit=False)
        try:
            for url in (f"http://{address}:{server.port}/health", *_spellings(server.port)):
                _refused(tb.run("web_fetch", {"url": url}))
        finally:
            tb.close()
        # The control: it does answer on that address.
        assert httpx.get(f"http://{address}:{server.port}/health", timeout=10).status_code in (
            200,
            421,  # Host is not loopback: refused by the guard, but it was reached
        )


def test_the_mcp_server_over_http_is_registered_and_not_reached(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    with _mcp_server(tmp_path / "ws", tmp_path / "state") as (port, _log):
        assert port in listening_ports(tmp_path / "state")
        config = {"network": {"allow_private": ALLOW_ALL_LOCAL}, "permissions": RULES}
        tb = Toolbox(tmp_path / "ws", config, state_dir=tmp_path / "state", audit=False)
        try:
            for url in _spellings(port):
                _refused(tb.run("http_request", {"url": url.replace("/health", "/mcp")}))
        finally:
            tb.close()
    assert listening_ports(tmp_path / "state") == frozenset()


# --------------------------------------------------------------------------- the token


class _McpLog:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._pump, args=(proc,), daemon=True)
        self._thread.start()

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.lines.append(line)

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def join(self) -> None:
        self._thread.join(10)


@contextmanager
def _mcp_server(ws: Path, state: Path) -> Iterator[tuple[int, _McpLog]]:
    env = {**os.environ, "LOCAL_TOOLS_STATE_DIR": str(state)}
    env.pop("LOCAL_TOOLS_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "local_tools", "serve", "mcp", "--transport", "http",
         "--port", "0", "--workspace", str(ws)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env=env,
    )  # fmt: skip
    log = _McpLog(proc)
    try:
        deadline = time.monotonic() + 30
        while "Bearer" not in log.text:
            assert proc.poll() is None, log.text
            assert time.monotonic() < deadline, log.text
            time.sleep(0.05)
        port = int(log.text.split("/mcp")[0].rsplit(":", 1)[1])
        yield port, log
    finally:
        proc.terminate()
        proc.wait(20)
        log.join()
        assert proc.stderr is not None
        proc.stderr.close()


def test_the_mcp_server_shows_the_token_once_then_only_where_it_is(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    state = tmp_path / "state"
    with _mcp_server(tmp_path / "ws", state) as (_port, first):
        pass
    token = (state / "server-token").read_text().strip()
    assert token in first.text  # the start that made it: the person configures once
    with _mcp_server(tmp_path / "ws", state) as (port, second):
        assert token not in second.text
        assert str(state / "server-token") in second.text
        # ... and it still takes the token.
        r = httpx.post(
            f"http://127.0.0.1:{port}/mcp",
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            json={},
            timeout=10,
        )
        assert r.status_code != 401


def _rotate(state: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> str:
    monkeypatch.setenv("LOCAL_TOOLS_STATE_DIR", str(state))
    monkeypatch.delenv("LOCAL_TOOLS_TOKEN", raising=False)
    assert token_command.run(argparse.Namespace(rotate=True)) == 0
    return str(capsys.readouterr().out.strip())


def test_rotating_the_token_ends_the_old_one_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    (tmp_path / "ws").mkdir()
    state = tmp_path / "state"
    with (
        spawn_http_server(tmp_path / "ws", state) as server,
        httpx.Client(base_url=server.url, timeout=10) as c,
    ):
        old = server.token
        c.get("/auth", params={"token": old})  # a console session opened with the old token
        assert c.get("/console/api/state").status_code == 200
        new = _rotate(state, monkeypatch, capsys)
        assert new != old and (state / "server-token").read_text().strip() == new
        bearer = {"Authorization": f"Bearer {old}"}
        assert c.get("/tools", headers=bearer).status_code == 401
        assert c.get("/console/api/state").status_code == 401  # its session ended too
        assert c.post("/auth", json={"token": old}).json() == {"valid": False}
        assert c.get("/tools", headers={"Authorization": f"Bearer {new}"}).status_code == 200


# --------------------------------------------------------------------------- the console


def _pending(served: Served) -> tuple[Toolbox, str]:
    tb = Toolbox(served.workspace, state_dir=served.state, audit=False, plugins=False)
    request_id = tb.pending.submit(
        "permission",
        {"tool": "file_delete", "permission": "delete:file", "subject": "a.txt",
         "user_id": "default", "summary": "delete a.txt", "suggestion": None},
    )  # fmt: skip
    return tb, request_id


def test_the_bearer_token_cannot_answer_a_pending_approval(served: Served) -> None:
    tb, request_id = _pending(served)
    token, port = served.server.token, served.port
    body = {"id": request_id, "answer": {"decision": "once"}}
    attempts: list[dict[str, Any]] = [
        {"headers": {"Authorization": f"Bearer {token}"}},
        {"headers": {"Authorization": f"bearer {token}"}},
        {"headers": {"Cookie": f"local_tools_console={token}"}},  # the old cookie
        {"headers": {"Cookie": f"{console_cookie(port)}={token}"}},  # the token as a session
        {"headers": {"Cookie": f"{console_cookie(port)}=forged"}},
        {"params": {"token": token}},
        {},
    ]
    try:
        with httpx.Client(base_url=served.server.url, timeout=10) as c:
            for attempt in attempts:
                for path in ("/console/api/answer", "/console/api/answer/", "/console/api//answer"):
                    r = c.post(path, json=body, follow_redirects=True, **attempt)
                    assert r.status_code in (401, 403, 404), (attempt, path, r.text)
                    assert tb.pending.get(request_id).status == "pending"  # type: ignore[union-attr]
            # The control: the person's console session answers it.
            c.get("/auth", params={"token": token})
            r = c.post("/console/api/answer", json=body)
            assert r.status_code == 200, r.text
        item = tb.pending.get(request_id)
        assert item is not None and item.status == "answered"
        assert item.answered_auth == "console-session"
    finally:
        tb.close()


def test_a_console_answer_is_audited_as_a_console_session(served: Served) -> None:
    """A call waiting for approval; the person answers in the console: the audit row
    says how they were authenticated."""
    tb = Toolbox(served.workspace, state_dir=served.state, plugins=False)
    (served.workspace / "doomed.txt").write_text("x")
    tb.pending.beat("test-console", served.server.url)  # the console counts as open
    result: dict[str, Any] = {}
    call = threading.Thread(
        target=lambda: result.update(tb.run("file_delete", {"path": "doomed.txt"}, transport="mcp"))
    )
    call.start()
    try:
        with httpx.Client(base_url=served.server.url, timeout=10) as c:
            c.get("/auth", params={"token": served.server.token})
            deadline = time.monotonic() + 10
            while not tb.pending.pending():
                assert time.monotonic() < deadline, "the call did not queue its question"
                time.sleep(0.05)
            [item] = tb.pending.pending()
            r = c.post("/console/api/answer", json={"id": item.id, "answer": {"decision": "once"}})
            assert r.status_code == 200, r.text
        call.join(20)
        assert result["success"], result
        assert tb.audit is not None
        tb.audit.flush()
        [row] = [r for r in tb.audit.query(limit=20) if r.tool == "answer"]
        assert row.args["authenticated"] == "console-session"
        assert row.args["answered_by"].startswith("web console")
    finally:
        tb.pending.console_gone("test-console")
        tb.close()


def test_the_console_cookie_is_a_session_scoped_to_the_console_of_one_port(
    served: Served,
) -> None:
    token, port = served.server.token, served.port
    with httpx.Client(base_url=served.server.url, timeout=10) as c:
        r = c.get("/auth", params={"token": token})
        cookie = r.headers["set-cookie"]
        name, _, rest = cookie.partition("=")
        value = rest.split(";")[0]
        assert name == f"local_tools_console_{port}"
        assert value and token not in value and value not in token
        attributes = {a.strip().lower() for a in cookie.split(";")[1:]}
        assert {"path=/console/", "httponly", "samesite=strict"} <= attributes
        assert not any(a.startswith(("domain", "max-age", "expires")) for a in attributes)
        # Each sign-in is a new session.
        again = c.get("/auth", params={"token": token}).headers["set-cookie"]
        assert again.split(";")[0] != cookie.split(";")[0]
    # The session opens the console only: no tool route takes it.
    with httpx.Client(base_url=served.server.url, cookies={name: value}, timeout=10) as c:
        assert c.get("/console/api/state").status_code == 200
        assert c.get("/tools").status_code == 401
        assert c.post("/exec", json={"name": "list_dir"}).status_code == 401


def test_another_servers_session_is_not_accepted(served: Served, tmp_path: Path) -> None:
    """Sessions live in one server process: another port's opens nothing here, under
    either cookie name."""
    with httpx.Client(base_url=served.server.url, timeout=10) as c:
        c.get("/auth", params={"token": served.server.token})
        mine = c.cookies.get(console_cookie(served.port))
    assert mine
    (tmp_path / "ws").mkdir()
    with spawn_http_server(tmp_path / "ws", served.state) as other:
        assert other.token == served.server.token  # one token per state dir
        for name in (console_cookie(served.port), console_cookie(other.port)):
            with httpx.Client(cookies={name: mine}, timeout=10) as c:
                assert c.get(f"{other.url}/console/api/state").status_code == 401


def test_a_restarted_server_forgets_its_sessions(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    state = tmp_path / "state"
    with spawn_http_server(tmp_path / "ws", state) as server:
        port = server.port
        with httpx.Client(base_url=server.url, timeout=10) as c:
            c.get("/auth", params={"token": server.token})
            session = c.cookies.get(console_cookie(port))
            assert c.get("/console/api/state").status_code == 200
    with (
        spawn_http_server(tmp_path / "ws", state, "--port", str(port)) as again,
        httpx.Client(cookies={console_cookie(port): session}, timeout=10) as c,
    ):
        assert c.get(f"{again.url}/console/api/state").status_code == 401


# --------------------------------------------------------------------------- the browser

CHROMIUM = Path("/usr/bin/chromium")


def _need_browser() -> None:
    pytest.importorskip("playwright", reason="the playwright package is not installed")
    if not CHROMIUM.exists():
        pytest.skip(f"no {CHROMIUM} (`make test` installs Debian's chromium)")


def test_the_browser_tool_cannot_load_local_tools(
    model: Toolbox, canary: net_server.Server, served: Served
) -> None:
    _need_browser()
    for url in [*_spellings(canary.port)[:8], served.server.auth_url, f"{served.server.url}/"]:
        envelope = model.run("browser_navigate", {"url": url})
        assert not envelope["success"], envelope["output"]
        assert envelope["error"]["error_code"] == "PERMISSION_DENIED", envelope["error"]
    assert canary.requests == []
    # The control: once the port is no server's, the browser loads it.
    for record in (served.state / "servers").glob(f"*-{canary.port}.json"):
        record.unlink()
    assert model.run("browser_navigate", {"url": canary.url("/health")})["success"]
    assert len(canary.requests) >= 1


def test_a_page_cannot_make_the_browser_reach_local_tools(
    model: Toolbox, canary: net_server.Server
) -> None:
    """An allowed local page (a dev server) links, frames, fetches and redirects to the
    server's port: nothing arrives."""
    _need_browser()
    site = net_server.serve("127.0.0.1")
    target = canary.url("/health")
    alt = f"http://localhost:{canary.port}/health"
    page = (
        f'<img src="{target}?img"><iframe src="{alt}?frame"></iframe>'
        f'<script>fetch("{target}?fetch", {{mode: "no-cors"}}).catch(() => {{}});'
        f'new WebSocket("ws://127.0.0.1:{canary.port}/ws");</script>'
        f'<a id="go" href="{target}?link">go</a>'
    ).encode()
    site.route("/")(lambda req: (200, {"Content-Type": "text/html"}, page))
    site.route("/hop")(lambda req: (302, {"Location": target + "?hop"}, b""))
    try:
        assert model.run("browser_navigate", {"url": site.url("/")})["success"]
        model.run("browser_wait_for", {"condition": "document.readyState === 'complete'"})
        model.run("browser_click", {"selector": "#go"})
        model.run("browser_navigate", {"url": site.url("/hop")})
        time.sleep(0.5)
    finally:
        site.stop()
    assert canary.requests == []
    assert any(r.path == "/" for r in site.requests)  # the allowed page itself loaded


def test_another_ports_page_does_not_receive_the_console_cookie(served: Served) -> None:
    """A person opened the console; a page of another local server (a dev server on
    another port, which the model may control) gets no console cookie."""
    _need_browser()
    from playwright.sync_api import sync_playwright

    other = net_server.serve("127.0.0.1")
    for path in ("/", "/page", "/api/x"):
        other.route(path)(lambda req: (200, {"Content-Type": "text/html"}, b"<p>dev</p>"))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM))
            try:
                page = browser.new_page()
                page.goto(served.server.auth_url)
                cookies = page.context.cookies()
                assert [c["name"] for c in cookies] == [console_cookie(served.port)]
                session = cookies[0]["value"]
                assert session != served.server.token
                for path in ("/", "/page", "/api/x"):
                    page.goto(other.url(path))
            finally:
                browser.close()
    finally:
        other.stop()
    assert {r.path for r in other.requests} >= {"/", "/page", "/api/x"}  # and /favicon.ico
    for request in other.requests:
        sent = request.headers.get("Cookie", "")
        assert session not in sent and served.server.token not in sent, sent
