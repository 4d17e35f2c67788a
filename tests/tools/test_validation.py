"""check_data_format: JSON Schema validation of workspace files through the jail."""

from __future__ import annotations

import json
from pathlib import Path

from envelopes import err, ok
from local_tools import Toolbox
from transports.test_output_schemas import structured

SCHEMA = {
    "type": "object",
    "required": ["name", "items"],
    "properties": {
        "name": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object", "required": ["id"],
                                             "properties": {"id": {"type": "integer"}}}},
    },
}  # fmt: skip


def test_valid_and_invalid_json(tb: Toolbox, workspace: Path) -> None:
    (workspace / "good.json").write_text(json.dumps({"name": "n", "items": [{"id": 1}]}))
    assert ok(tb.run("check_data_format", {"path": "good.json", "schema": SCHEMA}))["valid"]
    (workspace / "bad.json").write_text(json.dumps({"items": [{"id": 1}, {"id": "2"}, {}]}))
    out = ok(tb.run("check_data_format", {"path": "bad.json", "schema": SCHEMA}))
    assert out["valid"] is False and out["error_count"] == 3
    assert [(e["path"], e["message"]) for e in out["errors"]] == [
        ("$", "'name' is a required property"),
        ("$.items[1].id", "'2' is not of type 'integer'"),
        ("$.items[2]", "'id' is a required property"),
    ]
    assert "$.items[1].id: '2' is not of type 'integer'" in tb.render(
        tb.run("check_data_format", {"path": "bad.json", "schema": SCHEMA})
    )


def test_toml_and_a_schema_file(tb: Toolbox, workspace: Path) -> None:
    (workspace / "conf.toml").write_text('name = "n"\n[[items]]\nid = 1\n')
    (workspace / "schema.json").write_text(json.dumps(SCHEMA))
    out = ok(tb.run("check_data_format", {"path": "conf.toml", "schema": "schema.json"}))
    assert out["valid"] and out["format"] == "toml"


def test_bad_input(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.json").write_text("{}")
    (workspace / "broken.json").write_text("{not json")
    assert "not valid JSON" in err(
        tb.run("check_data_format", {"path": "broken.json", "schema": {}}), "INVALID_INPUT"
    )
    msg = err(
        tb.run("check_data_format", {"path": "a.json", "schema": {"type": 12}}), "INVALID_INPUT"
    )
    assert "not a valid JSON Schema" in msg
    msg = err(
        tb.run(
            "check_data_format",
            {"path": "a.json", "schema": {"$ref": "https://example.com/s.json"}},
        ),
        "INVALID_INPUT",
    )
    assert "$ref" in msg
    err(tb.run("check_data_format", {"path": "missing.json", "schema": {}}), "NOT_FOUND")
    err(tb.run("check_data_format", {"path": "a.json", "schema": "missing.json"}), "NOT_FOUND")
    (workspace / "a.yaml").write_text("a: 1\n")
    env = tb.run("check_data_format", {"path": "a.yaml", "schema": {}})
    assert env["success"] or "PyYAML" in env["error"]["message"]


def test_paths_go_through_the_jail(tb: Toolbox, tmp_path: Path) -> None:
    (tmp_path / "outside.json").write_text("{}")
    env = tb.run("check_data_format", {"path": "../outside.json", "schema": {}})
    assert not env["success"] and env["error"]["error_code"] in (
        "PERMISSION_DENIED",
        "INVALID_INPUT",
    )


def test_output_shape(tb: Toolbox, workspace: Path) -> None:
    (workspace / "bad.json").write_text("[]")
    structured(tb, "check_data_format", {"path": "bad.json", "schema": SCHEMA})
