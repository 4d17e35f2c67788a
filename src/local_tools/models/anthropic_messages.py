"""Anthropic Messages (`anthropic.AsyncAnthropic`).

The system prompt is the `system` parameter; `max_tokens` is required; tool results are
`tool_result` blocks in a user turn (consecutive results, and a user text after them,
merged into one turn, as the API wants turns to alternate) with `is_error` passed on.
Streamed replies are assembled from the raw events: text_delta and input_json_delta
pieces per content block, stop reason and output tokens from message_delta.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from local_tools.models.base import BaseClient, max_chars, reply_too_long, tool_call
from local_tools.models.types import Message, Reply, ToolCall, ToolSpec, Usage

__all__ = ["AnthropicMessages", "to_anthropic_messages", "to_anthropic_tools"]

_STOPS = {"tool_use": "tool_calls", "max_tokens": "max_tokens"}
_EMPTY = "(empty)"  # the API refuses an empty text block


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        role = "assistant" if m.role == "assistant" else "user"
        blocks: list[dict[str, Any]]
        if m.role == "tool":
            blocks = [
                {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.text}
            ]
            if m.is_error:
                blocks[0]["is_error"] = True
        elif m.role == "assistant":
            blocks = [{"type": "text", "text": m.text}] if m.text else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments or {}}
                for c in m.tool_calls
            ]
        else:
            blocks = [{"type": "text", "text": m.text or _EMPTY}]
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for turn in out:
        if not turn["content"]:
            turn["content"] = [{"type": "text", "text": _EMPTY}]
    return out


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


@dataclass
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)


@dataclass
class _Stream:
    """The raw events of a streamed reply, put together."""

    limit: int  # characters of all blocks together
    blocks: dict[int, _Block] = field(default_factory=dict)
    stop: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    size: int = 0

    def add(self, event: Any) -> None:
        kind = event.type
        self.size += 1  # every event costs: an endless stream of empty ones too
        if self.size > self.limit:
            raise reply_too_long(self.limit)
        if kind == "message_start":
            usage = event.message.usage
            self.input_tokens = _input_tokens(usage)
            self.output_tokens = usage.output_tokens
        elif kind == "content_block_start":
            block = event.content_block
            self.blocks[event.index] = _Block(
                block.type, getattr(block, "id", ""), getattr(block, "name", "")
            )
            if block.type == "text" and block.text:
                self.blocks[event.index].parts.append(block.text)
        elif kind == "content_block_delta":
            delta, block = event.delta, self.blocks.get(event.index)
            if block is None:
                return
            piece = ""
            if delta.type == "text_delta":
                piece = delta.text or ""
            elif delta.type == "input_json_delta":
                piece = delta.partial_json or ""
            self.size += len(piece)
            if self.size > self.limit:
                raise reply_too_long(self.limit)
            block.parts.append(piece)
        elif kind == "message_delta":
            self.stop = event.delta.stop_reason or self.stop
            if event.usage is not None and event.usage.output_tokens is not None:
                self.output_tokens = event.usage.output_tokens


def _input_tokens(usage: Any) -> int:
    # Cached prompt tokens are input too (they count against the context and the budget).
    return sum(
        getattr(usage, k, None) or 0
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )


class AnthropicMessages(BaseClient):
    api = "anthropic"

    def _make_sdk(self, key: str, base_url: str, http: Any) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(
            api_key=key,
            base_url=base_url,
            max_retries=self.config.max_retries,
            timeout=self.config.timeout,
            http_client=http,
        )

    def _auth_headers(self, key: str) -> dict[str, str]:
        # As this SDK sends an api_key (Bearer); ANTHROPIC_AUTH_TOKEN and custom headers
        # from the environment are dropped by the transport.
        return {"authorization": f"Bearer {key}"}

    def _sdk_module(self) -> ModuleType:
        import anthropic

        return anthropic

    async def _complete(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], max_tokens: int
    ) -> Reply:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": to_anthropic_messages(messages),
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = to_anthropic_tools(tools)
        create = self._sdk.messages.create
        if not self.config.stream:
            response = await create(**body)
            if not isinstance(getattr(response, "content", None), list):
                raise self.malformed("content")
            if getattr(response, "usage", None) is None:
                raise self.malformed("usage")
            text = "".join(b.text for b in response.content if b.type == "text")
            calls = tuple(
                tool_call(b.id, b.name, b.input) for b in response.content if b.type == "tool_use"
            )
            usage = response.usage
            return self._reply(
                body, text, calls, response.stop_reason, _input_tokens(usage), usage.output_tokens
            )
        acc = _Stream(limit=max_chars(max_tokens))
        stream = await create(**body, stream=True)
        async with stream:  # closed on cancel or error: the connection goes with it
            async for event in stream:
                acc.add(event)
        if not acc.stop:
            raise self.cut_short()
        ordered = [acc.blocks[i] for i in sorted(acc.blocks)]
        text = "".join("".join(b.parts) for b in ordered if b.kind == "text")
        calls = tuple(
            tool_call(b.id, b.name, "".join(b.parts)) for b in ordered if b.kind == "tool_use"
        )
        return self._reply(body, text, calls, acc.stop, acc.input_tokens, acc.output_tokens)

    def _reply(
        self,
        body: dict[str, Any],
        text: str,
        calls: tuple[ToolCall, ...],
        stop_reason: str | None,
        input_tokens: int | None,
        output_tokens: int | None,
    ) -> Reply:
        stop = _STOPS.get(stop_reason or "", "end")
        if calls and stop == "end":
            stop = "tool_calls"
        if input_tokens is None or output_tokens is None:
            out = text + "".join(c.name + json.dumps(c.arguments) for c in calls)
            estimated = self.estimate(body, out)
            input_tokens = estimated[0] if input_tokens is None else input_tokens
            output_tokens = estimated[1] if output_tokens is None else output_tokens
        usage = Usage(input_tokens, output_tokens)
        return Reply(text=text, tool_calls=calls, usage=usage, stop=stop)  # type: ignore[arg-type]
