"""todo_write: the agent's task list for this workspace, replaced whole on every call."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, Output, omitted, tool
from local_tools.tools._todos import STATUSES, replace_todos

MAX_TODOS = 200
MAX_CONTENT = 2000

Status = Literal["pending", "in_progress", "completed", "cancelled"]
Priority = Literal["high", "medium", "low"]

# Words models use for a status, beside the canonical ones.
_STATUS_WORDS = {"done": "completed", "complete": "completed", "canceled": "cancelled",
                 "todo": "pending", "inprogress": "in_progress"}  # fmt: skip


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="Unique id; leave it out for a new item.",
    )
    content: str = Field(
        min_length=1, max_length=MAX_CONTENT, description="What is to be done, in a line."
    )
    status: Status = Field("pending", description="Where the item stands.")
    priority: Priority = Field("medium", description="How much it matters.")
    active_form: str | None = Field(
        None,
        alias="activeForm",
        max_length=MAX_CONTENT,
        description="The item as shown while in progress, e.g. 'Running the tests'.",
    )

    @field_validator("id", mode="before")
    @classmethod
    def _number_id(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the item's content is empty")
        return value.strip()

    @field_validator("status", "priority", mode="before")
    @classmethod
    def _word(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        word = value.strip().lower().replace("-", "_").replace(" ", "_")
        return _STATUS_WORDS.get(word, word)


class TodoWriteArgs(Args):
    todos: list[TodoItem] = Field(
        max_length=MAX_TODOS,
        description="The whole list, in order; a plain string is a pending item.",
    )

    @field_validator("todos", mode="before")
    @classmethod
    def _plain_forms(cls, value: Any) -> Any:
        # A JSON array sent as text (the HTTP server's XML parameters), and plain strings
        # as items (openlink's web chats send them).
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError("must be a list of items (a JSON array, as text)") from None
        if isinstance(value, list):
            return [{"content": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("todos")
    @classmethod
    def _unique_ids(cls, value: list[TodoItem]) -> list[TodoItem]:
        first: dict[str, int] = {}
        for n, item in enumerate(value):
            if item.id is None:
                continue
            if item.id in first:
                raise ValueError(
                    f"the id {item.id!r} is used by todos[{first[item.id]}] and todos[{n}]; "
                    "give each item its own id (or leave new items without one)"
                )
            first[item.id] = n
        return value


class TodoEntry(Output):
    id: str = Field(description="The item's id.")
    content: str = Field(description="What is to be done.")
    status: Status = Field(description="Where the item stands.")
    priority: Priority = Field(description="How much it matters.")
    active_form: str = omitted(description="The item as shown while in progress.")


class TodoCounts(Output):
    pending: int
    in_progress: int
    completed: int
    cancelled: int


class TodoListOutput(Output):
    count: int = Field(description="How many items the list has.")
    todos: list[TodoEntry] = Field(description="The whole list, in order.")
    counts: TodoCounts = Field(description="How many items have each status.")


class TodoWriteOutput(TodoListOutput):
    note: str = omitted(description="Something worth knowing about the list, if any.")


def todo_list(todos: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The output both todo tools give for a list."""
    by_status = Counter(t["status"] for t in todos)
    return {
        "count": len(todos),
        "todos": list(todos),
        "counts": {status: by_status[status] for status in STATUSES},
    }


_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}


def render_todos(output: dict[str, Any]) -> str:
    todos = output.get("todos") or []
    lines = []
    if not todos:
        lines.append("The todo list is empty.")
    else:
        counts = output.get("counts") or {}
        summary = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items() if n)
        lines.append(f"{len(todos)} item{'s' if len(todos) != 1 else ''}: {summary}")
        for t in todos:
            priority = "" if t["priority"] == "medium" else f" ({t['priority']} priority)"
            lines.append(f"{_MARKS.get(t['status'], '[?]')} {t['id']}. {t['content']}{priority}")
    if output.get("note"):
        lines.append(output["note"])
    return "\n".join(lines)


DESCRIPTION = f"""Save your task list for this workspace, replacing the whole list saved before.

Plan work of several steps and show progress: send every item each time with its
status and priority. Keep an item's id when sending it again; new items may leave it
out. Work on one item at a time (several in_progress are pointed out). An empty list
clears it. The list survives restarts; todo_read returns it. At most {MAX_TODOS} items."""


@tool(
    "todo_write",
    args=TodoWriteArgs,
    description=DESCRIPTION,
    aliases=("todowrite", "TodoWrite"),
    hints=Hints(idempotent=True),
    toolset="agent",
    render=render_todos,
    output=TodoWriteOutput,
)
def todo_write(args: TodoWriteArgs, ctx: ToolContext) -> dict[str, Any]:
    items = [
        {
            "id": t.id,
            "content": t.content,
            "status": t.status,
            "priority": t.priority,
            **({"active_form": t.active_form} if t.active_form else {}),
        }
        for t in args.todos
    ]
    stored = replace_todos(
        ctx.state_dir, ctx.workspace, ctx.user_id, items, check=ctx.check_cancelled
    )
    output = todo_list(stored)
    busy = [t["id"] for t in stored if t["status"] == "in_progress"]
    if len(busy) > 1:
        output["note"] = (
            f"{len(busy)} items are in_progress ({', '.join(busy)}). That is allowed, but "
            "finishing one at a time keeps the plan clear: set the others back to pending "
            "unless you really are doing them at once."
        )
    return output
