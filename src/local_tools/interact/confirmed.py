"""An asker standing for a person who has already confirmed what the call will do.

`local-tools undo` and the console's Undo show the restore's plan and ask the person
first; the call they then make would otherwise ask again, path by path. This asker
answers "once" for the permissions it was given (rules that deny still deny: the
policy decides before anyone is asked) and refuses anything else.
"""

from __future__ import annotations

from collections.abc import Iterable

from local_tools.interact.base import Answer, PermissionRequest

__all__ = ["ConfirmedAsker"]


class ConfirmedAsker:
    def __init__(self, permissions: Iterable[str], who: str) -> None:
        self.permissions = frozenset(permissions)
        self.who = who  # for the audit: "terminal (local-tools undo)", "web console"

    async def ask(self, request: PermissionRequest) -> Answer:
        return "once" if request.permission in self.permissions else "deny"
