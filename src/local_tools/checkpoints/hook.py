"""The runner's side of checkpoints: a snapshot before a call that changes files, the
checkpoint after it. Never fails the call: what could not be kept becomes a note."""

from __future__ import annotations

import logging
import threading
from typing import Any

from pydantic import BaseModel

from local_tools.checkpoints.gitstore import GitError
from local_tools.checkpoints.retention import collect_if_due
from local_tools.checkpoints.store import ROOTS, Checkpoints, Pending, checkpoint_folder
from local_tools.core.context import ToolContext
from local_tools.core.tool import Tool

__all__ = ["begin", "checkpoints_for", "end"]

log = logging.getLogger(__name__)

NOTE_KEY = "checkpoint_note"
COLLECT_EVERY = 200


def checkpoints_for(ctx: ToolContext) -> Checkpoints:
    """The toolbox's checkpoints of this workspace (opened on first use)."""
    conf = ctx.config.checkpoints

    def open_store() -> Checkpoints:
        return Checkpoints(
            checkpoint_folder(ctx.state_dir, ctx.jail.root),
            ctx.jail,
            max_bytes=int(conf.max_file_mb * 2**20),
            watch=conf.watch,
            state_dir=ctx.state_dir,
        )

    return ctx.resource("checkpoints", open_store)


def begin(tool: Tool, args: BaseModel, ctx: ToolContext) -> Pending | str | None:
    """The state before the call (None: it changes nothing this time; a str: why no
    snapshot could be made)."""
    assert tool.changes is not None
    try:
        scope = tool.changes(args, ctx)
        if scope is None or (not isinstance(scope, str) and not scope):
            return None
        summary = str(getattr(args, "command", "") or "") if scope == ROOTS else ", ".join(scope)
        return checkpoints_for(ctx).begin(
            ROOTS if scope == ROOTS else list(scope),
            call_id=ctx.call_id,
            tool=tool.name,
            user_id=ctx.user_id,
            session=ctx.session_id,
            owner=ctx.owner,
            summary=summary,
        )
    except GitError as exc:  # git missing or broken: said in the result, once in the log
        log.warning("checkpoint before %s failed: %s", tool.name, exc)
        return f"No checkpoint was made, so this call cannot be undone ({_why(exc)})."
    except Exception as exc:  # the call still runs; the person is told it is not undoable
        log.exception("checkpoint before %s failed", tool.name)
        return f"No checkpoint was made, so this call cannot be undone ({_why(exc)})."


def end(pending: Pending | str, ctx: ToolContext, output: dict[str, Any] | None) -> None:
    """Record the checkpoint; notes in `output` (when the call returned one)."""
    note = pending if isinstance(pending, str) else None
    if isinstance(pending, Pending):
        try:
            store = checkpoints_for(ctx)
            cid = store.end(pending)
            if cid is not None:
                _collect_soon(store, ctx, cid)
        except Exception as exc:
            log.exception("checkpoint after %s failed", ctx.tool)
            note = f"The checkpoint of this call could not be saved ({_why(exc)})."
        else:
            if pending.skipped:
                listed = "; ".join(f"{p}: {why}" for p, why in list(pending.skipped.items())[:5])
                more = len(pending.skipped) - 5
                note = "Not kept in the checkpoint (not undoable): " + listed
                note += f"; and {more} more" if more > 0 else ""
    if note and output is not None:
        output[NOTE_KEY] = note


def _collect_soon(store: Checkpoints, ctx: ToolContext, cid: int) -> None:
    """Every 200 checkpoints, drop the expired ones and collect garbage, off the call."""
    if cid % COLLECT_EVERY:
        return
    conf = ctx.config.checkpoints
    threading.Thread(
        target=collect_if_due,
        args=(store, conf.keep_days, conf.max_size_mb),
        name="checkpoints-gc",
        daemon=True,
    ).start()


def _why(exc: Exception) -> str:
    text = str(getattr(exc, "message", None) or exc) or type(exc).__name__
    return text.rstrip(".")
