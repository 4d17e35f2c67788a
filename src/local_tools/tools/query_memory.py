"""query_memory: find saved entries by keywords, ranked, with a prompt-ready summary."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.memory import context_text, query
from local_tools.tools._knowledge import MemoryEntry

MAX_LIMIT = 100


class QueryMemoryArgs(Args):
    keywords: str = Field(
        "", max_length=1000,
        description="Words to look for (any of them). Empty: the newest entries.",
    )  # fmt: skip
    scope: Literal["merged", "project", "iteration", "session"] = Field(
        "merged",
        description=(
            "merged: every scope, this session's first, then iteration, then project; or one scope."
        ),
    )
    kind: Literal["insight", "issue", "learning", "decision", "pattern"] | None = Field(
        None, description="Only entries of this kind."
    )
    limit: int = Field(10, ge=1, le=MAX_LIMIT, description="At most this many entries.")


class QueryMemoryOutput(Output):
    count: int = Field(description="How many entries were found.")
    entries: list[MemoryEntry] = Field(description="The entries, best match first.")
    context: str = Field(description="The entries as compact lines to paste into a prompt.")


def _render(output: dict[str, Any]) -> str:
    if not output["entries"]:
        return "No memory entries matched."
    return f"{output['count']} entries:\n{output['context']}"


@tool(
    "query_memory",
    args=QueryMemoryArgs,
    hints=Hints(read_only=True, idempotent=True),
    toolset="memory",
    render=_render,
    output=QueryMemoryOutput,
)
def query_memory(args: QueryMemoryArgs, ctx: ToolContext) -> dict[str, Any]:
    """Search this workspace's memory (insights, issues, learnings, decisions, patterns).

    Full-text search ranked by relevance: any keyword, word prefixes and near spellings
    match. Returns the entries and `context`, a compact summary to paste into a prompt.
    """
    entries = query(
        open_store(ctx),
        keywords=args.keywords,
        scope=args.scope,
        kind=args.kind,
        limit=args.limit,
        session=ctx.owner,
    )
    return {"count": len(entries), "entries": entries, "context": context_text(entries)}
