"""read_file: a page of a text file, streamed, line-numbered for models."""

from __future__ import annotations

import codecs
import os
from itertools import islice
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput, NotFound
from local_tools.core.tool import Args, Hints, tool
from local_tools.editing.freshness import note_read
from local_tools.tools._common import path_subject, similar_paths

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_BYTES = 50 * 1024
SNIFF_BYTES = 4096
# Refused by name before reading a byte; content sniffing catches the rest.
_BINARY_EXT_WORDS = """
    zip gz tgz bz2 xz 7z rar tar jar war class exe dll so dylib o a lib bin dat db sqlite
    pyc pyo wasm png jpg jpeg gif webp bmp ico tiff pdf mp3 mp4 wav ogg flac mov avi mkv
    woff woff2 ttf otf eot psd
"""
BINARY_EXTENSIONS = frozenset("." + word for word in _BINARY_EXT_WORDS.split())


class ReadFileArgs(Args):
    path: str = Field(
        description="File to read: workspace-relative, or absolute inside an allowed root."
    )
    offset: int = Field(1, ge=1, description="1-based line number to start from.")
    limit: int = Field(DEFAULT_LIMIT, ge=1, description="Maximum number of lines to return.")
    encoding: str = Field("utf-8", description="Text encoding of the file.")


DESCRIPTION = f"""Read a text file from the workspace.

Returns up to `limit` lines (default {DEFAULT_LIMIT}) starting at line `offset` (1-based),
at most {MAX_BYTES // 1024} KB per call; lines longer than {MAX_LINE_CHARS} characters are cut.
The footer says how to continue with a larger offset. Read a large file in pages instead
of all at once. Binary files are refused; use list_dir for directories and grep to
find something in many files."""


def _render(output: dict[str, Any]) -> str:
    lines = output["content"].splitlines()
    start = output["start_line"]
    width = len(str(start + len(lines)))
    body = "\n".join(f"{n:>{width}}\t{text}" for n, text in enumerate(lines, start))
    total, end = output["total_lines"], output["end_line"]
    if total == 0:
        return "(empty file)"
    if end < total:
        note = f"(Showing lines {start}-{end} of {total}. Use offset={end + 1} to continue.)"
    else:
        note = f"(End of file - {total} lines total.)"
    return f"{body}\n\n{note}" if body else note


def _looks_binary(head: bytes) -> bool:
    if b"\0" in head:
        return True
    if not head:
        return False
    control = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
    return control / len(head) > 0.3


@tool(
    "read_file",
    args=ReadFileArgs,
    description=DESCRIPTION,
    permission="read:file",
    aliases=("FileRead", "read", "Read"),
    hints=Hints(read_only=True, idempotent=True),
    toolset="files",
    subjects=path_subject,
    render=_render,
)
def read_file(args: ReadFileArgs, ctx: ToolContext) -> dict[str, Any]:
    try:
        codecs.lookup(args.encoding)
    except LookupError:
        raise InvalidInput(
            f"Unknown encoding {args.encoding!r}. Try 'utf-8' or 'latin-1'."
        ) from None
    ext = os.path.splitext(args.path)[1].lower()
    if ext in BINARY_EXTENSIONS:
        raise InvalidInput(f"{args.path} is a binary file ({ext}); read_file only reads text.")
    try:
        handle = ctx.jail.open_read(args.path)
    except NotFound:
        guesses = similar_paths(ctx, args.path)
        hint = f" Did you mean: {', '.join(guesses)}?" if guesses else ""
        raise NotFound(
            f"File not found: {args.path}.{hint}", details={"suggestions": guesses}
        ) from None
    with handle:
        head = handle.read(SNIFF_BYTES)
        if _looks_binary(head):
            raise InvalidInput(f"{args.path} looks like a binary file; read_file only reads text.")
        handle.seek(0)
        page = _read_page(handle, args, ctx)
        # Remember the version read, so an edit against it can tell if it went stale.
        note_read(ctx, ctx.jail.resolve(args.path), os.fstat(handle.fileno()))
        return page


def _read_page(handle: Any, args: ReadFileArgs, ctx: ToolContext) -> dict[str, Any]:
    limit = min(args.limit, ctx.limits.max_output_lines)
    max_bytes = min(MAX_BYTES, ctx.limits.max_output_bytes)
    skipped = sum(1 for _ in islice(handle, args.offset - 1))
    picked: list[bytes] = []
    size = 0
    truncated = False
    for raw in handle:
        if len(picked) >= limit or size + len(raw) > max_bytes:
            truncated = True
            picked_total = skipped + len(picked) + 1
            break
        picked.append(raw)
        size += len(raw)
        if len(picked) % 4096 == 0:
            ctx.check_cancelled()
    else:
        picked_total = skipped + len(picked)
    # Count the rest in chunks: the total is worth knowing, the text is not needed.
    rest = 0
    if truncated:
        last = b""
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            rest += chunk.count(b"\n")
            last = chunk
        rest += 1 if last and not last.endswith(b"\n") else 0
    total_lines = picked_total + rest
    if args.offset > 1 and skipped < args.offset - 1:
        raise InvalidInput(
            f"offset {args.offset} is past the end of {args.path} ({skipped} lines). "
            f"Use an offset between 1 and {max(skipped, 1)}."
        )
    encoding = (
        "utf-8-sig"
        if args.offset == 1 and args.encoding.lower() in ("utf-8", "utf8")
        else args.encoding
    )
    try:
        text = b"".join(picked).decode(encoding)
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{args.path} is not valid {args.encoding} (byte {exc.start} of the requested "
            "lines). Pass encoding='latin-1' (or the file's real encoding) to read it."
        ) from None
    if any(len(line) > MAX_LINE_CHARS for line in text.splitlines()):
        text = "".join(
            line[:MAX_LINE_CHARS] + "... (line cut)\n"
            if len(line.rstrip("\r\n")) > MAX_LINE_CHARS
            else line
            for line in text.splitlines(keepends=True)
        )
        truncated = True
    start = args.offset
    return {
        "path": ctx.jail.display(ctx.jail.resolve(args.path)),
        "content": text,
        "start_line": start,
        "end_line": start + len(picked) - 1 if picked else start - 1,
        "total_lines": total_lines,
        "truncated": truncated,
    }
