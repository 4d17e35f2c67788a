"""call_tool: run any enabled tool by name, for clients whose tool list never refreshes.

The tools find_tools loads reach a model's list only when its client re-lists; many
do not. Through this tool the model still calls them, and the call is the named tool's
own: validated, authorized, bounded and audited by the runner (its call id is this
call's plus ".1"), with its error code and message passed through.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, field_validator

from local_tools.core.context import ToolContext
from local_tools.core.errors import ErrorCode, ExecutionError, InvalidInput, ToolError
from local_tools.core.tool import Args, Hints, tool
from local_tools.tools._common import arguments_object
from local_tools.tools.batch import result_text

BINARY_SUFFIX = "_base64"  # as the transports send images: kept at the top level
# A backstop above every tool's own limit (a review waits up to an hour); batch's is larger.
TIMEOUT = 3600.0 + 600.0
NOT_CALLED = ("call_tool", "batch")  # no nesting: batch names tools itself


class CallToolArgs(Args):
    name: str = Field(
        min_length=1,
        max_length=64,
        validation_alias=AliasChoices("name", "tool"),
        description="The tool to call (find_tools gives names and parameters).",
    )
    arguments: dict[str, Any] | str = Field(
        default_factory=dict,
        validation_alias=AliasChoices("arguments", "args", "parameters"),
        description="Its arguments: an object (or that object as JSON text).",
    )

    @field_validator("arguments")
    @classmethod
    def _json_text(cls, value: dict[str, Any] | str) -> dict[str, Any]:
        return arguments_object(value)


DESCRIPTION = """Call a tool by name with its arguments, as if you called it directly.

For tools find_tools loaded that are not in your tool list yet. Same permissions, \
result and errors as calling the tool itself."""


def _render(output: dict[str, Any]) -> str:
    inner = dict(output.get("output") or {})
    inner.update({k: v for k, v in output.items() if k.endswith(BINARY_SUFFIX)})
    if "mime_type" in output:
        inner["mime_type"] = output["mime_type"]
    envelope = {"success": True, "output": inner, "meta": {"tool": output.get("tool", "")}}
    return result_text(envelope)


@tool(
    "call_tool",
    args=CallToolArgs,
    description=DESCRIPTION,
    hints=Hints(destructive=True, open_world=True),
    toolset="agent",
    render=_render,
    timeout=TIMEOUT,
)
async def call_tool(args: CallToolArgs, ctx: ToolContext) -> dict[str, Any]:
    runner = ctx.runner
    if runner is None:
        raise ExecutionError("call_tool runs tools through a runner, and this call has none.")
    if args.name.strip().casefold() in NOT_CALLED:
        raise InvalidInput(
            f"call_tool does not run {args.name.strip()}: call the tools themselves "
            "(through call_tool one at a time, or batch directly)."
        )
    assert isinstance(args.arguments, dict)  # the validator turned text into an object
    envelope = await runner.arun(
        args.name,
        args.arguments,
        user_id=ctx.user_id,
        call_id=f"{ctx.call_id}.1",
        asker=ctx.asker,
        transport=ctx.transport,
        on_progress=ctx.on_progress,
        session_id=ctx.session_id,
    )
    if not envelope.get("success"):
        error = envelope.get("error") or {}
        raise ToolError(
            str(error.get("message")),
            code=ErrorCode(error.get("error_code", ErrorCode.EXECUTION_ERROR.value)),
            details=error.get("details") or None,
        )
    output = envelope.get("output")
    inner = dict(output) if isinstance(output, dict) else {"result": output}
    # Images stay where the transports look for them (an MCP client gets image content).
    result: dict[str, Any] = {k: inner.pop(k) for k in list(inner) if k.endswith(BINARY_SUFFIX)}
    if result and "mime_type" in inner:
        result["mime_type"] = inner.pop("mime_type")
    return {"tool": envelope["meta"]["tool"], "output": inner, **result}
