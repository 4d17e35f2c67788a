"""Every enabled tool's declaration, in every format, against the consumers' published rules.

The rules (/work/shared/SCHEMAS.md) are asserted here directly, not through the
converter's helpers, so a new tool or a converter change cannot ship a declaration
that a client (OpenAI, OpenAI strict, Anthropic, an MCP client) would reject.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import AliasChoices, AliasPath, BaseModel, ConfigDict, Field

from local_tools.core.tool import Args, Tool, tool
from local_tools.toolbox import Toolbox
from local_tools.transports.schemas import (
    FORMATS,
    SchemaError,
    from_openai_strict,
    to_mcp,
    to_openai_strict,
    tool_schemas,
)

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ANTHROPIC_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ANTHROPIC_PROPERTY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
MCP_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
OPENAI_DESCRIPTION_LIMIT = 1024
STRICT_ALLOWED = {
    "type", "description", "properties", "required", "additionalProperties", "items",
    "anyOf", "enum", "const", "pattern", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}  # fmt: skip
MCP_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")

# Valid arguments for every built-in tool, optional fields included where they
# exercise a rewrite (a map, an anyOf, a nested model). A new tool must add one.
SAMPLES: dict[str, dict[str, Any]] = {
    "read_file": {"path": "a.txt", "offset": 2},
    "read_many_files": {"paths": ["a.txt"], "limit": 10},
    "write_file": {"path": "a.txt", "content": "hi"},
    "edit": {"path": "a.txt", "old_string": "a", "new_string": "b"},
    "multi_edit": {"path": "a.txt", "edits": [{"old_string": "a", "new_string": "b"}]},
    "apply_patch": {"patch": "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** End Patch\n"},
    "list_dir": {},
    "file_stat": {"path": "a.txt"},
    "file_delete": {"path": "a.txt"},
    "file_move": {"source": "a.txt", "destination": "b.txt"},
    "file_copy": {"source": "a.txt", "destination": "b.txt", "overwrite": True},
    "glob": {"pattern": "**/*.py"},
    "grep": {"pattern": "x", "include": "*.py"},
    "lsp": {"operation": "definition", "path": "a.py", "symbol": "Point.norm"},
    "checkpoint_list": {"limit": 5, "all_sessions": True},
    "checkpoint_diff": {"checkpoint": 1, "paths": ["a.txt"]},
    "restore": {"checkpoint": 1, "paths": ["a.txt"], "force": False, "dry_run": False},
    "exec_cmd": {"command": "echo hi", "env": {"A": "1"}, "timeout": 5},
    "process_output": {"process_id": "p1"},
    "process_input": {"process_id": "p1", "input": "y"},
    "process_kill": {"process_id": "p1"},
    "process_list": {},
    # The web tools run for real against a loopback server in test_output_schemas.py.
    "web_fetch": {"url": "https://example.com/docs", "format": "markdown", "max_length": 5000},
    "http_request": {
        "url": "https://example.com/api",
        "method": "POST",
        "headers": {"Accept": "application/json"},
        # JSON as text: what a strict OpenAI model can send (a free-form object it cannot).
        "body": '{"name": "ada"}',
    },
    "web_search": {"query": "python httpx", "num_results": 2},
    # The browser tools run for real against a loopback page in test_output_schemas.py.
    "browser_launch": {"headless": True},
    "browser_navigate": {"url": "https://example.com/form"},
    "browser_snapshot": {"max_length": 5000},
    "browser_click": {"selector": "#go"},
    "browser_type": {"selector": "#name", "text": "Ada", "submit": False},
    "browser_scroll": {"direction": "down", "amount": 300},
    "browser_hover": {"selector": "#go"},
    "browser_press_key": {"key": "a", "modifiers": ["Control"]},
    "browser_screenshot": {"full_page": True},
    "browser_get_dom": {"selector": "body", "max_depth": 3},
    "browser_evaluate": {"script": "() => document.title"},
    "browser_wait_for": {"selector": "#go", "timeout": 5},
    "browser_go_back": {},
    "browser_go_forward": {},
    "browser_reload": {},
    "browser_get_state": {},
    # The system tools run in test_output_schemas.py with the desktop stubbed.
    "screenshot": {"monitor": 1},
    "open_in_folder": {"path": "a.txt"},
    "question": {"question": "Which one?", "options": ["a", "b"]},
    # The review tools run in test_output_schemas.py with a person at a terminal.
    "review_and_edit_file": {"path": "a.txt", "prompt": "Ready to ship?"},
    "review_with_feedback_file": {"path": "a.txt"},
    "review_and_edit_content": {"content": "# PRD\n\nA search page.\n", "title": "PRD"},
    "review_with_feedback_content": {"content": "# Design\n", "title": "Design"},
    "copy_workspace_to_project": {"source": "build", "target": "site"},
    "todo_write": {
        "todos": [
            {
                "id": "1",
                "content": "Write the tests",
                "status": "in_progress",
                "priority": "high",
                "activeForm": "Writing the tests",
            }
        ]
    },
    "todo_read": {},
    "skill": {"skill": ""},
    "task": {"description": "find the bug", "prompt": "Read src/app.py and say what fails."},
    "compact": {"messages": '[{"role": "user", "content": "hi"}]', "budget": 1000},
    "save_memory": {
        "kind": "insight",
        "content": "WAL lets readers run during writes",
        "title": "SQLite WAL",
        "tags": ["sqlite"],
        "scope": "project",
    },
    "save_insight": {"content": "The cache is cold after deploys", "tags": ["cache"]},
    "save_issue": {"content": "Flaky test in the HTTP suite", "scope": "iteration"},
    "save_learning": {"content": "FTS5 bm25 ranks lower is better", "scope": "session"},
    "query_memory": {"keywords": "sqlite wal", "scope": "merged", "limit": 5},
    "promote_memory": {"id": 1, "to": "decision"},
    "promote_to_decision": {"id": 1},
    "promote_to_pattern": {"id": 1},
    "memory": {"action": "write", "key": "build.command", "value": "make test"},
    "create_requirement": {"title": "Users sign in", "description": "With SSO", "priority": "high"},
    "get_requirements": {"ids": ["REQ-001"]},
    "add_feature": {"title": "SSO login", "covers": ["REQ-001"]},
    "update_feature_status": {"id": "FEAT-001", "status": "in_progress", "covers": ["REQ-001"]},
    "add_component": {"title": "Auth service", "provides": ["FEAT-001"]},
    "create_task": {
        "title": "Write the callback",
        "implements": "FEAT-001",
        "depends_on": ["TASK-002"],
    },
    "update_task_status": {"id": "TASK-001", "status": "in_progress"},
    "delete_project_item": {"id": "TASK-001"},
    "get_implementation_plan": {},
    "get_design_document": {},
    "check_feature_coverage": {},
    "check_task_dependencies": {},
    "check_data_format": {
        "path": "data.json",
        "schema": '{"type": "object", "required": ["name"]}',
    },
    "export_knowledge": {"path": "knowledge.json"},
    "import_knowledge": {"path": "knowledge.json", "mode": "merge"},
    # `args` as JSON text is what strict OpenAI models can send (an empty object otherwise).
    "batch": {
        "tool_calls": [
            {"tool": "read_file", "args": '{"path": "a.txt"}'},
            {"tool": "list_dir", "args": {}},
        ]
    },
    "find_tools": {"query": "browser screenshot", "load": False},
    "call_tool": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
}


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> list[Tool]:
    root = tmp_path_factory.mktemp("schemas")
    (root / "ws").mkdir()
    tb = Toolbox(root / "ws", state_dir=root / "state", audit=False, plugins=False)
    enabled = [t for t in tb.registry.enabled() if t.name != "invalid"]
    assert len(enabled) >= 15
    return enabled


def _params(fmt: str, decl: dict[str, Any]) -> dict[str, Any]:
    if fmt.startswith("openai"):
        assert decl["type"] == "function"
        return decl["function"]["parameters"]  # type: ignore[no-any-return]
    return decl["input_schema" if fmt == "anthropic" else "inputSchema"]  # type: ignore[no-any-return]


def _nodes(node: Any, depth: int = 0) -> Iterator[tuple[dict[str, Any], int]]:
    """Every subschema with its object nesting level (the root object is level 1)."""
    if not isinstance(node, dict):
        return
    is_object = node.get("type") == "object" or "properties" in node
    level = depth + 1 if is_object else depth
    yield node, level
    for sub in node.get("properties", {}).values():
        yield from _nodes(sub, level)
    for key in ("items", "additionalProperties", "not", "if", "then", "else"):
        if isinstance(node.get(key), dict):
            yield from _nodes(node[key], level)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for sub in node.get(key, []):
            yield from _nodes(sub, level)
    for sub in node.get("$defs", {}).values():
        yield from _nodes(sub, 0)


def _validate(schema: dict[str, Any], instance: Any) -> list[str]:
    return [e.message for e in Draft202012Validator(schema).iter_errors(instance)]


def _as_strict(schema: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """What a strict-mode model sends for ``args``: every field present, maps as pairs."""
    out: dict[str, Any] = {}
    for name in schema["properties"]:
        value = copy.deepcopy(args.get(name))
        if isinstance(value, dict):
            value = [{"key": k, "value": v} for k, v in value.items()]
        out[name] = value
    for edit in out.get("edits") or []:
        edit.setdefault("replace_all", None)
    return out


# --- every format -----------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_enabled_tool_is_declared_once(tools: list[Tool], fmt: str) -> None:
    decls = tool_schemas(tools, fmt)  # type: ignore[arg-type]
    names = [d["function"]["name"] if fmt.startswith("openai") else d["name"] for d in decls]
    assert sorted(names) == sorted(t.name for t in tools)
    assert len(set(names)) == len(names)
    pattern = {"anthropic": ANTHROPIC_NAME, "mcp": MCP_NAME}.get(fmt, OPENAI_NAME)
    assert [n for n in names if not pattern.match(n)] == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_schemas_are_valid_self_contained_objects(tools: list[Tool], fmt: str) -> None:
    for decl, t in zip(tool_schemas(tools, fmt), tools, strict=True):  # type: ignore[arg-type]
        schema = _params(fmt, decl)
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", t.name
        assert "anyOf" not in schema and "oneOf" not in schema, t.name
        assert "$defs" not in schema and "definitions" not in schema, t.name
        assert "$schema" not in schema, t.name  # absent means 2020-12 for MCP
        for node, _ in _nodes(schema):
            assert "$ref" not in node, f"{t.name}: a $ref some client cannot resolve"
        if fmt == "anthropic":
            bad = [k for k in schema.get("properties", {}) if not ANTHROPIC_PROPERTY.match(k)]
            assert bad == [], t.name


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "mcp"])
def test_samples_validate_and_use_names_the_tool_accepts(tools: list[Tool], fmt: str) -> None:
    assert sorted(SAMPLES) == sorted(t.name for t in tools), "add a sample for each new tool"
    for decl, t in zip(tool_schemas(tools, fmt), tools, strict=True):  # type: ignore[arg-type]
        sample = SAMPLES[t.name]
        assert _validate(_params(fmt, decl), sample) == [], t.name
        t.args_model.model_validate(sample)
        # Every published property name (aliases included) is one the tool accepts.
        for key in _params(fmt, decl).get("properties", {}):
            assert _accepts(t.args_model, key), f"{t.name}: publishes {key!r}"


def _accepts(model: type[BaseModel], key: str) -> bool:
    by_name = bool(model.model_config.get("populate_by_name"))
    for name, field in model.model_fields.items():
        alias = field.validation_alias if field.validation_alias is not None else field.alias
        if key == name and (alias is None or by_name):
            return True
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        if key in choices:
            return True
    return False


# --- MCP --------------------------------------------------------------------------


def test_mcp_titles_hints_and_empty_input(tools: list[Tool]) -> None:
    for decl, t in zip(tool_schemas(tools, "mcp"), tools, strict=True):
        assert isinstance(decl["title"], str) and decl["title"], t.name
        ann = decl["annotations"]
        assert ann["title"] == decl["title"]
        for hint in MCP_HINTS:
            assert isinstance(ann[hint], bool), f"{t.name}: {hint} must be sent explicitly"
        assert ann["readOnlyHint"] is t.hints.read_only
        assert ann["destructiveHint"] is t.hints.destructive
        if not t.args_model.model_fields:
            assert decl["inputSchema"] == {"type": "object", "additionalProperties": False}
    assert any(not t.args_model.model_fields for t in tools), "process_list has no parameters"


# --- OpenAI -----------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "strict"), [("openai", False), ("openai-strict", True)])
def test_openai_strict_flag_and_description_length(
    tools: list[Tool], fmt: str, strict: bool
) -> None:
    for decl in tool_schemas(tools, fmt):  # type: ignore[arg-type]
        fn = decl["function"]
        assert fn["strict"] is strict
        assert 0 < len(fn["description"]) <= OPENAI_DESCRIPTION_LIMIT, fn["name"]


def test_every_tool_description_fits_openai_limit(tools: list[Tool]) -> None:
    # The OpenAI export would cut a longer one, losing text a model should read.
    long = {
        t.name: len(t.description) for t in tools if len(t.description) > OPENAI_DESCRIPTION_LIMIT
    }
    assert long == {}


def test_openai_strict_rules(tools: list[Tool]) -> None:
    for decl, t in zip(tool_schemas(tools, "openai-strict"), tools, strict=True):
        schema = decl["function"]["parameters"]
        original_required = set(t.parameters.get("required", []))
        total_props = 0
        for node, level in _nodes(schema):
            assert level <= 10, f"{t.name}: nesting"
            assert set(node) <= STRICT_ALLOWED, f"{t.name}: {set(node) - STRICT_ALLOWED}"
            assert len(node.get("enum", [])) <= 1000, t.name
            if node.get("type") == "object" or "properties" in node:
                assert node["additionalProperties"] is False, t.name
                assert set(node["required"]) == set(node["properties"]), t.name
                total_props += len(node["properties"])
        assert total_props <= 5000
        for name, prop in schema["properties"].items():
            if name not in original_required:
                assert _validate(prop, None) == [], f"{t.name}.{name} must take null"
        for key in ("minLength", "maxLength"):
            for name, prop in t.parameters["properties"].items():
                if key in str(prop):
                    assert "characters" in schema["properties"][name]["description"], name


def test_openai_strict_samples_round_trip(tools: list[Tool]) -> None:
    for decl, t in zip(tool_schemas(tools, "openai-strict"), tools, strict=True):
        schema = decl["function"]["parameters"]
        sample = SAMPLES[t.name]
        sent = _as_strict(schema, sample)
        assert _validate(schema, sent) == [], t.name
        restored = from_openai_strict(t, sent)
        assert t.args_model.model_validate(restored) == t.args_model.model_validate(sample)


# --- rewrites and refusals ------------------------------------------------------------


class _Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tag: str = Field(min_length=2, description="A tag.")


class _Args(Args):
    name: str = Field(max_length=5, description="Short.")
    inner: _Inner | None = Field(default=None, description="Nested.")
    count: int = Field(default=3, description="How many.")
    labels: dict[str, int] = Field(default_factory=dict, description="Labels.")


def _make(name: str, args: type[BaseModel]) -> Tool:
    return tool(name, args=args, description="A test tool.")(lambda a, ctx: None)


def test_strict_rewrite_of_a_nested_model() -> None:
    t = _make("demo", _Args)
    schema = to_openai_strict(t)["function"]["parameters"]
    props = schema["properties"]
    assert props["name"] == {"type": "string", "description": "Short. At most 5 characters."}
    assert props["count"]["type"] == ["integer", "null"]
    assert "Default: 3." in props["count"]["description"]
    inner = next(b for b in props["inner"]["anyOf"] if b.get("type") == "object")
    assert inner["additionalProperties"] is False and inner["required"] == ["tag"]
    assert "At least 2 characters." in inner["properties"]["tag"]["description"]
    assert props["labels"]["items"]["required"] == ["key", "value"]
    sent = {"name": "ab", "inner": None, "count": None, "labels": [{"key": "x", "value": 1}]}
    assert _validate(schema, sent) == []
    assert from_openai_strict(t, sent) == {"name": "ab", "inner": None, "labels": {"x": 1}}


def test_mcp_inlines_refs_keeping_the_field_description() -> None:
    schema = to_mcp(_make("demo", _Args))["inputSchema"]
    inner = schema["properties"]["inner"]
    assert "$ref" not in str(schema) and inner["description"] == "Nested."


def test_bad_names_and_limits_are_refused() -> None:
    # Names no consumer takes are refused where the tool is declared (core/tool.py).
    for bad in ("a b", "x" * 65, "a\x1bb"):
        with pytest.raises(ValueError, match="tool name"):
            _make(bad, _Args)
    with pytest.raises(SchemaError, match="does not match"):
        tool_schemas([_make("ns.tool", _Args)], "openai")
    with pytest.raises(SchemaError, match="does not match"):
        tool_schemas([_make("ns.tool", _Args)], "anthropic")
    tool_schemas([_make("ns.tool", _Args)], "mcp")  # dots are fine for MCP only
    with pytest.raises(SchemaError, match="unique"):
        tool_schemas([_make("a", _Args), _make("a", _Args)], "mcp")

    class Big(Args):
        pick: str = Field(json_schema_extra={"enum": [str(i) for i in range(1001)]})

    with pytest.raises(SchemaError, match="enum"):
        to_openai_strict(_make("big", Big))


def test_deep_and_recursive_models_are_refused() -> None:
    level: type[BaseModel] = Args
    for i in range(11):
        level = type(f"L{i}", (Args,), {"__annotations__": {"x": level}})
    with pytest.raises(SchemaError, match="nest"):
        to_openai_strict(_make("deep", level))

    class Node(Args):
        child: Node | None = None

    with pytest.raises(SchemaError, match="recursive"):
        to_mcp(_make("tree", Node))


def test_aliases_publish_only_names_the_tool_accepts() -> None:
    class Choices(Args):
        command: str = Field(validation_alias=AliasChoices("command", "cmd"))

    props = to_mcp(_make("c", Choices))["inputSchema"]["properties"]
    assert list(props) == ["command"]

    class PathOnly(BaseModel):
        model_config = ConfigDict(extra="forbid")
        value: str = Field(validation_alias=AliasPath("outer", "inner"))

    # pydantic would publish "value", which this model rejects.
    with pytest.raises(SchemaError, match="rejects"):
        to_mcp(_make("p", PathOnly))


def test_samples_cover_the_tools_on_disk() -> None:
    tools_dir = Path(__file__).parents[2] / "src" / "local_tools" / "tools"
    modules = {p.stem for p in tools_dir.glob("*.py") if not p.stem.startswith("_")}
    assert modules - {"__init__", "invalid"} <= set(SAMPLES)
