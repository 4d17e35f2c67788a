"""grep: search file contents with a regex — ripgrep, or a pure-Python fallback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput
from local_tools.core.tool import Args, Hints, Output, omitted, tool
from local_tools.search.engine import get_engine
from local_tools.search.glob_match import GlobError, PathGlob
from local_tools.search.results import GrepResult, grep_lines
from local_tools.search.scope import Query, Scope, scope_for
from local_tools.security.policy import Action
from local_tools.tools._common import path_subject

__all__ = ["GrepOutput", "grep"]

MAX_MATCHES = 100
MAX_LINE_CHARS = 500
MAX_CONTEXT = 10
CUT_MARKER = " ... (line cut)"
TIMEOUT = 120.0


class GrepArgs(Args):
    pattern: str = Field(
        min_length=1,
        max_length=10_000,
        description="The regular expression.",
    )
    path: str = Field(
        ".",
        description="Folder to search recursively, or one file; workspace-relative or absolute.",
    )
    include: str | None = Field(
        None,
        max_length=1000,
        description=(
            "Only files matching this glob (without '/': names at any depth), e.g. "
            "'*.py'; comma-separate several, '!' excludes ('*.js,!*.min.js')."
        ),
    )
    ignore_case: bool = Field(False, description="Match letters case-insensitively.")
    context: int = Field(
        0,
        ge=0,
        le=MAX_CONTEXT,
        description='Lines before and after each match, marked "context": true.',
    )


class GrepLine(Output):
    path: str = Field(description="The file, workspace-relative (absolute outside it).")
    line: int = Field(description="1-based line number.")
    text: str = Field(description=f"The line, cut after {MAX_LINE_CHARS} characters.")
    context: bool = omitted(description="Present (true) on a context line, not a match.")


class GrepOutput(Output):
    matches: list[GrepLine] = Field(description="Matching lines (and context), newest files first.")
    total: int = Field(description="Matching lines in all.")
    truncated: bool = Field(description="True when some matching lines were left out.")
    files_with_matches: int = Field(description="Files with at least one match.")
    note: str = omitted(description="What was skipped or left out, and why.")


DESCRIPTION = f"""Search file contents with a regular expression (ripgrep syntax); returns matching
lines with their path and line number.

Rust regex: \\w \\d \\s \\b, [a-z], (a|b), x{{2,5}}, (?i); no look-around or
backreferences; no match spans lines. Escape ( ) [ ] {{ }} . * + ? ^ $ | \\ to match
them literally ("log\\.Error\\("). .gitignore is honoured; .git and binary files are
skipped. At most {MAX_MATCHES} lines as {{path, line, text}}, newest files first; `total`
counts every match; `truncated`: narrow the pattern, path or `include`. Lines over
{MAX_LINE_CHARS} characters are cut. Files needing approval (.env) are left out,
counted in `note`. Use glob to find files by name."""


def _cut(text: str) -> str:
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + CUT_MARKER


def _notes(result: GrepResult, shown: int) -> list[str]:
    notes = []
    if result.binary:
        notes.append("The file is binary (it contains NUL bytes) and was not searched.")
    if result.left_out:
        notes.append(
            f"{result.left_out} file(s) with matches were left out because the permission "
            "rules do not allow reading them without asking (e.g. .env files); read one with "
            "read_file to be asked."
        )
    if result.total > shown:
        notes.append(
            f"Showing {shown} of {result.total} matching lines ({result.files} files, newest "
            "first). Narrow the search with a more specific pattern, a smaller path or include."
        )
    return notes


def _render(output: dict[str, Any]) -> str:
    lines: list[str] = []
    current = None
    for m in output["matches"]:
        if m["path"] != current:
            current = m["path"]
            lines.append(f"{current}:")
        sep = "-" if m.get("context") else ":"
        lines.append(f"  {m['line']}{sep} {m['text']}")
    shown = sum(1 for m in output["matches"] if not m.get("context"))
    if not shown:
        lines.append("No matches found.")
    elif not output["truncated"]:
        files = output["files_with_matches"]
        lines.append(f"\n{shown} matching line(s) in {files} file(s).")
    if output.get("note"):
        lines.append(("\n" if lines else "") + output["note"])
    return "\n".join(lines)


def readable_by_policy(ctx: ToolContext) -> Callable[[str], bool] | None:
    """Whether the caller may read a path without being asked (grep must not leak .env)."""
    allow: tuple[Action, ...] = ("allow",)
    return ctx.policy.subject_filter(ctx.user_id, "read:file", allow)


@tool(
    "grep",
    args=GrepArgs,
    description=DESCRIPTION,
    permission="read:file",
    aliases=("search_file_content",),
    hints=Hints(read_only=True, idempotent=True),
    toolset="search",
    subjects=path_subject,
    render=_render,
    timeout=TIMEOUT,
    output=GrepOutput,
)
def grep(args: GrepArgs, ctx: ToolContext) -> dict[str, Any]:
    scope: Scope = scope_for(ctx.jail, args.path)
    include = None
    if args.include and args.include.strip():
        try:
            include = PathGlob(args.include)
        except GlobError as exc:
            raise InvalidInput(f"Invalid include glob: {exc}.") from None
    query = Query(args.pattern, args.ignore_case, args.context)
    result = grep_lines(
        get_engine(),
        scope,
        query,
        include=include,
        allowed=readable_by_policy(ctx),
        limit=MAX_MATCHES,
        check=ctx.check_cancelled,
    )
    matches = []
    shown = 0
    for ev in result.events:
        entry: dict[str, Any] = {"path": scope.display(ev.path), "line": ev.line}
        entry["text"] = _cut(ev.text)
        if ev.is_match:
            shown += 1
        else:
            entry["context"] = True
        matches.append(entry)
    output: dict[str, Any] = {
        "matches": matches,
        "total": result.total,
        "truncated": result.total > shown,
        "files_with_matches": result.files,
    }
    notes = _notes(result, shown)
    if notes:
        output["note"] = " ".join(notes)
    return output
