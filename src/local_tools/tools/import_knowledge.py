"""import_knowledge: load a JSON file written by export_knowledge."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput
from local_tools.core.tool import Args, Output, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.transfer import import_
from local_tools.tools._common import path_subject

MAX_FILE = 100 * 1024 * 1024


class ImportKnowledgeArgs(Args):
    path: str = Field("knowledge.json", description="The exported JSON file (in the workspace).")
    mode: Literal["merge", "replace"] = Field(
        "merge",
        description="merge: add what is missing, keep what exists; replace: the file becomes "
        "the whole store.",
    )


class ImportKnowledgeOutput(Output):
    mode: str = Field(description="How it was loaded.")
    added: dict[str, int] = Field(description="Rows added per table.")


@tool(
    "import_knowledge",
    args=ImportKnowledgeArgs,
    permission="read:file",
    subjects=path_subject,
    toolset="project",
    render=lambda o: (
        f"Imported ({o['mode']}): " + ", ".join(f"{n} {t}" for t, n in o["added"].items())
    ),
    output=ImportKnowledgeOutput,
)
def import_knowledge(args: ImportKnowledgeArgs, ctx: ToolContext) -> dict[str, Any]:
    """Load this workspace's knowledge from a JSON file export_knowledge wrote, all or
    nothing.

    Ids are kept; new ids continue after the highest either side used. A file that is
    not an export is INVALID_INPUT.
    """
    with ctx.jail.open_read(args.path) as handle:
        data = handle.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise InvalidInput(f"{args.path} is over {MAX_FILE // (1024 * 1024)} MB.")
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except ValueError as exc:
        raise InvalidInput(f"{args.path} is not valid JSON: {exc}") from None
    added = import_(open_store(ctx), doc, mode=args.mode)
    return {"mode": args.mode, "added": added}
