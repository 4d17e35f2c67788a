"""OpenAPI 3.1 of the HTTP server's native routes (`POST /v1/tools/{name}`), served by
`http_server.py` at `/openapi.json`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
}


def openapi_document(tb: Toolbox, url: str) -> dict[str, Any]:
    """OpenAPI 3.1 of the native routes: one POST per enabled tool, its argument schema
    as the request body, the envelope (with the tool's output schema) as the answer."""
    from local_tools import __version__
    from local_tools.transports.schemas import SchemaError, input_schema, output_schema

    paths: dict[str, Any] = {}
    for tool in tb.registry.enabled():
        if tool.name == "invalid":
            continue
        try:
            body = input_schema(tool)
            output = output_schema(tool) or {"type": "object"}
        except SchemaError:
            body, output = {"type": "object"}, {"type": "object"}
        envelope = {
            "type": "object",
            "properties": {
                "success": {"type": "boolean"},
                "output": output,
                "error": {"$ref": "#/components/schemas/Error"},
                "meta": {"$ref": "#/components/schemas/Meta"},
            },
            "required": ["success", "meta"],
        }
        paths[f"/v1/tools/{tool.name}"] = {
            "post": {
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
                        "description": "The envelope: `success` with `output`, or `error`.",
                        "content": {"application/json": {"schema": envelope}},
                    },
                    "401": {"description": "Missing or wrong bearer token."},
                },
            }
        }
    paths["/openapi.json"] = {
        "get": {
            "operationId": "openapi",
            "summary": "This document.",
            "responses": {"200": {"description": "OpenAPI 3.1 document."}},
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
            "schemas": {"Error": _ERROR_SCHEMA, "Meta": _META_SCHEMA},
        },
    }
