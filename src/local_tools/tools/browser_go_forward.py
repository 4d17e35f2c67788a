"""browser_go_forward: Go forward one page in the browser's history (after browser_go_back)."""

from __future__ import annotations

from typing import Any

from local_tools.browser import BrowserSession
from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, tool
from local_tools.tools import _browser

__all__ = ["browser_go_forward"]

DESCRIPTION = """Go forward one page in the browser's history (after browser_go_back).

Waits for the page to load (up to `timeout`) and returns its URL and title; take a
browser_snapshot to read it."""


@tool(
    "browser_go_forward",
    args=_browser.TimeoutArgs,
    description=DESCRIPTION,
    hints=Hints(open_world=True),
    toolset="browser",
    render=_browser.render_page,
    timeout=_browser.TOOL_DEADLINE,
    output=_browser.PageOutput,
)
async def browser_go_forward(args: _browser.TimeoutArgs, ctx: ToolContext) -> dict[str, Any]:
    async def forward(browser: BrowserSession) -> dict[str, Any]:
        await browser.page.go_forward()
        return await _browser.page_info(browser)

    return await _browser.call(ctx, forward, args.timeout)
