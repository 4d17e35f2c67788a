"""browser_launch: start (or restart) the browser with a window size and headless mode."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, Output, omitted, tool
from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["BrowserLaunchArgs", "BrowserLaunchOutput", "browser_launch"]


class Viewport(BaseModel):
    width: int = Field(1280, ge=200, le=7680, description="Pixels.")
    height: int = Field(800, ge=200, le=4320, description="Pixels.")


class BrowserLaunchArgs(_browser.TimeoutArgs):
    headless: bool = Field(True, description="False: a visible window (needs a display).")
    viewport: Viewport | None = Field(
        None, description="The page's size in CSS pixels (default 1280x800)."
    )


class BrowserLaunchOutput(Output):
    executable: str = Field(description="The Chromium being driven.")
    version: str = Field(description="Its version.")
    headless: bool = Field(description="Whether it has no window.")
    viewport: dict[str, int] = Field(description="width and height in CSS pixels.")
    url: str = Field(description="The current page (about:blank after a launch).")
    notes: list[str] = omitted(description="What happened besides the call.")


DESCRIPTION = """Start the browser (Chromium) with these settings, or restart it with new ones.

Optional: any browser tool starts it with the defaults when it is not running.
Other settings than the running browser's close it and its pages first."""


def _render(output: dict[str, Any]) -> str:
    size = output["viewport"]
    mode = "headless" if output["headless"] else "with a window"
    return (
        f"Chromium {output['version']} ({output['executable']}) running {mode}, "
        f"{size['width']}x{size['height']}, at {output['url']}."
    )


@tool(
    "browser_launch",
    args=BrowserLaunchArgs,
    description=DESCRIPTION,
    hints=Hints(idempotent=True),
    toolset="browser",
    render=_render,
    timeout=_browser.TOOL_DEADLINE,
    output=BrowserLaunchOutput,
)
async def browser_launch(args: BrowserLaunchArgs, ctx: ToolContext) -> dict[str, Any]:
    size = args.viewport or Viewport()
    wanted = (size.width, size.height)

    async def launch(browser: BrowserSession) -> dict[str, Any]:
        if (browser.headless, browser.viewport) != (args.headless, wanted):
            await browser.relaunch(args.headless, wanted)
        return {
            "executable": browser.executable,
            "version": browser.version,
            "headless": browser.headless,
            "viewport": {"width": wanted[0], "height": wanted[1]},
            "url": browser.page.url,
        }

    return await _browser.call(ctx, launch, args.timeout)
