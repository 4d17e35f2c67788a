"""Argument fields, output models and rendering shared by the project-data tools."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from local_tools.core.tool import Args, Output, omitted

__all__ = [
    "ItemArgs",
    "ItemListOutput",
    "ItemOutput",
    "ProjectItem",
    "UpdatedOutput",
    "render_item",
    "render_items",
]

MAX_TITLE = 300
MAX_DESCRIPTION = 20_000
MAX_LINKS = 200
IdList = list[str]


class ItemArgs(Args):
    title: str = Field(min_length=1, max_length=MAX_TITLE, description="A short title.")
    description: str = Field("", max_length=MAX_DESCRIPTION, description="The details.")
    priority: Literal["high", "medium", "low"] = Field("medium", description="How much it matters.")


class ProjectItem(Output):
    id: str = Field(description="REQ-, FEAT-, COMP- or TASK- and a number (never reused).")
    kind: str = Field(description="requirement, feature, component or task.")
    title: str
    description: str
    status: str
    priority: str
    user_id: str = Field(description="Who created it.")
    created_at: str
    updated_at: str
    covers: list[str] = omitted(description="Feature: the requirements it covers.")
    provides: list[str] = omitted(description="Component: the features it provides.")
    implements: list[str] = omitted(description="Task: the feature it implements.")
    depends_on: list[str] = omitted(description="Task: the tasks to finish first.")
    tasks: list[str] = omitted(description="Feature: the tasks implementing it.")
    referenced_by: list[str] = omitted(description="Deleted item: who still links to it.")


class ItemOutput(Output):
    id: str = Field(description="The item's id.")
    item: ProjectItem = Field(description="The item as stored.")
    note: str = omitted(description="Something worth knowing, if any.")


class UpdatedOutput(ItemOutput):
    previous_status: str = Field(description="The status before this call.")


class ItemListOutput(Output):
    count: int = Field(description="How many items.")
    items: list[ProjectItem] = Field(description="The items, by id.")


def render_item(item: dict[str, Any]) -> str:
    links = [
        f"{rel.replace('_', ' ')} {', '.join(item[rel])}"
        for rel in ("covers", "provides", "implements", "depends_on", "tasks")
        if item.get(rel)
    ]
    extra = f" — {'; '.join(links)}" if links else ""
    return f"{item['id']} [{item['status']}] {item['title']}{extra}"


def render_items(output: dict[str, Any]) -> str:
    lines = [render_item(output["item"])] if "item" in output else []
    lines += [render_item(i) for i in output.get("items", [])]
    if output.get("note"):
        lines.append(output["note"])
    return "\n".join(lines) or "None yet."
