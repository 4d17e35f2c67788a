"""Export a workspace's knowledge as one JSON document, and import it back.

The document holds every table's rows as plain values (ids kept), so a project's
knowledge can be versioned in git. Import is one transaction: `replace` empties the
store first, `merge` adds what is missing and keeps what exists; either way the id
counters end at least as high as both sides had them, so no id is handed out twice.
"""

from __future__ import annotations

import re
from typing import Any

from local_tools.core.errors import InvalidInput
from local_tools.knowledge.store import Conn, KnowledgeStore

__all__ = ["FORMAT", "VERSION", "export", "import_"]

FORMAT = "local-tools-knowledge"
VERSION = 1
_TABLES = {
    "memories": ("id", "kind", "title", "content", "tags", "scope", "session", "user_id", "tool",
                 "promoted_from", "history", "created_at", "updated_at"),
    "kv": ("key", "value", "user_id", "updated_at"),
    "items": ("id", "kind", "title", "description", "status", "priority", "user_id",
              "created_at", "updated_at"),
    "links": ("src", "rel", "dst"),
    "counters": ("kind", "last"),
}  # fmt: skip
_TEXT = ("title", "content", "tags")  # the memories' searched columns
_KEYS = {"memories": ("id",), "kv": ("key",), "items": ("id",), "links": ("src", "rel", "dst"),
         "counters": ("kind",)}  # fmt: skip


def export(store: KnowledgeStore) -> dict[str, Any]:
    def run(conn: Conn) -> dict[str, Any]:
        doc: dict[str, Any] = {"format": FORMAT, "version": VERSION}
        for table, columns in _TABLES.items():
            order = ", ".join(_KEYS[table])
            rows = conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}")
            doc[table] = [dict(zip(columns, row, strict=True)) for row in rows]
        return doc

    return store.read(run)


def import_(store: KnowledgeStore, doc: Any, *, mode: str = "merge") -> dict[str, int]:
    """Load an exported document; returns how many rows of each table were added."""
    if mode not in ("merge", "replace"):
        raise InvalidInput("mode must be merge or replace.")
    rows = _checked(doc)
    added: dict[str, int] = {}
    with store.write() as conn:
        if mode == "replace":
            for table in ("links", "items", "kv", "memories"):
                conn.execute(f"DELETE FROM {table}")  # counters stay: ids never repeat
        for table, columns in _TABLES.items():
            if table == "counters":
                continue
            sql = (
                f"INSERT INTO {table}({', '.join(columns)}) "
                f"VALUES ({', '.join('?' * len(columns))}) ON CONFLICT DO NOTHING"
            )
            count = 0
            for n, row in enumerate(rows[table]):
                try:
                    count += conn.execute(sql, [row.get(c) for c in columns]).rowcount
                except store.errors as exc:
                    raise InvalidInput(
                        f"{table}[{n}] cannot be imported ({exc}); nothing was changed."
                    ) from None
            added[table] = count
            if table == "memories":
                texts = [str(row.get(c) or "") for row in rows[table] for c in _TEXT]
                store.add_terms(conn, texts)
        tops = {row["kind"]: row["last"] for row in rows["counters"]}
        # Items imported with numbers beyond the counters (a hand-edited file).
        for item_id, kind in conn.execute("SELECT id, kind FROM items").fetchall():
            number = re.fullmatch(r"[A-Z]+-0*(\d{1,18})", str(item_id))
            if number:
                tops[kind] = max(tops.get(kind, 0), int(number[1]))
        for kind, top in tops.items():
            conn.execute(
                "INSERT INTO counters(kind, last) VALUES (?, ?) ON CONFLICT(kind) DO UPDATE "
                "SET last = CASE WHEN excluded.last > counters.last THEN excluded.last "
                "ELSE counters.last END",
                (kind, top),
            )
        store.after_import(conn)
    return added


def _checked(doc: Any) -> dict[str, list[dict[str, Any]]]:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InvalidInput(f'Not a knowledge export (expected "format": "{FORMAT}").')
    if doc.get("version") != VERSION:
        raise InvalidInput(
            f"Unsupported export version {doc.get('version')!r}; this reads {VERSION}."
        )
    out: dict[str, list[dict[str, Any]]] = {}
    for table, columns in _TABLES.items():
        rows = doc.get(table, [])
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise InvalidInput(f"{table} must be a list of objects.")
        for n, row in enumerate(rows):
            missing = [c for c in _KEYS[table] if row.get(c) is None]
            if missing:
                raise InvalidInput(f"{table}[{n}] has no {', '.join(missing)}.")
            bad = [c for c, v in row.items() if c in columns and isinstance(v, (dict, list))]
            if bad:
                raise InvalidInput(f"{table}[{n}].{bad[0]} must be a plain value.")
            if table == "counters" and not (
                isinstance(row["kind"], str)
                and isinstance(row["last"], int)
                and not isinstance(row["last"], bool)
                and 0 <= row["last"] < 2**62
            ):
                raise InvalidInput(f"counters[{n}] must have a kind name and a whole last >= 0.")
        out[table] = rows
    return out
