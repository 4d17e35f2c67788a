"""browser_press_key: press a key (with modifiers) in the page."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, tool
from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["BrowserPressKeyArgs", "browser_press_key"]


class BrowserPressKeyArgs(_browser.TimeoutArgs):
    key: str = Field(
        description="A key name: Enter, Tab, Escape, ArrowDown, Backspace, a, F5, ...",
        min_length=1,
        max_length=32,
    )
    modifiers: list[Literal["Shift", "Control", "Alt", "Meta"]] = Field(
        default_factory=list, description="Keys held down meanwhile."
    )


DESCRIPTION = """Press a key where the page's focus is (after browser_click or browser_type): Enter,
Tab, Escape, arrows, with `modifiers` held (key 'a' with ['Control'] selects all)."""


@tool(
    "browser_press_key",
    args=BrowserPressKeyArgs,
    description=DESCRIPTION,
    hints=Hints(open_world=True),
    toolset="browser",
    render=_browser.render_page,
    timeout=_browser.TOOL_DEADLINE,
    output=_browser.PageOutput,
)
async def browser_press_key(args: BrowserPressKeyArgs, ctx: ToolContext) -> dict[str, Any]:
    combo = "+".join([*dict.fromkeys(args.modifiers), args.key])

    async def press(browser: BrowserSession) -> dict[str, Any]:
        await browser.page.keyboard.press(combo)
        return await _browser.page_info(browser)

    return await _browser.call(ctx, press, args.timeout)
