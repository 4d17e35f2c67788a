"""browser_navigate: load a URL in the browser's page."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import PermissionDenied
from local_tools.core.tool import Hints, tool
from local_tools.tools import _browser, _web
from local_tools.web.url_arg import WebUrl

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["BrowserNavigateArgs", "BrowserNavigateOutput", "browser_navigate"]

_ATTEMPTS = 3  # goto tries when another navigation interrupts it


class BrowserNavigateArgs(_browser.TimeoutArgs):
    url: WebUrl = Field(description="The http:// or https:// URL to load.", max_length=8192)
    wait_until: Literal["load", "domcontentloaded", "networkidle", "commit"] = Field(
        "load", description="When the navigation counts as done."
    )


class BrowserNavigateOutput(_browser.PageOutput):
    status: int | None = Field(description="The HTTP status of the page (null: none, e.g. #x).")


DESCRIPTION = """Load a URL in the browser (a real Chromium that runs the page's scripts).

For pages a plain fetch cannot render, or to check a web app; then read the page with
browser_snapshot. The host is asked for like web_fetch's; where the page goes by
itself follows the same rules: a host the rules ask about is stopped, and the notes
say to call browser_navigate with it. Local network addresses are refused unless
[network] allow_private names them. A URL that is a file downloads it into the
workspace's downloads folder. A page not loaded within `timeout` is TIMEOUT."""


def _render(output: dict[str, Any]) -> str:
    return f"[{output['status']}] " + _browser.render_page(output)


@tool(
    "browser_navigate",
    args=BrowserNavigateArgs,
    description=DESCRIPTION,
    permission="network:outbound",
    hints=Hints(open_world=True),
    toolset="browser",
    subjects=_web.url_subject,
    render=_render,
    timeout=_browser.TOOL_DEADLINE,
    output=BrowserNavigateOutput,
)
async def browser_navigate(args: BrowserNavigateArgs, ctx: ToolContext) -> dict[str, Any]:
    from local_tools.security import net  # httpx loads with the first call

    url = str(net.parse_url(args.url))

    async def navigate(browser: BrowserSession) -> dict[str, Any]:
        page = browser.page
        browser.approve(url)  # the runner authorized its host: the page may go there too
        response = None
        for attempt in range(_ATTEMPTS):
            try:
                response = await page.goto(url, wait_until=args.wait_until)
                break
            except Exception as exc:
                if browser.navigation_refusal is not None:  # a redirect the rules stop
                    break
                if "Download is starting" in str(exc):
                    break  # the URL is a file: its download is reported in the notes
                if "ERR_BLOCKED_BY_CLIENT" in str(exc):
                    # Chromium commits an error page after a refused load: let it settle,
                    # so that it does not cut the next navigation short.
                    with contextlib.suppress(Exception):
                        await page.wait_for_load_state("load", timeout=2000)
                    raise
                # A navigation still settling (an error page, a script redirect) can cut
                # this one short: again, after it.
                if "interrupted by another navigation" not in str(exc) or attempt + 1 == _ATTEMPTS:
                    raise
                with contextlib.suppress(Exception):
                    await page.wait_for_load_state("load", timeout=2000)
        if browser.navigation_refusal is not None:
            await browser.settle()
            raise PermissionDenied(browser.navigation_refusal)
        status = response.status if response is not None else None
        return {**await _browser.page_info(browser), "status": status}

    return await _browser.call(ctx, navigate, args.timeout)
