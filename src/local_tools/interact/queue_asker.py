"""Ask through the workspace's pending queue, answered from the web console.

The asker of last resort: a call whose transport has no person at its door (an MCP
client without elicitation, a web chat over HTTP, a script) waits here for an answer
from the console when one is running, and otherwise is told nobody can answer.
"""

from __future__ import annotations

from typing import Any

from local_tools.interact.audited import answered_by
from local_tools.interact.base import (
    Answer,
    NoPersonAvailable,
    PermissionRequest,
    QuestionAnswer,
    QuestionCancelled,
    QuestionRequest,
    ReviewAnswer,
    ReviewRequest,
    checked_answer,
    checked_review,
)
from local_tools.interact.pending import PendingQueue

__all__ = ["DEFAULT_ANSWER_TIMEOUT", "QueueAsker"]

DEFAULT_ANSWER_TIMEOUT = 300.0  # seconds a call waits for the person
_ANSWERS: frozenset[str] = frozenset({"once", "always", "pattern", "deny"})


class QueueAsker:
    door = "web console"  # how the audit names who answered
    # The console takes answers from a console session only (never the API token);
    # each answer says so itself, stored with it in the queue.
    authenticated = "console-session"

    def __init__(self, queue: PendingQueue, timeout: float = DEFAULT_ANSWER_TIMEOUT) -> None:
        self.queue = queue
        self.timeout = timeout

    async def ask(self, request: PermissionRequest) -> Answer:
        self._need_console()
        payload = {
            "tool": request.tool,
            "permission": request.permission,
            "subject": request.subject,
            "user_id": request.user_id,
            "summary": request.summary,
            "suggestion": request.suggestion,
        }
        answer = await self._submit_and_wait("permission", payload)
        decision = str(answer.get("decision", "deny"))
        if decision == "pattern" and request.suggestion is None:
            return "deny"
        return decision if decision in _ANSWERS else "deny"  # type: ignore[return-value]

    async def question(self, request: QuestionRequest) -> QuestionAnswer:
        self._need_console()
        payload = {
            "question": request.question,
            "options": list(request.options),
            "multiple": request.multiple,
            "tool": request.tool,
            "user_id": request.user_id,
        }
        answer = await self._submit_and_wait("question", payload)
        if answer.get("cancelled"):
            raise QuestionCancelled("dismissed in the web console")
        choices = answer.get("choices")
        text = answer.get("text")
        return checked_answer(
            request,
            [c for c in choices if isinstance(c, str)] if isinstance(choices, list) else [],
            text if isinstance(text, str) else None,
        )

    async def review(self, request: ReviewRequest) -> ReviewAnswer:
        self._need_console()
        payload = {
            "title": request.title,
            "content": request.content,
            "prompt": request.prompt,
            "feedback": request.feedback,
            "path": request.path,
            "tool": request.tool,
            "user_id": request.user_id,
        }
        answer = await self._submit_and_wait("review", payload, request.timeout)
        if answer.get("cancelled"):
            raise QuestionCancelled("dismissed in the web console")
        return checked_review(
            request, answer.get("decision"), answer.get("content"), answer.get("feedback")
        )

    def _need_console(self) -> None:
        if not self.queue.console_live():
            raise NoPersonAvailable("no web console is running for this workspace")

    async def _submit_and_wait(
        self, kind: str, payload: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        wait = self.timeout if timeout is None else timeout
        request_id = self.queue.submit(kind, payload)
        item = await self.queue.wait_item(request_id, wait)
        if item is None:
            raise TimeoutError(f"nobody answered in the web console within {wait:g} s")
        answered_by(item.answered_by or self.door, item.answered_auth or "unknown")
        return item.answer or {}
