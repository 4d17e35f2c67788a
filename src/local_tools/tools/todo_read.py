"""todo_read: the agent's saved task list for this workspace."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, tool
from local_tools.tools._todos import user_todos
from local_tools.tools.todo_write import TodoListOutput, render_todos, todo_list


class TodoReadOutput(TodoListOutput):
    updated_at: str | None = Field(
        description="When the list was last saved (ISO 8601, UTC); null when never."
    )


@tool(
    "todo_read",
    aliases=("todoread",),
    hints=Hints(read_only=True, idempotent=True),
    toolset="agent",
    render=render_todos,
    output=TodoReadOutput,
)
def todo_read(args: Any, ctx: ToolContext) -> dict[str, Any]:
    """Read your saved task list: every item with id, status and priority, and counts per
    status.
    """
    todos, updated_at = user_todos(ctx.state_dir, ctx.workspace, ctx.user_id)
    return {**todo_list(todos), "updated_at": updated_at}
