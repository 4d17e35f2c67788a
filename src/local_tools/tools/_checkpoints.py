"""Shared by checkpoint_list, checkpoint_diff and restore: whose checkpoints a call sees,
and how one reads as a line."""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field

from local_tools.checkpoints.history import Checkpoint
from local_tools.core.context import ToolContext
from local_tools.tools._common import iso_time

__all__ = ["ALL_SESSIONS", "checkpoint_dict", "owner_of", "shown_change_path"]

ALL_SESSIONS = Field(False, description="Also your other sessions' calls.")


def owner_of(ctx: ToolContext, all_sessions: bool) -> str | None:
    """This session's checkpoints; with all_sessions, every session's of this user (the
    history is kept per workspace, so owner None means "any owner" there)."""
    return None if all_sessions else ctx.owner


def shown_change_path(ctx: ToolContext, root: str, rel: str) -> str:
    return ctx.jail.display(os.path.join(root, rel))


def checkpoint_dict(ctx: ToolContext, cp: Checkpoint) -> dict[str, Any]:
    files = [
        {
            "path": shown_change_path(ctx, c.root, c.path),
            "action": c.action,
            "added": c.added,
            "removed": c.removed,
        }
        for c in cp.changes
    ]
    out: dict[str, Any] = {
        "id": cp.id,
        "call_id": cp.call_id,
        "tool": cp.tool,
        "user": cp.user_id,
        "session": cp.session,
        "time": iso_time(cp.ts),
        "summary": cp.summary,
        "files": files,
        "added": sum(c.added or 0 for c in cp.changes),
        "removed": sum(c.removed or 0 for c in cp.changes),
    }
    if cp.skipped:  # stored absolute: shown like the files (workspace-relative)
        out["skipped"] = {ctx.jail.display(p): why for p, why in cp.skipped.items()}
    return out
