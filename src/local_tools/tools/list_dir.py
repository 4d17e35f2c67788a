"""list_dir: the entries of a directory, folders first."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, tool
from local_tools.tools._common import iso_time, path_subject

MAX_ENTRIES = 1000


class ListDirArgs(Args):
    path: str = Field(".", description="Directory to list, workspace-relative or absolute.")
    include_hidden: bool = Field(False, description="Also list entries whose name starts with '.'.")


DESCRIPTION = f"""List a directory: name, type (file, directory, symlink), size in bytes and
last-modified time (UTC, ISO 8601) of each entry, folders first, then by name.
Hidden entries only with include_hidden=true. Symlinks are shown as symlinks and not
followed. At most {MAX_ENTRIES} entries; use glob to find files by pattern."""


def _render(output: dict[str, Any]) -> str:
    lines = [f"{output['path']}/"]
    for e in output["entries"]:
        suffix = "/" if e["type"] == "directory" else ("@" if e["type"] == "symlink" else "")
        size = "" if e["type"] == "directory" else f"  ({e['size']} bytes)"
        lines.append(f"  {e['name']}{suffix}{size}")
    if output["truncated"]:
        lines.append(f"  ... {output['total'] - len(output['entries'])} more entries not shown")
    if not output["entries"]:
        lines.append("  (empty)")
    return "\n".join(lines)


@tool(
    "list_dir",
    args=ListDirArgs,
    description=DESCRIPTION,
    permission="read:file",
    aliases=("ListDirectory", "list_directory", "ls"),
    hints=Hints(read_only=True, idempotent=True),
    toolset="files",
    subjects=path_subject,
    render=_render,
)
def list_dir(args: ListDirArgs, ctx: ToolContext) -> dict[str, Any]:
    entries = [e for e in ctx.jail.scandir(args.path) if args.include_hidden or not e.is_hidden]
    entries.sort(key=lambda e: (e.kind != "directory", e.name.casefold(), e.name))
    shown = entries[:MAX_ENTRIES]
    return {
        "path": ctx.jail.display(ctx.jail.resolve(args.path)),
        "entries": [
            {
                "name": e.name,
                "type": e.kind if e.kind in ("file", "directory", "symlink") else "other",
                "size": e.size,
                "last_modified": iso_time(e.mtime),
            }
            for e in shown
        ],
        "total": len(entries),
        "truncated": len(entries) > len(shown),
    }
