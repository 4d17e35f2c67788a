"""A conversation in OpenAI Chat Completions or Anthropic Messages format: detection,
validation (an error names the message's index), and where its parts are.

The engine edits copies of the caller's own message dicts in place (a tool output
becomes a stub, an image a text block), so everything it does not touch comes back
exactly as it was sent, whatever extra keys a provider uses.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from local_tools.core.errors import InvalidInput

__all__ = [
    "MAX_DEPTH",
    "Call",
    "Conversation",
    "Format",
    "Part",
    "calls_by_id",
    "is_human",
    "parse",
    "parts_of",
    "too_deep",
]

Format = Literal["openai", "anthropic"]

# Levels of lists and objects a conversation may nest: a message, its blocks, a tool
# call's arguments (core/arg_checks.py allows 32 below them), with room to spare. The
# engine copies and walks it recursively; a deeper one is no API's conversation.
MAX_DEPTH = 64

_OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool")
_ANTHROPIC_ROLES = ("user", "assistant")
# Content block types only one of the two APIs has.
_OPENAI_ONLY = frozenset({"image_url", "input_audio", "file", "refusal"})
_ANTHROPIC_ONLY = frozenset(
    {"tool_use", "tool_result", "image", "document", "thinking", "redacted_thinking"}
)
IMAGE_TYPES = frozenset({"image_url", "image"})


@dataclass
class Conversation:
    format: Format
    messages: list[dict[str, Any]]
    # Anthropic's top-level system prompt ({"system": ..., "messages": [...]}): kept whole.
    system: Any = None
    # Whether the input was an object holding "messages" (the result keeps that shape).
    wrapped: bool = False
    # Neither API's own marks (plain strings only): edits must suit both.
    ambiguous: bool = False


@dataclass(frozen=True)
class Call:
    """A tool call an assistant message made: what a stub names so it can be re-run."""

    id: str
    name: str
    arguments: Any  # a dict, or the raw text OpenAI sent when it is not JSON
    index: int  # the assistant message's index


@dataclass(frozen=True)
class Part:
    """A piece of a message the engine may shrink: a tool output, an image, a user's text.

    `block` is the content block's index (None: the message's whole string content, or an
    OpenAI tool message's whole content); `call_id` the call a tool output answers."""

    index: int
    block: int | None
    kind: Literal["tool_output", "image", "user_text"]
    call_id: str | None = None


def parse(data: Any, fmt: str = "auto") -> Conversation:
    """The conversation in `data` (a list of messages, or an object with "messages" and
    maybe "system"), copied; InvalidInput naming the first bad message."""
    if too_deep(data):
        raise InvalidInput(
            f"The conversation nests lists and objects over {MAX_DEPTH} levels deep; no "
            "model API's conversation does. Give the messages as the API sent them."
        )
    wrapped = isinstance(data, dict)
    system = None
    if wrapped:
        if "messages" not in data:
            raise InvalidInput(
                'The conversation must be a list of messages or an object with a "messages" '
                f"list; this object has the keys {sorted(data)[:10]}."
            )
        system = copy.deepcopy(data.get("system"))
        data = data["messages"]
    if not isinstance(data, list):
        raise InvalidInput(
            f"The messages must be a list of message objects, not {type(data).__name__}."
        )
    messages = copy.deepcopy(data)
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise InvalidInput(f"messages[{i}] is a {type(msg).__name__}, not a message object.")
        if not isinstance(msg.get("role"), str):
            raise InvalidInput(f'messages[{i}] has no "role" string.')
    detected, ambiguous = _detect(messages, system)
    if fmt not in ("auto", "openai", "anthropic"):
        raise InvalidInput(f"Unknown format {fmt!r}: use auto, openai or anthropic.")
    chosen: Format = detected if fmt == "auto" else fmt  # type: ignore[assignment]
    conv = Conversation(chosen, messages, system, wrapped, ambiguous and fmt == "auto")
    for i, msg in enumerate(messages):
        (_check_openai if chosen == "openai" else _check_anthropic)(i, msg)
    return conv


def _detect(messages: list[dict[str, Any]], system: Any) -> tuple[Format, bool]:
    for msg in messages:
        if msg["role"] in ("system", "developer", "tool") or "tool_calls" in msg:
            return "openai", False
        content = msg.get("content")
        for block in content if isinstance(content, list) else ():
            kind = block.get("type") if isinstance(block, dict) else None
            if kind in _OPENAI_ONLY:
                return "openai", False
            if kind in _ANTHROPIC_ONLY:
                return "anthropic", False
    if system is not None:  # a top-level system prompt is Anthropic's way
        return "anthropic", False
    return "openai", True


def _where(i: int, msg: dict[str, Any]) -> str:
    return f"messages[{i}] (role {msg['role']!r})"


def _blocks(i: int, msg: dict[str, Any], *, allow_none: bool = False) -> list[Any]:
    content = msg.get("content")
    if isinstance(content, str) or (content is None and allow_none):
        return []
    if not isinstance(content, list):
        raise InvalidInput(
            f"{_where(i, msg)}: content must be a string or a list of content blocks, "
            f"not {type(content).__name__}."
        )
    for j, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise InvalidInput(f'{_where(i, msg)}: content[{j}] is not a block with a "type".')
    return content


def _check_openai(i: int, msg: dict[str, Any]) -> None:
    role = msg["role"]
    if role not in _OPENAI_ROLES:
        raise InvalidInput(
            f"messages[{i}]: role {role!r} is not an OpenAI Chat Completions role "
            f"({', '.join(_OPENAI_ROLES)})."
        )
    _blocks(i, msg, allow_none=role == "assistant")
    if role == "tool" and not isinstance(msg.get("tool_call_id"), str):
        raise InvalidInput(f'{_where(i, msg)}: a tool message needs a "tool_call_id" string.')
    calls = msg.get("tool_calls")
    if calls is None:
        return
    if role != "assistant" or not isinstance(calls, list):
        raise InvalidInput(
            f'{_where(i, msg)}: "tool_calls" must be a list on an assistant message.'
        )
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("id"), str)
            or not isinstance(fn, dict)
            or not isinstance(fn.get("name"), str)
        ):
            raise InvalidInput(
                f'{_where(i, msg)}: tool_calls[{j}] needs an "id" and a "function" with a "name".'
            )


def _check_anthropic(i: int, msg: dict[str, Any]) -> None:
    role = msg["role"]
    if role not in _ANTHROPIC_ROLES:
        hint = ' (the system prompt goes in a top-level "system")' if role == "system" else ""
        raise InvalidInput(
            f"messages[{i}]: role {role!r} is not an Anthropic Messages role (user, "
            f"assistant){hint}."
        )
    for j, block in enumerate(_blocks(i, msg)):
        kind = block["type"]
        if kind == "tool_use" and (
            role != "assistant"
            or not isinstance(block.get("id"), str)
            or not isinstance(block.get("name"), str)
        ):
            raise InvalidInput(
                f'{_where(i, msg)}: content[{j}] tool_use needs an "id" and a "name", '
                "on an assistant message."
            )
        if kind == "tool_result" and (
            role != "user" or not isinstance(block.get("tool_use_id"), str)
        ):
            raise InvalidInput(
                f'{_where(i, msg)}: content[{j}] tool_result needs a "tool_use_id", '
                "on a user message."
            )
        if kind == "tool_result" and not isinstance(block.get("content", ""), str | list):
            raise InvalidInput(
                f"{_where(i, msg)}: content[{j}] tool_result content must be a string or a list."
            )


# --------------------------------------------------------------------------- reading


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests lists and objects more than `limit` levels (a loop, not
    recursion: any depth is safe to measure)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _arguments(raw: Any) -> Any:
    """A call's arguments, parsed when they are JSON text (kept as text when they are
    not, or nest too deep to walk)."""
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except (ValueError, RecursionError):
            return raw
        return raw if too_deep(parsed) else parsed
    return raw


def calls_by_id(conv: Conversation) -> dict[str, Call]:
    """Every tool call the assistant made, by id."""
    calls: dict[str, Call] = {}
    for i, msg in enumerate(conv.messages):
        if msg["role"] != "assistant":
            continue
        if conv.format == "openai":
            for c in msg.get("tool_calls") or ():
                fn = c["function"]
                calls[c["id"]] = Call(c["id"], fn["name"], _arguments(fn.get("arguments")), i)
        else:
            for b in _content_list(msg):
                if b.get("type") == "tool_use":
                    calls[b["id"]] = Call(b["id"], b["name"], b.get("input"), i)
    return calls


def _content_list(msg: dict[str, Any]) -> list[dict[str, Any]]:
    content = msg.get("content")
    return content if isinstance(content, list) else []


def is_human(conv: Conversation, msg: dict[str, Any]) -> bool:
    """A turn a person wrote: a user message with something besides tool results."""
    if msg["role"] != "user":
        return False
    content = msg.get("content")
    if not isinstance(content, list):
        return True
    return not content or any(b.get("type") != "tool_result" for b in content)


def parts_of(conv: Conversation) -> Iterator[Part]:
    """Tool outputs, images (outside tool outputs) and user texts, in message order."""
    for i, msg in enumerate(conv.messages):
        role = msg["role"]
        content = msg.get("content")
        if role == "tool":
            yield Part(i, None, "tool_output", msg["tool_call_id"])
            continue
        if role != "user":
            continue
        if isinstance(content, str):
            yield Part(i, None, "user_text")
            continue
        for j, block in enumerate(_content_list(msg)):
            kind = block.get("type")
            if kind == "tool_result":
                yield Part(i, j, "tool_output", block["tool_use_id"])
            elif kind in IMAGE_TYPES:
                yield Part(i, j, "image")
            elif kind == "text" and isinstance(block.get("text"), str):
                yield Part(i, j, "user_text")
