"""glob: find files by name pattern, newest first — ripgrep's file walk, or os.scandir."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput
from local_tools.core.tool import Args, Hints, Output, omitted, tool
from local_tools.search.engine import get_engine
from local_tools.search.glob_match import GlobError, PathGlob
from local_tools.search.results import glob_files
from local_tools.search.scope import Scope, scope_for
from local_tools.tools._common import path_subject, shown_path

__all__ = ["GlobOutput", "glob"]

MAX_FILES = 100
TIMEOUT = 120.0


class GlobArgs(Args):
    pattern: str = Field(
        min_length=1,
        max_length=1000,
        description='Glob for the files to find, e.g. "**/*.py", "*.{ts,tsx}".',
    )
    path: str = Field(".", description="Folder to search in, workspace-relative or absolute.")


class GlobOutput(Output):
    files: list[str] = Field(
        description="Matching files, workspace-relative (absolute outside it), newest first."
    )
    total: int = Field(description="How many files match in all.")
    truncated: bool = Field(description=f"True when more than the {MAX_FILES} shown match.")
    note: str = omitted(description="What was left out, and how to narrow the search.")


DESCRIPTION = f"""Find files by name with a glob pattern; returns workspace-relative paths, newest
first.

`*` any characters but "/", `?` one character, `**` any folders, `[a-z]` a set,
`{{ts,tsx}}` alternatives. Without "/" a pattern matches names at any depth ("*.py");
with "/" it matches the path below `path` ("src/**/test_*.py"); a leading "/" anchors
it to `path` ("/*.toml"). Comma-separate patterns; a leading "!" excludes
("**/*.ts,!**/*.d.ts"). .gitignore/.ignore are honoured, .git skipped, hidden files
included; only files are listed. At most {MAX_FILES} paths; `total` counts every
match. Use grep to search contents, list_dir for one folder."""


def _render(output: dict[str, Any]) -> str:
    lines = list(output["files"]) or ["No files found."]
    if output.get("note"):
        lines.append(("\n" if output["files"] else "") + output["note"])
    return "\n".join(lines)


def _relative_pattern(ctx: ToolContext, scope: Scope, path: str, pattern: str) -> str:
    """An absolute pattern under the searched folder, made relative to it."""
    if not os.path.isabs(pattern):
        return pattern
    folder = scope.abspath(scope.rel) if scope.rel else scope.base
    candidates = {folder, os.path.join(str(ctx.jail.root), shown_path(ctx, path))}
    normalized = pattern.replace(os.sep, "/")
    for prefix in candidates:
        prefix = prefix.replace(os.sep, "/").rstrip("/") + "/"
        if normalized.startswith(prefix):
            return normalized[len(prefix) :]
    return pattern


def _not_denied(ctx: ToolContext) -> Callable[[str], bool] | None:
    """glob shows names, not contents: only files whose reading is denied are hidden."""
    return ctx.policy.subject_filter(ctx.user_id, "read:file", ("allow", "ask"))


@tool(
    "glob",
    args=GlobArgs,
    description=DESCRIPTION,
    permission="read:file",
    aliases=("list_files",),
    hints=Hints(read_only=True, idempotent=True),
    toolset="search",
    subjects=path_subject,
    render=_render,
    timeout=TIMEOUT,
    output=GlobOutput,
)
def glob(args: GlobArgs, ctx: ToolContext) -> dict[str, Any]:
    scope = scope_for(ctx.jail, args.path)
    if scope.is_file:
        raise InvalidInput(
            f"Path '{args.path}' is a file; glob searches a folder. Use file_stat to check "
            "one file, or pass its folder as `path`."
        )
    try:
        pattern = PathGlob(_relative_pattern(ctx, scope, args.path, args.pattern))
    except GlobError as exc:
        raise InvalidInput(f"Invalid glob pattern: {exc}.") from None
    result = glob_files(
        get_engine(),
        scope,
        pattern,
        allowed=_not_denied(ctx),
        limit=MAX_FILES,
        check=ctx.check_cancelled,
    )
    output: dict[str, Any] = {
        "files": result.files,
        "total": result.total,
        "truncated": result.total > len(result.files),
    }
    notes = []
    if output["truncated"]:
        notes.append(
            f"Showing the {len(result.files)} most recently modified of {result.total} "
            f"matching files; {result.total - len(result.files)} more exist. Narrow the "
            "pattern (e.g. a folder prefix or a longer name) or pass a smaller `path`."
        )
    if result.left_out:
        notes.append(
            f"{result.left_out} matching file(s) are hidden: the permission rules deny "
            "reading them."
        )
    if notes:
        output["note"] = " ".join(notes)
    return output
