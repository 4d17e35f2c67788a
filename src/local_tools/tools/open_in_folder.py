"""open_in_folder: show a workspace file or folder in the user's file manager."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import NotFound
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.tools._common import path_subject, shown_path

__all__ = ["OpenInFolderArgs", "OpenInFolderOutput", "open_in_folder"]


class OpenInFolderArgs(Args):
    path: str = Field(description="The file or folder, workspace-relative or absolute.")


class OpenInFolderOutput(Output):
    path: str = Field(description="The path shown.")
    command: list[str] = Field(description="The command that opened the file manager.")


DESCRIPTION = """Show a file or folder in the user's file manager, selected where the platform can.

Paths outside the workspace roots are refused; without a display it fails."""


def _render(output: dict[str, Any]) -> str:
    return f"Opened {output['path']} in the file manager ({' '.join(output['command'][:1])})."


@tool(
    "open_in_folder",
    args=OpenInFolderArgs,
    description=DESCRIPTION,
    permission="read:file",
    hints=Hints(read_only=True, open_world=True),
    toolset="system",
    subjects=path_subject,
    render=_render,
    output=OpenInFolderOutput,
)
def open_in_folder(args: OpenInFolderArgs, ctx: ToolContext) -> dict[str, Any]:
    real = ctx.jail.resolve(args.path)
    if not real.exists():
        raise NotFound(f"{shown_path(ctx, args.path)} does not exist: nothing to show.")
    from local_tools import desktop  # loads with the first call, not with every start

    command = desktop.reveal(real)
    return {"path": ctx.jail.display(real), "command": command}
