"""browser_wait_for: wait until an element shows, or a JavaScript condition holds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from local_tools.core.context import ToolContext
from local_tools.core.errors import ToolTimeout
from local_tools.core.tool import Hints, tool
from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["BrowserWaitForArgs", "browser_wait_for"]


class BrowserWaitForArgs(_browser.ElementArgs):
    condition: str | None = Field(
        None,
        description="A JavaScript expression to wait for, e.g. `document.title === 'Done'`.",
        max_length=10_000,
    )
    state: Literal["visible", "attached", "hidden", "detached"] = Field(
        "visible", description="For ref/selector: the state to wait for."
    )
    timeout: float = Field(10.0, gt=0, le=_browser.MAX_TIMEOUT, description="Seconds to wait.")

    @model_validator(mode="after")
    def _one_target(self) -> BrowserWaitForArgs:
        if sum((bool(self.ref), bool(self.selector), bool(self.condition))) != 1:
            raise ValueError("give exactly one of ref, selector or condition")
        return self


DESCRIPTION = """Wait until an element (`ref` or `selector`) reaches `state`, or a JavaScript
`condition` is true; past `timeout` it is TIMEOUT.

Use it after an action that changes the page later. A condition needs the
browser:evaluate permission, like browser_evaluate."""


@tool(
    "browser_wait_for",
    args=BrowserWaitForArgs,
    description=DESCRIPTION,
    hints=Hints(open_world=True),  # a condition is script: it can change the page
    toolset="browser",
    render=_browser.render_page,
    timeout=_browser.TOOL_DEADLINE,
    output=_browser.PageOutput,
)
async def browser_wait_for(args: BrowserWaitForArgs, ctx: ToolContext) -> dict[str, Any]:
    ms = args.timeout * 1000
    # A condition is script run in the page, as browser_evaluate's is: same permission.
    host = await _browser.authorize_script(ctx, args.condition[:200]) if args.condition else None

    async def wait(browser: BrowserSession) -> dict[str, Any]:
        if host is not None:
            _browser.require_host(browser, host)
        try:
            if args.condition:
                await browser.page.wait_for_function(args.condition, timeout=ms)
            else:
                target = browser.locator(args.selector, args.ref)
                await target.wait_for(state=args.state, timeout=ms)
        except Exception as exc:
            if "Timeout" not in str(exc):
                raise
            what = args.condition or args.ref or args.selector
            raise ToolTimeout(
                f"{what!r} did not become true/{args.state} within {args.timeout:g} s. "
                "Check the page with browser_snapshot or browser_get_state."
            ) from None
        return await _browser.page_info(browser)

    # A little longer than the wait, so the wait's own timeout is the one reported.
    return await _browser.call(ctx, wait, args.timeout + 5)
