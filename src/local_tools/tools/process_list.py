"""process_list: the caller's background processes, running and recently finished."""

from __future__ import annotations

from typing import Any

from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, tool
from local_tools.tools._shell import ProcessListOutput, process_manager, process_state


def _render(output: dict[str, Any]) -> str:
    rows = output["processes"]
    if not rows:
        return "No background processes."
    lines = []
    for p in rows:
        status = p["status"] if p["status"] == "running" else f"exited {p['exit_code']}"
        if p.get("killed_by"):
            status = f"killed ({p['killed_by']})"
        lines.append(f"{p['process_id']}  {status:<12} {p['started_at']}  {p['command']}")
    return "\n".join(lines)


@tool(
    "process_list",
    permission=None,
    hints=Hints(read_only=True, idempotent=True),
    toolset="shell",
    render=_render,
    blocking=False,
    output=ProcessListOutput,
)
def process_list(args: Any, ctx: ToolContext) -> dict[str, Any]:
    """List your background processes and tasks (running, and the 30 most recently
    finished) with process_id, command, status, exit code and start time.
    """
    procs = process_manager(ctx).list(ctx.owner)
    return {"processes": [process_state(p) for p in procs if p.background]}
