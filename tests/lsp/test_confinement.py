"""Language servers a toolbox starts run confined: they read the workspace, and cannot
write it, reach the network or read the state folder; real servers still work so.

The scripted server (fake_server.py) makes the attempts from inside and answers a
`fake/probe` request with each outcome. The workspace and state folder live under
/var/tmp: the sandbox's /tmp is private, which would hide a path there for the wrong
reason.
"""

from __future__ import annotations

import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from local_tools.core.config import load_config
from local_tools.core.context import ToolContext
from local_tools.lsp.client import LanguageServer
from local_tools.lsp.confine import lsp_manager
from local_tools.lsp.manager import LspManager
from local_tools.security.sandbox import sandbox_engine
from local_tools.toolbox import Toolbox
from lsp_projects import PY_PROJECT, TS_PROJECT, write_tree

FAKE = str(Path(__file__).with_name("fake_server.py"))
FAKE_CONFIG = {"fake": {"command": sys.executable, "args": [FAKE], "extensions": [".fake"]}}

sandboxed = pytest.mark.skipif(
    sandbox_engine().name == "off", reason=f"no sandbox here: {sandbox_engine().detail}"
)


@pytest.fixture
def place() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="lt-lsp-", dir="/var/tmp"))
    (path / "ws").mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def toolbox(place: Path) -> Iterator[Toolbox]:
    tb = Toolbox(
        place / "ws", {"lsp": FAKE_CONFIG}, state_dir=place / "state", audit=False, plugins=False
    )
    yield tb
    tb.close()


def manager_of(tb: Toolbox) -> LspManager:
    """The toolbox's own manager, reached the way a tool reaches it."""
    ctx = ToolContext(
        call_id="test", user_id="test", tool="test", jail=tb.jail, config=tb.config,
        policy=tb.policy, state_dir=tb.state_dir, spill_dir=tb.spill_dir,
        resources=tb.runner.resources,
    )  # fmt: skip
    return lsp_manager(ctx)


def started(manager: LspManager, path: Path, timeout: float = 60) -> LanguageServer:
    server = manager.server_for(path)
    assert isinstance(server, LanguageServer), server
    server.ready.result(timeout)
    return server


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(10)

    def serve() -> None:
        try:
            conn, _ = server.accept()
            conn.sendall(b"pong")
            conn.close()
        except OSError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def _servers_alive() -> list[str]:
    lines = []
    for child in psutil.Process().children(recursive=True):
        try:
            line = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if "fake_server" in line or "pyright" in line or "typescript-language-server" in line:
            lines.append(line)
    return lines


@sandboxed
def test_a_server_reads_the_workspace_and_nothing_else(
    toolbox: Toolbox, place: Path, listener: int
) -> None:
    ws, state = place / "ws", place / "state"
    (ws / "readme.txt").write_text("project notes\n")
    (state / "secret.txt").write_text("state secret\n")
    server = started(manager_of(toolbox), ws / "a.fake")
    probe: dict[str, Any] = {
        "write": {"workspace_write": str(ws / "written.txt")},
        "read": {"workspace_read": str(ws / "readme.txt"), "state_read": str(state / "secret.txt")},
        "connect": {"loopback": listener},
    }
    out = server.request("fake/probe", probe, 20.0, lambda: False)
    assert out["workspace_read"] == "ok: project notes\n"
    assert out["workspace_write"].startswith("OSError"), out  # read-only file system
    assert not (ws / "written.txt").exists()
    assert not out["state_read"].startswith("ok"), out
    assert not out["loopback"].startswith("ok"), out
    # Its private TMPDIR is writable, lives in the state folder, and goes with the server.
    assert out["tmp_write"] == "ok", out
    tmp = Path(out["tmpdir"])
    assert tmp.parent == state and (tmp / "probe.txt").exists()
    toolbox.close()
    assert not tmp.exists()


def test_toolbox_close_leaves_no_server_running(toolbox: Toolbox, place: Path) -> None:
    manager = manager_of(toolbox)
    server = started(manager, place / "ws" / "a.fake")
    assert server._proc is not None and _servers_alive()
    toolbox.close()
    deadline = time.monotonic() + 10
    while _servers_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _servers_alive() == []
    assert not list((place / "state").glob("lsp-*"))


def test_an_untrusted_workspace_cannot_name_a_server(place: Path) -> None:
    ws = place / "ws"
    (ws / "local-tools.toml").write_text(
        '[lsp]\nwait = 1.0\nmax_open_documents = 8\n\n[lsp.evil]\ncommand = "/bin/sh"\n'
        'args = ["-c", "touch /tmp/owned"]\nextensions = [".py"]\n'
    )
    untrusted = load_config(None, ws, trust=False)
    assert untrusted.lsp.servers == {}
    assert untrusted.lsp.wait == 1.0 and untrusted.lsp.max_open_documents == 8
    assert 'lsp.evil (command "/bin/sh")' in untrusted.ignored
    trusted = load_config(None, ws, trust=True)
    assert trusted.lsp.servers["evil"].command == "/bin/sh"


@sandboxed
@pytest.mark.parametrize("language", ["python", "typescript"])
def test_real_servers_report_diagnostics_confined(
    place: Path, language: str, request: pytest.FixtureRequest
) -> None:
    if language == "python":
        request.getfixturevalue("pyright_server")
        write_tree(place / "ws", PY_PROJECT)
        path = place / "ws" / "shapes" / "use.py"
        broken = path.read_text() + 'oops: int = "not a number"\n'
    else:
        request.getfixturevalue("ts_server")
        write_tree(place / "ws", TS_PROJECT)
        path = place / "ws" / "src" / "use.ts"
        broken = path.read_text() + 'export const oops: number = "not a number";\n'
    tb = Toolbox(place / "ws", {}, state_dir=place / "state", audit=False, plugins=False)
    try:
        server = started(manager_of(tb), path)
        server.sync(path, broken)
        items = server.diagnostics(path, time.monotonic() + 60)
        assert items is not None, f"no diagnostics within 60 s: {server.exit_reason}"
        assert any("not a number" in d["message"] or "assignable" in d["message"] for d in items)
        # Still up past the parent watchdog's 3 s poll (it cannot see our pid from its
        # PID namespace), and still answering.
        time.sleep(3.5)
        assert server.alive, server.exit_reason
        assert server.diagnostics(path, time.monotonic() + 10) is not None
    finally:
        tb.close()
    assert _servers_alive() == []


def test_a_planted_workspace_typescript_never_runs(
    place: Path, ts_server: str, request: pytest.FixtureRequest
) -> None:
    """typescript-language-server prefers the workspace's node_modules/typescript: a
    checkout could plant a tsserver.js. The server's own TypeScript is pinned instead
    (unconfined here, so a planted script that ran would leave its mark)."""
    ws = write_tree(place / "ws", TS_PROJECT)
    planted = ws / "node_modules" / "typescript"
    mark = place / "planted-ran"
    write_tree(
        planted,
        {
            "package.json": '{"name": "typescript", "version": "5.9.3"}\n',
            "lib/tsserver.js": f"require('fs').writeFileSync({str(mark)!r}, 'ran');\n",
        },
    )
    path = ws / "src" / "use.ts"
    config = {"sandbox": {"mode": "off"}}
    tb = Toolbox(ws, config, state_dir=place / "state", audit=False, plugins=False)
    try:
        server = started(manager_of(tb), path)
        server.sync(path, path.read_text() + 'export const oops: number = "x";\n')
        assert server.diagnostics(path, time.monotonic() + 60) is not None, server.exit_reason
    finally:
        tb.close()
    assert not mark.exists()
