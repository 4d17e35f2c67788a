"""export_knowledge: the workspace's knowledge as a JSON file in the workspace."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Output, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.transfer import export
from local_tools.tools._common import path_changes, path_subject


class ExportKnowledgeArgs(Args):
    path: str = Field(
        "knowledge.json", description="The JSON file to write (in the workspace); replaced."
    )


class ExportKnowledgeOutput(Output):
    path: str = Field(description="The file written.")
    bytes: int = Field(description="Its size.")
    counts: dict[str, int] = Field(
        description="Rows per table: memories, kv, items, links, counters."
    )


@tool(
    "export_knowledge",
    args=ExportKnowledgeArgs,
    permission="write:file",
    subjects=path_subject,
    changes=path_changes,
    toolset="project",
    render=lambda o: (
        f"Wrote {o['path']} ({o['bytes']} bytes): "
        + ", ".join(f"{n} {t}" for t, n in o["counts"].items())
    ),
    output=ExportKnowledgeOutput,
)
def export_knowledge(args: ExportKnowledgeArgs, ctx: ToolContext) -> dict[str, Any]:
    """Write this workspace's knowledge (memory, notes, project items, links) to a JSON file,
    to version it or move it; import_knowledge loads it back.
    """
    doc = export(open_store(ctx))
    data = (json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True) + "\n").encode()
    ctx.jail.write_atomic(args.path, data)
    counts = {k: len(v) for k, v in doc.items() if isinstance(v, list)}
    return {"path": args.path, "bytes": len(data), "counts": counts}
