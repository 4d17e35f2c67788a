"""The asker protocol: how the policy asks a human about an `ask` permission, and how
the `question` tool asks them anything else, and how the review tools hand them a
draft to pass, edit or comment on.

Every transport supplies its own asker (terminal prompt, web page, MCP
elicitation); the policy and the tools only know this protocol, so approval and
questions work the same way whichever door a call came through.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

__all__ = [
    "ASKING_FOR",
    "MAX_REVIEW_CHARS",
    "Answer",
    "Asker",
    "NoPersonAvailable",
    "PermissionRequest",
    "QuestionAnswer",
    "QuestionAsker",
    "QuestionCancelled",
    "QuestionRequest",
    "ReviewAnswer",
    "ReviewAsker",
    "ReviewRequest",
    "checked_answer",
    "checked_review",
]

# once: allow this call; always: allow and remember this exact subject; pattern: allow
# and remember the request's `suggestion` (offered only when there is one); deny: refuse.
Answer = Literal["once", "always", "pattern", "deny"]

# The one action an ask is for, when one call is many actions (a subagent's tool calls
# within a task call): a digest of that action, set around it by whoever runs it. An
# asker that keeps answers for a call (MCP 2026-07-28 re-sends them every round) keys
# them by it too, so "allow once" for one write never covers a later, different one.
# None (a plain call): the call is the action.
ASKING_FOR: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "local_tools_asking_for", default=None
)


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


ReviewDecision = Literal["pass", "edit", "feedback"]
# What a person can read and a console page can carry comfortably in one request.
MAX_REVIEW_CHARS = 200_000


@dataclass(frozen=True)
class ReviewRequest:
    """A draft for the person: pass it, edit it, or (`feedback`) tell the agent what to
    change. `path` is the file's workspace path when the draft is a file, for display."""

    title: str
    content: str
    prompt: str = ""
    feedback: bool = False  # whether "feedback" is offered besides pass and edit
    path: str | None = None
    tool: str = "review"
    user_id: str = "default"
    timeout: float = 3000.0  # seconds an asker that can wait with a deadline waits


@dataclass(frozen=True)
class ReviewAnswer:
    """`content` is the edited text (decision "edit"), `feedback` the person's words."""

    decision: ReviewDecision
    content: str | None = None
    feedback: str | None = None


@runtime_checkable
class ReviewAsker(Protocol):
    async def review(self, request: ReviewRequest) -> ReviewAnswer:
        """Show the draft and wait. Raises QuestionCancelled when dismissed,
        NoPersonAvailable when nobody is there, TimeoutError when nobody answered."""
        ...


def checked_review(
    request: ReviewRequest, decision: object, content: object = None, feedback: object = None
) -> ReviewAnswer:
    """The answer as the tool may trust it: a decision the request offers; an edit that
    changes nothing is a pass; feedback needs words. A draft written with CRLF gets its
    CRLF back when the edit came with bare LF (a text field or editor normalised them),
    so a file keeps its line endings and only the person's changes count."""
    allowed = ("pass", "edit", "feedback") if request.feedback else ("pass", "edit")
    if decision not in allowed:
        raise QuestionCancelled(f"no valid decision ({decision!r}; expected one of {allowed})")
    if decision == "edit":
        if not isinstance(content, str):
            raise QuestionCancelled("an edit came back without content")
        if _uses_crlf(request.content) and "\r" not in content:
            content = content.replace("\n", "\r\n")
        if content == request.content:
            return ReviewAnswer("pass")
        return ReviewAnswer("edit", content=content)
    if decision == "feedback":
        words = feedback.strip() if isinstance(feedback, str) else ""
        if not words:
            raise QuestionCancelled("feedback was chosen but no feedback was written")
        return ReviewAnswer("feedback", feedback=words)
    return ReviewAnswer("pass")


def _uses_crlf(text: str) -> bool:
    """Whether CRLF is the draft's line ending (most of its line breaks are CRLF)."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf >= text.count("\n") - crlf
