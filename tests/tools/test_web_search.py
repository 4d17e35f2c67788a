"""web_search: each provider's adapter against a loopback server answering in that
provider's documented format, and the errors when nothing is configured."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import net_server
from local_tools import Toolbox

ALLOW = {"permissions": {"network:outbound": "allow"}}

SEARXNG = {
    "query": "python httpx",
    "number_of_results": 2,
    "results": [
        {"url": "https://www.python-httpx.org/", "title": "HTTPX", "content": "A client.",
         "engine": "duckduckgo", "score": 2.0},
        {"url": "https://github.com/encode/httpx", "title": "encode/httpx", "content": "",
         "engine": "google", "score": 1.0},
    ],
    "answers": [], "suggestions": [], "unresponsive_engines": [],
}  # fmt: skip
BRAVE = {
    "type": "search",
    "query": {"original": "python httpx"},
    "web": {
        "type": "search",
        "results": [
            {"title": "HTTPX", "url": "https://www.python-httpx.org/",
             "description": "A next-generation HTTP client.", "language": "en"},
            {"title": "No snippet", "url": "https://example.org/",
             "extra_snippets": ["first extra", "second extra"]},
        ],
    },
}  # fmt: skip
TAVILY = {
    "query": "python httpx",
    "answer": None,
    "results": [
        {"title": "HTTPX", "url": "https://www.python-httpx.org/",
         "content": "HTTPX is a fully featured HTTP client.", "score": 0.98},
    ],
    "response_time": 1.2,
}  # fmt: skip
EXA = {
    "requestId": "abc",
    "results": [
        {"id": "https://www.python-httpx.org/", "title": "HTTPX",
         "url": "https://www.python-httpx.org/", "highlights": ["A fast client", "async too"],
         "highlightScores": [0.5, 0.4]},
        {"id": "x", "title": None, "url": "https://example.com/untitled", "text": "Body text"},
    ],
}  # fmt: skip


@pytest.fixture
def server() -> Iterator[net_server.Server]:
    s = net_server.serve("127.0.0.1")
    s.routes["/search"] = net_server.as_json(SEARXNG)
    s.routes["/res/v1/web/search"] = net_server.as_json(BRAVE)
    s.routes["/tavily"] = net_server.as_json(TAVILY)
    s.routes["/exa"] = net_server.as_json(EXA)
    yield s
    s.stop()


def toolbox(make_toolbox: Any, provider: str, url: str, **extra: Any) -> Toolbox:
    search = {"provider": provider, "url": url, **extra}
    return make_toolbox({**ALLOW, "network": {"search": search}})  # type: ignore[no-any-return]


def search(tb: Toolbox, **args: Any) -> dict[str, Any]:
    env = tb.run("web_search", {"query": "python httpx", **args})
    assert env["success"], env["error"]
    return env["output"]  # type: ignore[no-any-return]


def test_searxng(make_toolbox: Any, server: net_server.Server) -> None:
    # The instance is the user's own setting: reachable on loopback without allow_private.
    out = search(toolbox(make_toolbox, "searxng", server.base))
    assert out["provider"] == "searxng"
    assert out["results"] == [
        {"title": "HTTPX", "url": "https://www.python-httpx.org/", "snippet": "A client."},
        {"title": "encode/httpx", "url": "https://github.com/encode/httpx", "snippet": ""},
    ]
    req = server.requests[-1]
    assert req.path == "/search" and "format=json" in req.query and "q=python+httpx" in req.query


def test_brave(
    make_toolbox: Any, server: net_server.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "brave-key")
    tb = toolbox(make_toolbox, "brave", server.url("/res/v1/web/search"))
    out = search(tb, num_results=5)
    assert out["results"][0]["snippet"] == "A next-generation HTTP client."
    assert out["results"][1]["snippet"] == "first extra … second extra"
    req = server.requests[-1]
    assert req.headers["X-Subscription-Token"] == "brave-key" and "count=5" in req.query
    text = tb.render(tb.run("web_search", {"query": "python httpx"}))
    assert "1. HTTPX" in text and "https://www.python-httpx.org/" in text


def test_tavily(
    make_toolbox: Any, server: net_server.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_TAVILY", "tvly-key")
    tb = toolbox(make_toolbox, "tavily", server.url("/tavily"), api_key_env="MY_TAVILY")
    out = search(tb, num_results=3)
    assert out["results"] == [
        {
            "title": "HTTPX",
            "url": "https://www.python-httpx.org/",
            "snippet": "HTTPX is a fully featured HTTP client.",
        }
    ]
    req = server.requests[-1]
    assert req.method == "POST" and req.headers["Authorization"] == "Bearer tvly-key"
    assert json.loads(req.body) == {"query": "python httpx", "max_results": 3}


def test_exa(make_toolbox: Any, server: net_server.Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXA_API_KEY", "exa-key")
    out = search(toolbox(make_toolbox, "exa", server.url("/exa")), num_results=1)
    assert out["results"] == [
        {"title": "HTTPX", "url": "https://www.python-httpx.org/",
         "snippet": "A fast client … async too"},
    ]  # fmt: skip
    req = server.requests[-1]
    assert req.headers["x-api-key"] == "exa-key" and json.loads(req.body)["numResults"] == 1
    two = search(toolbox(make_toolbox, "exa", server.url("/exa")), num_results=2)
    assert two["results"][1] == {
        "title": "https://example.com/untitled",
        "url": "https://example.com/untitled",
        "snippet": "Body text",
    }


def test_not_configured_names_the_missing_setting(
    make_toolbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    none = make_toolbox(ALLOW).run("web_search", {"query": "x"})
    assert none["error"]["error_code"] == "EXECUTION_ERROR"
    assert "[network.search] provider" in none["error"]["message"]
    keyless = make_toolbox({**ALLOW, "network": {"search": {"provider": "brave"}}})
    env = keyless.run("web_search", {"query": "x"})
    assert "BRAVE_API_KEY" in env["error"]["message"]
    assert env["error"]["details"]["missing"] == "BRAVE_API_KEY"
    no_url = make_toolbox({**ALLOW, "network": {"search": {"provider": "searxng"}}})
    assert "url" in no_url.run("web_search", {"query": "x"})["error"]["message"]


def test_provider_errors(
    make_toolbox: Any, server: net_server.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "bad")
    server.routes["/denied"] = net_server.as_json({"detail": "Unauthorized"}, status=401)
    server.routes["/limited"] = lambda req: (429, {"Retry-After": "30"}, b"{}")
    server.routes["/html/search"] = net_server.html("<p>not json</p>")
    denied = toolbox(make_toolbox, "tavily", server.url("/denied")).run(
        "web_search", {"query": "q"}
    )
    assert denied["error"]["error_code"] == "PERMISSION_DENIED"
    assert "API key" in denied["error"]["message"]
    limited = toolbox(make_toolbox, "tavily", server.url("/limited")).run(
        "web_search", {"query": "q"}
    )
    assert limited["error"]["error_code"] == "NETWORK_ERROR"
    assert "Retry-After: 30" in limited["error"]["message"]
    html = toolbox(make_toolbox, "searxng", server.url("/html")).run("web_search", {"query": "q"})
    assert "format=json" in html["error"]["message"]


def test_permission_is_asked_for_the_provider_host(
    make_toolbox: Any, server: net_server.Server
) -> None:
    tb = make_toolbox({"network": {"search": {"provider": "searxng", "url": server.base}}})
    env = tb.run("web_search", {"query": "x"})
    assert env["error"]["error_code"] == "PERMISSION_DENIED"
    assert env["error"]["details"]["subject"] == "127.0.0.1"
    assert server.requests == []


def test_bad_arguments(make_toolbox: Any) -> None:
    tb = make_toolbox(ALLOW)
    for args in (
        {"query": ""},
        {"query": "x", "num_results": 0},
        {"query": "x", "num_results": 21},
    ):
        assert tb.run("web_search", args)["error"]["error_code"] == "INVALID_INPUT"


def test_the_trusted_provider_cannot_redirect_into_private_space(make_toolbox: Any) -> None:
    # The endpoint's own host is reachable even when private (the user's setting);
    # where it redirects to is not: the canary on another loopback address gets nothing.
    canary = net_server.serve("127.0.0.1")
    provider = net_server.serve("127.0.0.2")
    try:
        canary.routes["/search"] = net_server.as_json(SEARXNG)
        provider.routes["/search"] = net_server.redirect(canary.url("/search"), 307)
        env = toolbox(make_toolbox, "searxng", provider.base).run("web_search", {"query": "x"})
        assert env["error"]["error_code"] == "PERMISSION_DENIED", env
        assert len(provider.requests) == 1 and canary.requests == []
    finally:
        canary.stop()
        provider.stop()
