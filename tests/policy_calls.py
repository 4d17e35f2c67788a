"""Driving a Policy in tests: scripted askers and one-line authorize / evaluate calls."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from local_tools.core.errors import ErrorCode, PermissionDenied
from local_tools.interact.base import Answer, Asker, PermissionRequest
from local_tools.security.policy import Policy


class ScriptedAsker:
    """A real Asker that answers from a script and records what it was asked."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.requests: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Answer:
        self.requests.append(request)
        return self.answers.pop(0)  # type: ignore[return-value]


class BrokenAsker:
    async def ask(self, request: PermissionRequest) -> Answer:
        raise ConnectionError("the web page went away")


def authorize(
    policy: Policy,
    permission: str,
    subjects: Sequence[str] | None,
    asker: Asker | None = None,
    user: str = "alice",
) -> None:
    asyncio.run(
        policy.authorize(user, permission, subjects, asker, tool="some_tool", summary="why")
    )


def denied(policy: Policy, permission: str, subjects: Sequence[str] | None, **kw: object) -> str:
    with pytest.raises(PermissionDenied) as info:
        authorize(policy, permission, subjects, **kw)  # type: ignore[arg-type]
    assert info.value.code is ErrorCode.PERMISSION_DENIED
    return info.value.message


def action(policy: Policy, permission: str, subject: str | None, user: str = "alice") -> str:
    return policy.evaluate(user, permission, subject).action
