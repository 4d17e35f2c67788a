"""get_design_document: requirements, features and components as one document."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, Output, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.project import design_document, get


class DesignDocumentOutput(Output):
    document: str = Field(description="The design as Markdown.")
    requirements: int = Field(description="How many requirements.")
    features: int = Field(description="How many features.")
    components: int = Field(description="How many components.")


@tool(
    "get_design_document",
    permission="read:project",
    hints=Hints(read_only=True, idempotent=True),
    toolset="project",
    render=lambda output: output["document"],
    output=DesignDocumentOutput,
)
def get_design_document(args: Any, ctx: ToolContext) -> dict[str, Any]:
    """The project's design as Markdown: requirements, features with the requirements each
    covers, components with the features each provides.
    """
    store = open_store(ctx)
    counts = {f"{k}s": len(get(store, k)) for k in ("requirement", "feature", "component")}
    return {"document": design_document(store), **counts}
