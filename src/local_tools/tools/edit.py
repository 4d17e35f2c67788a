"""edit: replace one exact (or safely near-exact) piece of a file."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
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


class EditArgs(Args):
    path: str = Field(description="File to edit, workspace-relative or absolute.")
    old_string: str = Field(description="The exact text to replace.")
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(
        False, description="Replace every occurrence instead of requiring exactly one."
    )
    diagnostics: bool = Field(True, description="Report language errors after.")


class EditOutput(Output):
    path: str = Field(description="The file edited, workspace-relative or absolute.")
    replacements: int = Field(description="How many places were replaced.")
    strategy: str = Field(description='How old_string was matched: "exact" or a tolerance.')
    first_line: int = Field(description="Line of the first change in the original file.")
    created: bool = Field(description="True when the edit created the file.")
    diff: str = Field(description="Unified diff of the change.")
    diagnostics: DiagnosticsReport = omitted(description=DIAGNOSTICS_DESCRIPTION)


DESCRIPTION = """Replace text in a file: old_string becomes new_string.

Copy old_string exactly from the file (without read_file's line-number prefix), with
enough context to be unique: several matches are refused (CONFLICT) unless
replace_all=true. Slips in line endings, trailing whitespace, indentation or blank
lines are tolerated when the place is unambiguous; the result names the strategy.
When nothing matches, the error shows the closest block. An empty old_string creates
a file. Encoding, BOM and line endings are kept. A file changed since you read it is
refused: read it again."""


def _render(output: dict[str, Any]) -> str:
    head = f"Edited {output['path']}: {output['replacements']} replacement(s)"
    if output["strategy"] != "exact":
        head += f" (matched by {output['strategy']})"
    text = f"{head}\n{output['diff']}" if output["diff"] else head
    return with_diagnostics(text, output)


def _edit(args: EditArgs, ctx: ToolContext) -> dict[str, Any]:
    def transform(text: str) -> tuple[str, Replacement]:
        result = replace(text, args.old_string, args.new_string, replace_all=args.replace_all)
        return result.content, result

    done = rewrite_text_file(ctx, args.path, transform, create_missing=args.old_string == "")
    return {
        "path": done.shown,
        "replacements": done.info.replacements,
        "strategy": done.info.strategy,
        "first_line": done.info.first_line,
        "created": done.created,
        "diff": unified_diff(done.before, done.after, done.shown),
    }


@tool(
    "edit",
    args=EditArgs,
    description=DESCRIPTION,
    permission="write:file",
    aliases=("edit_file", "Edit"),
    hints=Hints(destructive=True),
    toolset="files",
    subjects=path_subject,
    changes=path_changes,
    render=_render,
    output=EditOutput,
)
async def edit(args: EditArgs, ctx: ToolContext) -> dict[str, Any]:
    await authorize_read(ctx, args.path, "edit reads")
    return await asyncio.to_thread(_edit, args, ctx)
