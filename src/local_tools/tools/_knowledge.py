"""Output models and rendering shared by the knowledge tools (memory, project, checks)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.tool import Output, omitted

__all__ = ["MemoryEntry", "render_entry"]


class HistoryEvent(Output):
    at: str = Field(description="When (ISO 8601, UTC).")
    event: str = Field(description="What happened: created, promoted.")
    by: str = Field(description="Who did it.")
    kind: str = omitted(description="created: the kind it was saved as.")
    to: str = omitted(description="promoted: the kind it became.")
    new_id: int = omitted(description="promoted (on the original): the new entry.")
    from_: str = omitted(alias="from", description="promoted (on the copy): the old kind.")
    from_id: int = omitted(description="promoted (on the copy): the original entry.")


class MemoryEntry(Output):
    id: int = Field(description="The entry's id (never reused).")
    kind: str = Field(description="insight, issue, learning, decision or pattern.")
    title: str = Field(description="A short title ('' when none was given).")
    content: str = Field(description="What was saved.")
    tags: list[str] = Field(description="Tags.")
    scope: str = Field(description="project, iteration or session.")
    created_at: str = Field(description="When it was saved (ISO 8601, UTC).")
    updated_at: str = Field(description="When it last changed.")
    user_id: str = Field(description="Who saved it.")
    tool: str = Field(description="The tool that saved it.")
    history: list[HistoryEvent] = Field(description="Its creation and promotions.")
    promoted_from: int = omitted(description="The entry this one was promoted from.")


def render_entry(entry: dict[str, Any]) -> str:
    title = f" {entry['title']}:" if entry.get("title") else ""
    tags = f" [{', '.join(entry['tags'])}]" if entry.get("tags") else ""
    return f"#{entry['id']} {entry['kind']} ({entry['scope']}){title} {entry['content']}{tags}"
