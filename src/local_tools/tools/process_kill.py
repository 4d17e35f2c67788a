"""process_kill: end a background process and everything it started."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, tool
from local_tools.tools._shell import (
    ProcessKillOutput,
    new_output,
    process_manager,
    process_state,
    render_process,
)


class ProcessKillArgs(Args):
    process_id: str = Field(description="The id exec_cmd or task returned (p1, task_...).")


DESCRIPTION = """Kill a background process and its whole process tree (or stop a background task);
returns its final state and unread output (killed is false if it had already exited)."""


@tool(
    "process_kill",
    args=ProcessKillArgs,
    description=DESCRIPTION,
    permission=None,  # only the caller's own processes, which it was allowed to start
    aliases=("bash_kill",),
    hints=Hints(destructive=True, idempotent=True),
    toolset="shell",
    render=render_process,
    output=ProcessKillOutput,
)
async def process_kill(args: ProcessKillArgs, ctx: ToolContext) -> dict[str, Any]:
    proc = process_manager(ctx).find(args.process_id, ctx.owner)
    was_running = proc.command.running
    proc.command.kill("kill")
    await proc.command.wait_async(5.0)
    return {**process_state(proc), "killed": was_running, **new_output(proc, ctx)}
