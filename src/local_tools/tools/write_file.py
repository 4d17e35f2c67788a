"""write_file: create, replace or append to a file, atomically."""

from __future__ import annotations

import codecs
import os
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import AlreadyExists, InvalidInput
from local_tools.core.tool import Args, Hints, tool
from local_tools.editing.freshness import note_read
from local_tools.tools._common import path_subject, shown_path


class WriteFileArgs(Args):
    path: str = Field(
        description="File to write: workspace-relative, or absolute inside a writable root."
    )
    content: str = Field(description="The full text to write.")
    encoding: str = Field("utf-8", description="Text encoding to write with.")
    overwrite: bool = Field(False, description="Replace the file if it already exists.")
    append: bool = Field(
        False, description="Add content to the end of the file instead of replacing it."
    )


DESCRIPTION = """Write a text file in the workspace.

Creates the file and any missing parent folders. An existing file is only replaced
with overwrite=true (otherwise ALREADY_EXISTS); append=true adds to the end. Writes
are atomic: the file is never left half-written. To change part of an existing file,
prefer edit."""


@tool(
    "write_file",
    args=WriteFileArgs,
    description=DESCRIPTION,
    permission="write:file",
    aliases=("FileWrite", "write"),
    hints=Hints(destructive=True),
    toolset="files",
    subjects=path_subject,
)
def write_file(args: WriteFileArgs, ctx: ToolContext) -> dict[str, Any]:
    try:
        codecs.lookup(args.encoding)
        data = args.content.encode(args.encoding)
    except LookupError:
        raise InvalidInput(f"Unknown encoding {args.encoding!r}. Try 'utf-8'.") from None
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"The content cannot be written as {args.encoding}: {exc.reason} at character "
            f"{exc.start}. Use encoding='utf-8'."
        ) from None
    if args.append:
        created = ctx.jail.append(args.path, data)
    else:
        try:
            created = ctx.jail.write_atomic(args.path, data, exclusive=not args.overwrite)
        except AlreadyExists:
            raise AlreadyExists(
                f"{args.path} already exists. Pass overwrite=true to replace it, append=true "
                "to add to it, or use edit to change part of it."
            ) from None
    real = ctx.jail.resolve(args.path)
    note_read(ctx, real, os.stat(real))  # what we wrote is what this session has seen
    return {
        "path": shown_path(ctx, args.path),
        "bytes_written": len(data),
        "created": created,
    }
