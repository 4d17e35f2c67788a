"""exec_cmd under each [sandbox] mode, with the engine this machine has."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envelopes import ok
from local_tools.security.sandbox import sandbox_engine

pytestmark = pytest.mark.skipif(
    sandbox_engine().name == "off", reason=f"no sandbox here: {sandbox_engine().detail}"
)


def _config(mode: str, network: bool = False) -> dict[str, Any]:
    return {
        "permissions": {"execute:command": "allow", "external:file": "allow"},
        "sandbox": {"mode": mode, "network": network},
    }


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the workspace and outside /tmp (the sandbox's /tmp is private,
    so a path under the real /tmp would not even be visible to the command)."""
    path = Path(tempfile.mkdtemp(prefix="lt-outside-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on loopback that answers 'pong'."""
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

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    server.close()


def _connect(port: int) -> str:
    return (
        f"{sys.executable} -c \"import socket; s=socket.create_connection(('127.0.0.1', {port}),"
        ' timeout=2); print(s.recv(4).decode())"'
    )


def test_workspace_write(make_toolbox: Any, workspace: Path, outside: Path) -> None:
    tb = make_toolbox(_config("workspace-write"))
    outside = outside / "outside.txt"
    out = ok(tb.run("exec_cmd", {"command": f"echo in > inside.txt; echo out > {outside}"}))
    assert (workspace / "inside.txt").read_text() == "in\n"
    assert not outside.exists()
    assert out["exit_code"] != 0
    assert out["stderr"]
    # Scratch space is TMPDIR, private to this toolbox; the host's /tmp is read-only.
    out = ok(tb.run("exec_cmd", {"command": 'echo t > "$TMPDIR/p" && cat "$TMPDIR/p"'}))
    assert out["stdout"] == "t\n"
    out = ok(tb.run("exec_cmd", {"command": "mktemp"}))
    assert out["exit_code"] == 0, out["stderr"]
    assert not out["stdout"].startswith("/tmp/tmp.")
    probe = Path("/tmp") / f"lt-probe-{os.getpid()}"
    out = ok(tb.run("exec_cmd", {"command": f"echo x > {probe}"}))
    assert out["exit_code"] != 0
    assert not probe.exists()


def test_symlink_out_of_the_workspace_is_not_writable(
    make_toolbox: Any, workspace: Path, outside: Path
) -> None:
    target = outside / "target.txt"
    target.write_text("original")
    (workspace / "link").symlink_to(target)
    tb = make_toolbox(_config("workspace-write"))
    out = ok(tb.run("exec_cmd", {"command": "echo changed > link"}))
    assert out["exit_code"] != 0
    assert target.read_text() == "original"


def test_read_only_mode_refuses_workspace_writes(make_toolbox: Any, workspace: Path) -> None:
    tb = make_toolbox(_config("read-only"))
    out = ok(tb.run("exec_cmd", {"command": "cat /etc/hostname >/dev/null; touch new.txt"}))
    assert out["exit_code"] != 0
    assert not (workspace / "new.txt").exists()


def test_no_network_unless_configured(make_toolbox: Any, listener: int) -> None:
    blocked = ok(
        make_toolbox(_config("workspace-write")).run("exec_cmd", {"command": _connect(listener)})
    )
    assert blocked["exit_code"] != 0
    assert "pong" not in blocked["stdout"]


def test_network_when_configured(make_toolbox: Any, listener: int) -> None:
    tb = make_toolbox(_config("workspace-write", network=True))
    out = ok(tb.run("exec_cmd", {"command": _connect(listener)}))
    assert out["stdout"] == "pong\n", out["stderr"]


def test_off_mode_writes_anywhere(make_toolbox: Any, outside: Path) -> None:
    tb = make_toolbox(_config("off"))
    outside = outside / "outside.txt"
    ok(tb.run("exec_cmd", {"command": f"echo out > {outside}"}))
    assert outside.read_text() == "out\n"


def test_commands_cannot_rewrite_what_steers_local_tools(
    make_toolbox: Any, workspace: Path
) -> None:
    """An approved command must not grant more than it was given: the config and the
    workspace plugins (they run unsandboxed on the next start) stay read-only."""
    config = workspace / "local-tools.toml"
    config.write_text('[permissions]\n"execute:command" = "allow"\n')
    (workspace / ".local-tools" / "tools").mkdir(parents=True)
    tb = make_toolbox(None, trust=True)  # the workspace's own config applies once trusted
    out = ok(
        tb.run(
            "exec_cmd",
            {
                "command": "echo '[permissions]' >> local-tools.toml; "
                "echo 'import os' > .local-tools/tools/evil.py; echo other > notes.txt"
            },
        )
    )
    assert "Read-only file system" in out["stderr"]
    assert config.read_text() == '[permissions]\n"execute:command" = "allow"\n'
    assert not (workspace / ".local-tools" / "tools" / "evil.py").exists()
    assert (workspace / "notes.txt").read_text() == "other\n"
