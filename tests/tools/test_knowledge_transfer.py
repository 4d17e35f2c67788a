"""export_knowledge / import_knowledge: a round trip, merge and replace, bad files; on
SQLite and on a real PostgreSQL server (knowledge_backends.py)."""

# ruff: noqa: F811 - the fixtures imported from knowledge_backends are used by name
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from envelopes import err, ok
from knowledge_backends import (  # noqa: F401 - fixtures, by name
    backend,
    knowledge_config,
    make_toolbox,
    pg_schemas,
    pg_server,
    tb,
)
from local_tools import Toolbox
from transports.test_output_schemas import structured


def _fill(tb: Toolbox) -> None:
    ok(tb.run("save_insight", {"content": "WAL helps", "tags": ["sqlite"]}))
    ok(tb.run("promote_to_decision", {"id": 1}))
    ok(tb.run("memory", {"action": "write", "key": "k", "value": "v"}))
    ok(tb.run("create_requirement", {"title": "r"}))
    ok(tb.run("add_feature", {"title": "f", "covers": ["REQ-001"]}))
    ok(tb.run("create_task", {"title": "a"}))
    ok(tb.run("create_task", {"title": "b", "depends_on": ["TASK-001"]}))
    ok(tb.run("delete_project_item", {"id": "TASK-002"}))


def test_round_trip_into_another_workspace(
    make_toolbox: Any, workspace: Path, tmp_path: Path
) -> None:
    tb = make_toolbox()
    _fill(tb)
    out = ok(tb.run("export_knowledge", {"path": "kb/knowledge.json"}))
    assert out["counts"]["memories"] == 2 and out["counts"]["items"] == 3
    doc = json.loads((workspace / "kb" / "knowledge.json").read_text())
    assert doc["format"] == "local-tools-knowledge"
    other = tmp_path / "other"
    other.mkdir()
    (other / "k.json").write_text(json.dumps(doc))
    tb2 = make_toolbox(workspace=other)
    added = ok(tb2.run("import_knowledge", {"path": "k.json"}))["added"]
    assert added == {"memories": 2, "kv": 1, "items": 3, "links": 1}
    assert ok(tb2.run("query_memory", {"keywords": "wal"}))["count"] == 2
    assert ok(tb2.run("memory", {"action": "read", "key": "k"}))["value"] == "v"
    # The deleted TASK-002 stays retired in the new workspace too.
    assert ok(tb2.run("create_task", {"title": "c"}))["id"] == "TASK-003"
    # Merging again adds nothing; replace brings the store back to the file.
    assert set(ok(tb2.run("import_knowledge", {"path": "k.json"}))["added"].values()) == {0}
    ok(tb2.run("import_knowledge", {"path": "k.json", "mode": "replace"}))
    ids = [t["id"] for t in ok(tb2.run("get_implementation_plan"))["steps"]]
    assert ids == ["TASK-001"]
    assert ok(tb2.run("create_task", {"title": "d"}))["id"] == "TASK-004"


def test_bad_files_change_nothing(tb: Toolbox, workspace: Path) -> None:
    ok(tb.run("create_requirement", {"title": "r"}))
    (workspace / "x.json").write_text("{nope")
    err(tb.run("import_knowledge", {"path": "x.json"}), "INVALID_INPUT")
    (workspace / "y.json").write_text('{"format": "something-else"}')
    err(tb.run("import_knowledge", {"path": "y.json", "mode": "replace"}), "INVALID_INPUT")
    bad = {"format": "local-tools-knowledge", "version": 1, "items": [{"title": "no id"}]}
    (workspace / "z.json").write_text(json.dumps(bad))
    err(tb.run("import_knowledge", {"path": "z.json", "mode": "replace"}), "INVALID_INPUT")
    err(tb.run("import_knowledge", {"path": "missing.json"}), "NOT_FOUND")
    assert ok(tb.run("get_requirements", {}))["count"] == 1


def test_output_shapes(tb: Toolbox) -> None:
    structured(tb, "export_knowledge", {"path": "k.json"})
    structured(tb, "import_knowledge", {"path": "k.json"})


def test_sqlite_export_imports_into_postgresql(
    pg_server: str, workspace: Path, tmp_path: Path
) -> None:
    """A project moves from its SQLite file to a shared PostgreSQL store, ids and all."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    lite = Toolbox(workspace, state_dir=tmp_path / "state", audit=False)
    pg = Toolbox(workspace, {"knowledge": {"url": pg_server, "pg_schema": schema}},
                 state_dir=tmp_path / "state", audit=False)  # fmt: skip
    try:
        _fill(lite)
        ok(lite.run("export_knowledge", {"path": "k.json"}))
        added = ok(pg.run("import_knowledge", {"path": "k.json"}))["added"]
        assert added == {"memories": 2, "kv": 1, "items": 3, "links": 1}
        assert [e["id"] for e in ok(pg.run("query_memory", {"keywords": "wal"}))["entries"]] == [
            2,
            1,
        ]
        assert ok(pg.run("save_insight", {"content": "new"}))["id"] == 3  # past imported ids
        assert ok(pg.run("create_task", {"title": "c"}))["id"] == "TASK-003"
    finally:
        lite.close()
        pg.close()
        import psycopg

        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _exported(tb: Toolbox, workspace: Path) -> dict[str, Any]:
    _fill(tb)
    ok(tb.run("export_knowledge", {"path": "good.json"}))
    return json.loads((workspace / "good.json").read_text())


def _spoiled(doc: dict[str, Any], table: str, **changes: Any) -> dict[str, Any]:
    spoiled = json.loads(json.dumps(doc))
    spoiled[table][0].update(changes)
    return spoiled


BAD_ROWS = [
    ("items", {"status": "exploded"}),
    ("items", {"kind": "epic"}),
    ("items", {"priority": "urgent"}),
    ("items", {"id": "TASK-1; DROP"}),
    ("items", {"title": None}),
    ("memories", {"kind": "rumour"}),
    ("memories", {"scope": "galaxy"}),
    ("memories", {"history": "not json"}),
    ("memories", {"history": '{"an": "object"}'}),
    ("memories", {"history": "[1, 2]"}),
    ("memories", {"tags": None}),
    ("memories", {"id": 2**63}),
    ("memories", {"promoted_from": "one"}),
    ("links", {"rel": "owns"}),
    ("kv", {"value": None}),
]


def test_invalid_rows_are_refused_as_on_create(tb: Toolbox, workspace: Path) -> None:
    """A hand-edited export with values create would refuse: INVALID_INPUT, nothing
    changed, and every tool that reads the store still answers (before: INTERNAL_ERROR)."""
    doc = _exported(tb, workspace)
    for n, (table, changes) in enumerate(BAD_ROWS):
        (workspace / f"bad{n}.json").write_text(json.dumps(_spoiled(doc, table, **changes)))
        message = err(
            tb.run("import_knowledge", {"path": f"bad{n}.json", "mode": "replace"}),
            "INVALID_INPUT",
        )
        assert table in message, (table, changes)
    assert ok(tb.run("query_memory", {"keywords": "wal"}))["count"] == 2
    assert ok(tb.run("get_requirements", {}))["count"] == 1
    assert [s["id"] for s in ok(tb.run("get_implementation_plan"))["steps"]] == ["TASK-001"]
    assert ok(tb.run("check_task_dependencies", {}))
    assert ok(tb.run("memory", {"action": "read", "key": "k"}))["value"] == "v"
