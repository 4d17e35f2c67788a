"""browser_screenshot: what the page looks like, as an image result or a PNG file."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput
from local_tools.core.tool import Hints, Output, omitted, tool
from local_tools.tools import _browser
from local_tools.tools._common import file_subjects, shown_path
from local_tools.tools._image import image_size

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["BrowserScreenshotArgs", "BrowserScreenshotOutput", "browser_screenshot"]

MAX_IMAGE_BYTES = 10 * 1024 * 1024


class BrowserScreenshotArgs(_browser.ElementArgs):
    path: str | None = Field(
        None,
        description="Save the PNG to this workspace path instead.",
        max_length=4096,
    )
    full_page: bool = Field(False, description="The whole scrollable page, not only the view.")


class BrowserScreenshotOutput(Output):
    url: str = Field(description="The page's URL.")
    mime_type: str = Field(description="image/png.")
    size: int = Field(description="Size of the PNG in bytes.")
    width: int = omitted(description="Width in pixels.")
    height: int = omitted(description="Height in pixels.")
    path: str = omitted(description="Where the PNG was saved, when a path was given.")
    image_base64: str = omitted(description="The PNG in base64 (MCP: image content).")
    notes: list[str] = omitted(description="What happened besides the call.")


DESCRIPTION = """A PNG screenshot of the page: the view, the whole page or one element (`ref` or
`selector`), returned as an image or saved to `path`.

Saving asks like a file write. browser_snapshot is cheaper for content; a screenshot
shows layout and looks."""


def _render(output: dict[str, Any]) -> str:
    size = f"{output.get('width')}x{output.get('height')}, {output['size']} bytes"
    if "path" in output:
        return f"Saved a screenshot of {output['url']} to {output['path']} ({size})."
    return (
        f"[Screenshot of {output['url']}: image/png, {size}. The image is attached to this "
        "result as base64 (image_base64).]"
    )


@tool(
    "browser_screenshot",
    args=BrowserScreenshotArgs,
    description=DESCRIPTION,
    hints=Hints(read_only=True),
    toolset="browser",
    render=_render,
    timeout=_browser.TOOL_DEADLINE,
    output=BrowserScreenshotOutput,
    changes=lambda args, ctx: None if args.path is None else (args.path,),
)
async def browser_screenshot(args: BrowserScreenshotArgs, ctx: ToolContext) -> dict[str, Any]:
    if args.path is not None:
        shown = shown_path(ctx, args.path)
        await ctx.authorize("write:file", file_subjects(ctx, args.path), summary=f"save {shown}")
        ctx.jail.resolve(args.path, write=True)  # refused outside the roots before any work

    async def shoot(browser: BrowserSession) -> dict[str, Any]:
        if args.ref or args.selector:
            element = await browser.element(args.selector, args.ref)
            data = await element.screenshot(type="png")
        else:
            data = await browser.page.screenshot(type="png", full_page=args.full_page)
        return {"url": browser.page.url, "data": data}

    shot = await _browser.call(ctx, shoot, args.timeout)
    data: bytes = shot.pop("data")
    if len(data) > MAX_IMAGE_BYTES:
        raise InvalidInput(
            f"The screenshot is {len(data)} bytes, over {MAX_IMAGE_BYTES // 2**20} MB: "
            "shoot the visible part or one element, or save it to a path."
        )
    out: dict[str, Any] = {**shot, "mime_type": "image/png", "size": len(data)}
    dimensions = image_size(data, "image/png")
    if dimensions is not None:
        out["width"], out["height"] = dimensions
    if args.path is not None:
        ctx.jail.write_atomic(args.path, data)
        out["path"] = ctx.jail.display(ctx.jail.resolve(args.path))
    else:
        out["image_base64"] = base64.b64encode(data).decode("ascii")
    return out
