"""Web search providers behind one interface: SearXNG, Brave, Tavily, Exa.

Each adapter knows its endpoint, how the API key is sent, and how its documented
answer maps to ``SearchResult``s. The HTTP exchange itself is the caller's ``send``
(the guarded client), so an adapter is plain request building and answer parsing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from local_tools.core.errors import ExecutionError, NetworkError, PermissionDenied

__all__ = ["PROVIDERS", "Provider", "SearchResult", "Send", "resolve_provider", "search"]


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str


# (method, url, headers, json body or None) -> (status, reason, headers, body bytes)
Send = Callable[
    [str, str, dict[str, str], "bytes | None"],
    Awaitable[tuple[int, str, Mapping[str, str], bytes]],
]


@dataclass(frozen=True)
class Provider:
    name: str
    title: str
    endpoint: str  # "" when the user must give one (SearXNG)
    key_env: str  # "" when no key is needed
    build: Callable[[str, str, int, str], tuple[str, str, dict[str, str], Any]]
    parse: Callable[[Any], list[SearchResult]]


def _searxng(endpoint: str, query: str, n: int, key: str) -> tuple[str, str, dict[str, str], Any]:
    base = endpoint.rstrip("/")
    url = base if base.endswith("/search") else base + "/search"
    headers = {"Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return "GET", f"{url}?{urlencode({'q': query, 'format': 'json'})}", headers, None


def _brave(endpoint: str, query: str, n: int, key: str) -> tuple[str, str, dict[str, str], Any]:
    url = f"{endpoint}?{urlencode({'q': query, 'count': min(n, 20)})}"
    return "GET", url, {"Accept": "application/json", "X-Subscription-Token": key}, None


def _tavily(endpoint: str, query: str, n: int, key: str) -> tuple[str, str, dict[str, str], Any]:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    return "POST", endpoint, headers, {"query": query, "max_results": min(n, 20)}


def _exa(endpoint: str, query: str, n: int, key: str) -> tuple[str, str, dict[str, str], Any]:
    body = {"query": query, "numResults": n, "contents": {"highlights": True}}
    return "POST", endpoint, {"x-api-key": key, "Content-Type": "application/json"}, body


def _items(data: Any, *path: str) -> list[Any]:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, list) else []


def _result(item: Any, *snippet_keys: str) -> SearchResult | None:
    if not isinstance(item, dict) or not isinstance(item.get("url"), str):
        return None
    snippet = ""
    for key in snippet_keys:
        value = item.get(key)
        if isinstance(value, list):
            value = " … ".join(str(v) for v in value if v)
        if value:
            snippet = str(value)
            break
    return SearchResult(str(item.get("title") or item["url"]), item["url"], snippet.strip())


def _parse(path: tuple[str, ...], *snippet_keys: str) -> Callable[[Any], list[SearchResult]]:
    def parse(data: Any) -> list[SearchResult]:
        found = (_result(item, *snippet_keys) for item in _items(data, *path))
        return [r for r in found if r is not None]

    return parse


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider("searxng", "SearXNG", "", "", _searxng, _parse(("results",), "content")),
        Provider(
            "brave",
            "Brave Search",
            "https://api.search.brave.com/res/v1/web/search",
            "BRAVE_API_KEY",
            _brave,
            _parse(("web", "results"), "description", "extra_snippets"),
        ),
        Provider(
            "tavily",
            "Tavily",
            "https://api.tavily.com/search",
            "TAVILY_API_KEY",
            _tavily,
            _parse(("results",), "content"),
        ),
        Provider(
            "exa",
            "Exa",
            "https://api.exa.ai/search",
            "EXA_API_KEY",
            _exa,
            _parse(("results",), "highlights", "summary", "text"),
        ),
    )
}


def resolve_provider(
    name: str, url: str, api_key_env: str, environ: Mapping[str, str] | None = None
) -> tuple[Provider, str, str]:
    """(provider, endpoint, key) from `[network.search]`; an error naming what is missing."""
    if not name:
        raise ExecutionError(
            "web_search is not set up: no search provider is configured. The user adds to "
            'local-tools.toml: [network.search] provider = "searxng" (with url = "<instance>") '
            'or "brave", "tavily", "exa" (with the API key in BRAVE_API_KEY, TAVILY_API_KEY '
            "or EXA_API_KEY). Meanwhile, fetch a known page with web_fetch.",
            details={"missing": "network.search.provider"},
        )
    provider = PROVIDERS[name]
    endpoint = url or provider.endpoint
    if not endpoint:
        raise ExecutionError(
            f"web_search uses {provider.title}, which needs the instance's address: the user "
            'sets [network.search] url = "http://host:port" in local-tools.toml.',
            details={"missing": "network.search.url"},
        )
    env_name = api_key_env or provider.key_env
    key = (environ if environ is not None else os.environ).get(env_name, "") if env_name else ""
    if provider.key_env and not key:
        raise ExecutionError(
            f"web_search uses {provider.title}, but its API key is missing: the user sets the "
            f"environment variable {env_name} for the local-tools process (or names another "
            "one with [network.search] api_key_env).",
            details={"missing": env_name},
        )
    return provider, endpoint, key


async def search(
    provider: Provider, endpoint: str, key: str, query: str, n: int, send: Send
) -> list[SearchResult]:
    method, url, headers, body = provider.build(endpoint, query, n, key)
    payload = None if body is None else json.dumps(body).encode()
    status, reason, answer_headers, data = await send(method, url, headers, payload)
    if status in (401, 403):
        raise PermissionDenied(
            f"{provider.title} refused the request: HTTP {status} {reason}. The API key is "
            "wrong or lacks access; the user must check it.",
            details={"status_code": status},
        )
    if status >= 400:
        wait = answer_headers.get("retry-after")
        extra = f" Retry-After: {wait}." if wait else ""
        raise NetworkError(
            f"{provider.title} answered HTTP {status} {reason}.{extra}"
            + (" Too many searches: wait before retrying." if status == 429 else ""),
            details={"status_code": status, **({"retry_after": wait} if wait else {})},
        )
    try:
        data_json = json.loads(data)
    except ValueError:
        raise NetworkError(
            f"{provider.title} answered with something other than JSON "
            f"({answer_headers.get('content-type', 'no content type')}). For SearXNG, the "
            "instance must allow format=json (search.formats in its settings.yml)."
        ) from None
    return provider.parse(data_json)[:n]
