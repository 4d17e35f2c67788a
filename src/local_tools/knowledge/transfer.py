"""Export a workspace's knowledge as one JSON document, and import it back.

The document holds every table's rows as plain values (ids kept), so a project's
knowledge can be versioned in git. Import is one transaction: `replace` empties the
store first, `merge` adds what is missing and keeps what exists; either way the id
counters end at least as high as both sides had them, so no id is handed out twice.
"""

from __future__ import annotations

import json
import re
from typing import Any

from local_tools.core.errors import InvalidInput
from local_tools.knowledge import memory, project
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
            problem = _ROW_CHECKS[table](row) if table in _ROW_CHECKS else None
            if problem:
                raise InvalidInput(f"{table}[{n}]: {problem}; nothing was imported.")
            if table == "counters" and not (
                isinstance(row["kind"], str)
                and isinstance(row["last"], int)
                and not isinstance(row["last"], bool)
                and 0 <= row["last"] < 2**62
            ):
                raise InvalidInput(f"counters[{n}] must have a kind name and a whole last >= 0.")
        out[table] = rows
    return out


# -- what the tools that read the rows back rely on: checked as on create -------------

_MAX_ID = 2**62
_RELS = frozenset(rel for links in project.LINKS.values() for rel in links)


def _choice(row: dict[str, Any], column: str, allowed: Any) -> str | None:
    value = row.get(column)
    if value not in allowed:
        return f"{column} {value!r} is not one of {', '.join(map(str, allowed))}"
    return None


def _strings(
    row: dict[str, Any], required: tuple[str, ...], optional: tuple[str, ...]
) -> str | None:
    for column in required:
        if not isinstance(row.get(column), str):
            return f"{column} must be text"
    for column in optional:
        if row.get(column) is not None and not isinstance(row[column], str):
            return f"{column} must be text or null"
    return None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < _MAX_ID


def _memory_row(row: dict[str, Any]) -> str | None:
    if not _whole(row.get("id")):
        return "id must be a whole number >= 1"
    if row.get("promoted_from") is not None and not _whole(row["promoted_from"]):
        return "promoted_from must be a memory id or null"
    problem = (
        _choice(row, "kind", memory.KINDS)
        or _choice(row, "scope", memory.SCOPES)
        or _strings(
            row,
            ("title", "content", "tags", "history", "created_at", "updated_at"),
            ("session", "user_id", "tool"),
        )
    )
    if problem:
        return problem
    try:
        history = json.loads(row["history"])
    except ValueError:
        history = None
    if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
        return "history must be a JSON list of events (objects)"
    return None


def _item_row(row: dict[str, Any]) -> str | None:
    problem = _choice(row, "kind", project.KINDS)
    if problem:
        return problem
    kind = row["kind"]
    prefix = project.PREFIXES[kind]
    if not isinstance(row.get("id"), str) or not re.fullmatch(rf"{prefix}-\d{{1,18}}", row["id"]):
        return f"a {kind} id looks like {prefix}-001, not {row.get('id')!r}"
    return (
        _choice(row, "status", project.STATUSES[kind])
        or _choice(row, "priority", project.PRIORITIES)
        or _strings(row, ("title", "description", "created_at", "updated_at"), ("user_id",))
    )


def _link_row(row: dict[str, Any]) -> str | None:
    return _choice(row, "rel", sorted(_RELS)) or _strings(row, ("src", "dst"), ())


def _kv_row(row: dict[str, Any]) -> str | None:
    return _strings(row, ("key", "value"), ("user_id", "updated_at"))


_ROW_CHECKS = {"memories": _memory_row, "items": _item_row, "links": _link_row, "kv": _kv_row}
