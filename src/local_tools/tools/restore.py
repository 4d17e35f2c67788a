"""restore: put files back to how they were before a call (undo), showing the plan."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import Field

from local_tools.checkpoints.hook import checkpoints_for
from local_tools.checkpoints.restore import Plan, Step, apply_plan, plan_restore
from local_tools.core.context import ToolContext
from local_tools.core.errors import Conflict, ToolError
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.tools._checkpoints import ALL_SESSIONS, owner_of, shown_change_path, user_of
from local_tools.tools._common import file_subjects

MAX_PLAN_LINES = 50
MAX_RECORDED = 20  # restored text files handed to the language-error check
MAX_RECORDED_BYTES = 1 << 20  # each


class RestoreArgs(Args):
    checkpoint: int = Field(ge=1, description="Its id, from checkpoint_list.")
    paths: list[str] | None = Field(None, description="Only these files or folders.")
    force: bool = Field(False, description="Overwrite files changed since.")
    dry_run: bool = Field(False, description="Only show the plan.")
    all_sessions: bool = ALL_SESSIONS


class RestoreOutput(Output):
    checkpoint: int = Field(description="The checkpoint restored to before.")
    undone: list[int] = Field(description="The checkpoints taken back, oldest first.")
    dry_run: bool = Field(description="True: nothing was changed, this is the plan.")
    plan: list[dict[str, Any]] = Field(
        description="Each path: action (create, replace, delete, unchanged), conflict."
    )
    failed: dict[str, str] = Field(description="Paths that could not be restored, and why.")


DESCRIPTION = """Undo: put files back to how they were before a call (a checkpoint).

Undoes that call and every later one of this session: deleted files come back, created
ones go. CONFLICT if a file changed since, unless force. Undoable itself."""


def _plan(args: RestoreArgs, ctx: ToolContext) -> Plan:
    store = checkpoints_for(ctx)
    return plan_restore(
        store,
        args.checkpoint,
        owner=owner_of(ctx, args.all_sessions),
        user=user_of(ctx, args.all_sessions),
        paths=args.paths,
    )


def _changes(args: RestoreArgs, ctx: ToolContext) -> list[str] | None:
    if args.dry_run:
        return None
    try:
        plan = _plan(args, ctx)
    except ToolError:
        return None  # the call itself fails the same way, with the reason: no snapshot
    return [str(s.path) for s in plan.steps if s.action != "unchanged"]


def _step_dict(ctx: ToolContext, step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": shown_change_path(ctx, str(step.root), step.rel),
        "action": step.action,
        "kind": step.target.kind if step.target.exists else step.current.kind,
    }
    if step.conflict:
        out["conflict"] = step.conflict
    return out


def plan_text(plan: list[dict[str, Any]]) -> str:
    lines = [
        f"  {p['action']:<9} {p['path']}"
        + (f"  (CONFLICT: {p['conflict']})" if "conflict" in p else "")
        for p in plan
        if p["action"] != "unchanged"
    ]
    if len(lines) > MAX_PLAN_LINES:
        lines = [*lines[:MAX_PLAN_LINES], f"  ... and {len(lines) - MAX_PLAN_LINES} more"]
    return "\n".join(lines) or "  (nothing to change: the files are already as they were)"


def _render(output: dict[str, Any]) -> str:
    head = "Plan (nothing changed yet)" if output["dry_run"] else "Restored"
    text = (
        f"{head}: back to before checkpoint {output['checkpoint']} "
        f"(undoing {', '.join(f'#{i}' for i in output['undone'])}).\n{plan_text(output['plan'])}"
    )
    for path, why in output["failed"].items():
        text += f"\n  FAILED {path}: {why}"
    return text


@tool(
    "restore",
    args=RestoreArgs,
    description=DESCRIPTION,
    aliases=("undo", "revert", "restore_checkpoint"),
    hints=Hints(destructive=True),
    toolset="checkpoints",
    render=_render,
    output=RestoreOutput,
    changes=_changes,
)
async def restore(args: RestoreArgs, ctx: ToolContext) -> dict[str, Any]:
    plan = await asyncio.to_thread(_plan, args, ctx)
    steps = [_step_dict(ctx, s) for s in plan.steps]
    result: dict[str, Any] = {
        "checkpoint": plan.checkpoint.id,
        "undone": plan.undone,
        "dry_run": args.dry_run,
        "plan": steps,
        "failed": {},
    }
    if args.dry_run:
        return result
    if plan.conflicts and not args.force:
        listed = "; ".join(f"{p['path']}: {p['conflict']}" for p in steps if "conflict" in p)
        raise Conflict(
            f"Nothing was restored: {len(plan.conflicts)} file(s) changed since ({listed}). "
            "Leave them out with paths, or pass force=true to overwrite them.",
            details={"conflicts": [p for p in steps if "conflict" in p]},
        )
    summary = f"restore to before checkpoint {plan.checkpoint.id}:\n{plan_text(steps)}"
    # Resolving each path's subjects touches the disk: off the event loop, like the rest.
    asks = await asyncio.to_thread(_subjects, ctx, plan)
    for permission, subjects in asks:
        if subjects:
            await ctx.authorize(permission, subjects, summary=summary)
    _done, failed, texts = await asyncio.to_thread(_apply, ctx, plan, args.force)
    for path, text in texts:
        ctx.record_change(path, None, text)
    result["failed"] = failed
    return result


def _subjects(ctx: ToolContext, plan: Plan) -> list[tuple[str, list[str]]]:
    return [
        (permission, [s for step in chosen for s in file_subjects(ctx, str(step.path))])
        for permission, chosen in (("write:file", plan.writes), ("delete:file", plan.deletes))
    ]


def _apply(
    ctx: ToolContext, plan: Plan, force: bool
) -> tuple[list[Step], dict[str, str], list[tuple[Path, str]]]:
    """The restore, then the text of a few files it wrote (read here, in the worker):
    the runner reports their language errors like any edit's."""
    done, failed = apply_plan(checkpoints_for(ctx), plan, force=force)
    texts: list[tuple[Path, str]] = []
    for step in done:
        if len(texts) >= MAX_RECORDED:
            break
        if step.action in ("create", "replace") and step.target.kind == "file":
            try:
                if step.path.stat().st_size > MAX_RECORDED_BYTES:
                    continue
                texts.append((step.path, step.path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError):
                continue
    return done, failed, texts
