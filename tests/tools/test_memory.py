"""Memory tools: save/query/promote and the key/value `memory` tool, on a real SQLite file
and on a real PostgreSQL server (every test runs on both: knowledge_backends.py)."""

# ruff: noqa: F811 - the fixtures imported from knowledge_backends are used by name
from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from knowledge_backends import (  # noqa: F401 - fixtures, by name
    backend,
    knowledge_config,
    make_toolbox,
    open_store_for,
    pg_schemas,
    pg_server,
    run_writers,
    tb,
)
from local_tools import Toolbox
from local_tools.knowledge import memory, store_path
from local_tools.knowledge.memory import query
from local_tools.knowledge.postgres import MIGRATIONS as PG_MIGRATIONS
from local_tools.knowledge.sqlite import MIGRATIONS as SQLITE_MIGRATIONS
from local_tools.knowledge.sqlite import statements
from local_tools.knowledge.transfer import export
from transports.test_output_schemas import structured

SQL = "Robert'); DROP TABLE memories;-- \" OR 1=1 --"


def test_save_query_and_promote(tb: Toolbox) -> None:
    saved = ok(
        tb.run(
            "save_memory",
            {
                "kind": "insight",
                "title": "Authentication",
                "content": "Tokens expire after an hour; refresh them before long jobs.",
                "tags": ["auth", "tokens"],
            },
        )
    )
    assert saved["id"] == 1 and saved["entry"]["kind"] == "insight"
    assert saved["entry"]["user_id"] and saved["entry"]["tool"] == "save_memory"
    ok(tb.run("save_issue", {"content": "The database migrations are slow on CI."}))
    ok(tb.run("save_learning", {"content": "Unrelated note about fonts."}))

    found = ok(tb.run("query_memory", {"keywords": "authentication tokens"}))
    assert [e["id"] for e in found["entries"]] == [1]
    assert found["context"].startswith("- [insight #1, project] Authentication: Tokens expire")
    # A near spelling and a prefix still find it.
    assert [
        e["id"] for e in ok(tb.run("query_memory", {"keywords": "authentification"}))["entries"]
    ] == [1]
    assert [e["id"] for e in ok(tb.run("query_memory", {"keywords": "databse"}))["entries"]] == [2]
    assert [e["id"] for e in ok(tb.run("query_memory", {"keywords": "migrat"}))["entries"]] == [2]
    assert ok(tb.run("query_memory", {"keywords": "nothing-like-it"}))["entries"] == []
    assert ok(tb.run("query_memory", {"keywords": "", "kind": "issue"}))["count"] == 1

    promoted = ok(tb.run("promote_to_decision", {"id": 1}))
    assert promoted["promoted_from"] == 1 and promoted["entry"]["kind"] == "decision"
    assert [h["event"] for h in promoted["entry"]["history"]] == ["created", "promoted"]
    original = ok(tb.run("query_memory", {"keywords": "", "kind": "insight"}))["entries"][0]
    assert original["history"][-1]["new_id"] == promoted["id"]
    pattern = ok(tb.run("promote_memory", {"id": 1, "to": "pattern"}))
    assert pattern["entry"]["kind"] == "pattern"
    assert "Promoted #2 to #6 pattern" in tb.render(tb.run("promote_to_pattern", {"id": 2}))


def test_ranking_is_bounded_but_a_rare_keyword_still_wins(
    tb: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "CANDIDATES", 5)  # 1000 in use; 5 keeps the test small
    ok(tb.run("save_learning", {"content": "a needle in the haystack"}))  # the oldest
    for n in range(12):
        ok(tb.run("save_learning", {"content": f"haystack number {n}"}))
    found = ok(tb.run("query_memory", {"keywords": "haystack needle", "limit": 20}))
    ids = [e["id"] for e in found["entries"]]
    # The rare keyword's entry first; then of the 13 with only the common word, the
    # newest 5 (CANDIDATES), ranked.
    assert ids[0] == 1 and sorted(ids[1:]) == [9, 10, 11, 12, 13]
    assert [e["id"] for e in ok(tb.run("query_memory", {"keywords": "needle"}))["entries"]] == [1]


def test_bad_input_is_a_clear_error_and_stores_nothing(tb: Toolbox) -> None:
    err(tb.run("save_memory", {"kind": "rumour", "content": "x"}), "INVALID_INPUT")
    err(tb.run("save_memory", {"kind": "insight", "content": "   "}), "INVALID_INPUT")
    err(
        tb.run("save_memory", {"kind": "insight", "content": "x", "tags": ["a b"]}), "INVALID_INPUT"
    )
    err(tb.run("query_memory", {"keywords": "x", "scope": "galaxy"}), "INVALID_INPUT")
    assert "query_memory" in err(
        tb.run("promote_memory", {"id": 99, "to": "decision"}), "NOT_FOUND"
    )
    err(tb.run("promote_memory", {"id": 1, "to": "insight"}), "INVALID_INPUT")
    huge = "x" * (10 * 1024 * 1024)
    err(tb.run("save_memory", {"kind": "insight", "content": huge}), "INVALID_INPUT")
    err(tb.run("memory", {"action": "write", "key": "k", "value": huge}), "INVALID_INPUT")
    assert ok(tb.run("query_memory", {"keywords": ""}))["count"] == 0


def test_sql_looking_text_is_stored_literally(tb: Toolbox) -> None:
    saved = ok(
        tb.run("save_memory", {"kind": "issue", "content": SQL, "title": SQL, "tags": ["';--"]})
    )
    found = ok(tb.run("query_memory", {"keywords": SQL}))
    assert found["entries"][0]["content"] == SQL and found["entries"][0]["id"] == saved["id"]
    ok(tb.run("query_memory", {"keywords": 'NEAR(" AND OR * ^ :'}))  # FTS syntax is quoted
    ok(tb.run("memory", {"action": "write", "key": "q", "value": SQL}))
    assert ok(tb.run("memory", {"action": "read", "key": "q"}))["value"] == SQL


def test_scopes_merge_narrow_first_and_sessions_stay_apart(make_toolbox: Any) -> None:
    tb = make_toolbox()
    ok(tb.run("save_memory", {"kind": "learning", "content": "cache project", "scope": "project"}))
    ok(
        tb.run(
            "save_memory", {"kind": "learning", "content": "cache iteration", "scope": "iteration"}
        )
    )
    ok(tb.run("save_memory", {"kind": "learning", "content": "cache session", "scope": "session"}))
    merged = ok(tb.run("query_memory", {"keywords": "cache"}))
    assert [e["scope"] for e in merged["entries"]] == ["session", "iteration", "project"]
    only = ok(tb.run("query_memory", {"keywords": "cache", "scope": "iteration"}))
    assert [e["scope"] for e in only["entries"]] == ["iteration"]
    other = ok(tb.run("query_memory", {"keywords": "cache"}, user_id="someone-else"))
    assert [e["scope"] for e in other["entries"]] == ["iteration", "project"]


def test_a_nul_character_is_stored_or_refused_never_half_written(tb: Toolbox, backend: str) -> None:
    args = {"kind": "insight", "content": "before\x00after", "title": "nul"}
    if backend == "sqlite":  # SQLite keeps any text
        ok(tb.run("save_memory", args))
        assert ok(tb.run("query_memory", {"keywords": "nul"}))["entries"][0]["content"] == (
            "before\x00after"
        )
    else:  # PostgreSQL text cannot hold NUL: a clear error, nothing stored
        assert "cannot store a value" in err(tb.run("save_memory", args), "INVALID_INPUT")
        err(tb.run("memory", {"action": "write", "key": "k", "value": "a\x00"}), "INVALID_INPUT")
        assert ok(tb.run("query_memory", {"keywords": ""}))["count"] == 0
        assert ok(tb.run("memory", {"action": "list"}))["keys"] == []


def test_words_beyond_ascii(tb: Toolbox) -> None:
    ok(tb.run("save_learning", {"content": "Das Café öffnet um 8", "title": "ÜBER_Frühstück"}))
    for keywords in ("café", "CAFÉ", "über", "frühst", "ÖFFNET"):
        assert ok(tb.run("query_memory", {"keywords": keywords}))["count"] == 1, keywords
    # SQLite's tokenizer drops accents; PostgreSQL's 'simple' configuration keeps them,
    # and there the accented word is a near spelling of the plain one.
    assert ok(tb.run("query_memory", {"keywords": "cafe"}))["count"] == 1


def test_key_value_memory(tb: Toolbox) -> None:
    assert (
        ok(tb.run("memory", {"action": "write", "key": "build.cmd", "value": "make"}))["replaced"]
        is False
    )
    assert ok(tb.run("memory", {"action": "write", "key": "build.cmd", "value": "make test"}))[
        "replaced"
    ]
    ok(tb.run("memory", {"action": "write", "key": "deploy:host", "value": "h"}))
    assert ok(tb.run("memory", {"action": "read", "key": "build.cmd"}))["value"] == "make test"
    assert ok(tb.run("memory", {"action": "list"}))["keys"] == ["build.cmd", "deploy:host"]
    assert ok(tb.run("memory", {"action": "list", "key": "dep"}))["keys"] == ["deploy:host"]
    assert "build.cmd" in err(tb.run("memory", {"action": "read", "key": "build.cm"}), "NOT_FOUND")
    ok(tb.run("memory", {"action": "delete", "key": "build.cmd"}))
    err(tb.run("memory", {"action": "delete", "key": "build.cmd"}), "NOT_FOUND")
    err(tb.run("memory", {"action": "write", "key": "k"}), "INVALID_INPUT")
    err(tb.run("memory", {"action": "read"}), "INVALID_INPUT")


@pytest.mark.parametrize(
    "key", ["../etc/passwd", "/abs", "a/b", "a\\b", "..", "a..b", ".hidden", "x" * 129, "é"]
)
def test_keys_are_never_paths(tb: Toolbox, key: str) -> None:
    err(tb.run("memory", {"action": "write", "key": key, "value": "v"}), "INVALID_INPUT")


def test_sqlite_database_is_in_state_with_wal_and_migrations(
    tmp_path: Path, workspace: Path
) -> None:
    tb = Toolbox(workspace, state_dir=tmp_path / "state", audit=False)
    ok(tb.run("memory", {"action": "write", "key": "k", "value": "v"}))
    path = store_path(tmp_path / "state", workspace)
    assert path.is_file() and not list(workspace.iterdir())
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT version FROM schema_migrations").fetchall() == [(1,), (2,)]
    tb.close()  # the toolbox's connection is closed with it; a new one reopens the file
    tb2 = Toolbox(workspace, state_dir=tmp_path / "state", audit=False)
    try:
        assert ok(tb2.run("memory", {"action": "read", "key": "k"}))["value"] == "v"
    finally:
        tb2.close()


def test_a_version_1_sqlite_store_is_migrated_and_its_words_found(
    tmp_path: Path, workspace: Path
) -> None:
    path = store_path(tmp_path / "state", workspace)
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as conn:  # as the first release left it
        for statement in statements(SQLITE_MIGRATIONS[0]):
            conn.execute(statement)
        conn.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT)"
        )
        conn.execute("INSERT INTO schema_migrations VALUES (1, '')")
        conn.execute(
            "INSERT INTO memories(kind, content, scope, user_id, tool, created_at, updated_at) "
            "VALUES ('insight', 'Vacuuming the database weekly', 'project', 'u', 't', '', '')"
        )
    tb = Toolbox(workspace, state_dir=tmp_path / "state", audit=False)
    try:
        found = ok(tb.run("query_memory", {"keywords": "vacuum databse"}))
        assert [e["content"] for e in found["entries"]] == ["Vacuuming the database weekly"]
    finally:
        tb.close()


def test_store_reopens_with_its_migrations_recorded(
    make_toolbox: Any, knowledge_config: dict[str, Any], tmp_path: Path, workspace: Path
) -> None:
    tb = make_toolbox()
    ok(tb.run("memory", {"action": "write", "key": "k", "value": "v"}))
    tb.close()
    assert ok(make_toolbox().run("memory", {"action": "read", "key": "k"}))["value"] == "v"
    store = open_store_for(knowledge_config, tmp_path / "state", workspace)
    try:
        # Opening again ran no migration twice, and every one once.
        migrations = SQLITE_MIGRATIONS if store.backend == "sqlite" else PG_MIGRATIONS
        assert store.version == len(migrations)
    finally:
        store.close()


def test_output_shapes(tb: Toolbox) -> None:
    structured(tb, "save_insight", {"content": "a"})
    structured(tb, "query_memory", {"keywords": "a"})
    structured(tb, "memory", {"action": "list"})
    structured(tb, "memory", {"action": "write", "key": "k", "value": "v"})
    structured(tb, "memory", {"action": "read", "key": "k"})
    structured(tb, "memory", {"action": "delete", "key": "k"})


def test_unreachable_postgresql_is_a_clear_error_without_the_password(
    workspace: Path, tmp_path: Path
) -> None:
    url = f"postgresql://me:s3cret@/knowledge?host={tmp_path}&port=1"  # no server there
    tb = Toolbox(workspace, {"knowledge": {"url": url}}, state_dir=tmp_path / "state")
    try:
        message = err(tb.run("save_insight", {"content": "x"}), "IO_ERROR")
        assert "Could not connect to the knowledge database" in message
        assert "[knowledge] url" in message and "s3cret" not in message
        # The next call tries again and fails the same way: no traceback, nothing kept.
        err(tb.run("query_memory", {"keywords": "x"}), "IO_ERROR")
    finally:
        tb.close()


def test_a_dropped_postgresql_connection_is_reconnected(
    pg_server: str, workspace: Path, tmp_path: Path
) -> None:
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    config = {"knowledge": {"url": pg_server, "pg_schema": schema}}
    tb = Toolbox(workspace, config, state_dir=tmp_path / "state", audit=False)
    ok(tb.run("save_insight", {"content": "kept"}))
    store = next(v for k, v in tb.runner.resources._items.items() if k.startswith("knowledge:"))

    def drop_connection() -> None:  # as a server restart would
        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (store._conn.info.backend_pid,))

    drop_connection()  # a read runs again on a new connection
    assert ok(tb.run("query_memory", {"keywords": "kept"}))["count"] == 1
    drop_connection()  # a write is not retried (it might have committed): it says so
    message = err(tb.run("save_insight", {"content": "lost"}), "IO_ERROR")
    assert "next call reconnects" in message
    ok(tb.run("save_insight", {"content": "again"}))
    entries = ok(tb.run("query_memory", {"keywords": ""}))["entries"]
    assert sorted(e["content"] for e in entries) == ["again", "kept"]
    tb.close()
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_a_postgresql_writer_held_up_too_long_is_busy_and_changes_nothing(
    pg_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from local_tools.core.errors import StorageError
    from local_tools.knowledge import postgres
    from local_tools.knowledge.memory import save

    monkeypatch.setattr(postgres, "BUSY_TIMEOUT_MS", 300)  # 10 s in use
    schema = f"t_{uuid.uuid4().hex[:12]}"
    store = postgres.PostgresStore(pg_server, schema)
    other = psycopg.connect(pg_server)  # another writer, mid-transaction
    try:
        other.execute("SELECT pg_advisory_xact_lock(%s)", (store._lock_key,))
        with pytest.raises(StorageError, match="busy"):
            save(store, kind="insight", content="waits", user_id="u", tool="t")
        other.rollback()
        save(store, kind="insight", content="goes", user_id="u", tool="t")
        assert [e["content"] for e in query(store, keywords="")] == ["goes"]
    finally:
        other.close()
        with store.write() as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
        store.close()


def test_near_spellings_without_pg_trgm(pg_server: str) -> None:
    """Where pg_trgm cannot be had, near spellings come from a range scan instead."""
    from local_tools.knowledge.memory import save
    from local_tools.knowledge.postgres import PostgresStore

    schema = f"t_{uuid.uuid4().hex[:12]}"
    store = PostgresStore(pg_server, schema)
    try:
        assert store.trigram  # the test server has contrib
        save(store, kind="insight", content="authentication tokens", user_id="u", tool="t")
        for trigram in (True, False):
            store.trigram = trigram
            assert len(query(store, keywords="authentification")) == 1
            assert query(store, keywords="authorisation") == []
    finally:
        with store.write() as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
            # The extension lives in public: dropping a project's schema keeps it.
            ext = conn.execute(
                "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                "ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'"
            ).fetchall()
            assert [r[0] for r in ext] == ["public"]
        store.close()


WRITER = """
import json, sys
from local_tools import Toolbox
who, rounds, ws, state, config = sys.argv[1], int(sys.argv[2]), *sys.argv[3:6]
tb = Toolbox(ws, json.loads(config), state_dir=state, audit=False, plugins=False)
for n in range(rounds):
    env = tb.run("save_memory", {"kind": "insight", "content": f"{who} wrote {n}"})
    assert env["success"], env
    env = tb.run("memory", {"action": "write", "key": f"{who}.{n}", "value": str(n)})
    assert env["success"], env
tb.close()
"""


@pytest.mark.timeout(120)
def test_two_processes_writing_at_once_lose_nothing(
    knowledge_config: dict[str, Any], workspace: Path, tmp_path: Path
) -> None:
    state, rounds = tmp_path / "state", 40
    run_writers(WRITER, knowledge_config, workspace, state, rounds)
    store = open_store_for(knowledge_config, state, workspace)
    try:
        doc = export(store)
        assert sorted(r["content"] for r in doc["memories"]) == sorted(
            f"{who} wrote {n}" for who in ("alice", "bob") for n in range(rounds)
        )
        assert len({r["id"] for r in doc["memories"]}) == 2 * rounds
        assert len(doc["kv"]) == 2 * rounds
        # Every entry reached the full-text index too.
        assert len(query(store, keywords="wrote", limit=1000)) == 2 * rounds
    finally:
        store.close()
