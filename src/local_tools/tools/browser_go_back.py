"""browser_go_back: Go back one page in the browser's history (like the Back button)."""

from __future__ import annotations

from typing import Any

from local_tools.browser import BrowserSession
from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, tool
from local_tools.tools import _browser

__all__ = ["browser_go_back"]

DESCRIPTION = """Go back one page in the browser's history (like the Back button).

Waits for the page to load (up to `timeout`) and returns its URL and title; take a
browser_snapshot to read it."""


@tool(
    "browser_go_back",
    args=_browser.TimeoutArgs,
    description=DESCRIPTION,
    hints=Hints(open_world=True),
    toolset="browser",
    render=_browser.render_page,
    timeout=_browser.TOOL_DEADLINE,
    output=_browser.PageOutput,
)
async def browser_go_back(args: _browser.TimeoutArgs, ctx: ToolContext) -> dict[str, Any]:
    async def back(browser: BrowserSession) -> dict[str, Any]:
        await browser.page.go_back()
        return await _browser.page_info(browser)

    return await _browser.call(ctx, back, args.timeout)
