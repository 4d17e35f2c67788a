"""read_many_files: the first lines of several files, named or found by globs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field, model_validator

from local_tools.core.context import ToolContext
from local_tools.core.errors import Cancelled, NotFound, ToolError
from local_tools.core.tool import Args, Hints, Output, omitted, tool
from local_tools.tools._common import file_subjects, shown_path
from local_tools.tools._glob_walk import GlobWalk, glob_parts, has_magic, path_excluded
from local_tools.tools._text_page import MAX_LINE_CHARS, numbered
from local_tools.tools.read_file import MAX_BYTES, read_path

__all__ = ["ReadManyFilesOutput", "read_many_files"]

MAX_FILES = 50
DEFAULT_LIMIT = 500
TOTAL_BYTES = 100 * 1024

_Text = Annotated[str, Field(min_length=1, max_length=4096)]


class ReadManyFilesArgs(Args):
    paths: list[_Text] = Field(
        default_factory=list,
        max_length=200,
        description=(
            "Files to read, workspace-relative or absolute. An entry with *, ? or [ "
            "is an include glob."
        ),
    )
    include: list[_Text] = Field(
        default_factory=list,
        max_length=50,
        description="Globs, e.g. 'src/**/*.py' ('**' crosses folders, '*' does not).",
    )
    exclude: list[_Text] = Field(
        default_factory=list,
        max_length=50,
        description=(
            "Globs to leave out; without '/' they match a name at any depth, e.g. "
            "'*.min.js', 'tests'."
        ),
    )
    limit: int = Field(
        DEFAULT_LIMIT, ge=1, le=2000, description="Lines to read from the top of each file."
    )

    @model_validator(mode="after")
    def _something_to_read(self) -> ReadManyFilesArgs:
        if not self.paths and not self.include:
            raise ValueError("give `paths`, `include` globs, or both")
        return self


class FileRead(Output):
    path: str = Field(description="The file, as named or found.")
    content: str = Field(description="The exact text of the lines read (empty when not read).")
    truncated: bool = Field(description="True when the file was not read to its end.")
    start_line: int = omitted(description="First line returned (absent when not read).")
    end_line: int = omitted(description="Last line returned (absent when not read).")
    total_lines: int = omitted(description="Lines in the file (absent when not read).")
    pages: int = omitted(description="PDFs: number of pages.")
    note: str = omitted(description="How to read the rest, or why it was not read.")


class FileNotRead(Output):
    path: str = Field(description="The file or folder.")
    error_code: str = Field(description="Why, as an error code (NOT_FOUND, ...).")
    message: str = Field(description="Why, in words.")


class ReadManyFilesOutput(Output):
    files: list[FileRead] = Field(description="The files read, in order.")
    errors: list[FileNotRead] = Field(description="Files that could not be read.")
    truncated: bool = Field(description="True when a file was cut short or left out.")
    notes: list[str] = Field(description="What else was left out.")


DESCRIPTION = f"""Read several text files at once: those named in `paths`, then those
matching the `include` globs (minus `exclude`).

Each file is read like read_file from its first line: up to `limit` lines (default
{DEFAULT_LIMIT}) and {MAX_BYTES // 1024} KB per file; {TOTAL_BYTES // 1024} KB and
{MAX_FILES} files in all. A file cut short has truncated=true and a note on reading the rest.
Unreadable files (missing, binary, denied) are listed in `errors` with the reason.
Hidden files, node_modules and __pycache__ match only when a glob names them
('.github/**'). Files needing approval (like .env) are never read through a glob:
name them in `paths`."""


def _render(output: dict[str, Any]) -> str:
    blocks = []
    for entry in output["files"]:
        body = numbered(entry["content"], entry.get("start_line", 1))
        lines = [f"==> {entry['path']} <=="]
        if body:
            lines.append(body)
        elif entry.get("total_lines") == 0:
            lines.append("(empty file)")
        if entry.get("note"):
            lines.append(f"({entry['note']})")
        blocks.append("\n".join(lines))
    for error in output["errors"]:
        blocks.append(
            f"==> {error['path']} <== not read ({error['error_code']})\n{error['message']}"
        )
    blocks.extend(f"({note})" for note in output["notes"])
    return "\n\n".join(blocks) if blocks else "(no files)"


def _subjects(args: ReadManyFilesArgs, ctx: ToolContext) -> Sequence[str] | None:
    subjects = [s for p in args.paths if not has_magic(p) for s in file_subjects(ctx, p)]
    return subjects or None


@tool(
    "read_many_files",
    args=ReadManyFilesArgs,
    description=DESCRIPTION,
    permission="read:file",
    hints=Hints(read_only=True, idempotent=True),
    toolset="files",
    subjects=_subjects,
    render=_render,
    output=ReadManyFilesOutput,
)
def read_many_files(args: ReadManyFilesArgs, ctx: ToolContext) -> dict[str, Any]:
    errors: list[dict[str, Any]] = []
    notes: list[str] = []
    # path -> found by a glob (and so not approved by the call's own permission check)
    wanted: dict[str, bool] = {}
    for path in args.paths:
        if not has_magic(path):
            wanted.setdefault(shown_path(ctx, path), False)
    globs = [*args.include, *(p for p in args.paths if has_magic(p))]
    if globs:
        excludes = [_exclude_parts(e) for e in args.exclude]
        walk = GlobWalk(ctx)
        for path in walk.run(globs):
            if not path_excluded(path, excludes):
                wanted.setdefault(path, True)
        errors.extend(walk.errors)
        notes.extend(walk.notes)
        if not wanted and not errors:
            raise NotFound(
                f"No file matched {globs}"
                + (f" outside the excludes {list(args.exclude)}" if args.exclude else "")
                + ". '*' stays within one folder and '**' crosses folders; hidden folders "
                "must be named (e.g. '.github/**'). Use glob or list_dir to look around."
            )
    chosen = _distinct(ctx, wanted)
    if len(chosen) > MAX_FILES:
        notes.append(
            f"{len(chosen)} files matched; only the first {MAX_FILES} were read. Narrow the "
            "globs, or read the rest in another call."
        )
        chosen = chosen[:MAX_FILES]
    files = _read_all(ctx, chosen, min(args.limit, ctx.limits.max_output_lines), errors)
    return {
        "files": files,
        "errors": errors,
        "truncated": any(f["truncated"] for f in files) or len(wanted) > len(chosen),
        "notes": notes,
    }


def _exclude_parts(pattern: str) -> list[str]:
    parts = glob_parts(pattern)
    return parts if "/" in pattern.strip("/") else ["**", *parts]


def _distinct(ctx: ToolContext, wanted: dict[str, bool]) -> list[tuple[str, bool]]:
    """Each file once, even when named twice or through a symlink."""
    seen: set[str] = set()
    chosen = []
    for path, from_glob in wanted.items():
        try:
            key = str(ctx.jail.resolve(path))
        except ToolError:
            key = path  # reading it reports why
        if key not in seen:
            seen.add(key)
            chosen.append((path, from_glob))
    return chosen


def _denied(ctx: ToolContext, path: str) -> dict[str, Any] | None:
    """Why a file found by a glob may not be read without the user's say-so, if it may not."""
    for subject in file_subjects(ctx, path):
        decision = ctx.policy.evaluate(ctx.user_id, "read:file", subject)
        if decision.action == "deny":
            message = f"Reading {subject} is denied by the rule {decision.rule}."
        elif decision.action == "ask":
            message = (
                f"Reading {subject} needs the user's approval ({decision.rule}); files found "
                "by a glob are never read that way. Name it in `paths`, or use read_file, "
                "so the user is asked."
            )
        else:
            continue
        return {"path": path, "error_code": "PERMISSION_DENIED", "message": message}
    return None


def _read_all(
    ctx: ToolContext, chosen: list[tuple[str, bool]], limit: int, errors: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    files: list[dict[str, Any]] = []
    budget = TOTAL_BYTES
    for path, from_glob in chosen:
        ctx.check_cancelled()
        denial = _denied(ctx, path) if from_glob else None
        if denial is not None:
            errors.append(denial)
            continue
        if budget <= 0:
            files.append(_unread(path))
            continue
        try:
            out = read_path(
                ctx,
                path,
                offset=1,
                limit=limit,
                encoding="utf-8",
                max_bytes=min(MAX_BYTES, ctx.limits.max_output_bytes, budget),
                min_one_line=False,
                images=False,
            )
        except Cancelled:
            raise
        except ToolError as exc:
            errors.append({"path": path, "error_code": exc.code.value, "message": exc.message})
            continue
        if out["total_lines"] > 0 and out["end_line"] == 0:  # not even its first line fit
            files.append(_unread(path))
            continue
        budget -= len(out["content"].encode("utf-8", "surrogatepass"))
        entry = {
            "path": path,
            "content": out["content"],
            "truncated": out["truncated"],
            "start_line": out["start_line"],
            "end_line": out["end_line"],
            "total_lines": out["total_lines"],
        }
        if "pages" in out:
            entry["pages"] = out["pages"]
        if out["end_line"] < out["total_lines"]:
            entry["note"] = (
                f"Showing lines 1-{out['end_line']} of {out['total_lines']}. Read the rest "
                f"with read_file path={path!r} offset={out['end_line'] + 1}."
            )
        elif out["cut_lines"]:
            entry["note"] = (
                f"Lines longer than {MAX_LINE_CHARS} characters were cut: {out['cut_lines']}."
            )
        files.append(entry)
    return files


def _unread(path: str) -> dict[str, Any]:
    return {
        "path": path,
        "content": "",
        "truncated": True,
        "note": f"Not read: the {TOTAL_BYTES // 1024} KB total for one call was used up. "
        "Read it with read_file.",
    }
