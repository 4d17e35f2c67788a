"""Small helpers shared by the file tools."""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import PurePosixPath
from typing import Any, Protocol

from local_tools.core.context import ToolContext

__all__ = ["iso_time", "path_subject", "similar_paths"]


class _HasPath(Protocol):
    path: str


def path_subject(args: Any, ctx: ToolContext) -> Sequence[str]:
    """File permission rules match the workspace-relative path."""
    return [ctx.jail.display(ctx.jail.resolve(args.path))]


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
