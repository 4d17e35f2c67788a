"""screenshot: the user's screen (one monitor or all) as an image result."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, Output, omitted, tool

__all__ = ["ScreenshotArgs", "ScreenshotOutput", "screenshot"]


class ScreenshotArgs(Args):
    monitor: int | None = Field(
        None, ge=0, le=16, description="1, 2, ...: that monitor; none or 0: all of them."
    )


class ScreenshotOutput(Output):
    mime_type: str = Field(description="image/png.")
    size: int = Field(description="Size of the PNG in bytes.")
    width: int = Field(description="Width in pixels.")
    height: int = Field(description="Height in pixels.")
    monitor: int = Field(description="The monitor shot (0: all together).")
    monitors: int = Field(description="How many monitors the display has.")
    image_base64: str = omitted(description="The PNG in base64 (MCP: image content).")


DESCRIPTION = """A PNG screenshot of the user's screen (all monitors, or `monitor` 1, 2, ...).

It asks first (system:screenshot). Fails where there is no display. For a web page
use browser_screenshot."""


def _render(output: dict[str, Any]) -> str:
    return (
        f"[Screenshot of monitor {output['monitor']} of {output['monitors']}: image/png, "
        f"{output['width']}x{output['height']}, {output['size']} bytes. The image is "
        "attached to this result as base64 (image_base64).]"
    )


def _subject(args: ScreenshotArgs, ctx: ToolContext) -> Sequence[str]:
    return [f"monitor {args.monitor or 0}"]


@tool(
    "screenshot",
    args=ScreenshotArgs,
    description=DESCRIPTION,
    permission="system:screenshot",
    hints=Hints(read_only=True),
    toolset="system",
    subjects=_subject,
    render=_render,
    output=ScreenshotOutput,
)
def screenshot(args: ScreenshotArgs, ctx: ToolContext) -> dict[str, Any]:
    from local_tools import desktop  # loads with the first call, not with every start

    shot = desktop.capture(args.monitor)
    return {
        "mime_type": "image/png",
        "size": len(shot.png),
        "width": shot.width,
        "height": shot.height,
        "monitor": shot.monitor,
        "monitors": shot.monitors,
        "image_base64": base64.b64encode(shot.png).decode("ascii"),
    }
