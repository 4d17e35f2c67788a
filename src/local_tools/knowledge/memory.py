"""Memory entries (insights, issues, learnings, decisions, patterns) and key/value notes.

Search is the backend's full-text index (SQLite FTS5 with bm25, PostgreSQL tsvector
with ts_rank) over title, content and tags; each keyword matches as a prefix, and a
keyword the index has never seen is widened to the indexed words spelled like it (same
first letter, a difflib ratio of at least 0.75), so "authentification" still finds
"authentication".

Ranking is bounded so a query stays fast however large the store: a keyword found in
more than CANDIDATES entries says little about which one is wanted (its idf is low),
so entries matching only such keywords are ranked among the newest CANDIDATES of them,
after the entries matching a rarer keyword, which are all ranked.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from typing import Any

from local_tools.core.errors import InvalidInput, NotFound
from local_tools.knowledge.store import Conn, Group, KnowledgeStore, now_iso

__all__ = [
    "KINDS",
    "MERGED_SCOPE_ORDER",
    "PROMOTIONS",
    "SCOPES",
    "context_text",
    "kv_delete",
    "kv_list",
    "kv_read",
    "kv_write",
    "promote",
    "query",
    "save",
    "validate_key",
]

KINDS = ("insight", "issue", "learning", "decision", "pattern")
SCOPES = ("project", "iteration", "session")
# "merged" searches every scope, the narrower first.
MERGED_SCOPE_ORDER = ("session", "iteration", "project")
PROMOTIONS = ("decision", "pattern")
MAX_KEYWORDS = 16
CANDIDATES = 1000
CONTEXT_SNIPPET = 300
# Every column but a backend's own (PostgreSQL's tsvector).
COLUMNS = ("id, kind, title, content, tags, scope, session, user_id, tool, promoted_from, "
           "history, created_at, updated_at")  # fmt: skip
_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")


def _entry(row: Any) -> dict[str, Any]:
    entry = {
        "id": row["id"],
        "kind": row["kind"],
        "title": row["title"],
        "content": row["content"],
        "tags": [t for t in row["tags"].split(" ") if t],
        "scope": row["scope"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "user_id": row["user_id"],
        "tool": row["tool"],
        "history": json.loads(row["history"]),
    }
    if row["promoted_from"] is not None:
        entry["promoted_from"] = row["promoted_from"]
    return entry


def save(
    store: KnowledgeStore,
    *,
    kind: str,
    content: str,
    title: str = "",
    tags: Sequence[str] = (),
    scope: str = "project",
    session: str | None = None,
    user_id: str,
    tool: str,
) -> dict[str, Any]:
    """Store one entry; returns it with its id."""
    _check(kind, KINDS, "kind")
    _check(scope, SCOPES, "scope")
    stamp = now_iso()
    with store.write() as conn:
        store.add_terms(conn, (title, content, " ".join(tags)))
        new_id = conn.execute(
            "INSERT INTO memories(kind, title, content, tags, scope, session, user_id, tool, "
            "history, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "RETURNING id",
            (kind, title, content, " ".join(tags), scope,
             session if scope == "session" else None, user_id, tool,
             json.dumps([{"at": stamp, "event": "created", "kind": kind, "by": user_id}]),
             stamp, stamp),
        ).fetchone()[0]  # fmt: skip
        row = conn.execute(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (new_id,)).fetchone()
    return _entry(row)


def query(
    store: KnowledgeStore,
    *,
    keywords: str,
    scope: str = "merged",
    kind: str | None = None,
    limit: int = 10,
    session: str | None = None,
) -> list[dict[str, Any]]:
    """Entries matching any keyword, best first (a narrower scope before a wider one
    when `scope` is "merged"); every entry when `keywords` holds no word."""
    if scope != "merged":
        _check(scope, SCOPES, "scope")
    if kind is not None:
        _check(kind, KINDS, "kind")
    scopes = MERGED_SCOPE_ORDER if scope == "merged" else (scope,)
    words = store.words(keywords)[:MAX_KEYWORDS]

    def run(conn: Conn) -> list[dict[str, Any]]:
        where = [
            f"m.scope IN ({','.join('?' * len(scopes))})",
            "(m.scope != 'session' OR m.session IS NOT DISTINCT FROM ?)",
        ]
        params: list[Any] = [*scopes, session]
        if kind is not None:
            where.append("m.kind = ?")
            params.append(kind)
        order = "CASE m.scope WHEN 'session' THEN 0 WHEN 'iteration' THEN 1 ELSE 2 END"
        if words:
            rare: list[Group] = []
            common: list[Group] = []
            for group in store.groups(conn, words):
                many = store.count_upto(conn, group, CANDIDATES + 1) > CANDIDATES
                (common if many else rare).append(group)
            rows = store.search(
                conn, rare=rare, common=common, where=" AND ".join(where), params=params,
                order=order, limit=limit, cap=CANDIDATES,
            )  # fmt: skip
        else:
            sql = (
                f"SELECT {COLUMNS} FROM memories m WHERE {' AND '.join(where)} "
                f"ORDER BY {order}, m.id DESC LIMIT ?"
            )
            rows = conn.execute(sql, [*params, limit]).fetchall()
        return [_entry(r) for r in rows]

    return store.read(run)


def promote(
    store: KnowledgeStore, *, entry_id: int, to: str, user_id: str, tool: str
) -> dict[str, Any]:
    """A new `to` entry made from entry `entry_id`, linked to it; the original's
    history records the promotion."""
    _check(to, PROMOTIONS, "to")
    if not -(2**63) <= entry_id < 2**63:  # beyond any store's integer: SQLite's OverflowError
        raise NotFound(f"No memory entry has id {entry_id}. Find ids with query_memory.")
    stamp = now_iso()
    with store.write() as conn:
        row = conn.execute(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            raise NotFound(f"No memory entry has id {entry_id}. Find ids with query_memory.")
        if row["kind"] == to:
            raise InvalidInput(f"Entry {entry_id} already is a {to}.")
        history = json.loads(row["history"])
        new_history = [*history, {"at": stamp, "event": "promoted", "from": row["kind"],
                                  "to": to, "from_id": entry_id, "by": user_id}]  # fmt: skip
        new_id = conn.execute(
            "INSERT INTO memories(kind, title, content, tags, scope, session, user_id, tool, "
            "promoted_from, history, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, 'project', NULL, ?, ?, ?, ?, ?, ?) RETURNING id",
            (to, row["title"], row["content"], row["tags"], user_id, tool, entry_id,
             json.dumps(new_history), stamp, stamp),
        ).fetchone()[0]  # fmt: skip
        history.append({"at": stamp, "event": "promoted", "to": to, "new_id": new_id,
                        "by": user_id})  # fmt: skip
        conn.execute(
            "UPDATE memories SET history = ?, updated_at = ? WHERE id = ?",
            (json.dumps(history), stamp, entry_id),
        )
        new = conn.execute(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (new_id,)).fetchone()
    return _entry(new)


def context_text(entries: Sequence[dict[str, Any]]) -> str:
    """The entries as a few compact lines, ready to paste into a prompt."""
    lines = []
    for e in entries:
        body = " ".join(e["content"].split())
        if len(body) > CONTEXT_SNIPPET:
            body = body[: CONTEXT_SNIPPET - 1] + "…"
        title = f"{e['title']}: " if e["title"] else ""
        tags = f" [{', '.join(e['tags'])}]" if e["tags"] else ""
        lines.append(f"- [{e['kind']} #{e['id']}, {e['scope']}] {title}{body}{tags}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- key/value


def validate_key(key: str) -> str:
    """A key is a name, never a path: letters, digits and `_ . : -`, no `..`."""
    if not _KEY_RE.fullmatch(key) or ".." in key:
        raise InvalidInput(
            f"Invalid key {key!r}: use 1-128 letters, digits, '_', '.', ':' or '-', starting "
            "with a letter or digit (no '/', '\\' or '..': a key is a name, not a path)."
        )
    return key


def kv_write(store: KnowledgeStore, key: str, value: str, user_id: str) -> bool:
    """Set `key`; True when it replaced a value."""
    validate_key(key)
    with store.write() as conn:
        existed = conn.execute("SELECT 1 FROM kv WHERE key = ?", (key,)).fetchone() is not None
        conn.execute(
            "INSERT INTO kv(key, value, user_id, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
            "user_id = excluded.user_id, updated_at = excluded.updated_at",
            (key, value, user_id, now_iso()),
        )
    return existed


def kv_read(store: KnowledgeStore, key: str) -> str:
    validate_key(key)
    row = store.read(lambda c: c.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone())
    if row is None:
        near = difflib.get_close_matches(key, kv_list(store), n=3)
        hint = f" Did you mean: {', '.join(near)}?" if near else " List keys with action=list."
        raise NotFound(f"No memory key {key!r}.{hint}")
    return str(row[0])


def kv_list(store: KnowledgeStore, prefix: str = "") -> list[str]:
    rows = store.read(
        lambda c: c.execute(
            "SELECT key FROM kv WHERE substr(key, 1, ?) = ? ORDER BY key", (len(prefix), prefix)
        ).fetchall()
    )
    return [r[0] for r in rows]


def kv_delete(store: KnowledgeStore, key: str) -> None:
    validate_key(key)
    with store.write() as conn:
        if conn.execute("DELETE FROM kv WHERE key = ?", (key,)).rowcount == 0:
            raise NotFound(f"No memory key {key!r}; nothing was deleted.")


# --------------------------------------------------------------------------- helpers


def _check(value: str, allowed: Sequence[str], what: str) -> None:
    if value not in allowed:
        raise InvalidInput(f"Unknown {what} {value!r}: use one of {', '.join(allowed)}.")
