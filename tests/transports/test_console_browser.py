"""The web console in a real browser: Debian's chromium driven by Playwright, against
the real server.

Each test starts `python -m local_tools serve http --workspace ... --port 0` as a person
would, and opens the URL it prints (`/auth?token=...`, which sets the console cookie and
redirects to the page) in the browser. The calls are made in this process by a second
Toolbox on the same workspace and state dir, in background threads, as calls from an
MCP client or a web chat would: they wait on the pending queue the two processes share
through SQLite, and the person answers by clicking in the page. The console counts as
running only while its page is open, so every test waits for `console_live()` after
the page loaded. Playwright's own browser download is never used (it cannot download
here): `make test` installs chromium with apt-get, and without it (or without the
playwright package) this module is skipped, saying which is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")

try:
    from playwright.sync_api import Browser, Page, expect, sync_playwright
except ImportError:
    pytest.skip(
        "the playwright package is not installed (it is in the dev extras: "
        "pip install -e '.[dev]')",
        allow_module_level=True,
    )
if not CHROMIUM.exists():
    pytest.skip(
        f"no {CHROMIUM}: `make test` installs Debian's chromium with apt-get when it runs "
        "as root (apt-get install chromium)",
        allow_module_level=True,
    )

from envelopes import ok  # noqa: E402
from local_tools import Toolbox  # noqa: E402
from local_tools.interact.base import QuestionAnswer, QuestionRequest  # noqa: E402
from local_tools.interact.queue_asker import QueueAsker  # noqa: E402
from local_tools.transports.http_guard import console_cookie  # noqa: E402
from spawned_http import spawn_http_server  # noqa: E402

TIMEOUT_MS = 10_000
# The server beats every 2 s while a page is open: live within one beat, with room.
LIVE_TIMEOUT = 10.0


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM))
        yield browser
        browser.close()


@dataclass
class Server:
    url: str  # http://127.0.0.1:PORT
    auth_url: str  # the URL `serve http` prints, with the token


@contextlib.contextmanager
def _serve(tb: Toolbox) -> Iterator[Server]:
    """`local-tools serve http` for `tb`'s workspace and state dir, in its own process."""
    with spawn_http_server(tb.workspace, tb.state_dir) as spawned:
        try:
            yield Server(spawned.url, spawned.auth_url)
        finally:
            for item in tb.pending.pending():  # a failed test leaves no call waiting
                tb.pending.withdraw(item.id, "cancelled")


def _wait_live(tb: Toolbox) -> None:
    deadline = time.monotonic() + LIVE_TIMEOUT
    while not tb.pending.console_live():
        assert time.monotonic() < deadline, "the open page did not make the console live"
        time.sleep(0.05)


@contextlib.contextmanager
def _console(browser: Browser, tb: Toolbox, width: int = 1100, height: int = 900) -> Iterator[Page]:
    """The server, and its console open in a fresh browser context through the printed
    URL; waits until the open page makes the console live."""
    with _serve(tb) as server:
        context = browser.new_context(viewport={"width": width, "height": height})
        errors: list[str] = []
        try:
            page = context.new_page()
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(server.auth_url)
            # The token left the address bar for an HttpOnly, same-site-only cookie.
            expect(page).to_have_url(f"{server.url}/")
            expect(page.locator("#conn")).to_have_attribute(
                "data-state", "live", timeout=TIMEOUT_MS
            )
            _wait_live(tb)
            yield page
        finally:
            context.close()
        assert errors == [], errors  # no script error, no CSP violation


@pytest.fixture
def page(browser: Browser, tb: Toolbox) -> Iterator[Page]:
    with _console(browser, tb) as page:
        yield page


class Background:
    """A blocking call in a thread, as another transport's call would wait."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self._thread.start()

    def _run(self, work: Callable[[], Any]) -> None:
        try:
            self.result = work()
        except BaseException as exc:
            self.error = exc

    def join(self) -> Any:
        self._thread.join(20)
        assert not self._thread.is_alive(), "the call is still waiting"
        if self.error is not None:
            raise self.error
        return self.result


def _ask(tb: Toolbox, request: QuestionRequest) -> Background:
    """The question tool's way: wait on the queue for the console's answer."""
    return Background(lambda: asyncio.run(QueueAsker(tb.pending, timeout=30).question(request)))


def test_a_delete_waiting_for_approval_is_allowed_by_a_click(
    page: Page, tb: Toolbox, workspace: Path
) -> None:
    (cookie,) = page.context.cookies()
    port = int(page.url.split(":")[2].split("/")[0])
    assert cookie["name"] == console_cookie(port) and cookie["path"] == "/console/"
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    (workspace / "doomed.txt").write_text("x")
    call = Background(lambda: tb.run("file_delete", {"path": "doomed.txt"}, transport="mcp"))
    card = page.locator(".card.permission")
    expect(card).to_contain_text("file_delete", timeout=TIMEOUT_MS)
    expect(card.locator(".subject")).to_have_text("doomed.txt")
    expect(page).to_have_title("(1) waiting · local-tools")

    card.get_by_role("button", name="Allow once").click()
    ok(call.join())
    assert not (workspace / "doomed.txt").exists()
    expect(card).to_have_count(0, timeout=TIMEOUT_MS)
    # The call and the answer arrive in the log without a reload.
    expect(page.locator(".call .tool", has_text="file_delete")).to_have_count(1)
    expect(page.locator(".call .tool", has_text="answer")).to_have_count(1)
    expect(page.locator("#history")).to_contain_text("allowed once")
    item = tb.pending.recent()[0]
    assert item.answered_by == "web console (127.0.0.1)"


def _python(tb: Toolbox, code: str) -> Background:
    return Background(lambda: tb.run("exec_cmd", {"command": f"python3 -c '{code}'"}))


def test_allow_always_shows_both_rules_and_stores_the_narrow_one_picked(
    page: Page, tb: Toolbox
) -> None:
    call = _python(tb, "print(6 * 7)")
    card = page.locator(".card.permission")
    expect(card.locator(".subject")).to_have_text("python3 -c 'print(6 * 7)'", timeout=TIMEOUT_MS)
    card.get_by_role("button", name="Allow always…").click()
    # Both rules, verbatim: the exact subject (picked by default) and the pattern.
    rules = card.locator(".choice")
    expect(rules).to_have_count(2)
    expect(rules.nth(0).locator(".rule")).to_have_text("execute:command→python3 -c 'print(6 * 7)'")
    expect(rules.nth(1).locator(".rule")).to_have_text("execute:command→python3 *")
    exact = card.get_by_role("radio", name="Only this exact subject")
    expect(exact).to_be_checked()
    expect(exact).to_be_focused()  # keyboard users start on the narrow choice
    card.get_by_role("button", name="Store rule and allow").focus()
    page.keyboard.press("Enter")
    assert "42" in ok(call.join())["stdout"]
    # Only the exact command was stored: the same runs unasked, another still asks.
    ok(tb.run("exec_cmd", {"command": "python3 -c 'print(6 * 7)'"}))
    other = _python(tb, "print(1)")
    # shell-quoted as shown, so two different commands never look alike
    expect(card.locator(".subject")).to_have_text("python3 -c 'print(1)'", timeout=TIMEOUT_MS)
    card.get_by_role("button", name="Deny").click()
    assert other.join()["error"]["error_code"] == "PERMISSION_DENIED"


def test_allow_always_with_the_broader_pattern(page: Page, tb: Toolbox) -> None:
    call = _python(tb, "print(1)")
    card = page.locator(".card.permission")
    card.get_by_role("button", name="Allow always…").click(timeout=TIMEOUT_MS)
    card.get_by_text("Everything matching this pattern").click()
    card.get_by_role("button", name="Store rule and allow").click()
    ok(call.join())
    # The pattern covers any python3 command now: no asking.
    assert "2" in ok(tb.run("exec_cmd", {"command": "python3 -c 'print(2)'"}))["stdout"]
    expect(page.locator("#history li").first).to_contain_text("allowed pattern")


def test_a_question_is_answered_with_an_option(page: Page, tb: Toolbox) -> None:
    asked = _ask(tb, QuestionRequest("Which database?", ("PostgreSQL", "SQLite")))
    card = page.locator(".card.question")
    expect(card.get_by_role("heading")).to_have_text("Which database?", timeout=TIMEOUT_MS)
    send = card.get_by_role("button", name="Send answer")
    expect(send).to_be_disabled()  # nothing chosen yet
    card.get_by_label("SQLite").check()
    send.click()
    assert asked.join() == QuestionAnswer(choices=("SQLite",), text=None)
    expect(card).to_have_count(0, timeout=TIMEOUT_MS)


def test_a_question_is_answered_in_free_text(page: Page, tb: Toolbox) -> None:
    asked = _ask(tb, QuestionRequest("What should the service be called?", ("api", "backend")))
    card = page.locator(".card.question")
    box = card.get_by_label("Or answer in your own words")
    box.fill("  billing-gateway  ", timeout=TIMEOUT_MS)
    box.press("Control+Enter")
    assert asked.join() == QuestionAnswer(choices=(), text="billing-gateway")


def test_model_text_is_shown_as_text(page: Page, tb: Toolbox) -> None:
    question = '<img src=x id=injected onerror="document.title=1">Ship\u202egnp.exe?'
    asked = _ask(tb, QuestionRequest(question, ("<b>yes</b>",)))
    card = page.locator(".card.question")
    # The tags are shown as typed; the direction override is shown escaped.
    expect(card.get_by_role("heading")).to_have_text(
        '<img src=x id=injected onerror="document.title=1">Ship\\u202egnp.exe?',
        timeout=TIMEOUT_MS,
    )
    expect(page.locator("#injected")).to_have_count(0)
    expect(page.locator(".card b")).to_have_count(0)
    card.get_by_role("button", name="Dismiss").click()
    with pytest.raises(Exception, match="dismissed"):
        asked.join()


def test_the_call_log_updates_live_and_filters(page: Page, tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a")
    ok(tb.run("read_file", {"path": "a.txt"}))
    tb.run("read_file", {"path": "missing.txt"})
    ok(tb.run("list_dir", {"path": "."}))
    rows = page.locator(".call")
    expect(rows).to_have_count(3, timeout=TIMEOUT_MS)
    expect(rows.first.locator(".tool")).to_have_text("list_dir")  # newest on top
    page.get_by_placeholder("Filter").fill("error")
    expect(page.locator(".call:visible")).to_have_count(1)
    expect(page.locator(".call:visible .code")).to_have_text("NOT_FOUND")
    page.get_by_placeholder("Filter").fill("read_file")
    expect(page.locator(".call:visible")).to_have_count(2)
    page.get_by_placeholder("Filter").fill("")
    # A row opens with the keyboard to show the arguments in full.
    rows.first.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(rows.first.locator("pre.json")).to_be_visible()


def test_the_page_fits_a_phone(browser: Browser, tb: Toolbox, workspace: Path) -> None:
    (workspace / "doomed.txt").write_text("x")
    with _console(browser, tb, width=380, height=800) as page:
        call = Background(lambda: tb.run("file_delete", {"path": "doomed.txt"}))
        card = page.locator(".card.permission")
        expect(card).to_be_visible(timeout=TIMEOUT_MS)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 380, f"the page scrolls sideways on a phone ({width} px)"
        for name in ("Allow once", "Allow always…", "Deny"):
            box = card.get_by_role("button", name=name).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 380
        card.get_by_role("button", name="Deny").click()
        assert call.join()["error"]["error_code"] == "PERMISSION_DENIED"


def test_the_plan_shows_todo_writes_live(page: Page, tb: Toolbox) -> None:
    panel = page.locator("#todo-panel")
    expect(panel).to_be_hidden()  # no todos yet
    todos = [
        {"content": "Read the <b>code</b>", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress", "priority": "high"},
        {"content": "Write a test", "status": "pending"},
        {"content": "Rewrite it all", "status": "cancelled", "priority": "low"},
    ]
    ok(tb.run("todo_write", {"todos": todos}))
    items = panel.locator(".todo")
    expect(items).to_have_count(4, timeout=TIMEOUT_MS)
    expect(panel.locator(".todo-mark")).to_have_text(["✓", "◐", "○", "✗"])
    expect(panel.locator(".todo-text")).to_have_text(
        [
            "done: Read the <b>code</b>",  # the status is read out, the tags shown as typed
            "in progress: Fix the bug",
            "pending: Write a test",
            "cancelled: Rewrite it all",
        ]
    )
    expect(panel.locator("b")).to_have_count(0)
    expect(items.nth(1)).to_have_class(re.compile(r"\bin_progress\b"))
    expect(items.nth(1).locator(".todo-prio")).to_have_text("high")
    expect(panel.locator(".todo-prio")).to_have_count(1)  # low and medium say nothing
    assert "line-through" in items.nth(0).locator(".todo-text").evaluate(
        "e => getComputedStyle(e).textDecorationLine"
    )
    expect(page.locator("#todo-count")).to_have_text("4")
    expect(page.locator("#todo-counts .todo-count")).to_have_text(
        ["◐ 1 in progress", "○ 1 pending", "✓ 1 done", "✗ 1 cancelled"]
    )
    expect(panel.locator(".todo-who")).to_have_count(0)  # one user: not named

    # An update re-renders: the fix is done, the test is under way.
    todos[1]["status"], todos[2]["status"] = "completed", "in_progress"
    ok(tb.run("todo_write", {"todos": [{"id": str(n + 1), **t} for n, t in enumerate(todos)]}))
    expect(panel.locator(".todo-mark")).to_have_text(["✓", "✓", "◐", "✗"], timeout=TIMEOUT_MS)
    expect(panel.locator(".todo.in_progress .todo-text")).to_have_text("in progress: Write a test")
    expect(page.locator("#todo-counts .todo-count")).to_have_text(
        ["◐ 1 in progress", "✓ 2 done", "✗ 1 cancelled"]
    )

    # A second user's list: each list is named now; cleared lists leave, then the panel.
    ok(tb.run("todo_write", {"todos": ["Review"]}, user_id="bob"))
    expect(panel.locator(".todo-who > span:first-child")).to_have_text(
        ["default", "bob"], timeout=TIMEOUT_MS
    )
    ok(tb.run("todo_write", {"todos": []}))
    expect(panel.locator(".todo-who")).to_have_count(0, timeout=TIMEOUT_MS)
    expect(items).to_have_count(1)
    ok(tb.run("todo_write", {"todos": []}, user_id="bob"))
    expect(panel).to_be_hidden(timeout=TIMEOUT_MS)
