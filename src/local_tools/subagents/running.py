"""The tasks of one toolbox: which run now (for `[task] max_concurrent`), and which an ask
interrupted (for the retried call to pick up).

A toolbox resource (`ctx.resource(RUNNING_KEY, RunningTasks)`), shared by the task calls
of every thread: foreground tasks on a caller's loop and background ones on their own.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Mapping
from typing import Any

from local_tools.core.errors import Conflict, ExecutionError
from local_tools.subagents.loop import Outcome

__all__ = ["INTERRUPTED_FOR", "RUNNING_KEY", "RunningTasks", "retry_key"]

RUNNING_KEY = "subagents.running"
# How long a task an ask interrupted waits for its call to come back (the MCP client
# re-sends the call once the person answered).
INTERRUPTED_FOR = 600.0


def retry_key(user_id: str, session_id: str | None, args: Mapping[str, Any]) -> str:
    """The same call again: same user, same session, same arguments."""
    text = json.dumps([user_id, session_id, dict(args)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class RunningTasks:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, tuple[str, str]] = {}  # task_id -> (description, owner)
        # retry key -> (task_id, what it had spent, when)
        self._interrupted: dict[str, tuple[str, Outcome, float]] = {}

    def acquire(self, task_id: str, description: str, limit: int, owner: str = "") -> None:
        """Count a task as running (`owner`: whose, ctx.owner); ExecutionError past
        `limit` naming only the owner's own running tasks (the others are counted, not
        shown: their ids and descriptions are other users'), Conflict when this very task
        is running already (in the background, or another call's)."""
        with self._lock:
            if task_id in self._running:
                raise Conflict(
                    f"Task {task_id} is still running. Poll it with process_output "
                    f"(process_id {task_id}) or end it with process_kill, then resume it."
                )
            if len(self._running) >= limit:
                raise ExecutionError(self._full(limit, owner))
            self._running[task_id] = (description, owner)

    def release(self, task_id: str) -> None:
        with self._lock:
            self._running.pop(task_id, None)

    def running(self) -> dict[str, str]:
        with self._lock:
            return {task_id: d for task_id, (d, _) in self._running.items()}

    def interrupted(self, key: str, task_id: str, spent: Outcome) -> None:
        with self._lock:
            self._forget_old()
            self._interrupted[key] = (task_id, spent, time.monotonic())

    def take_interrupted(self, key: str) -> tuple[str, Outcome] | None:
        """The task an ask interrupted for this very call and what it had spent, once."""
        with self._lock:
            self._forget_old()
            entry = self._interrupted.pop(key, None)
        return (entry[0], entry[1]) if entry is not None else None

    def _full(self, limit: int, owner: str) -> str:
        mine = [(t, d) for t, (d, o) in self._running.items() if o == owner]
        others = len(self._running) - len(mine)
        parts = [f"{t} ({d})" for t, d in mine]
        if others:
            parts.append(f"{others} of other sessions or users")
        return (
            f"{len(self._running)} tasks are already running (the limit is {limit}: "
            f"[task] max_concurrent): {'; '.join(parts)}. Wait for one (process_output "
            "block=true for a background task of yours) or end one of yours with "
            "process_kill."
        )

    def _forget_old(self) -> None:
        cutoff = time.monotonic() - INTERRUPTED_FOR
        for key in [k for k, (_, _, when) in self._interrupted.items() if when < cutoff]:
            del self._interrupted[key]
