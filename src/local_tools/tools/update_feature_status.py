"""update_feature_status: a feature's status, and optionally what it covers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.project import update
from local_tools.tools._project import MAX_LINKS, UpdatedOutput, render_items


class UpdateFeatureStatusArgs(Args):
    id: str = Field(max_length=32, description="The feature (FEAT-001).")
    status: Literal["planned", "in_progress", "done", "dropped"] = Field(description="Its status.")
    covers: list[str] | None = Field(
        None, max_length=MAX_LINKS,
        description="Replace the requirements it covers (REQ-001, ...); leave out to keep them.",
    )  # fmt: skip


@tool(
    "update_feature_status",
    args=UpdateFeatureStatusArgs,
    permission="write:project",
    hints=Hints(idempotent=True),
    toolset="project",
    render=render_items,
    output=UpdatedOutput,
)
def update_feature_status(args: UpdateFeatureStatusArgs, ctx: ToolContext) -> dict[str, Any]:
    """Set a feature's status and, with covers=, replace the requirements it covers."""
    item, before = update(
        open_store(ctx), args.id, "feature", status=args.status, links={"covers": args.covers}
    )
    return {"id": item["id"], "item": item, "previous_status": before}
