"""file_stat: type, size, times and line count of one path."""

from __future__ import annotations

import os
import stat
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.tools._common import iso_time, path_subject, shown_path

# Counting lines means reading the file; past this size the count is skipped.
MAX_COUNT_BYTES = 64 * 1024 * 1024


class FileStatArgs(Args):
    path: str = Field(description="Path to inspect, workspace-relative or absolute.")


class FileStatOutput(Output):
    path: str = Field(description="The path, workspace-relative or absolute.")
    type: str = Field(description='"file", "directory", "symlink" or "other".')
    size: int = Field(description="Size in bytes (of the link itself for a symlink).")
    last_modified: str = Field(description="Last-modified time, UTC, ISO 8601.")
    readonly: bool = Field(description="Whether it cannot be written.")
    lines: int | None = Field(
        description="Number of lines of a text file up to 64 MB; null otherwise."
    )


DESCRIPTION = """Show what a path is without reading it: type, size, modified time (UTC), read-only.

Also the line count of text files up to 64 MB. A symlink is described, not
followed."""


@tool(
    "file_stat",
    args=FileStatArgs,
    description=DESCRIPTION,
    permission="read:file",
    aliases=("stat",),
    hints=Hints(read_only=True, idempotent=True),
    toolset="files",
    subjects=path_subject,
    output=FileStatOutput,
)
def file_stat(args: FileStatArgs, ctx: ToolContext) -> dict[str, Any]:
    st = ctx.jail.stat(args.path, follow_symlinks=False)
    shown = shown_path(ctx, args.path)
    if stat.S_ISLNK(st.st_mode):
        kind = "symlink"
    elif stat.S_ISDIR(st.st_mode):
        kind = "directory"
    elif stat.S_ISREG(st.st_mode):
        kind = "file"
    else:
        kind = "other"
    result: dict[str, Any] = {
        "path": shown,
        "type": kind,
        "size": st.st_size,
        "last_modified": iso_time(st.st_mtime),
        "readonly": not (st.st_mode & stat.S_IWUSR)
        or not ctx.jail.is_writable(os.path.join(ctx.jail.root, shown)),
        "lines": None,
    }
    if kind == "file" and st.st_size <= MAX_COUNT_BYTES:
        result["lines"] = _count_text_lines(args.path, ctx)
    return result


def _count_text_lines(path: str, ctx: ToolContext) -> int | None:
    """Line count of a text file; None for binary content."""
    lines = 0
    last = b""
    with ctx.jail.open_read(path) as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            if b"\0" in chunk:
                return None
            lines += chunk.count(b"\n")
            last = chunk
    return lines + (1 if last and not last.endswith(b"\n") else 0)
