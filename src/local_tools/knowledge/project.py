"""Project data: requirements, features, components and tasks, their links, and checks.

Ids are a prefix and a number (REQ-001, FEAT-001, COMP-001, TASK-001) from a counter
per kind that only grows, so an id is never handed out twice, even after a delete.
Links are rows (src, rel, dst): a feature `covers` requirements, a component
`provides` features, a task `implements` a feature and `depends_on` tasks. A task's
dependencies may name tasks not created yet; check_task_dependencies reports those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from local_tools.core.errors import InvalidInput, NotFound
from local_tools.knowledge.store import Conn, KnowledgeStore, now_iso

__all__ = [
    "KINDS",
    "LINKS",
    "PREFIXES",
    "STATUSES",
    "TASK_MOVES",
    "coverage",
    "create",
    "delete",
    "dependencies",
    "design_document",
    "get",
    "implementation_plan",
    "update",
]

PREFIXES = {"requirement": "REQ", "feature": "FEAT", "component": "COMP", "task": "TASK"}
KINDS = tuple(PREFIXES)
STATUSES = {
    "requirement": ("open", "accepted", "rejected"),
    "feature": ("planned", "in_progress", "done", "dropped"),
    "component": ("planned", "in_progress", "done"),
    "task": ("pending", "in_progress", "completed", "blocked"),
}
# The task status machine: from -> the statuses it may move to.
TASK_MOVES = {
    "pending": ("in_progress",),
    "in_progress": ("completed", "blocked"),
    "blocked": ("in_progress",),
    "completed": (),
}
# Which links each kind has, and the kind each points to.
LINKS: dict[str, dict[str, str]] = {
    "requirement": {},
    "feature": {"covers": "requirement"},
    "component": {"provides": "feature"},
    "task": {"implements": "feature", "depends_on": "task"},
}
# Links that may name an item that does not exist (yet): reported by the checks.
DANGLING_OK = {"depends_on"}
PRIORITIES = ("high", "medium", "low")


def kind_of(item_id: str) -> str | None:
    prefix = item_id.split("-", 1)[0].upper()
    return next((k for k, p in PREFIXES.items() if p == prefix), None)


def create(
    store: KnowledgeStore,
    kind: str,
    *,
    title: str,
    description: str = "",
    priority: str = "medium",
    links: Mapping[str, Sequence[str]] | None = None,
    user_id: str,
) -> dict[str, Any]:
    """A new item with the next id of its kind; its links are checked first."""
    if priority not in PRIORITIES:
        raise InvalidInput(f"Unknown priority {priority!r}: use {', '.join(PRIORITIES)}.")
    stamp = now_iso()
    with store.write() as conn:
        clean = _checked_links(conn, kind, links or {})
        number = conn.execute(
            "INSERT INTO counters(kind, last) VALUES (?, 1) "
            "ON CONFLICT(kind) DO UPDATE SET last = counters.last + 1 RETURNING last",
            (kind,),
        ).fetchone()[0]
        item_id = f"{PREFIXES[kind]}-{number:03d}"
        conn.execute(
            "INSERT INTO items(id, kind, title, description, status, priority, user_id, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (item_id, kind, title, description, STATUSES[kind][0], priority, user_id, stamp, stamp),
        )
        _set_links(conn, item_id, clean)
        return _record(conn, item_id)


def get(store: KnowledgeStore, kind: str, ids: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Items of `kind` (all, or those named, in that order); an unknown id is NOT_FOUND."""

    def run(conn: Conn) -> list[dict[str, Any]]:
        if not ids:
            rows = conn.execute("SELECT id FROM items WHERE kind = ? ORDER BY id", (kind,))
            return [_record(conn, r[0]) for r in rows.fetchall()]
        return [_record(conn, _existing(conn, i, kind)) for i in ids]

    return store.read(run)


def update(
    store: KnowledgeStore,
    item_id: str,
    kind: str,
    *,
    status: str | None = None,
    links: Mapping[str, Sequence[str] | None] | None = None,
) -> tuple[dict[str, Any], str | None]:
    """Change an item's status and/or replace some of its links; returns the record and
    the status it had."""
    with store.write() as conn:
        item_id = _existing(conn, item_id, kind)
        before = conn.execute("SELECT status FROM items WHERE id = ?", (item_id,)).fetchone()[0]
        if status is not None and status != before:
            _check_status(kind, item_id, before, status)
            conn.execute(
                "UPDATE items SET status = ?, updated_at = ? WHERE id = ?",
                (status, now_iso(), item_id),
            )
        given = {rel: ids for rel, ids in (links or {}).items() if ids is not None}
        if given:
            clean = _checked_links(conn, kind, given, self_id=item_id)
            for rel in clean:
                conn.execute("DELETE FROM links WHERE src = ? AND rel = ?", (item_id, rel))
            _set_links(conn, item_id, clean)
            conn.execute("UPDATE items SET updated_at = ? WHERE id = ?", (now_iso(), item_id))
        return _record(conn, item_id), before


def delete(store: KnowledgeStore, item_id: str) -> dict[str, Any]:
    """Remove an item and its own links; links other items hold to it stay (the checks
    report them) and its id is never given out again."""
    with store.write() as conn:
        item_id = _existing(conn, item_id, None)
        record = _record(conn, item_id)
        referrers = [
            r[0] for r in conn.execute("SELECT DISTINCT src FROM links WHERE dst = ?", (item_id,))
        ]
        conn.execute("DELETE FROM links WHERE src = ?", (item_id,))
        conn.execute("DELETE FROM items WHERE id = ?", (item_id,))
    record["referenced_by"] = sorted(referrers)
    return record


# --------------------------------------------------------------------------- checks


def coverage(store: KnowledgeStore) -> dict[str, list[str]]:
    """Both ways: requirements no feature covers, features that cover nothing."""

    def run(conn: Conn) -> dict[str, list[str]]:
        uncovered = conn.execute(
            "SELECT id FROM items WHERE kind = 'requirement' AND id NOT IN "
            "(SELECT l.dst FROM links l JOIN items f ON f.id = l.src WHERE l.rel = 'covers') "
            "ORDER BY id"
        ).fetchall()
        idle = conn.execute(
            "SELECT id FROM items WHERE kind = 'feature' AND id NOT IN "
            "(SELECT l.src FROM links l JOIN items r ON r.id = l.dst WHERE l.rel = 'covers') "
            "ORDER BY id"
        ).fetchall()
        return {
            "uncovered_requirements": [r[0] for r in uncovered],
            "features_covering_nothing": [r[0] for r in idle],
        }

    return store.read(run)


def dependencies(store: KnowledgeStore) -> dict[str, Any]:
    """Dependencies on tasks that do not exist, and the cycles among tasks, each as a
    chain that ends where it starts."""
    graph = _task_graph(store)
    missing = [
        {"task": task, "missing": [d for d in deps if d not in graph]}
        for task, deps in graph.items()
        if any(d not in graph for d in deps)
    ]
    return {"missing": missing, "cycles": find_cycles(graph)}


def find_cycles(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Every cycle a depth-first search meets (one per back edge), deduplicated and
    each rotated to start at its smallest id: [[A, B, A], ...]."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = dict.fromkeys(graph, WHITE)
    found: dict[tuple[str, ...], list[str]] = {}
    for start in sorted(graph):
        if color[start] != WHITE:
            continue
        stack: list[tuple[str, Any]] = [(start, iter(sorted(graph[start])))]
        path = [start]
        color[start] = GREY
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                color[node] = BLACK
            elif color.get(child) == GREY:
                loop = path[path.index(child) :]
                low = loop.index(min(loop))
                loop = loop[low:] + loop[:low]
                found.setdefault(tuple(loop), [*loop, loop[0]])
            elif color.get(child) == WHITE:
                color[child] = GREY
                path.append(child)
                stack.append((child, iter(sorted(graph[child]))))
    return [found[k] for k in sorted(found)]


def implementation_plan(store: KnowledgeStore) -> dict[str, Any]:
    """Tasks in an order that does every dependency first (ties by id); tasks in a
    cycle cannot be ordered and are listed apart."""
    graph = _task_graph(store)
    tasks = {t["id"]: t for t in get(store, "task")}
    pending = {t: {d for d in deps if d in graph} for t, deps in graph.items()}
    order: list[str] = []
    while True:
        ready = sorted(t for t, deps in pending.items() if not deps)
        if not ready:
            break
        for t in ready:
            order.append(t)
            del pending[t]
        for deps in pending.values():
            deps.difference_update(ready)
    steps = []
    for n, t in enumerate(order, start=1):
        steps.append({"step": n, **tasks[t]})
    return {
        "steps": steps,
        "unordered": sorted(pending),
        "cycles": find_cycles(graph) if pending else [],
    }


def design_document(store: KnowledgeStore) -> str:
    """The requirements, features and components as one Markdown document."""
    reqs, feats, comps = (get(store, k) for k in ("requirement", "feature", "component"))
    lines = ["# Design", "", "## Requirements", ""]
    for r in reqs:
        text = f": {r['description']}" if r["description"] else ""
        lines.append(f"- **{r['id']}** {r['title']} ({r['status']}, {r['priority']}){text}")
    if not reqs:
        lines.append("(none)")
    lines += ["", "## Features", ""]
    for f in feats:
        covers = f" — covers {', '.join(f['covers'])}" if f["covers"] else ""
        lines.append(f"- **{f['id']}** {f['title']} ({f['status']}){covers}")
        if f["description"]:
            lines.append(f"  {f['description']}")
    if not feats:
        lines.append("(none)")
    lines += ["", "## Components", ""]
    for c in comps:
        provides = f" — provides {', '.join(c['provides'])}" if c["provides"] else ""
        lines.append(f"- **{c['id']}** {c['title']} ({c['status']}){provides}")
        if c["description"]:
            lines.append(f"  {c['description']}")
    if not comps:
        lines.append("(none)")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- helpers


def _task_graph(store: KnowledgeStore) -> dict[str, list[str]]:
    def run(conn: Conn) -> dict[str, list[str]]:
        graph: dict[str, list[str]] = {
            r[0]: [] for r in conn.execute("SELECT id FROM items WHERE kind = 'task' ORDER BY id")
        }
        for src, dst in conn.execute(
            "SELECT src, dst FROM links WHERE rel = 'depends_on' ORDER BY src, dst"
        ):
            if src in graph:
                graph[src].append(dst)
        return graph

    return store.read(run)


def _existing(conn: Conn, item_id: str, kind: str | None) -> str:
    item_id = item_id.strip().upper()
    row = conn.execute("SELECT kind FROM items WHERE id = ?", (item_id,)).fetchone()
    if row is None or (kind is not None and row[0] != kind):
        what = f"{kind} " if kind else "item "
        hint = f" Ids of a {kind} look like {PREFIXES[kind]}-001." if kind else ""
        known = kind_of(item_id)
        listing = {"requirement": "get_requirements", "task": "get_implementation_plan"}
        where = listing.get(known or kind or "", "get_design_document")
        raise NotFound(f"No {what}{item_id!r}.{hint} List them with {where}.")
    return item_id


def _checked_links(
    conn: Conn,
    kind: str,
    links: Mapping[str, Sequence[str] | None],
    self_id: str | None = None,
) -> dict[str, list[str]]:
    clean: dict[str, list[str]] = {}
    for rel, ids in links.items():
        if ids is None:
            continue
        target = LINKS[kind].get(rel)
        if target is None:
            raise InvalidInput(f"A {kind} has no {rel!r} links.")
        out: list[str] = []
        for raw in ids:
            item_id = raw.strip().upper()
            if kind_of(item_id) != target:
                raise InvalidInput(
                    f"{rel} takes {target} ids like {PREFIXES[target]}-001, not {raw!r}."
                )
            if item_id == self_id:
                raise InvalidInput(f"{item_id} cannot {rel.replace('_', ' ')} itself.")
            if rel not in DANGLING_OK:
                _existing(conn, item_id, target)
            if item_id not in out:
                out.append(item_id)
        clean[rel] = out
    return clean


def _set_links(conn: Conn, item_id: str, links: Mapping[str, Sequence[str]]) -> None:
    for rel, ids in links.items():
        conn.executemany(
            "INSERT INTO links(src, rel, dst) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(item_id, rel, dst) for dst in ids],
        )


def _check_status(kind: str, item_id: str, before: str, status: str) -> None:
    if status not in STATUSES[kind]:
        raise InvalidInput(
            f"Unknown {kind} status {status!r}: use one of {', '.join(STATUSES[kind])}."
        )
    if kind != "task" or status in TASK_MOVES[before]:
        return
    allowed = TASK_MOVES[before]
    moves = " or ".join(allowed) if allowed else "nothing (completed is final)"
    raise InvalidInput(
        f"{item_id} cannot move from {before} to {status}: from {before} it may move to "
        f"{moves}. The task machine: pending → in_progress → completed | blocked, "
        "blocked → in_progress."
    )


def _record(conn: Conn, item_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM items WHERE id = ?", (item_id,)).fetchone()
    record = {k: row[k] for k in ("id", "kind", "title", "description", "status", "priority",
                                  "user_id", "created_at", "updated_at")}  # fmt: skip
    for rel in LINKS[row["kind"]]:
        record[rel] = [
            r[0]
            for r in conn.execute(
                "SELECT dst FROM links WHERE src = ? AND rel = ? ORDER BY dst", (item_id, rel)
            )
        ]
    if row["kind"] == "feature":
        record["tasks"] = [
            r[0]
            for r in conn.execute(
                "SELECT src FROM links WHERE dst = ? AND rel = 'implements' ORDER BY src",
                (item_id,),
            )
        ]
    return record
