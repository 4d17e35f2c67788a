"""browser_get_state: where the page is, and what went wrong there (console, requests)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, tool
from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

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
    downloads: list[dict[str, Any]] = Field(
        description=f"The newest {SHOWN} downloads: url, suggested (the server's name), status "
        "(downloading, saved, failed), path (workspace-relative) and size once saved, reason "
        "when failed."
    )


DESCRIPTION = f"""The browser page's URL, title and loading state, with the newest {SHOWN}
console messages, failed or refused requests and downloads: for debugging a page.

Failed requests carry the reason (network error, private address refused, a host the
network:outbound rules stopped); downloads are saved into the workspace's downloads
folder, with path and size."""


def _render(output: dict[str, Any]) -> str:
    lines = [_browser.render_page(output) + (" (loading)" if output["loading"] else "")]
    lines += [f"console {e['type']}: {e['text']}" for e in output["console"]]
    lines += [f"failed {f['method']} {f['url']}: {f['reason']}" for f in output["failed_requests"]]
    for d in output["downloads"]:
        done = f"{d['path']} ({d['size']} bytes)" if d["status"] == "saved" else d["reason"]
        lines.append(f"download {d['status']} {d['url']}: {done or d['suggested']}")
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
            "downloads": [asdict(d) for d in list(browser.downloaded)[-SHOWN:]],
        }

    return await _browser.call(ctx, state)
