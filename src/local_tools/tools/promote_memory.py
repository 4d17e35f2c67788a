"""promote_memory (and promote_to_decision, promote_to_pattern)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Output, Tool, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.memory import promote
from local_tools.tools._knowledge import MemoryEntry, render_entry


class PromoteToArgs(Args):
    id: int = Field(ge=1, description="The entry to promote (an id from query_memory).")


class PromoteMemoryArgs(PromoteToArgs):
    to: Literal["decision", "pattern"] = Field(description="What it becomes.")


class PromoteMemoryOutput(Output):
    id: int = Field(description="The new entry's id.")
    promoted_from: int = Field(description="The original entry's id (kept, with the link).")
    entry: MemoryEntry = Field(description="The new entry.")


def _promote(entry_id: int, to: str, ctx: ToolContext) -> dict[str, Any]:
    entry = promote(open_store(ctx), entry_id=entry_id, to=to, user_id=ctx.user_id, tool=ctx.tool)
    return {"id": entry["id"], "promoted_from": entry_id, "entry": entry}


def _render(output: dict[str, Any]) -> str:
    return f"Promoted #{output['promoted_from']} to " + render_entry(output["entry"])


@tool(
    "promote_memory",
    args=PromoteMemoryArgs,
    toolset="memory",
    render=_render,
    output=PromoteMemoryOutput,
)
def promote_memory(args: PromoteMemoryArgs, ctx: ToolContext) -> dict[str, Any]:
    """Promote a memory entry (an insight, say) to a decision or a pattern.

    The new entry (project scope, same title, content and tags) links to the original
    (promoted_from), which stays and records the promotion.
    """
    return _promote(args.id, args.to, ctx)


def _to_tool(to: str) -> Tool:
    def func(args: PromoteToArgs, ctx: ToolContext) -> dict[str, Any]:
        return _promote(args.id, to, ctx)

    return tool(
        f"promote_to_{to}",
        args=PromoteToArgs,
        description=f"Promote a memory entry to a {to}: promote_memory with to={to}.",
        toolset="memory",
        render=_render,
        output=PromoteMemoryOutput,
    )(func)


# Separate tools, not aliases: they take no `to` argument.
promote_to_decision = _to_tool("decision")
promote_to_pattern = _to_tool("pattern")
