"""file_copy: copy a file, symlink or directory tree through the jail."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.security.jail import MAX_COPY_BYTES, MAX_COPY_ENTRIES
from local_tools.tools.file_move import transfer, transfer_subjects


class FileCopyArgs(Args):
    source: str = Field(
        description="File, directory or symlink to copy: workspace-relative, or absolute "
        "inside an allowed root."
    )
    destination: str = Field(
        description="The copy's path, including the name. End it with '/' to keep the name "
        "inside a folder: 'backup/' copies 'a.md' to 'backup/a.md'."
    )
    overwrite: bool = Field(
        False, description="Replace an existing file, symlink or empty folder at destination."
    )


class FileCopyOutput(Output):
    source: str = Field(description="What was copied, workspace-relative or absolute.")
    destination: str = Field(description="The copy's path.")
    files_copied: int = Field(description="Regular files and symlinks written.")
    type: str = Field(description='What was copied: "file", "directory" or "symlink".')


DESCRIPTION = f"""Copy a file, or a directory with everything in it.

destination is the copy's own path: copying to an existing folder 'b' is refused
(ALREADY_EXISTS) rather than putting it inside; give 'b/name', or 'b/' to keep the
name. An existing destination is only replaced with overwrite=true, and only by the
same kind (an empty folder for a folder). Missing parent folders are created. The copy
appears whole or not at all. Symlinks are copied as symlinks with the same target,
never followed; permission bits are kept; FIFOs and devices are refused. At most
{MAX_COPY_ENTRIES:,} entries and {MAX_COPY_BYTES >> 30} GB per copy. Needs read permission
on the source besides write access to both paths."""


def _render(output: dict[str, Any]) -> str:
    n = output["files_copied"]
    count = f" ({n} file{'s' if n != 1 else ''})" if output["type"] == "directory" else ""
    return f"Copied {output['type']} {output['source']} -> {output['destination']}{count}"


@tool(
    "file_copy",
    args=FileCopyArgs,
    description=DESCRIPTION,
    permission="write:file",
    aliases=("copy_file",),
    hints=Hints(destructive=True),
    toolset="files",
    subjects=transfer_subjects,
    render=_render,
    output=FileCopyOutput,
)
async def file_copy(args: FileCopyArgs, ctx: ToolContext) -> dict[str, Any]:
    source, destination, done = await transfer(ctx, args, "copy", ctx.jail.copy)
    return {
        "source": source,
        "destination": destination,
        "files_copied": done.files,
        "type": done.kind,
    }
