"""save_memory (and save_insight, save_issue, save_learning): keep something learned."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Output, Tool, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.memory import save
from local_tools.tools._knowledge import MemoryEntry, render_entry

MAX_CONTENT = 100_000
MAX_TITLE = 200
MAX_TAGS = 20

Kind = Literal["insight", "issue", "learning", "decision", "pattern"]
Scope = Literal["project", "iteration", "session"]


class _EntryFields(Args):
    # Stored as given: SQLite keeps a NUL, PostgreSQL refuses it cleanly (core/arg_checks.py).
    verbatim_text: ClassVar[frozenset[str]] = frozenset({"content"})
    content: str = Field(min_length=1, max_length=MAX_CONTENT, description="What to remember.")
    title: str = Field("", max_length=MAX_TITLE, description="A short title.")
    tags: list[str] = Field(
        default_factory=list, max_length=MAX_TAGS,
        description="Words to find it by (no spaces in a tag).",
    )  # fmt: skip
    scope: Scope = Field(
        "project",
        description="project: kept for good; iteration: this round of work; session: "
        "this conversation only.",
    )

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the content is empty")
        return value

    @field_validator("tags")
    @classmethod
    def _plain_tags(cls, value: list[str]) -> list[str]:
        for tag in value:
            if not tag or len(tag) > 64 or any(c.isspace() for c in tag):
                raise ValueError(f"tag {tag!r}: 1-64 characters without spaces")
        return value


class SaveMemoryArgs(_EntryFields):
    kind: Kind = Field(
        description=(
            "insight (an observation), issue (a problem or debt), learning (how "
            "something works), decision (a choice made), pattern (a reusable "
            "design)."
        )
    )


class SaveMemoryOutput(Output):
    id: int = Field(description="The new entry's id.")
    entry: MemoryEntry = Field(description="The entry as stored.")


def _save(kind: str, args: Any, ctx: ToolContext) -> dict[str, Any]:
    entry = save(
        open_store(ctx),
        kind=kind,
        content=args.content,
        title=args.title,
        tags=args.tags,
        scope=args.scope,
        session=ctx.owner,
        user_id=ctx.user_id,
        tool=ctx.tool,
    )
    return {"id": entry["id"], "entry": entry}


def _render(output: dict[str, Any]) -> str:
    return "Saved " + render_entry(output["entry"])


DESCRIPTION = """Save something worth remembering across sessions in this workspace's memory.

Give a short title and tags so query_memory finds it. Returns the new entry's id;
promote_memory turns an insight into a decision or pattern."""


@tool(
    "save_memory",
    args=SaveMemoryArgs,
    description=DESCRIPTION,
    toolset="memory",
    render=_render,
    output=SaveMemoryOutput,
)
def save_memory(args: SaveMemoryArgs, ctx: ToolContext) -> dict[str, Any]:
    return _save(args.kind, args, ctx)


class SaveKindArgs(_EntryFields):
    pass


_KIND_TEXT = {
    "insight": "an insight (an observation about the project or the work)",
    "issue": "an issue (a known problem or technical debt)",
    "learning": "a learning (how something works, what to do or avoid)",
}


def _kind_tool(kind: str) -> Tool:
    def func(args: SaveKindArgs, ctx: ToolContext) -> dict[str, Any]:
        return _save(kind, args, ctx)

    return tool(
        f"save_{kind}",
        args=SaveKindArgs,
        description=f"Save {_KIND_TEXT[kind]} in this workspace's memory; returns its id.\n\n"
        f"save_memory with kind={kind}. Give a title and tags so query_memory finds it.",
        toolset="memory",
        render=_render,
        output=SaveMemoryOutput,
    )(func)


# Separate tools rather than aliases: an alias names the same tool with the same
# arguments, and these have no `kind` argument.
save_insight = _kind_tool("insight")
save_issue = _kind_tool("issue")
save_learning = _kind_tool("learning")
