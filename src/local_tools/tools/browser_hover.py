"""browser_hover: move the mouse over an element (menus, tooltips)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import model_validator

from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["BrowserHoverArgs", "browser_hover"]


class BrowserHoverArgs(_browser.ElementArgs):
    @model_validator(mode="after")
    def _one_target(self) -> BrowserHoverArgs:
        if bool(self.ref) == bool(self.selector):
            raise ValueError("give exactly one of ref or selector")
        return self


DESCRIPTION = """Move the mouse over an element (`ref` or `selector`) to open hover
menus and tooltips; take a browser_snapshot to see them."""


@_browser.page_tool("browser_hover", description=DESCRIPTION, args=BrowserHoverArgs)
async def browser_hover(browser: BrowserSession, args: BrowserHoverArgs) -> None:
    await (await browser.element(args.selector, args.ref)).hover()
