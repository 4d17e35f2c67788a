"""check_data_format: validate a JSON, TOML or YAML file against a JSON Schema."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import Field, field_validator

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.tools._common import file_subjects

MAX_FILE = 10 * 1024 * 1024


class CheckDataFormatArgs(Args):
    path: str = Field(description="The JSON, TOML or YAML file to check.")
    schema_: str = Field(
        alias="schema",
        description=(
            'The schema as JSON text ({"type": "object", ...}), or the path of a schema file.'
        ),
    )

    @field_validator("schema_", mode="before")
    @classmethod
    def _object_as_text(cls, value: Any) -> Any:
        # A client that sends the schema as an object rather than text.
        if isinstance(value, (dict, bool)):
            return json.dumps(value)
        if isinstance(value, str) and not value.strip():
            raise ValueError("give a schema (JSON text) or the path of a schema file")
        return value

    @property
    def inline(self) -> bool:
        text = self.schema_.strip()
        return text.startswith("{") or text in ("true", "false")


class FormatError(Output):
    path: str = Field(description="Where in the document, as a JSON path ($.items[0].id).")
    message: str = Field(description="What is wrong there.")
    schema_path: str = Field(description="The schema rule that failed.")


class CheckDataFormatOutput(Output):
    valid: bool = Field(description="True when the document matches the schema.")
    format: str = Field(description="How the file was read: json, toml or yaml.")
    error_count: int = Field(description="How many errors in all.")
    errors: list[FormatError] = Field(description="The errors (at most 100), by path.")


def _subjects(args: CheckDataFormatArgs, ctx: ToolContext) -> Sequence[str]:
    paths = [args.path] + ([] if args.inline else [args.schema_])
    return [s for p in paths for s in file_subjects(ctx, p)]


def _read(ctx: ToolContext, path: str) -> str:
    with ctx.jail.open_read(path) as handle:
        data = handle.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise InvalidInput(f"{path} is over {MAX_FILE // (1024 * 1024)} MB; check a smaller file.")
    return data.decode("utf-8-sig", errors="replace")


def _render(output: dict[str, Any]) -> str:
    if output["valid"]:
        return f"Valid ({output['format']})."
    lines = [f"{output['error_count']} error(s):"]
    lines += [f"{e['path']}: {e['message']}" for e in output["errors"]]
    return "\n".join(lines)


@tool(
    "check_data_format",
    args=CheckDataFormatArgs,
    permission="read:file",
    subjects=_subjects,
    hints=Hints(read_only=True, idempotent=True),
    toolset="project",
    render=_render,
    output=CheckDataFormatOutput,
)
def check_data_format(args: CheckDataFormatArgs, ctx: ToolContext) -> dict[str, Any]:
    """Check that a JSON, TOML or YAML file matches a JSON Schema (Draft 2020-12); returns
    valid and every error with its JSON path ($.items[0].id) and rule.

    A file that does not parse, or an invalid schema, is INVALID_INPUT.
    """
    # The validator loads with the first call, not with every server's start.
    from local_tools.knowledge.validate import format_of, parse, validate

    fmt = format_of(args.path)
    document = parse(_read(ctx, args.path), fmt, args.path)
    if args.inline:
        schema = parse(args.schema_, "json", "The schema")
    else:
        schema = parse(_read(ctx, args.schema_), "json", args.schema_)
    errors, total = validate(document, schema)
    return {"valid": total == 0, "format": fmt, "error_count": total, "errors": errors}
