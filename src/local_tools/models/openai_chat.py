"""OpenAI Chat Completions (`openai.AsyncOpenAI`): OpenAI and the servers compatible with
it (Ollama, vLLM, LM Studio, OpenRouter).

The system prompt is the first message; tool results are `tool` messages (a failed one
says so in its text: the API has no error flag). Streamed replies are assembled from the
deltas: tool calls by index, the id and name first, the arguments in pieces.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from local_tools.models.base import BaseClient, max_chars, reply_too_long, tool_call
from local_tools.models.types import Message, Reply, ToolCall, ToolSpec, Usage

__all__ = ["OpenAIChat", "to_openai_messages", "to_openai_tools"]

_STOPS = {"tool_calls": "tool_calls", "function_call": "tool_calls", "length": "max_tokens"}


def to_openai_messages(system: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for m in messages:
        if m.role == "tool":
            text = m.text
            if m.is_error and not text.lower().startswith("error"):
                text = f"Error: {text}"
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": text})
        elif m.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                item["tool_calls"] = [_call_out(c) for c in m.tool_calls]
            out.append(item)
        else:
            out.append({"role": "user", "content": m.text})
    return out


def _call_out(call: ToolCall) -> dict[str, Any]:
    # A call whose arguments were unreadable goes back as {} (its result says why).
    arguments = json.dumps(call.arguments or {}, ensure_ascii=False)
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


@dataclass
class _Pending:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _Stream:
    """The deltas of a streamed reply, put together."""

    limit: int  # characters of text, names and arguments together
    text: list[str] = field(default_factory=list)
    calls: dict[int, _Pending] = field(default_factory=dict)
    finish: str = ""
    usage: Any = None
    size: int = 0

    def add(self, chunk: Any) -> None:
        if getattr(chunk, "usage", None):
            self.usage = chunk.usage
        for choice in chunk.choices or ():
            delta = choice.delta
            if delta is not None:
                self.text.append(self._counted(delta.content))
                for tc in delta.tool_calls or ():
                    pending = self.calls.setdefault(tc.index, _Pending())
                    pending.id = tc.id or pending.id
                    if tc.function is not None:
                        pending.name = tc.function.name or pending.name
                        pending.arguments.append(self._counted(tc.function.arguments))
            self.finish = choice.finish_reason or self.finish

    def _counted(self, piece: str | None) -> str:
        self.size += len(piece or "") + 1  # +1: empty deltas cost too
        if self.size > self.limit:
            raise reply_too_long(self.limit)
        return piece or ""


class OpenAIChat(BaseClient):
    api = "openai"

    def _make_sdk(self, key: str, base_url: str, http: Any) -> Any:
        import openai

        # organization/project: the transport drops what the SDK reads from OPENAI_ORG_ID
        # and OPENAI_PROJECT_ID (a base_url server is not told the user's account).
        return openai.AsyncOpenAI(
            api_key=key,
            base_url=base_url,
            max_retries=self.config.max_retries,
            timeout=self.config.timeout,
            http_client=http,
        )

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    def _sdk_module(self) -> ModuleType:
        import openai

        return openai

    async def _complete(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], max_tokens: int
    ) -> Reply:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(system, messages),
        }
        if tools:
            body["tools"] = to_openai_tools(tools)
        # OpenAI's own API wants max_completion_tokens (its reasoning models refuse
        # max_tokens); the compatible servers know max_tokens.
        body["max_tokens" if self.config.base_url else "max_completion_tokens"] = max_tokens
        create = self._sdk.chat.completions.create
        if not self.config.stream:
            response = await create(**body)
            if not getattr(response, "choices", None):
                raise self.malformed("choices")
            choice = response.choices[0]
            msg = choice.message
            if msg is None:
                raise self.malformed("message")
            calls = tuple(
                tool_call(c.id, c.function.name, c.function.arguments) for c in msg.tool_calls or ()
            )
            return self._reply(body, msg.content or "", calls, choice.finish_reason, response.usage)
        acc = _Stream(limit=max_chars(max_tokens))
        stream = await create(**body, stream=True, stream_options={"include_usage": True})
        async with stream:  # closed on cancel or error: the connection goes with it
            async for chunk in stream:
                acc.add(chunk)
        if not acc.finish:
            raise self.cut_short()
        calls = tuple(
            tool_call(p.id or f"call_{i}", p.name, "".join(p.arguments))
            for i, p in sorted(acc.calls.items())
        )
        return self._reply(body, "".join(acc.text), calls, acc.finish, acc.usage)

    def _reply(
        self, body: dict[str, Any], text: str, calls: tuple[ToolCall, ...], finish: str, usage: Any
    ) -> Reply:
        stop = _STOPS.get(finish or "", "end")
        if calls and stop == "end":  # some servers say "stop" after tool calls
            stop = "tool_calls"
        if usage is not None and usage.prompt_tokens is not None:
            used = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0)
        else:
            out = text + "".join(c.name + json.dumps(c.arguments) for c in calls)
            used = Usage(*self.estimate(body, out))
        return Reply(text=text, tool_calls=calls, usage=used, stop=stop)  # type: ignore[arg-type]
