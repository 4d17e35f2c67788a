"""delete_project_item: remove a requirement, feature, component or task."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.project import delete
from local_tools.tools._project import ItemOutput, render_item


class DeleteProjectItemArgs(Args):
    id: str = Field(max_length=32, description="REQ-, FEAT-, COMP- or TASK- id.")


def _render(output: dict[str, Any]) -> str:
    text = f"Deleted {render_item(output['item'])}"
    return f"{text}\n{output['note']}" if output.get("note") else text


@tool(
    "delete_project_item",
    args=DeleteProjectItemArgs,
    permission="write:project",
    hints=Hints(destructive=True),
    toolset="project",
    render=_render,
    output=ItemOutput,
)
def delete_project_item(args: DeleteProjectItemArgs, ctx: ToolContext) -> dict[str, Any]:
    """Delete a requirement, feature, component or task by id (never given out again).

    Links other items hold to it stay and are named in `note`, so you can update them.
    """
    item = delete(open_store(ctx), args.id)
    output: dict[str, Any] = {"id": item["id"], "item": item}
    if item["referenced_by"]:
        output["note"] = f"Still linked from: {', '.join(item['referenced_by'])}."
    return output
