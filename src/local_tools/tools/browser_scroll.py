"""browser_scroll: scroll the page."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import tool
from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["BrowserScrollArgs", "BrowserScrollOutput", "browser_scroll"]


class BrowserScrollArgs(_browser.TimeoutArgs):
    direction: Literal["up", "down", "to_top", "to_bottom"] = Field(
        "down", description="up/down by `amount`, or to the top or bottom of the page."
    )
    amount: int = Field(500, ge=1, le=100_000, description="CSS pixels, for up and down.")


class BrowserScrollOutput(_browser.PageOutput):
    scroll_y: float = Field(description="The page's vertical scroll position afterwards.")
    scroll_height: float = Field(description="The page's whole height.")


DESCRIPTION = """Scroll the page up or down by `amount` pixels, or to its top or
bottom (loading more where the page does); returns the new position."""

_SCROLL = """([direction, amount]) => {
  const el = document.scrollingElement || document.documentElement;
  if (direction === 'to_top') window.scrollTo(0, 0);
  else if (direction === 'to_bottom') window.scrollTo(0, el.scrollHeight);
  else window.scrollBy(0, direction === 'up' ? -amount : amount);
  return [window.scrollY, el.scrollHeight];
}"""


def _render(output: dict[str, Any]) -> str:
    return (
        f"{_browser.render_page(output)}\nScrolled to y={output['scroll_y']:g} of "
        f"{output['scroll_height']:g}."
    )


@tool(
    "browser_scroll",
    args=BrowserScrollArgs,
    description=DESCRIPTION,
    toolset="browser",
    render=_render,
    timeout=_browser.TOOL_DEADLINE,
    output=BrowserScrollOutput,
)
async def browser_scroll(args: BrowserScrollArgs, ctx: ToolContext) -> dict[str, Any]:
    async def scroll(browser: BrowserSession) -> dict[str, Any]:
        y, height = await browser.page.evaluate(_SCROLL, [args.direction, args.amount])
        return {**await _browser.page_info(browser), "scroll_y": y, "scroll_height": height}

    return await _browser.call(ctx, scroll, args.timeout)
