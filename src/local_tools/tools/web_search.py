"""web_search: results from the search provider configured in `[network.search]`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.tools import _web
from local_tools.web import search as engine

__all__ = ["WebSearchArgs", "WebSearchOutput", "web_search"]

DEFAULT_RESULTS = 8
MAX_RESULTS = 20
TIMEOUT = 30.0


class WebSearchArgs(Args):
    query: str = Field(min_length=1, max_length=400, description="What to search for.")
    num_results: int = Field(DEFAULT_RESULTS, ge=1, le=MAX_RESULTS, description="How many results.")


class SearchHit(BaseModel):
    title: str = Field(description="The page's title.")
    url: str = Field(description="The page's URL; read it with web_fetch.")
    snippet: str = Field(description="A short excerpt, as the provider gives it.")


class WebSearchOutput(Output):
    results: list[SearchHit] = Field(description="The results, best first.")
    provider: str = Field(description="The search provider that answered.")
    query: str = Field(description="The query searched for.")


DESCRIPTION = """Search the web and return results, best first: title, URL and a snippet each.

Uses the provider the user configured (SearXNG, Brave, Tavily or Exa). Read a result
with web_fetch. When no provider is configured the error says what the user must
set; do not retry then."""


def _render(output: dict[str, Any]) -> str:
    results = output["results"]
    if not results:
        return f"No results for {output['query']!r} ({output['provider']})."
    lines = [f"{len(results)} results for {output['query']!r} ({output['provider']}):"]
    for i, r in enumerate(results, 1):
        lines.append(f"\n{i}. {r['title']}\n   {r['url']}")
        if r["snippet"]:
            lines.append(f"   {r['snippet']}")
    return "\n".join(lines)


def _settings(ctx: ToolContext) -> tuple[engine.Provider, str, str]:
    s = ctx.config.network.search
    return engine.resolve_provider(s.provider, s.url, s.api_key_env)


def _subjects(args: WebSearchArgs, ctx: ToolContext) -> Sequence[str]:
    """The provider's host. Unconfigured, the call fails here, before anyone is asked to
    approve a search that cannot run, with the setting that is missing."""
    from local_tools.security import net  # httpx loads with the first call

    _provider, endpoint, _key = _settings(ctx)
    return [net.url_host(endpoint)]


@tool(
    "web_search",
    args=WebSearchArgs,
    description=DESCRIPTION,
    permission="network:outbound",
    aliases=("websearch",),
    hints=Hints(read_only=True, open_world=True),
    toolset="web",
    subjects=_subjects,
    render=_render,
    timeout=TIMEOUT + 10,
    output=WebSearchOutput,
)
async def web_search(args: WebSearchArgs, ctx: ToolContext) -> dict[str, Any]:
    from local_tools.security import net  # httpx loads with the first call

    provider, endpoint, key = _settings(ctx)
    # The endpoint is the user's own setting (a self-hosted SearXNG is often on the LAN),
    # so its host is reachable even when private; the query cannot change where it goes.
    trusted = net.url_host(endpoint)

    async def send(
        method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, str, Mapping[str, str], bytes]:
        response = await _web.fetch(
            ctx,
            method,
            url,
            timeout=TIMEOUT,
            max_bytes=2 * 1024 * 1024,
            headers=headers,
            content=body,
            extra_allowed=[trusted],
        )
        return response.status_code, response.reason, response.headers, response.content

    results = await engine.search(provider, endpoint, key, args.query, args.num_results, send)
    return {
        "results": [{"title": r.title, "url": r.url, "snippet": r.snippet} for r in results],
        "provider": provider.name,
        "query": args.query,
    }
