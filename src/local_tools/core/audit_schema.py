"""The audit log's SQLite schema: the numbered ``MIGRATIONS`` and ``migrate()``.

Migrations are append-only, applied once per database and recorded in the
``_migrations`` table; several processes may open a new database at once.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

__all__ = ["MIGRATIONS", "migrate"]

# Append-only: never edit, renumber or reorder a migration once released; change the
# schema by adding a new (version, sql) at the end. Each runs once per database.
MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE calls (
            id INTEGER PRIMARY KEY,
            ts REAL NOT NULL,
            call_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            tool TEXT NOT NULL,
            args TEXT NOT NULL,
            outcome TEXT NOT NULL,
            error_code TEXT,
            duration_ms REAL NOT NULL,
            workspace TEXT NOT NULL DEFAULT '',
            transport TEXT NOT NULL DEFAULT ''
        );
        -- No secondary indexes: each one multiplies the cost of the insert done on
        -- every call, while queries read the newest rows by rowid and stop at LIMIT.
        """,
    ),
    (
        2,
        """
        -- How a call ended when error_code alone does not say (the runner's words, e.g.
        -- a round ended to wait for the person's answer); NULL for nearly every call.
        ALTER TABLE calls ADD COLUMN note TEXT;
        """,
    ),
]


def _statements(script: str) -> list[str]:
    # executescript() would COMMIT the surrounding transaction; run statements one by one.
    out, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            out.append(pending.strip())
            pending = ""
    if pending.strip() and not pending.strip().startswith("--"):
        raise ValueError(f"incomplete SQL statement in migration: {pending.strip()[:80]!r}")
    return out


def _applied(conn: sqlite3.Connection) -> set[int]:
    try:
        return {row[0] for row in conn.execute("SELECT version FROM _migrations")}
    except sqlite3.OperationalError:  # no such table: a new database
        return set()


def migrate(
    conn: sqlite3.Connection, migrations: Sequence[tuple[int, str]] = MIGRATIONS
) -> list[int]:
    """Apply the migrations this database lacks; return their versions.

    ``conn`` must be in autocommit mode (``isolation_level=None``). All missing
    migrations run in one ``BEGIN IMMEDIATE`` transaction, so two processes opening a
    new database at once cannot both apply them. Versions unknown to this program
    (written by a newer one) are left alone.
    """
    wanted = [v for v, _ in migrations]
    if set(wanted) <= _applied(conn):
        return []
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations "
            "(version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
        )
        done = _applied(conn)  # again, under the write lock: another process may have won
        applied = []
        for version, sql in migrations:
            if version in done:
                continue
            for statement in _statements(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO _migrations VALUES (?, ?)", (version, time.time()))
            applied.append(version)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return applied
