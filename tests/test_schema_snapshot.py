"""Pins what models see of every built-in tool: name, description, schema, hints.

A change here is a change to the contract with every model and client. After an
intended change, regenerate with `UPDATE_SNAPSHOTS=1 pytest tests/test_schema_snapshot.py`
and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from local_tools.tools import builtin_tools

SNAPSHOT = Path(__file__).parent / "snapshots" / "tool_schemas.json"


def test_tool_schemas_match_snapshot() -> None:
    current = [t.describe() for t in builtin_tools()]
    text = json.dumps(current, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert SNAPSHOT.exists(), "no snapshot yet: run with UPDATE_SNAPSHOTS=1"
    assert text == SNAPSHOT.read_text(encoding="utf-8")


def test_every_schema_is_a_closed_object() -> None:
    for t in builtin_tools():
        schema = t.parameters
        assert schema["type"] == "object", t.name
        assert schema.get("additionalProperties") is False, t.name
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{t.name}.{name} has no description"
