"""apply_patch: add, update, rename and delete files with one V4A patch, all or nothing.

Three phases. Plan (in a worker thread): parse, read every file through the jail,
compute every new content and check every precondition; nothing is written. Then
ask for ``delete:file`` when the patch removes files. Commit (in a worker thread,
holding the editing lock of every file involved): check nothing changed since the
plan, apply the changes in patch order and, if one fails, undo the ones already
made — restoring original bytes and removing created files and folders.
"""

from __future__ import annotations

import asyncio
import codecs
import difflib
import os
import stat as stat_mod
from collections.abc import Callable, Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import (
    AlreadyExists,
    Conflict,
    InvalidInput,
    NotFound,
    StorageError,
    ToolError,
)
from local_tools.core.tool import Args, Hints, tool
from local_tools.editing.freshness import check_fresh, file_lock, forget, note_read
from local_tools.editing.patch import (
    AddFile,
    DeleteFile,
    Patch,
    UpdateFile,
    apply_hunks_with_report,
    parse_patch,
)
from local_tools.editing.textfile import MAX_EDIT_BYTES
from local_tools.tools._common import authorize_read, file_subjects, similar_paths
from local_tools.tools._patch_output import ApplyPatchOutput, render_patch


class ApplyPatchArgs(Args):
    patch: str = Field(description="The whole patch, from '*** Begin Patch' to '*** End Patch'.")
    diagnostics: bool = Field(True, description="Report language errors after.")


DESCRIPTION = """Add, update, rename and delete files with one patch, all or nothing.

The patch format (V4A):
*** Begin Patch
*** Add File: src/new.py
+print("every line of a new file starts with +")
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
     name = "world"
-    print("Hi")
+    print("Hello", name)
*** Delete File: src/old.py
*** End Patch

A hunk starts with '@@', optionally followed by a line above the change (its def or
class). Hunk lines start with ' ' (about 3 lines of context), '-' or '+'; each hunk
must match one place, in file order (whitespace differences tolerated). '*** End of
File' anchors a hunk at the end. On failure nothing changes: CONFLICT when a hunk
matches several places (add context), NOT_FOUND with the closest lines. Deleting or
renaming needs delete permission. Returns each file's action and a diff."""


# ----------------------------------------------------------------------------- plan


@dataclass
class _Change:
    action: str  # add | update | move | delete
    shown: str  # workspace-relative path the jail resolved (the source of a move)
    line: int  # patch line of the section
    before: bytes | None = None  # original bytes; None when the file is new
    after: bytes | None = None  # new bytes; None when the file goes away
    before_text: str = ""
    after_text: str = ""
    to: str | None = None  # destination of a move
    version: tuple[int, int, int] | None = None  # (inode, mtime_ns, size) when read
    mode: int | None = None  # permission bits of the original
    strategy: str = "exact"
    undo: list[Callable[[], object]] = field(default_factory=list)  # results unused


_WORSE = {"exact": 0, "insert": 0, "trailing_whitespace": 1, "whitespace": 2}


def _paths(args: ApplyPatchArgs, *, deleted: bool) -> list[str]:
    """The paths the patch adds, changes or moves (and, with `deleted`, deletes)."""
    paths: list[str] = []
    for op in parse_patch(args.patch).ops:
        if deleted or not isinstance(op, DeleteFile):
            paths.append(op.path)
        if isinstance(op, UpdateFile) and op.move_to is not None:
            paths.append(op.move_to)
    return paths


def _changes(args: ApplyPatchArgs, ctx: ToolContext) -> Sequence[str]:
    """Every path the patch touches, deletions too (checkpointed first)."""
    return _paths(args, deleted=True)


def _subjects(args: ApplyPatchArgs, ctx: ToolContext) -> Sequence[str]:
    """write:file is checked on every path the patch adds, changes or moves."""
    return [s for path in _paths(args, deleted=False) for s in file_subjects(ctx, path)]


class _Planner:
    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.claimed: dict[Path, int] = {}

    def claim(self, path: str, line: int) -> str:
        """The workspace-relative path of `path`; each file may appear only once."""
        real = self.ctx.jail.resolve(path, write=True)
        shown = self.ctx.jail.display(real)
        if real in self.claimed:
            raise InvalidInput(
                f"{shown} appears twice in the patch (lines {self.claimed[real]} and {line}). "
                "Put all changes to one file in one section; nothing was changed.",
                details={"path": shown, "lines": [self.claimed[real], line]},
            )
        self.claimed[real] = line
        return shown

    def plan(self, patch: Patch) -> list[_Change]:
        changes: list[_Change] = []
        for op in patch.ops:
            self.ctx.check_cancelled()
            if isinstance(op, DeleteFile) or (isinstance(op, UpdateFile) and op.move_to):
                self.refuse_symlink(op.path)
            shown = self.claim(op.path, op.line)
            if isinstance(op, AddFile):
                self.require_absent(shown, op.line, "Add File", op.path)
                changes.append(
                    _Change("add", shown, op.line, after=op.content.encode(), after_text=op.content)
                )
            elif isinstance(op, DeleteFile):
                change = _Change("delete", shown, op.line)
                self.read(change, "Delete File")
                changes.append(change)
            else:
                changes.append(self.update(op, shown))
        return changes

    def update(self, op: UpdateFile, shown: str) -> _Change:
        change = _Change("update", shown, op.line)
        self.read(change, "Update File")
        assert change.before is not None and change.version is not None
        check_fresh(self.ctx, self.ctx.jail.resolve(shown), change.version, shown)
        bom = codecs.BOM_UTF8 if change.before.startswith(codecs.BOM_UTF8) else b""
        text = _decode(change.before[len(bom) :], shown)
        after, report = apply_hunks_with_report(text, op.hunks, path=shown)
        change.before_text, change.after_text = text, after
        change.after = bom + after.encode()
        if report:
            change.strategy = max((m.strategy for m in report), key=_WORSE.__getitem__)
        if op.move_to is not None:
            change.action = "move"
            change.to = self.claim(op.move_to, op.line)
            self.require_absent(change.to, op.line, "Move to", op.move_to)
        return change

    def refuse_symlink(self, path: str) -> None:
        """Deleting or moving away a symlink would remove its target; refuse instead."""
        try:
            st = self.ctx.jail.stat(path, follow_symlinks=False)
        except NotFound:
            return  # reported with the section
        if stat_mod.S_ISLNK(st.st_mode):
            raise InvalidInput(
                f"{path} is a symlink; apply_patch deletes and moves regular files only. "
                "Use file_delete or file_move for the link. Nothing was changed."
            )

    def require_absent(self, shown: str, line: int, section: str, given: str = "") -> None:
        for path in dict.fromkeys((given or shown, shown)):  # a dangling symlink exists too
            try:
                self.ctx.jail.stat(path, follow_symlinks=False)
            except NotFound:
                continue
            break
        else:
            return
        hint = (
            "To change it use '*** Update File:' with hunks"
            if section == "Add File"
            else "Move it somewhere else, or delete the existing file first in another call"
        )
        raise AlreadyExists(
            f"{shown} already exists ('*** {section}:' at patch line {line}). {hint}; "
            "nothing was changed.",
            details={"path": shown, "line": line},
        )

    def read(self, change: _Change, section: str) -> None:
        jail = self.ctx.jail
        try:
            st = jail.stat(change.shown, follow_symlinks=False)
        except NotFound:
            similar = similar_paths(self.ctx, change.shown)
            hint = f" Did you mean {', '.join(similar)}?" if similar else ""
            create = " To create it use '*** Add File:'." if section == "Update File" else ""
            raise NotFound(
                f"{change.shown} does not exist ('*** {section}:' at patch line "
                f"{change.line}).{hint}{create} Nothing was changed.",
                details={"path": change.shown, "line": change.line},
            ) from None
        if stat_mod.S_ISDIR(st.st_mode):
            raise InvalidInput(
                f"{change.shown} is a directory, not a file ('*** {section}:' at patch line "
                f"{change.line}). Nothing was changed."
            )
        with jail.open_read(change.shown) as handle:
            st = os.fstat(handle.fileno())
            if st.st_size > MAX_EDIT_BYTES:
                raise InvalidInput(
                    f"{change.shown} is {st.st_size} bytes; files over "
                    f"{MAX_EDIT_BYTES // 2**20} MB cannot be patched. Nothing was changed."
                )
            change.before = handle.read(MAX_EDIT_BYTES + 1)
        change.version = (st.st_ino, st.st_mtime_ns, st.st_size)
        change.mode = stat_mod.S_IMODE(st.st_mode) & 0o777
        if section == "Delete File":
            with suppress(InvalidInput):  # the diff shows text files only
                change.before_text = _decode(change.before.removeprefix(codecs.BOM_UTF8), "")


def _decode(data: bytes, shown: str) -> str:
    if b"\0" in data[:8192]:
        raise InvalidInput(
            f"{shown} looks like a binary file; only UTF-8 text files can be patched. "
            "Nothing was changed."
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInput(
            f"{shown} is not valid UTF-8 (line {line}); apply_patch only changes UTF-8 "
            "text. Use edit (it keeps other encodings) or write_file. Nothing was changed."
        ) from None


# ----------------------------------------------------------------------------- commit


def _commit(changes: list[_Change], ctx: ToolContext) -> None:
    jail = ctx.jail
    paths = {c.shown for c in changes} | {c.to for c in changes if c.to is not None}
    reals = sorted({jail.resolve(p) for p in paths}, key=str)
    with ExitStack() as locks:
        for real in reals:  # always in the same order: two patches cannot deadlock
            locks.enter_context(file_lock(real))
        for change in changes:
            _verify(change, ctx)
        ctx.check_cancelled()
        done: list[_Change] = []
        try:
            for change in changes:
                done.append(change)
                _apply(change, ctx)
        except BaseException as exc:
            failures = _roll_back(done)
            if not isinstance(exc, Exception):
                raise
            raise _failed(exc, done[-1], len(done) - 1, failures) from exc
    for change in changes:  # the session has now seen what it wrote
        with suppress(ToolError):  # bookkeeping only: the patch is applied
            if change.action in ("delete", "move"):
                forget(ctx, jail.resolve(change.shown))
            if change.after is not None:
                written = change.to or change.shown
                real = jail.resolve(written)
                note_read(ctx, real, jail.stat(written))
                before = change.before_text if change.action == "update" else None
                ctx.record_change(real, before, change.after_text)


def _verify(change: _Change, ctx: ToolContext) -> None:
    """Nothing may have changed between the plan and now."""
    jail = ctx.jail
    if change.version is not None:
        try:
            st = jail.stat(change.shown, follow_symlinks=False)
            now: tuple[int, int, int] | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except NotFound:
            now = None
        if now != change.version:
            raise _changed(change.shown)
    for shown in (change.shown,) if change.action == "add" else (change.to,):
        if shown is None:
            continue
        try:
            jail.stat(shown, follow_symlinks=False)
        except NotFound:
            continue
        raise _changed(shown)


def _changed(shown: str) -> Conflict:
    return Conflict(
        f"{shown} changed on disk while the patch was being prepared. Nothing was "
        "changed; read the file again and redo the patch.",
        details={"path": shown},
    )


def _apply(change: _Change, ctx: ToolContext) -> None:
    """Make one change, recording how to undo each step as soon as it is done."""
    jail = ctx.jail
    if change.action in ("add", "move"):
        target = change.to or change.shown
        parents = _missing_parents(ctx, target)
        change.undo.append(lambda: _remove_dirs(ctx, parents))
        jail.write_atomic(target, change.after or b"", exclusive=True)
        change.undo.append(lambda: jail.delete(target))
        if change.action == "move":
            _set_mode(ctx, target, change.mode)
    elif change.action == "update":
        jail.write_atomic(change.shown, change.after or b"")
        change.undo.append(lambda: jail.write_atomic(change.shown, change.before or b""))
    if change.action in ("delete", "move"):
        jail.delete(change.shown)

        def restore() -> None:
            jail.write_atomic(change.shown, change.before or b"", exclusive=True)
            _set_mode(ctx, change.shown, change.mode)

        change.undo.append(restore)


def _roll_back(done: list[_Change]) -> list[str]:
    """Undo every step already made, newest first; returns what could not be undone."""
    failures: list[str] = []
    for change in reversed(done):
        for step in reversed(change.undo):
            try:
                step()
            except Exception as exc:  # keep undoing the rest
                failures.append(f"{change.to or change.shown}: {exc}")
    return failures


def _failed(exc: Exception, change: _Change, undone: int, failures: list[str]) -> ToolError:
    if isinstance(exc, ToolError):
        code, message, details = exc.code, exc.message, dict(exc.details)
    else:
        failed = StorageError(f"{type(exc).__name__}: {exc}")
        code, message, details = failed.code, failed.message, {}
    where = f"Applying '{change.action}' of {change.shown} (patch line {change.line}) failed: "
    details.update(path=change.shown, line=change.line)
    if failures:
        details["not_restored"] = failures
        return StorageError(
            f"{where}{message} Undoing the changes already made also failed for: "
            f"{'; '.join(failures)}. Those files may be left changed; check them.",
            details=details,
        )
    undo = (
        f" The {undone} change(s) already made were undone, so nothing was changed."
        if undone
        else " Nothing was changed."
    )
    return ToolError(f"{where}{message}{undo}", code=code, details=details)


def _missing_parents(ctx: ToolContext, shown: str) -> list[str]:
    """Folders above `shown` that don't exist yet (deepest first): writing creates them."""
    missing: list[str] = []
    parent = PurePosixPath(shown).parent
    while str(parent) not in (".", "/", ""):
        try:
            ctx.jail.stat(str(parent))
            break
        except NotFound:
            missing.append(str(parent))
            parent = parent.parent
    return missing


def _remove_dirs(ctx: ToolContext, dirs: list[str]) -> None:
    for folder in dirs:  # deepest first; a folder that isn't empty stays
        with suppress(ToolError):
            ctx.jail.delete(folder)


def _set_mode(ctx: ToolContext, shown: str, mode: int | None) -> None:
    """Give a recreated or moved file the permission bits the original had."""
    if mode is None or not hasattr(os, "fchmod"):
        return
    with suppress(OSError, ToolError), ctx.jail.open_read(shown) as handle:
        os.fchmod(handle.fileno(), mode)


# ----------------------------------------------------------------------------- output


def _diff(change: _Change) -> str:
    old = None if change.action == "add" else f"a/{change.shown}"
    new = None if change.action == "delete" else f"b/{change.to or change.shown}"
    lines = difflib.unified_diff(
        _diff_lines(change.before_text),
        _diff_lines(change.after_text),
        fromfile=old or "/dev/null",
        tofile=new or "/dev/null",
    )
    body = "".join(lines)
    if change.before and not change.before_text and change.action == "delete":
        body = f"Binary file a/{change.shown} deleted\n"
    if change.action == "move":
        return f"rename from {change.shown}\nrename to {change.to}\n{body}"
    return body


def _diff_lines(text: str) -> list[str]:
    parts = text.replace("\r\n", "\n").split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1] + "\n\\ No newline at end of file\n")
    return lines


def _entry(change: _Change) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": change.shown, "action": change.action}
    if change.to is not None:
        entry["to"] = change.to
    if change.strategy in ("trailing_whitespace", "whitespace"):
        entry["matched"] = f"ignoring {change.strategy.replace('_', ' ')}"
    return entry


@tool(
    "apply_patch",
    args=ApplyPatchArgs,
    description=DESCRIPTION,
    permission="write:file",
    hints=Hints(destructive=True),
    toolset="files",
    subjects=_subjects,
    changes=_changes,
    render=render_patch,
    output=ApplyPatchOutput,
)
async def apply_patch(args: ApplyPatchArgs, ctx: ToolContext) -> dict[str, Any]:
    patch = parse_patch(args.patch)
    # The files it changes are read, and shown back (the diff, the lines near a failed
    # hunk): read:file as read_file has it, so a patch of .env asks as reading it does.
    for op in patch.ops:
        if isinstance(op, (UpdateFile, DeleteFile)):
            await authorize_read(ctx, op.path, "apply_patch reads")
    changes = await asyncio.to_thread(_Planner(ctx).plan, patch)
    removed = [c.shown for c in changes if c.action in ("delete", "move")]
    if removed:
        await ctx.authorize(
            "delete:file", removed, summary="apply_patch removes " + ", ".join(removed)
        )
    ctx.check_cancelled()
    await asyncio.to_thread(_commit, changes, ctx)
    return {
        "files": [_entry(c) for c in changes],
        "diff": "".join(_diff(c) for c in changes),
    }
