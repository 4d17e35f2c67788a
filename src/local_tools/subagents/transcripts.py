"""A task's transcript on disk: what `task_id` resumes.

`<state_dir>/tasks/<sha256(user_id)[:16]>/<task_id>.json`, private (0600 in a 0700
folder), rewritten atomically after every step, so a crash loses at most one step. Only
the user who started a task can read it back: another user's task_id is NOT_FOUND, as
if it did not exist. At most MAX_PER_USER transcripts per user and none older than
MAX_AGE_DAYS are kept (pruned when a new one is made). A transcript is read back
strictly: one damaged on disk is an error saying so and where, never half a task.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local_tools.core.errors import ExecutionError, NotFound
from local_tools.core.state import private_dir, write_state_file
from local_tools.models.types import Message, ToolCall

__all__ = ["MAX_AGE_DAYS", "MAX_PER_USER", "Transcript", "TranscriptStore", "new_task_id"]

MAX_PER_USER = 200
MAX_AGE_DAYS = 30
_TASK_ID = re.compile(r"task_[0-9a-f]{12}")
_ROLES = ("user", "assistant", "tool")
_STATUSES = ("running", "done", "budget", "failed", "killed", "interrupted")
_TOTALS = ("steps", "input_tokens", "output_tokens", "tool_calls")


class Damaged(ValueError):
    """What is wrong with a stored transcript, and where."""


def new_task_id() -> str:
    return "task_" + secrets.token_hex(6)


@dataclass
class Transcript:
    task_id: str
    agent: str
    description: str
    model: str
    workspace: str
    messages: list[Message] = field(default_factory=list)
    # Over the task's whole life (each call's budgets are its own).
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: int = 0
    status: str = "running"  # running, done, budget, failed, killed, interrupted
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)

    def pending_calls(self) -> list[ToolCall]:
        """The calls of the last model turn that have no result yet (the turn was cut
        short: an ask that ends the round, a kill, a crash), in the turn's order."""
        for index in range(len(self.messages) - 1, -1, -1):
            message = self.messages[index]
            if message.role == "assistant":
                answered = {m.tool_call_id for m in self.messages[index + 1 :]}
                return [c for c in message.tool_calls if c.id not in answered]
            if message.role == "user":
                return []
        return []

    def order_results(self) -> None:
        """Put the results after the last model turn in its calls' order (calls of one
        turn finish in any order; both APIs want them as asked)."""
        for index in range(len(self.messages) - 1, -1, -1):
            message = self.messages[index]
            if message.role == "assistant":
                rank = {c.id: n for n, c in enumerate(message.tool_calls)}
                tail = self.messages[index + 1 :]
                tail.sort(key=lambda m: rank.get(m.tool_call_id or "", len(rank)))
                self.messages[index + 1 :] = tail
                return

    def last_text(self) -> str:
        for message in reversed(self.messages):
            if message.role == "assistant" and message.text.strip():
                return message.text
        return ""

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "task_id": self.task_id,
            "agent": self.agent,
            "description": self.description,
            "model": self.model,
            "workspace": self.workspace,
            "messages": [m.to_json() for m in self.messages],
            "totals": {
                "steps": self.steps,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "tool_calls": self.tool_calls,
            },
            "status": self.status,
            "created": self.created,
            "updated": self.updated,
        }

    @classmethod
    def from_json(cls, data: Any) -> Transcript:
        """The transcript `to_json` wrote; Damaged naming the first thing that is not."""
        doc = _object(data, "the file")
        if doc.get("version") != 1:
            raise Damaged(f"version is {doc.get('version')!r}, not 1")
        totals = _object(doc.get("totals"), "totals")
        counts = {key: _count(totals.get(key), f"totals.{key}") for key in _TOTALS}
        messages = doc.get("messages")
        if not isinstance(messages, list):
            raise Damaged("messages is not a list")
        status = doc.get("status")
        if status not in _STATUSES:
            raise Damaged(f"status is {status!r}")
        return cls(
            task_id=_text(doc.get("task_id"), "task_id"),
            agent=_text(doc.get("agent"), "agent"),
            description=_text(doc.get("description"), "description"),
            model=_text(doc.get("model"), "model"),
            workspace=_text(doc.get("workspace"), "workspace"),
            messages=[_message(m, f"messages[{i}]") for i, m in enumerate(messages)],
            status=status,
            created=_number(doc.get("created"), "created"),
            updated=_number(doc.get("updated"), "updated"),
            **counts,
        )


class TranscriptStore:
    """One user's transcripts."""

    def __init__(self, state_dir: Path, user_id: str) -> None:
        digest = hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        self.folder = Path(state_dir) / "tasks" / digest
        # A save cut short by the time budget may still run in its worker thread while the
        # final one starts: one at a time, each writing the transcript as it is then.
        self._lock = threading.Lock()

    def path(self, task_id: str) -> Path:
        return self.folder / f"{task_id}.json"

    def load(self, task_id: str) -> Transcript:
        """The transcript, or NotFound (also for an id that is not one: never a path);
        ExecutionError when the file is there but damaged (saying where)."""
        task_id = task_id.strip()
        missing = NotFound(
            f"No task {task_id!r} to resume (it belongs to another user, was pruned after "
            f"{MAX_AGE_DAYS} days, or never existed). Start a new task without task_id."
        )
        if not _TASK_ID.fullmatch(task_id):
            raise missing
        try:
            text = self.path(task_id).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise missing from None
        except (OSError, UnicodeDecodeError) as exc:
            raise self._damaged(task_id, f"it cannot be read: {exc}") from None
        try:
            transcript = Transcript.from_json(json.loads(text))
        except Damaged as exc:
            raise self._damaged(task_id, str(exc)) from None
        except (ValueError, RecursionError) as exc:
            raise self._damaged(task_id, f"it is not JSON: {exc}") from None
        if transcript.task_id != task_id:
            raise self._damaged(task_id, f"it holds task {transcript.task_id!r}")
        return transcript

    def _damaged(self, task_id: str, why: str) -> ExecutionError:
        return ExecutionError(
            f"Task {task_id!r} cannot be resumed: its transcript file is damaged ({why}). "
            "Start a new task without task_id.",
            details={"task_id": task_id},
        )

    def save(self, transcript: Transcript) -> None:
        with self._lock:
            transcript.updated = time.time()
            text = json.dumps(transcript.to_json(), ensure_ascii=False)
            write_state_file(self.path(transcript.task_id), text)

    def create(self, transcript: Transcript) -> None:
        private_dir(self.folder)
        self.prune(keep=MAX_PER_USER - 1)
        self.save(transcript)

    def prune(self, keep: int = MAX_PER_USER) -> None:
        """Drop transcripts older than MAX_AGE_DAYS, then the oldest past `keep`."""
        try:
            entries = [
                (entry.stat().st_mtime, Path(entry.path))
                for entry in os.scandir(self.folder)
                if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False)
            ]
        except OSError:
            return
        entries.sort(reverse=True)  # newest first
        cutoff = time.time() - MAX_AGE_DAYS * 86400
        for n, (mtime, path) in enumerate(entries):
            if n >= keep or mtime < cutoff:
                with contextlib.suppress(OSError):
                    path.unlink()


# -- reading a stored transcript strictly


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Damaged(f"{where} is a {type(value).__name__}, not an object")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise Damaged(f"{where} is a {type(value).__name__}, not a string")
    return value


def _count(value: Any, where: str) -> int:
    if type(value) is not int or value < 0:
        raise Damaged(f"{where} is {value!r}, not a count")
    return value


def _number(value: Any, where: str) -> float:
    if type(value) not in (int, float):
        raise Damaged(f"{where} is {value!r}, not a time")
    return float(value)


def _message(value: Any, where: str) -> Message:
    data = _object(value, where)
    extra = set(data) - {"role", "text", "tool_calls", "tool_call_id", "is_error"}
    if extra:
        raise Damaged(f"{where} has unknown keys {sorted(extra)}")
    role = data.get("role")
    if role not in _ROLES:
        raise Damaged(f"{where}.role is {role!r}, not one of {', '.join(_ROLES)}")
    calls = data.get("tool_calls")
    if not isinstance(calls, list) or (calls and role != "assistant"):
        raise Damaged(f"{where}.tool_calls is not a list of the assistant's calls")
    call_id = data.get("tool_call_id")
    if (role == "tool") != isinstance(call_id, str) or (role != "tool" and call_id is not None):
        raise Damaged(f"{where}.tool_call_id is {call_id!r} for a {role} message")
    if type(data.get("is_error")) is not bool:
        raise Damaged(f"{where}.is_error is not true or false")
    return Message(
        role=role,
        text=_text(data.get("text"), f"{where}.text"),
        tool_calls=tuple(_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls)),
        tool_call_id=call_id,
        is_error=data["is_error"],
    )


def _call(value: Any, where: str) -> ToolCall:
    data = _object(value, where)
    extra = set(data) - {"id", "name", "arguments", "error"}
    if extra:
        raise Damaged(f"{where} has unknown keys {sorted(extra)}")
    arguments = data.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise Damaged(f"{where}.arguments is a {type(arguments).__name__}, not an object")
    error = data.get("error")
    if error is not None and not isinstance(error, str):
        raise Damaged(f"{where}.error is not a string")
    return ToolCall(
        id=_text(data.get("id"), f"{where}.id"),
        name=_text(data.get("name"), f"{where}.name"),
        arguments=arguments,
        error=error,
    )
