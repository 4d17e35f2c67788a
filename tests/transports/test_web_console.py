"""The web console's routes over a real uvicorn on loopback, driven with httpx.

A real Toolbox, real SQLite files in the state dir, real calls waiting on the pending
queue in another thread; the browser side is in test_console_browser.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import queue
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette

from envelopes import ok
from local_tools import Toolbox
from local_tools.interact import console_state
from local_tools.interact import pending as pending_queue
from local_tools.interact.base import MAX_REVIEW_CHARS
from local_tools.transports import web_console
from local_tools.transports.http_guard import AUTH_SCOPE_KEY, CONSOLE_SESSION
from local_tools.transports.web_console import close_console, console_heartbeat, console_routes


@dataclass
class Console:
    url: str
    tb: Toolbox

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10)

    def answer(self, request_id: str, answer: Any) -> httpx.Response:
        with self.client() as c:
            return c.post("/console/api/answer", json={"id": request_id, "answer": answer})

    def state(self) -> dict[str, Any]:
        with self.client() as c:
            response = c.get("/console/api/state")
        response.raise_for_status()
        return response.json()


def console_app(tb: Toolbox, url: str) -> Starlette:
    """The console as the server mounts it: its routes, the heartbeat for the app's life."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        beat = asyncio.create_task(console_heartbeat(tb, url))
        try:
            yield
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat

    return Starlette(routes=console_routes(tb), lifespan=lifespan)


def as_console_session(app: Any) -> Any:
    """Every request marked as the server's guard marks a console session's (the guard
    itself, cookies and all, is tested in test_http_server.py and
    tests/security/test_self_reach.py)."""

    async def marked(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope[AUTH_SCOPE_KEY] = CONSOLE_SESSION
        await app(scope, receive, send)

    return marked


@contextlib.contextmanager
def serve_console(tb: Toolbox) -> Iterator[Console]:
    """uvicorn in a thread on a free loopback port; stops (streams and all) on exit."""
    config = uvicorn.Config(
        as_console_session(console_app(tb, "http://127.0.0.1/")),
        host="127.0.0.1",
        port=0,
        log_level="warning",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Console(f"http://127.0.0.1:{port}", tb)
    finally:
        close_console(tb)  # what the server does when it starts shutting down
        server.should_exit = True
        thread.join(10)
        assert not thread.is_alive(), "the server did not stop: an event stream kept it"


class Events:
    """An SSE client in a thread, on a plain socket (closing it is a client gone away):
    parsed events land in a queue."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.ended = threading.Event()
        self._conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        self._conn.request("GET", parts.path, headers={"Accept": "text/event-stream"})
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            response = self._conn.getresponse()
            self.events.put(("status", response.status))
            self.events.put(("content-type", response.getheader("content-type")))
            assert self._conn.sock is not None
            self._conn.sock.settimeout(None)  # quiet for as long as nothing happens
            name, data = "message", []
            while line := response.readline():
                text = line.decode().rstrip("\r\n")
                if text.startswith("event:"):
                    name = text[6:].strip()
                elif text.startswith("data:"):
                    data.append(text[5:].strip())
                elif text == "" and data:
                    self.events.put((name, json.loads("\n".join(data))))
                    name, data = "message", []
        except Exception:  # closed under it by the test (http.client is not thread-safe)
            pass
        finally:
            self.ended.set()

    def next(self, name: str, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no {name!r} event within {timeout} s"
            try:
                got, data = self.events.get(timeout=left)
            except queue.Empty:
                continue
            if got == name:
                return data

    def close(self) -> None:
        sock = self._conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._conn.close()
        self._thread.join(5)


def _wait_live(tb: Toolbox, live: bool = True, timeout: float = 10) -> float:
    """Seconds until `console_live()` is `live`; fails after `timeout`."""
    start = time.monotonic()
    while tb.pending.console_live() is not live:
        waited = time.monotonic() - start
        assert waited < timeout, f"the console is {'not ' * live}live after {waited:.1f} s"
        time.sleep(0.02)
    return time.monotonic() - start


@pytest.fixture
def console(tb: Toolbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[Console]:
    """The console with a page open: the page's event stream stays connected for the
    test, so the heartbeat beats and asks queue for the console."""
    # The rule is the same at any pace; a beat every 0.1 s keeps the tests fast.
    monkeypatch.setattr(web_console, "BEAT_INTERVAL", 0.1)
    with serve_console(tb) as c:
        page = Events(f"{c.url}/console/api/events")
        try:
            page.next("state", 5)
            _wait_live(tb)
            yield c
        finally:
            page.close()


@pytest.fixture
def events(console: Console) -> Iterator[Events]:
    stream = Events(f"{console.url}/console/api/events")
    yield stream
    stream.close()


def _permission(tb: Toolbox, subject: str = "a.txt", suggestion: str | None = None) -> str:
    return tb.pending.submit(
        "permission",
        {
            "tool": "file_delete",
            "permission": "delete:file",
            "subject": subject,
            "user_id": "default",
            "summary": "",
            "suggestion": suggestion,
        },
    )


def _question(tb: Toolbox, multiple: bool = False) -> str:
    return tb.pending.submit(
        "question",
        {
            "question": "Which database?",
            "options": ["PostgreSQL", "SQLite"],
            "multiple": multiple,
            "tool": "question",
            "user_id": "default",
        },
    )


def _wait_pending(console: Console, count: int = 1) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while True:
        pending = console.state()["pending"]
        if len(pending) >= count:
            return pending
        assert time.monotonic() < deadline, "the request never showed up"
        time.sleep(0.05)


# --------------------------------------------------------------------------- page


def test_the_page_is_served_with_a_strict_csp_and_no_inline_code(console: Console) -> None:
    with console.client() as c:
        page = c.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
        html = page.text
        # Every script is a file of the console's own; no inline handlers or styles.
        assert html.count("<script") == html.count('<script src="/console/static/')
        assert re.search(r"\son[a-z]+\s*=", html) is None
        assert "style=" not in html and "<style" not in html
        for name, kind in (
            ("console.js", "text/javascript"),
            ("console.css", "text/css"),
            ("icon.svg", "image/svg+xml"),
        ):
            static = c.get(f"/console/static/{name}")
            assert static.status_code == 200 and static.headers["content-type"].startswith(kind)
        assert c.get("/console/static/../web_console.py").status_code == 404
        assert c.get("/console/static/index.html.bak").status_code == 404


def test_the_script_inserts_text_never_html() -> None:
    from local_tools.transports import web_console

    script = (web_console.STATIC_DIR / "console.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script


# --------------------------------------------------------------------------- state


def test_state_has_the_workspace_pending_history_and_only_this_workspaces_calls(
    console: Console, make_toolbox: Any, tmp_path: Path, workspace: Path
) -> None:
    tb = console.tb
    (workspace / "a.txt").write_text("hello")
    ok(tb.run("read_file", {"path": "a.txt"}, user_id="alice"))
    tb.run("read_file", {"path": "missing.txt"}, user_id="alice")
    # Another workspace on the same state dir (another process, as far as the audit
    # database is concerned): its calls are not this console's.
    other_ws = tmp_path / "other"
    other_ws.mkdir()
    other = make_toolbox(workspace=other_ws)
    ok(other.run("list_dir", {"path": "."}))
    other.audit.flush()
    answered = _permission(tb, "old.txt")
    assert console.answer(answered, {"decision": "deny"}).status_code == 200
    waiting = _permission(tb, "new.txt")

    state = console.state()
    assert state["workspace"] == str(tb.workspace)
    assert [p["id"] for p in state["pending"]] == [waiting]
    assert state["pending"][0]["payload"]["subject"] == "new.txt"
    assert [h["id"] for h in state["history"]] == [answered]
    assert state["history"][0]["answer"] == {"decision": "deny"}
    assert state["history"][0]["answered_by"] == "web console (127.0.0.1)"
    calls = [(c["tool"], c["outcome"], c["error_code"]) for c in state["calls"]]
    assert calls == [("read_file", "error", "NOT_FOUND"), ("read_file", "success", None)]
    assert state["calls"][1]["args"] == {"path": "a.txt"}
    assert state["calls"][1]["user_id"] == "alice"


def test_long_arguments_are_cut_for_the_page_but_never_what_the_person_answers(
    console: Console,
) -> None:
    ok(console.tb.run("write_file", {"path": "big.txt", "content": "x" * 3000}))
    (call,) = console.state()["calls"]
    content = call["args"]["content"]
    assert len(content) < 500 and content.endswith("[3000 chars]")
    command = "python3 - <<'EOF'\n" + "print('step')\n" * 300 + "EOF"
    _permission(console.tb, command)
    (request,) = console.state()["pending"]
    assert request["payload"]["subject"] == command


# --------------------------------------------------------------------------- events


def test_events_start_with_the_state_then_deliver_a_new_request_and_a_new_call(
    console: Console, events: Events, workspace: Path
) -> None:
    assert events.next("status", 5) == 200
    assert events.next("content-type", 1).startswith("text/event-stream")
    first = events.next("state", 5)
    assert first["pending"] == [] and first["workspace"] == str(console.tb.workspace)

    request_id = _permission(console.tb)
    start = time.monotonic()
    pending = events.next("pending", 1.0)
    assert [p["id"] for p in pending["pending"]] == [request_id]
    assert time.monotonic() - start < 1.0

    (workspace / "b.txt").write_text("b")
    start = time.monotonic()
    ok(console.tb.run("read_file", {"path": "b.txt"}))
    calls = events.next("calls", 1.0)["calls"]
    assert time.monotonic() - start < 1.0
    assert [(c["tool"], c["args"]) for c in calls] == [("read_file", {"path": "b.txt"})]

    # Answered: the request leaves the pending list and enters the history.
    assert console.answer(request_id, {"decision": "once"}).status_code == 200
    after = events.next("pending", 1.0)
    assert after["pending"] == [] and after["history"][0]["id"] == request_id


def test_calls_from_another_process_appear_too(
    console: Console, events: Events, workspace: Path, tmp_path: Path
) -> None:
    import subprocess
    import sys

    events.next("state", 5)
    (workspace / "c.txt").write_text("c")
    subprocess.run(
        [sys.executable, "-m", "local_tools", "call", "read_file", "path=c.txt"],
        cwd=workspace,
        check=True,
        capture_output=True,
        env={**__import__("os").environ, "LOCAL_TOOLS_STATE_DIR": str(tmp_path / "state")},
        timeout=60,
    )
    calls = events.next("calls", 2.0)["calls"]
    assert [(c["tool"], c["transport"]) for c in calls] == [("read_file", "cli")]


def test_close_console_ends_every_stream(console: Console) -> None:
    streams = [Events(f"{console.url}/console/api/events") for _ in range(3)]
    for stream in streams:
        stream.next("state", 5)
    close_console(console.tb)
    for stream in streams:
        assert stream.ended.wait(2), "the stream did not end"
        stream.close()


def test_a_client_that_goes_away_leaves_no_stream_behind(console: Console) -> None:
    feed = web_console._FEEDS[console.tb]
    before = len(feed._streams)  # the fixture's page
    stream = Events(f"{console.url}/console/api/events")
    stream.next("state", 5)
    assert len(feed._streams) == before + 1
    stream.close()
    deadline = time.monotonic() + 3
    while len(feed._streams) > before:
        assert time.monotonic() < deadline, "the server kept the stream of a gone client"
        time.sleep(0.05)


# --------------------------------------------------------------------------- todos


def _todo_lists(lists: list[dict[str, Any]]) -> dict[str, list[tuple[str, str, str]]]:
    return {
        entry["user_id"]: [(t["content"], t["status"], t["priority"]) for t in entry["todos"]]
        for entry in lists
    }


def test_state_has_each_users_todo_list_as_written(console: Console) -> None:
    tb = console.tb
    assert console.state()["todos"] == []  # nothing written yet
    ok(
        tb.run(
            "todo_write",
            {
                "todos": [
                    {"content": "Read the code", "status": "completed"},
                    {"content": "Fix it", "status": "in_progress", "priority": "high",
                     "activeForm": "Fixing it"},
                    "Test it",
                ]
            },
            user_id="alice",
        )
    )  # fmt: skip
    ok(tb.run("todo_write", {"todos": ["Review"]}, user_id="bob"))
    ok(tb.run("todo_write", {"todos": ["Gone soon"]}, user_id="carol"))
    ok(tb.run("todo_write", {"todos": []}, user_id="carol"))  # cleared: not shown

    todos = console.state()["todos"]
    assert _todo_lists(todos) == {
        "alice": [
            ("Read the code", "completed", "medium"),
            ("Fix it", "in_progress", "high"),
            ("Test it", "pending", "medium"),
        ],
        "bob": [("Review", "pending", "medium")],
    }
    alice = todos[0]
    assert [t["id"] for t in alice["todos"]] == ["1", "2", "3"]
    assert alice["todos"][1]["active_form"] == "Fixing it"
    assert alice["counts"] == {"pending": 1, "in_progress": 1, "completed": 1, "cancelled": 0}


def test_a_todo_write_is_pushed_as_a_todos_event_and_nothing_else_rereads_the_file(
    console: Console, events: Events, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = []
    real_read = console_state.read_todos
    monkeypatch.setattr(console_state, "read_todos", lambda *a: reads.append(1) or real_read(*a))
    assert events.next("state", 5)["todos"] == []
    start = time.monotonic()
    ok(console.tb.run("todo_write", {"todos": ["Plan", "Build"]}))
    todos = events.next("todos", 1.0)["todos"]
    assert time.monotonic() - start < 1.0
    assert _todo_lists(todos) == {
        "default": [("Plan", "pending", "medium"), ("Build", "pending", "medium")]
    }
    ok(
        console.tb.run(
            "todo_write", {"todos": [{"id": "1", "content": "Plan", "status": "completed"}]}
        )
    )
    todos = events.next("todos", 1.0)["todos"]
    assert _todo_lists(todos) == {"default": [("Plan", "completed", "medium")]}

    # Other changes (a call) do not re-read the todo file: it is stat'ed each poll.
    reads.clear()
    (workspace / "d.txt").write_text("d")
    ok(console.tb.run("read_file", {"path": "d.txt"}))
    while not any(c["tool"] == "read_file" for c in events.next("calls", 1.0)["calls"]):
        pass  # the todo_write calls above may come first
    time.sleep(5 * web_console.POLL_INTERVAL)
    assert reads == []
    assert events.events.empty()  # no todos event either

    # Cleared: an event with no lists (the page hides its panel).
    ok(console.tb.run("todo_write", {"todos": []}))
    assert events.next("todos", 1.0)["todos"] == []


def test_a_todo_write_from_another_process_is_pushed_too(
    console: Console, events: Events, workspace: Path, tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    events.next("state", 5)
    items = [{"content": "From the CLI", "status": "in_progress", "priority": "high"}]
    subprocess.run(
        [sys.executable, "-m", "local_tools", "call", "todo_write", "--json",
         json.dumps({"todos": items}), "--workspace", str(workspace), "--user", "cli-user"],
        check=True,
        capture_output=True,
        env={**os.environ, "LOCAL_TOOLS_STATE_DIR": str(tmp_path / "state")},
        timeout=60,
    )  # fmt: skip
    start = time.monotonic()
    todos = events.next("todos", 1.0)["todos"]
    assert time.monotonic() - start < 1.0
    assert _todo_lists(todos) == {"cli-user": [("From the CLI", "in_progress", "high")]}
    assert _todo_lists(console.state()["todos"]) == _todo_lists(todos)


# --------------------------------------------------------------------------- answers


def test_answers_are_validated(console: Console) -> None:
    tb = console.tb
    plain = _permission(tb)
    with console.client() as c:
        assert c.post("/console/api/answer", content=b"not json").status_code == 400
        assert c.post("/console/api/answer", json={"answer": {}}).status_code == 400
    assert console.answer(plain, {"decision": "yes"}).status_code == 400
    assert console.answer(plain, {"decision": "once", "extra": 1}).status_code == 400
    assert console.answer(plain, "once").status_code == 400
    response = console.answer(plain, {"decision": "pattern"})
    assert response.status_code == 400 and "no pattern" in response.json()["error"]
    assert console.answer("feedfacecafe", {"decision": "once"}).status_code == 404
    assert tb.pending.get(plain).status == "pending"  # nothing above answered it

    assert console.answer(plain, {"decision": "always"}).status_code == 200
    again = console.answer(plain, {"decision": "deny"})
    assert again.status_code == 409
    item = tb.pending.get(plain)
    assert item is not None and item.answer == {"decision": "always"}

    broad = _permission(tb, "logs/a.log", suggestion="logs/*")
    assert console.answer(broad, {"decision": "pattern"}).status_code == 200

    question = _question(tb)
    for bad in (
        {"choices": ["MySQL"]},  # not an option
        {"choices": ["PostgreSQL", "SQLite"]},  # one choice only
        {"text": "  ", "choices": []},  # nothing
        {"text": 5},
        {"choices": "SQLite"},
        {"decision": "once"},
    ):
        assert console.answer(question, bad).status_code == 400, bad
    response = console.answer(question, {"text": " Neither: DuckDB ", "choices": ["SQLite"]})
    assert response.status_code == 200
    item = tb.pending.get(question)
    assert item is not None and item.answer == {"text": "Neither: DuckDB", "choices": ["SQLite"]}

    several = _question(tb, multiple=True)
    assert console.answer(several, {"choices": ["SQLite", "PostgreSQL"]}).status_code == 200
    dismissed = _question(tb)
    assert console.answer(dismissed, {"cancelled": True}).status_code == 200


def test_a_call_waiting_for_approval_completes_once_answered_through_the_console(
    console: Console, workspace: Path
) -> None:
    (workspace / "doomed.txt").write_text("x")
    result: dict[str, Any] = {}
    call = threading.Thread(
        target=lambda: result.update(
            console.tb.run("file_delete", {"path": "doomed.txt"}, transport="mcp")
        )
    )
    call.start()
    (request,) = _wait_pending(console)
    assert request["kind"] == "permission"
    assert request["payload"]["tool"] == "file_delete"
    assert request["payload"]["subject"] == "doomed.txt"
    assert call.is_alive()  # it waits for the person

    assert console.answer(request["id"], {"decision": "once"}).status_code == 200
    call.join(10)
    assert not call.is_alive()
    ok(result)
    assert not (workspace / "doomed.txt").exists()
    # The answer is audited: the queue keeps who answered, the audit log the door.
    item = console.tb.pending.get(request["id"])
    assert item is not None and item.answered_by == "web console (127.0.0.1)"
    tools = [c["tool"] for c in console.state()["calls"]]
    assert tools[:2] == ["file_delete", "answer"]


def test_a_denial_through_the_console_refuses_the_call(console: Console, workspace: Path) -> None:
    (workspace / "kept.txt").write_text("x")
    result: dict[str, Any] = {}
    call = threading.Thread(
        target=lambda: result.update(console.tb.run("file_delete", {"path": "kept.txt"}))
    )
    call.start()
    (request,) = _wait_pending(console)
    assert console.answer(request["id"], {"decision": "deny"}).status_code == 200
    call.join(10)
    assert result["error"]["error_code"] == "PERMISSION_DENIED"
    assert (workspace / "kept.txt").exists()


def _denied_at_once(tb: Toolbox, workspace: Path) -> None:
    """An ask with no page open: denied at once naming the rule, nothing queued."""
    (workspace / "kept.txt").write_text("x")
    start = time.monotonic()
    result = tb.run("file_delete", {"path": "kept.txt"})
    assert time.monotonic() - start < 1.0, "the call waited for a person who is not there"
    assert result["error"]["error_code"] == "PERMISSION_DENIED"
    assert result["error"]["details"]["rule"].startswith('[permissions] "delete:file"')
    assert '"delete:file" = { "kept.txt" = "allow" }' in result["error"]["message"]
    assert (workspace / "kept.txt").exists()
    assert tb.pending.pending() == []


def test_the_console_is_live_only_while_a_page_is_open(
    tb: Toolbox, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A short stale window instead of 10 s; the heartbeat wakes every 0.1 s.
    monkeypatch.setattr(pending_queue, "CONSOLE_STALE", 0.5)
    monkeypatch.setattr(web_console, "BEAT_INTERVAL", 0.1)
    with serve_console(tb) as c:
        # The server runs, nobody has the page open: several beats go by, none counts.
        time.sleep(0.6)
        assert not tb.pending.console_live()
        _denied_at_once(tb, workspace)
        assert tb.pending.recent() == []  # nothing was ever queued

        page = Events(f"{c.url}/console/api/events")
        page.next("state", 5)
        assert _wait_live(tb, timeout=5) < 1.0, "the console went live only after a while"
        # Live now: an ask waits for the person instead of being denied.
        result: dict[str, Any] = {}
        call = threading.Thread(
            target=lambda: result.update(tb.run("file_delete", {"path": "kept.txt"}))
        )
        call.start()
        (request,) = _wait_pending(c)
        assert c.answer(request["id"], {"decision": "deny"}).status_code == 200
        call.join(10)
        assert result["error"]["error_code"] == "PERMISSION_DENIED"

        # The last page closes: the beats stop and the console goes stale.
        page.close()
        feed = web_console._FEEDS[tb]
        deadline = time.monotonic() + 3
        while feed.watched:
            assert time.monotonic() < deadline, "the server kept the closed page's stream"
            time.sleep(0.02)
        _wait_live(tb, live=False, timeout=5)
        time.sleep(0.3)  # three more beat intervals: still nothing beats
        assert not tb.pending.console_live()
        _denied_at_once(tb, workspace)


def test_the_heartbeat_keeps_the_console_live_until_the_server_stops(
    tb: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pending_queue, "CONSOLE_STALE", 0.5)
    monkeypatch.setattr(web_console, "BEAT_INTERVAL", 0.1)
    with serve_console(tb) as c:
        page = Events(f"{c.url}/console/api/events")
        _wait_live(tb)
        # Four stale windows with the page open: live throughout, so it beats on.
        until = time.monotonic() + 2.0
        while time.monotonic() < until:
            assert tb.pending.console_live(), "the console went stale with a page open"
            time.sleep(0.05)
        # With the usual window, only console_gone can make it not live at once.
        monkeypatch.setattr(pending_queue, "CONSOLE_STALE", 10.0)
        assert tb.pending.console_live()
    # The server stopped with the page still open: its stream ended, the console is gone.
    assert page.ended.wait(2), "the page's stream outlived the server"
    page.close()
    assert not tb.pending.console_live()  # console_gone, not 10 s of staleness


def test_review_answers_are_validated_and_a_review_completes_through_the_route(
    console: Console, workspace: Path
) -> None:
    (workspace / "prd.md").write_text("# PRD\n")
    result: dict[str, Any] = {}
    call = threading.Thread(
        target=lambda: result.update(
            console.tb.run("review_and_edit_file", {"path": "prd.md"}, transport="mcp")
        )
    )
    call.start()
    (request,) = _wait_pending(console)
    assert request["kind"] == "review" and request["payload"]["content"] == "# PRD\n"
    review = request["id"]
    for bad in (
        {"decision": "feedback", "feedback": "not offered here"},
        {"decision": "edit"},
        {"decision": "edit", "content": "# PRD\n"},  # unchanged: that is a pass
        {"decision": "edit", "content": "x" * 200_001},
        {"decision": "pass", "content": "x"},
        {"decision": "approve"},
        {"text": "hi"},
    ):
        assert console.answer(review, bad).status_code == 400, bad
    assert call.is_alive()
    response = console.answer(review, {"decision": "edit", "content": "# PRD v2\n"})
    assert response.status_code == 200
    call.join(10)
    assert ok(result)["decision"] == "edit"
    assert (workspace / "prd.md").read_text() == "# PRD v2\n"
    tools = [c["tool"] for c in console.state()["calls"]]
    assert tools[:2] == ["review_and_edit_file", "answer"]  # the answer is audited


def _post_raw(console: Console, body: str) -> httpx.Response:
    with console.client() as c:
        headers = {"content-type": "application/json"}
        return c.post("/console/api/answer", content=body.encode("ascii"), headers=headers)


def test_a_review_edit_of_the_largest_size_in_the_worst_json_encoding_is_accepted(
    console: Console, workspace: Path
) -> None:
    # Characters beyond the BMP, each escaped as two \uXXXX (12 bytes) by the JSON encoder.
    (workspace / "big.md").write_text("😀" * (MAX_REVIEW_CHARS - 1) + "\n")
    result: dict[str, Any] = {}
    call = threading.Thread(
        target=lambda: result.update(
            console.tb.run("review_and_edit_file", {"path": "big.md"}, transport="mcp")
        )
    )
    call.start()
    (request,) = _wait_pending(console)
    edited = "😀" * (MAX_REVIEW_CHARS - 1) + "!"
    body = json.dumps({"id": request["id"], "answer": {"decision": "edit", "content": edited}})
    assert len(body) > 12 * (MAX_REVIEW_CHARS - 1)
    response = _post_raw(console, body)
    assert response.status_code == 200, response.text[:200]
    call.join(30)
    assert ok(result)["decision"] == "edit"
    assert (workspace / "big.md").read_text() == edited


def test_a_review_answer_with_a_lone_surrogate_is_refused(
    console: Console, workspace: Path
) -> None:
    (workspace / "prd.md").write_text("# PRD\n")
    result: dict[str, Any] = {}
    call = threading.Thread(
        target=lambda: result.update(
            console.tb.run("review_with_feedback_file", {"path": "prd.md"}, transport="mcp")
        )
    )
    call.start()
    (request,) = _wait_pending(console)
    rid = json.dumps(request["id"])
    for answer in (
        '{"decision": "edit", "content": "# PRD \\ud83d cut\\n"}',  # half an emoji
        '{"decision": "feedback", "feedback": "more \\udc00"}',
    ):
        response = _post_raw(console, f'{{"id": {rid}, "answer": {answer}}}')
        assert response.status_code == 400, answer
        assert "not valid Unicode" in response.json()["error"]
    assert call.is_alive()  # still waiting for a real answer
    response = console.answer(request["id"], {"decision": "edit", "content": "# PRD 😀\n"})
    assert response.status_code == 200
    call.join(10)
    assert ok(result)["decision"] == "edit"
    assert (workspace / "prd.md").read_text() == "# PRD 😀\n"


def test_the_answer_route_itself_takes_only_a_console_session(tb: Toolbox) -> None:
    """Mounted behind no guard (or a guard that let a bearer token through), the
    route answers nothing: only a request the guard marked as a console session."""
    from starlette.testclient import TestClient

    request_id = tb.pending.submit(
        "permission", {"tool": "x", "permission": "delete:file", "subject": "a", "suggestion": None}
    )
    app = console_app(tb, "http://127.0.0.1/")
    mark: dict[str, Any] = {}

    async def marked(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and "auth" in mark:
            scope[AUTH_SCOPE_KEY] = mark["auth"]
        await app(scope, receive, send)

    body = {"id": request_id, "answer": {"decision": "once"}}
    with TestClient(marked) as c:
        assert c.post("/console/api/answer", json=body).status_code == 403  # no guard
        mark["auth"] = "bearer"
        assert c.post("/console/api/answer", json=body).status_code == 403
        item = tb.pending.get(request_id)
        assert item is not None and item.status == "pending"
        mark["auth"] = CONSOLE_SESSION  # the control
        assert c.post("/console/api/answer", json=body).status_code == 200
