"""get_requirements: the project's requirements, all or some."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.project import get
from local_tools.tools._project import MAX_LINKS, ItemListOutput, render_items


class GetRequirementsArgs(Args):
    ids: list[str] = Field(
        default_factory=list, max_length=MAX_LINKS,
        description="Only these (REQ-001, ...); empty: all.",
    )  # fmt: skip


@tool(
    "get_requirements",
    args=GetRequirementsArgs,
    permission="read:project",
    hints=Hints(read_only=True, idempotent=True),
    toolset="project",
    render=render_items,
    output=ItemListOutput,
)
def get_requirements(args: GetRequirementsArgs, ctx: ToolContext) -> dict[str, Any]:
    """List this project's requirements (all, or the ids given) with status and priority."""
    items = get(open_store(ctx), "requirement", args.ids)
    return {"count": len(items), "items": items}
