"""The review tools answered in the web console, in Chromium: pass, edit (with the diff
shown as the person types) and feedback, from the page of a real `serve http`.

Shares the real-server and browser harness of test_console_browser.py (and its skip:
without Debian's chromium or the playwright package this module is skipped too)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from envelopes import err, ok
from local_tools import Toolbox
from transports import test_console_browser as harness
from transports.test_console_browser import TIMEOUT_MS, Background

browser = harness.browser  # one Chromium for the module, as there


@pytest.fixture
def console(browser: Browser, tb: Toolbox) -> Iterator[Page]:
    with harness._console(browser, tb) as page:
        yield page


DRAFT = "# Launch plan\n\nShip on Friday.\nTell the team.\n"


def _review(tb: Toolbox, tool: str, path: str = "plan.md") -> Background:
    return Background(lambda: tb.run(tool, {"path": path, "prompt": "Is the date right?"}))


def test_an_edit_in_the_page_is_written_and_its_diff_shown(
    console: Page, tb: Toolbox, workspace: Path
) -> None:
    (workspace / "plan.md").write_text(DRAFT)
    call = _review(tb, "review_with_feedback_file")
    card = console.locator(".card.review")
    expect(card).to_contain_text("Is the date right?", timeout=TIMEOUT_MS)
    draft = card.locator("textarea.draft")
    expect(draft).to_have_value(DRAFT)
    expect(card.get_by_role("button", name="Save my edit")).to_be_disabled()

    draft.fill(DRAFT.replace("Friday", "Monday"))
    expect(card.locator(".diff .del")).to_have_text("- Ship on Friday.")
    expect(card.locator(".diff .add")).to_have_text("+ Ship on Monday.")
    expect(card.get_by_role("button", name="Pass the original")).to_be_visible()
    card.get_by_role("button", name="Save my edit").click()

    out = ok(call.join())
    assert out["decision"] == "edit" and "+Ship on Monday." in out["diff"]
    assert (workspace / "plan.md").read_text() == DRAFT.replace("Friday", "Monday")
    expect(card).to_have_count(0, timeout=TIMEOUT_MS)
    expect(console.locator("#history")).to_contain_text("edited")


def test_pass_and_undo_in_the_page(console: Page, tb: Toolbox, workspace: Path) -> None:
    (workspace / "plan.md").write_text(DRAFT)
    call = _review(tb, "review_and_edit_file")
    card = console.locator(".card.review")
    draft = card.locator("textarea.draft")
    expect(draft).to_have_value(DRAFT, timeout=TIMEOUT_MS)
    expect(card.get_by_role("button", name="Give feedback…")).to_have_count(0)  # not offered
    draft.fill("scribble")
    card.get_by_role("button", name="Undo my changes").click()
    expect(draft).to_have_value(DRAFT)
    card.get_by_role("button", name="Pass").click()
    assert ok(call.join())["decision"] == "pass"
    assert (workspace / "plan.md").read_text() == DRAFT


def test_feedback_and_dismiss_in_the_page(console: Page, tb: Toolbox) -> None:
    args = {"content": "# Design\n\nOne server.\n", "title": "Design: storage"}
    call = Background(lambda: tb.run("review_with_feedback_content", args))
    card = console.locator(".card.review")
    expect(card).to_contain_text("Design: storage", timeout=TIMEOUT_MS)
    card.get_by_role("button", name="Give feedback…").click()
    send = card.get_by_role("button", name="Send feedback")
    expect(send).to_be_disabled()
    card.get_by_label("What should the agent change?").fill("Plan for two servers.")
    send.click()
    out = ok(call.join())
    assert (out["decision"], out["feedback"]) == ("feedback", "Plan for two servers.")

    dismissed = Background(lambda: tb.run("review_and_edit_content", args))
    card = console.locator(".card.review")
    card.get_by_role("button", name="Dismiss").click(timeout=TIMEOUT_MS)
    assert "dismissed" in err(dismissed.join(), "CANCELLED")


def test_a_deploy_is_approved_in_the_page_with_its_plan_shown(
    console: Page, tb: Toolbox, workspace: Path
) -> None:
    for rel, text in {
        "build/index.html": "new",
        "site/index.html": "old",
        "site/gone.js": "x",
    }.items():
        (workspace / rel).parent.mkdir(exist_ok=True)
        (workspace / rel).write_text(text)
    args = {"source": "build", "target": "site", "dry_run": False}
    call = Background(lambda: tb.run("copy_workspace_to_project", args, transport="mcp"))
    card = console.locator(".card.permission")
    summary = card.locator(".summary")
    expect(summary).to_contain_text("delete 1, copy 1 (0 new, 1 overwritten)", timeout=TIMEOUT_MS)
    expect(summary).to_contain_text("delete: gone.js")
    assert (workspace / "site/gone.js").exists()  # nothing happens before the click
    card.get_by_role("button", name="Allow once").click()
    assert ok(call.join())["applied"] is True
    assert (workspace / "site/index.html").read_text() == "new"
    assert not (workspace / "site/gone.js").exists()


def test_a_crlf_file_is_unchanged_until_edited_and_keeps_crlf(
    console: Page, tb: Toolbox, workspace: Path
) -> None:
    crlf = DRAFT.replace("\n", "\r\n").encode()
    (workspace / "plan.md").write_bytes(crlf)
    call = _review(tb, "review_and_edit_file")
    card = console.locator(".card.review")
    draft = card.locator("textarea.draft")
    expect(draft).to_have_value(DRAFT, timeout=TIMEOUT_MS)  # the textarea shows LF
    # Nothing was edited yet: nothing to save, no changes shown.
    expect(card.get_by_role("button", name="Save my edit")).to_be_disabled()
    expect(card.get_by_role("button", name="Pass", exact=True)).to_be_visible()
    expect(card.locator(".diff")).to_have_count(0)

    draft.fill(DRAFT.replace("Friday", "Monday"))
    expect(card.locator(".diff .del")).to_have_text("- Ship on Friday.")
    expect(card.locator(".diff .add")).to_have_count(1)
    card.get_by_role("button", name="Save my edit").click()

    out = ok(call.join())
    assert out["decision"] == "edit"
    assert (workspace / "plan.md").read_bytes() == crlf.replace(b"Friday", b"Monday")
    changed = [line for line in out["diff"].splitlines()[2:] if line[:1] in "+-"]
    assert changed == ["-Ship on Friday.", "+Ship on Monday."]  # only the real change
