"""The asker protocol: how the policy asks a human about an `ask` permission.

Every transport supplies its own asker (terminal prompt, web page, MCP
elicitation); the policy only knows this protocol, so approval works the same way
whichever door a call came through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

__all__ = ["Answer", "Asker", "NoPersonAvailable", "PermissionRequest"]

# once: allow this call; always: allow and remember this exact subject; pattern: allow
# and remember the request's `suggestion` (offered only when there is one); deny: refuse.
Answer = Literal["once", "always", "pattern", "deny"]


@dataclass(frozen=True)
class PermissionRequest:
    """What the user is asked to approve. `subject` None means the whole permission."""

    tool: str
    permission: str
    subject: str | None
    user_id: str
    summary: str = ""
    # A broader rule the person may approve instead of the exact subject, e.g.
    # `npm test *` for `npm test --watch`; None when only the exact subject is safe.
    suggestion: str | None = None


class NoPersonAvailable(Exception):
    """Raised by an asker that found nobody to ask (no console running): the policy
    then answers as if there were no asker, naming the rule to add."""


@runtime_checkable
class Asker(Protocol):
    async def ask(self, request: PermissionRequest) -> Answer:
        """Ask the user; anything other than "once" or "always" is treated as deny."""
        ...
