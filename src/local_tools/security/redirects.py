"""Following a redirect by hand: where it leads, and what may go along.

`request` in `local_tools.security.net` follows redirects itself, so that each new
host is checked before any connection to it; these are the rules it applies to each
hop, kept apart from the connection guard.
"""

from __future__ import annotations

import httpx

from local_tools.core.errors import NetworkError
from local_tools.core.redact import is_secret_header

__all__ = ["REDIRECT_STATUSES", "headers_for_another_site", "origin", "redirect_target"]

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Another site gets only headers that describe the request, never one that may be a
# credential (X-JFrog-Art-Api, Cookie, X-Api-Key, ...): an allow-list, since
# credential names vary.
_KEPT_ACROSS_SITES = frozenset(
    {
        "accept", "accept-encoding", "accept-language", "cache-control", "content-language",
        "content-type", "if-match", "if-modified-since", "if-none-match", "if-range",
        "if-unmodified-since", "pragma", "range", "user-agent",
    }
)  # fmt: skip


def redirect_target(url: httpx.URL, location: str) -> httpx.URL:
    """Where a `Location` sends the request: only to http(s) with a valid port, and
    keeping the fragment as browsers do; NetworkError otherwise."""
    try:
        target = url.join(location)
        target.host  # noqa: B018 (decodes an xn-- label: may fail)
    except (httpx.InvalidURL, ValueError) as exc:
        raise NetworkError(f"{url} redirected to an invalid URL {location!r} ({exc}).") from None
    if target.scheme not in ("http", "https"):
        raise NetworkError(
            f"{url} redirected to {location!r}; only http and https redirects are followed.",
            details={"cause": "redirects"},
        )
    if target.port is not None and not 0 < target.port <= 65535:
        raise NetworkError(f"{url} redirected to {location!r}, whose port is not 1-65535.")
    if url.fragment and not target.fragment:
        target = target.copy_with(fragment=url.fragment)
    return target


def origin(url: httpx.URL) -> tuple[str, str, int | None]:
    """Scheme, host and port: a redirect that changes any of them reaches another site."""
    return url.scheme, url.host.lower(), url.port


def headers_for_another_site(headers: dict[str, str]) -> dict[str, str]:
    """The headers that may follow a redirect to another origin."""
    return {
        k: v
        for k, v in headers.items()
        if k.lower() in _KEPT_ACROSS_SITES and not is_secret_header(k)
    }
