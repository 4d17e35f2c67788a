"""Attacks on the shell toolset that an adversarial review found working, kept as tests.

Each one ran code, wrote a file, read a secret, left the sandbox, hung or crashed
before it was fixed; the comment on each says what the attack was.

Real subprocesses, real files, the default policy (read-only commands allowed, everything
else asks, no asker: an ask is PERMISSION_DENIED) unless a test says otherwise.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bash + bwrap")

SANDBOX_ON: dict[str, Any] = {}
SANDBOX_OFF: dict[str, Any] = {"sandbox": {"mode": "off"}}
MODES = [pytest.param(SANDBOX_ON, id="sandbox"), pytest.param(SANDBOX_OFF, id="no-sandbox")]
ALLOW = {"permissions": {"execute:command": "allow"}}


# --- 1. approval bypass: allowed commands that run code -----------------------------------

# Was: bash evaluates array subscripts and arithmetic in variable values, prompt-expands
# ${x@P}, and follows ${!x} indirection at run time; the parser sees only allowed
# `test`/`printf`/`echo` subjects (a bare `x=...` assignment is no subject), so code in
# a quoted string runs without approval.
CODE_IN_ALLOWED_COMMANDS = [
    "test -v 'a[$(touch pwned)]'",
    "printf -v 'a[$(touch pwned)]' x",
    "x='a[$(touch pwned)]'; echo $((x))",
    "x='a[$(touch pwned)]'; echo ${x:x}",
    "x='a[$(touch pwned)]'; echo ${!x}",
    "x='$(touch pwned)'; echo ${x@P}",
    "echo $(( $(cat expr.txt) ))",  # expr.txt holds a[$(touch pwned)]
    # printf -v assigns PATH (a risky variable the parser otherwise keeps in the subject):
    # ls is then an executable the repository ships in bin/
    'printf -v PATH %s "$PWD/bin"; ls',
]


@pytest.mark.parametrize("config", MODES)
@pytest.mark.parametrize("command", CODE_IN_ALLOWED_COMMANDS)
def test_code_in_allowed_command_is_not_run_without_approval(
    make_toolbox: Any, workspace: Path, config: dict[str, Any], command: str
) -> None:
    bin_dir = workspace / "bin"
    bin_dir.mkdir()
    (bin_dir / "ls").write_text("#!/bin/sh\nexec /usr/bin/touch pwned\n")  # as write_file would
    (bin_dir / "ls").chmod(0o755)
    (workspace / "expr.txt").write_text("a[$(touch pwned)]\n")
    tb = make_toolbox(config)
    tb.run("exec_cmd", {"command": command})
    assert not (workspace / "pwned").exists(), f"{command!r} ran code without approval"


@pytest.mark.parametrize("config", MODES)
def test_env_argument_cannot_define_functions_without_approval(
    make_toolbox: Any, workspace: Path, config: dict[str, Any]
) -> None:
    # Was: exec_cmd's `env` is not part of the approval subjects and not screened: an
    # exported bash function (BASH_FUNC_ls%%) replaces the allowed `ls` (BASH_ENV,
    # LD_PRELOAD, PATH pointing at a written file work the same way).
    tb = make_toolbox(config)
    tb.run("exec_cmd", {"command": "ls", "env": {"BASH_FUNC_ls%%": "() { touch pwned; }"}})
    assert not (workspace / "pwned").exists()


@pytest.mark.parametrize("config", MODES)
@pytest.mark.parametrize(
    ("command", "written"),
    [
        # Was: `sort -o` is caught only as -o, -?o or --o*: a longer cluster writes a file
        # (any workspace file: .local-tools.toml, .git/config ...)
        ("sort -rnuo out.txt in.txt", "out.txt"),
        # Was: `file -C` is caught only as -C/--co*: in a cluster it writes m.mgc
        ("file -zC -m m", "m.mgc"),
    ],
)
def test_writing_option_in_a_cluster_asks(
    make_toolbox: Any, workspace: Path, config: dict[str, Any], command: str, written: str
) -> None:
    (workspace / "in.txt").write_text("b\na\n")
    (workspace / "m").write_text("0 string hello hello-file\n")
    tb = make_toolbox(config)
    tb.run("exec_cmd", {"command": command})
    assert not (workspace / written).exists(), f"{command!r} wrote {written} without approval"


def test_dotenv_is_not_readable_through_a_glob(make_toolbox: Any, workspace: Path) -> None:
    # Was: `cat .env` asks ("*.env" rule) but `cat .en?` (or .e*) reads it unasked.
    (workspace / ".env").write_text("API_KEY=hunter2\n")
    tb = make_toolbox()
    env = tb.run("exec_cmd", {"command": "cat .en?"})
    assert "hunter2" not in str(env)


# --- 3. sandbox -----------------------------------------------------------------------------


def test_sandbox_cannot_reach_a_host_unix_socket(
    make_toolbox: Any, workspace: Path, tmp_path: Path
) -> None:
    # Was: with network=false the bwrap sandbox still connects to Unix sockets on the
    # host's file system (ro-bind does not stop connect()): /var/run/docker.sock, the
    # D-Bus system bus, ssh-agent ... are reachable. Here: one outside the workspace.
    path = tmp_path / "host.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(15)
    got: list[bytes] = []

    def accept() -> None:
        try:
            conn, _ = server.accept()
            got.append(conn.recv(100))
            conn.close()
        except OSError:
            pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    tb = make_toolbox(ALLOW)
    code = (
        "import socket; s = socket.socket(socket.AF_UNIX); "
        f"s.connect({str(path)!r}); s.sendall(b'escaped')"
    )
    tb.run("exec_cmd", {"command": f'python3 -c "{code}"', "timeout": 10})
    server.close()
    t.join(2)
    assert got != [b"escaped"], "a sandboxed command talked to a host Unix socket"


# --- 2. hangs -----------------------------------------------------------------------------

_PROCESS_INPUT_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from local_tools import Toolbox
    ws = Path(sys.argv[1])
    tb = Toolbox(ws, {"permissions": {"execute:command": "allow"}}, state_dir=ws.parent / "st")
    e = tb.run("exec_cmd", {"command": "sleep 4251", "background": True})
    pid = e["output"]["process_id"]
    t = time.monotonic()
    e = tb.run("process_input", {"process_id": pid, "input": "x" * (1 << 20), "timeout": 2})
    print("RETURNED", round(time.monotonic() - t, 1), e["success"], flush=True)
    tb.close()
    """
)


def test_process_input_honours_its_timeout_when_the_pipe_is_full(tmp_path: Path) -> None:
    # Was: process_input writes to stdin with a blocking write before its timeout starts;
    # a process that does not read (1 MB > the 64 KB pipe) blocks the call until the
    # runner's 300 s backstop, and the worker thread stays stuck after that.
    ws = tmp_path / "ws2"
    ws.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", _PROCESS_INPUT_SCRIPT, str(ws)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("process_input(timeout=2) was still blocked after 30 s")
    assert "RETURNED" in out, out


# --- 4. INTERNAL_ERROR ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        {"X": "\ud800"},  # a lone surrogate, as JSON "\\ud800" decodes
        {"\ud800": "x"},
    ],
)
def test_lone_surrogate_in_env_is_invalid_input_not_internal_error(
    make_toolbox: Any, extra: dict[str, str]
) -> None:
    # Was: check_variables lets a lone surrogate through and Popen's os.fsencode raises
    # UnicodeEncodeError (the command itself is now refused as INVALID_INPUT).
    tb = make_toolbox(ALLOW)
    env = tb.run("exec_cmd", {"command": "echo hi", "env": extra})
    assert env["success"] or env["error"]["error_code"] != "INTERNAL_ERROR", env["error"]


# --- process_output -------------------------------------------------------------------------


def test_process_output_does_not_split_utf8_characters(make_toolbox: Any) -> None:
    # Was: read_new cuts at a byte budget; a 3-byte character across the cut becomes
    # U+FFFD in this read and garbage in the next.
    tb = make_toolbox(ALLOW)
    started = tb.run(
        "exec_cmd",
        {
            "command": "python3 -c \"print('\u20ac' * 100000, end='')\"; sleep 20",
            "background": True,
        },
    )
    pid = started["output"]["process_id"]
    deadline = time.monotonic() + 10
    text = ""
    while time.monotonic() < deadline and len(text) < 100000:
        out = tb.run("process_output", {"process_id": pid})["output"]
        text += out["stdout"]
        if not out["stdout"]:
            time.sleep(0.1)
    tb.run("process_kill", {"process_id": pid})
    assert "\ufffd" not in text
    assert text == "\u20ac" * 100000
