"""What the browser tools share: the toolbox's browser session, the element a call names,
the common argument and output fields. The browser itself is `local_tools.browser`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import Conflict, PermissionDenied
from local_tools.core.tool import Args, Hints, Output, Tool, omitted, tool
from local_tools.tools import _web

if TYPE_CHECKING:  # the browser engine loads with the first call, not with every start
    from local_tools.browser import BrowserSession
    from local_tools.browser.session import Gate

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_TIMEOUT",
    "RESOURCE_KEY",
    "TOOL_DEADLINE",
    "ElementArgs",
    "PageOutput",
    "TimeoutArgs",
    "call",
    "gate",
    "page_info",
    "page_tool",
    "render_page",
    "session",
]

DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 120.0
# The runner's deadline for a browser tool: past the longest timeout plus a cold start.
TOOL_DEADLINE = MAX_TIMEOUT + 40
RESOURCE_KEY = "browser"

A = TypeVar("A", bound="TimeoutArgs")


class TimeoutArgs(Args):
    timeout: float = Field(
        DEFAULT_TIMEOUT,
        gt=0,
        le=MAX_TIMEOUT,
        description="Seconds this call may take.",
    )


class ElementArgs(TimeoutArgs):
    ref: str | None = Field(
        None, description="An element ref from browser_snapshot, e.g. 'e12'.", max_length=64
    )
    selector: str | None = Field(
        None,
        description="A CSS (or Playwright) selector; the first match is used. Prefer ref.",
        max_length=2000,
    )


class PageOutput(Output):
    url: str = Field(description="The current page's URL.")
    title: str = Field(description="The current page's title.")
    notes: list[str] = omitted(
        description="What happened besides the call (e.g. the browser was restarted)."
    )


def session(ctx: ToolContext) -> BrowserSession:
    """The toolbox's browser (started on its first call, closed with the toolbox)."""
    from local_tools.browser import BrowserSession, find_executable
    from local_tools.browser.downloads import Downloads

    settings = ctx.config.browser

    def start() -> BrowserSession:
        executable = find_executable(settings.executable)
        downloads = Downloads(ctx.jail, settings.downloads, settings.max_download_mb * 2**20)
        return BrowserSession(
            executable, _web.guard(ctx), headless=settings.headless, downloads=downloads
        )

    return ctx.resource(RESOURCE_KEY, start)


def gate(ctx: ToolContext) -> Gate:
    """The policy's `network:outbound` decision for the pages' own top-level navigations
    (a click, a form, a script, a redirect): the runner's rules for this call's user,
    decided without asking, since nobody can be asked from inside a page load."""
    from local_tools.browser.session import Gate

    def decide(host: str, url: str) -> str | None:
        try:
            asks = ctx.policy.check(ctx.user_id, "network:outbound", [host], tool=ctx.tool)
        except PermissionDenied as exc:
            return f"The page's navigation to {url} was stopped: {exc.message}"
        if not asks:
            return None
        return (
            f"The page tried to go to {url}; the rules ask before the browser goes to "
            f"{host} (network:outbound) and a page cannot ask, so the navigation was "
            "stopped. To go there, call browser_navigate with that URL: it asks the user."
        )

    def may_write(path: str) -> str | None:
        try:
            asks = ctx.policy.check(ctx.user_id, "write:file", [path], tool="browser download")
        except PermissionDenied as exc:
            return exc.message
        if asks:
            return (
                f"the rules ask before writing {path} (write:file) and a download cannot "
                "ask, so it was not saved"
            )
        return None

    return Gate(ctx.user_id, decide, may_write)


def current_host(ctx: ToolContext) -> str:
    """The host of the page a script would run in (the browser's current page)."""
    from local_tools.security import net  # httpx loads with the first call

    browser = ctx.resources.peek(RESOURCE_KEY) if ctx.resources else None
    page = getattr(browser, "page", None)
    return net.url_host(page.url) if page is not None else "about:blank"


async def authorize_script(ctx: ToolContext, what: str) -> str:
    """`browser:evaluate` for the current page's host, asked here rather than by the
    runner so the tool knows which host was approved; returns it."""
    host = current_host(ctx)
    await ctx.authorize("browser:evaluate", [host], summary=what)
    return host


def require_host(browser: BrowserSession, host: str) -> None:
    """Under the call's turn: the page is still on the host the script was approved for."""
    from local_tools.security import net  # httpx loads with the first call

    now = net.url_host(browser.page.url)
    if now != host:
        raise Conflict(
            f"The page moved from {host} to {now} while the script waited to run; nothing "
            "ran. Call again (it asks for the new page's host)."
        )


async def call(
    ctx: ToolContext,
    op: Callable[[BrowserSession], Awaitable[dict[str, Any]]],
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[str, Any]:
    return await session(ctx).run(op, timeout, gate(ctx))


async def page_info(browser: BrowserSession) -> dict[str, Any]:
    page = browser.page
    return {"url": page.url, "title": await page.title()}


@overload
def page_tool(
    name: str, *, description: str
) -> Callable[[Callable[[BrowserSession, TimeoutArgs], Awaitable[None]]], Tool]: ...
@overload
def page_tool(
    name: str, *, description: str, args: type[A]
) -> Callable[[Callable[[BrowserSession, A], Awaitable[None]]], Tool]: ...
def page_tool(
    name: str, *, description: str, args: type[TimeoutArgs] = TimeoutArgs
) -> Callable[[Callable[[BrowserSession, Any], Awaitable[None]]], Tool]:
    """Declare a browser tool that acts on the page, then answers with its URL and title.

    The decorated ``action(browser, args)`` does the acting; the tool runs it in the
    toolbox's browser within ``args.timeout`` and renders the page it leaves.
    """

    # The overloads type `action` by `args`; here it takes whichever subclass was given.
    def decorate(action: Callable[[BrowserSession, Any], Awaitable[None]]) -> Tool:
        async def run(call_args: TimeoutArgs, ctx: ToolContext) -> dict[str, Any]:
            async def op(browser: BrowserSession) -> dict[str, Any]:
                await action(browser, call_args)
                return await page_info(browser)

            return await call(ctx, op, call_args.timeout)

        return tool(
            name,
            args=args,
            description=description,
            hints=Hints(open_world=True),
            toolset="browser",
            render=render_page,
            timeout=TOOL_DEADLINE,
            output=PageOutput,
        )(run)

    return decorate


def render_page(output: dict[str, Any]) -> str:
    text = f"{output.get('title') or '(no title)'} — {output['url']}"
    for note in output.get("notes", []):
        text += f"\n(Note: {note})"
    return text
