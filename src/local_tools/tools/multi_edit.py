"""multi_edit: several edits of one file, applied in order, all or nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import ToolError
from local_tools.core.tool import Args, Hints, Output, omitted, tool
from local_tools.editing.diff import unified_diff
from local_tools.editing.match import Replacement, replace
from local_tools.editing.rewrite import rewrite_text_file
from local_tools.lsp.after_change import (
    DIAGNOSTICS_DESCRIPTION,
    DiagnosticsReport,
    with_diagnostics,
)
from local_tools.tools._common import authorize_read, path_changes, path_subject

MAX_EDITS = 100


class EditItem(Args):
    old_string: str = Field(description="The exact text to replace.")
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(False, description="Replace every occurrence.")


class MultiEditArgs(Args):
    path: str = Field(description="File to edit, workspace-relative or absolute.")
    edits: list[EditItem] = Field(
        min_length=1,
        max_length=MAX_EDITS,
        description="Edits applied in order.",
    )
    diagnostics: bool = Field(True, description="Report language errors after.")


class MultiEditOutput(Output):
    path: str = Field(description="The file edited, workspace-relative or absolute.")
    replacements: int = Field(description="How many places were replaced, all edits together.")
    strategies: list[str] = Field(description="How each edit's old_string was matched, in order.")
    created: bool = Field(description="True when the first edit created the file.")
    diff: str = Field(description="Unified diff of all the edits.")
    diagnostics: DiagnosticsReport = omitted(description=DIAGNOSTICS_DESCRIPTION)


DESCRIPTION = """Make several edits to one file in one step; all succeed or none is applied.

Each edit works like `edit` on the text left by the edits before it. If one fails,
the file is unchanged and the error names the edit (1-based) and why."""


def _render(output: dict[str, Any]) -> str:
    head = f"Edited {output['path']}: {output['replacements']} replacement(s)"
    text = f"{head}\n{output['diff']}" if output["diff"] else head
    return with_diagnostics(text, output)


def _multi_edit(args: MultiEditArgs, ctx: ToolContext) -> dict[str, Any]:
    def transform(text: str) -> tuple[str, list[Replacement]]:
        results: list[Replacement] = []
        for number, item in enumerate(args.edits, 1):
            try:
                result = replace(
                    text, item.old_string, item.new_string, replace_all=item.replace_all
                )
            except ToolError as exc:
                exc.message = (
                    f"Edit {number} of {len(args.edits)} failed; nothing was changed. {exc.message}"
                )
                exc.details = {**exc.details, "edit": number}
                raise
            text = result.content
            results.append(result)
        return text, results

    first_creates = args.edits[0].old_string == ""
    done = rewrite_text_file(ctx, args.path, transform, create_missing=first_creates)
    return {
        "path": done.shown,
        "replacements": sum(r.replacements for r in done.info),
        "strategies": [r.strategy for r in done.info],
        "created": done.created,
        "diff": unified_diff(done.before, done.after, done.shown),
    }


@tool(
    "multi_edit",
    args=MultiEditArgs,
    description=DESCRIPTION,
    permission="write:file",
    aliases=("MultiEdit",),
    hints=Hints(destructive=True),
    toolset="files",
    subjects=path_subject,
    changes=path_changes,
    render=_render,
    output=MultiEditOutput,
)
async def multi_edit(args: MultiEditArgs, ctx: ToolContext) -> dict[str, Any]:
    await authorize_read(ctx, args.path, "multi_edit reads")
    return await asyncio.to_thread(_multi_edit, args, ctx)
