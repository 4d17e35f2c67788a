"""file_copy: copy a file, symlink or directory tree through the jail."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.security.jail import MAX_COPY_BYTES, MAX_COPY_ENTRIES
from local_tools.tools.file_move import transfer, transfer_subjects


class FileCopyArgs(Args):
    source: str = Field(description="What to copy, workspace-relative or absolute.")
    destination: str = Field(
        description=("The copy's path, name included; 'backup/' copies 'a.md' to 'backup/a.md'.")
    )
    overwrite: bool = Field(False, description="Replace an existing destination.")


class FileCopyOutput(Output):
    source: str = Field(description="What was copied, workspace-relative or absolute.")
    destination: str = Field(description="The copy's path.")
    files_copied: int = Field(description="Regular files and symlinks written.")
    type: str = Field(description='What was copied: "file", "directory" or "symlink".')


DESCRIPTION = f"""Copy a file, or a directory with everything in it.

destination is the copy's own path: an existing folder 'b' is refused
(ALREADY_EXISTS); give 'b/name', or 'b/' to keep the name. An existing destination
is replaced only with overwrite=true, and only by the same kind. Missing parents are
created; the copy appears whole or not at all. Symlinks are copied as symlinks;
permission bits are kept. At most {MAX_COPY_ENTRIES:,} entries and
{MAX_COPY_BYTES >> 30} GB."""


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
    changes=lambda args, ctx: (args.destination,),
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
