"""The workspace's pending queue: requests waiting for a person, shared across processes.

One person may drive a workspace through several transports at once (an MCP client, a
web chat over HTTP, the CLI), each its own process. A call that needs an answer and
has no person at its own door adds a request here; the web console (in the `serve
http` process) lists the pending ones and answers them; the asking process polls for
the answer. SQLite in WAL mode, in the workspace's state dir: any process can add and
wait, nothing lives only in one process's memory.

The queue is used only while a console is running for the workspace: the console
beats a heartbeat row every few seconds, and a request is added only when a beat is
fresh (`console_live`). Otherwise nobody would ever answer and the call would hang.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local_tools.core.state import private_file

__all__ = ["CONSOLE_STALE", "PendingItem", "PendingQueue"]

# A console that has not beaten for this long is gone (crashed, closed laptop lid).
CONSOLE_STALE = 10.0
# Answered and withdrawn requests kept for the console's history.
KEEP_DONE = 200

_SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT UNIQUE NOT NULL,
    kind TEXT NOT NULL,
    created REAL NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    answer TEXT,
    answered_by TEXT,
    answered_auth TEXT,
    updated REAL NOT NULL,
    pid INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS requests_status ON requests (status);
CREATE TABLE IF NOT EXISTS consoles (
    id TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    url TEXT NOT NULL,
    beat REAL NOT NULL
);
"""


@dataclass(frozen=True)
class PendingItem:
    id: str
    kind: str  # "permission", "question" or "review"
    created: float
    payload: dict[str, Any]
    status: str  # pending | answered | expired | cancelled
    answer: dict[str, Any] | None
    answered_by: str | None
    updated: float
    # How the one who answered was authenticated ("console-session"); None before.
    answered_auth: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "created": self.created,
            "payload": self.payload,
            "status": self.status,
            "answer": self.answer,
            "answered_by": self.answered_by,
            "answered_auth": self.answered_auth,
            "updated": self.updated,
        }


class PendingQueue:
    """The pending table of one workspace. Thread-safe; cheap until first used."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    # -- the console's side ---------------------------------------------------------

    def beat(self, console_id: str, url: str) -> None:
        """The console is alive; called every few seconds while it runs."""
        self._write(
            "INSERT INTO consoles (id, pid, url, beat) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET beat = excluded.beat, url = excluded.url",
            (console_id, os.getpid(), url, time.time()),
        )

    def console_gone(self, console_id: str) -> None:
        self._write("DELETE FROM consoles WHERE id = ?", (console_id,))

    def pending(self) -> list[PendingItem]:
        """Requests still waiting, oldest first; those of dead processes are dropped."""
        self._expire_orphans()
        return self._items("WHERE status = 'pending' ORDER BY seq")

    def recent(self, limit: int = 50) -> list[PendingItem]:
        """The newest requests whatever their state, newest first (the console's history)."""
        return self._items("ORDER BY seq DESC LIMIT ?", (limit,))

    def answer(
        self, request_id: str, answer: Mapping[str, Any], by: str, auth: str | None = None
    ) -> bool:
        """Answer a pending request (`by` names who, `auth` how they were authenticated);
        False when it is no longer pending (answered elsewhere, timed out, cancelled)."""
        changed = self._write(
            "UPDATE requests SET status = 'answered', answer = ?, answered_by = ?, "
            "answered_auth = ?, updated = ? WHERE id = ? AND status = 'pending'",
            (json.dumps(dict(answer)), by, auth, time.time(), request_id),
        )
        return changed == 1

    def version(self) -> tuple[int, float]:
        """Changes whenever a request is added or changes state (for live updates)."""
        row = self._read("SELECT COALESCE(MAX(seq), 0), COALESCE(MAX(updated), 0) FROM requests")
        return (int(row[0][0]), float(row[0][1])) if row else (0, 0.0)

    # -- the asking side ------------------------------------------------------------

    def console_live(self) -> bool:
        """Whether a console is running for this workspace (someone may answer)."""
        if not self.path.exists():  # no console ever ran here: skip opening a database
            return False
        rows = self._read(
            "SELECT 1 FROM consoles WHERE beat > ? LIMIT 1", (time.time() - CONSOLE_STALE,)
        )
        return bool(rows)

    def submit(self, kind: str, payload: Mapping[str, Any]) -> str:
        request_id = uuid.uuid4().hex[:12]
        now = time.time()
        self._write(
            "INSERT INTO requests (id, kind, created, payload, updated, pid) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (request_id, kind, now, json.dumps(dict(payload)), now, os.getpid()),
        )
        self._prune()
        return request_id

    async def wait(self, request_id: str, timeout: float) -> dict[str, Any] | None:
        """The answer, or None at the timeout (the request is then withdrawn). A
        cancelled wait withdraws the request too, so the console stops showing it."""
        item = await self.wait_item(request_id, timeout)
        return None if item is None else item.answer or {}

    async def wait_item(self, request_id: str, timeout: float) -> PendingItem | None:
        """The answered request (answer, who answered, how authenticated), or None at
        the timeout, as `wait`."""
        deadline = time.monotonic() + timeout
        delay = 0.02
        try:
            while True:
                item = await asyncio.to_thread(self.get, request_id)
                if item is None:
                    return None
                if item.status == "answered":
                    return item
                if item.status != "pending":
                    return None
                if time.monotonic() >= deadline:
                    self.withdraw(request_id, "expired")
                    # An answer may have landed between the read and the withdrawal.
                    final = self.get(request_id)
                    return final if final and final.status == "answered" else None
                await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
                delay = min(delay * 1.5, 0.25)
        except asyncio.CancelledError:
            self.withdraw(request_id, "cancelled")
            raise

    def withdraw(self, request_id: str, status: str) -> None:
        self._write(
            "UPDATE requests SET status = ?, updated = ? WHERE id = ? AND status = 'pending'",
            (status, time.time(), request_id),
        )

    def get(self, request_id: str) -> PendingItem | None:
        items = self._items("WHERE id = ?", (request_id,))
        return items[0] if items else None

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- storage --------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            # 0600 before SQLite creates it 0644 (its -wal and -shm copy the mode).
            private_file(self.path)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA busy_timeout = 5000")
            db.execute("PRAGMA journal_mode = WAL")
            db.executescript(_SCHEMA)
            _add_missing_columns(db)
            self._db = db
        return self._db

    def _write(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        with self._lock:
            return self._conn().execute(sql, params).rowcount

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn().execute(sql, params).fetchall()

    def _items(self, where: str, params: tuple[Any, ...] = ()) -> list[PendingItem]:
        rows = self._read(
            "SELECT id, kind, created, payload, status, answer, answered_by, updated, "
            f"answered_auth FROM requests {where}",
            params,
        )
        return [
            PendingItem(
                id=r[0],
                kind=r[1],
                created=r[2],
                payload=json.loads(r[3]),
                status=r[4],
                answer=json.loads(r[5]) if r[5] else None,
                answered_by=r[6],
                updated=r[7],
                answered_auth=r[8],
            )
            for r in rows
        ]

    def _expire_orphans(self) -> None:
        """A process that died while waiting will never read its answer: withdraw."""
        for request_id, pid in self._read("SELECT id, pid FROM requests WHERE status = 'pending'"):
            if not _alive(int(pid)):
                self.withdraw(request_id, "cancelled")

    def _prune(self) -> None:
        self._write(
            "DELETE FROM requests WHERE status != 'pending' AND seq <= "
            "(SELECT COALESCE(MAX(seq), 0) FROM requests) - ?",
            (KEEP_DONE,),
        )


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """A queue made by an older version lacks `answered_auth`: add it (once)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(requests)")}
    if "answered_auth" not in columns:
        try:
            db.execute("ALTER TABLE requests ADD COLUMN answered_auth TEXT")
        except sqlite3.OperationalError as exc:  # another process added it meanwhile
            if "duplicate column" not in str(exc):
                raise


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    import psutil  # here: ~20 ms of a server's start, for an answer rarely needed

    return bool(psutil.pid_exists(pid))
