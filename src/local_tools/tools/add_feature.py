"""add_feature: a new feature, FEAT-NNN, covering requirements."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import tool
from local_tools.knowledge import open_store
from local_tools.knowledge.project import create
from local_tools.tools._project import MAX_LINKS, ItemArgs, ItemOutput, render_items


class AddFeatureArgs(ItemArgs):
    covers: list[str] = Field(
        default_factory=list, max_length=MAX_LINKS,
        description="The requirements it covers (REQ-001, ...); each must exist.",
    )  # fmt: skip


@tool(
    "add_feature",
    args=AddFeatureArgs,
    permission="write:project",
    toolset="project",
    render=render_items,
    output=ItemOutput,
)
def add_feature(args: AddFeatureArgs, ctx: ToolContext) -> dict[str, Any]:
    """Add a feature to the design, covering requirements; returns its id (FEAT-001, ...,
    never reused).

    Status starts at planned; update_feature_status changes it. An unknown requirement
    id is NOT_FOUND and nothing is saved.
    """
    item = create(
        open_store(ctx), "feature", title=args.title, description=args.description,
        priority=args.priority, links={"covers": args.covers}, user_id=ctx.user_id,
    )  # fmt: skip
    return {"id": item["id"], "item": item}
