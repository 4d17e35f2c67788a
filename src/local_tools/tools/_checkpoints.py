"""Shared by checkpoint_list, checkpoint_diff and restore: whose checkpoints a call sees,
and how one reads as a line."""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field

from local_tools.checkpoints.history import Checkpoint
from local_tools.core.context import ToolContext
from local_tools.tools._common import iso_time

__all__ = [
    "ALL_SESSIONS",
    "PERSON_DOORS",
    "checkpoint_dict",
    "owner_of",
    "shown_change_path",
    "user_of",
]

ALL_SESSIONS = Field(False, description="Also your other sessions' calls.")

# The transports a person drives (`local-tools checkpoints`/`undo`, the web console's
# Changes panel): with all_sessions they see every user's checkpoints of the workspace.
# A model's call (mcp, http, python) with all_sessions sees only its own user's.
PERSON_DOORS = frozenset({"cli", "console"})


def owner_of(ctx: ToolContext, all_sessions: bool) -> str | None:
    """This session's checkpoints; with all_sessions, None: any session (user_of then
    limits them to this user's unless the person calls)."""
    return None if all_sessions else ctx.owner


def user_of(ctx: ToolContext, all_sessions: bool) -> str | None:
    """Whose checkpoints all_sessions covers: this user's; the person's doors, everyone's."""
    if all_sessions and ctx.transport in PERSON_DOORS:
        return None
    return ctx.user_id


def shown_change_path(ctx: ToolContext, root: str, rel: str) -> str:
    return ctx.jail.display(os.path.join(root, rel))


def checkpoint_dict(ctx: ToolContext, cp: Checkpoint) -> dict[str, Any]:
    files = [
        {
            "path": shown_change_path(ctx, c.root, c.path),
            "action": c.action,
            "added": _count(c.added),
            "removed": _count(c.removed),
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
        "added": sum(_count(c.added) or 0 for c in cp.changes),
        "removed": sum(_count(c.removed) or 0 for c in cp.changes),
    }
    if cp.skipped:  # stored absolute: shown like the files (workspace-relative)
        out["skipped"] = {ctx.jail.display(p): why for p, why in cp.skipped.items()}
    return out


def _count(n: int | None) -> int | None:
    """Lines counted; None: binary or too large to count (stored as -1)."""
    return None if n is None or n < 0 else n
