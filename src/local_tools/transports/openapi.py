"""OpenAPI 3.1 of the HTTP server's native routes (`POST /v1/tools/{name}`), served by
`http_server.py` at `/openapi.json`.

Every answer a route can give is declared with its schema, the guard's refusals
(`http_guard.py`) included, so a client generated from it (or schemathesis, see
tests/transports/test_openapi_schemathesis.py) meets no status it was not told of."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from local_tools.core.tool import Tool
    from local_tools.toolbox import Toolbox

__all__ = ["openapi_document"]

_ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error_code": {"type": "string"},
        "message": {"type": "string"},
        "details": {"type": ["object", "null"]},
    },
    "required": ["error_code", "message"],
}
_META_SCHEMA = {
    "type": "object",
    "properties": {
        "tool": {"type": "string"},
        "call_id": {"type": "string"},
        "duration_ms": {"type": "number"},
    },
    "required": ["tool", "call_id", "duration_ms"],
}
# What the server and its guard answer when a request is refused before any tool runs.
_REFUSAL_SCHEMA = {
    "type": "object",
    "properties": {"error": {"type": "string"}},
    "required": ["error"],
}
_FAILED_SCHEMA = {
    "type": "object",
    "properties": {
        "success": {"const": False},
        "error": {"$ref": "#/components/schemas/Error"},
        "meta": {"$ref": "#/components/schemas/Meta"},
    },
    "required": ["success", "error", "meta"],
}
_REFUSALS = {
    "400": "The body is not JSON (or not UTF-8), or the path has `.` or `..` segments.",
    "401": "Missing or wrong bearer token.",
    "403": "An Origin header that is not allowed (`[http] allowed_origins`).",
    "408": "The body did not arrive in time.",
    "413": "The body is larger than the server takes.",
    "415": "A body that is not `application/json`.",
    "421": "A Host header other than the address the server is bound to.",
}


def _refusal(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Refusal"}}},
    }


def _refusals(*codes: str) -> dict[str, Any]:
    return {code: _refusal(_REFUSALS[code]) for code in codes}


def _tool_schemas(tool: Tool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tool's arguments and its output as this route carries them: the output as
    declared, `*_base64` images included (MCP sends those apart; HTTP does not)."""
    from local_tools.transports.schema_rewrite import inline_refs
    from local_tools.transports.schemas import SchemaError, input_schema

    try:
        body = input_schema(tool)
        output = inline_refs(tool.output_schema) if tool.output_schema else {"type": "object"}
    except SchemaError:
        return {"type": "object"}, {"type": "object"}
    return body, output


def _tool_operation(tool: Tool) -> dict[str, Any]:
    body, output = _tool_schemas(tool)
    succeeded = {
        "type": "object",
        "properties": {
            "success": {"const": True},
            "output": output,
            "meta": {"$ref": "#/components/schemas/Meta"},
        },
        "required": ["success", "output", "meta"],
    }
    envelope = {"oneOf": [succeeded, {"$ref": "#/components/schemas/Failed"}]}
    return {
        "operationId": tool.name,
        "summary": tool.description.strip().split("\n", 1)[0],
        "description": tool.description,
        "tags": [tool.toolset],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": body}},
        },
        "responses": {
            "200": {
                "description": (
                    "The envelope: `success` with `output`, or `error` (arguments the "
                    "schema refuses are INVALID_INPUT here, not a 4xx)."
                ),
                "content": {"application/json": {"schema": envelope}},
            },
            **_refusals("400", "401", "403", "408", "413", "415", "421"),
        },
    }


def openapi_document(tb: Toolbox, url: str) -> dict[str, Any]:
    """OpenAPI 3.1 of the native routes: one POST per enabled tool, its argument schema
    as the request body, the envelope (with the tool's output schema) as the answer."""
    from local_tools import __version__

    paths: dict[str, Any] = {}
    for tool in tb.registry.enabled():
        if tool.name == "invalid":
            continue
        paths[f"/v1/tools/{tool.name}"] = {"post": _tool_operation(tool)}
    paths["/openapi.json"] = {
        "get": {
            "operationId": "openapi",
            "summary": "This document.",
            "responses": {
                "200": {
                    "description": "OpenAPI 3.1 document.",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                **_refusals("400", "401", "403", "421"),
            },
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "local-tools",
            "version": __version__,
            "description": f"The tools of the workspace {tb.workspace}.",
        },
        "servers": [{"url": url}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": _ERROR_SCHEMA,
                "Meta": _META_SCHEMA,
                "Failed": _FAILED_SCHEMA,
                "Refusal": _REFUSAL_SCHEMA,
            },
        },
    }
