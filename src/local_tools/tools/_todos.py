"""The workspace's todo lists, shared by todo_write, todo_read and the web console.

One JSON file in the workspace's state folder (never in the user's tree) holds each
user's list. A writer holds an inter-process lock from reading the file to replacing
it, and replaces it by an atomic rename: two processes writing at once never lose
or corrupt each other's lists, and a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from local_tools.core.errors import StorageError
from local_tools.core.file_lock import locked
from local_tools.core.state import workspace_state_dir, write_state_file
from local_tools.tools._common import iso_time

__all__ = [
    "PRIORITIES",
    "STATUSES",
    "TODOS_FILE",
    "read_todos",
    "replace_todos",
    "todos_file",
    "user_todos",
]

STATUSES = ("pending", "in_progress", "completed", "cancelled")
PRIORITIES = ("high", "medium", "low")
TODOS_FILE = "todos.json"
FORMAT_VERSION = 1
# A writer holds the lock for milliseconds; this long means something is stuck.
LOCK_WAIT = 10.0

log = logging.getLogger(__name__)

Todo = dict[str, Any]


def todos_file(state_dir: Path, workspace: Path) -> Path:
    """Where `workspace`'s todo lists are kept."""
    ws_state = workspace_state_dir(Path(state_dir), Path(os.path.realpath(workspace)))
    return ws_state / TODOS_FILE


def read_todos(state_dir: Path, workspace: Path) -> dict[str, list[Todo]]:
    """Every user's todo list for `workspace`: user id -> items (as todo_read gives them)."""
    users = _load(todos_file(state_dir, workspace))
    return {user: entry["todos"] for user, entry in users.items()}


def user_todos(state_dir: Path, workspace: Path, user_id: str) -> tuple[list[Todo], str | None]:
    """One user's list and when it was last written (None: never)."""
    entry = _load(todos_file(state_dir, workspace)).get(user_id)
    if entry is None:
        return [], None
    return entry["todos"], entry.get("updated_at")


def replace_todos(
    state_dir: Path,
    workspace: Path,
    user_id: str,
    todos: Sequence[Todo],
    *,
    check: Callable[[], None] | None = None,
) -> list[Todo]:
    """Make `todos` the user's whole list and return it as stored.

    An item whose "id" is None gets one: the id of an old item with the same content
    (so resending a list of plain strings keeps its ids), else a new number that was
    never handed out in this list before. `check` is called while waiting for the
    lock (a cancelled call stops waiting).
    """
    path = todos_file(state_dir, workspace)
    with locked(
        path.with_name(TODOS_FILE + ".lock"), what="The todo list", wait=LOCK_WAIT, check=check
    ):
        users = _load(path, keep_bad=True)
        stored, next_id = _with_ids(todos, users.get(user_id, {}))
        users[user_id] = {"todos": stored, "next_id": next_id, "updated_at": iso_time(time.time())}
        payload = {"version": FORMAT_VERSION, "users": users}
        try:
            write_state_file(path, json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
        except OSError as exc:
            raise StorageError(
                f"Could not save the todo list ({exc.strerror or exc}). The list is unchanged; "
                "try again, or carry on and keep the plan in your reply."
            ) from None
    return stored


def _with_ids(todos: Sequence[Todo], previous: dict[str, Any]) -> tuple[list[Todo], int]:
    next_id = previous.get("next_id", 1)
    next_id = next_id if isinstance(next_id, int) and next_id > 0 else 1
    old_ids: dict[str, str] = {}
    for item in previous.get("todos", []):
        old_ids.setdefault(item["content"], item["id"])
    taken = {t["id"] for t in todos if t.get("id") is not None}
    for given in taken:  # numbers a model chose are never handed out again either
        if given.isdigit():
            next_id = max(next_id, int(given) + 1)
    stored: list[Todo] = []
    for todo in todos:
        item = dict(todo)
        if item.get("id") is None:
            reused = old_ids.pop(item["content"], None)
            if reused is None or reused in taken:
                while str(next_id) in taken:
                    next_id += 1
                reused, next_id = str(next_id), next_id + 1
            item["id"] = reused
            taken.add(reused)
        stored.append(item)
    return stored, next_id


def _load(path: Path, *, keep_bad: bool = False) -> dict[str, dict[str, Any]]:
    """The users' entries; an unreadable file counts as empty (and, for a writer about
    to replace it, is kept beside as ``todos.json.corrupt``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable todo file %s: %s", path, exc)
        if keep_bad:
            with contextlib.suppress(OSError):
                os.replace(path, path.with_name(TODOS_FILE + ".corrupt"))
        return {}
    users = data.get("users") if isinstance(data, dict) else None
    if not isinstance(users, dict):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for user, entry in users.items():
        todos = entry.get("todos") if isinstance(entry, dict) else None
        if isinstance(todos, list):
            good = [t for t in todos if isinstance(t, dict) and _is_todo(t)]
            out[str(user)] = {**entry, "todos": good}
    return out


def _is_todo(item: dict[str, Any]) -> bool:
    return (
        isinstance(item.get("id"), str)
        and isinstance(item.get("content"), str)
        and item.get("status") in STATUSES
        and item.get("priority") in PRIORITIES
    )
