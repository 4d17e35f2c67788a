"""A malformed URL is INVALID_INPUT naming `url`, before any permission is asked.

The permission rules match the URL's host; before this check, `url=notaurl` was a
permission question about a "host" named notaurl.
"""

from __future__ import annotations

from typing import Any

import pytest

from local_tools import Toolbox

URL_TOOLS = ("http_request", "web_fetch", "browser_navigate")
MALFORMED = (
    "notaurl",  # no scheme
    "example.com/page",  # no scheme either
    "ftp://example.com/file",  # a scheme the web tools do not fetch
    "file:///etc/passwd",
    "http://",  # no host
    "https:///path",
    "http://example.com:99999/",  # port out of range
    "http://exa mple.com/",  # a space in the host
    "http://[::1/",  # an unclosed IPv6 literal
    "",
)


@pytest.fixture
def asking(make_toolbox: Any) -> Toolbox:
    """The default rules: network:outbound asks, and nobody is there to answer."""
    return make_toolbox()  # type: ignore[no-any-return]


@pytest.mark.parametrize("tool", URL_TOOLS)
@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_url_is_invalid_input(asking: Toolbox, tool: str, url: str) -> None:
    env = asking.run(tool, {"url": url})
    assert not env["success"]
    assert env["error"]["error_code"] == "INVALID_INPUT", env["error"]
    assert "'url'" in env["error"]["message"]
    assert "network:outbound" not in env["error"]["message"]


@pytest.mark.parametrize("tool", URL_TOOLS)
def test_a_well_formed_url_still_goes_to_the_permission_check(asking: Toolbox, tool: str) -> None:
    # A space in the path or query is encoded, not refused; the host is what is asked about.
    env = asking.run(tool, {"url": "https://example.com/a page?q=two words"})
    assert env["error"]["error_code"] == "PERMISSION_DENIED", env["error"]
    assert "example.com" in env["error"]["message"]
