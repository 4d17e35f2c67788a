"""The audit log's schema: numbered, append-only migrations applied once per database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from local_tools.core.audit_schema import MIGRATIONS, migrate


def test_migrations_are_numbered_and_append_only() -> None:
    versions = [v for v, _ in MIGRATIONS]
    assert versions == list(range(1, len(versions) + 1))


def test_migrate_applies_only_new_migrations(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "m.sqlite", isolation_level=None)
    try:
        assert migrate(conn) == [v for v, _ in MIGRATIONS]
        assert migrate(conn) == []
        nxt = len(MIGRATIONS) + 1
        extended = [*MIGRATIONS, (nxt, "ALTER TABLE calls ADD COLUMN extra TEXT;")]
        assert migrate(conn, extended) == [nxt]
        assert migrate(conn, extended) == []
        columns = [r[1] for r in conn.execute("PRAGMA table_info(calls)")]
        assert "extra" in columns
    finally:
        conn.close()


def test_failed_migration_is_rolled_back(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "m.sqlite", isolation_level=None)
    try:
        migrate(conn)
        nxt = len(MIGRATIONS) + 1
        bad = [*MIGRATIONS, (nxt, "CREATE TABLE t (x);\nTHIS IS NOT SQL;")]
        with pytest.raises(sqlite3.OperationalError):
            migrate(conn, bad)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "t" not in tables
        assert nxt not in {r[0] for r in conn.execute("SELECT version FROM _migrations")}
    finally:
        conn.close()


def test_a_version_1_database_gains_the_note_column(tmp_path: Path) -> None:
    """A log written before notes existed keeps its rows; they read back with no note."""
    path = tmp_path / "audit.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        migrate(conn, MIGRATIONS[:1])
        conn.execute(
            "INSERT INTO calls (ts, call_id, user_id, tool, args, outcome, error_code, "
            "duration_ms) VALUES (1.0, 'old', 'alice', 'grep', '{}', 'success', NULL, 2.0)"
        )
    finally:
        conn.close()
    from local_tools.core.audit import AuditLog

    with AuditLog(path, flush_interval=0) as log:
        (old,) = log.query()
    assert old.call_id == "old" and old.note is None
