"""The engine under failure, with real processes: basedpyright killed mid-call, and a
scripted server (fake_server.py) that never answers, crashes, breaks the framing or
records what it was sent ($/cancelRequest, didClose).

Every manager is closed by its fixture; each test ends with no server left running.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil
import pytest

from local_tools.lsp.client import LanguageServer, RequestCancelled, StartFailed
from local_tools.lsp.jsonrpc import ServerGone
from local_tools.lsp.manager import LspManager, LspSettings, Unavailable
from local_tools.lsp.positions import uri_of

FAKE = str(Path(__file__).with_name("fake_server.py"))

MakeManager = Callable[..., LspManager]


def fake_servers(*args: str) -> dict[str, Any]:
    return {"fake": {"command": sys.executable, "args": [FAKE, *args], "extensions": [".fake"]}}


@pytest.fixture
def make_manager(workspace: Path) -> Iterator[MakeManager]:
    made: list[LspManager] = []

    def make(*args: str, **settings: Any) -> LspManager:
        settings.setdefault("servers", fake_servers(*args))
        settings.setdefault("start_timeout", 10.0)
        manager = LspManager(LspSettings(**settings), [workspace])
        made.append(manager)
        return manager

    yield make
    for manager in made:
        manager.close()
    assert not _server_processes(), "a server outlived its manager"


def _server_processes() -> list[psutil.Process]:
    """This test process's children that are language servers (fake or basedpyright)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            line = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if child.status() != psutil.STATUS_ZOMBIE and ("fake_server" in line or "pyright" in line):
            found.append(child)
    return found


def started(manager: LspManager, path: Path) -> LanguageServer:
    server = manager.server_for(path)
    assert isinstance(server, LanguageServer), server
    server.ready.result(60)
    return server


def recorded(path: Path, method: str) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [entry["params"] for entry in lines if entry["method"] == method]


def wait_for(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def never() -> bool:
    return False


# --- a crash, a restart, a second crash ------------------------------------------------


def test_basedpyright_killed_mid_call_fails_the_call_and_the_next_server_works(
    make_manager: MakeManager, py_project: Path, pyright_server: str
) -> None:
    manager = make_manager(servers={}, start_timeout=60.0)
    use = py_project / "shapes" / "use.py"
    server = started(manager, use)
    server.sync(use, use.read_text())
    assert server._proc is not None
    group = server._proc.pid
    # Stopped first, so the request is surely still waiting when the kill comes.
    os.killpg(group, signal.SIGSTOP)
    hover = {"textDocument": {"uri": uri_of(use)}, "position": {"line": 3, "character": 14}}
    with ThreadPoolExecutor(1) as pool:
        call = pool.submit(server.request, "textDocument/hover", hover, 30.0, never)
        time.sleep(0.3)
        assert not call.done()
        os.killpg(group, signal.SIGKILL)
        with pytest.raises(ServerGone):
            call.result(15)

    fresh = started(manager, use)
    assert fresh is not server and fresh.alive
    fresh.sync(use, use.read_text())
    answer = fresh.request("textDocument/hover", hover, 30.0, never)
    assert "Point" in json.dumps(answer)  # `p: Point` hovered


def test_a_second_crash_within_the_window_leaves_the_server_unavailable(
    make_manager: MakeManager, workspace: Path
) -> None:
    manager = make_manager("--crash-on", "fake/crash")
    path = workspace / "a.fake"
    for _ in range(2):
        server = started(manager, path)
        with pytest.raises(ServerGone):
            server.request("fake/crash", {}, 10.0, never)
    gone = manager.server_for(path)
    assert isinstance(gone, Unavailable), gone
    assert "stopped twice" in gone.reason and "exit status 3" in gone.reason


# --- starts and requests that never finish ---------------------------------------------


def test_initialize_never_answered_fails_the_start_within_its_timeout(
    make_manager: MakeManager, workspace: Path
) -> None:
    manager = make_manager("--no-init", start_timeout=0.5)
    path = workspace / "a.fake"
    server = manager.server_for(path)
    assert isinstance(server, LanguageServer)
    began = time.monotonic()
    failure = server.ready.exception(10)
    assert isinstance(failure, StartFailed) and "did not answer initialize" in str(failure)
    assert time.monotonic() - began < 5
    assert server._proc is not None and wait_for(lambda: server._proc.poll() is not None)
    # A failed start counts as a failure: one retry, then unavailable with the reason.
    again = manager.server_for(path)
    assert isinstance(again, LanguageServer) and again is not server
    assert isinstance(again.ready.exception(10), StartFailed)
    final = wait_for(lambda: isinstance(manager.server_for(path), Unavailable), 5)
    assert final
    gone = manager.server_for(path)
    assert isinstance(gone, Unavailable) and "did not answer initialize" in gone.reason
    # Failed starts leave no thread of theirs behind.
    assert wait_for(lambda: not [t for t in threading.enumerate() if t.name == "lsp-run-fake"])


def test_an_unanswered_request_times_out_and_is_cancelled_at_the_server(
    make_manager: MakeManager, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "received.jsonl"
    manager = make_manager("--hang-on", "fake/hang", "--record", str(log))
    server = started(manager, workspace / "a.fake")
    began = time.monotonic()
    with pytest.raises(TimeoutError, match=r"did not answer fake/hang within 0\.5 s"):
        server.request("fake/hang", {}, 0.5, never)
    assert time.monotonic() - began < 5
    assert wait_for(lambda: recorded(log, "$/cancelRequest"))
    # The server is still usable after a timeout.
    assert server.request("fake/echo", {"n": 1}, 5.0, never) == {"n": 1}


def test_a_cancelled_call_cancels_its_request(
    make_manager: MakeManager, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "received.jsonl"
    manager = make_manager("--hang-on", "fake/hang", "--record", str(log))
    server = started(manager, workspace / "a.fake")
    flag = threading.Event()
    threading.Timer(0.3, flag.set).start()
    with pytest.raises(RequestCancelled):
        server.request("fake/hang", {}, 30.0, flag.is_set)
    cancels = wait_for(lambda: recorded(log, "$/cancelRequest"))
    hangs = [e for e in map(json.loads, log.read_text().splitlines()) if e["method"] == "fake/hang"]
    assert len(cancels) == 1 and len(hangs) == 1


# --- documents, idleness, close ----------------------------------------------------------


def test_the_least_recently_used_document_is_closed_past_the_limit(
    make_manager: MakeManager, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "received.jsonl"
    manager = make_manager("--record", str(log), max_open_documents=2)
    paths = [workspace / f"{name}.fake" for name in ("a", "b", "c")]
    server = started(manager, paths[0])
    for path in paths:
        server.sync(path, "ERROR here\n")
    closed = wait_for(lambda: recorded(log, "textDocument/didClose"))
    assert [c["textDocument"]["uri"] for c in closed] == [uri_of(paths[0])]
    assert sorted(server.open_paths()) == sorted(p.resolve() for p in paths[1:])
    # Diagnostics of an open one still arrive for its version.
    items = server.diagnostics(paths[2], time.monotonic() + 5)
    assert items is not None and [d["message"] for d in items] == ["fake error"]


def test_an_idle_server_is_stopped(make_manager: MakeManager, workspace: Path) -> None:
    manager = make_manager(idle_timeout=0.3)
    server = started(manager, workspace / "a.fake")
    assert server._proc is not None
    assert wait_for(lambda: server._proc.poll() is not None, 10)
    assert manager.running() == []
    # The next need starts a new one (idleness is not a crash).
    assert started(manager, workspace / "a.fake") is not server


def test_a_missing_server_is_unavailable_with_its_install_command(
    make_manager: MakeManager, workspace: Path
) -> None:
    manager = make_manager(
        servers={"fake": {"command": "no-such-server-xyz", "extensions": [".fake"]}}
    )
    gone = manager.server_for(workspace / "a.fake")
    assert isinstance(gone, Unavailable)
    assert "no-such-server-xyz" in gone.reason and "[lsp.fake] command" in gone.reason
    if manager.server_for(workspace / "main.go") is not None and not _on_path("gopls"):
        go = manager.server_for(workspace / "main.go")
        assert isinstance(go, Unavailable)
        assert "go install golang.org/x/tools/gopls@latest" in go.reason and go.language == "Go"


def _on_path(command: str) -> bool:
    from local_tools.lsp.specs import find_command

    return find_command(command) is not None


@pytest.mark.parametrize(
    ("flag", "reason"), [("--garbage-on", "not JSON"), ("--huge-on", "length")]
)
def test_a_broken_message_fails_the_call_without_a_hang(
    make_manager: MakeManager, workspace: Path, flag: str, reason: str
) -> None:
    manager = make_manager(flag, "fake/break")
    server = started(manager, workspace / "a.fake")
    began = time.monotonic()
    with pytest.raises(ServerGone, match=reason):
        server.request("fake/break", {}, 30.0, never)
    assert time.monotonic() - began < 10
    assert server._proc is not None and wait_for(lambda: server._proc.poll() is not None)
    assert not server.alive


def test_close_racing_starts_leaves_no_process_or_thread(
    make_manager: MakeManager, workspace: Path
) -> None:
    before = {t.ident for t in threading.enumerate()}
    for delay in (0.0, 0.01, 0.05, 0.2):
        manager = make_manager()
        server = manager.server_for(workspace / "a.fake")
        assert isinstance(server, LanguageServer)
        time.sleep(delay)
        manager.close()
        assert isinstance(manager.server_for(workspace / "a.fake"), Unavailable)
    assert wait_for(lambda: not _server_processes(), 10)
    leftover = wait_for(
        lambda: (
            not [
                t
                for t in threading.enumerate()
                if t.ident not in before and t.name.startswith("lsp")
            ]
        ),
        10,
    )
    assert leftover, [t.name for t in threading.enumerate() if t.name.startswith("lsp")]
