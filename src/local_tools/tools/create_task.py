"""create_task: a new task, TASK-NNN, implementing a feature, depending on tasks."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import tool
from local_tools.knowledge import open_store
from local_tools.knowledge.project import create, dependencies
from local_tools.tools._project import MAX_LINKS, ItemArgs, ItemOutput, render_items


class CreateTaskArgs(ItemArgs):
    implements: str | None = Field(
        None, description="The feature it implements (FEAT-001); must exist."
    )
    depends_on: list[str] = Field(
        default_factory=list, max_length=MAX_LINKS,
        description="Tasks to finish first (TASK-001, ...); may be created later.",
    )  # fmt: skip


@tool(
    "create_task",
    args=CreateTaskArgs,
    permission="write:project",
    toolset="project",
    render=render_items,
    output=ItemOutput,
)
def create_task(args: CreateTaskArgs, ctx: ToolContext) -> dict[str, Any]:
    """Create a task (a unit of work), optionally implementing a feature and depending on
    other tasks; returns its id (TASK-001, ..., never reused).

    Status starts at pending; update_task_status moves it. A missing dependency or a
    cycle is pointed out in `note`.
    """
    links = {"depends_on": args.depends_on}
    if args.implements:
        links["implements"] = [args.implements]
    store = open_store(ctx)
    item = create(
        store, "task", title=args.title, description=args.description,
        priority=args.priority, links=links, user_id=ctx.user_id,
    )  # fmt: skip
    output: dict[str, Any] = {"id": item["id"], "item": item}
    note = dependency_note(store, item["id"])
    if note:
        output["note"] = note
    return output


def dependency_note(store: Any, task_id: str) -> str:
    """What check_task_dependencies would say about this task, in a line or two."""
    found = dependencies(store)
    parts = [
        f"{m['task']} depends on tasks that do not exist yet: {', '.join(m['missing'])}."
        for m in found["missing"]
        if m["task"] == task_id
    ]
    parts += [f"Dependency cycle: {' → '.join(c)}." for c in found["cycles"] if task_id in c]
    return " ".join(parts)
