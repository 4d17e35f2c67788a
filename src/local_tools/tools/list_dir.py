"""list_dir: the entries of a directory, folders first."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.security.jail import DirEntryInfo
from local_tools.tools._common import iso_time, path_subject, shown_path

MAX_ENTRIES = 1000


class ListDirArgs(Args):
    path: str = Field(".", description="Directory to list, workspace-relative or absolute.")
    include_hidden: bool = Field(False, description="Also list entries whose name starts with '.'.")


class DirEntry(Output):
    name: str = Field(description="The entry's name.")
    type: str = Field(description='"file", "directory", "symlink" or "other".')
    size: int = Field(description="Bytes (0 for a directory; the link text's for a symlink).")
    last_modified: str = Field(description="Last-modified time, UTC, ISO 8601.")
    target: str | None = Field(
        None, description="Symlinks only: the link text (null when it cannot be read)."
    )


class ListDirOutput(Output):
    path: str = Field(description="The directory listed, workspace-relative or absolute.")
    entries: list[DirEntry] = Field(description="Folders first, then files, by name.")
    total: int = Field(description="Entries in the directory (hidden ones only if asked).")
    truncated: bool = Field(
        description=f"True when entries were left out (only the first {MAX_ENTRIES} are listed)."
    )


DESCRIPTION = f"""List a directory: each entry's name, type, size in bytes and modified time (UTC).

Folders first, then by name; hidden entries only with include_hidden=true; symlinks
shown with their target, not followed. At most {MAX_ENTRIES} entries; use glob to find
files by pattern."""


def _render(output: dict[str, Any]) -> str:
    lines = [f"{output['path']}/"]
    for e in output["entries"]:
        if e["type"] == "symlink":
            lines.append(f"  {e['name']}@ -> {e.get('target') or '?'}")
            continue
        suffix = "/" if e["type"] == "directory" else ""
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
    output=ListDirOutput,
)
def list_dir(args: ListDirArgs, ctx: ToolContext) -> dict[str, Any]:
    entries = [e for e in ctx.jail.scandir(args.path) if args.include_hidden or not e.is_hidden]
    entries.sort(key=lambda e: (e.kind != "directory", e.name.casefold(), e.name))
    shown = entries[:MAX_ENTRIES]
    return {
        "path": shown_path(ctx, args.path),
        "entries": [_entry(e) for e in shown],
        "total": len(entries),
        "truncated": len(entries) > len(shown),
    }


def _entry(e: DirEntryInfo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": e.name,
        "type": e.kind,
        "size": e.size,
        "last_modified": iso_time(e.mtime),
    }
    if e.kind == "symlink":
        out["target"] = e.target  # the link text, never followed
    return out
