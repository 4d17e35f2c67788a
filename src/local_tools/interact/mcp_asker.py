"""Ask for permission through MCP elicitation: a one-field form, allow once / always / deny.

SDK-free on purpose: the MCP transport hands in an `elicit` function that speaks
whichever protocol era the client negotiated (a server-to-client `elicitation/create`
request on legacy versions, an `InputRequiredResult` round trip on 2026-07-28). This
module only decides what the person is shown and what their answer means.
Anything but an explicit accepted choice — decline, cancel, an unknown value — is a deny.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from local_tools.interact.base import (
    Answer,
    PermissionRequest,
    QuestionAnswer,
    QuestionCancelled,
    QuestionRequest,
    checked_answer,
)
from local_tools.interact.terminal import safe_text

__all__ = ["ElicitFunc", "McpAsker", "permission_form", "question_form"]

# (message, requested_schema) -> (action, content): action is "accept", "decline" or
# "cancel" as in MCP's ElicitResult; content is the submitted form when accepted.
ElicitFunc = Callable[[str, dict[str, Any]], Awaitable[tuple[str, Mapping[str, Any] | None]]]

_FIELD = "decision"
_TITLES: dict[str, str] = {
    "once": "Allow once",
    "always": "Always allow",
    "pattern": "Always allow the pattern",
    "deny": "Deny",
}


class McpAsker:
    """An `Asker` that shows the request as an MCP elicitation form."""

    door = "mcp elicitation"  # how the audit names who answered

    def __init__(self, elicit: ElicitFunc) -> None:
        self._elicit = elicit

    async def ask(self, request: PermissionRequest) -> Answer:
        message, schema = permission_form(request)
        action, content = await self._elicit(message, schema)
        if action != "accept" or not content:
            return "deny"
        choice = content.get(_FIELD)
        allowed = schema["properties"][_FIELD]["enum"]
        return choice if isinstance(choice, str) and choice in allowed else "deny"  # type: ignore[return-value]

    async def question(self, request: QuestionRequest) -> QuestionAnswer:
        message, schema = question_form(request)
        action, content = await self._elicit(message, schema)
        if action != "accept" or not content:
            raise QuestionCancelled(f"the person chose {action!r} in the MCP client")
        picked = content.get(_CHOICE)
        choices = picked if isinstance(picked, list) else [picked] if picked else []
        text = content.get(_TEXT)
        return checked_answer(
            request,
            [c for c in choices if isinstance(c, str)],
            text if isinstance(text, str) else None,
        )


def permission_form(request: PermissionRequest) -> tuple[str, dict[str, Any]]:
    """The message and the requested schema (spec-valid primitive enum) for `request`."""
    subject = "(the whole permission)" if request.subject is None else safe_text(request.subject)
    lines = [
        f"local-tools: {safe_text(request.tool)} needs {safe_text(request.permission)}",
        f"subject: {subject}",
    ]
    if request.summary:
        lines.append(f"summary: {safe_text(request.summary)}")
    choices = ["once", "always", "deny"]
    if request.suggestion is not None:
        choices.insert(2, "pattern")
        lines.append(f"pattern: {safe_text(request.suggestion)}")
    schema = {
        "type": "object",
        "properties": {
            _FIELD: {
                "type": "string",
                "title": "Allow this?",
                "enum": choices,
                # Display names; a client that ignores them shows the plain values.
                "enumNames": [_TITLES[c] for c in choices],
                "default": "deny",
            }
        },
        "required": [_FIELD],
    }
    return "\n".join(lines), schema


_CHOICE = "choice"
_TEXT = "answer"


def question_form(request: QuestionRequest) -> tuple[str, dict[str, Any]]:
    """A form with the options (single or multi-select enum) and a free-text field."""
    properties: dict[str, Any] = {}
    if request.options:
        options = list(request.options)
        if request.multiple:
            properties[_CHOICE] = {
                "type": "array",
                "title": "Pick any",
                "items": {"type": "string", "enum": options},
            }
        else:
            properties[_CHOICE] = {"type": "string", "title": "Pick one", "enum": options}
    title = "Or answer in your own words" if request.options else "Your answer"
    properties[_TEXT] = {"type": "string", "title": title}
    message = f"local-tools: {safe_text(request.tool)} asks\n{safe_text(request.question)}"
    return message, {"type": "object", "properties": properties}
