"""browser_reload: Reload the browser page (e.g. after changing the app's code)."""

from __future__ import annotations

from typing import Any

from local_tools.browser import BrowserSession
from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, tool
from local_tools.tools import _browser

__all__ = ["browser_reload"]

DESCRIPTION = """Reload the browser page (e.g. after changing the app's code).

Waits for the page to load (up to `timeout`) and returns its URL and title; take a
browser_snapshot to read it."""


@tool(
    "browser_reload",
    args=_browser.TimeoutArgs,
    description=DESCRIPTION,
    hints=Hints(open_world=True),
    toolset="browser",
    render=_browser.render_page,
    timeout=_browser.TOOL_DEADLINE,
    output=_browser.PageOutput,
)
async def browser_reload(args: _browser.TimeoutArgs, ctx: ToolContext) -> dict[str, Any]:
    async def reload(browser: BrowserSession) -> dict[str, Any]:
        await browser.page.reload()
        return await _browser.page_info(browser)

    return await _browser.call(ctx, reload, args.timeout)
