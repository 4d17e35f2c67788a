"""The web console in a real browser: Debian's chromium driven by Playwright.

Calls wait on the pending queue in background threads, as calls from an MCP client or
a web chat would; the person answers by clicking in the page. Playwright's own
browser download is never used (it cannot download here): `make test` installs
chromium with apt-get, and without it (or without the playwright package) this module
is skipped, saying which is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
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

import uvicorn  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from envelopes import ok  # noqa: E402
from local_tools import Toolbox  # noqa: E402
from local_tools.interact.base import QuestionAnswer, QuestionRequest  # noqa: E402
from local_tools.interact.queue_asker import QueueAsker  # noqa: E402
from local_tools.transports.web_console import (  # noqa: E402
    close_console,
    console_heartbeat,
    console_routes,
)

TIMEOUT_MS = 10_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM))
        yield browser
        browser.close()


@contextlib.contextmanager
def _serve(tb: Toolbox) -> Iterator[str]:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        beat = asyncio.create_task(console_heartbeat(tb, "http://127.0.0.1/"))
        yield
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat

    app = Starlette(routes=console_routes(tb), lifespan=lifespan)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not (server.started and tb.pending.console_live()):
        assert thread.is_alive() and time.monotonic() < deadline, "the console did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/"
    finally:
        for item in tb.pending.pending():  # a failed test leaves no call waiting
            tb.pending.withdraw(item.id, "cancelled")
        close_console(tb)
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def page(browser: Browser, tb: Toolbox) -> Iterator[Page]:
    with _serve(tb) as url:
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(url)
        expect(page.locator("#conn")).to_have_attribute("data-state", "live", timeout=TIMEOUT_MS)
        yield page
        context.close()
        assert errors == [], errors  # no script error, no CSP violation


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
    expect(card.locator(".subject")).to_have_text("python3 -c print(1)", timeout=TIMEOUT_MS)
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
    with _serve(tb) as url:
        context = browser.new_context(viewport={"width": 380, "height": 800})
        page = context.new_page()
        page.goto(url)
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
        context.close()
