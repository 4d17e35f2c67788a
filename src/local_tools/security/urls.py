"""URLs and hosts as the web tools and their rules see them.

One spelling per host: userinfo left out, Unicode (IDNA 2008) label by label, lower
case, no trailing dot; so a rule naming a host matches however a URL spells it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import idna

from local_tools.core.errors import InvalidInput

if TYPE_CHECKING:  # httpx (and httpcore) load with the first URL, not at start
    import httpx

__all__ = ["host_key", "parse_url", "rule_host", "url_host"]


def parse_url(url: str) -> httpx.URL:
    """The URL as httpx will use it; InvalidInput unless it is an absolute http(s) URL."""
    import httpx

    try:
        parsed = httpx.URL(url.strip())
        host = parsed.host  # decodes an xn-- label: may fail (IDNAError is a ValueError)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise InvalidInput(f"Not a valid URL: {url!r} ({exc}).") from None
    if parsed.scheme not in ("http", "https"):
        what = f"'{parsed.scheme}:' URLs" if parsed.scheme else "URLs without http:// or https://"
        raise InvalidInput(f"Web tools fetch http and https URLs only, not {what}: {url!r}.")
    if not host:
        raise InvalidInput(f"The URL has no host: {url!r}.")
    if parsed.port is not None and not 0 < parsed.port <= 65535:
        raise InvalidInput(f"The URL's port {parsed.port} is not 1-65535: {url!r}.")
    return parsed


def url_host(url: str) -> str:
    """The host a URL reaches, as the permission rules see it (userinfo left out, so
    ``http://good.com@127.0.0.1/`` is 127.0.0.1, a trailing dot too); the text itself
    when unparsable."""
    import httpx

    try:
        return rule_host(httpx.URL(url.strip())) or url
    except (httpx.InvalidURL, TypeError, ValueError):
        return url


def rule_host(url: httpx.URL) -> str:
    """`url`'s host as the rules name it."""
    return host_key(_unicode_host(url.raw_host))


def _unicode_host(raw: bytes) -> str:
    """A host in its Unicode spelling, label by label (IDNA 2008): httpx's own `host` is
    Unicode for `faß.de` but punycode for `sub.faß.de`, so one rule would see two names."""
    ascii_host = raw.decode("ascii")
    try:
        return str(idna.decode(ascii_host))
    except (idna.IDNAError, UnicodeError, ValueError):
        return ascii_host  # an IP literal, or a label idna cannot map: as it was sent


def host_key(host: str) -> str:
    """The host as rules name it: "docs.example." is the fully qualified "docs.example",
    one DNS name, so a rule about one is about the other."""
    return host.lower().rstrip(".")
