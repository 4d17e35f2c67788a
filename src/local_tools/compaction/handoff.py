"""What a model summary is asked for and what we add to it ourselves: the files the tool
calls touched and the current todo list are computed from the calls, never guessed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from local_tools.compaction.formats import Call, Conversation
from local_tools.compaction.prune import call_text, text_of

__all__ = [
    "SYSTEM_PROMPT",
    "files_touched",
    "last_todos",
    "render_files",
    "render_todos",
    "transcript",
]

SYSTEM_PROMPT = """You compact the history of an AI agent's conversation into a handoff note \
for the agent that continues the work with no other memory of it.

Write Markdown with exactly these sections:
## Goal
What the user wants overall, and the constraints they set.
## Decisions
Choices made and why; facts learned (names, paths, commands, values, errors and their \
fixes). Be concrete.
## Open work
What is unfinished, the next steps, open questions.

Do not list the files touched or the todo list, and do not repeat the user's messages: \
all three are kept beside your note. Be brief: every word costs the next agent context."""

# Argument names that hold a file path, in the tools of local-tools and of other agents.
_PATH_KEYS = ("path", "file_path", "filePath", "filepath", "file", "source", "destination",
              "target", "old_path", "new_path", "notebook_path")  # fmt: skip
_WRITERS = frozenset({"write_file", "edit", "multi_edit", "apply_patch", "file_delete",
                      "file_move", "file_copy", "write", "multiedit", "str_replace_editor",
                      "create", "patch"})  # fmt: skip
_PATCH_FILE = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
MAX_FILES = 100
TRANSCRIPT_BLOCK_CHARS = 4000  # of one message shown to the summarizing model


def _paths(call: Call) -> list[str]:
    args = call.arguments
    if not isinstance(args, dict):
        return []
    found: list[str] = []
    for key in _PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            found.append(value.strip())
    for value in args.get("paths") or ():
        if isinstance(value, str):
            found.append(value)
    patch = args.get("patch") or args.get("input")
    if isinstance(patch, str):
        for line in patch.splitlines():
            if line.startswith(_PATCH_FILE):
                found.append(line.split(": ", 1)[1].strip())
    return found


def files_touched(calls: Sequence[Call]) -> dict[str, list[str]]:
    """path -> the tools that used it, in first-use order."""
    touched: dict[str, list[str]] = {}
    for call in calls:
        for path in _paths(call):
            tools = touched.setdefault(path, [])
            if call.name not in tools:
                tools.append(call.name)
    return touched


def render_files(touched: dict[str, list[str]]) -> str:
    if not touched:
        return ""
    lines = ["## Files touched (from the tool calls' arguments)"]
    for path, tools in list(touched.items())[:MAX_FILES]:
        changed = " (changed)" if any(t.lower() in _WRITERS for t in tools) else ""
        lines.append(f"- {path}: {', '.join(tools)}{changed}")
    if len(touched) > MAX_FILES:
        lines.append(f"- ... and {len(touched) - MAX_FILES} more")
    return "\n".join(lines)


def last_todos(calls: Sequence[Call]) -> list[dict[str, Any]] | None:
    """The list the last todo_write sent (None: no todo_write was called)."""
    for call in reversed(calls):
        if call.name.lower().replace("_", "") == "todowrite" and isinstance(call.arguments, dict):
            todos = call.arguments.get("todos")
            if isinstance(todos, str):
                try:
                    todos = json.loads(todos)
                except ValueError:
                    continue
            if isinstance(todos, list):
                return [t if isinstance(t, dict) else {"content": str(t)} for t in todos]
    return None


_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}


def render_todos(todos: list[dict[str, Any]] | None) -> str:
    if todos is None:
        return ""
    lines = ["## Current todo list (from the last todo_write)"]
    if not todos:
        lines.append("(empty)")
    for t in todos:
        status = str(t.get("status") or "pending")
        lines.append(f"- {_MARKS.get(status, '[?]')} {t.get('content', '')} ({status})")
    return "\n".join(lines)


def _shorten(text: str, limit: int = TRANSCRIPT_BLOCK_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    gap = f"\n[... {len(text) - limit:,} characters left out ...]\n"
    return text[:head] + gap + text[len(text) - (limit - head) :]


def transcript(conv: Conversation, indices: Sequence[int], calls: dict[str, Call]) -> str:
    """The messages at `indices` as plain text for the summarizing model (whichever API
    it speaks: no tool pairing to keep valid)."""
    out: list[str] = []
    for i in indices:
        msg = conv.messages[i]
        role = msg["role"]
        content = msg.get("content")
        if role == "tool":
            call = calls.get(msg.get("tool_call_id") or "")
            out.append(f"### [{i}] result of {call_text(call, msg.get('tool_call_id'))}")
            out.append(_shorten(text_of(content)))
            continue
        out.append(f"### [{i}] {role}")
        blocks = content if isinstance(content, list) else [content]
        for block in blocks:
            if isinstance(block, str):
                out.append(_shorten(block))
            elif isinstance(block, dict):
                out.append(_block_text(block, calls))
        for c in msg.get("tool_calls") or ():
            call = calls.get(c.get("id", ""))
            out.append(f"-> calls {call_text(call, c.get('id'))}")
    return "\n".join(line for line in out if line)


def _block_text(block: dict[str, Any], calls: dict[str, Call]) -> str:
    kind = block.get("type")
    if kind == "tool_use":
        return f"-> calls {call_text(calls.get(block.get('id', '')), block.get('id'))}"
    if kind == "tool_result":
        call = calls.get(block.get("tool_use_id", ""))
        head = f"[result of {call_text(call, block.get('tool_use_id'))}]"
        return f"{head}\n{_shorten(text_of(block.get('content', '')))}"
    if kind in ("thinking", "redacted_thinking"):
        return ""
    return _shorten(text_of([block]))
