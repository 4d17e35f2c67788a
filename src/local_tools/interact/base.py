"""The asker protocol: how the policy asks a human about an `ask` permission, and how
the `question` tool asks them anything else.

Every transport supplies its own asker (terminal prompt, web page, MCP
elicitation); the policy and the tools only know this protocol, so approval and
questions work the same way whichever door a call came through.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

__all__ = [
    "Answer",
    "Asker",
    "NoPersonAvailable",
    "PermissionRequest",
    "QuestionAnswer",
    "QuestionAsker",
    "QuestionCancelled",
    "QuestionRequest",
    "checked_answer",
]

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


@dataclass(frozen=True)
class QuestionRequest:
    """A question for the person, with optional choices (`multiple`: pick any number)."""

    question: str
    options: tuple[str, ...] = ()
    multiple: bool = False
    tool: str = "question"
    user_id: str = "default"


@dataclass(frozen=True)
class QuestionAnswer:
    """The options picked (always among the request's) and/or their own words."""

    choices: tuple[str, ...] = ()
    text: str | None = None


class QuestionCancelled(Exception):
    """The person dismissed the question (declined, closed the form, an empty line)."""


@runtime_checkable
class QuestionAsker(Protocol):
    async def question(self, request: QuestionRequest) -> QuestionAnswer:
        """Ask and wait. Raises QuestionCancelled when dismissed, NoPersonAvailable when
        nobody is there after all, TimeoutError when nobody answered in time."""
        ...


def checked_answer(
    request: QuestionRequest, choices: Iterable[str], text: str | None
) -> QuestionAnswer:
    """The answer as the tool may trust it: picked options that exist (one unless
    `multiple`), text stripped; nothing at all counts as dismissing the question."""
    picked = set(choices)
    kept = tuple(o for o in request.options if o in picked)
    if not request.multiple:
        kept = kept[:1]
    words = text.strip() if isinstance(text, str) else ""
    if not kept and not words:
        raise QuestionCancelled("no option picked and no answer given")
    return QuestionAnswer(choices=kept, text=words or None)
