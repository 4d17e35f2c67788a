"""Memory entries (insights, issues, learnings, decisions, patterns) and key/value notes.

Search is FTS5 ranked by bm25 over title, content and tags; a keyword the index has
never seen is widened to the indexed words spelled like it (same first letter, a
difflib ratio of at least 0.75), so "authentification" still finds "authentication".
"""

from __future__ import annotations

import difflib
import json
import re
import sqlite3
import unicodedata
from collections.abc import Sequence
from typing import Any

from local_tools.core.errors import InvalidInput, NotFound
from local_tools.knowledge.store import KnowledgeStore, now_iso

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
MAX_FUZZY_PER_WORD = 3
MAX_KEYWORDS = 16
CONTEXT_SNIPPET = 300
_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")


def _entry(row: sqlite3.Row) -> dict[str, Any]:
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
        cur = conn.execute(
            "INSERT INTO memories(kind, title, content, tags, scope, session, user_id, tool, "
            "history, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, title, content, " ".join(tags), scope,
             session if scope == "session" else None, user_id, tool,
             json.dumps([{"at": stamp, "event": "created", "kind": kind, "by": user_id}]),
             stamp, stamp),
        )  # fmt: skip
        row = conn.execute("SELECT * FROM memories WHERE id = ?", (cur.lastrowid,)).fetchone()
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
    words = _words(keywords)

    def run(conn: sqlite3.Connection) -> list[dict[str, Any]]:
        where = [
            f"m.scope IN ({','.join('?' * len(scopes))})",
            "(m.scope != 'session' OR m.session IS ?)",
        ]
        params: list[Any] = [*scopes, session]
        if kind is not None:
            where.append("m.kind = ?")
            params.append(kind)
        order = "CASE m.scope WHEN 'session' THEN 0 WHEN 'iteration' THEN 1 ELSE 2 END"
        if words:
            match = _match_expression(conn, words)
            sql = (
                "SELECT m.*, bm25(memories_fts, 4.0, 1.0, 2.0) AS rank FROM memories_fts "
                "JOIN memories m ON m.id = memories_fts.rowid "
                f"WHERE memories_fts MATCH ? AND {' AND '.join(where)} "
                f"ORDER BY {order}, rank, m.id DESC LIMIT ?"
            )
            rows = conn.execute(sql, [match, *params, limit]).fetchall()
        else:
            sql = (
                f"SELECT m.* FROM memories m WHERE {' AND '.join(where)} "
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
    stamp = now_iso()
    with store.write() as conn:
        row = conn.execute("SELECT * FROM memories WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            raise NotFound(f"No memory entry has id {entry_id}. Find ids with query_memory.")
        if row["kind"] == to:
            raise InvalidInput(f"Entry {entry_id} already is a {to}.")
        history = json.loads(row["history"])
        new_history = [*history, {"at": stamp, "event": "promoted", "from": row["kind"],
                                  "to": to, "from_id": entry_id, "by": user_id}]  # fmt: skip
        cur = conn.execute(
            "INSERT INTO memories(kind, title, content, tags, scope, session, user_id, tool, "
            "promoted_from, history, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, 'project', NULL, ?, ?, ?, ?, ?, ?)",
            (to, row["title"], row["content"], row["tags"], user_id, tool, entry_id,
             json.dumps(new_history), stamp, stamp),
        )  # fmt: skip
        history.append({"at": stamp, "event": "promoted", "to": to, "new_id": cur.lastrowid,
                        "by": user_id})  # fmt: skip
        conn.execute(
            "UPDATE memories SET history = ?, updated_at = ? WHERE id = ?",
            (json.dumps(history), stamp, entry_id),
        )
        new = conn.execute("SELECT * FROM memories WHERE id = ?", (cur.lastrowid,)).fetchone()
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


def _fold(word: str) -> str:
    """As FTS5's unicode61 tokenizer indexes a word: lower case, no diacritics."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _words(keywords: str) -> list[str]:
    seen: dict[str, None] = {}
    for w in re.findall(r"\w+", keywords):
        seen.setdefault(_fold(w))
    return list(seen)[:MAX_KEYWORDS]


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _match_expression(conn: sqlite3.Connection, words: Sequence[str]) -> str:
    """An FTS5 query: each word as a prefix, OR'ed, plus near spellings of the words
    the index does not hold."""
    terms: list[str] = []
    for word in words:
        terms.append(_quote(word) + "*")
        hit = conn.execute(
            "SELECT 1 FROM memories_vocab WHERE term >= ? AND term < ? LIMIT 1",
            (word, word + "\U0010ffff"),
        ).fetchone()
        if hit is None and len(word) >= 3:
            terms.extend(_quote(t) for t in _near(conn, word))
    return " OR ".join(terms)


def _near(conn: sqlite3.Connection, word: str) -> list[str]:
    first = word[0]
    rows = conn.execute(
        "SELECT term FROM memories_vocab WHERE term >= ? AND term < ? AND length(term) "
        "BETWEEN ? AND ?",
        (first, first + "\U0010ffff", len(word) - 2, len(word) + 2),
    ).fetchall()
    return difflib.get_close_matches(word, [r[0] for r in rows], n=MAX_FUZZY_PER_WORD, cutoff=0.75)
