"""browser_get_state: where the page is, and what went wrong there (console, requests)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pydantic import Field

from local_tools.browser import BrowserSession
from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, tool
from local_tools.tools import _browser

__all__ = ["BrowserGetStateOutput", "browser_get_state"]

SHOWN = 50  # the newest console messages and failed requests returned


class BrowserGetStateOutput(_browser.PageOutput):
    loading: bool = Field(description="True while the document is still loading.")
    console: list[dict[str, str]] = Field(
        description=f"The newest {SHOWN} console messages and page errors: type, text, url."
    )
    failed_requests: list[dict[str, str]] = Field(
        description=f"The newest {SHOWN} requests that failed or were refused: url, method, reason."
    )


DESCRIPTION = f"""The browser page's URL, title and loading state, with the newest {SHOWN}
console messages (errors included) and failed requests (with the reason: a network
error, or the address guard's refusal of a private address). Use it to debug a page
that does not behave."""


def _render(output: dict[str, Any]) -> str:
    lines = [_browser.render_page(output) + (" (loading)" if output["loading"] else "")]
    lines += [f"console {e['type']}: {e['text']}" for e in output["console"]]
    lines += [f"failed {f['method']} {f['url']}: {f['reason']}" for f in output["failed_requests"]]
    return "\n".join(lines)


@tool(
    "browser_get_state",
    description=DESCRIPTION,
    hints=Hints(read_only=True),
    toolset="browser",
    render=_render,
    timeout=_browser.TOOL_DEADLINE,
    output=BrowserGetStateOutput,
)
async def browser_get_state(args: Any, ctx: ToolContext) -> dict[str, Any]:
    async def state(browser: BrowserSession) -> dict[str, Any]:
        ready = await browser.page.evaluate("document.readyState")
        return {
            **await _browser.page_info(browser),
            "loading": ready == "loading",
            "console": [asdict(e) for e in list(browser.console)[-SHOWN:]],
            "failed_requests": [asdict(f) for f in list(browser.failed)[-SHOWN:]],
        }

    return await _browser.call(ctx, state)
