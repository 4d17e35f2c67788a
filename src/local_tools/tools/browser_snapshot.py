"""browser_snapshot: the page as an accessibility tree, each element with a ref."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, omitted, tool
from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["BrowserSnapshotArgs", "BrowserSnapshotOutput", "browser_snapshot"]

DEFAULT_LENGTH = 20_000
MAX_LENGTH = 100_000


class BrowserSnapshotArgs(_browser.TimeoutArgs):
    max_length: int = Field(
        DEFAULT_LENGTH,
        ge=100,
        le=MAX_LENGTH,
        description="Most characters to return.",
    )


class BrowserSnapshotOutput(_browser.PageOutput):
    snapshot: str = Field(description="The accessibility tree, one element a line, with refs.")
    truncated: bool = omitted(description="True when the snapshot was cut at max_length.")


DESCRIPTION = """The current page as an accessibility tree: lines such as
`- button "Save" [ref=e12]`.

Pass a ref to browser_click, browser_type or browser_hover to act on that element.
Refs belong to this snapshot: take a new one after the page changes. Prefer this to
browser_get_dom or a screenshot to understand a page."""


def _render(output: dict[str, Any]) -> str:
    text = _browser.render_page(output) + "\n\n" + output["snapshot"]
    if output.get("truncated"):
        text += "\n(Cut at max_length: pass a larger max_length to see more.)"
    return text


@tool(
    "browser_snapshot",
    args=BrowserSnapshotArgs,
    description=DESCRIPTION,
    hints=Hints(read_only=True),
    toolset="browser",
    render=_render,
    timeout=_browser.TOOL_DEADLINE,
    output=BrowserSnapshotOutput,
)
async def browser_snapshot(args: BrowserSnapshotArgs, ctx: ToolContext) -> dict[str, Any]:
    async def snapshot(browser: BrowserSession) -> dict[str, Any]:
        tree = await browser.page.aria_snapshot(mode="ai")
        out = {**await _browser.page_info(browser), "snapshot": tree[: args.max_length]}
        if len(tree) > args.max_length:
            out["truncated"] = True
        return out

    return await _browser.call(ctx, snapshot, args.timeout)
