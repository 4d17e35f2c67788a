"""copy_workspace_to_project: promote finished work into a project folder, safely.

The plan and the swap live in ``local_tools.deploy``; this module checks the roots
through the jail, asks for the ``deploy`` permission with the plan shown, and reports.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    PermissionDenied,
    StorageError,
)
from local_tools.core.tool import Args, Hints, Output, tool
from local_tools.deploy import NotRegular, Plan, apply_plan, clean_leftovers, make_plan
from local_tools.deploy.plan import Entry
from local_tools.security.dirfd import Dir
from local_tools.security.os_errors import Changed

T = TypeVar("T")
MAX_LISTED = 200  # entries per list in the output; the counts are always complete


class CopyArgs(Args):
    source: str = Field(description="The workspace folder holding the finished work.")
    target: str = Field(
        description="The project folder (created if missing); must not overlap the source."
    )
    dry_run: bool = Field(True, description="Only report the plan; false carries it out.")


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


DESCRIPTION = """Promote finished work from a workspace folder into a project folder, making the
target match the source.

Files the source no longer has are deleted from the target; files with a whitelisted
extension (web pages, styles, scripts, JSON, Markdown, images, fonts) are copied,
others reported. Never touched: .git and .local-tools folders, README.md,
local-tools.toml, config.toml and [deploy] protected paths. dry_run (the default) returns the
plan; run it first and show it. The real run needs the user's approval and swaps the
new tree in atomically."""


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
    # The project folder it replaces files in, unless only the plan is asked for.
    changes=lambda args, ctx: None if args.dry_run else (args.target,),
)
async def copy_workspace_to_project(args: CopyArgs, ctx: ToolContext) -> dict[str, Any]:
    deploy = ctx.config.deploy
    first = await asyncio.to_thread(_guarded, _open, ctx, args, False)
    try:
        plan = await asyncio.to_thread(
            _guarded, make_plan, first.source, first.target, deploy.extensions,
            deploy.protected, first.shown_source, first.shown_target,
        )  # fmt: skip
    finally:
        first.close()
    out = _report(plan, first.shown_source, first.shown_target, args.dry_run)
    if args.dry_run:
        return out
    await ctx.authorize("deploy", [first.shown_target], summary=plan.summary(
        first.shown_source, first.shown_target))  # fmt: skip
    await _check_file_rules(ctx, plan, first)
    # Opened and planned again after the approval: the person approved what the plan
    # said, and the folders (or a symlink swapped in above them) may have moved on.
    again = await asyncio.to_thread(_guarded, _open, ctx, args, True)
    try:
        if (again.source_real, again.target_real) != (first.source_real, first.target_real):
            raise Conflict(
                "The source or the target now leads somewhere else than when the plan was "
                "made; nothing was changed. Run the dry run again."
            )
        notes = await asyncio.to_thread(_guarded, clean_leftovers, again.parent, again.name)
        if again.target is None and any(n.startswith("restored") for n in notes):
            raise Conflict("An interrupted deploy was put back; run the dry run again.")
        fresh = await asyncio.to_thread(
            _guarded, make_plan, again.source, again.target, deploy.extensions,
            deploy.protected, again.shown_source, again.shown_target,
        )  # fmt: skip
        if fresh.shape() != plan.shape():
            raise Conflict(
                "The source or the target changed while the plan was being approved; "
                "nothing was changed. Run the dry run again and show the new plan."
            )
        note = await asyncio.to_thread(
            _guarded, apply_plan, fresh, again.source, again.parent, again.name,
            again.target, ctx.check_cancelled,
        )  # fmt: skip
    finally:
        again.close()
    out["notes"] = notes + ([note] if note else [])
    out["applied"] = True
    return out


@dataclass
class _Opened:
    """The source, the target's folder and the target, as directory descriptors."""

    source: Dir
    source_real: Path
    target_real: Path
    shown_source: str
    shown_target: str
    parent: Dir | None = None
    target: Dir | None = None
    name: str = ""
    _owned: list[Dir] = field(default_factory=list)

    def close(self) -> None:
        for d in self._owned:
            d.close()
        self._owned.clear()


def _open(ctx: ToolContext, args: CopyArgs, create_parent: bool) -> _Opened:
    source, source_real = ctx.jail.open_dir(args.source)
    opened = _Opened(source, source_real, source_real, "", "", _owned=[source])
    try:
        target_real = ctx.jail.resolve(args.target, write=True)
        opened.target_real = target_real
        opened.shown_source = ctx.jail.display(source_real)
        opened.shown_target = ctx.jail.display(target_real)
        _check_roots(ctx, source_real, target_real, args.target)
        opened.name = target_real.name
        parent_shown = ctx.jail.display(target_real.parent)
        if create_parent and not target_real.parent.exists():
            ctx.jail.mkdir(parent_shown)  # a new target's folders, made through the jail
        try:
            parent, _ = ctx.jail.open_dir(parent_shown, write=True)
        except NotFound:
            return opened  # nothing there yet: the whole source is new
        opened.parent = parent
        opened._owned.append(parent)
        try:
            st = parent.lstat(opened.name)
        except FileNotFoundError:
            return opened
        if not stat.S_ISDIR(st.st_mode):
            raise InvalidInput(f"The target {opened.shown_target} exists and is not a folder.")
        try:
            opened.target = parent.child(opened.name)
        except Changed:
            raise Conflict(f"The target {opened.shown_target} is being replaced.") from None
        opened._owned.append(opened.target)
        return opened
    except BaseException:
        opened.close()
        raise


def _check_roots(ctx: ToolContext, source: Path, target: Path, given: str) -> None:
    shown = ctx.jail.display(target)
    if source == target or source in target.parents or target in source.parents:
        raise InvalidInput(
            "The source and the target overlap (one is inside the other): deploying would "
            "delete the source's own files. Pick folders side by side."
        )
    if any(target == root for root, _ in ctx.jail.roots) or not ctx.jail.is_writable(target.parent):
        raise InvalidInput(
            f"The target {shown} must be a folder inside a writable root, not a root "
            "itself: the new tree is staged beside it and swapped in."
        )
    state = Path(os.path.realpath(ctx.state_dir))
    if target == state or target in state.parents or state in target.parents:
        raise InvalidInput(f"The target {shown} holds or lies in local-tools' state folder.")
    if any(part in (".git", ".local-tools") for part in Path(shown).parts):
        raise InvalidInput(f"The target {shown} is inside a protected .git or .local-tools.")
    ctx.jail.refuse_roots_inside(target, given, "replaced by a deploy")


async def _check_file_rules(ctx: ToolContext, plan: Plan, opened: _Opened) -> None:
    """The file rules still hold: reading a source file the rules deny (or ask about)
    is no more allowed through a deploy, and target paths the rules deny for writing
    or deleting are refused. Asks for the target are answered by the deploy approval."""

    def under(top: str, rel: str) -> str:
        return rel if top == "." else f"{top}/{rel}"

    reads = [under(opened.shown_source, e.path) for e in plan.copy]
    if reads:
        await ctx.authorize("read:file", reads, summary="copied by a deploy")
    writes = [under(opened.shown_target, e.path) for e in [*plan.copy, *plan.links]]
    deletes = [under(opened.shown_target, e.path) for e in plan.delete]
    for permission, subjects in (("write:file", writes), ("delete:file", deletes)):
        if subjects:
            ctx.policy.check(ctx.user_id, permission, subjects, tool=ctx.tool)


def _guarded(func: Callable[..., T], *args: Any) -> T:
    """OS errors of a tree changing underneath (or refusing) as the tool's errors."""
    try:
        return func(*args)
    except (NotRegular, Changed, FileNotFoundError, NotADirectoryError) as exc:
        raise Conflict(
            f"A file or folder changed while the deploy read it ({exc}); nothing was "
            "changed. Run the dry run again."
        ) from None
    except PermissionError as exc:
        raise PermissionDenied(f"Not permitted: {exc.strerror}; nothing was changed.") from None
    except OSError as exc:
        if exc.errno == errno.EBADF:  # a folder we may enter but not list (mode --x)
            raise PermissionDenied(
                "A folder in the source or the target cannot be listed by this user; "
                "nothing was changed."
            ) from None
        if exc.errno == errno.ENAMETOOLONG:
            raise InvalidInput(f"A name is too long here: {exc}.") from None
        if exc.errno == errno.ELOOP:
            raise Conflict(
                "A file became a symlink while the deploy ran; nothing was changed."
            ) from None
        raise StorageError(
            f"The deploy failed: {exc.strerror or exc}; nothing was changed."
        ) from None
