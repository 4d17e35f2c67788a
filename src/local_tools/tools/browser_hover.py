"""browser_hover: move the mouse over an element (menus, tooltips)."""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from local_tools.browser import BrowserSession
from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, tool
from local_tools.tools import _browser

__all__ = ["BrowserHoverArgs", "browser_hover"]


class BrowserHoverArgs(_browser.ElementArgs):
    @model_validator(mode="after")
    def _one_target(self) -> BrowserHoverArgs:
        if bool(self.ref) == bool(self.selector):
            raise ValueError("give exactly one of ref or selector")
        return self


DESCRIPTION = """Move the mouse over an element, named by `ref` (from browser_snapshot) or
`selector`: opens hover menus and tooltips. Take a browser_snapshot to see them."""


@tool(
    "browser_hover",
    args=BrowserHoverArgs,
    description=DESCRIPTION,
    hints=Hints(open_world=True),
    toolset="browser",
    render=_browser.render_page,
    timeout=_browser.TOOL_DEADLINE,
    output=_browser.PageOutput,
)
async def browser_hover(args: BrowserHoverArgs, ctx: ToolContext) -> dict[str, Any]:
    async def hover(browser: BrowserSession) -> dict[str, Any]:
        await (await browser.element(args.selector, args.ref)).hover()
        return await _browser.page_info(browser)

    return await _browser.call(ctx, hover, args.timeout)
