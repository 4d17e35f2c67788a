"""Ask for permission through MCP elicitation: a one-field form, allow once / always / deny.

SDK-free on purpose: the MCP transport hands in an `elicit` function that speaks
whichever protocol era the client negotiated (a server-to-client `elicitation/create`
request on legacy versions, an `InputRequiredResult` round trip on 2026-07-28). This
module only decides what the person is shown and what their answer means.
Anything but an explicit accepted choice — decline, cancel, an unknown value — is a deny.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from local_tools.interact.base import (
    Answer,
    PermissionRequest,
    QuestionAnswer,
    QuestionCancelled,
    QuestionRequest,
    ReviewAnswer,
    ReviewRequest,
    checked_answer,
    checked_review,
)
from local_tools.interact.terminal import safe_block, safe_text

__all__ = ["ElicitFunc", "McpAsker", "permission_form", "question_form", "review_form"]

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
    authenticated = "mcp-elicitation"  # the MCP client's form, on the client's connection

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
        shown = _shown_options(request.options)  # as listed -> the option itself
        return checked_answer(
            request,
            [shown.get(c, c) for c in choices if isinstance(c, str)],
            text if isinstance(text, str) else None,
        )

    async def review(self, request: ReviewRequest) -> ReviewAnswer:
        message, schema = review_form(request)
        action, content = await self._elicit(message, schema)
        if action != "accept" or not content:
            raise QuestionCancelled(f"the person chose {action!r} in the MCP client")
        decision = content.get(_DECISION)
        edited = content.get(_EDITED)
        if decision == "edit" and not edited:
            # A form client that shows no default sends the field back empty: an edit
            # that empties the draft is not what the person meant.
            raise QuestionCancelled("edit was chosen but the edited text came back empty")
        return checked_review(request, decision, edited, content.get(_FEEDBACK))


def permission_form(request: PermissionRequest) -> tuple[str, dict[str, Any]]:
    """The message and the requested schema (spec-valid primitive enum) for `request`."""
    subject = "(the whole permission)" if request.subject is None else safe_text(request.subject)
    lines = [
        f"local-tools: {safe_text(request.tool)} needs {safe_text(request.permission)}",
        f"subject: {subject}",
    ]
    if request.summary:
        # The summary is the model's text and may span lines (a here-document): each
        # line is escaped and marked as the summary's, so none can pass for a field.
        first, *rest = safe_block(request.summary).split("\n")
        lines.append(f"summary: {first}")
        lines.extend(f"  | {line}" for line in rest)
    choices = ["once", "always", "deny"]
    if request.suggestion is not None:
        choices.insert(2, "pattern")
        lines.append(f"pattern: {safe_text(request.suggestion)}")
    if request.summary and "\n" in request.summary:
        lines.append(f"(the subject, again: {subject})")
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
        # Escaped as everything else the model wrote (a newline or a bidi override
        # could make one option look like another); answers are mapped back.
        options = list(_shown_options(request.options))
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


def _shown_options(options: Sequence[str] | None) -> dict[str, str]:
    """Each option as listed (escaped) -> the option. Two options that escape alike
    (a newline, and a literal backslash-n) are both listed, the later one numbered."""
    shown: dict[str, str] = {}
    for option in options or ():
        text, n = safe_text(option), 1
        while text in shown:
            n += 1
            text = f"{safe_text(option)} ({n})"
        shown[text] = option
    return shown


_DECISION = "decision"
_EDITED = "content"
_FEEDBACK = "feedback"
_REVIEW_TITLES = {"pass": "Pass: use it as it is", "edit": "Edit: use my edited text"}


def review_form(request: ReviewRequest) -> tuple[str, dict[str, Any]]:
    """The draft in the message; a decision, the editable text (prefilled with the draft)
    and, when offered, a feedback field."""
    decisions = ["pass", "edit", *(["feedback"] if request.feedback else [])]
    titles = {**_REVIEW_TITLES, "feedback": "Feedback: redo it as I say"}
    properties: dict[str, Any] = {
        _DECISION: {
            "type": "string",
            "title": "Your review",
            "enum": decisions,
            "enumNames": [titles[d] for d in decisions],
            # No default: a person who only submits the form must not pass the review.
        },
        _EDITED: {
            "type": "string",
            "title": "Edited text (used when you choose edit)",
            "default": request.content,
        },
    }
    if request.feedback:
        properties[_FEEDBACK] = {
            "type": "string",
            "title": "Feedback for the agent (when you choose feedback)",
        }
    head = [f"local-tools: {safe_text(request.tool)} asks for your review"]
    where = f" ({safe_text(request.path)})" if request.path else ""
    head.append(safe_text(request.title) + where)
    if request.prompt:
        head.append(safe_text(request.prompt))
    message = "\n".join(head) + "\n\n" + safe_block(request.content)
    return message, {"type": "object", "properties": properties, "required": [_DECISION]}
