"""A task's transcript on disk: what `task_id` resumes.

`<state_dir>/tasks/<sha256(user_id)[:16]>/<task_id>.json`, private (0600 in a 0700
folder), rewritten atomically after every step, so a crash loses at most one step. Only
the user who started a task can read it back: another user's task_id is NOT_FOUND, as
if it did not exist. At most MAX_PER_USER transcripts per user and none older than
MAX_AGE_DAYS are kept (pruned when a new one is made).
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

from local_tools.core.errors import NotFound
from local_tools.core.state import private_dir, write_state_file
from local_tools.models.types import Message, ToolCall, message_from_json

__all__ = ["MAX_AGE_DAYS", "MAX_PER_USER", "Transcript", "TranscriptStore", "new_task_id"]

MAX_PER_USER = 200
MAX_AGE_DAYS = 30
_TASK_ID = re.compile(r"task_[0-9a-f]{12}")


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
    def from_json(cls, data: dict[str, Any]) -> Transcript:
        totals = data.get("totals") or {}
        return cls(
            task_id=data["task_id"],
            agent=data["agent"],
            description=data.get("description", ""),
            model=data.get("model", ""),
            workspace=data.get("workspace", ""),
            messages=[message_from_json(m) for m in data.get("messages") or ()],
            steps=int(totals.get("steps", 0)),
            input_tokens=int(totals.get("input_tokens", 0)),
            output_tokens=int(totals.get("output_tokens", 0)),
            tool_calls=int(totals.get("tool_calls", 0)),
            status=data.get("status", "done"),
            created=float(data.get("created", 0.0)),
            updated=float(data.get("updated", 0.0)),
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
        """The transcript, or NotFound (also for an id that is not one: never a path)."""
        task_id = task_id.strip()
        missing = NotFound(
            f"No task {task_id!r} to resume (it belongs to another user, was pruned after "
            f"{MAX_AGE_DAYS} days, or never existed). Start a new task without task_id."
        )
        if not _TASK_ID.fullmatch(task_id):
            raise missing
        try:
            data = json.loads(self.path(task_id).read_text(encoding="utf-8"))
            transcript = Transcript.from_json(data)
        except (OSError, ValueError, KeyError, TypeError):
            raise missing from None
        if transcript.task_id != task_id:
            raise missing
        return transcript

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
