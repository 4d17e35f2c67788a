"""Every answer a person gives is audited: what was asked, the answer, the door, who
answered and how they were authenticated.

The runner wraps a call's asker in `AuditedAsker`, so an approval or an answered
question leaves its own audit row (tool "answer", the call's id, the door it came
through as the transport) whichever asker took it: the terminal, MCP elicitation, the
web console. Nobody being there (`NoPersonAvailable`) is not an answer and leaves none.

The row's args carry `answered_by` and `authenticated`: how the one who answered
proved they were a person at that door. "terminal" (this process's own terminal),
"mcp-elicitation" (the MCP client's form, on the connection the client opened),
"console-session" (a web console session, made by `/auth` in a browser; the API token
alone cannot answer), or what a custom asker declares (`authenticated` attribute;
"custom-asker" when it declares nothing). An asker that learns who answered only with
the answer (the console, through the pending queue) reports it with `answered_by()`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from local_tools.interact.base import (
    Answer,
    Asker,
    NoPersonAvailable,
    PermissionRequest,
    QuestionAnswer,
    QuestionRequest,
    ReviewAnswer,
    ReviewRequest,
)

__all__ = ["ANSWER_TOOL", "AuditedAsker", "answered_by", "authenticated_of", "door_of"]

ANSWER_TOOL = "answer"  # the audit rows' tool name

# (details, door, error) -> None; error is None for an answer, else why there was none.
T = TypeVar("T")

RecordFunc = Callable[[dict[str, Any], str, "str | None"], None]


# (who answered, how they were authenticated), set by the asker in the asking task.
_ANSWERED: ContextVar[tuple[str, str] | None] = ContextVar("local_tools_answered", default=None)


def door_of(asker: Any) -> str:
    """How a person reached by `asker` is named in the audit ("terminal", "web console")."""
    return str(getattr(asker, "door", type(asker).__name__))


def authenticated_of(asker: Any) -> str:
    """How the one who answers through `asker` is authenticated, as far as it knows."""
    return str(getattr(asker, "authenticated", "custom-asker"))


def answered_by(who: str, authenticated: str) -> None:
    """Called by an asker, in the task that awaits it, once it knows who answered."""
    _ANSWERED.set((who, authenticated))


class AuditedAsker:
    def __init__(self, inner: Asker, record: RecordFunc) -> None:
        self.inner = inner
        self.door = door_of(inner)
        self.authenticated = authenticated_of(inner)
        self._record = record

    async def ask(self, request: PermissionRequest) -> Answer:
        details: dict[str, Any] = {
            "for_tool": request.tool,
            "permission": request.permission,
            "subject": request.subject,
        }
        answer: Answer = await self._asked(self.inner.ask(request), details)
        rule = request.suggestion if answer == "pattern" else request.subject
        self._answered({**details, "answer": answer, "rule": rule})
        return answer

    async def question(self, request: QuestionRequest) -> QuestionAnswer:
        ask = getattr(self.inner, "question", None)
        if ask is None:  # an asker for permissions only: nobody to ask questions
            raise NoPersonAvailable(f"{self.door} cannot ask questions")
        details: dict[str, Any] = {"for_tool": request.tool, "question": request.question}
        answer: QuestionAnswer = await self._asked(ask(request), details)
        self._answered({**details, "choices": list(answer.choices), "text": answer.text})
        return answer

    async def review(self, request: ReviewRequest) -> ReviewAnswer:
        ask = getattr(self.inner, "review", None)
        if ask is None:  # an asker for permissions only: nobody to review with
            raise NoPersonAvailable(f"{self.door} cannot show a draft for review")
        details: dict[str, Any] = {"for_tool": request.tool, "review": request.title}
        answer: ReviewAnswer = await self._asked(ask(request), details)
        # The edited text itself stays out of the audit (the file's history has it).
        self._answered({**details, "decision": answer.decision, "feedback": answer.feedback})
        return answer

    def _answered(self, record: dict[str, Any]) -> None:
        who, how = _ANSWERED.get() or (self.door, self.authenticated)
        self._record({**record, "answered_by": who, "authenticated": how}, self.door, None)

    async def _asked(self, asking: Awaitable[T], details: dict[str, Any]) -> T:
        """The answer; a failure (dismissed, timed out, broken) is audited with why."""
        _ANSWERED.set(None)  # what an earlier answer in this task said is not this one's
        try:
            return await asking
        except NoPersonAvailable:
            raise  # nobody was there: not an answer, no row
        except Exception as exc:
            self._record(details, self.door, f"{type(exc).__name__}: {exc}")
            raise
