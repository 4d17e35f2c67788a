"""Tool declarations in the formats model APIs expect: OpenAI (plain and strict), Anthropic, MCP.

Each declaration follows its consumer's published rules (/work/shared/SCHEMAS.md):
names are checked, schemas are self-contained objects, and the strict OpenAI variant
is rewritten by ``schema_rewrite``. A tool that breaks a rule no rewrite can fix raises
``SchemaError`` naming the tool, rather than reaching a client that would reject it.
Only MCP has a field for a tool's output schema (``outputSchema``); the other formats
never carry it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import AliasChoices, AliasPath, BaseModel

from local_tools.core.tool import Tool
from local_tools.transports.schema_rewrite import (
    SchemaError,
    compact,
    inline_refs,
    restore_strict_arguments,
    to_strict,
)

__all__ = [
    "FORMATS",
    "MAX_DESCRIPTION",
    "SchemaError",
    "from_openai_strict",
    "input_schema",
    "output_schema",
    "to_anthropic",
    "to_mcp",
    "to_openai",
    "to_openai_strict",
    "tool_schemas",
]

Format = Literal["openai", "openai-strict", "anthropic", "mcp"]
FORMATS: tuple[Format, ...] = ("openai", "openai-strict", "anthropic", "mcp")

NAME_PATTERNS: dict[str, re.Pattern[str]] = {
    "openai": re.compile(r"[a-zA-Z0-9_-]{1,64}"),
    "anthropic": re.compile(r"[a-zA-Z0-9_-]{1,64}"),
    "mcp": re.compile(r"[A-Za-z0-9_.-]{1,128}"),
}
# Anthropic rejects property keys outside this pattern (reported API error).
ANTHROPIC_PROPERTY = re.compile(r"[a-zA-Z0-9_.-]{1,64}")
# OpenAI rejects longer function descriptions (reported API error).
MAX_DESCRIPTION = 1024
EMPTY_MCP_INPUT: dict[str, Any] = {"type": "object", "additionalProperties": False}
# Top-level output keys the MCP transport sends as image content, not in structuredContent.
BINARY_SUFFIX = "_base64"


def _check_name(tool: Tool, fmt: str) -> None:
    if not NAME_PATTERNS[fmt].fullmatch(tool.name):
        raise SchemaError(
            f"tool name {tool.name!r} does not match {NAME_PATTERNS[fmt].pattern} ({fmt})"
        )


def _accepted_names(model: type[BaseModel]) -> set[str]:
    """Top-level keys ``model_validate`` accepts, so no published name is one it rejects."""
    by_name = bool(
        model.model_config.get("populate_by_name") or model.model_config.get("validate_by_name")
    )
    names: set[str] = set()
    for name, field in model.model_fields.items():
        alias = field.validation_alias if field.validation_alias is not None else field.alias
        if alias is None or by_name:
            names.add(name)
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        for choice in choices:
            if isinstance(choice, str):
                names.add(choice)
            elif isinstance(choice, AliasPath) and len(choice.path) == 1:
                names.add(str(choice.path[0]))
    return names


def input_schema(tool: Tool) -> dict[str, Any]:
    """The tool's argument schema, self-contained (no ``$ref``) and an object at the root,
    without what tells a model nothing (``compact``: null branches, guard bounds)."""
    schema = compact(inline_refs(tool.parameters))
    schema["type"] = "object"
    # pydantic publishes an AliasPath-only field under its own name, which the model
    # rejects unless it populates by name: such a schema would make every call fail.
    wrong = set(schema.get("properties", {})) - _accepted_names(tool.args_model)
    if wrong:
        raise SchemaError(f"tool {tool.name!r} publishes names its model rejects: {sorted(wrong)}")
    return schema


def output_schema(tool: Tool) -> dict[str, Any] | None:
    """The MCP ``outputSchema`` of a tool that declares its output, else None.

    Self-contained (no ``$ref``), an object at the root, and describing structuredContent
    as the transport sends it: without the top-level ``*_base64`` keys, which go out as
    image content instead. The runner's ``truncated``/``full_output_path`` are in it
    already (``Tool.output_schema``).
    """
    if tool.output_schema is None:
        return None
    try:
        schema = inline_refs(tool.output_schema)
    except SchemaError as exc:
        raise SchemaError(f"tool {tool.name!r} output: {exc}") from None
    if schema.get("type") != "object":
        raise SchemaError(f"tool {tool.name!r}: an output schema must be an object at the root")
    props = schema.get("properties", {})
    for key in [k for k in props if k.endswith(BINARY_SUFFIX)]:
        del props[key]
    if "required" in schema:
        schema["required"] = [k for k in schema["required"] if not k.endswith(BINARY_SUFFIX)]
    return schema


def _fit_description(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """Cut an over-long description at a sentence or line end, so the API takes it."""
    if len(text) <= limit:
        return text
    head = text[: limit - 2]
    cut = max(head.rfind(". "), head.rfind(".\n"), head.rfind("\n"))
    return (head[: cut + 1] if cut > limit // 2 else head).rstrip() + " …"


def to_openai(tool: Tool) -> dict[str, Any]:
    _check_name(tool, "openai")
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": _fit_description(tool.description),
            "parameters": input_schema(tool),
            # The Responses API tries strict mode when `strict` is absent; this is not strict.
            "strict": False,
        },
    }


def to_openai_strict(tool: Tool) -> dict[str, Any]:
    """OpenAI strict mode. Arguments coming back go through ``from_openai_strict``."""
    _check_name(tool, "openai")
    input_schema(tool)  # the alias check
    try:
        parameters = to_strict(tool.parameters)
    except SchemaError as exc:
        raise SchemaError(f"tool {tool.name!r}: {exc}") from None
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": _fit_description(tool.description),
            "parameters": parameters,
            "strict": True,
        },
    }


def from_openai_strict(tool: Tool, arguments: Any) -> Any:
    """A strict-mode model's arguments as the tool takes them: nulls meaning "left out"
    dropped and {key, value} pair lists turned back into maps."""
    return restore_strict_arguments(tool.parameters, arguments)


def to_anthropic(tool: Tool) -> dict[str, Any]:
    _check_name(tool, "anthropic")
    schema = input_schema(tool)
    bad = [k for k in schema.get("properties", {}) if not ANTHROPIC_PROPERTY.fullmatch(k)]
    if bad:
        raise SchemaError(f"tool {tool.name!r}: property names Anthropic rejects: {bad}")
    return {"name": tool.name, "description": tool.description, "input_schema": schema}


def _title(tool: Tool) -> str:
    return tool.name.replace("_", " ").capitalize()


def to_mcp(tool: Tool) -> dict[str, Any]:
    _check_name(tool, "mcp")
    schema = input_schema(tool)
    if not schema.get("properties"):
        schema = dict(EMPTY_MCP_INPUT)
    title = _title(tool)
    decl: dict[str, Any] = {
        "name": tool.name,
        "title": title,
        "description": tool.description,
        "inputSchema": schema,
        # Every hint explicitly: MCP's defaults (destructive, open world) are the
        # opposite of ours, and a client reading an absent hint assumes the worst.
        "annotations": {
            "title": title,
            "readOnlyHint": tool.hints.read_only,
            "destructiveHint": tool.hints.destructive,
            "idempotentHint": tool.hints.idempotent,
            "openWorldHint": tool.hints.open_world,
        },
    }
    # Clients validate structuredContent against it: only tools with a fixed shape.
    out = output_schema(tool)
    if out is not None:
        decl["outputSchema"] = out
    return decl


_CONVERTERS = {
    "openai": to_openai,
    "openai-strict": to_openai_strict,
    "anthropic": to_anthropic,
    "mcp": to_mcp,
}


def tool_schemas(tools: Iterable[Tool], fmt: Format = "openai") -> list[dict[str, Any]]:
    convert = _CONVERTERS[fmt]
    out = [convert(t) for t in tools if t.name != "invalid"]
    names = [d.get("function", d)["name"] for d in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SchemaError(f"tool names must be unique per {fmt} declaration list: {dupes}")
    return out
