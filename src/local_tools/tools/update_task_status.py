"""update_task_status: move a task through its status machine; change its links."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.project import update
from local_tools.tools._project import MAX_LINKS, UpdatedOutput, render_items
from local_tools.tools.create_task import dependency_note


class UpdateTaskStatusArgs(Args):
    id: str = Field(max_length=32, description="The task (TASK-001).")
    status: Literal["pending", "in_progress", "completed", "blocked"] | None = Field(
        None, description="The new status; leave out to change only links."
    )
    depends_on: list[str] | None = Field(
        None, max_length=MAX_LINKS,
        description="Replace the tasks it depends on; leave out to keep them.",
    )  # fmt: skip
    implements: str | None = Field(None, description="Replace the feature it implements.")


@tool(
    "update_task_status",
    args=UpdateTaskStatusArgs,
    permission="write:project",
    toolset="project",
    render=render_items,
    output=UpdatedOutput,
)
def update_task_status(args: UpdateTaskStatusArgs, ctx: ToolContext) -> dict[str, Any]:
    """Move a task along pending → in_progress → completed or blocked (blocked →
    in_progress), or replace its links.

    Any other move is refused, naming the moves allowed. A cycle the new links close is
    pointed out in `note`.
    """
    store = open_store(ctx)
    links = {
        "depends_on": args.depends_on,
        "implements": [args.implements] if args.implements else None,
    }
    item, before = update(store, args.id, "task", status=args.status, links=links)
    output: dict[str, Any] = {"id": item["id"], "item": item, "previous_status": before}
    note = dependency_note(store, item["id"])
    if note:
        output["note"] = note
    return output
