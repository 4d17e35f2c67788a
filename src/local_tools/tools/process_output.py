"""process_output: what a background process printed since the last read, and its state."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, tool
from local_tools.tools._shell import (
    ProcessReport,
    new_output,
    process_manager,
    process_state,
    render_process,
)


class ProcessOutputArgs(Args):
    process_id: str = Field(description="The id exec_cmd or task returned (p1, task_...).")
    block: bool = Field(False, description="Wait until the process exits or `timeout` passes.")
    timeout: float = Field(30.0, gt=0, le=600, description="Seconds to wait when block=true.")


DESCRIPTION = """Read a background process's new output (since the last read) and its status.
A background task's output is one line per tool call, then its answer.

status is running or exited (with exit_code; signal if killed). block=true waits for
the exit, at most `timeout` seconds. Only the last 5,000 lines of each stream are
kept; the answer says how much was skipped and where the whole output is saved."""


@tool(
    "process_output",
    args=ProcessOutputArgs,
    description=DESCRIPTION,
    # Reading the output of one's own process needs no new permission: starting it did.
    permission=None,
    aliases=("bash_output",),
    hints=Hints(read_only=True),
    toolset="shell",
    render=render_process,
    output=ProcessReport,
)
async def process_output(args: ProcessOutputArgs, ctx: ToolContext) -> dict[str, Any]:
    proc = process_manager(ctx).find(args.process_id, ctx.owner)
    if args.block:
        await proc.command.wait_async(args.timeout)
    # Read after the state: output printed just before the exit is not missed.
    state = process_state(proc)
    return {**state, **new_output(proc, ctx)}
