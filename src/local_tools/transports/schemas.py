"""Tool declarations in the formats model APIs expect: OpenAI, Anthropic, MCP."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from local_tools.core.tool import Tool

__all__ = ["FORMATS", "to_anthropic", "to_mcp", "to_openai", "tool_schemas"]

Format = Literal["openai", "anthropic", "mcp"]
FORMATS: tuple[Format, ...] = ("openai", "anthropic", "mcp")


def to_openai(tool: Tool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def to_anthropic(tool: Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def to_mcp(tool: Tool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.parameters,
        "annotations": {
            "readOnlyHint": tool.hints.read_only,
            "destructiveHint": tool.hints.destructive,
            "idempotentHint": tool.hints.idempotent,
            "openWorldHint": tool.hints.open_world,
        },
    }


_CONVERTERS = {"openai": to_openai, "anthropic": to_anthropic, "mcp": to_mcp}


def tool_schemas(tools: Iterable[Tool], fmt: Format = "openai") -> list[dict[str, Any]]:
    convert = _CONVERTERS[fmt]
    return [convert(t) for t in tools if t.name != "invalid"]
