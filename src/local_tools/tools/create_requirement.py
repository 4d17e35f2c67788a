"""create_requirement: a new requirement, REQ-NNN."""

from __future__ import annotations

from typing import Any

from local_tools.core.context import ToolContext
from local_tools.core.tool import tool
from local_tools.knowledge import open_store
from local_tools.knowledge.project import create
from local_tools.tools._project import ItemArgs, ItemOutput, render_items


class CreateRequirementArgs(ItemArgs):
    pass


@tool(
    "create_requirement",
    args=CreateRequirementArgs,
    permission="write:project",
    toolset="project",
    render=render_items,
    output=ItemOutput,
)
def create_requirement(args: CreateRequirementArgs, ctx: ToolContext) -> dict[str, Any]:
    """Record a requirement of this project (what it must do); returns its id (REQ-001, ...,
    never reused).

    Features cover requirements (add_feature covers=[...]); check_feature_coverage finds
    uncovered ones.
    """
    item = create(
        open_store(ctx), "requirement", title=args.title, description=args.description,
        priority=args.priority, user_id=ctx.user_id,
    )  # fmt: skip
    return {"id": item["id"], "item": item}
