"""What the web tools share: the guarded client set up from `[network]` (never reaching
local-tools' own servers), the permission check for every host a call reaches, the host
as the permission subject."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from local_tools.core.context import ToolContext
from local_tools.core.servers import reserved_ports

if TYPE_CHECKING:  # httpx loads with the first call, not with every start
    from local_tools.security import net

__all__ = ["MAX_TIMEOUT", "TOOL_DEADLINE", "fetch", "guard", "retry_after", "url_subject"]

MAX_TIMEOUT = 120.0
# The runner's deadline for a web tool: past the longest timeout a call may ask for.
TOOL_DEADLINE = MAX_TIMEOUT + 10


def url_subject(args: Any, ctx: ToolContext) -> Sequence[str]:
    """`network:outbound` rules match the host the URL reaches."""
    from local_tools.security import net  # httpx loads with the first call

    return [net.url_host(args.url)]


def guard(ctx: ToolContext, *extra_allowed: str) -> net.Guard:
    """The address guard from `[network] allow_private`; local-tools' own servers stay
    out of reach whatever it allows (`reserved_ports`, read at each connection)."""
    from local_tools.security import net  # httpx loads with the first call

    state_dir = ctx.state_dir
    return net.Guard(
        (*ctx.config.network.allow_private, *extra_allowed),
        local_servers=lambda: reserved_ports(state_dir),
    )


async def fetch(
    ctx: ToolContext,
    method: str,
    url: str,
    *,
    timeout: float,
    max_bytes: int | None = None,  # None: net.DEFAULT_MAX_BYTES
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
    extra_allowed: Sequence[str] = (),
) -> net.WebResponse:
    """One exchange through the guard; a redirect to a new host asks `network:outbound`
    for that host first, as the call's own host was."""
    from local_tools.security import net  # httpx loads with the first call

    settings = ctx.config.network

    async def check_host(host: str) -> None:
        await ctx.authorize("network:outbound", [host], summary=f"{ctx.tool} redirected to {host}")

    return await net.request(
        method,
        url,
        guard=guard(ctx, *extra_allowed),
        headers=headers,
        content=content,
        timeout=timeout,
        max_bytes=net.DEFAULT_MAX_BYTES if max_bytes is None else max_bytes,
        user_agent=settings.user_agent or None,
        proxy=settings.proxy or None,
        check_host=check_host,
        checked_hosts=[net.url_host(url)],
    )


def retry_after(response: net.WebResponse) -> str | None:
    value = response.headers.get("retry-after")
    return value.strip() if value else None
