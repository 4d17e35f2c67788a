"""browser_go_forward: Go forward one page in the browser's history (after browser_go_back)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["browser_go_forward"]

DESCRIPTION = """Go forward one page in the browser's history; returns the page's URL and title once
loaded."""


@_browser.page_tool("browser_go_forward", description=DESCRIPTION)
async def browser_go_forward(browser: BrowserSession, args: _browser.TimeoutArgs) -> None:
    await browser.page.go_forward()
