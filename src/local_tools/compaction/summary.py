"""Compaction with a model: the older part of the conversation becomes one handoff note.

The older part is everything before the newest user message (or, when that leaves
nothing worth summarizing, before the newest tool outputs kept whole). The users'
messages in it are kept verbatim; the rest (assistant turns, tool calls and their
results) is replaced by the note, so no call loses its result and no result its call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from local_tools.compaction.formats import Conversation, calls_by_id, is_human
from local_tools.compaction.handoff import (
    SYSTEM_PROMPT,
    files_touched,
    last_todos,
    render_files,
    render_todos,
    transcript,
)
from local_tools.compaction.prune import Pruner, is_kept_tool, text_of
from local_tools.compaction.tokens import count_text, message_tokens

__all__ = ["Summarizer", "summarize"]

MIN_SUMMARY_TOKENS = 100  # below this a note says too little to be worth a model call
_SYSTEM_ROLES = ("system", "developer")


@dataclass(frozen=True)
class Summarizer:
    """The configured model, as the engine sees it: (system, prompt, max_tokens) -> text."""

    name: str
    complete: Callable[[str, str, int], Awaitable[str]]
    max_input_tokens: int
    max_output_tokens: int


@dataclass
class _Plan:
    cut: int  # messages[cut:] stay as they are
    summarized: list[int]  # what the note replaces
    kept_users: list[int]  # users' messages before `cut`, kept
    kept_system: list[int]


def _plan(conv: Conversation, cut: int) -> _Plan:
    summarized, users, system = [], [], []
    for i in range(cut):
        msg = conv.messages[i]
        if msg["role"] in _SYSTEM_ROLES:
            system.append(i)
        elif is_human(conv, msg):
            users.append(i)
            if _tool_results(msg):  # the results in it go with their (summarized) calls
                summarized.append(i)
        else:
            summarized.append(i)
    return _Plan(cut, summarized, users, system)


def _tool_results(msg: dict[str, Any]) -> bool:
    content = msg.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


def _cuts(conv: Conversation, keep_recent: int) -> list[int]:
    """Where the kept tail may start, best first: the newest user message, then the
    assistant turn that made the oldest of the newest tool outputs kept whole."""
    msgs = conv.messages
    humans = [i for i, m in enumerate(msgs) if is_human(conv, m)]
    cuts: list[int] = []
    if humans:
        cut = humans[-1]
        # An Anthropic user turn may carry the results of the turn before it: keep both.
        if _tool_results(msgs[cut]) and cut > 0:
            cut -= 1
        cuts.append(cut)
    assistants = [i for i, m in enumerate(msgs) if m["role"] == "assistant"]
    calling = [i for i in assistants if _makes_calls(msgs[i])]
    recent = calling[-keep_recent:] if keep_recent else []
    later = recent[0] if recent else (assistants[-1] if assistants else 0)
    if not cuts or later > cuts[0]:
        cuts.append(later)
    return cuts


def _makes_calls(msg: dict[str, Any]) -> bool:
    if msg.get("tool_calls"):
        return True
    content = msg.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_use" for b in content)


def _kept_tokens(pruner: Pruner, plan: _Plan) -> int:
    dropped = sum(pruner.tokens[i] for i in plan.summarized if i not in plan.kept_users)
    return pruner.total - dropped


async def summarize(pruner: Pruner, summarizer: Summarizer, keep_recent: int) -> str | None:
    """Replace the older part by a model's handoff note (in `pruner.conv`); returns a
    note when it did not (nothing to summarize, or no room for a summary)."""
    conv = pruner.conv
    plans = [p for p in (_plan(conv, c) for c in _cuts(conv, keep_recent)) if p.summarized]
    if not plans:
        return "There is nothing before the newest messages to summarize."
    # The first cut whose kept part leaves room for a summary; else the one leaving most.
    plan = next(
        (p for p in plans if _kept_tokens(pruner, p) + MIN_SUMMARY_TOKENS <= pruner.budget),
        min(plans, key=lambda p: _kept_tokens(pruner, p)),
    )
    calls = calls_by_id(conv)
    ordered = sorted(calls.values(), key=lambda c: c.index)
    older_calls = [c for c in ordered if c.index < plan.cut]
    extra = "\n\n".join(
        s
        for s in (
            render_files(files_touched(older_calls)),
            render_todos(last_todos(ordered)),
            _skills(conv, plan, calls),
        )
        if s
    )
    room = pruner.budget - _kept_tokens(pruner, plan) - count_text(extra, pruner.encoding) - 50
    if room < MIN_SUMMARY_TOKENS:
        return (
            f"No room for a summary: what must stay whole takes "
            f"{_kept_tokens(pruner, plan):,} tokens of the {pruner.budget:,} budget."
        )
    shown = sorted([*plan.summarized, *plan.kept_users])
    text = transcript(conv, shown, calls)
    limit = summarizer.max_input_tokens - 2000
    if count_text(text, pruner.encoding) > limit > 0:
        keep = len(text) * limit // count_text(text, pruner.encoding)
        text = f"[... the oldest part left out ...]\n{text[len(text) - keep :]}"
    prompt = (
        f"Here are messages {shown[0]}-{shown[-1]} of the conversation (long tool outputs "
        f"shortened):\n\n{text}\n\nWrite the handoff note now."
    )
    reply = await summarizer.complete(
        SYSTEM_PROMPT, prompt, min(summarizer.max_output_tokens, room)
    )
    _splice(pruner, plan, reply.strip(), extra)
    return None


def _skills(conv: Conversation, plan: _Plan, calls: dict[str, Any]) -> str:
    """The newest output of each skill loaded in the summarized part, verbatim (skills
    are instructions still being followed)."""
    found: dict[str, str] = {}
    for i in plan.summarized:
        msg = conv.messages[i]
        results = [msg] if msg["role"] == "tool" else []
        content = msg.get("content")
        if msg["role"] == "user" and isinstance(content, list):
            results = [b for b in content if b.get("type") == "tool_result"]
        for r in results:
            call = calls.get(r.get("tool_call_id") or r.get("tool_use_id") or "")
            if (
                call is not None
                and is_kept_tool(call.name)
                and call.name.lower().startswith("skill")
            ):
                name = json.dumps(call.arguments, ensure_ascii=False)
                found[name] = text_of(r.get("content", ""))
    if not found:
        return ""
    parts = ["## Skills loaded earlier (their output, verbatim)"]
    parts += [f"### skill {name}\n{text}" for name, text in found.items()]
    return "\n\n".join(parts)


def _splice(pruner: Pruner, plan: _Plan, note: str, extra: str) -> None:
    conv = pruner.conv
    msgs = conv.messages
    count = len(plan.summarized)
    text = f"[summary of {count} earlier messages by compact]\n\n{note}"
    if extra:
        text += f"\n\n{extra}"
    lines = "\n".join(json.dumps(msgs[i], ensure_ascii=False) for i in plan.summarized)
    saved = pruner.spill.save(
        f"messages {plan.summarized[0]}-{plan.summarized[-1]}, as JSON", lines
    )
    pruner.dropped.append(
        {
            "index": plan.summarized[0],
            "last_index": plan.summarized[-1],
            "count": count,
            "role": "assistant",
            "kind": "summarized",
            "tokens": sum(pruner.tokens[i] for i in plan.summarized),
            "restore": saved.read_hint() if saved else "not saved (the spill folder is full)",
        }
    )
    anthropic = conv.format == "anthropic" or conv.ambiguous
    summary: dict[str, Any] = {"role": "user", "content": text}
    if conv.format == "anthropic":
        summary["content"] = [{"type": "text", "text": text}]
    users = [_without_results(msgs[i]) for i in plan.kept_users]
    head = [msgs[i] for i in plan.kept_system] + [summary, *users]
    tail = msgs[plan.cut :]
    if anthropic:
        # Anthropic wants user and assistant turns to alternate: one user turn of the
        # note, the users' messages and the newest user message (the tail's first).
        if tail and tail[0]["role"] == "user" and is_human(conv, tail[0]):
            head, tail = [*head, tail[0]], tail[1:]
        head = _merged(head, conv.format == "anthropic")
    conv.messages = [*head, *tail]
    pruner.tokens = [message_tokens(m, pruner.encoding) for m in conv.messages]


def _without_results(msg: dict[str, Any]) -> dict[str, Any]:
    content = msg.get("content")
    if isinstance(content, list) and _tool_results(msg):
        return {**msg, "content": [b for b in content if b.get("type") != "tool_result"]}
    return msg


def _merged(messages: list[dict[str, Any]], blocks: bool) -> list[dict[str, Any]]:
    """Adjacent turns of the same role as one (contents joined)."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        if out and out[-1]["role"] == msg["role"]:
            prev = out[-1]
            if blocks:
                prev["content"] = [
                    *_as_blocks(prev.get("content")),
                    *_as_blocks(msg.get("content")),
                ]
            else:
                prev["content"] = (
                    f"{_as_text(prev.get('content'))}\n\n{_as_text(msg.get('content'))}"
                )
            continue
        out.append(dict(msg))
    return out


def _as_blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    return [{"type": "text", "text": content or ""}]


def _as_text(content: Any) -> str:
    return text_of(content)
