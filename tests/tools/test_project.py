"""Project data tools: ids, links, the task status machine, checks, two processes; on
SQLite and on a real PostgreSQL server (knowledge_backends.py)."""

# ruff: noqa: F811 - the fixtures imported from knowledge_backends are used by name
from __future__ import annotations

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
from local_tools.knowledge.project import find_cycles
from local_tools.knowledge.transfer import export
from transports.test_output_schemas import structured

SQL = "x'); DELETE FROM items;-- \" OR 1=1"


def test_requirements_features_components_and_the_design(tb: Toolbox) -> None:
    assert ok(tb.run("create_requirement", {"title": "Sign in"}))["id"] == "REQ-001"
    ok(tb.run("create_requirement", {"title": "Sign out", "priority": "low"}))
    ok(tb.run("create_requirement", {"title": "Audit"}))
    feat = ok(tb.run("add_feature", {"title": "SSO", "covers": ["req-001", "REQ-002", "REQ-001"]}))
    assert feat["id"] == "FEAT-001" and feat["item"]["covers"] == ["REQ-001", "REQ-002"]
    ok(tb.run("add_feature", {"title": "Dark mode"}))
    comp = ok(tb.run("add_component", {"title": "Auth service", "provides": ["FEAT-001"]}))
    assert comp["id"] == "COMP-001"
    reqs = ok(tb.run("get_requirements", {}))
    assert [r["id"] for r in reqs["items"]] == ["REQ-001", "REQ-002", "REQ-003"]
    assert ok(tb.run("get_requirements", {"ids": ["REQ-002"]}))["items"][0]["priority"] == "low"
    cov = ok(tb.run("check_feature_coverage"))
    assert cov == {
        "ok": False,
        "uncovered_requirements": ["REQ-003"],
        "features_covering_nothing": ["FEAT-002"],
    }
    ok(
        tb.run(
            "update_feature_status",
            {"id": "FEAT-002", "status": "in_progress", "covers": ["REQ-003"]},
        )
    )
    assert ok(tb.run("check_feature_coverage"))["ok"]
    doc = ok(tb.run("get_design_document"))
    assert doc["requirements"] == 3 and doc["features"] == 2 and doc["components"] == 1
    assert "**FEAT-001** SSO (planned) — covers REQ-001, REQ-002" in doc["document"]
    assert "**COMP-001** Auth service (planned) — provides FEAT-001" in doc["document"]


def test_unknown_ids_and_wrong_kinds_are_clear_errors_that_save_nothing(tb: Toolbox) -> None:
    assert "REQ-009" in err(
        tb.run("add_feature", {"title": "f", "covers": ["REQ-009"]}), "NOT_FOUND"
    )
    err(tb.run("add_feature", {"title": "f", "covers": ["TASK-001"]}), "INVALID_INPUT")
    err(tb.run("create_task", {"title": "t", "implements": "FEAT-001"}), "NOT_FOUND")
    err(tb.run("get_requirements", {"ids": ["REQ-001"]}), "NOT_FOUND")
    err(tb.run("update_task_status", {"id": "TASK-404", "status": "in_progress"}), "NOT_FOUND")
    err(tb.run("update_feature_status", {"id": "FEAT-1", "status": "done"}), "NOT_FOUND")
    err(tb.run("update_feature_status", {"id": "FEAT-001", "status": "shipped"}), "INVALID_INPUT")
    err(tb.run("delete_project_item", {"id": "COMP-001"}), "NOT_FOUND")
    err(tb.run("create_requirement", {"title": ""}), "INVALID_INPUT")
    err(
        tb.run("create_requirement", {"title": "t", "description": "x" * (10 * 1024 * 1024)}),
        "INVALID_INPUT",
    )
    # Nothing above took an id.
    assert ok(tb.run("add_feature", {"title": "f"}))["id"] == "FEAT-001"
    assert ok(tb.run("create_task", {"title": "t"}))["id"] == "TASK-001"


def test_task_status_machine(tb: Toolbox) -> None:
    ok(tb.run("create_task", {"title": "t"}))
    msg = err(
        tb.run("update_task_status", {"id": "TASK-001", "status": "completed"}), "INVALID_INPUT"
    )
    assert "from pending it may move to in_progress" in msg
    moved = ok(tb.run("update_task_status", {"id": "TASK-001", "status": "in_progress"}))
    assert moved["previous_status"] == "pending" and moved["item"]["status"] == "in_progress"
    ok(tb.run("update_task_status", {"id": "TASK-001", "status": "blocked"}))
    msg = err(
        tb.run("update_task_status", {"id": "TASK-001", "status": "completed"}), "INVALID_INPUT"
    )
    assert "from blocked it may move to in_progress" in msg
    ok(tb.run("update_task_status", {"id": "TASK-001", "status": "in_progress"}))
    ok(tb.run("update_task_status", {"id": "TASK-001", "status": "completed"}))
    msg = err(
        tb.run("update_task_status", {"id": "TASK-001", "status": "pending"}), "INVALID_INPUT"
    )
    assert "completed is final" in msg
    # The same status again is no move.
    assert (
        ok(tb.run("update_task_status", {"id": "TASK-001", "status": "completed"}))[
            "previous_status"
        ]
        == "completed"
    )


def test_ids_are_never_reused_after_a_delete(tb: Toolbox) -> None:
    for _ in range(3):
        ok(tb.run("create_task", {"title": "t"}))
    ok(tb.run("create_task", {"title": "d", "depends_on": ["TASK-003"]}))
    gone = ok(tb.run("delete_project_item", {"id": "TASK-003"}))
    assert gone["note"] == "Still linked from: TASK-004."
    assert ok(tb.run("create_task", {"title": "new"}))["id"] == "TASK-005"
    deps = ok(tb.run("check_task_dependencies"))
    assert deps["missing"] == [{"task": "TASK-004", "missing": ["TASK-003"]}]


def test_cycles_are_caught_and_printed_as_chains(tb: Toolbox) -> None:
    ok(tb.run("create_task", {"title": "a", "depends_on": ["TASK-003"]}))
    ok(tb.run("create_task", {"title": "b", "depends_on": ["TASK-001"]}))
    made = ok(tb.run("create_task", {"title": "c", "depends_on": ["TASK-002"]}))
    assert "Dependency cycle: TASK-001 → TASK-003 → TASK-002 → TASK-001." in made["note"]
    ok(tb.run("create_task", {"title": "d"}))
    ok(tb.run("create_task", {"title": "e", "depends_on": ["TASK-004", "TASK-009"]}))
    deps = ok(tb.run("check_task_dependencies"))
    assert deps["ok"] is False
    assert deps["cycles"] == [["TASK-001", "TASK-003", "TASK-002", "TASK-001"]]
    assert deps["missing"] == [{"task": "TASK-005", "missing": ["TASK-009"]}]
    assert "Cycle: TASK-001 → TASK-003 → TASK-002 → TASK-001" in tb.render(
        tb.run("check_task_dependencies")
    )
    plan = ok(tb.run("get_implementation_plan"))
    assert [s["id"] for s in plan["steps"]] == ["TASK-004", "TASK-005"]
    assert plan["unordered"] == ["TASK-001", "TASK-002", "TASK-003"]
    # Breaking the cycle orders everything, dependencies first.
    ok(tb.run("update_task_status", {"id": "TASK-001", "depends_on": []}))
    plan = ok(tb.run("get_implementation_plan"))
    assert [s["id"] for s in plan["steps"]] == [
        "TASK-001",
        "TASK-004",
        "TASK-002",
        "TASK-005",
        "TASK-003",
    ]
    assert plan["cycles"] == [] and plan["unordered"] == []
    err(
        tb.run("update_task_status", {"id": "TASK-001", "depends_on": ["TASK-001"]}),
        "INVALID_INPUT",
    )


def test_find_cycles_finds_each_loop_once() -> None:
    graph = {"A": ["B"], "B": ["C", "A"], "C": ["A"], "D": ["D2"], "D2": ["D"], "E": []}
    assert find_cycles(graph) == [["A", "B", "A"], ["A", "B", "C", "A"], ["D", "D2", "D"]]


def test_sql_looking_text_is_stored_literally(tb: Toolbox) -> None:
    ok(tb.run("create_requirement", {"title": SQL, "description": SQL}))
    item = ok(tb.run("get_requirements", {}))["items"][0]
    assert item["title"] == SQL and item["description"] == SQL
    err(tb.run("get_requirements", {"ids": [SQL]}), "NOT_FOUND")


def test_output_shapes(tb: Toolbox) -> None:
    structured(tb, "get_implementation_plan", {})
    structured(tb, "check_task_dependencies", {})
    structured(tb, "check_feature_coverage", {})
    structured(tb, "get_design_document", {})
    structured(tb, "create_task", {"title": "a", "depends_on": ["TASK-002"]})
    structured(tb, "create_task", {"title": "b", "depends_on": ["TASK-001"]})
    structured(tb, "get_implementation_plan", {})
    structured(tb, "delete_project_item", {"id": "TASK-001"})


def test_project_permissions_follow_the_rules(make_toolbox: Any) -> None:
    tb = make_toolbox({"permissions": {"write:project": "deny"}})
    err(tb.run("create_requirement", {"title": "r"}), "PERMISSION_DENIED")
    ok(tb.run("get_requirements", {}))


WRITER = """
import json, sys
from local_tools import Toolbox
who, rounds, ws, state, config = sys.argv[1], int(sys.argv[2]), *sys.argv[3:6]
tb = Toolbox(ws, json.loads(config), state_dir=state, audit=False, plugins=False)
for n in range(rounds):
    env = tb.run("create_task", {"title": f"{who} {n}"})
    assert env["success"], env
tb.close()
"""


@pytest.mark.timeout(120)
def test_two_processes_creating_at_once_get_distinct_ids(
    knowledge_config: dict[str, Any], workspace: Path, tmp_path: Path
) -> None:
    state, rounds = tmp_path / "state", 40
    run_writers(WRITER, knowledge_config, workspace, state, rounds)
    store = open_store_for(knowledge_config, state, workspace)
    try:
        doc = export(store)
    finally:
        store.close()
    assert sorted(r["id"] for r in doc["items"]) == [
        f"TASK-{n:03d}" for n in range(1, 2 * rounds + 1)
    ]
    assert doc["counters"] == [{"kind": "task", "last": 2 * rounds}]
