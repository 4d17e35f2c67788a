"""A generated agent transcript in both APIs' formats, for the compact tests.

Imported as `compaction.transcripts` (tests/ is on the path). Episodes of: the user
asks; the assistant calls read_file / grep / exec_cmd (big outputs), answers; early on
it loads a skill and writes a todo list, later updates it. Every user message, output
and answer holds a unique marker (USER-k, OUT-k-j, ANSWER-k) tests can look for.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

SYSTEM = "You are a careful coding agent. SYSTEM-PROMPT-MARKER"
SKILL_TEXT = "SKILL-OUTPUT: always run the tests before you commit.\n" * 20
FIRST_TODOS = [
    {"id": "1", "content": "Read the modules", "status": "in_progress", "priority": "high"},
    {"id": "2", "content": "Fix the parser", "status": "pending", "priority": "medium"},
]
LAST_TODOS = [
    {"id": "1", "content": "Read the modules", "status": "completed", "priority": "high"},
    {"id": "2", "content": "Fix the parser", "status": "completed", "priority": "medium"},
    {"id": "3", "content": "FINAL-TODO write the release notes", "status": "in_progress",
     "priority": "low"},
]  # fmt: skip


@dataclass
class Call:
    id: str
    name: str
    args: dict[str, Any]
    output: str


@dataclass
class Turn:
    role: str  # "user" | "assistant"
    text: str
    calls: list[Call] = field(default_factory=list)


def _big_output(marker: str, rng: random.Random, lines: int) -> str:
    words = ["alpha", "beta", "gamma", "delta", "parser", "token", "module", "value"]
    body = [f"{marker} line {n}: " + " ".join(rng.choices(words, k=8)) for n in range(lines)]
    return "\n".join(body)


def turns(episodes: int = 33, output_lines: int = 40, seed: int = 7) -> list[Turn]:
    """The neutral transcript: ~6 messages an episode in either format."""
    rng = random.Random(seed)
    out: list[Turn] = []
    n = 0

    def call(name: str, args: dict[str, Any], output: str) -> Call:
        nonlocal n
        n += 1
        return Call(f"call_{n:04d}", name, args, output)

    for k in range(episodes):
        out.append(Turn("user", f"USER-{k}: please look at src/mod_{k}.py and fix what is wrong."))
        if k == 1:
            first = call("skill", {"skill": "testing"}, SKILL_TEXT)
        elif k == 2:
            first = call("todo_write", {"todos": FIRST_TODOS}, json.dumps({"count": 2}))
        elif k == episodes - 3:
            first = call("todo_write", {"todos": LAST_TODOS}, json.dumps({"count": 3}))
        else:
            first = call(
                "read_file",
                {"path": f"src/mod_{k}.py"},
                _big_output(f"OUT-{k}-0", rng, output_lines),
            )
        out.append(Turn("assistant", f"Looking at module {k}.", [first]))
        second_name = ("grep", "exec_cmd")[k % 2]
        second_args = (
            {"pattern": f"def f{k}", "path": "src"}
            if k % 2 == 0
            else {"command": f"pytest -k t{k}"}
        )
        second = call(second_name, second_args, _big_output(f"OUT-{k}-1", rng, output_lines))
        out.append(Turn("assistant", "", [second]))
        out.append(Turn("assistant", f"ANSWER-{k}: module {k} is fixed."))
    out.append(Turn("user", "USER-final: now write the release notes."))
    return out


def openai_messages(ts: list[Turn]) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for t in ts:
        if t.role == "user":
            msgs.append({"role": "user", "content": t.text})
            continue
        msg: dict[str, Any] = {"role": "assistant", "content": t.text or None}
        if t.calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(c.args)}}
                for c in t.calls
            ]  # fmt: skip
        msgs.append(msg)
        for c in t.calls:
            msgs.append({"role": "tool", "tool_call_id": c.id, "content": c.output})
    return msgs


def anthropic_conversation(ts: list[Turn]) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = []
    for t in ts:
        if t.role == "user":
            msgs.append({"role": "user", "content": t.text})
            continue
        blocks: list[dict[str, Any]] = [{"type": "text", "text": t.text}] if t.text else []
        blocks += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.args} for c in t.calls
        ]
        msgs.append({"role": "assistant", "content": blocks})
        if t.calls:
            msgs.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": c.id, "content": c.output}
                        for c in t.calls
                    ],
                }
            )
    return {"system": SYSTEM, "messages": msgs}


def all_calls(ts: list[Turn]) -> list[Call]:
    return [c for t in ts for c in t.calls]


def user_texts(ts: list[Turn]) -> list[str]:
    return [t.text for t in ts if t.role == "user"]


# --------------------------------------------------------------------------- checks


def _force(value: Any) -> Any:
    """Walk a validated value: pydantic validates Iterable fields (most of the SDKs'
    message params) lazily, item by item as they are iterated."""
    if isinstance(value, dict):
        return {k: _force(v) for k, v in value.items()}
    if isinstance(value, list | tuple | Iterator):
        return [_force(v) for v in value]
    return value


_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _adapter(api: str) -> TypeAdapter[Any]:
    """Kept alive: the lazy validators it hands out refer to its definitions."""
    if api not in _ADAPTERS:
        from anthropic.types import MessageParam
        from openai.types.chat import ChatCompletionMessageParam

        _ADAPTERS["openai"] = TypeAdapter(list[ChatCompletionMessageParam])
        _ADAPTERS["anthropic"] = TypeAdapter(list[MessageParam])
    return _ADAPTERS[api]


def check_openai(messages: list[dict[str, Any]]) -> None:
    """The messages are valid Chat Completions params, and every tool call is answered
    right after its assistant message, and every tool message answers one."""
    _force(_adapter("openai").validate_python(messages))
    open_ids: set[str] = set()
    for i, msg in enumerate(messages):
        if msg["role"] == "tool":
            assert msg["tool_call_id"] in open_ids, f"messages[{i}] answers no open call"
            open_ids.discard(msg["tool_call_id"])
            continue
        assert not open_ids, f"calls {open_ids} unanswered before messages[{i}]"
        open_ids = {c["id"] for c in msg.get("tool_calls") or ()}
    assert not open_ids, f"calls {open_ids} unanswered at the end"


def check_anthropic(messages: list[dict[str, Any]]) -> None:
    """Valid Messages params; user first, roles alternating; each tool_use answered in
    the next (user) turn, whose tool_result blocks come first and answer only those."""
    _force(_adapter("anthropic").validate_python(messages))
    assert messages[0]["role"] == "user"
    for i, msg in enumerate(messages):
        if i:
            assert msg["role"] != messages[i - 1]["role"], f"messages[{i}] repeats a role"
        content = msg["content"] if isinstance(msg["content"], list) else []
        results = [b["tool_use_id"] for b in content if b["type"] == "tool_result"]
        kinds = [b["type"] for b in content]
        assert kinds[: len(results)] == ["tool_result"] * len(results), f"messages[{i}] order"
        prev = messages[i - 1]["content"] if i else []
        asked = [b["id"] for b in prev if isinstance(b, dict) and b["type"] == "tool_use"]
        assert sorted(results) == sorted(asked), f"messages[{i}] results {results} != {asked}"
    last = messages[-1]["content"]
    assert not any(isinstance(b, dict) and b["type"] == "tool_use" for b in last or [])


def conversation_text(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, ensure_ascii=False)
