"""checkpoint_diff: what one call changed, as a diff."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.checkpoints.diffs import checkpoint_diffs, count_lines
from local_tools.checkpoints.hook import checkpoints_for
from local_tools.checkpoints.restore import find, select_changes
from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.tools._checkpoints import (
    ALL_SESSIONS,
    checkpoint_dict,
    owner_of,
    shown_change_path,
    user_of,
)
from local_tools.tools._common import file_subjects


class CheckpointDiffArgs(Args):
    checkpoint: int = Field(ge=1, description="Its id, from checkpoint_list.")
    paths: list[str] | None = Field(None, description="Only these files or folders.")
    all_sessions: bool = ALL_SESSIONS


class CheckpointDiffOutput(Output):
    checkpoint: dict[str, Any] = Field(description="As checkpoint_list shows it.")
    diff: str = Field(description="Unified diff of the call's changes (git style).")


def _subjects(args: CheckpointDiffArgs, ctx: ToolContext) -> list[str]:
    """A diff shows the files' content before and after: read:file on each."""
    store = checkpoints_for(ctx)
    cp = find(
        store, args.checkpoint, owner_of(ctx, args.all_sessions), user_of(ctx, args.all_sessions)
    )
    return [
        subject
        for c in select_changes(store, cp.changes, args.paths)
        for subject in file_subjects(ctx, shown_change_path(ctx, c.root, c.path))
    ]


@tool(
    "checkpoint_diff",
    args=CheckpointDiffArgs,
    description="Show what one call changed (a checkpoint from checkpoint_list), as a diff.",
    aliases=("diff_checkpoint",),
    permission="read:file",
    subjects=_subjects,
    hints=Hints(read_only=True, idempotent=True),
    toolset="checkpoints",
    render=lambda output: output["diff"] or "(no changes)",
    output=CheckpointDiffOutput,
)
def checkpoint_diff(args: CheckpointDiffArgs, ctx: ToolContext) -> dict[str, Any]:
    store = checkpoints_for(ctx)
    cp = find(
        store, args.checkpoint, owner_of(ctx, args.all_sessions), user_of(ctx, args.all_sessions)
    )
    changes = select_changes(store, cp.changes, args.paths)
    diffs = checkpoint_diffs(store, cp, changes)
    (counted,) = count_lines(store, [cp])
    return {"checkpoint": checkpoint_dict(ctx, counted), "diff": "".join(diffs)}
