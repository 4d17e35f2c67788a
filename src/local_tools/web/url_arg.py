"""The `url` argument of the web tools, checked as the arguments are validated.

Validation runs before the permission check, so a malformed URL (no scheme, another
scheme, no host, a bad port, spaces) is INVALID_INPUT naming `url`, not a permission
question about a "host" that is really the whole text.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from local_tools.core.errors import InvalidInput
from local_tools.security.urls import parse_url

__all__ = ["WebUrl", "check_web_url"]


# Not in a host name. httpx percent-encodes them (`http://a b/` has the host "a%20b"),
# which no DNS name or address can be; in a path or query they are fine (encoded).
_NOT_IN_HOST = frozenset(' %"<>\\^`{|}')


def check_web_url(value: str) -> str:
    """`value` unchanged when it is an absolute http(s) URL with a host; the tool parses
    it again where it uses it (this check keeps no state)."""
    try:
        host = parse_url(value).host
    except InvalidInput as exc:  # its message ends by quoting the URL: said once is enough
        reason = exc.message.removesuffix(f": {value!r}.")
        raise PydanticCustomError("url", "{reason}", {"reason": reason}) from None
    if any(c in _NOT_IN_HOST or c.isspace() for c in host):
        raise PydanticCustomError(
            "url", "the URL's host '{host}' is not a host name or address", {"host": host}
        )
    return value


WebUrl = Annotated[str, AfterValidator(check_web_url)]
