"""What the web console shows of a workspace, read from its Toolbox's state dir.

The audit log's rows of the workspace (`CallLog`), the pending queue's requests and
history, and the todo lists; `ConsoleState.changes` says what changed since the last
look (the pending queue's version, the newest call id, the todo file's stat), so a
poll loop can push only that. No HTTP here: `transports/web_console.py` serves it.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from typing import TYPE_CHECKING, Any

from local_tools.core.state import private_file
from local_tools.interact.pending import PendingItem
from local_tools.tools._todos import STATUSES, read_todos, todos_file

if TYPE_CHECKING:
    from local_tools.toolbox import Toolbox

__all__ = ["HISTORY", "MAX_ARG_TEXT", "RECENT_CALLS", "CallLog", "ConsoleState"]

_log = logging.getLogger(__name__)

RECENT_CALLS = 200  # calls the page shows
HISTORY = 50  # answered / withdrawn requests the page shows
MAX_ARG_TEXT = 400  # longer string arguments are cut for the page (the log keeps 4 KB)


class CallLog:
    """This workspace's rows of the audit log.

    The audit database is shared by every process with the same state dir, so it
    holds other workspaces' calls too; `AuditLog.query` has no workspace filter, so
    the console reads through a read-only connection of its own.
    """

    def __init__(self, tb: Toolbox) -> None:
        self._audit = tb.audit
        self._workspace = str(tb.workspace)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def recent(self, limit: int = RECENT_CALLS) -> list[dict[str, Any]]:
        """The newest calls of this workspace, newest first."""
        return self._rows("WHERE workspace = ? ORDER BY id DESC LIMIT ?", (self._workspace, limit))

    def newer(self, after: int) -> tuple[int, list[dict[str, Any]]]:
        """(the newest row id of any workspace, this workspace's rows after `after`)."""
        rows = self._select("SELECT COALESCE(MAX(id), 0) FROM calls", ())
        last = int(rows[0][0]) if rows else after
        if last <= after:
            return after, []
        calls = self._rows(
            "WHERE id > ? AND id <= ? AND workspace = ? ORDER BY id DESC LIMIT ?",
            (after, last, self._workspace, RECENT_CALLS),
        )
        return last, calls

    def last_id(self) -> int:
        rows = self._select("SELECT COALESCE(MAX(id), 0) FROM calls", ())
        return int(rows[0][0]) if rows else 0

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _rows(self, where: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        sql = (
            "SELECT id, ts, call_id, user_id, tool, args, outcome, error_code, duration_ms, "
            f"transport FROM calls {where}"
        )
        return [
            {
                "id": r[0],
                "ts": r[1],
                "call_id": r[2],
                "user_id": r[3],
                "tool": r[4],
                "args": _clip(_json_or_text(r[5])),
                "outcome": r[6],
                "error_code": r[7],
                "duration_ms": r[8],
                "transport": r[9],
            }
            for r in self._select(sql, params)
        ]

    def _select(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        if self._audit is None:
            return []
        # Calls of this process wait in the log's buffer for up to half a second.
        self._audit.flush()
        with self._lock:
            try:
                if self._db is None:
                    private_file(self._audit.path)  # not made 0644 by this connect
                    self._db = sqlite3.connect(
                        self._audit.path, timeout=5.0, check_same_thread=False
                    )
                    self._db.execute("PRAGMA query_only = 1")
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:  # no table yet, a locked or replaced file
                _log.debug("console: cannot read the audit log: %s", exc)
                if self._db is not None:
                    self._db.close()
                    self._db = None
                return []


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _clip(value: Any) -> Any:
    if isinstance(value, str):
        if len(value) > MAX_ARG_TEXT:
            return f"{value[:MAX_ARG_TEXT]}… [{len(value)} chars]"
        return value
    if isinstance(value, dict):
        return {str(k): _clip(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip(v) for v in value[:50]] + (
            [f"… [{len(value)} items]"] if len(value) > 50 else []
        )
    return value


class ConsoleState:
    """The console's view of a Toolbox's state dir, and what changed since the last look."""

    def __init__(self, tb: Toolbox) -> None:
        self.tb = tb
        self.calls = CallLog(tb)
        self._version: tuple[int, float] | None = None
        self._last_call = 0
        self._todos_path = todos_file(tb.state_dir, tb.workspace)
        self._todos_seen: tuple[int, int, int] | None = None

    # -- what the page shows

    def pending_state(self) -> dict[str, Any]:
        queue = self.tb.pending
        pending = queue.pending()  # also withdraws the requests of dead processes
        history = [i for i in queue.recent(HISTORY + len(pending)) if i.status != "pending"]
        return {
            "pending": [_item_json(i) for i in pending],
            "history": [_item_json(i) for i in history[:HISTORY]],
        }

    def todos_state(self) -> list[dict[str, Any]]:
        """Each user's todo list, in order, with its counts per status; users whose
        list is empty are left out."""
        lists = read_todos(self.tb.state_dir, self.tb.workspace)
        return [
            {
                "user_id": user,
                "todos": items,
                "counts": {s: sum(t["status"] == s for t in items) for s in STATUSES},
            }
            for user, items in lists.items()
            if items
        ]

    def state(self) -> dict[str, Any]:
        return {
            "workspace": str(self.tb.workspace),
            "audit": self.tb.audit is not None,
            **self.pending_state(),
            "calls": self.calls.recent(),
            "todos": self.todos_state(),
        }

    # -- what changed

    def baseline(self) -> None:
        """Remember the current versions: `changes` reports only what comes after."""
        self._version = self.tb.pending.version()
        self._last_call = self.calls.last_id()
        self._todos_seen = self._todos_stamp()

    def _todos_stamp(self) -> tuple[int, int, int] | None:
        """What changes when the todo file is replaced (writers rename a new file over
        it): a stat per poll, the file itself is read only when this changes."""
        try:
            st = os.stat(self._todos_path)
        except OSError:  # none yet
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def changes(self) -> list[tuple[str, dict[str, Any]]]:
        """(event name, data) for each of `pending`, `calls`, `todos` that changed."""
        changes: list[tuple[str, dict[str, Any]]] = []
        self.tb.pending.pending()  # withdraws requests of dead processes: a new version
        version = self.tb.pending.version()
        if version != self._version:
            self._version = version
            changes.append(("pending", self.pending_state()))
        self._last_call, calls = self.calls.newer(self._last_call)
        if calls:
            changes.append(("calls", {"calls": calls}))
        stamp = self._todos_stamp()
        if stamp != self._todos_seen:
            # Stamped before reading: a write in between is read now and sent again.
            self._todos_seen = stamp
            changes.append(("todos", {"todos": self.todos_state()}))
        return changes

    def close(self) -> None:
        self.calls.close()


def _item_json(item: PendingItem) -> dict[str, Any]:
    # Never cut: the person must see the whole command or question they answer.
    return item.to_json()
