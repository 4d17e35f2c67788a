"""browser_reload: Reload the browser page (e.g. after changing the app's code)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["browser_reload"]

DESCRIPTION = """Reload the browser page (e.g. after changing the app's code); returns its URL and
title once loaded."""


@_browser.page_tool("browser_reload", description=DESCRIPTION)
async def browser_reload(browser: BrowserSession, args: _browser.TimeoutArgs) -> None:
    await browser.page.reload()
