"""add_component: a new component, COMP-NNN, providing features."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import tool
from local_tools.knowledge import open_store
from local_tools.knowledge.project import create
from local_tools.tools._project import MAX_LINKS, ItemArgs, ItemOutput, render_items


class AddComponentArgs(ItemArgs):
    provides: list[str] = Field(
        default_factory=list, max_length=MAX_LINKS,
        description="The features it provides (FEAT-001, ...); each must exist.",
    )  # fmt: skip


@tool(
    "add_component",
    args=AddComponentArgs,
    permission="write:project",
    toolset="project",
    render=render_items,
    output=ItemOutput,
)
def add_component(args: AddComponentArgs, ctx: ToolContext) -> dict[str, Any]:
    """Add a component (a module, service or part of the system) to the design, with the
    features it provides; returns its id (COMP-001, ..., never reused).
    """
    item = create(
        open_store(ctx), "component", title=args.title, description=args.description,
        priority=args.priority, links={"provides": args.provides}, user_id=ctx.user_id,
    )  # fmt: skip
    return {"id": item["id"], "item": item}
