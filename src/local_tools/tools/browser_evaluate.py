"""browser_evaluate: run JavaScript in the page and return its (JSON) result."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput
from local_tools.core.tool import Hints, tool
from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["BrowserEvaluateArgs", "BrowserEvaluateOutput", "browser_evaluate"]

MAX_RESULT_CHARS = 50_000


class BrowserEvaluateArgs(_browser.TimeoutArgs):
    script: str = Field(
        description="A JavaScript expression, or a function such as `() => document.title`.",
        min_length=1,
        max_length=100_000,
    )


class BrowserEvaluateOutput(_browser.PageOutput):
    result: str = Field(description="The value, as JSON (undefined becomes null).")


DESCRIPTION = """Run JavaScript in the page and return its value as JSON (a Promise is awaited).

It runs with the page's rights (cookies, session), so it asks for browser:evaluate
per host. To read the page prefer browser_snapshot or browser_get_dom."""


def _render(output: dict[str, Any]) -> str:
    return f"{_browser.render_page(output)}\n\n{output['result']}"


@tool(
    "browser_evaluate",
    args=BrowserEvaluateArgs,
    description=DESCRIPTION,
    # browser:evaluate is asked in the tool, for the host it then pins (see below).
    hints=Hints(destructive=True, open_world=True),
    toolset="browser",
    render=_render,
    timeout=_browser.TOOL_DEADLINE,
    output=BrowserEvaluateOutput,
)
async def browser_evaluate(args: BrowserEvaluateArgs, ctx: ToolContext) -> dict[str, Any]:
    host = await _browser.authorize_script(ctx, args.script[:200])

    async def evaluate(browser: BrowserSession) -> dict[str, Any]:
        _browser.require_host(browser, host)  # a page may have moved on meanwhile
        try:
            value = await browser.page.evaluate(args.script)
        except Exception as exc:
            if "TimeoutError" in type(exc).__name__ or "closed" in str(exc):
                raise
            raise InvalidInput(f"The script failed: {str(exc).splitlines()[0]}") from None
        text = json.dumps(value, ensure_ascii=False, default=str)
        if len(text) > MAX_RESULT_CHARS:
            raise InvalidInput(
                f"The result is {len(text)} characters of JSON, over {MAX_RESULT_CHARS}: "
                "return less (a slice, a count, selected fields)."
            )
        return {**await _browser.page_info(browser), "result": text}

    return await _browser.call(ctx, evaluate, args.timeout)
