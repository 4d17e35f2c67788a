"""Small helpers shared by the file tools."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import PurePosixPath
from typing import Any

from local_tools.core.context import ToolContext
from local_tools.core.errors import ToolError

__all__ = ["file_subjects", "iso_time", "path_subject", "shown_path", "similar_paths"]


def shown_path(ctx: ToolContext, path: str) -> str:
    """The path as the caller wrote it, normalised without touching the disk.

    Workspace-relative with forward slashes; absolute outside the workspace. This is
    the entry a tool acts on when it acts on a symlink itself (write, delete, stat).
    """
    root = str(ctx.jail.root)
    joined = path if os.path.isabs(path) else os.path.join(root, path)
    return ctx.jail.display(os.path.normpath(joined))


def file_subjects(ctx: ToolContext, path: str) -> list[str]:
    """What file permission rules are matched against, strictest answer wins.

    The path as written (lexically normalised, so a denied folder cannot be probed
    through `denied/x/../y`) and, when it resolves, where it really leads — a
    symlink may point into a protected or denied place, or be replaced itself.
    """
    subjects = [shown_path(ctx, path)]
    try:
        real = ctx.jail.display(ctx.jail.resolve(path))
    except ToolError:
        return subjects  # the tool reports why, after authorization
    if real not in subjects:
        subjects.append(real)
    return subjects


def path_subject(args: Any, ctx: ToolContext) -> Sequence[str]:
    return file_subjects(ctx, args.path)


def path_changes(args: Any, ctx: ToolContext) -> Sequence[str]:
    """What a tool writing `args.path` changes (checkpointed before the call)."""
    return (args.path,)


async def authorize_read(ctx: ToolContext, path: str, doing: str) -> None:
    """`read:file` on `path`, for a tool that declares only `write:file` but shows what it
    read (an edit's diff, the closest block of a failed match): otherwise an edit of
    `.env` would print what `read_file .env` asks for."""
    await ctx.authorize("read:file", file_subjects(ctx, path), summary=f"{doing} {path}")


def iso_time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")


def similar_paths(ctx: ToolContext, path: str, limit: int = 3) -> list[str]:
    """Up to `limit` siblings whose names look like the missing one ("did you mean")."""
    posix = PurePosixPath(path.replace(os.sep, "/"))
    parent = str(posix.parent) or "."
    try:
        names = [entry.name for entry in ctx.jail.scandir(parent)]
    except Exception:  # the parent may be missing too; a hint is optional
        return []
    lowered = {name.casefold(): name for name in names}
    close = difflib.get_close_matches(posix.name.casefold(), list(lowered), n=limit, cutoff=0.6)
    prefix = "" if parent in (".", "") else parent.rstrip("/") + "/"
    return [prefix + lowered[c] for c in close]


def arguments_object(value: dict[str, Any] | str) -> dict[str, Any]:
    """A called tool's arguments (batch, call_tool): an object, or that object as JSON text
    (what strict OpenAI models and the openlink door send). ValueError otherwise."""
    if not isinstance(value, str):
        return value
    try:
        parsed = json.loads(value) if value.strip() else {}
    except (ValueError, RecursionError):  # not JSON, or nested past the parser
        parsed = None
    if not isinstance(parsed, dict):
        raise ValueError("must be an object of the tool's arguments (or it as JSON text)")
    return parsed
