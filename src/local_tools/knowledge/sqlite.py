"""The knowledge store on SQLite: one database per workspace, in its state folder.

WAL so readers never wait for a writer; every write is one `BEGIN IMMEDIATE`
transaction (the write lock taken up front, so two processes serialise instead of
one failing half-way with SQLITE_BUSY); a busy timeout so the second writer waits
rather than errs; numbered, append-only migrations recorded in `schema_migrations`.
One connection per toolbox, shared by its worker threads under a lock. Search is
FTS5 ranked by bm25 (title 4, tags 2, content 1).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from local_tools.core.errors import StorageError, ToolError
from local_tools.core.state import private_file
from local_tools.knowledge.store import (
    BUSY_TIMEOUT_MS,
    Conn,
    Group,
    KnowledgeStore,
    close_words,
    now_iso,
)

__all__ = ["MIGRATIONS", "SqliteStore", "statements"]

T = TypeVar("T")
_BM25 = "bm25(memories_fts, 4.0, 1.0, 2.0)"

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
    # 2: the indexed words, so a keyword is searched as the exact terms it begins (FTS5
    # reads an exact term's doclist lazily, but merges a prefix query's whole doclists
    # up front: 12 ms for a common word at 100k entries). Written on each save; this
    # copies them once from the index.
    """
    CREATE TABLE memory_terms (term TEXT PRIMARY KEY) WITHOUT ROWID;
    INSERT OR IGNORE INTO memory_terms(term) SELECT term FROM memories_vocab;
    """,
)
# A keyword beginning more indexed words than this is left to FTS5's prefix query.
MAX_EXPANSIONS = 64
_LAST = "\U0010ffff"  # after every term that starts with a given prefix


class SqliteStore(KnowledgeStore):
    """A connection to one workspace's knowledge database."""

    backend = "sqlite"
    errors: tuple[type[Exception], ...] = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        try:
            private_file(self.path)  # 0600 in a 0700 folder, before SQLite makes it 0644
            self._conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                check_same_thread=False,
            )  # fmt: skip
            self._conn.row_factory = sqlite3.Row
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            with contextlib.suppress(OSError):
                os.chmod(self.path, 0o600)
            self._set_up()
        except (sqlite3.Error, OSError) as exc:
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
            except (sqlite3.OperationalError, StorageError) as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
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
                for statement in statements(script):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?)",
                    (version, now_iso()),
                )

    @contextlib.contextmanager
    def write(self) -> Iterator[Conn]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _storage_error(exc) from None
            try:
                yield self._conn
            except BaseException as exc:
                self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise _storage_error(exc) from None
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                raise _storage_error(exc) from None

    def read(self, func: Callable[[Conn], T]) -> T:
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

    # ---------------------------------------------------------------- search

    def words(self, keywords: str) -> list[str]:
        return list(dict.fromkeys(_tokens(keywords)))

    def add_terms(self, conn: Conn, texts: Sequence[str]) -> None:
        terms = {t for text in texts for t in _tokens(text)}
        conn.executemany(
            "INSERT OR IGNORE INTO memory_terms(term) VALUES (?)", [(t,) for t in sorted(terms)]
        )

    def groups(self, conn: Conn, words: Sequence[str]) -> list[Group]:
        out: list[Group] = []
        for word in words:
            terms = [
                r[0]
                for r in conn.execute(
                    "SELECT term FROM memory_terms WHERE term >= ? AND term < ? LIMIT ?",
                    (word, word + _LAST, MAX_EXPANSIONS + 1),
                )
            ]
            if not terms:
                terms = close_words(word, self._spellings(conn, word))
            if terms and len(terms) <= MAX_EXPANSIONS:
                out.append(" OR ".join(_quote(t) for t in terms))
            else:  # a short prefix of many words, or a word our tokens missed
                out.append(_quote(word) + "*")
        return out

    def _spellings(self, conn: Conn, word: str) -> list[str]:
        rows = conn.execute(
            "SELECT term FROM memory_terms WHERE term >= ? AND term < ? AND length(term) "
            "BETWEEN ? AND ?",
            (word[0], word[0] + _LAST, len(word) - 2, len(word) + 2),
        ).fetchall()
        return [r[0] for r in rows]

    def count_upto(self, conn: Conn, group: Group, cap: int) -> int:
        row = conn.execute(
            "SELECT count(*) FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
            "LIMIT ?)",
            (group, cap),
        ).fetchone()
        return int(row[0])

    def search(
        self,
        conn: Conn,
        *,
        rare: Sequence[Group],
        common: Sequence[Group],
        where: str,
        params: Sequence[Any],
        order: str,
        limit: int,
        cap: int,
    ) -> list[Any]:
        parts: list[str] = []
        args: list[Any] = []
        if rare:
            parts.append(
                f"SELECT rowid AS id, 0 AS tier, {_BM25} AS score FROM memories_fts "
                "WHERE memories_fts MATCH ?"
            )
            args.append(" OR ".join(rare))
        if common:
            # FTS5 walks a match newest first and stops at `cap`: bm25 is computed for
            # those rows only, not for every entry holding a common word.
            parts.append(
                f"SELECT * FROM (SELECT memories_fts.rowid AS id, 1 AS tier, {_BM25} AS score "
                "FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
                f"WHERE memories_fts MATCH ? AND {where} "
                "ORDER BY memories_fts.rowid DESC LIMIT ?)"
            )
            args += [" OR ".join(common), *params, cap]
        # min(tier) picks, per entry, the row of its best tier (SQLite's bare columns).
        sql = (
            f"WITH hits AS MATERIALIZED ({' UNION ALL '.join(parts)}) "
            "SELECT m.*, min(h.tier) AS tier, h.score AS score FROM hits h "
            f"JOIN memories m ON m.id = h.id WHERE {where} GROUP BY m.id "
            f"ORDER BY {order}, tier, score, m.id DESC LIMIT ?"
        )
        return conn.execute(sql, [*args, *params, limit]).fetchall()  # type: ignore[no-any-return]


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _tokens(text: str) -> list[str]:
    """`text`'s words as FTS5's unicode61 tokenizer indexes them: runs of letters and
    digits, lower case, diacritics removed."""
    out = []
    for w in re.findall(r"[^\W_]+", text):
        decomposed = unicodedata.normalize("NFKD", w.lower())
        folded = "".join(c for c in decomposed if not unicodedata.combining(c))
        if folded:
            out.append(folded)
    return out


def statements(script: str) -> list[str]:
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


def _storage_error(exc: sqlite3.Error) -> ToolError:
    if "locked" in str(exc) or "busy" in str(exc):
        return StorageError(
            f"The knowledge database is busy (another process held it for over "
            f"{BUSY_TIMEOUT_MS // 1000} s). Nothing was changed; try again shortly."
        )
    return StorageError(f"The knowledge database failed ({exc}). Nothing was changed.")
