"""checkpoint_list: the calls that changed files, newest first, each one undoable."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.checkpoints.diffs import count_lines
from local_tools.checkpoints.hook import checkpoints_for
from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.tools._checkpoints import ALL_SESSIONS, checkpoint_dict, owner_of, user_of

MAX_FILES_SHOWN = 10  # per checkpoint in the text; the output lists them all


class CheckpointListArgs(Args):
    limit: int = Field(20, ge=1, le=200, description="How many.")
    all_sessions: bool = ALL_SESSIONS


class CheckpointListOutput(Output):
    checkpoints: list[dict[str, Any]] = Field(
        description="Newest first: id, call_id, tool, time, summary, files (path, action, "
        "added, removed; null: binary or large), added, removed, skipped (files left out, "
        "with why)."
    )


DESCRIPTION = """List the calls that changed files, newest first (checkpoints to undo).

Each: id, tool, files changed, lines added/removed. checkpoint_diff shows one; restore
undoes it and every later one."""


def _render(output: dict[str, Any]) -> str:
    items = output.get("checkpoints") or []
    if not items:
        return "No checkpoints: no call of this session has changed a file yet."
    lines = []
    for cp in items:
        files = cp["files"]
        lines.append(
            f"#{cp['id']} {cp['time']} {cp['tool']}: {len(files)} file(s) "
            f"+{cp['added']} -{cp['removed']}" + (f" ({cp['summary']})" if cp["summary"] else "")
        )
        for f in files[:MAX_FILES_SHOWN]:
            counts = "(binary or large)" if f["added"] is None else f"+{f['added']} -{f['removed']}"
            lines.append(f"    {f['action']:<8} {f['path']} {counts}")
        if len(files) > MAX_FILES_SHOWN:
            lines.append(f"    ... and {len(files) - MAX_FILES_SHOWN} more")
        for path, why in (cp.get("skipped") or {}).items():
            lines.append(f"    not kept  {path}: {why}")
    return "\n".join(lines)


@tool(
    "checkpoint_list",
    args=CheckpointListArgs,
    description=DESCRIPTION,
    aliases=("list_checkpoints",),
    hints=Hints(read_only=True),
    toolset="checkpoints",
    render=_render,
    output=CheckpointListOutput,
)
def checkpoint_list(args: CheckpointListArgs, ctx: ToolContext) -> dict[str, Any]:
    store = checkpoints_for(ctx)
    found = store.history.recent(
        owner=owner_of(ctx, args.all_sessions),
        user=user_of(ctx, args.all_sessions),
        limit=args.limit,
    )
    return {"checkpoints": [checkpoint_dict(ctx, cp) for cp in count_lines(store, found)]}
