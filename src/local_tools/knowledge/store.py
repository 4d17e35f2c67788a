"""One SQLite database per workspace, in the workspace's state folder.

WAL so readers never wait for a writer; every write is one `BEGIN IMMEDIATE`
transaction (the write lock taken up front, so two processes serialise instead of
one failing half-way with SQLITE_BUSY); a busy timeout so the second writer waits
rather than errs; numbered, append-only migrations recorded in `schema_migrations`.
One connection per toolbox, shared by its worker threads under a lock.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from local_tools.core.errors import StorageError
from local_tools.core.state import workspace_state_dir

__all__ = ["KNOWLEDGE_FILE", "KnowledgeStore", "open_store", "store_path"]

KNOWLEDGE_FILE = "knowledge.sqlite"
BUSY_TIMEOUT_MS = 10_000
T = TypeVar("T")

# Append-only: never edit a migration that shipped, add the next one.
MIGRATIONS: tuple[str, ...] = (
    # 1: memory entries with two full-text indexes kept by triggers, key/value notes,
    # project items, their links, and the id counters that make ids never repeat.
    """
    CREATE TABLE memories (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        content TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '',
        scope TEXT NOT NULL,
        session TEXT,
        user_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        promoted_from INTEGER REFERENCES memories(id),
        history TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX memories_kind ON memories(kind);
    CREATE VIRTUAL TABLE memories_fts USING fts5(
        title, content, tags, content='memories', content_rowid='id'
    );
    CREATE VIRTUAL TABLE memories_vocab USING fts5vocab(memories_fts, 'row');
    CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, title, content, tags)
        VALUES (new.id, new.title, new.content, new.tags);
    END;
    CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, title, content, tags)
        VALUES ('delete', old.id, old.title, old.content, old.tags);
    END;
    CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, title, content, tags)
        VALUES ('delete', old.id, old.title, old.content, old.tags);
        INSERT INTO memories_fts(rowid, title, content, tags)
        VALUES (new.id, new.title, new.content, new.tags);
    END;
    CREATE TABLE kv (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        user_id TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE counters (kind TEXT PRIMARY KEY, last INTEGER NOT NULL);
    CREATE TABLE items (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        title TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL,
        priority TEXT NOT NULL DEFAULT 'medium',
        user_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX items_kind ON items(kind);
    CREATE TABLE links (
        src TEXT NOT NULL,
        rel TEXT NOT NULL,
        dst TEXT NOT NULL,
        PRIMARY KEY (src, rel, dst)
    );
    CREATE INDEX links_dst ON links(dst, rel);
    """,
)


def store_path(state_dir: Path, workspace: Path) -> Path:
    """Where `workspace`'s knowledge database lives."""
    ws_state = workspace_state_dir(Path(state_dir), Path(os.path.realpath(workspace)))
    return ws_state / KNOWLEDGE_FILE


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class KnowledgeStore:
    """A connection to one knowledge database, safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                check_same_thread=False,
            )  # fmt: skip
            self._conn.row_factory = sqlite3.Row
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            with contextlib.suppress(OSError):
                os.chmod(self.path, 0o600)
            self._set_up()
        except sqlite3.Error as exc:
            raise StorageError(
                f"Could not open the knowledge database {self.path} ({exc}). "
                "Check that the state folder is writable, then try again."
            ) from None

    def _set_up(self) -> None:
        # Two processes opening a new database at once: switching it to WAL takes an
        # exclusive lock that a busy handler does not always wait for; retry instead.
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA foreign_keys = ON")
                self._migrate()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def _migrate(self) -> None:
        with self.write() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
            for version, script in enumerate(MIGRATIONS, start=1):
                if version in done:
                    continue
                for statement in _statements(script):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?)",
                    (version, now_iso()),
                )

    @property
    def version(self) -> int:
        row = self.read(
            lambda c: c.execute("SELECT max(version) FROM schema_migrations").fetchone()
        )
        return int(row[0] or 0)

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it or none of it, serialised across processes."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _storage_error(exc) from None
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                raise _storage_error(exc) from None

    def read(self, func: Callable[[sqlite3.Connection], T]) -> T:
        """Run `func` on a consistent snapshot (a read transaction)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN")
                try:
                    return func(self._conn)
                finally:
                    self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise _storage_error(exc) from None

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._conn.close()


def open_store(ctx: Any) -> KnowledgeStore:
    """The toolbox's store for the call's workspace (created on first use, closed with
    the toolbox); a bare store when the context has no resources (tests, scripts)."""
    path = store_path(ctx.state_dir, ctx.workspace)
    if ctx.resources is None:
        return KnowledgeStore(path)
    return ctx.resource(f"knowledge:{path}", lambda: KnowledgeStore(path))  # type: ignore[no-any-return]


def _statements(script: str) -> list[str]:
    """Split a migration into statements (`sqlite3.complete_statement` knows triggers)."""
    out: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                out.append(current.strip())
            current = ""
    if current.strip():
        out.append(current.strip())
    return out


def _storage_error(exc: sqlite3.Error) -> StorageError:
    if "locked" in str(exc) or "busy" in str(exc):
        return StorageError(
            f"The knowledge database is busy (another process held it for over "
            f"{BUSY_TIMEOUT_MS // 1000} s). Nothing was changed; try again shortly."
        )
    return StorageError(f"The knowledge database failed ({exc}). Nothing was changed.")
