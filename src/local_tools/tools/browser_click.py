"""browser_click: click an element (by ref or selector) or a point of the page."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from local_tools.browser import BrowserSession
from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, tool
from local_tools.tools import _browser

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


DESCRIPTION = """Click an element: `ref` from browser_snapshot (best), a CSS `selector`,
or a point `x`, `y`. Waits for the element to be visible and enabled first (up to
`timeout`). Returns the page's URL and title afterwards, so a click that navigated
shows it; take a browser_snapshot to see what changed."""


@tool(
    "browser_click",
    args=BrowserClickArgs,
    description=DESCRIPTION,
    hints=Hints(open_world=True),
    toolset="browser",
    render=_browser.render_page,
    timeout=_browser.TOOL_DEADLINE,
    output=_browser.PageOutput,
)
async def browser_click(args: BrowserClickArgs, ctx: ToolContext) -> dict[str, Any]:
    async def click(browser: BrowserSession) -> dict[str, Any]:
        count = 2 if args.double else 1
        if args.x is not None and args.y is not None:
            await browser.page.mouse.click(args.x, args.y, button=args.button, click_count=count)
        else:
            element = await browser.element(args.selector, args.ref)
            await element.click(button=args.button, click_count=count)
        return await _browser.page_info(browser)

    return await _browser.call(ctx, click, args.timeout)
