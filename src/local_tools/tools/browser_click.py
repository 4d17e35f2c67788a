"""browser_click: click an element (by ref or selector) or a point of the page."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["BrowserClickArgs", "browser_click"]


class BrowserClickArgs(_browser.ElementArgs):
    x: float | None = Field(None, ge=0, description="Page x in CSS pixels (with y, no element).")
    y: float | None = Field(None, ge=0, description="Page y in CSS pixels (with x).")
    button: Literal["left", "right", "middle"] = Field("left", description="The mouse button.")
    double: bool = Field(False, description="A double click.")

    @model_validator(mode="after")
    def _one_target(self) -> BrowserClickArgs:
        point = self.x is not None or self.y is not None
        if point and (self.x is None or self.y is None):
            raise ValueError("give both x and y")
        if sum((point, bool(self.ref), bool(self.selector))) != 1:
            raise ValueError("give exactly one of ref, selector, or x and y")
        return self


DESCRIPTION = """Click an element (`ref` from browser_snapshot, or a CSS `selector`) or a point `x`,
`y`; returns the page's URL and title afterwards.

Waits for the element to be visible and enabled first. Take a browser_snapshot to
see what changed."""


@_browser.page_tool("browser_click", description=DESCRIPTION, args=BrowserClickArgs)
async def browser_click(browser: BrowserSession, args: BrowserClickArgs) -> None:
    count = 2 if args.double else 1
    if args.x is not None and args.y is not None:
        await browser.page.mouse.click(args.x, args.y, button=args.button, click_count=count)
    else:
        element = await browser.element(args.selector, args.ref)
        await element.click(button=args.button, click_count=count)
