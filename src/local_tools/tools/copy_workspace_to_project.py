"""copy_workspace_to_project: promote finished work into a project folder, safely.

The plan and the swap live in ``local_tools.deploy``; this module checks the roots
through the jail, asks for the ``deploy`` permission with the plan shown, and reports.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.deploy import Plan, apply_plan, clean_leftovers, make_plan
from local_tools.deploy.plan import Entry

MAX_LISTED = 200  # entries per list in the output; the counts are always complete


class CopyArgs(Args):
    source: str = Field(description="The workspace folder holding the finished work.")
    target: str = Field(
        description="The project folder to make match it (in a writable root; created "
        "if missing). It must not overlap the source."
    )
    dry_run: bool = Field(
        True, description="Only report the plan (the default). false carries it out."
    )


class CopyOutput(Output):
    dry_run: bool = Field(description="True: nothing was changed, this is the plan.")
    applied: bool = Field(description="True when the target now matches the plan.")
    source: str = Field(description="The source folder.")
    target: str = Field(description="The target folder.")
    counts: dict[str, int] = Field(
        description="How many files: delete, copy_new, overwrite, link, unchanged, skip, protected."
    )
    bytes_copied: int = Field(description="Bytes the copy phase writes.")
    deletes: list[dict[str, Any]] = Field(description="Target files deleted: path, size.")
    copies: list[dict[str, Any]] = Field(
        description="Files copied: path, size, action (new or overwrite)."
    )
    links: list[dict[str, Any]] = Field(description="Symlinks copied as links: path, to.")
    skipped: list[dict[str, Any]] = Field(description="Source files not copied: path, reason.")
    protected: list[str] = Field(description="Protected target paths, left untouched.")
    notes: list[str] = Field(description="Cleanups of interrupted runs, leftovers.")
    listed_max: int = Field(description="Each list shows at most this many entries.")


DESCRIPTION = """Promote finished work from a workspace folder into a project folder.

Two phases: files in the target that the source no longer has are deleted, then
files with a whitelisted extension are copied (web pages, styles, scripts, JSON,
Markdown, images, fonts; [deploy] extensions). Source maps and other files are
reported, not copied. Never deleted or overwritten: .git/, README.md,
local-tools.toml, .local-tools/ and [deploy] protected paths. Symlinks are copied
as links only when they stay inside the target.
dry_run (default true) returns the plan: deleted, copied, overwritten and skipped
files with sizes. Run it first and show the plan. The real run needs the user's
approval (the deploy permission, which shows them the plan) and swaps the new tree
in atomically: the target is the old tree or the planned one, never in between."""


def _entries(entries: list[Entry], key: str) -> list[dict[str, Any]]:
    return [{"path": e.path, "size": e.size, key: e.reason} for e in entries[:MAX_LISTED]]


def _report(plan: Plan, shown_source: str, shown_target: str, dry_run: bool) -> dict[str, Any]:
    new = [e for e in plan.copy if e.reason == "new"]
    return {
        "dry_run": dry_run,
        "applied": False,
        "source": shown_source,
        "target": shown_target,
        "counts": {
            "delete": len(plan.delete),
            "copy_new": len(new),
            "overwrite": len(plan.copy) - len(new),
            "link": len(plan.links),
            "unchanged": len(plan.unchanged),
            "skip": len(plan.skip),
            "protected": len(plan.protected),
        },
        "bytes_copied": sum(e.size for e in plan.copy),
        "deletes": [{"path": e.path, "size": e.size} for e in plan.delete[:MAX_LISTED]],
        "copies": _entries(plan.copy, "action"),
        "links": [{"path": e.path, "to": e.reason} for e in plan.links[:MAX_LISTED]],
        "skipped": _entries(plan.skip, "reason"),
        "protected": [e.path for e in plan.protected[:MAX_LISTED]],
        "notes": [],
        "listed_max": MAX_LISTED,
    }


def _render(out: dict[str, Any]) -> str:
    c = out.get("counts", {})
    head = "Plan (dry run, nothing changed)" if out.get("dry_run") else "Deployed"
    lines = [
        f"{head}: {out.get('source')} → {out.get('target')}: delete {c.get('delete', 0)}, "
        f"copy {c.get('copy_new', 0)} new + {c.get('overwrite', 0)} overwrite "
        f"({out.get('bytes_copied', 0)} bytes), {c.get('link', 0)} links, "
        f"{c.get('unchanged', 0)} unchanged, {c.get('skip', 0)} skipped, "
        f"{c.get('protected', 0)} protected."
    ]
    lines += [f"  delete {e['path']} ({e['size']} B)" for e in out.get("deletes", [])]
    lines += [f"  {e['action']} {e['path']} ({e['size']} B)" for e in out.get("copies", [])]
    lines += [f"  link {e['path']} -> {e['to']}" for e in out.get("links", [])]
    lines += [f"  skip {e['path']}: {e['reason']}" for e in out.get("skipped", [])]
    lines += [f"  note: {n}" for n in out.get("notes", [])]
    if out.get("dry_run"):
        lines.append("Show the user this plan; call again with dry_run=false to carry it out.")
    return "\n".join(lines)


@tool(
    "copy_workspace_to_project",
    args=CopyArgs,
    description=DESCRIPTION,
    aliases=("deploy_to_project",),
    hints=Hints(destructive=True),
    toolset="review",
    render=_render,
    output=CopyOutput,
    timeout=600.0,
)
async def copy_workspace_to_project(args: CopyArgs, ctx: ToolContext) -> dict[str, Any]:
    source = ctx.jail.resolve(args.source)
    target = ctx.jail.resolve(args.target, write=True)
    shown_source, shown_target = ctx.jail.display(source), ctx.jail.display(target)
    if any(target == root for root, _ in ctx.jail.roots) or not ctx.jail.is_writable(target.parent):
        raise InvalidInput(
            f"The target {shown_target} must be a folder inside a writable root, not a "
            "root itself: the new tree is staged beside it and swapped in."
        )
    deploy = ctx.config.deploy
    plan = await asyncio.to_thread(make_plan, source, target, deploy.extensions, deploy.protected)
    out = _report(plan, shown_source, shown_target, args.dry_run)
    if args.dry_run:
        return out
    summary = plan.summary(shown_source, shown_target)
    await ctx.authorize("deploy", [shown_target], summary=summary)
    if not target.parent.exists():  # a new target's folders, made through the jail
        await asyncio.to_thread(ctx.jail.mkdir, str(target.parent))
    notes = await asyncio.to_thread(clean_leftovers, target)
    # Planned again after the approval: the person approved what the plan said, and
    # the files may have moved on while they read it.
    again = await asyncio.to_thread(make_plan, source, target, deploy.extensions, deploy.protected)
    if _shape(again) != _shape(plan):
        raise InvalidInput(
            "The source or the target changed while the plan was being approved; nothing "
            "was changed. Run the dry run again and show the new plan."
        )
    note = await asyncio.to_thread(apply_plan, again, ctx.check_cancelled)
    out["notes"] = notes + ([note] if note else [])
    out["applied"] = True
    return out


def _shape(plan: Plan) -> tuple[Any, ...]:
    return (
        [e.path for e in plan.delete],
        [(e.path, e.reason) for e in plan.copy],
        [e.path for e in plan.links],
    )
