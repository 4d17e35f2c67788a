"""The console's call log nests the calls a call made (a batch's, a task's: call ids
"<maker's id>.N") under it, in Debian's chromium against the real server.

A batch is logged when it ends, after its calls: one run before the page opens comes in
the page's first state, all at once; one run while the page is open sends its calls
first (one waits on a question the person answers in the page), so they wait, show at
the top, then move under the batch when it ends. The browser, the server and the page
are test_console_browser's.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from envelopes import ok
from local_tools import Toolbox

# Through test_console_browser, which skips this module too without playwright or chromium.
from transports.test_console_browser import (
    TIMEOUT_MS,
    Background,
    Browser,
    Page,
    _console,
    expect,
)
from transports.test_console_browser import browser as browser  # the module's fixture

if TYPE_CHECKING:
    from playwright.sync_api import Locator

# How long a call may wait for its maker before it shows at the top, with room.
WAIT_MS = 3000 + TIMEOUT_MS


@pytest.fixture
def files(workspace: Path) -> Path:
    (workspace / "a.txt").write_text("a\n")
    return workspace


def _top(page: Page) -> Locator:
    """The top-level rows shown."""
    return page.locator("#calls > .call:visible")


def _kids(row: Locator) -> Locator:
    return row.locator(":scope > details > .call-detail > .nested > .call")


def _summary(row: Locator, part: str) -> Locator:
    """A part of the row's own summary line (not of the rows nested in it)."""
    return row.locator(f":scope > details > summary {part}")


def _open(row: Locator) -> None:
    row.locator(":scope > details > summary").click()


def test_a_batch_run_before_the_page_opens_holds_its_calls(
    browser: Browser, tb: Toolbox, files: Path
) -> None:
    ok(tb.run("list_dir", {"path": "."}))
    calls = [
        {"tool": "read_file", "args": {"path": "a.txt"}},
        {"tool": "read_file", "args": {"path": "missing.txt"}},
        {"tool": "file_stat", "args": {"path": "a.txt"}},
    ]
    envelope = tb.run("batch", {"tool_calls": calls})
    assert ok(envelope)["failed"] == 1
    with _console(browser, tb) as page:
        top = _top(page)
        expect(_summary(top, ".tool")).to_have_text(["batch", "list_dir"], timeout=TIMEOUT_MS)
        expect(page.locator("#calls-count")).to_have_text("2")
        batch = top.first
        expect(_summary(batch, ".kids")).to_have_text("3 calls")
        expect(_summary(top.nth(1), ".kids")).to_be_hidden()
        kids = _kids(batch)
        expect(kids).to_have_count(3)
        expect(kids.first).to_be_hidden()  # inside the closed row
        _open(batch)
        # In the batch's order, whichever ended first; each its own row.
        expect(_summary(kids, ".tool")).to_have_text(["read_file", "read_file", "file_stat"])
        expect(_summary(kids.nth(1), ".code")).to_have_text("NOT_FOUND")
        call_id = envelope["meta"]["call_id"]
        expect(kids.locator(":scope > details > .call-detail > .facts code")).to_have_text(
            [f"{call_id}.1", f"{call_id}.2", f"{call_id}.3"], use_inner_text=False
        )
        _open(batch)  # closed again

        # The filter finds a call inside: its batch shows, opened at it.
        search = page.get_by_placeholder("Filter")
        search.fill("not_found")
        expect(_top(page)).to_have_count(1)
        expect(batch.locator(":scope > details")).to_have_attribute("open", "")
        expect(_summary(kids.filter(visible=True), ".tool")).to_have_text(["read_file"])
        expect(page.locator("#calls-count")).to_have_text("1 of 2")
        # The batch itself matching shows all it made.
        search.fill("batch")
        expect(_top(page)).to_have_count(1)
        expect(batch.locator(":scope > details")).not_to_have_attribute("open", "")
        _open(batch)
        expect(kids.filter(visible=True)).to_have_count(3)
        search.fill("")
        expect(_top(page)).to_have_count(2)


def test_calls_that_end_before_their_batch_move_under_it(
    browser: Browser, tb: Toolbox, files: Path
) -> None:
    with _console(browser, tb) as page:
        calls = [
            {"tool": "read_file", "args": {"path": "a.txt"}},
            {"tool": "question", "args": {"question": "Go on?", "options": ["yes", "no"]}},
            {"tool": "list_dir", "args": {"path": "."}},
        ]
        running = Background(lambda: tb.run("batch", {"tool_calls": calls}))
        card = page.locator(".card.question")
        expect(card.get_by_role("heading")).to_have_text("Go on?", timeout=TIMEOUT_MS)
        # The two that ended wait for their batch, then show at the top meanwhile (in
        # the order they ended, which concurrent calls do not fix).
        expect(_top(page)).to_have_count(2, timeout=WAIT_MS)
        shown = _summary(_top(page), ".tool").all_inner_texts()
        assert sorted(shown) == ["list_dir", "read_file"]
        card.get_by_label("yes").check()
        card.get_by_role("button", name="Send answer").click()
        envelope = running.join()
        assert ok(envelope)["succeeded"] == 3

        top = _top(page)
        expect(_summary(top, ".tool")).to_have_text(["batch"], timeout=TIMEOUT_MS)
        batch = top.first
        expect(_summary(batch, ".kids")).to_have_text("3 calls")  # the answer is no call
        _open(batch)
        kids = _kids(batch)
        # The person's answer stays with the question it answered, right after it.
        expect(_summary(kids, ".tool")).to_have_text(
            ["read_file", "question", "answer", "list_dir"]
        )
        expect(kids.nth(2)).to_have_class(re.compile(r"\banswer\b"))
        expect(_summary(kids.nth(2), ".args")).to_contain_text("yes")
        expect(page.locator("#calls-count")).to_have_text("1")

        # A later call lands on top; the filter still reaches into the batch.
        ok(tb.run("file_stat", {"path": "a.txt"}))
        expect(_top(page)).to_have_count(2, timeout=TIMEOUT_MS)
        page.get_by_placeholder("Filter").fill("list_dir")
        expect(_summary(_top(page), ".tool")).to_have_text(["batch"])
        expect(_summary(kids.filter(visible=True), ".tool")).to_have_text(["list_dir"])


def _call(tb: Toolbox, call_id: str) -> None:
    """A call under the id a maker gives its calls (as batch and task do)."""
    # In a thread: Playwright's sync API keeps a loop running in this one.
    call = tb.runner.arun("file_stat", {"path": "a.txt"}, call_id=call_id)
    ok(Background(lambda: asyncio.run(call)).join())


def test_calls_nest_at_every_depth_and_go_with_their_maker(
    browser: Browser, tb: Toolbox, files: Path
) -> None:
    with _console(browser, tb) as page:
        # A task "t" whose 2nd call is a task of its own; "gone" is older than the list.
        for call_id in ("t.2.1", "t.1", "t.2", "gone.1"):
            _call(tb, call_id)
        expect(_top(page)).to_have_count(3, timeout=WAIT_MS)  # t.2 holds t.2.1 already
        _call(tb, "t")
        top = _top(page)
        expect(top).to_have_count(2, timeout=TIMEOUT_MS)
        ids = ":scope > details > .call-detail > .facts code"
        expect(top.locator(ids)).to_have_text(["t", "gone.1"])
        t = top.first
        expect(_summary(t, ".kids")).to_have_text("2 calls")
        _open(t)
        expect(_kids(t).locator(ids)).to_have_text(["t.1", "t.2"])
        inner = _kids(t).nth(1)
        expect(_summary(inner, ".kids")).to_have_text("1 call")
        _open(inner)
        expect(_kids(inner).locator(ids)).to_have_text(["t.2.1"])

        # The list keeps the newest 200 top-level rows, each with all it made.
        for _ in range(199):
            ok(tb.run("list_dir", {"path": "."}))
        expect(page.locator("#calls-count")).to_have_text("200", timeout=TIMEOUT_MS)
        expect(top.last.locator(ids)).to_have_text("t")  # "gone.1", older, went first
        expect(page.locator("#calls .call")).to_have_count(203)
        ok(tb.run("list_dir", {"path": "."}))
        expect(page.locator("#calls .call")).to_have_count(200, timeout=TIMEOUT_MS)
        expect(page.locator("#calls .call .tool", has_text="file_stat")).to_have_count(0)
