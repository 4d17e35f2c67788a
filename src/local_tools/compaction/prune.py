"""Compaction without a model: old tool outputs and images become stubs that say how to
get them back, and, when the user's own messages take over half the budget, the oldest
long ones are cut in the middle. Stops as soon as the conversation fits.

Kept whole: the system prompt, every user message (but for that cut), the newest
`keep_recent` tool outputs, skill outputs and todo lists. Only contents change, never
the messages themselves, so every tool call keeps its result in both APIs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from local_tools.compaction.formats import (
    Call,
    Conversation,
    Part,
    calls_by_id,
    is_human,
    parts_of,
)
from local_tools.compaction.spill import Saved, SpillFile
from local_tools.compaction.tokens import IMAGE_TOKENS, count_text, message_tokens

__all__ = ["Pruner", "call_text", "is_kept_tool", "text_of"]

# Tools whose outputs stay (normalised: lower case, no "_"): skills are instructions the
# model follows (OpenCode keeps them too), todo lists the plan.
KEPT_TOOLS = frozenset({"skill", "skillinvoke", "todowrite", "todoread"})
LONG_USER_TOKENS = 512  # a user message longer than this may be cut in the middle
USER_KEEP_TOKENS = 256  # ... but never below this
MAX_ARGS_SHOWN = 300  # characters of a call's arguments in a stub
STUB_START = "[compact removed this output of "


def is_kept_tool(name: str) -> bool:
    return name.lower().replace("_", "").replace("-", "") in KEPT_TOOLS


def call_text(call: Call | None, call_id: str | None) -> str:
    """`read_file {"path": "a.py"}`: what a stub names so the call can be re-run."""
    if call is None:
        return f"an earlier tool call (id {call_id})"
    args = call.arguments
    shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    if len(shown) > MAX_ARGS_SHOWN:
        shown = shown[:MAX_ARGS_SHOWN] + "...}"
    return f"{call.name} {shown}"


def text_of(content: Any) -> str:
    """The text of a content (a string or blocks); images as a one-line note."""
    if isinstance(content, str):
        return content
    pieces = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            pieces.append(block["text"])
        elif block.get("type") in ("image", "image_url"):
            pieces.append("[image]")
        elif "content" in block:  # a tool_result inside a user turn
            pieces.append(text_of(block["content"]))
    return "\n".join(pieces)


@dataclass
class Pruner:
    conv: Conversation
    budget: int
    encoding: str
    spill: SpillFile
    keep_recent: int
    tokens: list[int] = field(default_factory=list)
    system_tokens: int = 0
    dropped: list[dict[str, Any]] = field(default_factory=list)
    check: Callable[[], None] = lambda: None

    def __post_init__(self) -> None:
        self.tokens = [message_tokens(m, self.encoding) for m in self.conv.messages]
        if self.conv.system is not None:
            self.system_tokens = message_tokens(self.conv.system, self.encoding)
        self.calls = calls_by_id(self.conv)

    @property
    def total(self) -> int:
        return sum(self.tokens) + self.system_tokens

    def fits(self) -> bool:
        return self.total <= self.budget

    def _recount(self, index: int) -> None:
        self.tokens[index] = message_tokens(self.conv.messages[index], self.encoding)

    # ------------------------------------------------------------------ tool outputs

    def run(self) -> None:
        """Stub old outputs and images, oldest first, then cut long user messages."""
        for part in self._candidates():
            if self.fits():
                return
            self.check()
            if part.kind == "tool_output":
                self._stub_output(part)
            else:
                self._stub_image(part)
        if not self.fits():
            self.cut_user_messages()

    def _candidates(self) -> list[Part]:
        parts = list(parts_of(self.conv))
        outputs = [
            p
            for p in parts
            if p.kind == "tool_output" and not is_kept_tool(self._call_name(p.call_id))
        ]
        newest = outputs[len(outputs) - self.keep_recent :] if self.keep_recent else []
        recent = {(p.index, p.block) for p in newest}
        humans = [i for i, m in enumerate(self.conv.messages) if is_human(self.conv, m)]
        last_human = humans[-1] if humans else -1
        return [
            p
            for p in parts
            if (p.kind == "tool_output" and p in outputs and (p.index, p.block) not in recent)
            or (p.kind == "image" and p.index != last_human)
        ]

    def _call_name(self, call_id: str | None) -> str:
        call = self.calls.get(call_id or "")
        return call.name if call is not None else ""

    def _output_holder(self, part: Part) -> dict[str, Any]:
        """The dict whose "content" is the output: the tool message, or the tool_result."""
        msg = self.conv.messages[part.index]
        return msg if part.block is None else msg["content"][part.block]

    def _stub_output(self, part: Part) -> None:
        holder = self._output_holder(part)
        content = holder.get("content", "")
        if isinstance(content, str) and content.startswith(STUB_START):
            return  # compacted before: its text is in an earlier spill file already
        before = self.tokens[part.index]
        text = text_of(content)
        call = self.calls.get(part.call_id or "")
        described = call_text(call, part.call_id)
        saved = self.spill.save(f"[{part.index}] output of {described}", text)
        size = count_text(text, self.encoding) + _images_in(content) * IMAGE_TOKENS
        holder["content"] = _output_stub(described, size, saved)
        self._recount(part.index)
        if self.tokens[part.index] >= before:  # a tiny output: the stub would cost more
            holder["content"] = content
            self._recount(part.index)
            return
        self._drop(part, "tool_output", size, saved, tool=call.name if call else None)

    def _stub_image(self, part: Part) -> None:
        msg = self.conv.messages[part.index]
        block = msg["content"][part.block]
        url = _image_url(block)
        where = f" It was {url}." if url else " Ask the user to send it again if you need it."
        msg["content"][part.block] = {
            "type": "text",
            "text": f"[compact removed an image from this message.{where}]",
        }
        self._recount(part.index)
        self.dropped.append(
            {
                "index": part.index,
                "role": msg["role"],
                "kind": "image",
                "tokens": IMAGE_TOKENS,
                "restore": url or "not saved: ask the user to send it again",
            }
        )

    def _drop(
        self, part: Part, kind: str, tokens: int, saved: Saved | None, tool: str | None = None
    ) -> None:
        entry: dict[str, Any] = {
            "index": part.index,
            "role": self.conv.messages[part.index]["role"],
            "kind": kind,
            "tokens": tokens,
            "restore": saved.read_hint() if saved else "not saved (the spill folder is full)",
        }
        if tool:
            entry["tool"] = tool
        self.dropped.append(entry)

    # ------------------------------------------------------------------ user messages

    def user_tokens(self) -> int:
        return sum(self._user_part_tokens(p) for p in self._user_parts())

    def _user_parts(self) -> list[Part]:
        return [
            p
            for p in parts_of(self.conv)
            if p.kind == "user_text" and is_human(self.conv, self.conv.messages[p.index])
        ]

    def _user_text(self, part: Part) -> str:
        msg = self.conv.messages[part.index]
        if part.block is None:
            return str(msg["content"])
        return str(msg["content"][part.block]["text"])

    def _set_user_text(self, part: Part, text: str) -> None:
        msg = self.conv.messages[part.index]
        if part.block is None:
            msg["content"] = text
        else:
            msg["content"][part.block]["text"] = text

    def _user_part_tokens(self, part: Part) -> int:
        return count_text(self._user_text(part), self.encoding)

    def cut_user_messages(self) -> None:
        """When the users' messages take over half the budget, cut the oldest long ones
        in the middle (the whole text saved), just enough to fit."""
        half = self.budget // 2
        over_half = self.user_tokens() - half
        for part in self._user_parts():
            need = min(over_half, self.total - self.budget)
            if need <= 0:
                return
            self.check()
            size = self._user_part_tokens(part)
            if size <= LONG_USER_TOKENS:
                continue
            target = max(USER_KEEP_TOKENS, size - need)
            text = self._user_text(part)
            saved = self.spill.save(f"[{part.index}] user message, whole", text)
            self._set_user_text(part, _cut_middle(text, size, target, saved, self.encoding))
            self._recount(part.index)
            removed = size - self._user_part_tokens(part)
            over_half -= removed
            self._drop(part, "user_text_cut", removed, saved)


def _output_stub(described: str, tokens: int, saved: Saved | None) -> str:
    if saved is None:
        again = "Run the call again if you need it (it could not be saved)."
    else:
        again = f"Run the call again for a fresh copy, or read the saved one: {saved.read_hint()}"
    return f"{STUB_START}{described} ({tokens:,} tokens). {again}]"


def _cut_middle(text: str, tokens: int, target: int, saved: Saved | None, encoding: str) -> str:
    """`text` cut to about `target` tokens, marker included: head and tail kept."""
    where = f"the whole message: {saved.read_hint()}" if saved else "it could not be saved"
    marker = f"\n[... compact cut {tokens - target:,} tokens from the middle here; {where} ...]\n"
    # Characters in proportion to tokens, less the marker and a margin for that estimate.
    room = max(0, target - count_text(marker, encoding)) * 95 // 100
    keep = len(text) * room // max(tokens, 1)
    head = text[: keep // 2]
    tail = text[len(text) - (keep - keep // 2) :] if keep > 1 else ""
    return head + marker + tail


def _images_in(content: Any) -> int:
    if not isinstance(content, list):
        return 0
    return sum(
        1 for b in content if isinstance(b, dict) and b.get("type") in ("image", "image_url")
    )


def _image_url(block: dict[str, Any]) -> str | None:
    """Where an image came from when that is a URL (data: URLs are not shown)."""
    url = None
    if block.get("type") == "image_url":
        inner = block.get("image_url")
        url = inner.get("url") if isinstance(inner, dict) else inner
    elif isinstance(block.get("source"), dict) and block["source"].get("type") == "url":
        url = block["source"].get("url")
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        return url
    return None
