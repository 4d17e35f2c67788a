"""What each call changed: one SQLite file beside the shadow repository.

A checkpoint is a call that changed something: who made it (user, session), which
tool, when, and for each path its entry before and after (blob ids in the shadow
repository). Lines added and removed are counted the first time someone asks.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local_tools.checkpoints.entries import Entry
from local_tools.core.state import private_file

__all__ = ["Change", "Checkpoint", "History", "PathChange"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id TEXT NOT NULL, tool TEXT NOT NULL, user_id TEXT NOT NULL,
    session TEXT, owner TEXT NOT NULL, ts REAL NOT NULL,
    summary TEXT NOT NULL DEFAULT '', skipped TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS changes (
    checkpoint INTEGER NOT NULL REFERENCES checkpoints(id) ON DELETE CASCADE,
    root TEXT NOT NULL, path TEXT NOT NULL,
    before_mode INTEGER NOT NULL, before_sha TEXT NOT NULL,
    after_mode INTEGER NOT NULL, after_sha TEXT NOT NULL,
    added INTEGER, removed INTEGER,
    PRIMARY KEY (checkpoint, root, path)
);
CREATE INDEX IF NOT EXISTS changes_by_path ON changes(root, path, checkpoint);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(frozen=True)
class Change:
    root: str
    path: str  # relative to root, posix
    before: Entry
    after: Entry
    added: int | None = None
    removed: int | None = None

    @property
    def action(self) -> str:
        if not self.before.exists:
            return "created"
        if not self.after.exists:
            return "deleted"
        return "modified"


@dataclass(frozen=True)
class PathChange:
    """One recorded change of a path, with whose call made it (for restore's checks)."""

    checkpoint: int
    owner: str
    root: str
    path: str
    before: Entry
    after: Entry


@dataclass(frozen=True)
class Checkpoint:
    id: int
    call_id: str
    tool: str
    user_id: str
    session: str | None
    owner: str
    ts: float
    summary: str
    skipped: dict[str, str]
    changes: list[Change] = field(default_factory=list)


class History:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            private_file(self.path)
            conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at checkpoints, never torn
            conn.execute("PRAGMA foreign_keys=ON")
            conn.executescript(_SCHEMA)
            self._conn = conn
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def add(
        self,
        *,
        call_id: str,
        tool: str,
        user_id: str,
        session: str | None,
        owner: str,
        summary: str,
        skipped: dict[str, str],
        changes: Sequence[Change],
    ) -> int:
        with self._lock:
            db = self._db()
            with db:
                cur = db.execute(
                    "INSERT INTO checkpoints (call_id, tool, user_id, session, owner, ts, "
                    "summary, skipped) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (call_id, tool, user_id, session, owner, time.time(), summary,
                     json.dumps(skipped)),
                )  # fmt: skip
                cid = int(cur.lastrowid or 0)
                db.executemany(
                    "INSERT INTO changes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (cid, c.root, c.path, c.before.mode, c.before.sha, c.after.mode,
                         c.after.sha, c.added, c.removed)
                        for c in changes
                    ],
                )  # fmt: skip
            return cid

    def recent(
        self,
        *,
        owner: str | None = None,
        limit: int = 50,
        before_id: int | None = None,
        user: str | None = None,
    ) -> list[Checkpoint]:
        """Newest first, with their changes; `owner`/`user` None: everybody's."""
        where, params = _where(owner, before_id, user)
        rows = self._query(
            f"SELECT * FROM checkpoints {where} ORDER BY id DESC LIMIT ?", (*params, limit)
        )
        return self._with_changes(rows)

    def get(self, cid: int, *, user: str | None = None) -> Checkpoint | None:
        """Checkpoint `cid` (None when it is another user's and `user` is given)."""
        where, params = _where(None, None, user)
        where = (where + " AND" if where else "WHERE") + " id = ?"
        rows = self._query(f"SELECT * FROM checkpoints {where}", (*params, cid))
        found = self._with_changes(rows)
        return found[0] if found else None

    def since(self, cid: int, *, owner: str | None, user: str | None = None) -> list[Checkpoint]:
        """Checkpoint `cid` and every later one (of `owner`/`user`, when given), oldest first."""
        where, params = _where(owner, None, user)
        where = (where + " AND" if where else "WHERE") + " id >= ?"
        rows = self._query(f"SELECT * FROM checkpoints {where} ORDER BY id", (*params, cid))
        return self._with_changes(rows)

    def changes_since(self, cid: int) -> list[PathChange]:
        """Every change recorded at or after checkpoint `cid`, anyone's, oldest first:
        restore checks each path's whole story, not only its last change."""
        rows = self._query(
            "SELECT c.checkpoint, k.owner, c.root, c.path, c.before_mode, c.before_sha, "
            "c.after_mode, c.after_sha FROM changes c JOIN checkpoints k ON k.id = c.checkpoint "
            "WHERE c.checkpoint >= ? ORDER BY c.checkpoint",
            (cid,),
        )
        return [
            PathChange(int(r[0]), str(r[1]), str(r[2]), str(r[3]), Entry(int(r[4]), str(r[5])),
                       Entry(int(r[6]), str(r[7])))
            for r in rows
        ]  # fmt: skip

    def last_change(self, root: str, path: str) -> tuple[int, str, Entry] | None:
        """The newest recorded change of a path: (checkpoint id, owner, entry after it)."""
        rows = self._query(
            "SELECT c.checkpoint, k.owner, c.after_mode, c.after_sha FROM changes c "
            "JOIN checkpoints k ON k.id = c.checkpoint WHERE c.root = ? AND c.path = ? "
            "ORDER BY c.checkpoint DESC LIMIT 1",
            (root, path),
        )
        if not rows:
            return None
        row = rows[0]
        return int(row[0]), str(row[1]), Entry(int(row[2]), str(row[3]))

    def set_counts(self, counts: Iterable[tuple[int, str, str, int, int]]) -> None:
        """Remember (checkpoint, root, path, added, removed) once counted."""
        with self._lock:
            db = self._db()
            with db:
                db.executemany(
                    "UPDATE changes SET added = ?, removed = ? "
                    "WHERE checkpoint = ? AND root = ? AND path = ?",
                    [(a, r, cid, root, path) for cid, root, path, a, r in counts],
                )

    def forget_before(self, ts: float) -> int:
        with self._lock:
            db = self._db()
            with db:
                return db.execute("DELETE FROM checkpoints WHERE ts < ?", (ts,)).rowcount

    def forget_oldest(self, fraction: float) -> int:
        with self._lock:
            db = self._db()
            with db:
                total = db.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
                n = max(1, int(total * fraction)) if total else 0
                return db.execute(
                    "DELETE FROM checkpoints WHERE id IN "
                    "(SELECT id FROM checkpoints ORDER BY id LIMIT ?)",
                    (n,),
                ).rowcount

    def blobs(self) -> set[str]:
        rows = self._query("SELECT before_sha, after_sha FROM changes", ())
        return {sha for row in rows for sha in row if sha}

    def count(self) -> int:
        return int(self._query("SELECT COUNT(*) FROM checkpoints", ())[0][0])

    def meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            db = self._db()
            with db:
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # ------------------------------------------------------------------ helpers

    def _query(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        with self._lock:
            return list(self._db().execute(sql, params).fetchall())

    def _with_changes(self, rows: list[Any]) -> list[Checkpoint]:
        if not rows:
            return []
        ids = [int(r[0]) for r in rows]
        marks = ",".join("?" * len(ids))
        found: dict[int, list[Change]] = {i: [] for i in ids}
        for r in self._query(
            f"SELECT * FROM changes WHERE checkpoint IN ({marks}) ORDER BY root, path", tuple(ids)
        ):
            found[int(r[0])].append(
                Change(r[1], r[2], Entry(int(r[3]), r[4]), Entry(int(r[5]), r[6]), r[7], r[8])
            )
        return [
            Checkpoint(int(r[0]), r[1], r[2], r[3], r[4], r[5], float(r[6]), r[7],
                       json.loads(r[8] or "{}"), found[int(r[0])])
            for r in rows
        ]  # fmt: skip


def _where(
    owner: str | None, before_id: int | None, user: str | None = None
) -> tuple[str, tuple[Any, ...]]:
    clauses: list[str] = []
    params: list[Any] = []
    if user is not None:
        clauses.append("user_id = ?")
        params.append(user)
    if owner is not None:
        clauses.append("owner = ?")
        params.append(owner)
    if before_id is not None:
        clauses.append("id < ?")
        params.append(before_id)
    return ("WHERE " + " AND ".join(clauses) if clauses else ""), tuple(params)
