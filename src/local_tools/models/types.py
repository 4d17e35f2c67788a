"""The neutral conversation the model-backed tools speak; each API's client translates.

A subagent's transcript is a list of `Message`s (stored as JSON by `to_json`), whichever
API the model behind it speaks, so a task can be resumed on another model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

__all__ = [
    "Message",
    "ModelClient",
    "Reply",
    "Role",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "message_from_json",
]

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for. `arguments` is None when what it sent was not a
    JSON object (`error` says why): the loop answers it with that error, never runs it."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    error: str | None = None


@dataclass(frozen=True)
class Message:
    """One turn: a user's text, the assistant's text and tool calls, or one tool result
    (`tool_call_id` names the call it answers; `is_error` when the call failed)."""

    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def message_from_json(data: dict[str, Any]) -> Message:
    calls = tuple(ToolCall(**c) for c in data.get("tool_calls") or ())
    return Message(
        role=data["role"],
        text=data.get("text", ""),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        is_error=bool(data.get("is_error", False)),
    )


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: its name, description and JSON Schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Reply:
    """The model's turn. `stop` is "end" (it answered), "tool_calls" (it wants tools run),
    or "max_tokens" (cut at the reply limit)."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop: Literal["end", "tool_calls", "max_tokens"] = "end"


class ModelClient(Protocol):
    """One configured model (`[models.NAME]`), behind its API's official SDK.

    `complete` raises ToolError: NETWORK_ERROR (refused, unreachable, 5xx after the
    retries, 429 after the retries: the message says when to retry), TIMEOUT,
    PERMISSION_DENIED (the SSRF guard, a 401/403: the key's variable is named, never its
    value), INVALID_INPUT (a 400: what the server said). Cancelling the awaiting task
    cancels the request: nothing is left running.
    """

    name: str  # the [models.NAME] key
    model: str

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        max_tokens: int | None = None,
    ) -> Reply: ...

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` by the configured encoding (models/tokens.py)."""
        ...

    async def aclose(self) -> None: ...
