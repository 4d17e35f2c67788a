"""file_delete: remove a file, a symlink, or a directory."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.tools._common import path_changes, path_subject, shown_path


class FileDeleteArgs(Args):
    path: str = Field(description="File or directory to delete, inside the workspace.")
    recursive: bool = Field(False, description="Required to delete a non-empty directory.")


class FileDeleteOutput(Output):
    path: str = Field(description="The path deleted, workspace-relative or absolute.")
    deleted: bool = Field(description="Always true: a failed delete is an error.")
    type: str = Field(description='What it was: "file", "directory" or "symlink".')


DESCRIPTION = """Delete a file, symlink or directory in the workspace; it cannot be undone.

A non-empty directory needs recursive=true. A symlink is removed, never its target.
The workspace root is refused. By default the user is asked first."""


@tool(
    "file_delete",
    args=FileDeleteArgs,
    description=DESCRIPTION,
    permission="delete:file",
    aliases=("FileDelete", "delete_file"),
    hints=Hints(destructive=True),
    toolset="files",
    subjects=path_subject,
    changes=path_changes,
    output=FileDeleteOutput,
)
def file_delete(args: FileDeleteArgs, ctx: ToolContext) -> dict[str, Any]:
    shown = shown_path(ctx, args.path)
    kind = ctx.jail.delete(args.path, recursive=args.recursive)
    return {"path": shown, "deleted": True, "type": kind}
