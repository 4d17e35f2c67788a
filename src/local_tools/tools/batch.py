"""batch: several independent tool calls at once, each through the full runner."""

from __future__ import annotations

import asyncio
import functools
import importlib
import json
from typing import Any, cast

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from local_tools.core.context import ToolContext
from local_tools.core.errors import ExecutionError
from local_tools.core.output import render_compact
from local_tools.core.tool import Args, Hints, Output, RenderFunc, Tool, omitted, tool
from local_tools.tools._common import arguments_object

MAX_CALLS = 25
# Only a backstop: every inner call keeps its own limit (a question waits up to an hour),
# and the batch must outlast the longest of them.
TIMEOUT = 86400.0 + 120  # above every call's: task's is a day and a minute


class BatchCall(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tool: str = Field(min_length=1, description="The tool to call, by name.")
    args: dict[str, Any] | str = Field(
        default_factory=dict,
        validation_alias=AliasChoices("args", "parameters"),
        description="Its arguments: an object (or that object as JSON text).",
    )

    @field_validator("args")
    @classmethod
    def _json_text(cls, value: dict[str, Any] | str) -> dict[str, Any]:
        return arguments_object(value)


class BatchArgs(Args):
    tool_calls: list[BatchCall] = Field(
        min_length=1,
        max_length=MAX_CALLS,
        description="The calls to make.",
    )

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        if isinstance(value, str):  # the HTTP server's XML parameters send text
            try:
                return json.loads(value)
            except (ValueError, RecursionError):
                raise ValueError("must be a list of {tool, args} (a JSON array, as text)") from None
        return value

    @field_validator("tool_calls")
    @classmethod
    def _not_nested(cls, value: list[BatchCall]) -> list[BatchCall]:
        for n, call in enumerate(value):
            nested = call.tool.strip().casefold()
            if nested in ("batch", "call_tool"):
                raise ValueError(
                    f"tool_calls[{n}] is a {nested}; batches do not nest: put its calls in "
                    f"this list (at most {MAX_CALLS})"
                )
        return value


class CallError(Output):
    error_code: str = Field(description="What kind of failure (NOT_FOUND, TIMEOUT, ...).")
    message: str = Field(description="What went wrong and what to do instead.")
    details: dict[str, Any] = Field(description="More about the failure, if anything.")


class CallMeta(Output):
    tool: str = Field(description="The tool that answered (its canonical name).")
    call_id: str = Field(description="The call's id in the audit log.")
    duration_ms: float = Field(description="How long the call took.")


class CallResult(Output):
    success: bool = Field(description="Whether the call succeeded.")
    output: dict[str, Any] = omitted(description="The tool's output, on success.")
    error: CallError = omitted(description="The failure, otherwise.")
    meta: CallMeta


class BatchOutput(Output):
    results: list[CallResult] = Field(description="One envelope per call, in the calls' order.")
    succeeded: int = Field(description="How many calls succeeded.")
    failed: int = Field(description="How many calls failed.")


@functools.cache
def _renderer(name: str) -> RenderFunc | None:
    """A built-in tool's renderer (a custom tool's output is shown as JSON). Only that
    tool's module is imported: each built-in is defined under its own name."""
    from local_tools.tools import BUILTIN  # deferred: this module is one of them

    for module, attr in BUILTIN:
        if attr == name:
            found = getattr(importlib.import_module(f"local_tools.tools.{module}"), attr)
            return found.render if isinstance(found, Tool) else None
    return None


def result_text(envelope: dict[str, Any]) -> str:
    if not envelope.get("success"):
        error = envelope.get("error") or {}
        return f"Error [{error.get('error_code')}]: {error.get('message')}"
    output = envelope.get("output")
    render = _renderer(str((envelope.get("meta") or {}).get("tool", "")))
    try:
        return render(output) if render is not None else render_compact(output)
    except Exception:  # a renderer surprised by this output: the data itself still reads
        return render_compact(output)


def _render(output: dict[str, Any]) -> str:
    results = output.get("results") or []
    succeeded, failed = output.get("succeeded"), output.get("failed")
    lines = [f"{len(results)} calls: {succeeded} succeeded, {failed} failed"]
    for n, envelope in enumerate(results, 1):
        name = (envelope.get("meta") or {}).get("tool", "?")
        outcome = "ok" if envelope.get("success") else "failed"
        lines.append(f"--- [{n}] {name}: {outcome} ---")
        lines.append(result_text(envelope))
    return "\n".join(lines)


DESCRIPTION = """Make several independent tool calls at once; they run concurrently.

For calls that do not depend on each other (read several files, run several
searches); results come back in order, as if called alone. Each call is checked on
its own; one failing does not stop the others. No batch inside a batch. When a call
needs another's result, make them one after the other."""


@tool(
    "batch",
    args=BatchArgs,
    description=DESCRIPTION,
    hints=Hints(destructive=True, open_world=True),
    toolset="agent",
    render=_render,
    timeout=TIMEOUT,
    output=BatchOutput,
)
async def batch(args: BatchArgs, ctx: ToolContext) -> dict[str, Any]:
    runner = ctx.runner
    if runner is None:
        raise ExecutionError("batch runs tools through a runner, and this call has none.")
    total = len(args.tool_calls)
    finished = 0

    async def call(n: int, spec: BatchCall) -> dict[str, Any]:
        nonlocal finished
        envelope = await runner.arun(
            spec.tool,
            cast("dict[str, Any]", spec.args),  # _json_text parsed JSON text to a dict
            user_id=ctx.user_id,
            call_id=f"{ctx.call_id}.{n + 1}",  # the audit log ties the calls to their batch
            asker=ctx.asker,
            transport=ctx.transport,
            session_id=ctx.session_id,
        )
        finished += 1
        ctx.progress(f"{finished} of {total} calls finished", finished / total)
        return envelope

    # Cancelling the batch (its timeout, the caller going away) cancels every call.
    results = await asyncio.gather(*(call(n, spec) for n, spec in enumerate(args.tool_calls)))
    succeeded = sum(1 for r in results if r["success"])
    return {"results": results, "succeeded": succeeded, "failed": total - succeeded}
