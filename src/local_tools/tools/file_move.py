"""file_move: rename or move a file, symlink or directory through the jail.

Also holds what file_copy shares with it: how the destination is spelled, the
permission subjects, and the extra checks on the source.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import AlreadyExists, InvalidInput
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.tools._common import file_subjects, shown_path

T = TypeVar("T")

__all__ = [
    "FileMoveArgs",
    "FileMoveOutput",
    "better_exists",
    "file_move",
    "final_destination",
    "source_checks",
    "transfer_subjects",
]

_SEPARATORS = ("/", "\\") if os.sep == "\\" else ("/",)


class FileMoveArgs(Args):
    source: str = Field(description="What to move, workspace-relative or absolute.")
    destination: str = Field(
        description="Its new path, name included; 'docs/' moves 'a.md' to 'docs/a.md'."
    )
    overwrite: bool = Field(False, description="Replace an existing destination.")


class FileMoveOutput(Output):
    source: str = Field(description="Where it was, workspace-relative or absolute.")
    destination: str = Field(description="Where it is now.")
    type: str = Field(description='What was moved: "file", "directory" or "symlink".')


DESCRIPTION = """Move or rename a file, directory or symlink.

destination is the new path itself: moving 'a' to an existing folder 'b' is refused
(ALREADY_EXISTS); give 'b/a', or 'b/' to keep the name. An existing destination is
replaced only with overwrite=true, and only by the same kind. Missing parents are
created; symlinks move as links. Across disks the data is copied first (at most
10,000 entries, 1 GB). Needs delete permission on the source (asks by default)."""


def final_destination(source: str, destination: str) -> str:
    """The path the entry ends up at: a trailing '/' means "inside, same name".

    Purely textual, so the permission check and the operation agree on it.
    """
    if not destination.endswith(_SEPARATORS):
        return destination
    name = os.path.basename(os.path.normpath(source))
    if name in ("", ".", "..") or name.endswith(_SEPARATORS):
        raise InvalidInput(
            f"Cannot tell which name to give '{source}' inside '{destination}'. Give the "
            "destination's full path, including the new name."
        )
    return destination + name


def transfer_subjects(args: Any, ctx: ToolContext) -> Sequence[str]:
    """write:file is checked on both ends: the source changes (move) or is read into
    a new file (copy), and the destination is created or replaced."""
    dst = final_destination(args.source, args.destination)
    return [*file_subjects(ctx, args.source), *file_subjects(ctx, dst)]


async def source_checks(ctx: ToolContext, source: str, *, removes: bool, summary: str) -> None:
    """Permissions on the source beyond write:file.

    read:file, because the content reaches a new path where the read rules that
    protected it (a `.env` ask, a denied folder) no longer match; delete:file for a
    move, which removes the source name. Both before anything is touched.
    """
    subjects = file_subjects(ctx, source)
    await ctx.authorize("read:file", subjects, summary=summary)
    if removes:
        await ctx.authorize("delete:file", subjects, summary=summary)


def better_exists(exc: AlreadyExists, source: str, destination: str, verb: str) -> AlreadyExists:
    """Spell out how to put the source inside an existing folder."""
    if not exc.details.get("destination_is_directory"):
        return exc
    name = os.path.basename(os.path.normpath(source))
    inside = f"{destination.rstrip('/')}/{name}"
    return AlreadyExists(
        f"Destination '{destination}' is an existing folder, and destination names the "
        f"new path itself. To {verb} '{source}' into it, use destination '{inside}' (or "
        f"'{destination.rstrip('/')}/'). overwrite=true replaces it only if it is empty.",
        details=exc.details,
    )


def _render(output: dict[str, Any]) -> str:
    return f"Moved {output['type']} {output['source']} -> {output['destination']}"


@tool(
    "file_move",
    args=FileMoveArgs,
    description=DESCRIPTION,
    permission="write:file",
    aliases=("move_file",),
    hints=Hints(destructive=True),
    toolset="files",
    subjects=transfer_subjects,
    changes=lambda args, ctx: (args.source, args.destination),  # both ends
    render=_render,
    output=FileMoveOutput,
)
async def file_move(args: FileMoveArgs, ctx: ToolContext) -> dict[str, Any]:
    source, destination, kind = await transfer(ctx, args, "move", ctx.jail.rename)
    return {"source": source, "destination": destination, "type": kind}


async def transfer(
    ctx: ToolContext, args: Any, verb: str, operation: Callable[..., T]
) -> tuple[str, str, T]:
    """The call flow file_move and file_copy share: the final destination, the source
    checks, the jail operation off the event loop, a clearer ALREADY_EXISTS.

    Returns the shown source and destination, and what the operation returned.
    """
    dst = final_destination(args.source, args.destination)
    source, destination = shown_path(ctx, args.source), shown_path(ctx, dst)
    await source_checks(
        ctx, args.source, removes=verb == "move", summary=f"file_{verb} {source} -> {destination}"
    )
    ctx.check_cancelled()
    try:
        done = await asyncio.to_thread(
            operation, args.source, dst, overwrite=args.overwrite, check=ctx.check_cancelled
        )
    except AlreadyExists as exc:
        raise better_exists(exc, source, destination, verb) from None
    return source, destination, done
