"""browser_go_back: Go back one page in the browser's history (like the Back button)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["browser_go_back"]

DESCRIPTION = """Go back one page in the browser's history; returns the page's URL and title once
loaded."""


@_browser.page_tool("browser_go_back", description=DESCRIPTION)
async def browser_go_back(browser: BrowserSession, args: _browser.TimeoutArgs) -> None:
    await browser.page.go_back()
