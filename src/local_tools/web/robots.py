"""robots.txt, for web_fetch when `[network] respect_robots = true` (RFC 9309)."""

from __future__ import annotations

from urllib.robotparser import RobotFileParser

__all__ = ["ROBOTS_AGENT", "robots_allows"]

# The product token robots.txt rules name (User-agent: local-tools).
ROBOTS_AGENT = "local-tools"


def robots_allows(robots_status: int, robots_text: str, url: str) -> bool:
    """Whether robots.txt (fetched with `robots_status`) lets ROBOTS_AGENT fetch `url`.

    RFC 9309: a missing robots.txt (any 4xx) allows everything; a server error (5xx)
    means assume everything is disallowed.
    """
    if 400 <= robots_status < 500:
        return True
    if robots_status >= 500:
        return False
    parser = RobotFileParser()
    parser.parse(robots_text.splitlines())
    return parser.can_fetch(ROBOTS_AGENT, url)
